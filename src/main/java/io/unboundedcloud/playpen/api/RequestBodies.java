package io.unboundedcloud.playpen.api;

import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * What a request body must be before it is decoded: any media type (the reference never looks at Content-Type),
 * but a declared charset must be UTF-8 (or its subset US-ASCII), else 415; at most 64 KiB, else 413.
 */
public final class RequestBodies {
    public static final int MAX_BODY_BYTES = 64 * 1024;

    private RequestBodies() {
    }

    /** Returns the body (never null) when it may be decoded as JSON; throws 415 or 413. */
    public static byte[] admit(String contentType, byte[] body) {
        String charset = charset(contentType);
        if (charset != null && !isUtf8(charset)) {
            // the body would be read as UTF-8 regardless: refuse rather than misread it (the reference misreads)
            throw ApiException.unsupportedMediaType("charset \"" + charset + "\" is not supported; send UTF-8");
        }
        if (body != null && body.length > MAX_BODY_BYTES) {
            throw tooLarge(MAX_BODY_BYTES, false);
        }
        return body == null ? new byte[0] : body;
    }

    /**
     * The 413 of a body over {@code limit} bytes, saying what to send: a request's small JSON object, or for a probe
     * (the one kind of request a client without a trusted certificate gets to send a body with) none.
     */
    public static ApiException tooLarge(long limit, boolean probe) {
        return ApiException.tooLarge("request body is larger than " + limit + " bytes: " + (probe
                ? "/healthz and /readyz take no body; send the probe without one"
                : "send the request's JSON object alone, such as {\"idempotencyKey\":\"job-42\"} (an alloc, dealloc"
                        + " or renewal body is a few hundred bytes)"));
    }

    /** The 413 of a HEAD request's body over {@code limit} bytes: a HEAD takes none. */
    public static ApiException headTooLarge(long limit) {
        return ApiException.tooLarge("request body is larger than " + limit + " bytes: a HEAD request takes no body;"
                + " send it without one");
    }

    /** The charset parameter of a Content-Type value (unquoted), or null when there is none. */
    static String charset(String contentType) {
        if (contentType == null) {
            return null;
        }
        String found = null;
        String[] parts = contentType.split(";");
        for (int i = 1; i < parts.length; i++) {
            int eq = parts[i].indexOf('=');
            if (eq < 0 || !parts[i].substring(0, eq).trim().equalsIgnoreCase("charset")) {
                continue;
            }
            String value = parts[i].substring(eq + 1).trim();
            if (value.length() >= 2 && value.startsWith("\"") && value.endsWith("\"")) {
                value = value.substring(1, value.length() - 1).trim();
            }
            if (found == null || !isUtf8(value)) {
                // two charset parameters: the one that is not UTF-8 decides
                found = value;
            }
        }
        return found;
    }

    static boolean isUtf8(String name) {
        try {
            Charset cs = Charset.forName(name.trim().toLowerCase(Locale.ROOT));
            return cs.equals(StandardCharsets.UTF_8) || cs.equals(StandardCharsets.US_ASCII);
        } catch (IllegalArgumentException e) {
            // unknown or illegal names (bogus-cs, "", x y)
            return false;
        }
    }
}
