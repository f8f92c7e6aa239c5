package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.OwnerHashes;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.Replica;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The quota counts an owner's claims that carry the legacy (unkeyed) owner hash even when this replica's watch has
 * not delivered them when the owner asks (a replica of the previous version wrote them a moment ago, in a rolling
 * upgrade): they were committed before the new claim, so they count against it, judged from the API server's own
 * list of pods.
 */
class LegacyOwnerClaimsQuotaTest {
    private static final String NODE = "node-a";
    private static final OwnerHashes.Owner ALICE = LegacyOwnerClaimsTest.ALICE;

    private TestCluster cluster;
    private Replica replica;
    private final ExecutorService threads = Executors.newCachedThreadPool();

    @BeforeEach
    void cluster() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode(NODE, "amd64", "203.0.113.10");
        for (int i = 0; i < 4; i++) {
            cluster.create(TestCluster.readyRunner("amd64", 51820 + i, NODE));
        }
        replica = new Replica(cluster, 1).awaitReady(NODE);
        OperatorHarness.awaitTrue(() -> replica.pods.pods().size() == 4, Duration.ofSeconds(20), "replica sees 4");
    }

    @AfterEach
    void stop() {
        threads.shutdownNow();
        if (replica != null) {
            replica.close();
        }
        cluster.close();
    }

    private static AllocCommand cmd(String key) {
        return new AllocCommand(Hashes.keyHash(key), ResourceType.RUNNER, "", TestCluster.wgKey(3), "amd64");
    }

    /** A claim as a replica of the previous version writes it: the legacy owner hash, annotation and label. */
    private void legacyClaim(String pod, AllocCommand key) {
        cluster.client.pods().inNamespace(TestCluster.NS).withName(pod).edit(p -> new PodBuilder(p).editMetadata()
                .addToAnnotations(Map.of(PlaypenKeys.IDEMPOTENCY_KEY_HASH, key.keyHash(), PlaypenKeys.REQUEST_HASH,
                        key.requestHash(), PlaypenKeys.CLAIMED_AT, "2026-01-01T00:00:00Z", PlaypenKeys.OWNER_HASH,
                        ALICE.legacy()))
                .addToLabels(Map.of(PlaypenKeys.KEY_HASH_LABEL, ClaimWriter.labelValue(key.keyHash()),
                        PlaypenKeys.OWNER_HASH_LABEL, ClaimWriter.labelValue(ALICE.legacy())))
                .endMetadata().build());
    }

    /** Alice's live claims in the API server, under either owner hash. */
    private long alicesClaims() {
        return cluster.pods().stream().filter(p -> ManagedPods.isClaimed(p) && ALICE.matches(ManagedPods.ownerHash(p)))
                .count();
    }

    /**
     * --max-allocs-per-user=1. Alice holds one claim, written with the legacy hash by a replica of the previous
     * version; this replica's watch has not delivered it when she asks for another key, so the move to the keyed
     * hash before her claim finds nothing to move and the cache counts nothing. Her new claim is committed after
     * the legacy one, while it was live: it is over her quota, is taken back, and she is answered 429 counting the
     * legacy claim. Before, it stood and she held two.
     */
    @Test
    void aLegacyClaimTheWatchHadNotDeliveredCountsAgainstTheNextClaim() throws Exception {
        LegacyOwnerClaims legacy = new LegacyOwnerClaims(replica.client, replica.pods, replica.calls);
        replica.proxy.holdWatches();
        legacyClaim("playpen-runner-amd64-51823", cmd("written-by-the-previous-version"));

        assertThat(legacy.adopt(ALICE)).as("nothing in the cache to move").isZero();
        AllocCommand next = cmd("one-more");
        CompletableFuture<Allocator.Allocation> answer = CompletableFuture.supplyAsync(
                () -> replica.allocator.allocate(next, ALICE.current()), threads);
        OperatorHarness.awaitTrue(() -> alicesClaims() == 2, Duration.ofSeconds(60), "the new claim written");
        replica.proxy.releaseWatches();

        Throwable refused = null;
        try {
            answer.get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            refused = e.getCause();
        }
        assertThat(refused).as("a second allocation under a quota of one").isInstanceOfSatisfying(ApiException.class,
                e -> {
                    assertThat(e.code()).isEqualTo(429);
                    assertThat(e.getMessage()).contains("you hold 1 of at most 1");
                });
        OperatorHarness.awaitTrue(() -> alicesClaims() == 1, Duration.ofSeconds(60), "the new claim taken back");
        assertThat(cluster.pods()).filteredOn(p -> ALICE.matches(ManagedPods.ownerHash(p)) && ManagedPods.isClaimed(p))
                .extracting(ManagedPods::name).containsExactly("playpen-runner-amd64-51823");
    }

    /**
     * --max-allocs-per-user=1. Alice holds one claim under the legacy hash that this replica's watch has delivered,
     * but its move to the keyed hash met a change three times and was left for later; the replica knows her two
     * hashes. Her next key is refused 429 at once, by the count from the API server taken before a claim: no claim
     * is written and taken back. Before, that count listed the keyed hash only, found room, and the claim was
     * written, then rolled back by its writer. The check of a request that would wait for capacity refuses too.
     */
    @Test
    void anUnmovedLegacyClaimTheWatchDeliveredIsRefusedWithoutAClaimWrite() throws Exception {
        LegacyOwnerClaims legacy = new LegacyOwnerClaims(replica.client, replica.pods, replica.calls);
        String pod = "playpen-runner-amd64-51823";
        legacyClaim(pod, cmd("written-by-the-previous-version"));
        OperatorHarness.awaitTrue(() -> replica.pods.byOwnerHash(ALICE.legacy()).stream()
                .anyMatch(ManagedPods::isClaimed), Duration.ofSeconds(60), "the legacy claim in the cache");
        String status = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":409}";
        cluster.server.expect().patch().withPath("/api/v1/namespaces/" + TestCluster.NS + "/pods/" + pod)
                .andReturn(409, status).times(LegacyOwnerClaims.MAX_ATTEMPTS);
        assertThat(legacy.adopt(ALICE)).as("the move met a change every time").isZero();
        assertThat(ManagedPods.ownerHash(cluster.client.pods().inNamespace(TestCluster.NS).withName(pod).get()))
                .isEqualTo(ALICE.legacy());
        long patches = replica.calls.get(KubeApiCall.PODS_PATCH);

        AllocCommand next = cmd("one-more");
        Throwable refused = org.assertj.core.api.Assertions.catchThrowable(
                () -> replica.allocator.allocate(next, ALICE.current()));
        assertThat(refused).as("a second allocation under a quota of one").isInstanceOfSatisfying(ApiException.class,
                e -> {
                    assertThat(e.code()).isEqualTo(429);
                    assertThat(e.getMessage()).contains("you hold 1 of at most 1");
                });
        assertThat(replica.calls.get(KubeApiCall.PODS_PATCH)).as("no claim written (and none taken back)")
                .isEqualTo(patches);
        assertThat(alicesClaims()).isEqualTo(1);

        Throwable beforeWaiting = org.assertj.core.api.Assertions.catchThrowable(
                () -> replica.allocator.requireQuota(next, ALICE.current()));
        assertThat(beforeWaiting).as("a request that would wait for capacity").isInstanceOfSatisfying(
                ApiException.class, e -> assertThat(e.code()).isEqualTo(429));
    }

    /**
     * The other order: alice's new claim is committed first, while she holds nothing, and the previous version's
     * legacy claim after it (its writer judges it by its own count). The new claim stood at its commit: it is
     * answered, whether or not the watch has delivered the later legacy claim by the time its writer counts.
     */
    @Test
    void aLegacyClaimCommittedAfterTheNewClaimDoesNotCountAgainstIt() throws Exception {
        LegacyOwnerClaims legacy = new LegacyOwnerClaims(replica.client, replica.pods, replica.calls);
        assertThat(legacy.adopt(ALICE)).isZero();
        replica.proxy.holdWatches();
        AllocCommand next = cmd("first");
        CompletableFuture<Allocator.Allocation> answer = CompletableFuture.supplyAsync(
                () -> replica.allocator.allocate(next, ALICE.current()), threads);
        OperatorHarness.awaitTrue(() -> alicesClaims() == 1, Duration.ofSeconds(60), "the new claim written");
        String claimed = cluster.pods().stream().filter(p -> ALICE.current().equals(ManagedPods.ownerHash(p)))
                .map(ManagedPods::name).findFirst().orElseThrow();
        String other = java.util.stream.IntStream.range(0, 4).mapToObj(i -> "playpen-runner-amd64-" + (51820 + i))
                .filter(n -> !n.equals(claimed)).findFirst().orElseThrow();
        legacyClaim(other, cmd("written-by-the-previous-version"));
        replica.proxy.releaseWatches();

        assertThat(ManagedPods.name(answer.get(60, TimeUnit.SECONDS).pod())).isEqualTo(claimed);
        assertThat(alicesClaims()).isEqualTo(2);
    }
}
