package io.unboundedcloud.playpen;

import java.util.regex.Pattern;

import ch.qos.logback.classic.pattern.ThrowableProxyConverter;
import ch.qos.logback.classic.spi.ILoggingEvent;

/**
 * The text log's stack trace ({@code %oneLineEx} in logback.xml), on the event's own line: the trace's line breaks
 * become {@code " | "}, and every other control character or Unicode line break (an exception's message can quote
 * what a client sent) is written as '?', as in the message. One event is always one line, with or without a trace.
 */
public final class OneLineThrowableConverter extends ThrowableProxyConverter {
    private static final Pattern BREAK = Pattern.compile("\r?\n\t?");
    private static final Pattern UNSAFE = Pattern.compile("[\\x00-\\x1F\\x7F-\\x9F\\u2028\\u2029]");

    @Override
    public String convert(ILoggingEvent event) {
        String trace = super.convert(event);
        int end = trace.length();
        while (end > 0 && (trace.charAt(end - 1) == '\n' || trace.charAt(end - 1) == '\r')) {
            end--;
        }
        if (end == 0) {
            return "";
        }
        return " " + UNSAFE.matcher(BREAK.matcher(trace.substring(0, end)).replaceAll(" | ")).replaceAll("?");
    }
}
