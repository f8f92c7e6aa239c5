package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * A new claim whose answer is not a 2xx was handed to nobody, and goes back to the pool like the claim of a client
 * gone before its answer; a replay's claim was answered before, and stays. A step added to the alloc route after the
 * claim, failing when the request carries a test header, makes the answer a 500.
 */
class UnansweredClaimRouteTest {
    private static final String FAIL = "X-Test-Fail";

    @Test
    void aNewClaimAnsweredWithAnErrorGoesBackAndAReplayAnsweredWithOneStays(@TempDir Path tmp) throws Exception {
        Path routes = OperatorHarness.copyOfRoutes(tmp);
        Path alloc = routes.resolve("alloc.camel.yaml");
        String yaml = Files.readString(alloc);
        String after = "            method: allocate\n";
        assertThat(yaml).contains(after);
        Files.writeString(alloc, yaml.replace(after, after + String.join("\n",
                "        - filter:",
                "            id: alloc-test-fail",
                "            simple: \"${header." + FAIL + "} == 'yes'\"",
                "            steps:",
                "              - throwException:",
                "                  id: alloc-test-fail-throw",
                "                  exceptionType: java.lang.IllegalStateException",
                "                  message: a step after the claim failed",
                "")));
        try (TestCluster cluster = TestCluster.start()) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            try (OperatorHarness op = new OperatorHarness(cluster, "--routes-dir=" + routes,
                    "--reconcile-interval=10m")) {
                cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
                op.awaitCache(c -> c.size() == 1);
                String request = "{\"idempotencyKey\":\"unanswered-1\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(1)
                        + "\"}";

                HttpResponse<String> failed = alloc(op, request, true);
                assertThat(failed.statusCode()).as(failed.body()).isEqualTo(500);
                OperatorHarness.awaitTrue(() -> carrying("unanswered-1", cluster) == 0, Duration.ofSeconds(60),
                        "the claim answered 500 back in the pool");

                HttpResponse<String> served = alloc(op, request, false);
                assertThat(served.statusCode()).as(served.body()).isEqualTo(200);
                HttpResponse<String> replayFailed = alloc(op, request, true);
                assertThat(replayFailed.statusCode()).as(replayFailed.body()).isEqualTo(500);
                assertThat(carrying("unanswered-1", cluster)).as("the pod answered before, still claimed").isEqualTo(1);
                HttpResponse<String> replayed = alloc(op, request, false);
                assertThat(replayed.statusCode()).as(replayed.body()).isEqualTo(200);
                assertThat(replayed.body()).isEqualTo(served.body());
            }
        }
    }

    private static HttpResponse<String> alloc(OperatorHarness op, String body, boolean fail) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url(
                "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs"))).timeout(Duration.ofSeconds(60))
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (fail) {
            b.header(FAIL, "yes");
        }
        return op.frontProxy().send(OperatorHarness.asUser(b, "alice", "playpen-users").build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static long carrying(String key, TestCluster cluster) {
        String hash = Hashes.keyHash(key);
        return cluster.pods().stream().filter(p -> hash.equals(ManagedPods.keyHash(p))).count();
    }
}
