package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import javax.net.ssl.SSLSocket;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import com.fasterxml.jackson.databind.JsonNode;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.kube.CapacityQueue;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** Waiting for capacity (waitSeconds): FIFO per kind, joining, leaving, timeouts, no thread per waiter. */
class WaitingRouteTest {
    static final String ALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs";
    @RegisterExtension
    final CapturedLogs audit = CapturedLogs.named("playpen.audit");
    TestCluster cluster;
    OperatorHarness op;

    @BeforeEach
    void up() {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
    }

    @AfterEach
    void down() {
        if (op != null) {
            op.close();
        }
        cluster.close();
    }

    CapacityQueue queue() {
        return op.app.waitingQueue();
    }

    /** The message of a Status answer. */
    static String message(HttpResponse<String> r) throws Exception {
        return io.unboundedcloud.playpen.api.Json.MAPPER.readTree(r.body()).get("message").asText();
    }

    static String body(String key, int waitSeconds) {
        return "{\"idempotencyKey\":\"" + key + "\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(3)
                + "\",\"waitSeconds\":" + waitSeconds + "}";
    }

    CompletableFuture<HttpResponse<String>> allocAsync(HttpClient http, String body) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url(ALLOCS))).timeout(Duration.ofSeconds(120))
                .POST(HttpRequest.BodyPublishers.ofString(body));
        return http.sendAsync(OperatorHarness.asUser(b, "alice", "playpen-users").build(), HttpResponse.BodyHandlers.ofString());
    }

    Pod pod(String name) {
        return cluster.client.pods().inNamespace("playpen").withName(name).get();
    }

    static String podName(HttpResponse<String> r) throws Exception {
        JsonNode json = Json.MAPPER.readTree(r.body());
        return json.at("/pod/name").asText();
    }

    @Test
    void waitersAreServedFirstComeFirstServedAsPodsAppear() throws Exception {
        op = new OperatorHarness(cluster, "--reconcile-interval=10m", "--management-addr=127.0.0.1:0");
        HttpClient http = op.frontProxy();
        List<CompletableFuture<HttpResponse<String>>> waiting = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            waiting.add(allocAsync(http, body("fifo-" + i, 30)));
            int expected = i + 1;
            OperatorHarness.awaitTrue(() -> queue().waiting() == expected, Duration.ofSeconds(60), "waiter " + i + " queued");
        }
        assertThat(queue().waiting(ResourceType.RUNNER, "amd64")).isEqualTo(3);
        assertThat(metrics()).containsPattern("playpen_waiting_requests\\{resource_type=\"runner\",variant=\"amd64\",?\\} 3\\.0");
        assertThat(queue().waiting(ResourceType.RUNNER, "arm64")).isZero();
        // an arm64 pod serves nobody here; other requests are answered meanwhile
        cluster.create(TestCluster.readyRunner("arm64", 51830, "node-a"));
        HttpResponse<String> health = http.send(HttpRequest.newBuilder(URI.create(op.url("/healthz"))).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(health.statusCode()).isEqualTo(204);
        for (int i = 0; i < 3; i++) {
            cluster.create(TestCluster.readyRunner("amd64", 51820 + i, "node-a"));
            HttpResponse<String> r = waiting.get(i).get(60, TimeUnit.SECONDS);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            assertThat(podName(r)).as("waiter %d gets the %d. pod", i, i + 1).isEqualTo("playpen-runner-amd64-" + (51820 + i));
        }
        assertThat(queue().waiting()).isZero();
        assertThat(pod("playpen-runner-arm64-51830").getMetadata().getAnnotations())
                .doesNotContainKey(PlaypenKeys.IDEMPOTENCY_KEY_HASH);
        String metrics = metrics();
        assertThat(metrics).containsPattern("playpen_wait_duration_seconds_count\\{outcome=\"served\",?\\} 3(\\.0)?\n")
                .containsPattern("playpen_waiting_requests\\{resource_type=\"runner\",variant=\"amd64\",?\\} 0\\.0");
    }

    /** A replica that stops (SIGTERM) answers its waiting requests: a 503 to retry elsewhere, not a cut connection. */
    @Test
    void aWaiterIsAnsweredWhenTheReplicaStops() throws Exception {
        op = new OperatorHarness(cluster, "--reconcile-interval=10m");
        HttpClient http = op.frontProxy();
        CompletableFuture<HttpResponse<String>> waiting = allocAsync(http, body("stop-1", 60));
        OperatorHarness.awaitTrue(() -> queue().waiting() == 1, Duration.ofSeconds(60), "waiter queued");
        OperatorHarness stopping = op;
        op = null;
        stopping.close();
        HttpResponse<String> r = waiting.handle((ok, e) -> ok).get(30, TimeUnit.SECONDS);
        assertThat(r).as("an answer, not a closed connection").isNotNull();
        assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
    }

    /**
     * The stopping replica is the leader and the API server does not answer its Lease requests (a hung instance, an
     * etcd stall during a control-plane upgrade): the waiting request is answered while the Lease request is still
     * held, not once the API server answers it or the kubelet kills the process.
     */
    @Test
    void aWaiterIsAnsweredWhileTheStoppingLeadersLeaseRequestHangs() throws Exception {
        java.util.concurrent.atomic.AtomicBoolean holdLeases = new java.util.concurrent.atomic.AtomicBoolean();
        try (io.unboundedcloud.playpen.support.HeldRequest lease = new io.unboundedcloud.playpen.support.HeldRequest(
                w -> holdLeases.get() && w.uri().getPath().contains("/leases"));
                io.fabric8.kubernetes.client.KubernetesClient client = lease.client(cluster)) {
            op = new OperatorHarness(cluster, client, "--reconcile-interval=10m", "--leader-elect=true",
                    "--leader-election-retry-period=500ms");
            OperatorHarness.awaitTrue(() -> op.app.leaderElection().isLeader(), Duration.ofSeconds(60), "leading");
            HttpClient http = op.frontProxy();
            CompletableFuture<HttpResponse<String>> waiting = allocAsync(http, body("stop-leader", 60));
            OperatorHarness.awaitTrue(() -> queue().waiting() == 1, Duration.ofSeconds(60), "waiter queued");
            holdLeases.set(true);
            assertThat(lease.awaitHeld(60)).as("a Lease request held").isTrue();
            OperatorHarness stopping = op;
            op = null;
            Thread closing = new Thread(stopping::close, "closing");
            closing.start();
            try {
                HttpResponse<String> r = waiting.handle((ok, e) -> ok).get(60, TimeUnit.SECONDS);
                assertThat(r).as("an answer, not a closed connection").isNotNull();
                assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
                assertThat(message(r)).isEqualTo(CapacityQueue.SHUTTING_DOWN);
                assertThat(r.headers().firstValue("Retry-After")).isPresent();
            } finally {
                lease.release();
                closing.join();
            }
        }
    }

    /**
     * An amd64 pool of one that cannot make its pod (the API server refuses pod creates): the kind is kept, so the
     * 503's advice is to try again or wait.
     */
    OperatorHarness withStarvedPool(String... flags) throws Exception {
        cluster.forbidden = k -> k.equals("POST /api/v1/namespaces/" + TestCluster.NS + "/pods");
        List<String> all = new ArrayList<>(List.of("--runner-amd64-count=1"));
        all.addAll(List.of(flags));
        return new OperatorHarness(cluster, all.toArray(new String[0]));
    }

    @Test
    void aWaitThatEndsIsTodays503WithRetryAfter() throws Exception {
        op = withStarvedPool("--max-wait=5");
        long start = System.nanoTime();
        HttpResponse<String> r = op.alloc(body("impatient", 1));
        long waitedMs = (System.nanoTime() - start) / 1_000_000;
        assertThat(r.statusCode()).isEqualTo(503);
        assertThat(r.headers().firstValue("Retry-After")).contains("1");
        // the Go operator's words, then that it waited
        assertThat(message(r))
                .isEqualTo("no idle amd64 playpen runner pods are "
                + "available; no pod was free for it in the 1 second this request waited; kubectl get pools shows which "
                + "pools have idle pods");
        assertThat(waitedMs).isGreaterThanOrEqualTo(950);
        assertThat(queue().waiting()).isZero();
        // waitSeconds 0 is today's immediate 503, which says how long this operator lets a request wait
        HttpResponse<String> now = op.alloc(body("now", 0));
        assertThat(now.statusCode()).isEqualTo(503);
        assertThat(message(now))
                .isEqualTo("no idle amd64 playpen runner pods are available; try again in 1 second, or add "
                        + "\"waitSeconds\": <seconds> (a number, up to 5) to the request to wait in line for one; kubectl get pools shows "
                        + "which pools have idle pods");
        assertThat(op.alloc(body("too-long", 6)).statusCode()).isEqualTo(400);
    }

    /**
     * A request that waited in vain was turned away for lack of a pod like an immediate 503: the demand-aware
     * buffer counts it (claims alone cannot show demand beyond the pods there are).
     */
    @Test
    void aWaitInVainCountsAsDemandForTheBuffer() throws Exception {
        op = withStarvedPool("--max-wait=5", "--pool-max-idle=4");
        assertThat(op.alloc(body("in-vain", 1)).statusCode()).isEqualTo(503);
        assertThat(op.app.poolStatuses().fresh().get(io.unboundedcloud.playpen.model.PoolTarget.runner("amd64"))
                .allocationRate()).isPositive();
    }

    /**
     * With the demand-aware buffer, a pool whose count is 0 makes a pod for the allocs it turns away at once, not at
     * the next --reconcile-interval: it has no pod whose claim would ask for a pass.
     */
    @Test
    void anAllocTurnedAwayByAPoolOfCountZeroUnderTheBufferHasItsPoolMakeAPodAtOnce() throws Exception {
        op = new OperatorHarness(cluster, "--runner-amd64-count=0", "--runner-arm64-count=0", "--pool-max-idle=2",
                "--reconcile-interval=10m");
        HttpResponse<String> r = op.alloc(body("first", 0));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
        assertThat(message(r)).as("the pool is one the operator keeps").contains("try again in");
        OperatorHarness.awaitTrue(() -> cluster.pods().stream()
                .anyMatch(p -> ManagedPods.name(p).startsWith("playpen-runner-amd64-")), Duration.ofSeconds(60),
                "a pod made for the demand");
    }

    /**
     * While the pool is backing off (its new pods keep failing to become ready) trying again in a second does not
     * help: the 503 says so, since when, where to see why, and its Retry-After is the pause left.
     */
    @Test
    void aPoolBackingOffSaysSoInsteadOfTryAgainInASecond() throws Exception {
        op = withStarvedPool("--max-wait=5", "--pool-backoff-base=5m", "--pool-backoff-max=5m");
        java.time.Instant failedAt = java.time.Instant.now();
        op.app.poolReconciler().signals().backoff(io.unboundedcloud.playpen.model.PoolTarget.runner("amd64"))
                .failed(failedAt);
        HttpResponse<String> r = op.alloc(body("now", 0));
        assertThat(r.statusCode()).isEqualTo(503);
        assertThat(message(r)).startsWith("no idle amd64 playpen runner pods are available; the pool runner-amd64 is "
                + "backing off: 1 new pod(s) in a row never became ready, the last at ")
                .contains("kubectl get pool runner-amd64 -o yaml (condition Degraded, reason BackOff)")
                .doesNotContain("try again in 1 second");
        assertThat(Integer.parseInt(r.headers().firstValue("Retry-After").orElseThrow())).isBetween(60, 300);
    }

    /** After a wait in vain, too, a pool that backs off says so: its pods keep failing, none came while it waited. */
    @Test
    void aWaitInVainWhileThePoolBacksOffSaysSo() throws Exception {
        op = withStarvedPool("--max-wait=5", "--pool-backoff-base=5m", "--pool-backoff-max=5m");
        op.app.poolReconciler().signals().backoff(io.unboundedcloud.playpen.model.PoolTarget.runner("amd64"))
                .failed(java.time.Instant.now());
        HttpResponse<String> r = op.alloc(body("waited", 1));
        assertThat(r.statusCode()).isEqualTo(503);
        assertThat(message(r)).startsWith("no idle amd64 playpen runner pods are available; no pod was free for it in the "
                + "1 second this request waited; the pool runner-amd64 is backing off: 1 new pod(s) in a row never "
                + "became ready, the last at ")
                .contains("kubectl get pool runner-amd64 -o yaml (condition Degraded, reason BackOff)")
                .endsWith("; kubectl get pools shows which pools have idle pods");
        // the pause left of the five minutes, as the immediate 503 gives, not --retry-after-seconds
        assertThat(Integer.parseInt(r.headers().firstValue("Retry-After").orElseThrow())).isBetween(60, 300);
    }

    /** With waiting turned off, the immediate 503 says when to try again and nothing about waiting. */
    @Test
    void waitingOffAdvisesOnlyATryAgain() throws Exception {
        op = withStarvedPool("--max-wait=0", "--retry-after-seconds=3");
        HttpResponse<String> r = op.alloc(body("now", 0));
        assertThat(r.statusCode()).isEqualTo(503);
        assertThat(r.headers().firstValue("Retry-After")).hasValue("3");
        assertThat(message(r))
                .isEqualTo("no idle amd64 playpen runner pods are available; try again in 3 seconds; kubectl get pools "
                        + "shows which pools have idle pods");
    }

    /**
     * A kind no pool keeps (its count flag 0): the 503 says that trying again or waiting will not bring one, at
     * once and after a wait in vain (a pod made outside the operator could still have come, so the wait is kept).
     */
    @Test
    void aKindNoPoolKeepsSaysWaitingWillNotHelp() throws Exception {
        op = new OperatorHarness(cluster, "--runner-amd64-count=0");
        String noPool = "this operator keeps no pool of them (--runner-amd64-count is 0), so trying again or waiting "
                + "will not bring one: ask its administrators for that pool; kubectl get pools lists the pools it keeps";
        HttpResponse<String> r = op.alloc(body("now", 0));
        assertThat(r.statusCode()).isEqualTo(503);
        assertThat(message(r)).isEqualTo("no idle amd64 playpen runner pods are available; " + noPool);
        HttpResponse<String> waited = op.alloc(body("waited", 1));
        assertThat(waited.statusCode()).isEqualTo(503);
        assertThat(message(waited)).isEqualTo("no idle amd64 playpen runner pods are available; no pod was free for it in "
                + "the 1 second this request waited; " + noPool);
    }

    @Test
    void aRetriedKeyJoinsItsWaitAndADifferentRequestWithItIs409() throws Exception {
        op = new OperatorHarness(cluster, "--management-addr=127.0.0.1:0");
        HttpClient http = op.frontProxy();
        CompletableFuture<HttpResponse<String>> first = allocAsync(http, body("twice", 30));
        OperatorHarness.awaitTrue(() -> queue().waiting() == 1, Duration.ofSeconds(60), "first queued");
        CompletableFuture<HttpResponse<String>> retry = allocAsync(http, body("twice", 20));
        String otherKey = "{\"idempotencyKey\":\"twice\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(9)
                + "\",\"waitSeconds\":20}";
        HttpResponse<String> conflict = allocAsync(http, otherKey).get(60, TimeUnit.SECONDS);
        assertThat(conflict.statusCode()).isEqualTo(409);
        // the retry is in (a loaded machine may take a while to bring it): two requests wait, for one place in line
        OperatorHarness.awaitTrue(() -> queue().waitingRequests() == 2, Duration.ofSeconds(60), "the retry waiting");
        assertThat(queue().waiting()).as("joined, not queued twice").isEqualTo(1);
        // the metric counts the requests waiting, as --max-waiting and --max-waiting-per-user do: each client
        assertThat(metrics()).containsPattern(
                "playpen_waiting_requests\\{resource_type=\"runner\",variant=\"amd64\",?\\} 2\\.0");
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        HttpResponse<String> a = first.get(60, TimeUnit.SECONDS);
        HttpResponse<String> b = retry.get(60, TimeUnit.SECONDS);
        assertThat(a.statusCode()).isEqualTo(200);
        assertThat(b.statusCode()).isEqualTo(200);
        assertThat(b.body()).isEqualTo(a.body());
        assertThat(cluster.requestCount(k -> k.startsWith("PATCH "))).as("one claim").isEqualTo(1);
        // with others waiting ahead, a retry of the served key is replayed at once, not queued behind them
        CompletableFuture<HttpResponse<String>> other = allocAsync(http, body("someone-else", 30));
        OperatorHarness.awaitTrue(() -> queue().waiting() == 1, Duration.ofSeconds(60), "another key waiting");
        HttpResponse<String> replay = allocAsync(http, body("twice", 30)).get(60, TimeUnit.SECONDS);
        assertThat(replay.statusCode()).isEqualTo(200);
        assertThat(replay.body()).isEqualTo(a.body());
        assertThat(other).isNotDone();
    }

    @Test
    void aClientThatDisconnectsLeavesTheQueueWithoutClaiming() throws Exception {
        op = new OperatorHarness(cluster);
        byte[] body = body("gone", 30).getBytes(StandardCharsets.UTF_8);
        try (SSLSocket s = (SSLSocket) OperatorHarness.sslContext(cluster.frontProxyClient).getSocketFactory()
                .createSocket("127.0.0.1", op.port)) {
            OutputStream out = s.getOutputStream();
            out.write(("POST " + ALLOCS + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    + "X-Remote-User: alice\r\nX-Remote-Group: playpen-users\r\nContent-Length: " + body.length
                    + "\r\n\r\n").getBytes(StandardCharsets.UTF_8));
            out.write(body);
            out.flush();
            OperatorHarness.awaitTrue(() -> queue().waiting() == 1, Duration.ofSeconds(60), "queued");
        }
        OperatorHarness.awaitTrue(() -> queue().waiting() == 0, Duration.ofSeconds(60), "left the queue");
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op.awaitCache(c -> c.size() == 1);
        Thread.sleep(1500);
        assertThat(pod("playpen-runner-amd64-51820").getMetadata().getAnnotations())
                .doesNotContainKey(PlaypenKeys.IDEMPOTENCY_KEY_HASH);
        assertThat(cluster.requestCount(k -> k.startsWith("PATCH "))).isZero();
    }

    /**
     * The client that started a wait hangs up while a retry of its key still waits: the pod that comes is the
     * retry's answer, so it stays claimed (it is not taken back for the client that left), and the retry's answer
     * is the new claim (its audit line says allocated).
     */
    @Test
    void aRetryStillWaitingKeepsTheClaimWhenTheFirstClientLeft() throws Exception {
        op = new OperatorHarness(cluster);
        String key = "handed-over";
        byte[] body = body(key, 30).getBytes(StandardCharsets.UTF_8);
        CompletableFuture<HttpResponse<String>> retry;
        try (SSLSocket s = (SSLSocket) OperatorHarness.sslContext(cluster.frontProxyClient).getSocketFactory()
                .createSocket("127.0.0.1", op.port)) {
            OutputStream out = s.getOutputStream();
            out.write(("POST " + ALLOCS + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    + "X-Remote-User: alice\r\nX-Remote-Group: playpen-users\r\nContent-Length: " + body.length
                    + "\r\n\r\n").getBytes(StandardCharsets.UTF_8));
            out.write(body);
            out.flush();
            OperatorHarness.awaitTrue(() -> queue().waiting() == 1, Duration.ofSeconds(60), "queued");
            retry = allocAsync(op.frontProxy(), body(key, 30));
            OperatorHarness.awaitTrue(() -> queue().waitingRequests() == 2, Duration.ofSeconds(60), "retry joined");
        }
        OperatorHarness.awaitTrue(() -> queue().waitingRequests() == 1, Duration.ofSeconds(60), "first client left");
        assertThat(queue().waiting()).as("the retry still waits").isEqualTo(1);
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        HttpResponse<String> r = retry.get(60, TimeUnit.SECONDS);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        String prefix = Hashes.keyHash(key).substring(0, 8);
        OperatorHarness.awaitTrue(() -> audit.lines().stream().filter(e -> e.getFormattedMessage().contains(prefix))
                .count() == 2, Duration.ofSeconds(60), "both requests audited");
        assertThat(ManagedPods.keyHash(pod(podName(r)))).as("the pod answered to the retry is still claimed for it")
                .isEqualTo(Hashes.keyHash(key));
        assertThat(audit.lines()).extracting(ch.qos.logback.classic.spi.ILoggingEvent::getFormattedMessage).filteredOn(l -> l.contains(prefix))
                .anyMatch(l -> l.contains("\"outcome\":\"allocated\""));
    }

    @Test
    void aDeallocOfAWaitingKeyEndsTheWaitAndNothingIsClaimedForIt() throws Exception {
        op = new OperatorHarness(cluster);
        CompletableFuture<HttpResponse<String>> waiter = allocAsync(op.frontProxy(), body("changed-my-mind", 30));
        OperatorHarness.awaitTrue(() -> queue().waiting() == 1, Duration.ofSeconds(60), "queued");
        HttpResponse<String> d = op.dealloc("{\"idempotencyKey\":\"changed-my-mind\"}");
        assertThat(d.statusCode()).isEqualTo(204);
        assertThat(d.headers().firstValue("Warning")).as("a wait was ended: something was released").isEmpty();
        HttpResponse<String> r = waiter.get(60, TimeUnit.SECONDS);
        assertThat(r.statusCode()).isEqualTo(410);
        String prefix = Hashes.keyHash("changed-my-mind").substring(0, 8);
        OperatorHarness.awaitTrue(() -> audit.lines().stream().map(e -> e.getFormattedMessage())
                .anyMatch(l -> l.contains(prefix) && l.contains("\"verb\":\"deallocate\"")), Duration.ofSeconds(60),
                "dealloc audited");
        assertThat(audit.lines()).extracting(ch.qos.logback.classic.spi.ILoggingEvent::getFormattedMessage)
                .filteredOn(l -> l.contains(prefix) && l.contains("\"verb\":\"deallocate\""))
                .singleElement().asString().contains("\"outcome\":\"wait-cancelled\"");
        assertThat(r.body()).contains("\"message\":\"the allocation was deallocated while it waited for capacity:"
                + " nothing was allocated for this request; send it again should you still need an allocation\"");
        assertThat(queue().waiting()).isZero();
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op.awaitCache(c -> c.size() == 1);
        Thread.sleep(1500);
        assertThat(pod("playpen-runner-amd64-51820").getMetadata().getAnnotations())
                .doesNotContainKey(PlaypenKeys.IDEMPOTENCY_KEY_HASH);
    }

    /**
     * 1,000 requests wait at once: with 64 HTTP worker threads that is only possible if a waiter holds none, and
     * the process's thread count stays flat; health and discovery are still answered meanwhile.
     */
    @Test
    void aThousandWaitersHoldNoThreads() throws Exception {
        // 1,000 connections open at once: the connection bounds must allow them (handshakes count as unauthenticated)
        op = new OperatorHarness(cluster, "--max-connections=2000", "--max-unauthenticated-connections=2000",
                "--max-waiting=1500", "--max-waiting-per-user=1500",
                "--request-header-timeout=120s", "--http-worker-threads=64");
        ExecutorService clientThreads = Executors.newFixedThreadPool(4);
        try {
            HttpClient http = HttpClient.newBuilder().sslContext(OperatorHarness.sslContext(cluster.frontProxyClient))
                    .version(HttpClient.Version.HTTP_1_1).executor(clientThreads).connectTimeout(Duration.ofSeconds(60))
                    .build();
            // warm up: the worker pool and the client's selector exist before the baseline is taken
            http.send(HttpRequest.newBuilder(URI.create(op.url("/healthz"))).build(), HttpResponse.BodyHandlers.ofString());
            int baseline = Thread.getAllStackTraces().size();
            List<CompletableFuture<HttpResponse<String>>> waiting = new ArrayList<>();
            for (int batch = 0; batch < 10; batch++) {
                for (int i = 0; i < 100; i++) {
                    waiting.add(allocAsync(http, body("many-" + (batch * 100 + i), 120)));
                }
                int expected = (batch + 1) * 100;
                OperatorHarness.awaitTrue(() -> queue().waiting() == expected, Duration.ofSeconds(60), expected + " waiting");
            }
            int during = Thread.getAllStackTraces().size();
            assertThat(during - baseline).as("threads added while 1,000 requests wait (baseline %d)", baseline)
                    .isLessThan(100);
            assertThat(waiting).noneMatch(CompletableFuture::isDone);
            HttpResponse<String> health = http.send(HttpRequest.newBuilder(URI.create(op.url("/healthz"))).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(health.statusCode()).isEqualTo(204);
            HttpResponse<String> discovery = http.send(HttpRequest.newBuilder(
                    URI.create(op.url("/apis/playpen.unbounded-cloud.io/v1alpha1"))).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(discovery.statusCode()).isEqualTo(200);
            // capacity arrives: two waiters are served, the rest keep waiting
            cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
            cluster.create(TestCluster.readyRunner("amd64", 51821, "node-a"));
            OperatorHarness.awaitTrue(() -> waiting.stream().filter(CompletableFuture::isDone).count() == 2,
                    Duration.ofSeconds(20), "two served");
            Thread.sleep(300);
            assertThat(waiting.stream().filter(CompletableFuture::isDone).map(CompletableFuture::join)
                    .map(HttpResponse::statusCode)).containsExactly(200, 200);
            assertThat(queue().waiting()).isEqualTo(998);
        } finally {
            op.close();
            op = null;
            clientThreads.shutdownNow();
        }
    }

    String metrics() throws Exception {
        var addr = op.app.managementAddress();
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + addr.getPort() + "/metrics")).build(), HttpResponse.BodyHandlers.ofString())
                .body();
    }
}
