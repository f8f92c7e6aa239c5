package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.OwnerHashes;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * Claims written with the unkeyed (legacy) owner hash move to the keyed one, one conditional write each, when their
 * owner asks: claims only (not released pods), the owner's only; a claim that changed meanwhile is read again and
 * moved when it is still the owner's legacy claim, one that went is left, and
 * a refusal is the caller's error.
 */
class LegacyOwnerClaimsTest {
    static final OwnerHashes OWNERS = new OwnerHashes(filled((byte) 7));
    static final OwnerHashes.Owner ALICE = OWNERS.of("alice");
    static final OwnerHashes.Owner BOB = OWNERS.of("bob");

    static byte[] filled(byte b) {
        byte[] k = new byte[32];
        Arrays.fill(k, b);
        return k;
    }

    /** A runner on {@code port} claimed with key {@code key}, its owner hash {@code ownerHash} (null: no claim). */
    static Pod runner(TestCluster cluster, int port, String key, String ownerHash) {
        var b = TestCluster.readyRunner("amd64", port, "node-a").editMetadata();
        if (key != null) {
            b.addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, key.repeat(32));
        }
        if (ownerHash != null) {
            // as a claim carries it: the annotation, and the label an owner's claims are listed by
            b.addToAnnotations(PlaypenKeys.OWNER_HASH, ownerHash);
            b.addToLabels(PlaypenKeys.OWNER_HASH_LABEL, ClaimWriter.labelValue(ownerHash));
        }
        return cluster.create(b.endMetadata());
    }

    /** The pod's owner hash; its owner label must say the same (a label value keeps 63 characters). */
    static String ownerHashOf(TestCluster cluster, int port) {
        Pod pod = cluster.client.pods().inNamespace(TestCluster.NS).withName("playpen-runner-amd64-" + port).get();
        String hash = ManagedPods.ownerHash(pod);
        assertThat(pod.getMetadata().getLabels()).as("owner label of " + port)
                .containsEntry(PlaypenKeys.OWNER_HASH_LABEL, ClaimWriter.labelValue(hash));
        return hash;
    }

    interface Body {
        void run(TestCluster cluster, PodCache pods, LegacyOwnerClaims legacy, ApiCallCounter calls) throws Exception;
    }

    static void withCache(java.util.function.Consumer<TestCluster> setup, Body body) throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            setup.accept(cluster);
            try (PodCache pods = cluster.syncedPodCache()) {
                ApiCallCounter calls = new ApiCallCounter();
                body.run(cluster, pods, new LegacyOwnerClaims(cluster.client, pods, calls), calls);
            }
        }
    }

    @Test
    void theOwnersLiveLegacyClaimsMoveToTheKeyedHashAndNothingElseDoes() throws Exception {
        withCache(cluster -> {
            runner(cluster, 51820, "a1", ALICE.legacy());   // alice's, legacy: moves
            runner(cluster, 51821, "a2", ALICE.legacy());   // alice's, legacy: moves
            runner(cluster, 51822, "a3", ALICE.current());  // alice's, keyed already
            runner(cluster, 51823, "b1", BOB.legacy());     // bob's
            runner(cluster, 51824, null, ALICE.legacy());   // no claim (released)
        }, (cluster, pods, legacy, calls) -> {
            assertThat(legacy.adopt(ALICE)).isEqualTo(2);

            assertThat(ownerHashOf(cluster, 51820)).isEqualTo(ALICE.current());
            assertThat(ownerHashOf(cluster, 51821)).isEqualTo(ALICE.current());
            assertThat(ownerHashOf(cluster, 51823)).isEqualTo(BOB.legacy());
            assertThat(ownerHashOf(cluster, 51824)).isEqualTo(ALICE.legacy());
            // the moved claims say so, in the same write: their writer counted the legacy hash only
            assertThat(List.of(51820, 51821, 51822, 51823, 51824)).filteredOn(port -> "true".equals(ManagedPods
                    .annotations(cluster.client.pods().inNamespace(TestCluster.NS).withName("playpen-runner-amd64-"
                            + port).get()).get(PlaypenKeys.OWNER_HASH_MOVED))).containsExactly(51820, 51821);
            assertThat(calls.get(KubeApiCall.PODS_PATCH)).isEqualTo(2);
            // the cache has the rewritten claims at once: the owner index (quota, lists) counts them under the key
            assertThat(pods.byOwnerHash(ALICE.current())).extracting(ManagedPods::name).contains(
                    "playpen-runner-amd64-51820", "playpen-runner-amd64-51821", "playpen-runner-amd64-51822");
            // nothing left to move
            assertThat(legacy.adopt(ALICE)).isZero();
            assertThat(calls.get(KubeApiCall.PODS_PATCH)).isEqualTo(2);
        });
    }

    @Test
    void anOwnerWhoseTwoHashesAgreeHasNothingToMove() throws Exception {
        withCache(cluster -> runner(cluster, 51820, "a1", ALICE.legacy()), (cluster, pods, legacy, calls) -> {
            assertThat(legacy.adopt(new OwnerHashes.Owner(ALICE.legacy(), ALICE.legacy()))).isZero();
            assertThat(legacy.adopt(null)).isZero();
            assertThat(calls.get(KubeApiCall.PODS_PATCH)).isZero();
        });
    }

    /**
     * The link of an owner's two hashes is kept while a request of the owner holds it, and afterwards while the cache
     * holds a live claim under the legacy hash: bob has none, so his link goes when his last request is done; alice's
     * legacy claim, whose move met a change every time, keeps hers until the claim is gone; then another owner's
     * request done (bob's) leaves it (a request looks at its own owner's link only), and the periodic prune drops it,
     * though alice does not ask again.
     */
    @Test
    void theLinkOfAnOwnersTwoHashesIsKeptWhileARequestHoldsItOrALegacyClaimIsInTheCache() throws Exception {
        withCache(cluster -> runner(cluster, 51820, "a1", ALICE.legacy()), (cluster, pods, legacy, calls) -> {
            legacy.adopt(BOB);
            legacy.adopt(BOB);
            legacy.release(BOB);
            assertThat(pods.legacyOwnerHashOf(BOB.current())).as("one of bob's two requests is in flight")
                    .contains(BOB.legacy());
            legacy.release(BOB);
            assertThat(pods.legacyOwnerHashOf(BOB.current())).as("bob's requests are done, no legacy claim").isEmpty();

            String path = "/api/v1/namespaces/" + TestCluster.NS + "/pods/playpen-runner-amd64-51820";
            String status = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":409}";
            cluster.server.expect().patch().withPath(path).andReturn(409, status).times(LegacyOwnerClaims.MAX_ATTEMPTS);
            assertThat(legacy.adopt(ALICE)).as("the move met a change every time").isZero();
            legacy.release(ALICE);
            assertThat(pods.legacyOwnerHashOf(ALICE.current())).as("alice's legacy claim is in the cache")
                    .contains(ALICE.legacy());
            assertThat(legacy.prune()).as("the prune keeps it too").isZero();
            assertThat(pods.legacyOwnerHashOf(ALICE.current())).contains(ALICE.legacy());

            cluster.client.pods().inNamespace(TestCluster.NS).withName("playpen-runner-amd64-51820").delete();
            OperatorHarness.awaitTrue(() -> pods.byOwnerHash(ALICE.legacy()).stream()
                    .noneMatch(p -> ManagedPods.isClaimed(p) && !ManagedPods.isTerminating(p)), Duration.ofSeconds(60),
                    "alice's legacy claim gone from the cache");
            assertThat(pods.legacyOwnerHashOf(ALICE.current())).as("until the prune").isPresent();
            legacy.adopt(BOB);
            legacy.adopt(BOB);
            legacy.release(BOB);
            assertThat(pods.legacyOwnerHashOf(ALICE.current())).as("another owner's request done leaves it")
                    .isPresent();
            assertThat(legacy.prune()).as("alice's link only: bob's is held").isEqualTo(1);
            assertThat(pods.legacyOwnerHashOf(ALICE.current())).isEmpty();
            assertThat(pods.legacyOwnerHashOf(BOB.current())).as("a request of bob's holds it").contains(BOB.legacy());
            legacy.release(BOB);
            assertThat(pods.legacyOwnerHashOf(BOB.current())).isEmpty();
            assertThat(legacy.prune()).as("nothing left to prune").isZero();
        });
    }

    /**
     * A legacy claim whose version moved on after the cache read it (a renewal by another replica, the watch not
     * there yet) is still its owner's: the rewrite reads it again and moves it, so the quota, which counts the keyed
     * hash only, counts it before the next claim. Left behind, the owner could claim one more than the quota.
     */
    @Test
    void aLegacyClaimThatOnlyChangedVersionMeanwhileIsReadAgainAndMovedSoTheQuotaCountsIt() throws Exception {
        withCache(cluster -> runner(cluster, 51820, "a1", ALICE.legacy()), (cluster, pods, legacy, calls) -> {
            String path = "/api/v1/namespaces/" + TestCluster.NS + "/pods/playpen-runner-amd64-51820";
            String status = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":";
            cluster.server.expect().patch().withPath(path).andReturn(409, status + "409}").once();

            assertThat(legacy.adopt(ALICE)).as("moved after reading it again").isEqualTo(1);
            assertThat(calls.get(KubeApiCall.PODS_GET)).as("the read after the conflict").isEqualTo(1);
            assertThat(calls.get(KubeApiCall.PODS_PATCH)).isEqualTo(2);
            assertThat(ownerHashOf(cluster, 51820)).isEqualTo(ALICE.current());
            Allocator allocator = new Allocator(pods, null, null, null, 1, 1);
            assertThat(allocator.ownedBy(ALICE.current())).as("the quota counts it").isEqualTo(1);
        });
    }

    @Test
    void aClaimThatChangedMeanwhileIsReadAgainOneThatWentIsLeftAndARefusalIsTheCallersError() throws Exception {
        withCache(cluster -> {
            runner(cluster, 51820, "a1", ALICE.legacy());
            runner(cluster, 51821, "a2", ALICE.legacy());
        }, (cluster, pods, legacy, calls) -> {
            String path = "/api/v1/namespaces/" + TestCluster.NS + "/pods/playpen-runner-amd64-";
            String status = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":";
            cluster.server.expect().patch().withPath(path + "51820").andReturn(409, status + "409}").once();
            cluster.server.expect().patch().withPath(path + "51821").andReturn(404, status + "404}").once();

            // the refused write is tried again on the pod as it is now (still alice's legacy claim); the other is
            // not written
            assertThat(legacy.adopt(ALICE)).as("the one read again moved, the gone one not").isEqualTo(1);
            assertThat(ownerHashOf(cluster, 51820)).isEqualTo(ALICE.current());
            assertThat(ownerHashOf(cluster, 51821)).isEqualTo(ALICE.legacy());

            // the next request moves the other
            assertThat(legacy.adopt(ALICE)).isEqualTo(1);

            cluster.server.expect().patch().withPath(path + "51822").andReturn(403, status + "403}").once();
            runner(cluster, 51822, "a3", ALICE.legacy());
            OperatorHarness.awaitTrue(() -> pods.get("playpen-runner-amd64-51822").isPresent(), Duration.ofSeconds(60),
                    "the new claim in the cache");
            assertThatThrownBy(() -> legacy.adopt(ALICE)).isInstanceOfSatisfying(KubernetesClientException.class,
                    e -> assertThat(e.getCode()).isEqualTo(403));
        });
    }
}
