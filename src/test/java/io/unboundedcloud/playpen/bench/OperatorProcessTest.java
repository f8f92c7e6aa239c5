package io.unboundedcloud.playpen.bench;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** What the bench reads from a jar's logs and from jcmd. */
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

    @Test
    void theLiveHeapIsTheClassHistogramsTotal() {
        String histogram = "12345:\n"
                + " num     #instances         #bytes  class name (module)\n"
                + "-------------------------------------------------------\n"
                + "   1:       1308023       67745576  [B (java.base@17.0.15)\n"
                + "   2:       1302880       31269120  java.lang.String (java.base@17.0.15)\n"
                + "3928:             1             16  sun.util.locale.provider.TimeZoneNameUtility$1\n"
                + "Total       8396671      355744424\n";
        assertThat(OperatorProcess.histogramTotalKb(histogram)).isEqualTo(355744424L / 1024);
        assertThat(OperatorProcess.histogramTotalKb("12345:\ncom.sun.tools.attach.AttachNotSupportedException")).isEqualTo(-1);
    }

    @Test
    void theLiveHeapIsTheLeastOfTheHistogramsInARow() {
        String withDeadWood = "1:\n   1:        13638        4707320  [I (java.base@17.0.15)\nTotal       1535397       69823488\n";
        String compacted = "1:\n  20:         4540         870048  [I (java.base@17.0.15)\nTotal       1526541       66074488\n";
        String busier = "1:\nTotal       1526541       67000000\n";
        String failed = "1:\ncom.sun.tools.attach.AttachNotSupportedException";

        assertThat(OperatorProcess.least(java.util.List.of(withDeadWood, failed, compacted, busier))).isEqualTo(compacted);
        assertThat(OperatorProcess.least(java.util.List.of(busier, withDeadWood))).isEqualTo(busier);
        assertThat(OperatorProcess.least(java.util.List.of(failed))).isEmpty();
        assertThat(OperatorProcess.HISTOGRAMS).as("the serial collector compacts all every fourth full collection")
                .isGreaterThanOrEqualTo(4);
    }
}
