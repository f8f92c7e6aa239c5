package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.HeldRequest;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * A new claim whose answer is not a 2xx was handed to nobody, and goes back to the pool like the claim of a client
 * gone before its answer; a replay's claim was answered before, and stays. A step added to the alloc route after the
 * claim, failing when the request carries a test header, makes the answer a 500.
 */
class UnansweredClaimRouteTest {
    private static final String FAIL = "X-Test-Fail";
    private static final Duration WAIT = Duration.ofSeconds(60);

    @Test
    void aNewClaimAnsweredWithAnErrorGoesBackAndAReplayAnsweredWithOneStays(@TempDir Path tmp) throws Exception {
        Path routes = failingAfterTheClaim(tmp);
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

    /**
     * The take-back of a new claim answered with an error, for a request that waited for capacity, is slow (the API
     * server holds its PATCH): the next request in the same line is handed the pod that comes meanwhile, and the
     * claim goes back once the take-back is answered. The answer of a waiting request is made on the thread of its
     * connection, as a request that did not wait is, not on the line's dispatcher, which a slow take-back would hold.
     */
    @Test
    void aSlowTakeBackOfAWaitingRequestHoldsUpNoRequestBehindIt(@TempDir Path tmp) throws Exception {
        Path routes = failingAfterTheClaim(tmp);
        String unclaim = "\"" + PlaypenKeys.IDEMPOTENCY_KEY_HASH + "\":null";
        try (TestCluster cluster = TestCluster.start();
                HeldRequest takeBack = new HeldRequest(r -> "PATCH".equals(r.method())
                        && String.valueOf(r.bodyString()).contains(unclaim));
                KubernetesClient client = takeBack.client(cluster)) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            try (OperatorHarness op = new OperatorHarness(cluster, client, "--routes-dir=" + routes,
                    "--reconcile-interval=10m")) {
                CompletableFuture<HttpResponse<String>> failing = allocAsync(op, waiting("slow-take-back"), true);
                OperatorHarness.awaitTrue(() -> op.app.waitingQueue().waiting() == 1, WAIT, "the first request waits");
                CompletableFuture<HttpResponse<String>> behind = allocAsync(op, waiting("behind-it"), false);
                OperatorHarness.awaitTrue(() -> op.app.waitingQueue().waiting() == 2, WAIT, "the second waits too");

                cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
                assertThat(takeBack.awaitHeld(WAIT.toSeconds())).as("the first request's claim taken back").isTrue();
                cluster.create(TestCluster.readyRunner("amd64", 51821, "node-a"));
                HttpResponse<String> served = behind.get(WAIT.toSeconds(), TimeUnit.SECONDS);
                assertThat(served.statusCode()).as(served.body()).isEqualTo(200);
                assertThat(served.body()).contains("playpen-runner-amd64-51821");

                takeBack.release();
                HttpResponse<String> failed = failing.get(WAIT.toSeconds(), TimeUnit.SECONDS);
                assertThat(failed.statusCode()).as(failed.body()).isEqualTo(500);
                OperatorHarness.awaitTrue(() -> carrying("slow-take-back", cluster) == 0, WAIT,
                        "the claim answered 500 back in the pool");
            }
        }
    }

    /** A copy of the routes whose alloc route fails after the claim for a request that carries the test header. */
    private static Path failingAfterTheClaim(Path tmp) throws java.io.IOException {
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
        return routes;
    }

    private static String waiting(String key) {
        return "{\"idempotencyKey\":\"" + key + "\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(1)
                + "\",\"waitSeconds\":60}";
    }

    private static HttpResponse<String> alloc(OperatorHarness op, String body, boolean fail) throws Exception {
        return allocAsync(op, body, fail).get();
    }

    private static CompletableFuture<HttpResponse<String>> allocAsync(OperatorHarness op, String body, boolean fail)
            throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url(
                "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs"))).timeout(Duration.ofSeconds(120))
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (fail) {
            b.header(FAIL, "yes");
        }
        return op.frontProxy().sendAsync(OperatorHarness.asUser(b, "alice", "playpen-users").build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static long carrying(String key, TestCluster cluster) {
        String hash = Hashes.keyHash(key);
        return cluster.pods().stream().filter(p -> hash.equals(ManagedPods.keyHash(p))).count();
    }
}
