package io.unboundedcloud.playpen.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * The JIT counts as settled only after several quiet rounds in a row (one quiet round between busy ones is not the
 * compiler being done), and the 100,000-pod phase settles no longer than its idle pods allow.
 */
class BenchJitSettleTest {
    @Test
    void oneQuietRoundBetweenBusyOnesIsNotSettled() {
        assertThat(Bench.jitQuiet(List.of(98.0, 120.0, 4.8))).isFalse();
        assertThat(Bench.jitQuiet(List.of(98.0, 4.8, 60.0, 5.0, 7.0))).isFalse();
        assertThat(Bench.jitQuiet(List.of(9.0, 9.9))).isFalse();
    }

    @Test
    void quietRoundsInARowAreSettled() {
        assertThat(Bench.jitQuiet(List.of(98.0, 60.0, 8.0, 4.0, 9.9))).isTrue();
        assertThat(Bench.jitQuiet(List.of(1.0, 2.0, 3.0))).isTrue();
        assertThat(Bench.jitQuiet(List.of(8.0, 4.0, 10.0))).as("10% is not under the limit").isFalse();
    }

    @Test
    void theHugePhaseSettlesOnlyAsLongAsItsIdlePodsLast() {
        Bench b = new Bench();
        HugePool huge = new HugePool(b);
        int perRound = 3 * (b.jitSettleRoundRequests() + b.warmup);
        int measured = 3 * (b.requests + b.rounds * Bench.ROUND_WARMUP);

        assertThat(huge.settleRoundsWithin(1_000_000, 3)).isEqualTo(b.jitSettleRounds);
        assertThat(huge.settleRoundsWithin(measured + 5 * perRound, 3)).isEqualTo(5);
        assertThat(huge.settleRoundsWithin(measured + 5 * perRound - 1, 3)).isEqualTo(4);
        assertThat(huge.settleRoundsWithin(measured - 1, 3)).isZero();
        // the default pool: 50,000 idle, less the JIT warm-up's 1,500 of each of the three scenarios
        assertThat(huge.settleRoundsWithin(50_000 - 3 * b.jitWarmup, 3)).isBetween(40, b.jitSettleRounds);
    }
}
