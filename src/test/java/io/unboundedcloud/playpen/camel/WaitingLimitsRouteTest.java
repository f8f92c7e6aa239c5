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
import java.util.concurrent.TimeUnit;

import javax.net.ssl.SSLSocket;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;

import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.kube.CapacityQueue;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * One user cannot hold every connection with waiting allocs: requests waiting for capacity are capped per user
 * and in total (429 with a Status and Retry-After beyond), a slot is free again as soon as its client has an
 * answer or has gone, and other users and probes are served meanwhile.
 */
class WaitingLimitsRouteTest {
    static final String ALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs";
    TestCluster cluster;
    OperatorHarness op;
    HttpClient http;

    @BeforeEach
    void up() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        op = new OperatorHarness(cluster, "--max-waiting-per-user=3", "--max-waiting=5", "--retry-after-seconds=7");
        http = op.frontProxy();
    }

    @AfterEach
    void down() {
        op.close();
        cluster.close();
    }

    CapacityQueue queue() {
        return op.app.waitingQueue();
    }

    static String body(String key, int waitSeconds) {
        return "{\"idempotencyKey\":\"" + key + "\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(3)
                + "\",\"waitSeconds\":" + waitSeconds + "}";
    }

    CompletableFuture<HttpResponse<String>> allocAsync(String user, String body) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url(ALLOCS))).timeout(Duration.ofSeconds(60))
                .POST(HttpRequest.BodyPublishers.ofString(body));
        return http.sendAsync(OperatorHarness.asUser(b, user, "playpen-users").build(), HttpResponse.BodyHandlers.ofString());
    }

    static void assertTooMany(HttpResponse<String> r, String flag) throws Exception {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(429);
        JsonNode status = Json.MAPPER.readTree(r.body());
        assertThat(status.get("kind").asText()).isEqualTo("Status");
        assertThat(status.get("reason").asText()).isEqualTo("TooManyRequests");
        assertThat(status.get("code").asInt()).isEqualTo(429);
        assertThat(status.get("message").asText()).contains(flag);
        assertThat(r.headers().firstValue("Retry-After")).contains("7");
    }

    void awaitWaiting(int n) throws InterruptedException {
        OperatorHarness.awaitTrue(() -> queue().waitingRequests() == n, Duration.ofSeconds(60), n + " waiting");
    }

    @Test
    void aUserBeyondTheirCapIsRefusedAndOthersStillWait() throws Exception {
        List<CompletableFuture<HttpResponse<String>>> alice = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            alice.add(allocAsync("alice", body("alice-" + i, 30)));
        }
        awaitWaiting(3);
        assertTooMany(allocAsync("alice", body("alice-3", 30)).get(60, TimeUnit.SECONDS), "--max-waiting-per-user");
        // a retry of a key that already waits is one more waiting request (one more connection) too
        assertTooMany(allocAsync("alice", body("alice-0", 30)).get(60, TimeUnit.SECONDS), "--max-waiting-per-user");
        // without waitSeconds alice gets today's answer at once: nothing waits, nothing is capped
        assertThat(allocAsync("alice", body("alice-now", 0)).get(60, TimeUnit.SECONDS).statusCode()).isEqualTo(503);

        List<CompletableFuture<HttpResponse<String>>> bob = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            bob.add(allocAsync("bob", body("bob-" + i, 30)));
        }
        awaitWaiting(5);
        assertTooMany(allocAsync("carol", body("carol-0", 30)).get(60, TimeUnit.SECONDS), "--max-waiting");
        assertThat(queue().waitingRequests()).isEqualTo(5);
        assertThat(alice).noneMatch(CompletableFuture::isDone);
        assertThat(bob).noneMatch(CompletableFuture::isDone);
        HttpResponse<String> ready = http.send(HttpRequest.newBuilder(URI.create(op.url("/readyz"))).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(ready.statusCode()).isEqualTo(204);

        // capacity: a served waiter gives its slot back
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        List<CompletableFuture<HttpResponse<String>>> all = new ArrayList<>(alice);
        all.addAll(bob);
        OperatorHarness.awaitTrue(() -> all.stream().anyMatch(CompletableFuture::isDone), Duration.ofSeconds(20),
                "a waiter served");
        awaitWaiting(4);
        assertThat(all.stream().filter(CompletableFuture::isDone).map(f -> f.join().statusCode())).containsExactly(200);
        assertThat(queue().waitingRequests(ownerOf("alice")) + queue().waitingRequests(ownerOf("bob"))).isEqualTo(4);
        assertThat(allocAsync("carol", body("carol-1", 1)).get(60, TimeUnit.SECONDS).statusCode())
                .as("a free slot is used again, and the wait ends with today's 503").isEqualTo(503);
        awaitWaiting(4);
    }

    @Test
    void aClientThatLeavesGivesItsSlotBack() throws Exception {
        byte[] b = body("gone", 30).getBytes(StandardCharsets.UTF_8);
        for (int round = 0; round < 5; round++) {
            try (SSLSocket s = (SSLSocket) OperatorHarness.sslContext(cluster.frontProxyClient).getSocketFactory()
                    .createSocket("127.0.0.1", op.port)) {
                OutputStream out = s.getOutputStream();
                out.write(("POST " + ALLOCS + " HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Remote-User: dave\r\n"
                        + "X-Remote-Group: playpen-users\r\nContent-Length: " + b.length + "\r\n\r\n")
                        .getBytes(StandardCharsets.UTF_8));
                out.write(b);
                out.flush();
                awaitWaiting(1);
            }
            awaitWaiting(0);
        }
        assertThat(queue().waitingRequests(ownerOf("dave"))).isZero();
        List<CompletableFuture<HttpResponse<String>>> dave = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            dave.add(allocAsync("dave", body("dave-" + i, 30)));
        }
        awaitWaiting(3);
        assertThat(dave).noneMatch(CompletableFuture::isDone);
    }

    String ownerOf(String user) {
        return op.app.ownerHashes().of(user).current();
    }
}
