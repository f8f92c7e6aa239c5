package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** isSpace is Unicode's White_Space property, which is what Go's unicode.IsSpace tests, for every BMP character. */
class GoStringsWhiteSpaceTest {

    /** White_Space: the space separators (Zs), U+2028 (Zl), U+2029 (Zp), the controls TAB to CR and NEL. */
    private static boolean whiteSpace(char c) {
        return Character.isSpaceChar(c) || (c >= '\t' && c <= '\r') || c == '\u0085';
    }

    @Test
    void everyBmpCharacterIsClassifiedAsUnicodeWhiteSpace() {
        for (int c = 0; c <= 0xFFFF; c++) {
            assertThat(GoStrings.isSpace((char) c)).as("U+%04X", c).isEqualTo(whiteSpace((char) c));
        }
    }

    @Test
    void theSpacesOfEveryRangeAreTrimmedFromBothEnds() {
        assertThat(GoStrings.trimSpace("\u2000\u200a\u1680a b\u202f\u205f\u2029")).isEqualTo("a b");
        assertThat(GoStrings.trimSpace("\u1fffa\u200b")).isEqualTo("\u1fffa\u200b");
        assertThat(GoStrings.trimSpace("\u00ff\u0100")).isEqualTo("\u00ff\u0100");
    }
}
