package io.unboundedcloud.playpen.api;

/**
 * A client-supplied text (a user name, a certificate's CN) for a log line: quoted, cut to 64 characters, and every
 * character that could end the line or hide text (controls, Unicode line and paragraph separators, format
 * characters) written as a {@code \\uXXXX} escape, in every log format.
 */
public final class LogText {
    private LogText() {
    }

    public static String quote(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder out = new StringBuilder("\"");
        s.codePoints().limit(64).forEach(cp -> {
            int type = Character.getType(cp);
            if (type == Character.CONTROL || type == Character.LINE_SEPARATOR || type == Character.PARAGRAPH_SEPARATOR
                    || type == Character.FORMAT || type == Character.SURROGATE || cp == '"' || cp == '\\') {
                out.append(String.format("\\u%04x", cp));
            } else {
                out.appendCodePoint(cp);
            }
        });
        return out.append(s.codePointCount(0, s.length()) > 64 ? "...\"" : "\"").toString();
    }
}
