package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

/** A watch being reopened is not "not ready"; a watch that stays down is, once the grace has passed. */
class WatchContinuityTest {
    final AtomicLong now = new AtomicLong(1_000_000_000L);
    final WatchContinuity c = new WatchContinuity(now::get, Duration.ofSeconds(10));

    void advance(Duration d) {
        now.addAndGet(d.toNanos());
    }

    @Test
    void aReopenedWatchWithinTheGraceKeepsTheReplicaReady() {
        assertThat(c.connected(true)).isTrue();
        assertThat(c.connected(false)).as("the moment the informer closes its watch").isTrue();
        advance(Duration.ofMillis(1200));
        assertThat(c.connected(false)).as("1.2 s into the reopen (a loaded machine)").isTrue();
        assertThat(c.connected(true)).isTrue();
    }

    @Test
    void aWatchThatStaysDownMakesTheReplicaNotReadyAfterTheGrace() {
        assertThat(c.connected(false)).isTrue();
        advance(Duration.ofMillis(9_999));
        assertThat(c.connected(false)).isTrue();
        advance(Duration.ofMillis(1));
        assertThat(c.connected(false)).isFalse();
        advance(Duration.ofMinutes(5));
        assertThat(c.connected(false)).isFalse();
        assertThat(c.connected(true)).as("connected again").isTrue();
    }

    @Test
    void eachGapIsMeasuredFromItsOwnStart() {
        c.connected(false);
        advance(Duration.ofSeconds(8));
        c.connected(true);
        advance(Duration.ofSeconds(1));
        assertThat(c.connected(false)).isTrue();
        advance(Duration.ofSeconds(8));
        assertThat(c.connected(false)).as("8 s into the second gap, 17 s after the first began").isTrue();
    }

    @Test
    void aClockWhoseReadingsAreNegativeOrZeroMeasuresGapsAlike() {
        // System.nanoTime counts from an arbitrary origin: its readings may be zero or negative
        for (long origin : new long[] {0L, -60_000_000_000L, Long.MIN_VALUE / 2}) {
            now.set(origin);
            WatchContinuity fromOrigin = new WatchContinuity(now::get, Duration.ofSeconds(10));
            assertThat(fromOrigin.connected(false)).isTrue();
            advance(Duration.ofSeconds(10));
            assertThat(fromOrigin.connected(false)).as("10 s down, clock from " + origin).isFalse();
            assertThat(fromOrigin.connected(true)).isTrue();
        }
    }

    @Test
    void theDefaultGraceIsTenSeconds() {
        assertThat(WatchContinuity.GRACE).isEqualTo(Duration.ofSeconds(10));
    }
}
