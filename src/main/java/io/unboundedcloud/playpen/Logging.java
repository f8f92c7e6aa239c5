package io.unboundedcloud.playpen;

import org.slf4j.LoggerFactory;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.JsonEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;

/** Applies --log-format: the text layout comes from logback.xml; json swaps in logback's JSON encoder. */
final class Logging {
    private Logging() {
    }

    static void configure(String format) {
        if (!"json".equals(format) || !(LoggerFactory.getILoggerFactory() instanceof LoggerContext ctx)) {
            return;
        }
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
        out.setEncoder(encoder);
        out.start();
        root.addAppender(out);
    }
}
