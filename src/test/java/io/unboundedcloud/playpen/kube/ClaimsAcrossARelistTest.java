package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.Replica;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * Claims a replica's watch did not deliver in commit order: its watch was down while more changed than the API
 * server keeps (410 Gone), so it relisted. Such claims are undecided there: a replay settles one with a conditional
 * write before handing it out, and a replica's own new claim revealed only by the relist is rolled back and
 * claimed again rather than handed out unjudged.
 */
class ClaimsAcrossARelistTest {
    private TestCluster cluster;
    private Replica a;

    @BeforeEach
    void start() throws Exception {
        cluster = TestCluster.withWatchHistory(5);
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        for (int i = 0; i < 6; i++) {
            cluster.create(TestCluster.readyRunner("amd64", 51820 + i, "node-a"));
        }
        a = new Replica(cluster, 0).awaitReady("node-a");
        OperatorHarness.awaitTrue(() -> a.pods.pods().size() == 6, Duration.ofSeconds(20), "replica sees the pods");
    }

    @AfterEach
    void stop() {
        a.close();
        cluster.close();
    }

    private static AllocCommand cmd(String key) {
        return new AllocCommand(Hashes.keyHash(key), ResourceType.RUNNER, "", TestCluster.wgKey(3), "amd64");
    }

    /** More changes than the API server keeps for watches (so the replica's watch must relist). */
    private void churn() {
        for (int i = 0; i < 8; i++) {
            int n = i;
            cluster.client.pods().inNamespace(TestCluster.NS).withName("playpen-runner-amd64-51825").edit(
                    p -> new PodBuilder(p).editMetadata().addToLabels("churn", String.valueOf(n)).endMetadata().build());
        }
    }

    private void relist() throws Exception {
        a.proxy.dropWatches();
        a.proxy.releaseWatches();
    }

    @Test
    void aClaimFirstSeenInARelistIsSettledBeforeItIsReplayed() throws Exception {
        AllocCommand key = cmd("claimed-while-down");
        a.proxy.holdWatches();
        cluster.client.pods().inNamespace(TestCluster.NS).withName("playpen-runner-amd64-51821").edit(p ->
                new PodBuilder(p).editMetadata().addToAnnotations(Map.of(PlaypenKeys.IDEMPOTENCY_KEY_HASH,
                        key.keyHash(), PlaypenKeys.REQUEST_HASH, key.requestHash(), PlaypenKeys.CLAIMED_AT,
                        "2026-01-01T00:00:00Z")).endMetadata().build());
        churn();
        relist();
        OperatorHarness.awaitTrue(() -> a.pods.claimsOf(key.keyHash()).size() == 1, Duration.ofSeconds(20),
                "the relist shows the claim");
        assertThat(a.pods.claimsOf(key.keyHash()).get(0).standing()).isEqualTo(ClaimLedger.Standing.UNKNOWN);

        Allocator.Allocation replay = a.allocator.allocate(key);
        assertThat(replay.replay()).isTrue();
        assertThat(replay.pod().getMetadata().getName()).isEqualTo("playpen-runner-amd64-51821");
        assertThat(cluster.client.pods().inNamespace(TestCluster.NS).withName("playpen-runner-amd64-51821").get()
                .getMetadata().getAnnotations()).containsEntry(PlaypenKeys.CLAIM_SETTLED, "true");
        OperatorHarness.awaitTrue(() -> a.pods.claimsOf(key.keyHash()).get(0).stands(), Duration.ofSeconds(60),
                "settled claim stands");
    }

    @Test
    void aNewClaimRevealedOnlyByARelistIsClaimedAgainNotHandedOutUnjudged() throws Exception {
        AllocCommand key = cmd("mine-across-a-relist");
        a.proxy.holdWatches();
        CompletableFuture<Allocator.Allocation> alloc = CompletableFuture.supplyAsync(() -> a.allocator.allocate(key));
        OperatorHarness.awaitTrue(() -> cluster.pods().stream().anyMatch(p -> key.keyHash().equals(ManagedPods.keyHash(p))),
                Duration.ofSeconds(60), "claim written");
        churn();
        relist();
        Allocator.Allocation answer = alloc.get(60, TimeUnit.SECONDS);
        assertThat(a.allocator.rollbacks()).isPositive();
        OperatorHarness.awaitTrue(() -> cluster.pods().stream()
                .filter(p -> key.keyHash().equals(ManagedPods.keyHash(p))).count() == 1, Duration.ofSeconds(60),
                "one pod carries the key");
        assertThat(cluster.pods()).filteredOn(p -> key.keyHash().equals(ManagedPods.keyHash(p)))
                .extracting(ManagedPods::name).containsExactly(answer.pod().getMetadata().getName());
        assertThat(a.pods.claimOn(answer.pod().getMetadata().getName()).orElseThrow().stands()).isTrue();
    }

