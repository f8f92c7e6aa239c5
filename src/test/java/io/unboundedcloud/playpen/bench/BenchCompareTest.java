package io.unboundedcloud.playpen.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The compare mode lists every target of every run, in the order they ran, whichever run reports it. */
class BenchCompareTest {
    @TempDir
    Path dir;

    private Path run(String name, String json) throws Exception {
        Path d = dir.resolve(name);
        Files.createDirectories(d);
        Files.writeString(d.resolve("results.json"), json);
        return d;
    }

    @Test
    void everyTargetOfEitherRunIsPrintedForBoth() throws Exception {
        Path a = run("a", """
                {"config":{"startedAt":"2026-11-25T10:00:00Z"},"targets":{
                  "conflictsPerNewAllocAtC64":{"conflicts":0.1,"limit":"<= 0.01","pass":false},
                  "idleReconcile":{"apiCalls":0,"cpuMsP50":30.0,"pass":true}}}""");
        Path b = run("b", """
                {"config":{"startedAt":"2026-11-25T10:20:00Z"},"targets":{
                  "conflictsPerNewAllocAtC64":{"conflicts":0.0,"limit":"<= 0.01","pass":true},
                  "idleReconcile":{"apiCalls":0,"cpuMsP50":0.04,"pass":true},
                  "rssWith100000PodsWithin1GiB":{"vmRssMiB":596.3,"limit":"<= 1024","pass":true,"note":"left out"}}}""");
        Map<String, Object> c = BenchCompare.compare(List.of(a), List.of(b));
        String table = BenchCompare.table(c);

        assertThat(table).contains("A1  " + a, "B1  " + b, "2026-11-25T10:20:00Z");
        assertThat(table).containsSubsequence("conflictsPerNewAllocAtC64", "A1  MISS conflicts=0.1", "B1  PASS conflicts=0.0",
                "idleReconcile", "A1  PASS apiCalls=0 cpuMsP50=30.0", "B1  PASS apiCalls=0 cpuMsP50=0.04",
                "rssWith100000PodsWithin1GiB", "A1  n/a  not reported", "B1  PASS vmRssMiB=596.3");
        assertThat(table).doesNotContain("left out");
        @SuppressWarnings("unchecked")
        Map<String, Object> targets = (Map<String, Object>) c.get("targets");
        assertThat(targets).containsOnlyKeys("conflictsPerNewAllocAtC64", "idleReconcile", "rssWith100000PodsWithin1GiB");
    }

    @Test
    void runsAlternateInTheOrderTheyRan() throws Exception {
        String json = "{\"targets\":{\"x\":{\"v\":1,\"pass\":true}}}";
        Map<String, Object> c = BenchCompare.compare(List.of(run("a1", json), run("a2", json)),
                List.of(run("b1", json), run("b2", json)));
        assertThat(new java.util.ArrayList<Object>(((Map<?, ?>) c.get("runs")).keySet())).containsExactly("A1", "B1", "A2", "B2");
        // a run that wrote no results (it failed) shows as such, not as a pass
        Map<String, Object> missing = BenchCompare.compare(List.of(dir.resolve("nothing-here")), List.of(run("b3", json)));
        assertThat(BenchCompare.table(missing)).contains("A1  n/a  not reported", "B1  PASS v=1");
    }
}
