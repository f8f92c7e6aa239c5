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

    /**
     * The tests', the benchmark's and the chaos suite's logs write an event with a stack trace on one line too, as the
     * shipped format does: every text appender of each configuration (files written into a temporary directory).
     */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"/logback-test.xml", "/logback-bench.xml",
        "/logback-chaos.xml"})
    void theTestBenchAndChaosLogsWriteAStackTraceOnItsEventsLine(String config,
            @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        String xml;
        try (java.io.InputStream in = LogLinesTest.class.getResourceAsStream(config)) {
            xml = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        xml = xml.replaceAll("<file>[^<]*</file>", java.util.regex.Matcher.quoteReplacement("<file>"
                + dir.resolve("log.txt") + "</file>"));
        IllegalStateException thrown = new IllegalStateException("bad name mallory\n2026-01-01T00:00:00Z INFO forged",
                new IllegalArgumentException("cause\nINFO forged cause"));
        LoggerContext ctx = new LoggerContext();
        try {
            JoranConfigurator jc = new JoranConfigurator();
            jc.setContext(ctx);
            jc.doConfigure(new java.io.ByteArrayInputStream(xml.getBytes(StandardCharsets.UTF_8)));
            ch.qos.logback.classic.Logger root = ctx.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
            java.util.List<String> lines = new java.util.ArrayList<>();
            root.iteratorForAppenders().forEachRemaining(a -> {
                @SuppressWarnings("unchecked")
                OutputStreamAppender<ch.qos.logback.classic.spi.ILoggingEvent> out =
                        (OutputStreamAppender<ch.qos.logback.classic.spi.ILoggingEvent>) a;
                LoggingEvent e = new LoggingEvent("x", root, Level.ERROR, "request failed", thrown, null);
                lines.add(a.getName() + ": " + new String(out.getEncoder().encode(e), StandardCharsets.UTF_8));
            });
            assertThat(lines).isNotEmpty().allSatisfy(line -> assertThat(line).endsWith("\n")
                    .contains("request failed java.lang.IllegalStateException: bad name mallory")
                    .contains("Caused by: java.lang.IllegalArgumentException: cause")
                    .satisfies(l -> assertThat(l.substring(0, l.length() - 1)).doesNotContain("\n")
                            .doesNotContain("\r")));
        } finally {
            ctx.stop();
        }
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