    /**
     * Two claims of one key this replica judged at their commit, both written with a claim-id: the first stands, the
     * second lost and its writer died. The watch relists; the pods still carry those very claims (their claim-ids),
     * so the verdicts hold: the lost one is swept back to the pool and the standing one is replayed, as on a replica
     * whose watch never broke.
     */
    @Test
    void claimsJudgedAtTheirCommitKeepTheirVerdictsAcrossARelist() throws Exception {
        AllocCommand key = cmd("judged-before-a-relist");
        String churned = "playpen-runner-amd64-51825";
        String p = a.allocator.allocate(key).pod().getMetadata().getName();
        Pod idle = cluster.pods().stream().filter(x -> !ManagedPods.isClaimed(x)
                && !churned.equals(ManagedPods.name(x))).findFirst().orElseThrow();
        String q = ManagedPods.name(idle);
        new ClaimWriter(cluster.client, java.time.Clock.systemUTC(), new ApiCallCounter())
                .claim(idle, idle.getMetadata().getResourceVersion(), key); // a lagging replica's: lost, writer died
        OperatorHarness.awaitTrue(() -> a.pods.claimOn(q).map(c -> c.standing() == ClaimLedger.Standing.LOST)
                .orElse(false), Duration.ofSeconds(60), "the second claim lost");

        a.proxy.holdWatches();
        churn();
        relist();
        OperatorHarness.awaitTrue(() -> a.pods.get(churned).map(x -> "7".equals(x.getMetadata().getLabels()
                .get("churn"))).orElse(false), Duration.ofSeconds(60), "the relist is applied");
        assertThat(a.pods.claimOn(p).orElseThrow().standing()).as("the claim that stood").isEqualTo(
                ClaimLedger.Standing.WON);
        assertThat(a.pods.claimOn(q).orElseThrow().standing()).as("the claim that lost").isEqualTo(
                ClaimLedger.Standing.LOST);

        assertThat(new LostClaimSweeper(a.pods, new ClaimWriter(a.client, java.time.Clock.systemUTC(), a.calls), 0)
                .sweep()).isEqualTo(1);
        assertThat(cluster.pods()).filteredOn(x -> key.keyHash().equals(ManagedPods.keyHash(x)))
                .extracting(ManagedPods::name).containsExactly(p);
        Allocator.Allocation replay = a.allocator.allocate(key);
        assertThat(replay.replay()).isTrue();
        assertThat(replay.pod().getMetadata().getName()).isEqualTo(p);
    }

