package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** Per-allocation ttl over HTTPS: the annotation in the claim write, the answer's expiresAt, bad input. */
class LeaseRouteTest {
    static final String RUNNER = "playpen-runner-amd64-51820";
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

    Pod pod(String name) {
        return cluster.client.pods().inNamespace("playpen").withName(name).get();
    }

    static String body(String key, String extra) {
        return "{\"idempotencyKey\":\"" + key + "\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(3) + "\"" + extra + "}";
    }

    @Test
    void ttlIsWrittenInTheClaimAndAnsweredAsTheTrailingExpiresAt() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op = new OperatorHarness(cluster, "--playpen-ttl=1h", "--reconcile-interval=10m");
        op.awaitCache(c -> c.size() == 1);
        int patchesBefore = cluster.requestCount(k -> k.startsWith("PATCH "));
        HttpResponse<String> r = op.alloc(body("lease-1", ",\"ttl\":\"2h30m\""));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(cluster.requestCount(k -> k.startsWith("PATCH "))).as("one claim write").isEqualTo(patchesBefore + 1);
        Map<String, String> ann = pod(RUNNER).getMetadata().getAnnotations();
        Instant claimedAt = Instant.parse(ann.get(PlaypenKeys.CLAIMED_AT));
        String expiresAt = claimedAt.plus(Duration.ofMinutes(150)).toString();
        assertThat(ann).containsEntry(PlaypenKeys.EXPIRES_AT, expiresAt);
        // the reference's fields, then expiresAt last
        assertThat(r.body()).endsWith("\"guestAPIServerURL\":\"\"},\"expiresAt\":\"" + expiresAt + "\"}\n");
        JsonNode json = Json.MAPPER.readTree(r.body());
        assertThat(json.fieldNames()).toIterable().containsExactly("resourceType", "pod", "endpoint", "wireGuard", "vxlan",
                "network", "redfish", "controlPlane", "expiresAt");
        // a replay (whatever ttl it carries: ttl is not part of the request hash) answers the current expiry
        HttpResponse<String> replay = op.alloc(body("lease-1", ",\"ttl\":\"5m\""));
        assertThat(replay.statusCode()).isEqualTo(200);
        assertThat(replay.body()).isEqualTo(r.body());
    }

    @Test
    void badTtlOrWaitIs400AndChangesNothing() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op = new OperatorHarness(cluster, "--playpen-max-ttl=3h", "--max-wait=30");
        op.awaitCache(c -> c.size() == 1);
        String rv = pod(RUNNER).getMetadata().getResourceVersion();
        Map<String, String> cases = Map.of(
                ",\"ttl\":\"3h0m1s\"", "ttl must not exceed 3h0m0s (--playpen-max-ttl): ask for 3h0m0s or less, and renew"
                        + " the allocation (POST .../renewals) before it expires to keep it longer",
                ",\"ttl\":\"-1h\"", "ttl must be greater than 0: send how long the"
                        + " allocation should last, such as \\\"30m\\\" or \\\"2h\\\" (at least 1s)",
                ",\"ttl\":60", "ttl must be a duration string such as \\\"30m\\\" or \\\"2h\\\"",
                ",\"waitSeconds\":31", "waitSeconds must be an integer from 0 to 30 (--max-wait)",
                ",\"waitSeconds\":\"10\"", "waitSeconds must be a JSON number, not a string: send \\\"waitSeconds\\\": 10"
                        + " (from 0 to 30, --max-wait)");
        for (Map.Entry<String, String> c : cases.entrySet()) {
            HttpResponse<String> r = op.alloc(body("bad", c.getKey()));
            assertThat(r.statusCode()).as(c.getKey()).isEqualTo(400);
            assertThat(r.body()).as(c.getKey()).contains("\"kind\":\"Status\"").contains("\"reason\":\"BadRequest\"")
                    .contains("\"message\":\"" + c.getValue() + "\"");
        }
        assertThat(pod(RUNNER).getMetadata().getResourceVersion()).isEqualTo(rv);
        assertThat(cluster.requestCount(k -> k.startsWith("PATCH "))).isZero();
    }

    @Test
    void aPerAllocationTtlExpiresEvenWithTheDefaultDisabled() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op = new OperatorHarness(cluster, "--playpen-ttl=0", "--reconcile-interval=10m");
        op.awaitCache(c -> c.size() == 1);
        HttpResponse<String> r = op.alloc(body("short", ",\"ttl\":\"2s\""));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        // the expiry as the answer states it: the pod may be gone already when a loaded machine gets here (claimed-at
        // has whole seconds, so a 2 s ttl can end just over a second after the claim)
        Instant expiry = Instant.parse(Json.MAPPER.readTree(r.body()).get("expiresAt").asText());
        OperatorHarness.awaitTrue(() -> pod(RUNNER) == null, Duration.ofSeconds(60), "expiry by the timer");
        assertThat(Instant.now()).isAfterOrEqualTo(expiry);
    }

    @Test
    void withoutAnyExpiryTheAnswerIsTheReferencesBytes() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op = new OperatorHarness(cluster, "--playpen-ttl=0");
        op.awaitCache(c -> c.size() == 1);
        HttpResponse<String> r = op.alloc(body("forever", ""));
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).doesNotContain("expiresAt").endsWith("\"guestAPIServerURL\":\"\"}}\n");
        assertThat(pod(RUNNER).getMetadata().getAnnotations()).doesNotContainKey(PlaypenKeys.EXPIRES_AT);
    }
}
