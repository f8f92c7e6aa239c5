package io.unboundedcloud.playpen.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import org.junit.jupiter.api.Test;

/** The idle reconcile targets count only passes that ran: one that returned before the pool could plan measures nothing. */
class IdleReconcileTargetTest {
    @Test
    void everyPassAskedForMustHaveRun() {
        // 20 unmeasured passes, then the measured ones
        assertThat(Bench.allPassesRan(Map.of("passes", 30, "passesRun", 50L))).isTrue();
        // and one the operator ran of its own accord meanwhile
        assertThat(Bench.allPassesRan(Map.of("passes", 30, "passesRun", 51L))).isTrue();
        assertThat(Bench.allPassesRan(Map.of("passes", 30, "passesRun", 0L))).isFalse();
        assertThat(Bench.allPassesRan(Map.of("passes", 30, "passesRun", 49L))).isFalse();
        assertThat(Bench.allPassesRan(Map.of("passes", 30))).isFalse();
    }
}
