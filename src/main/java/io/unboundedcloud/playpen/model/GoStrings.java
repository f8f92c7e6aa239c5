package io.unboundedcloud.playpen.model;

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

    /** Go's unicode.IsSpace (the White_Space property); all of it lies in the BMP. */
    static boolean isSpace(char c) {
        if (c <= 0xFF) {
            return c == ' ' || (c >= '\t' && c <= '\r') || c == 0x85 || c == 0xA0;
        }
        return c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F
                || c == 0x205F || c == 0x3000;
    }
}
