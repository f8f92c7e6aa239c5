package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.SlimPods;
import io.unboundedcloud.playpen.support.TestCluster;

/** Deletes are conditional: a stale view never deletes a pod that now belongs to another key. */
class ClaimWriterTest {
    static final String K1 = "11".repeat(32);
    static final String K2 = "22".repeat(32);

    @Test
    void staleDeleteOfAReusedNameLeavesTheOtherKeysPodAlone() {
        try (TestCluster cluster = TestCluster.start()) {
            // the API server has pod N claimed by K2 (recreated after K1's dealloc and claimed again)
            Pod live = cluster.create(TestCluster.readyRunner("amd64", 51820, "n").editMetadata()
                    .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, K2).endMetadata());
            // a replica with a stale cache still sees N as K1's, at an older resourceVersion
            Pod stale = new PodBuilder(live).editMetadata().withResourceVersion("1")
                    .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, K1).endMetadata().build();
            // a real API server rejects the precondition (the mock ignores delete preconditions: script it)
            String path = "/api/v1/namespaces/playpen/pods/" + live.getMetadata().getName();
            cluster.server.expect().delete().withPath(path).andReturn(409,
                    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"Conflict\",\"code\":409}")
                    .once();
            ClaimWriter writer = new ClaimWriter(cluster.client, Clock.systemUTC(), new ApiCallCounter());
            assertThat(writer.deleteIfClaimedBy(stale, K1)).isFalse();
            assertThat(cluster.client.pods().inNamespace("playpen").withName(live.getMetadata().getName()).get()).isNotNull();
            // the owner's own delete goes through
            Pod current = cluster.client.pods().inNamespace("playpen").withName(live.getMetadata().getName()).get();
            assertThat(writer.deleteIfClaimedBy(current, K2)).isTrue();
            assertThat(cluster.client.pods().inNamespace("playpen").withName(live.getMetadata().getName()).get()).isNull();
            // and a cached pod that already shows another key is never sent a delete at all
            assertThat(writer.deleteIfClaimedBy(live, K1)).isFalse();
        }
    }

    @Test
    void aSecondDeleteOfTheSamePodIsReportedAsSomeoneElses() {
        try (TestCluster cluster = TestCluster.start()) {
            Pod claimed = cluster.create(TestCluster.readyRunner("amd64", 51821, "n").editMetadata()
                    .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, K1).endMetadata());
            ClaimWriter writer = new ClaimWriter(cluster.client, Clock.systemUTC(), new ApiCallCounter());
            // the TTL timer and the backstop sweep hold the same cached pod: one delete lands, the other finds it gone
            assertThat(writer.delete(claimed, K1)).isEqualTo(ClaimWriter.Deletion.DELETED);
            assertThat(writer.delete(claimed, K1)).isEqualTo(ClaimWriter.Deletion.GONE);
            assertThat(writer.deleteIfClaimedBy(claimed, K1)).as("still 'gone' for dealloc's purposes").isTrue();
        }
    }

    /**
     * The claim's answer is read as the slim pod the cache keeps (the environment, which the operator never reads,
     * is not built): the same pod as the slim copy of the claimed pod read whole, and its own slim copy.
     */
    @Test
    void theClaimsAnswerIsReadAsTheSlimPod() {
        try (TestCluster cluster = TestCluster.start()) {
            Pod idle = cluster.create(new PodBuilder(TestCluster.readyRunner("amd64", 51822, "n").build()).editSpec()
                    .editFirstContainer().addNewEnv().withName("A").withValue("1").endEnv().endContainer().endSpec());
            ClaimWriter writer = new ClaimWriter(cluster.client, Clock.systemUTC(), new ApiCallCounter());
            var cmd = new io.unboundedcloud.playpen.model.AllocCommand(K1,
                    io.unboundedcloud.playpen.model.ResourceType.RUNNER, "", "wg", "amd64");
            Pod answer = writer.claim(idle, idle.getMetadata().getResourceVersion(), cmd);
            Pod whole = cluster.client.pods().inNamespace("playpen").withName(idle.getMetadata().getName()).get();
            assertThat(whole.getSpec().getContainers().get(0).getEnv()).extracting("name").containsExactly("A");
            assertThat(answer.getSpec().getContainers().get(0).getEnv()).isEmpty();
            assertThat(answer).isEqualTo(SlimPods.slim(whole));
            assertThat(SlimPods.slim(answer)).isSameAs(answer);
            assertThat(ManagedPods.annotations(answer)).containsEntry(PlaypenKeys.IDEMPOTENCY_KEY_HASH, K1);
            // an answer that is no pod (a proxy's page with a 200) fails the claim as the client's own reading would
            Pod other = cluster.create(TestCluster.readyRunner("amd64", 51823, "n"));
            cluster.server.expect().patch().withPath("/api/v1/namespaces/playpen/pods/" + other.getMetadata().getName())
                    .andReturn(200, "<html>ok</html>").once();
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> writer.claim(other,
                    other.getMetadata().getResourceVersion(), cmd))
                    .isInstanceOf(io.fabric8.kubernetes.client.KubernetesClientException.class);
        }
    }

    /** The owner hash rides in the claim's single merge patch, next to the reference's annotations; none without one. */
    @Test
    void ownerHashIsPartOfTheOneClaimPatch() throws Exception {
        ClaimWriter w = new ClaimWriter(null, java.time.Clock.fixed(java.time.Instant.parse("2026-01-02T03:04:05Z"),
                java.time.ZoneOffset.UTC), new ApiCallCounter());
        var cmd = new io.unboundedcloud.playpen.model.AllocCommand("ab".repeat(32),
                io.unboundedcloud.playpen.model.ResourceType.RUNNER, "", "wg", "amd64");
        var json = new com.fasterxml.jackson.databind.ObjectMapper();
        var withOwner = json.readTree(w.claimPatch("playpen", "p", "12", cmd,
                io.unboundedcloud.playpen.model.Hashes.ownerHash("alice")));
        assertThat(withOwner.at("/metadata/resourceVersion").asText()).isEqualTo("12");
        // key hash, request hash, WireGuard key, claimed-at, claim-id, the owner hash, and the removals of the fence
        // and of the mark of a moved owner hash
        assertThat(withOwner.at("/metadata/annotations").size()).isEqualTo(8);
        assertThat(withOwner.at("/metadata/annotations").get(io.unboundedcloud.playpen.model.PlaypenKeys.OWNER_HASH)
                .asText()).isEqualTo(io.unboundedcloud.playpen.model.Hashes.sha256Hex("alice"));
        assertThat(withOwner.toString()).doesNotContain("\"alice\"");
        var without = json.readTree(w.claimPatch("playpen", "p", "12", cmd));
        // and the removals (null) of a fence and of the mark of a moved owner hash
        assertThat(without.at("/metadata/annotations").size()).isEqualTo(7);
        assertThat(without.at("/metadata/annotations").has(io.unboundedcloud.playpen.model.PlaypenKeys.OWNER_HASH)).isFalse();
    }

    /**
     * A fence (the claim-id of a claim whose answer was lost, on an idle pod) leaves the pod an idle, usable
     * candidate that the pools see as unchanged; the claim's patch takes it off (merge-patch null), so claimed pods
     * never carry it.
     */
    @Test
    void aFencedIdlePodIsStillUsableAndItsClaimTakesTheFenceOff() throws Exception {
        Pod plain = TestCluster.readyRunner("amd64", 51820, "n").build();
        Pod fenced = new PodBuilder(plain).editMetadata().addToAnnotations(PlaypenKeys.FENCED_CLAIM_ID, "5eed")
                .endMetadata().build();
        var cmd = new io.unboundedcloud.playpen.model.AllocCommand("ab".repeat(32),
                io.unboundedcloud.playpen.model.ResourceType.RUNNER, "", TestCluster.wgKey(3), "amd64");
        var candidates = new io.unboundedcloud.playpen.model.Candidates(java.util.Map.of());
        java.util.function.Function<String, java.util.Optional<String>> ips = node -> java.util.Optional.of("203.0.113.10");
        assertThat(candidates.classify(cmd, plain, ips))
                .isEqualTo(io.unboundedcloud.playpen.model.Candidates.Verdict.USABLE);
        assertThat(candidates.classify(cmd, fenced, ips))
                .isEqualTo(io.unboundedcloud.playpen.model.Candidates.Verdict.USABLE);
        assertThat(candidates.classify(cmd, SlimPods.slim(fenced), ips))
                .isEqualTo(io.unboundedcloud.playpen.model.Candidates.Verdict.USABLE);
        assertThat(ManagedPods.isIdle(fenced)).isTrue();
        assertThat(ManagedPods.isClaimed(fenced)).isFalse();
        assertThat(PoolReconciler.state(fenced)).isEqualTo(PoolReconciler.state(plain));

        ClaimWriter w = new ClaimWriter(null, Clock.systemUTC(), new ApiCallCounter());
        var annotations = new com.fasterxml.jackson.databind.ObjectMapper()
                .readTree(w.claimPatch("playpen", "p", "12", cmd)).at("/metadata/annotations");
        assertThat(annotations.has(PlaypenKeys.FENCED_CLAIM_ID)).isTrue();
        assertThat(annotations.get(PlaypenKeys.FENCED_CLAIM_ID).isNull()).isTrue();
    }
}
