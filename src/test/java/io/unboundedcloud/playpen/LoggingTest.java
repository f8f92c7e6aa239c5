package io.unboundedcloud.playpen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.FileAppender;

/**
 * The operator's own log and the audit log never share a stream: the log goes to standard error (text or JSON), the
 * audit lines to standard output or to --audit-log-path. Checked on the shipped logback.xml (tests run with their own).
 */
class LoggingTest {
    @TempDir
    Path tmp;

    static LoggerContext shipped() throws Exception {
        LoggerContext ctx = new LoggerContext();
        ctx.setMDCAdapter(new ch.qos.logback.classic.util.LogbackMDCAdapter());
        JoranConfigurator joran = new JoranConfigurator();
        joran.setContext(ctx);
        joran.doConfigure(Path.of("src/main/resources/logback.xml").toFile());
        return ctx;
    }

    static List<Appender<ILoggingEvent>> appenders(LoggerContext ctx, String logger) {
        List<Appender<ILoggingEvent>> out = new ArrayList<>();
        ctx.getLogger(logger).iteratorForAppenders().forEachRemaining(out::add);
        return out;
    }

    static String target(Appender<ILoggingEvent> a) {
        return a instanceof ConsoleAppender<ILoggingEvent> c ? c.getTarget() : a.getClass().getSimpleName();
    }

    @Test
    void textLogOnStandardErrorAuditOnStandardOutput() throws Exception {
        LoggerContext ctx = shipped();
        Logging.configure(ctx, "text", "-");
        assertThat(appenders(ctx, "ROOT")).extracting(LoggingTest::target).containsExactly("System.err");
        assertThat(appenders(ctx, Logging.AUDIT_LOGGER)).extracting(LoggingTest::target).containsExactly("System.out");
        assertThat(ctx.getLogger(Logging.AUDIT_LOGGER).isAdditive()).as("audit lines never reach the root's appender")
                .isFalse();
    }

    @Test
    void jsonLogStaysOnStandardError() throws Exception {
        LoggerContext ctx = shipped();
        Logging.configure(ctx, "json", "-");
        assertThat(appenders(ctx, "ROOT")).extracting(LoggingTest::target).containsExactly("System.err");
        assertThat(appenders(ctx, Logging.AUDIT_LOGGER)).extracting(LoggingTest::target).containsExactly("System.out");
    }

    @Test
    void anAuditLogPathGetsTheAuditLinesAndNothingElse() throws Exception {
        LoggerContext ctx = shipped();
        Path file = tmp.resolve("sub/audit.log");
        Logging.configure(ctx, "text", file.toString());
        assertThat(appenders(ctx, Logging.AUDIT_LOGGER)).singleElement().isInstanceOf(FileAppender.class);
        ctx.getLogger(Logging.AUDIT_LOGGER).info("{\"verb\":\"allocate\"}");
        ctx.getLogger("io.unboundedcloud.playpen.Other").info("an operator line");
        ctx.stop();
        assertThat(Files.readAllLines(file)).containsExactly("{\"verb\":\"allocate\"}");
    }

    @Test
    void anAuditLogPathThatCannotBeOpenedStopsStartup() throws Exception {
        LoggerContext ctx = shipped();
        Path notADir = Files.writeString(tmp.resolve("file"), "x");
        assertThatThrownBy(() -> Logging.configure(ctx, "text", notADir.resolve("audit.log").toString()))
                .hasMessageContaining("cannot open the audit log");
    }
}
