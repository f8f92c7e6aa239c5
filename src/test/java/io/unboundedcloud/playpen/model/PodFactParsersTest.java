package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.Base64;
import java.util.Optional;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * The pools read a pod's server key and timestamps on every change of the pod, so both are checked by hand rather
 * than with a regular expression or a DateTimeFormatter. Each must answer exactly as the general way does, which
 * these properties keep here as the oracle.
 */
class PodFactParsersTest {
    private static final Pattern WG_KEY = Pattern.compile("[A-Za-z0-9+/]{43}=");

    /** Go's wgtypes.ParseKey as a regular expression and Java's base64 decoder judge it. */
    private static boolean wireGuardKeyTheGeneralWay(String raw) {
        String key = raw == null ? null : raw.replace("\r", "").replace("\n", "");
        if (key == null || !WG_KEY.matcher(key).matches()) {
            return false;
        }
        try {
            return Base64.getDecoder().decode(key).length == 32;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /** java.time's ISO instant, else its offset date-time. */
    private static Optional<Instant> instantTheGeneralWay(String s) {
        if (s == null || s.isEmpty()) {
            return Optional.empty();
        }
        try {
            return Optional.of(Instant.parse(s));
        } catch (DateTimeParseException e) {
            try {
                return Optional.of(OffsetDateTime.parse(s).toInstant());
            } catch (DateTimeParseException e2) {
                return Optional.empty();
            }
        }
    }

    @Property(tries = 3000)
    void aServerKeyIsJudgedAsTheRegularExpressionAndDecoderJudgeIt(@ForAll("keys") String raw) {
        assertThat(AllocRequestParser.isWireGuardKey(raw)).as(raw).isEqualTo(wireGuardKeyTheGeneralWay(raw));
    }

    @Property(tries = 3000)
    void aTimestampIsReadAsJavaTimeReadsIt(@ForAll("timestamps") String raw) {
        assertThat(PoolHealth.instant(raw)).as(raw).isEqualTo(instantTheGeneralWay(raw));
    }

    @Test
    void theKeysAndTimestampsTheApiServerWritesAreRead() {
        assertThat(AllocRequestParser.isWireGuardKey(SlimPodsTest.WG)).isTrue();
        assertThat(AllocRequestParser.isWireGuardKey(SlimPodsTest.WG.replace('A', '-'))).isFalse();
        String split = SlimPodsTest.WG.substring(0, 20) + "\r\n" + SlimPodsTest.WG.substring(20);
        assertThat(AllocRequestParser.isWireGuardKey(split)).isTrue();
        assertThat(PoolHealth.instant("2026-01-02T03:04:05Z")).contains(Instant.parse("2026-01-02T03:04:05Z"));
        assertThat(PoolHealth.instant("2024-02-29T23:59:59Z")).contains(Instant.parse("2024-02-29T23:59:59Z"));
        assertThat(PoolHealth.instant("2025-02-29T00:00:00Z")).isEmpty();
        assertThat(PoolHealth.instant("2026-01-02T03:04:05+01:00")).contains(Instant.parse("2026-01-02T02:04:05Z"));
        assertThat(PoolHealth.instant(null)).isEmpty();
    }

    @Provide
    Arbitrary<String> keys() {
        Arbitrary<Character> alphabet = Arbitraries.oneOf(
                Arbitraries.chars().range('A', 'Z'), Arbitraries.chars().range('a', 'z'),
                Arbitraries.chars().range('0', '9'), Arbitraries.of('+', '/'));
        Arbitrary<Character> odd = Arbitraries.of('=', '-', '_', ' ', '\r', '\n', '\u0660', 'é', '@', '[', '`', '{');
        Arbitrary<Character> c = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(40, alphabet), net.jqwik.api.Tuple.of(1, odd));
        Arbitrary<String> body = c.list().ofMinSize(40).ofMaxSize(46)
                .map(l -> l.stream().map(String::valueOf).reduce("", String::concat));
        return Arbitraries.oneOf(body, body.map(b -> b.length() > 43 ? b.substring(0, 43) + "=" : b + "="),
                body.map(b -> b.length() > 42 ? b.substring(0, 42) + "==" : b));
    }

    @Provide
    Arbitrary<String> timestamps() {
        Arbitrary<String> year = Arbitraries.of("2026", "2024", "2025", "1900", "2000", "0000", "9999", "20x6");
        Arbitrary<String> month = Arbitraries.of("01", "02", "04", "12", "00", "13", "1a");
        Arbitrary<String> day = Arbitraries.of("01", "28", "29", "30", "31", "00", "32");
        Arbitrary<String> hour = Arbitraries.of("00", "12", "23", "24", "-1");
        Arbitrary<String> minute = Arbitraries.of("00", "30", "59", "60");
        Arbitrary<String> second = Arbitraries.of("00", "59", "60", "61");
        Arbitrary<String> tail = Arbitraries.of("Z", "Z", "Z", "z", "+00:00", "+01:30", "-05:00", ".5Z", ".123456789Z",
                "", " ", "ZZ");
        Arbitrary<String> separators = Arbitraries.of("-", "-", "-", "/");
        return Combinators.combine(year, month, day, hour, minute, second, tail, separators)
                .as((y, mo, d, h, mi, s, t, sep) -> y + sep + mo + "-" + d + "T" + h + ":" + mi + ":" + s + t);
    }
}
