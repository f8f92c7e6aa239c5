package io.unboundedcloud.playpen.bench;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The bench tells which replica leads from the leadership lines LeaderElection logs. */
class OperatorProcessTest {
    private static final String ACQUIRED = "10:00:01.200 INFO  LeaderElection - leadership acquired identity=bench-1a2b3c4d\n";
    private static final String LOST = "10:00:09.000 INFO  LeaderElection - leadership lost identity=bench-1a2b3c4d\n";

    @Test
    void aReplicaLeadsFromItsAcquiredLineUntilALostLine() {
        String start = "10:00:00.000 INFO  LeaderElection - leader election started identity=bench-1a2b3c4d "
                + "lease=playpen/playpen-operator\n";
        assertThat(OperatorProcess.leadsIn(start)).isFalse();
        assertThat(OperatorProcess.leadsIn(start + ACQUIRED)).isTrue();
        assertThat(OperatorProcess.leadsIn(start + ACQUIRED + LOST)).isFalse();
        assertThat(OperatorProcess.leadsIn(start + ACQUIRED + LOST + ACQUIRED)).isTrue();
        assertThat(OperatorProcess.leadsIn("")).isFalse();
    }
}
