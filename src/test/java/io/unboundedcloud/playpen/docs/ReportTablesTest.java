package io.unboundedcloud.playpen.docs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The performance and reliability tables, from a bench results.json and a chaos report.json (fixtures here; the
 * documents from real runs with
 * {@code mvn -o -q test -Dtest=ReportTablesTest -Ddocs.bench=target/bench/results.json -Ddocs.chaos=target/chaos/report.json}).
 */
class ReportTablesTest {
    static final ObjectMapper M = new ObjectMapper();

    static JsonNode fixture(String name) throws Exception {
        return M.readTree(Files.readString(Path.of("src/test/resources/docs", name)));
    }

    @Test
    void benchTables() throws Exception {
        String md = ReportTables.benchTables(fixture("bench-results.json"));
        assertThat(md).isEqualTo(Files.readString(Path.of("src/test/resources/docs/bench-tables.md")));
        assertThat(md).as("no date of the run").doesNotContain("2026");
    }

    @Test
    void chaosTables() throws Exception {
        String md = ReportTables.chaosTables(fixture("chaos-report.json"));
        assertThat(md).isEqualTo(Files.readString(Path.of("src/test/resources/docs/chaos-tables.md")));
    }

    @Test
    void targetsReadAsWordsAndMissedOnesStandOut() throws Exception {
        String md = ReportTables.benchTables(fixture("bench-results.json"));
        assertThat(md).contains("| alloc p50 / bare PATCH p50, c=1 | oursP50Ms 1.05, otherP50Ms 0.45, ratio 2.33,"
                + " floorP50Ms 0.16, leastPossibleRatio 1.35 | &lt;= 1.3 | **missed** |");
        assertThat(md).contains("| somethingNew | value 7 |  | report |");
        assertThat(ReportTables.jarRun("replicas2_c64_warm")).isEqualTo("2 replicas, c=64, steady state");
        assertThat(ReportTables.jarRun("replicas1_c32")).isEqualTo("1 replica, c=32, fresh process");
        assertThat(ReportTables.jarRun("replicas3_c64_warm_oneServing"))
                .isEqualTo("3 replicas, c=64, steady state, every request to one of them");
        assertThat(ReportTables.jarRun("replicas1_c64_warm_again")).isEqualTo("1 replica, c=64, steady state, measured again");
        assertThat(ReportTables.targetName("rssWith100000PodsWithin1GiB"))
                .isEqualTo("resident memory of the packaged jar, 100,000 pods");
        assertThat(ReportTables.targetName("memoryPerCachedPodWith100000Pods"))
                .isEqualTo("memory per cached pod, 100,000 pods");
        assertThat(ReportTables.targetName("allocOverBarePatchAt100000VsAt200"))
                .isEqualTo("alloc p50 / bare PATCH p50, c=1, against the same ratio, 100,000 pods against 200");
        assertThat(ReportTables.targetName("p50VsFloorPlusBaselineAtC1"))
                .isEqualTo("alloc p50 / (TLS floor p50 + bare PATCH p50), c=1");
        assertThat(ReportTables.targetName("replayP50VsFloorAtC1")).isEqualTo("replay p50 / TLS floor p50, c=1");
        assertThat(ReportTables.targetName("startupToReadyWithin5s")).isEqualTo("startup to ready with the large pool");
        assertThat(ReportTables.targetName("throughputVsReferenceAtN200"))
                .isEqualTo("ours / the Go operator's request pattern, throughput, 200 pods");
        assertThat(ReportTables.num(M.readTree("1234.5"))).isEqualTo("1,235");
        assertThat(ReportTables.num(M.readTree("3100"))).isEqualTo("3,100");
    }

    /** Rewrites the generated sections of docs/performance.md and docs/reliability.md from real runs' JSON. */
    @Test
    void writeTheDocumentsFromRealRuns() throws Exception {
        String bench = System.getProperty("docs.bench", "");
        String chaos = System.getProperty("docs.chaos", "");
        assumeTrue(!bench.isBlank() || !chaos.isBlank(), "set -Ddocs.bench and/or -Ddocs.chaos to rewrite the documents");
        if (!bench.isBlank()) {
            GeneratedSection.write(Path.of("docs/performance.md"), "bench",
                    ReportTables.benchTables(M.readTree(Files.readString(Path.of(bench)))));
        }
        if (!chaos.isBlank()) {
            GeneratedSection.write(Path.of("docs/reliability.md"), "chaos",
                    ReportTables.chaosTables(M.readTree(Files.readString(Path.of(chaos)))));
        }
    }
}
