package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.model.TtlPolicy;
import io.unboundedcloud.playpen.support.MutableClock;
import io.unboundedcloud.playpen.support.TestCluster;

/** The claim carries its expiry in the one write; the TTL's delete re-checks expiry after a conflict. */
class LeaseClaimWriterTest {
    static final String K1 = "11".repeat(32);

    @Test
    void theClaimPatchCarriesExpiresAtNextToClaimedAt() throws Exception {
        MutableClock clock = new MutableClock(Instant.parse("2026-03-01T10:00:00.600Z"));
        ClaimWriter writer = new ClaimWriter(null, clock, new ApiCallCounter(),
                new TtlPolicy(Duration.ofHours(1), Duration.ofHours(3)));
        AllocCommand cmd = new AllocCommand(K1, ResourceType.RUNNER, "", TestCluster.wgKey(1), "amd64");
        JsonNode ann = Json.MAPPER.readTree(writer.claimPatch("playpen", "p", "7", cmd.withLease(Duration.ofHours(2), 0)))
                .path("metadata").path("annotations");
        assertThat(ann.path(PlaypenKeys.CLAIMED_AT).asText()).isEqualTo("2026-03-01T10:00:00Z");
        assertThat(ann.path(PlaypenKeys.EXPIRES_AT).asText()).isEqualTo("2026-03-01T12:00:00Z");
        JsonNode dflt = Json.MAPPER.readTree(writer.claimPatch("playpen", "p", "7", cmd)).path("metadata").path("annotations");
        assertThat(dflt.path(PlaypenKeys.EXPIRES_AT).asText()).isEqualTo("2026-03-01T11:00:00Z");
        JsonNode capped = Json.MAPPER.readTree(writer.claimPatch("playpen", "p", "7", cmd.withLease(Duration.ofHours(5), 0)))
                .path("metadata").path("annotations");
        assertThat(capped.path(PlaypenKeys.EXPIRES_AT).asText()).isEqualTo("2026-03-01T13:00:00Z");
        // expiry disabled and nothing asked: no expires-at, the reference's claim exactly
        ClaimWriter off = new ClaimWriter(null, clock, new ApiCallCounter(), new TtlPolicy(Duration.ZERO));
        assertThat(Json.MAPPER.readTree(off.claimPatch("playpen", "p", "7", cmd)).path("metadata").path("annotations")
                .has(PlaypenKeys.EXPIRES_AT)).isFalse();
    }

    @Test
    void aStaleExpiryDeleteDoesNotRemoveAClaimARenewalJustExtended() {
        try (TestCluster cluster = TestCluster.start()) {
            MutableClock clock = new MutableClock(Instant.parse("2026-03-01T11:00:00Z"));
            TtlPolicy policy = new TtlPolicy(Duration.ofHours(1));
            Pod cached = cluster.create(TestCluster.readyRunner("amd64", 51820, "n").editMetadata()
                    .addToAnnotations(Map.of(PlaypenKeys.IDEMPOTENCY_KEY_HASH, K1,
                            PlaypenKeys.CLAIMED_AT, "2026-03-01T10:00:00Z")).endMetadata());
            // a renewal lands after the cache's copy: the live pod now expires at 13:00
            cluster.client.pods().inNamespace("playpen").withName(cached.getMetadata().getName()).edit(p -> new PodBuilder(p)
                    .editMetadata().addToAnnotations(PlaypenKeys.EXPIRES_AT, "2026-03-01T13:00:00Z").endMetadata().build());
            String path = "/api/v1/namespaces/playpen/pods/" + cached.getMetadata().getName();
            cluster.server.expect().delete().withPath(path).andReturn(409,
                    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"Conflict\",\"code\":409}")
                    .once();
            ClaimWriter writer = new ClaimWriter(cluster.client, clock, new ApiCallCounter());
            Instant now = clock.instant();
            assertThat(policy.isExpired(cached, now)).isTrue();
            assertThat(writer.delete(cached, K1, fresh -> policy.isExpired(fresh, now)))
                    .isEqualTo(ClaimWriter.Deletion.NOT_OURS);
            assertThat(cluster.client.pods().inNamespace("playpen").withName(cached.getMetadata().getName()).get()).isNotNull();
        }
    }
}
