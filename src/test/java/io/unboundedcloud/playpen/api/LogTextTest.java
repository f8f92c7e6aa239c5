package io.unboundedcloud.playpen.api;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

/** Client-supplied text in a log line can neither end the line nor hide what it holds, in text or JSON logs. */
class LogTextTest {
    @Test
    void breaksQuotesAndHiddenCharactersAreEscaped() {
        assertThat(LogText.quote("a\nb\u0085c\u2028d\u202ee\"f\\")).isEqualTo(
                "\"a\\u000ab\\u0085c\\u2028d\\u202ee\\u0022f\\u005c\"");
        assertThat(LogText.quote("Jos\u00e9")).isEqualTo("\"Jos\u00e9\"");
        assertThat(LogText.quote("x".repeat(100))).isEqualTo("\"" + "x".repeat(64) + "...\"");
        assertThat(LogText.quote("x".repeat(64))).as("exactly 64: nothing cut").isEqualTo("\"" + "x".repeat(64) + "\"");
        assertThat(LogText.quote("\ud83d\ude00".repeat(64))).as("64 code points, 128 chars: nothing cut")
                .isEqualTo("\"" + "\ud83d\ude00".repeat(64) + "\"");
        assertThat(LogText.quote(null)).isEqualTo("null");
    }

    @Property(tries = 2000)
    void nothingThatEndsALineGetsThrough(@ForAll String s) {
        String q = LogText.quote(s);
        assertThat(q.chars()).noneMatch(c -> c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x2028 || c == 0x2029);
    }
}
