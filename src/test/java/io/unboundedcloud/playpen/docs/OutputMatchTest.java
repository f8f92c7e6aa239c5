package io.unboundedcloud.playpen.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import org.junit.jupiter.api.Test;

/** What may differ between a documented output and a fresh one, and what may not. */
class OutputMatchTest {
    @Test
    void whatChangesFromRunToRunIsIgnored() {
        List<String> documented = List.of(
                "NAME               TYPE     ARCH    VERSION   POD                          AGE   EXPIRES",
                "39bfc0942e903926   runner   amd64   <none>    playpen-runner-amd64-51820   2s    59m",
                "  creationTimestamp: \"2026-11-23T13:05:09Z\"",
                "  resourceVersion: \"22\"",
                "  uid: 00000000-0000-0000-0000-0000000000ae",
                "\"serverPublicKey\":\"qWAIYr03DiArN0/T2yJJCKkmD4pPfMicYsA1lbCtYXc=\"",
                "playpen-runner-amd64-51820   1/1   Running   0   9s   10.244.0.10   dev-amd64",
                "target/dev is in use by another --dev playground (pid 7865, started 2026-11-25T20:01:45Z)",
                "MANAGEMENT_URL=http://127.0.0.1:41989");
        String now = String.join("\n",
                "NAME TYPE ARCH VERSION POD AGE EXPIRES",
                "",
                "5a1b0942e903926f   runner   amd64   <none>    playpen-runner-amd64-51820   1m30s   58m",
                "  creationTimestamp: \"2026-12-01T01:02:03Z\"",
                "  resourceVersion: \"1041\"   ",
                "  uid: 3f2a8c1e-0000-4000-8000-1234567890ab",
                "\"serverPublicKey\":\"xoZm15T5nC+DzQGbWlQZUj5vjrDJnB+ho9iEpTUbCxI=\"",
                "playpen-runner-amd64-51820   1/1   Running   0   10s   10.244.1.3   dev-amd64",
                "target/dev is in use by another --dev playground (pid 12, started 2026-11-26T00:00:00Z)",
                "MANAGEMENT_URL=http://127.0.0.1:9876");
        assertThat(OutputMatch.matches(documented, now)).isTrue();
        // ids and key hashes that happen to hold no letter
        assertThat(OutputMatch.matches(List.of("alloc.playpen.unbounded-cloud.io/39bfc0942e903926",
                "{\"keyHashPrefix\":\"96baf113\"}"), "alloc.playpen.unbounded-cloud.io/3901094290390392\n"
                + "{\"keyHashPrefix\":\"12345678\"}")).isTrue();
    }

    @Test
    void whatTheReaderReliesOnIsNot() {
        List<String> documented = List.of("NAME   TYPE     ARCH", "39bfc0942e903926   runner   amd64");
        assertThat(OutputMatch.matches(documented, "NAME TYPE ARCH\n39bfc0942e903926 runner arm64")).isFalse();
        assertThat(OutputMatch.matches(documented, "NAME TYPE ARCH")).as("a row missing").isFalse();
        assertThat(OutputMatch.matches(List.of("Error from server (NotFound): allocs \"x\" not found"),
                "Error from server (BadRequest): allocs \"x\" not found")).isFalse();
        assertThat(OutputMatch.matches(List.of("playpen-runner-amd64-51820 1/1 Running"),
                "playpen-runner-amd64-51820 0/1 Pending")).isFalse();
        assertThat(OutputMatch.matches(List.of("Warning: unknown field \"color\""), "")).isFalse();
    }
}
