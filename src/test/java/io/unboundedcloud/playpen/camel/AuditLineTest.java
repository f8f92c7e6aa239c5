package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.CharRange;
import net.jqwik.api.constraints.StringLength;

/** An audit line is one line whatever a user name holds, and reads back as exactly what was written. */
class AuditLineTest {
    static final ObjectMapper M = new ObjectMapper();

    static String line(String user) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("time", "2026-01-01T00:00:00Z");
        m.put("user", user);
        m.put("outcome", "allocated");
        return AuditLog.write(m);
    }

    /** Every character that ends a line somewhere (Unicode's mandatory breaks and the NEL/LS/PS of viewers). */
    static final List<Character> BREAKS = List.of('\n', '\r', '\u000b', '\u000c', '\u0085', '\u2028', '\u2029',
            '\u001c', '\u001d', '\u001e');

    @Test
    void everyUnicodeLineBreakIsEscaped() throws Exception {
        for (char c : BREAKS) {
            String user = "mallory" + c + "{\"user\":\"admin\"}";
            String line = line(user);
            assertThat(line).as("U+%04X", (int) c).doesNotContain(String.valueOf(c));
            assertThat(line.lines().count()).isEqualTo(1);
            assertThat(M.readTree(line).get("user").asText()).isEqualTo(user);
        }
    }

    @Test
    void controlsAndCharactersThatHideTextAreEscaped() throws Exception {
        // C1 controls, DEL, bidirectional overrides and isolates, zero-width space and joiner, BOM
        String user = "a\u0080\u009f\u007f\u202e\u2066\u200b\u200d\ufeffz";
        String line = line(user);
        assertThat(line).contains("\\u0080").contains("\\u009f").contains("\\u007f").contains("\\u202e")
                .contains("\\u2066").contains("\\u200b").contains("\\u200d").contains("\\ufeff");
        assertThat(M.readTree(line).get("user").asText()).isEqualTo(user);
        // ordinary text stays readable
        assertThat(line("Jos\u00e9 \u5f20\u4f1f")).contains("Jos\u00e9 \u5f20\u4f1f");
    }

    @Property(tries = 2000)
    void anyUserNameIsOneLineAndReadsBack(@ForAll @StringLength(max = 40) String user) throws Exception {
        String line = line(user);
        line.chars().forEach(ch -> assertThat(AuditLog.LineSafeEscapes.escaped(ch) || ch < 0x20)
                .as("raw U+%04X in %s", ch, line).isFalse());
        assertThat(M.readTree(line).get("user").asText()).isEqualTo(user);
    }

    @Property(tries = 1000)
    void namesFromTheControlAndSeparatorRangesNeverBreakALine(
            @ForAll @StringLength(max = 12) @CharRange(from = '\u0000', to = '\u00a0') @CharRange(from = '\u2000', to = '\u206f')
            String user) throws Exception {
        String line = line(user);
        for (char c : BREAKS) {
            assertThat(line).doesNotContain(String.valueOf(c));
        }
        assertThat(M.readTree(line).get("user").asText()).isEqualTo(user);
    }

    @Test
    void unicodeNoncharactersAreEscapedAndTheirNeighboursAreNot() {
        // U+FDD0..U+FDEF and every plane's last two code points are noncharacters: never text
        for (int ch : new int[] {0xFDD0, 0xFDE7, 0xFDEF, 0xFFFE, 0xFFFF, 0x1FFFE, 0x10FFFF}) {
            assertThat(AuditLog.LineSafeEscapes.escaped(ch)).as("U+%04X", ch).isTrue();
        }
        for (int ch : new int[] {0xFDCF, 0xFDF0, 0xFFFD, 0x1FFFD, 'a', 'é'}) {
            assertThat(AuditLog.LineSafeEscapes.escaped(ch)).as("U+%04X", ch).isFalse();
        }
    }
}
