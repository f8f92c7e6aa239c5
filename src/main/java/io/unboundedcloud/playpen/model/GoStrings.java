package io.unboundedcloud.playpen.model;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Go's strings.TrimSpace, so values hashed here are bit-identical to the reference's: it trims
 * Unicode White_Space (incl. U+0085, U+00A0, U+3000) but, unlike Java's trim(), no other control characters.
 */
public final class GoStrings {
    private GoStrings() {
    }

    public static String trimSpace(String s) {
        int start = 0;
        int end = s.length();
        while (start < end && isSpace(s.charAt(start))) {
            start++;
        }
        while (end > start && isSpace(s.charAt(end - 1))) {
            end--;
        }
        return s.substring(start, end);
    }

    /**
     * A header value as the bytes that were sent: Netty hands each byte of a header over as one char (ISO-8859-1).
     * A value with a char above U+00FF did not come off the wire (a caller's own text) and is taken as UTF-8.
     */
    public static byte[] wireBytes(String headerValue) {
        for (int i = 0; i < headerValue.length(); i++) {
            if (headerValue.charAt(i) > 0xFF) {
                return headerValue.getBytes(StandardCharsets.UTF_8);
            }
        }
        return headerValue.getBytes(StandardCharsets.ISO_8859_1);
    }

    /**
     * Go's strings.TrimSpace over raw bytes, as Go applies it to a header value: the Unicode spaces (read as UTF-8)
     * at either end go, and bytes that are not UTF-8 stay, as Go keeps them.
     */
    public static byte[] trimSpace(byte[] b) {
        int start = 0;
        int end = b.length;
        int n;
        while (start < end && (n = spaceAt(b, start, end)) > 0) {
            start += n;
        }
        while (end > start && (n = spaceBefore(b, start, end)) > 0) {
            end -= n;
        }
        return Arrays.copyOfRange(b, start, end);
    }

    /** The length of the UTF-8 space that starts at b[i] (0: none). Every space is one to three bytes long. */
    private static int spaceAt(byte[] b, int i, int end) {
        for (int len = 1; len <= 3 && i + len <= end; len++) {
            if (isSpace(b, i, len)) {
                return len;
            }
        }
        return 0;
    }

    /** The length of the UTF-8 space that ends just before b[end] (0: none). */
    private static int spaceBefore(byte[] b, int start, int end) {
        for (int len = 1; len <= 3 && end - len >= start; len++) {
            if (isSpace(b, end - len, len)) {
                return len;
            }
        }
        return 0;
    }

    /** Whether b[i, i+len) is the shortest UTF-8 form of one space. */
    private static boolean isSpace(byte[] b, int i, int len) {
        int lead = b[i] & 0xFF;
        int cp;
        if (len == 1) {
            cp = lead < 0x80 ? lead : -1;
        } else if (len == 2) {
            cp = lead >= 0xC2 && lead <= 0xDF && cont(b[i + 1]) ? (lead & 0x1F) << 6 | (b[i + 1] & 0x3F) : -1;
        } else {
            cp = lead >= 0xE0 && lead <= 0xEF && cont(b[i + 1]) && cont(b[i + 2])
                    ? (lead & 0x0F) << 12 | (b[i + 1] & 0x3F) << 6 | (b[i + 2] & 0x3F) : -1;
            cp = cp >= 0x800 ? cp : -1;
        }
        return cp >= 0 && isSpace((char) cp);
    }

    private static boolean cont(byte c) {
        return (c & 0xC0) == 0x80;
    }

    /** Go's unicode.IsSpace (the White_Space property); all of it lies in the BMP. */
    static boolean isSpace(char c) {
        if (c <= 0xFF) {
            return c == ' ' || (c >= '\t' && c <= '\r') || c == 0x85 || c == 0xA0;
        }
        return c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F
                || c == 0x205F || c == 0x3000;
    }

    /** Go's net.JoinHostPort: an IPv6 address goes in brackets, else the port would read as part of it. */
    public static String joinHostPort(String host, int port) {
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }
}