    /** Puts (or, with a null key, takes off) a claim of {@code key} on a pod, as another replica's write would. */
    private void writeClaim(String pod, AllocCommand key, String claimedAt) {
        cluster.client.pods().inNamespace(TestCluster.NS).withName(pod).edit(p -> {
            PodBuilder b = new PodBuilder(p);
            if (key == null) {
                b.editMetadata().removeFromAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH)
                        .removeFromAnnotations(PlaypenKeys.REQUEST_HASH).removeFromAnnotations(PlaypenKeys.CLAIMED_AT)
                        .removeFromLabels(PlaypenKeys.KEY_HASH_LABEL).endMetadata();
            } else {
                b.editMetadata().addToAnnotations(Map.of(PlaypenKeys.IDEMPOTENCY_KEY_HASH, key.keyHash(),
                        PlaypenKeys.REQUEST_HASH, key.requestHash(), PlaypenKeys.CLAIMED_AT, claimedAt))
                        .addToLabels(PlaypenKeys.KEY_HASH_LABEL, ClaimWriter.labelValue(key.keyHash())).endMetadata();
            }
            return b.build();
        });
    }

    /**
     * A claim this replica saw stand, then taken back by its writer (its client left before the answer) while this
     * replica's watch was down; meanwhile the key was claimed on another pod (that claim stands and was answered),
     * and a lagging replica claimed the first pod again for the same key (that claim lost). The relist shows the
     * first pod with the same key and uid as the claim that stood, but it is another claim, one that lost: it must
     * not be taken for the standing one, replayed and settled, or the key holds two pods.
     */
    @Test
    void aClaimTakenBackAndMadeAgainUnseenIsNotTakenForTheOneThatStood() throws Exception {
        AllocCommand key = cmd("reclaimed-while-down");
        String first = "playpen-runner-amd64-51821";
        String second = "playpen-runner-amd64-51822";
        writeClaim(first, key, "2026-01-01T00:00:00Z");
        OperatorHarness.awaitTrue(() -> a.pods.claimOn(first).map(ClaimLedger.Claim::stands).orElse(false),
                Duration.ofSeconds(60), "the first claim stands");

        a.proxy.holdWatches();
        writeClaim(first, null, null);                           // its writer takes it back: the pod is idle
        writeClaim(second, key, "2026-01-01T00:00:05Z");         // claimed elsewhere: stands, answered there
        writeClaim(first, key, "2026-01-01T00:00:06Z");          // a lagging replica's claim: lost
        churn();
        relist();
        OperatorHarness.awaitTrue(() -> a.pods.claimsOf(key.keyHash()).size() == 2, Duration.ofSeconds(20),
                "the relist shows both claims");

        long listsBefore = a.calls.get(KubeApiCall.PODS_LIST);
        CompletableFuture<Allocator.Allocation> replay = CompletableFuture.supplyAsync(() -> a.allocator.allocate(key));
        // the lost claim's writer rolls it back once its watch has judged it (unless a settle got there first)
        OperatorHarness.awaitTrue(() -> replay.isDone() || a.calls.get(KubeApiCall.PODS_LIST) > listsBefore,
                Duration.ofSeconds(20), "the replay has read the key's claims");
        Pod lost = cluster.client.pods().inNamespace(TestCluster.NS).withName(first).get();
        new ClaimWriter(cluster.client, java.time.Clock.systemUTC(), new ApiCallCounter()).rollback(lost, key.keyHash());

        assertThat(replay.get(60, TimeUnit.SECONDS).pod().getMetadata().getName()).isEqualTo(second);
        assertThat(cluster.pods()).filteredOn(p -> key.keyHash().equals(ManagedPods.keyHash(p)))
                .extracting(ManagedPods::name).containsExactly(second);
    }

    /**
     * The same history as above with this replica's watch merely behind (no relist): its ledger still has the first
     * claim standing when the pod, read fresh, carries the key again, by the lagging replica's claim that lost. The
     * fresh pod is not the claim the ledger judged: it must not be replayed and settled.
     */
    @Test
    void aClaimTakenBackAndMadeAgainBeyondALaggingWatchIsNotTakenForTheOneThatStood() throws Exception {
        AllocCommand key = cmd("reclaimed-while-behind");
        String first = "playpen-runner-amd64-51821";
        String second = "playpen-runner-amd64-51822";
        writeClaim(first, key, "2026-01-01T00:00:00Z");
        OperatorHarness.awaitTrue(() -> a.pods.claimOn(first).map(ClaimLedger.Claim::stands).orElse(false),
                Duration.ofSeconds(60), "the first claim stands");

        a.proxy.holdWatches();
        writeClaim(first, null, null);                           // its writer takes it back: the pod is idle
        writeClaim(second, key, "2026-01-01T00:00:05Z");         // claimed elsewhere: stands, answered there
        writeClaim(first, key, "2026-01-01T00:00:06Z");          // a lagging replica's claim: lost

        CompletableFuture<Allocator.Allocation> replay = new CompletableFuture<>();
        Thread caller = new Thread(() -> {
            try {
                replay.complete(a.allocator.allocate(key));
            } catch (Throwable e) {
                replay.completeExceptionally(e);
            }
        }, "replay");
        caller.setDaemon(true);
        caller.start();
        // answered, or waiting for this replica's watch (which the test holds) to judge the key
        OperatorHarness.awaitTrue(() -> replay.isDone() || ScriptedReplica.parkedIn(caller, "ClaimResolver", "await"),
                Duration.ofSeconds(20), "the replay has answered or waits for the watch");
        a.proxy.releaseWatches();
        OperatorHarness.awaitTrue(() -> replay.isDone() || a.pods.claimOn(first).map(c -> c.standing()
                == ClaimLedger.Standing.LOST).orElse(false), Duration.ofSeconds(20), "the watch caught up");
        Pod lost = cluster.client.pods().inNamespace(TestCluster.NS).withName(first).get();
        new ClaimWriter(cluster.client, java.time.Clock.systemUTC(), new ApiCallCounter()).rollback(lost, key.keyHash());

        assertThat(replay.get(60, TimeUnit.SECONDS).pod().getMetadata().getName()).isEqualTo(second);
        assertThat(cluster.pods()).filteredOn(p -> key.keyHash().equals(ManagedPods.keyHash(p)))
                .extracting(ManagedPods::name).containsExactly(second);
    }
}
