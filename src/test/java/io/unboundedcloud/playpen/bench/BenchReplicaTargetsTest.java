package io.unboundedcloud.playpen.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.Map;

import org.junit.jupiter.api.Test;

/**
 * The replicas' target is judged on their whole CPU per allocation against one replica's; beside it the bench
 * reports the same ratio without what each side's replicas spend idle over the measured windows.
 */
class BenchReplicaTargetsTest {
    private static Map<String, Object> jarRun(double cpuMicros, Double idleMicros) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("operatorCpuMicrosPerAlloc", cpuMicros);
        if (idleMicros != null) {
            m.put("idleCpuMicrosPerAllocInWindows", idleMicros);
        }
        m.put("conflictsPerAlloc", 0.0);
        m.put("writesPerAllocInAll", 1.0);
        return m;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> replicaRow(Bench b, String key) {
        Map<String, Object> t = new LinkedHashMap<>();
        b.replicaTargets(t);
        return (Map<String, Object>) ((Map<String, Object>) t.get("replicasScaleOut")).get(key);
    }

    @Test
    void theRatioNetOfIdleIsReportedBesideTheTargetsWholeCpuRatio() {
        Bench b = new Bench();
        int c = b.cpuConcurrency[b.cpuConcurrency.length - 1];
        Map<String, Object> jar = new LinkedHashMap<>();
        jar.put("replicas1_c" + c + "_warm", jarRun(2000, 100.0));
        jar.put("replicas2_c" + c + "_warm", jarRun(2300, 200.0));
        jar.put("replicas3_c" + c + "_warm", jarRun(2900, 400.0));
        b.results.put("operatorProcessAllocs", jar);

        Map<String, Object> three = replicaRow(b, "replicas3_c" + c);
        // judged on the whole CPU: 2,900 against 2,000 is beyond 1.3
        assertThat(three).containsEntry("cpuOverOneReplica", 1.45).containsEntry("pass", false)
                // without the idle share: 2,500 against 1,900
                .containsEntry("cpuOverOneReplicaNetOfIdle", 1.316);
        assertThat(replicaRow(b, "replicas2_c" + c)).containsEntry("cpuOverOneReplica", 1.15)
                .containsEntry("cpuOverOneReplicaNetOfIdle", 1.105).containsEntry("pass", true);
    }

    @Test
    void runsWithoutTheIdleFigureReportNoRatioNetOfIt() {
        Bench b = new Bench();
        int c = b.cpuConcurrency[b.cpuConcurrency.length - 1];
        Map<String, Object> jar = new LinkedHashMap<>();
        jar.put("replicas1_c" + c + "_warm", jarRun(2000, null));
        jar.put("replicas2_c" + c + "_warm", jarRun(2300, 200.0));
        b.results.put("operatorProcessAllocs", jar);

        assertThat(replicaRow(b, "replicas2_c" + c)).containsEntry("cpuOverOneReplica", 1.15)
                .doesNotContainKey("cpuOverOneReplicaNetOfIdle");
    }
}
