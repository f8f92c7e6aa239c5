package io.unboundedcloud.playpen;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.classic.spi.LoggingEvent;
import ch.qos.logback.core.OutputStreamAppender;

/** The shipped text log format writes one line per event, whatever a message quotes from a client. */
class LogLinesTest {
    @Test
    void aMessageCannotStartALineOfItsOwn() throws Exception {
        String message = "SubjectAccessReview failed user=mallory\n2026-01-01T00:00:00Z INFO forged\u0085\u2028\u2029\r\u000b\u001b[31m";
        String body = oneLine(message, null);
        assertThat(body).doesNotContain("\n").doesNotContain("\r").doesNotContain("\u0085").doesNotContain("\u2028")
                .doesNotContain("\u2029").doesNotContain("\u000b").doesNotContain("\u001b")
                .contains("user=mallory?2026-01-01T00:00:00Z INFO forged");
    }

    /**
     * An exception's message can quote a client too: its stack trace is written on the event's line, with the same
     * replacement of control characters and line breaks, so it cannot start a line of its own either.
     */
    @Test
    void aStackTraceCannotStartALineOfItsOwn() throws Exception {
        IllegalStateException thrown = new IllegalStateException("bad name mallory\n2026-01-01T00:00:00Z INFO forged"
                + "\u0085\u2028\u2029\r\u000b\u001b[31m", new IllegalArgumentException("cause\nINFO forged cause"));
        String body = oneLine("request failed", thrown);
        assertThat(body).doesNotContain("\n").doesNotContain("\r").doesNotContain("\u0085").doesNotContain("\u2028")
                .doesNotContain("\u2029").doesNotContain("\u000b").doesNotContain("\u001b")
                .contains("request failed").contains("java.lang.IllegalStateException: bad name mallory")
                .contains("2026-01-01T00:00:00Z INFO forged").contains("Caused by: java.lang.IllegalArgumentException")
                .contains("at io.unboundedcloud.playpen.LogLinesTest.aStackTraceCannotStartALineOfItsOwn");
    }

    /** The event as the shipped logback.xml's text appender writes it: one line, returned without its line end. */
    private static String oneLine(String message, Throwable thrown) throws Exception {
        LoggerContext ctx = new LoggerContext();
        try {
            JoranConfigurator jc = new JoranConfigurator();
            jc.setContext(ctx);
            jc.doConfigure(LogLinesTest.class.getResource("/logback.xml"));
            ch.qos.logback.classic.Logger root = ctx.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
            @SuppressWarnings("unchecked")
            OutputStreamAppender<ch.qos.logback.classic.spi.ILoggingEvent> out =
                    (OutputStreamAppender<ch.qos.logback.classic.spi.ILoggingEvent>) root.getAppender("OUT");
            LoggingEvent e = new LoggingEvent("x", root, Level.WARN, message, thrown, null);
            String line = new String(out.getEncoder().encode(e), StandardCharsets.UTF_8);
            assertThat(line).endsWith("\n");
            return line.substring(0, line.length() - 1);
        } finally {
            ctx.stop();
        }
    }
}
