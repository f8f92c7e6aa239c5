package io.unboundedcloud.playpen;

import org.slf4j.LoggerFactory;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.JsonEncoder;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.FileAppender;

/**
 * Applies --log-format and --audit-log-path. The operator's own log goes to standard error (text from logback.xml,
 * or logback's JSON encoder); the audit log's JSON lines go to standard output, or to a file, never mixed into it.
 */
final class Logging {
    /** The logger the audit-line route writes to (routes/audit.camel.yaml). */
    static final String AUDIT_LOGGER = "playpen.audit";

    private Logging() {
    }

    static void configure(String format, String auditLogPath) {
        if (LoggerFactory.getILoggerFactory() instanceof LoggerContext ctx) {
            configure(ctx, format, auditLogPath);
        }
    }

    /** Applies the flags to {@code ctx}, which logback.xml has configured. */
    static void configure(LoggerContext ctx, String format, String auditLogPath) {
        if ("json".equals(format)) {
            ch.qos.logback.classic.Logger root = ctx.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
            root.detachAndStopAllAppenders();
            JsonEncoder encoder = new JsonEncoder();
            encoder.setContext(ctx);
            encoder.setWithFormattedMessage(true);
            encoder.setWithMessage(false);
            encoder.setWithArguments(false);
            encoder.setWithContext(false);
            encoder.setWithSequenceNumber(false);
            encoder.setWithNanoseconds(false);
            encoder.start();
            ConsoleAppender<ILoggingEvent> out = new ConsoleAppender<>();
            out.setContext(ctx);
            out.setName("json");
            out.setTarget("System.err");
            out.setEncoder(encoder);
            out.start();
            root.addAppender(out);
        }
        if (auditLogPath != null && !auditLogPath.isEmpty() && !auditLogPath.equals("-")) {
            ch.qos.logback.classic.Logger audit = ctx.getLogger(AUDIT_LOGGER);
            audit.detachAndStopAllAppenders();
            PatternLayoutEncoder encoder = new PatternLayoutEncoder();
            encoder.setContext(ctx);
            encoder.setPattern("%msg%n");
            encoder.start();
            FileAppender<ILoggingEvent> file = new FileAppender<>();
            file.setContext(ctx);
            file.setName("audit-file");
            file.setFile(auditLogPath);
            file.setAppend(true);
            file.setEncoder(encoder);
            file.start();
            if (!file.isStarted()) {
                throw new IllegalStateException("cannot open the audit log " + auditLogPath);
            }
            audit.addAppender(file);
        }
    }
}
