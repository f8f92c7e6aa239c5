package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Kubernetes' duration.HumanDuration (kubectl's AGE): each switch of format is tested just past it, where the two
 * formats print different things, and what is shown is the duration cut down to the smallest unit it shows.
 */
class HumanDurationTest {

    @ParameterizedTest(name = "{0} ms -> {1}")
    @CsvSource({
        // up to two seconds in the future count as now (clock skew between machines); Go truncates toward zero
        "-3000, <invalid>", "-2001, <invalid>", "-2000, <invalid>", "-1999, 0s", "-1500, 0s", "-1000, 0s", "-1, 0s",
        "0, 0s", "999, 0s", "1000, 1s", "119999, 119s",
        // minutes and seconds below ten minutes, minutes alone from there
        "120000, 2m", "121000, 2m1s", "599000, 9m59s", "600000, 10m", "605000, 10m", "10799000, 179m",
        // hours and minutes below eight hours, hours alone from there
        "10800000, 3h", "10860000, 3h1m", "28740000, 7h59m", "28800000, 8h", "29100000, 8h",
        "172799000, 47h",
        // days and hours below eight days, days alone from there
        "172800000, 2d", "176400000, 2d1h", "687600000, 7d23h", "691200000, 8d", "694800000, 8d",
        "63071999000, 729d",
        // years and days below eight years, years alone from there
        "63072000000, 2y", "63158400000, 2y1d", "252201600000, 7y364d", "252288000000, 8y", "252374400000, 8y",
        "630720000000, 20y"})
    void formatSwitchesWhereKubernetesSwitches(long millis, String expected) {
        assertThat(AllocViews.humanDuration(Duration.ofMillis(millis))).isEqualTo(expected);
    }

    private static final Pattern PARTS = Pattern.compile("(?:(\\d+)y)?(?:(\\d+)d)?(?:(\\d+)h)?(?:(\\d+)m)?(?:(\\d+)s)?");

    @Property(tries = 2000)
    void showsTheDurationCutDownToItsSmallestUnit(@ForAll @LongRange(min = 0, max = 20L * 365 * 86400) long seconds) {
        String shown = AllocViews.humanDuration(Duration.ofSeconds(seconds));
        Matcher m = PARTS.matcher(shown);
        assertThat(m.matches()).as(shown).isTrue();
        long[] unit = {365L * 86400, 86400, 3600, 60, 1};
        long value = 0;
        long smallest = 0;
        int parts = 0;
        for (int i = 0; i < unit.length; i++) {
            if (m.group(i + 1) != null) {
                value += Long.parseLong(m.group(i + 1)) * unit[i];
                smallest = unit[i];
                parts++;
            }
        }
        assertThat(parts).as(shown).isBetween(1, 2);
        assertThat(value).as(shown).isLessThanOrEqualTo(seconds);
        assertThat(seconds - value).as(shown).isLessThan(smallest);
    }
}
