package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** TTL expiry at the expiry instant, the backstop for unparsable claimed-at, replacement by the pool. */
class TtlRouteTest {
    TestCluster cluster;
    OperatorHarness op;

    @BeforeEach
    void up() throws Exception {
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

    boolean exists(String name) {
        return cluster.client.pods().inNamespace("playpen").withName(name).get() != null;
    }

    @Test
    void claimedPodIsDeletedAtExpiryAndReplaced() throws Exception {
        op = new OperatorHarness(cluster, "--playpen-ttl=2s", "--reconcile-interval=10m", "--runner-amd64-count=1");
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 1, Duration.ofSeconds(60), "pool runner");
        // make the pooled runner ready, then claim it
        cluster.client.pods().inNamespace("playpen").withName("playpen-runner-amd64-51820").edit(p -> {
            var ready = TestCluster.readyRunner("amd64", 51820, "node-a").build();
            return new PodBuilder(p).editMetadata().addToAnnotations(ready.getMetadata().getAnnotations()).endMetadata()
                    .editSpec().withNodeName("node-a").endSpec().withStatus(ready.getStatus()).build();
        });
        op.awaitCache(c -> c.stream().anyMatch(p -> p.getStatus() != null && "Running".equals(p.getStatus().getPhase())));
        var r = op.alloc("{\"idempotencyKey\":\"ttl\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(3) + "\"}");
        assertThat(r.statusCode()).isEqualTo(200);
        // the expiry as the answer states it (claimed-at + 2 s): the pod itself may be gone already when a loaded
        // machine gets here, as claimed-at has whole seconds and the expiry can come just over a second after the claim
        Instant expiry = Instant.parse(io.unboundedcloud.playpen.api.Json.MAPPER.readTree(r.body()).get("expiresAt")
                .asText());
        // with a 10 minute interval nothing but the claim's timer deletes it within the minute; how late after the
        // instant it does on a given machine is the benchmark's to measure, not a test's to bound
        OperatorHarness.awaitTrue(() -> !exists("playpen-runner-amd64-51820"), Duration.ofSeconds(60), "expiry");
        Instant gone = Instant.now();
        // claimed-at has whole seconds, so the true claim time is up to 1 s later than expiry suggests
        assertThat(Duration.between(expiry, gone)).isGreaterThan(Duration.ofMillis(-1));
        OperatorHarness.awaitTrue(() -> cluster.pods().stream().anyMatch(p -> p.getMetadata().getAnnotations() == null
                || !p.getMetadata().getAnnotations().containsKey(PlaypenKeys.IDEMPOTENCY_KEY_HASH)), Duration.ofSeconds(60),
                "replacement");
        OperatorHarness.awaitTrue(() -> cluster.client.v1().events().inNamespace("playpen").list().getItems().stream()
                .anyMatch(e -> "Expired".equals(e.getReason())), Duration.ofSeconds(60), "Expired event");
    }

    @Test
    void unparsableClaimedAtIsExpiredAndUnclaimedPodsAreKept() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51830, "node-a").editMetadata()
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ab".repeat(32))
                .addToAnnotations(PlaypenKeys.CLAIMED_AT, "yesterday").endMetadata());
        cluster.create(TestCluster.readyRunner("amd64", 51831, "node-a"));
        op = new OperatorHarness(cluster, "--playpen-ttl=1h", "--reconcile-interval=10m");
        OperatorHarness.awaitTrue(() -> !exists("playpen-runner-amd64-51830"), Duration.ofSeconds(60), "bad claimed-at deleted");
        Thread.sleep(300);
        assertThat(exists("playpen-runner-amd64-51831")).isTrue();
    }

    /**
     * An alloc sent again after its allocation expired, while the TTL's delete of its pod fails: a Status 410 Gone
     * saying to use a new idempotency key, never the allocation of a pod about to go.
     */
    @Test
    void anAllocSentAgainAfterItsExpiryWhileItsDeleteFailsIsGone() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        String deletes = "DELETE /api/v1/namespaces/playpen/pods/";
        cluster.failBeforeWrite = k -> k.startsWith(deletes);
        op = new OperatorHarness(cluster, "--reconcile-interval=10m");
        op.awaitCache(c -> c.size() == 1);
        String body = "{\"idempotencyKey\":\"expired-again\",\"ttl\":\"1s\",\"wireGuardPublicKey\":\""
                + TestCluster.wgKey(4) + "\"}";
        assertThat(op.alloc(body).statusCode()).isEqualTo(200);
        // the leader's TTL found it expired (by the clock every part of this operator reads) and its delete failed
        OperatorHarness.awaitTrue(() -> cluster.requestCount(k -> k.startsWith(deletes)) >= 1, Duration.ofSeconds(60),
                "the TTL's delete tried");

        var again = op.alloc(body);

        assertThat(again.statusCode()).as(again.body()).isEqualTo(410);
        var status = io.unboundedcloud.playpen.api.Json.MAPPER.readTree(again.body());
        assertThat(status.get("kind").asText()).isEqualTo("Status");
        assertThat(status.get("reason").asText()).isEqualTo("Gone");
        assertThat(status.get("message").asText())
                .startsWith(io.unboundedcloud.playpen.kube.Allocator.EXPIRED_PREFIX).contains("new idempotency key");
        assertThat(exists("playpen-runner-amd64-51820")).isTrue();
    }

    @Test
    void ttlZeroDisablesExpiry() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51840, "node-a").editMetadata()
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "cd".repeat(32))
                .addToAnnotations(PlaypenKeys.CLAIMED_AT, "2000-01-01T00:00:00Z").endMetadata());
        op = new OperatorHarness(cluster, "--playpen-ttl=0", "--reconcile-interval=10m");
        OperatorHarness.awaitTrue(() -> op.app.camelContext().getRouteController().getRouteStatus("ttl-expiry").isStarted(),
                Duration.ofSeconds(60), "ttl-expiry route running");
        Thread.sleep(800);
        assertThat(exists("playpen-runner-amd64-51840")).isTrue();
    }
}
