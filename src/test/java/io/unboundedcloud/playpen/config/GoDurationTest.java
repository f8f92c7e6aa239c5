package io.unboundedcloud.playpen.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class GoDurationTest {

    @ParameterizedTest(name = "{0} = {1} ns")
    @CsvSource({
            "90s,        90000000000",
            "30m,        1800000000000",
            "1h30m,      5400000000000",
            "1h,         3600000000000",
            "250ms,      250000000",
            "0,          0",
            "0s,         0",
            "1.5h,       5400000000000",
            ".5s,        500000000",
            "1m30.5s,    90500000000",
            "2h45m30s,   9930000000000",
            "10us,       10000",
            "10µs,       10000",
            "7ns,        7",
            "+5s,        5000000000",
            "-5s,        -5000000000",
    })
    void parses(String text, long nanos) {
        assertThat(GoDuration.parse(text)).isEqualTo(Duration.ofNanos(nanos));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "1x", "60", "h", "1h 30m", "1.5.5s", "s1", "1d", "-", "+", "1hm"})
    void rejects(String text) {
        assertThatThrownBy(() -> GoDuration.parse(text)).isInstanceOf(IllegalArgumentException.class);
    }

    /** Go's time.ParseDuration takes no white space around a duration: " 5s" is as invalid as "5 s". */
    @ParameterizedTest
    @ValueSource(strings = {" 5s", "5s ", "\t5s", "5s\n", " 0", "0 ", " -5s", "\u00a05s"})
    void refusesWhiteSpaceAroundADuration(String text) {
        assertThatThrownBy(() -> GoDuration.parse(text)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageEndingWith("duration \"" + text + "\"");
    }

    /** Go truncates a fraction to whole nanoseconds (it never rounds one up) and knows both spellings of micro. */
    @ParameterizedTest(name = "{0} = {1} ns")
    @CsvSource({
            "0.9999999999s,            999999999",
            "1.0000000009s,            1000000000",
            "0.0000000019s,            1",
            "1.00000000000000000001h,  3600000000000",
            "10μs,                     10000",
            "2562047h,                 9223369200000000000",
            "9223372036854775807ns,    9223372036854775807",
            "-9223372036854775808ns,   -9223372036854775808",
    })
    void truncatesFractionsLikeGo(String text, long nanos) {
        assertThat(GoDuration.parse(text)).isEqualTo(Duration.ofNanos(nanos));
    }

    /** Beyond what a Go Duration holds (about 292 years) Go refuses the text: it is not capped. */
    @ParameterizedTest
    @ValueSource(strings = {"9223372036854775808ns", "2562048h", "300000000h", "9999999999999999999999s",
            "2562047h47m17s", "-9223372036854775809ns"})
    void refusesWhatGoRefuses(String text) {
        assertThatThrownBy(() -> GoDuration.parse(text)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("invalid duration");
    }

    @ParameterizedTest(name = "{0} → {1}")
    @CsvSource({
            "0,             0s",
            "30000000000,   30s",
            "90000000000,   1m30s",
            "1800000000000, 30m0s",
            "3600000000000, 1h0m0s",
            "5400000000000, 1h30m0s",
            "250000000,     250ms",
            "1500000000,    1.5s",
            "10351000000,   10.351s",
            "70351000000,   1m10.351s",
            "1000000001,    1.000000001s",
            "-90000000000,  -1m30s",
    })
    void formatsLikeGo(long nanos, String expected) {
        assertThat(GoDuration.format(Duration.ofNanos(nanos))).isEqualTo(expected);
    }

    @ParameterizedTest
    @ValueSource(strings = {"90s", "30m", "1h30m", "250ms", "1.5h", "0", "10.351s", "1m10.351s", "2h0m0.123456789s"})
    void formatParsesBack(String text) {
        Duration d = GoDuration.parse(text);
        assertThat(GoDuration.parse(GoDuration.format(d))).isEqualTo(d);
    }
}
