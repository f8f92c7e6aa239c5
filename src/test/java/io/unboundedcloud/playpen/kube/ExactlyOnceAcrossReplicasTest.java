package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.Replica;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * Exactly once across replicas whose caches disagree, judged only from the API server's own pod list: each test
 * sets up one interleaving in which replicas that trusted their caches to agree double-allocated or lost a dealloc
 * (a replica restarted while pods were claimed, a replica whose watch lags behind a new pod or another replica's
 * claim, a dealloc through the lagging replica, the owner quota counted by two replicas).
 */
class ExactlyOnceAcrossReplicasTest {
    private static final String NODE = "node-a";
    private static final String KIND = "runner/amd64";

    private TestCluster cluster;
    private final List<Replica> replicas = new ArrayList<>();
    private final ExecutorService threads = Executors.newCachedThreadPool();

    @BeforeEach
    void cluster() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode(NODE, "amd64", "203.0.113.10");
    }

    @AfterEach
    void stop() {
        threads.shutdownNow();
        replicas.forEach(Replica::close);
        cluster.close();
    }

    private Replica replica(int maxPerOwner) throws Exception {
        Replica r = new Replica(cluster, maxPerOwner).awaitReady(NODE);
        replicas.add(r);
        return r;
    }

    private void runners(int from, int count) {
        for (int i = from; i < from + count; i++) {
            cluster.create(TestCluster.readyRunner("amd64", 51820 + i, NODE));
        }
    }

    private static AllocCommand cmd(String key) {
        return new AllocCommand(Hashes.keyHash(key), ResourceType.RUNNER, "", TestCluster.wgKey(3), "amd64");
    }

    private List<Pod> carrying(AllocCommand c) {
        return cluster.pods().stream().filter(p -> c.keyHash().equals(ManagedPods.keyHash(p))).toList();
    }

    private static String name(Allocator.Allocation a) {
        return a.pod().getMetadata().getName();
    }

    private void awaitSees(Replica r, int pods) throws InterruptedException {
        OperatorHarness.awaitTrue(() -> r.pods.pods().size() == pods, Duration.ofSeconds(20), "replica sees " + pods);
    }

    /**
     * A pod turns Ready while replica B's watch lags; the key's walk on A reaches it first and A hands it out. The
     * client's retry goes to B, which knows neither the pod nor the claim: it must answer with the same pod.
     */
    @Test
    void aRetryThroughALaggingReplicaReplaysTheFirstAnswer() throws Exception {
        runners(0, 6);
        Replica a = replica(0);
        Replica b = replica(0);
        awaitSees(a, 6);
        awaitSees(b, 6);
        b.proxy.holdWatches();
        String fresh = "playpen-runner-amd64-51850";
        cluster.create(TestCluster.readyRunner("amd64", 51850, NODE));
        OperatorHarness.awaitTrue(() -> a.pods.get(fresh).isPresent(), Duration.ofSeconds(60), "A sees the new pod");
        AllocCommand key = null;
        for (int k = 0; key == null; k++) {
            AllocCommand c = cmd("retried-" + k);
            if (a.pods.ring(KIND, Hashes.seed(c.keyHash())).next().equals(fresh)) {
                key = c;
            }
        }
        Allocator.Allocation first = a.allocator.allocate(key);
        assertThat(name(first)).isEqualTo(fresh);

        AllocCommand retry = key;
        CompletableFuture<Allocator.Allocation> second = CompletableFuture.supplyAsync(() -> b.allocator.allocate(retry),
                threads);
        // B's own claim is written before its watch may show A's: released earlier (a pause can end first on a
        // loaded machine), B would meet A's claim instead, and the losing claim below would never be made
        OperatorHarness.awaitTrue(() -> carrying(retry).size() == 2, Duration.ofSeconds(60), "B's claim written");
        b.proxy.releaseWatches();
        Allocator.Allocation answer = second.get(30, TimeUnit.SECONDS);
        assertThat(name(answer)).isEqualTo(fresh);
        assertThat(answer.replay()).isTrue();
        OperatorHarness.awaitTrue(() -> carrying(retry).size() == 1, Duration.ofSeconds(60), "losing claim undone");
        assertThat(carrying(retry)).extracting(ManagedPods::name).containsExactly(fresh);
    }

    /** Allocated through A, deallocated at once through B whose watch has not delivered the claim: released. */
    @Test
    void aDeallocThroughALaggingReplicaReleasesTheClaim() throws Exception {
        runners(0, 4);
        Replica a = replica(0);
        Replica b = replica(0);
        awaitSees(b, 4);
        b.proxy.holdWatches();
        AllocCommand key = cmd("short-job");
        Allocator.Allocation allocated = a.allocator.allocate(key);

        List<Pod> deleted = b.allocator.deallocate(key.keyHash());
        assertThat(deleted).extracting(ManagedPods::name).containsExactly(name(allocated));
        assertThat(carrying(key)).isEmpty();
        assertThat(cluster.pods()).extracting(ManagedPods::name).doesNotContain(name(allocated));
    }

    /**
     * Two pods carry one key (what a writer that died between its claim and its rollback leaves). A dealloc through
     * a replica that knows only one of them still deletes both: nothing holds the key afterwards.
     */
    @Test
    void aDeallocDeletesEveryPodThatCarriesTheKeyNotOnlyTheCachedOne() throws Exception {
        runners(0, 4);
        AllocCommand key = cmd("doubled");
        claimDirectly("playpen-runner-amd64-51820", key);
        Replica b = replica(0);
        OperatorHarness.awaitTrue(() -> b.pods.byKeyHash(key.keyHash()).size() == 1, Duration.ofSeconds(60),
                "B knows the first claim");
        b.proxy.holdWatches();
        claimDirectly("playpen-runner-amd64-51821", key);

        List<Pod> deleted = b.allocator.deallocate(key.keyHash());
        assertThat(deleted).extracting(ManagedPods::name)
                .containsExactlyInAnyOrder("playpen-runner-amd64-51820", "playpen-runner-amd64-51821");
        assertThat(carrying(key)).isEmpty();
    }

    private void claimDirectly(String pod, AllocCommand key) {
        cluster.client.pods().inNamespace(TestCluster.NS).withName(pod).edit(p -> new PodBuilder(p).editMetadata()
                .addToAnnotations(Map.of(PlaypenKeys.IDEMPOTENCY_KEY_HASH, key.keyHash(), PlaypenKeys.REQUEST_HASH,
                        key.requestHash(), PlaypenKeys.CLAIMED_AT, "2026-01-01T00:00:00Z"))
                .addToLabels(PlaypenKeys.KEY_HASH_LABEL, key.keyHash().substring(0, 63))
                .endMetadata().build());
    }

    /**
     * Replica B starts while pods are claimed; then every key is sent to A and B at once, neither replica's watch
     * delivering the other's claim before both have written theirs. Every key ends on one pod, and both answers
     * name it.
     */
    @Test
    void aReplicaStartedWhileClaimsExistAgreesWithOneThatRanAllAlong() throws Exception {
        runners(0, 48);
        Replica a = replica(0);
        awaitSees(a, 48);
        for (int i = 0; i < 12; i++) {
            a.allocator.allocate(cmd("before-restart-" + i));
        }
        Replica b = replica(0);
        awaitSees(b, 48);
        for (int k = 0; k < 24; k++) {
            AllocCommand key = cmd("after-restart-" + k);
            // two claims of the key, or one that the other met
            List<CompletableFuture<Allocator.Allocation>> both = atOnceUnseen(a, b, () -> a.allocator.allocate(key),
                    () -> b.allocator.allocate(key), () -> carrying(key).size() >= 2);
            String pa = name(both.get(0).get(30, TimeUnit.SECONDS));
            String pb = name(both.get(1).get(30, TimeUnit.SECONDS));
            assertThat(pb).as("key %d: both answers name one pod", k).isEqualTo(pa);
            OperatorHarness.awaitTrue(() -> carrying(key).size() == 1, Duration.ofSeconds(60), "key " + key.keyHash());
            assertThat(carrying(key)).extracting(ManagedPods::name).containsExactly(pa);
        }
    }

    /**
     * --max-allocs-per-user=1 on two replicas, one user, two new keys at once: exactly one is allocated and the other
     * is 429, whichever replica answers, and the API server holds one claim of that user.
     */
    @Test
    void theQuotaHoldsExactlyAcrossReplicas() throws Exception {
        runners(0, 8);
        Replica a = replica(1);
        Replica b = replica(1);
        awaitSees(a, 8);
        awaitSees(b, 8);
        String owner = Hashes.ownerHash("alice");
        for (int round = 0; round < 3; round++) {
            AllocCommand k1 = cmd("quota-a-" + round);
            AllocCommand k2 = cmd("quota-b-" + round);
            List<CompletableFuture<Allocator.Allocation>> both = atOnceUnseen(a, b,
                    () -> a.allocator.allocate(k1, owner), () -> b.allocator.allocate(k2, owner),
                    () -> ownedInApi(owner) >= 2);
            int allocated = 0;
            int refused = 0;
            String kept = null;
            for (CompletableFuture<Allocator.Allocation> f : both) {
                try {
                    kept = name(f.get(30, TimeUnit.SECONDS));
                    allocated++;
                } catch (java.util.concurrent.ExecutionException e) {
                    assertThat(e.getCause()).isInstanceOf(ApiException.class);
                    assertThat(((ApiException) e.getCause()).code()).isEqualTo(429);
                    refused++;
                }
            }
            assertThat(allocated).as("round %d allocated", round).isEqualTo(1);
            assertThat(refused).as("round %d refused", round).isEqualTo(1);
            OperatorHarness.awaitTrue(() -> ownedInApi(owner) == 1, Duration.ofSeconds(60), "one claim of alice");
            String survivor = kept;
            assertThat(cluster.pods()).filteredOn(p -> owner.equals(ManagedPods.ownerHash(p)))
                    .extracting(ManagedPods::name).containsExactly(survivor);
            // release it through the other replica, for the next round
            String keyOfSurvivor = cluster.pods().stream().filter(p -> survivor.equals(ManagedPods.name(p)))
                    .findFirst().map(ManagedPods::keyHash).orElseThrow();
            b.allocator.deallocate(keyOfSurvivor);
            assertThat(ownedInApi(owner)).isZero();
            OperatorHarness.awaitTrue(() -> a.allocator.ownedBy(owner) == 0 && b.allocator.ownedBy(owner) == 0,
                    Duration.ofSeconds(60), "both replicas see the release");
        }
    }

    /**
     * --max-allocs-per-user=1: alice's allocation is released through replica B, which answers only once the API
     * server holds no claim of hers; her next allocation goes to replica A, whose watch has not delivered the release
     * yet. She holds nothing, so it is allocated (A's cache still counting the released claim is no reason for a 429).
     */
    @Test
    void aReleaseThroughAnotherReplicaFreesTheQuotaAtOnce() throws Exception {
        runners(0, 4);
        Replica a = replica(1);
        Replica b = replica(1);
        awaitSees(a, 4);
        awaitSees(b, 4);
        String owner = Hashes.ownerHash("alice");
        AllocCommand held = cmd("quota-held");
        a.allocator.allocate(held, owner);
        a.proxy.holdWatches();
        assertThat(b.allocator.deallocate(held.keyHash())).hasSize(1);
        assertThat(ownedInApi(owner)).isZero();

        AllocCommand next = cmd("quota-next");
        CompletableFuture<Allocator.Allocation> f = CompletableFuture.supplyAsync(
                () -> a.allocator.allocate(next, owner), threads);
        OperatorHarness.awaitTrue(() -> f.isDone() || !carrying(next).isEmpty(), Duration.ofSeconds(20),
                "the new claim written, or the answer");
        a.proxy.releaseWatches();
        Allocator.Allocation got;
        try {
            got = f.get(30, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new AssertionError("alice holds nothing, yet her allocation was refused: " + e.getCause(), e);
        }
        assertThat(carrying(next)).extracting(ManagedPods::name).containsExactly(name(got));
        assertThat(ownedInApi(owner)).isEqualTo(1);
    }

    /**
     * --max-allocs-per-user=1: alice released her allocation and made a new one through replica A; her retry of the
     * new one goes to replica B, whose watch has delivered neither (its cache still counts the released claim). The
     * API server's count is 1 of 1, but that one is the very key asked for: a replay, which the quota never refuses.
     */
    @Test
    void aReplayThroughALaggingReplicaIsNotRefusedByTheQuotaItsOwnClaimFills() throws Exception {
        runners(0, 4);
        Replica a = replica(1);
        Replica b = replica(1);
        awaitSees(a, 4);
        awaitSees(b, 4);
        String owner = Hashes.ownerHash("alice");
        AllocCommand old = cmd("quota-old");
        a.allocator.allocate(old, owner);
        OperatorHarness.awaitTrue(() -> b.allocator.ownedBy(owner) == 1, Duration.ofSeconds(20), "B sees the claim");
        b.proxy.holdWatches();
        assertThat(a.allocator.deallocate(old.keyHash())).hasSize(1);
        AllocCommand now = cmd("quota-now");
        Allocator.Allocation first = a.allocator.allocate(now, owner);
        assertThat(ownedInApi(owner)).isEqualTo(1);

        long lists = b.calls.get(KubeApiCall.PODS_LIST);
        CompletableFuture<Allocator.Allocation> retry = CompletableFuture.supplyAsync(
                () -> b.allocator.allocate(now, owner), threads);
        OperatorHarness.awaitTrue(() -> retry.isDone() || b.calls.get(KubeApiCall.PODS_LIST) > lists
                || carrying(now).size() > 1, Duration.ofSeconds(20), "B counted alice's claims, or answered");
        b.proxy.releaseWatches();
        Allocator.Allocation again;
        try {
            again = retry.get(30, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new AssertionError("a replay of the key alice holds was refused: " + e.getCause(), e);
        }
        assertThat(name(again)).isEqualTo(name(first));
        assertThat(again.replay()).isTrue();
        assertThat(ownedInApi(owner)).isEqualTo(1);
    }

    /**
     * Runs two calls at once, one on each replica, neither replica's watch delivering anything until both have
     * written ({@code bothWritten}, or 600 ms: one may have met the other's claim instead of writing its own).
     */
    private List<CompletableFuture<Allocator.Allocation>> atOnceUnseen(Replica a, Replica b,
            java.util.function.Supplier<Allocator.Allocation> viaA, java.util.function.Supplier<Allocator.Allocation> viaB,
            java.util.function.BooleanSupplier bothWritten) throws InterruptedException {
        a.proxy.holdWatches();
        b.proxy.holdWatches();
        List<CompletableFuture<Allocator.Allocation>> both = List.of(CompletableFuture.supplyAsync(viaA, threads),
                CompletableFuture.supplyAsync(viaB, threads));
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(600);
        while (!bothWritten.getAsBoolean() && System.nanoTime() < until) {
            Thread.sleep(20);
        }
        a.proxy.releaseWatches();
        b.proxy.releaseWatches();
        return both;
    }

    private long ownedInApi(String owner) {
        return cluster.pods().stream().filter(p -> owner.equals(ManagedPods.ownerHash(p))).count();
    }

    /**
     * A claim that lost (another pod carried its key when it was committed) and whose writer died before rolling
     * it back goes back to the pool on the leader's sweep; the standing claim stays.
     */
    @Test
    void aLostClaimLeftBehindByADeadWriterGoesBackToThePool() throws Exception {
        runners(0, 4);
        Replica a = replica(0);
        awaitSees(a, 4);
        AllocCommand key = cmd("left-behind");
        claimDirectly("playpen-runner-amd64-51820", key);
        claimDirectly("playpen-runner-amd64-51821", key);
        OperatorHarness.awaitTrue(() -> a.pods.claimsOf(key.keyHash()).size() == 2, Duration.ofSeconds(60),
                "both claims judged");
        assertThat(a.pods.claimsOf(key.keyHash())).extracting(ClaimLedger.Claim::standing)
                .containsExactly(ClaimLedger.Standing.WON, ClaimLedger.Standing.LOST);
        LostClaimSweeper sweeper = new LostClaimSweeper(a.pods,
                new ClaimWriter(a.client, java.time.Clock.systemUTC(), a.calls), 0);
        assertThat(sweeper.sweep()).isEqualTo(1);
        assertThat(carrying(key)).extracting(ManagedPods::name).containsExactly("playpen-runner-amd64-51820");
        Pod idle = cluster.client.pods().inNamespace(TestCluster.NS).withName("playpen-runner-amd64-51821").get();
        assertThat(ManagedPods.isClaimed(idle)).isFalse();
        assertThat(idle.getMetadata().getLabels()).doesNotContainKey(PlaypenKeys.KEY_HASH_LABEL);
    }

    /**
     * Replica A answers key K with its claim on P; replica B, whose watch lagged, claimed K on Q after that (so its
     * claim lost) and died before rolling it back. Replica C starts afterwards (a new leader): its first LIST shows
     * both claims, unsettled, and nothing the API server keeps tells which was committed first, so C must leave
     * both alone (P may have been answered). A watched both commits and judged Q's claim lost: A's sweep (every
     * replica runs it, not only the leader) takes Q back, P stays and C replays it.
     */
    @Test
    void aLostClaimThatANewLeaderCannotJudgeGoesBackThroughAReplicaThatWatchedItsCommit() throws Exception {
        runners(0, 4);
        Replica a = replica(0);
        awaitSees(a, 4);
        AllocCommand key = cmd("lost-before-a-new-leader");
        String p = name(a.allocator.allocate(key));
        Pod idle = cluster.pods().stream().filter(x -> !ManagedPods.isClaimed(x) && !p.equals(ManagedPods.name(x)))
                .findFirst().orElseThrow();
        String q = ManagedPods.name(idle);
        new ClaimWriter(cluster.client, java.time.Clock.systemUTC(), new ApiCallCounter())
                .claim(idle, idle.getMetadata().getResourceVersion(), key);
        OperatorHarness.awaitTrue(() -> a.pods.claimsOf(key.keyHash()).size() == 2, Duration.ofSeconds(60),
                "A judged both claims");
        assertThat(a.pods.claimOn(q).orElseThrow().standing()).isEqualTo(ClaimLedger.Standing.LOST);

        Replica c = replica(0);
        awaitSees(c, 4);
        assertThat(c.pods.claimsOf(key.keyHash())).extracting(ClaimLedger.Claim::standing)
                .containsOnly(ClaimLedger.Standing.UNKNOWN).hasSize(2);
        LostClaimSweeper cSweeper = new LostClaimSweeper(c.pods,
                new ClaimWriter(c.client, java.time.Clock.systemUTC(), c.calls), 0);
        assertThat(cSweeper.sweep()).isZero();
        assertThat(cSweeper.sweepListed()).isZero();
        assertThat(carrying(key)).extracting(ManagedPods::name).containsExactlyInAnyOrder(p, q);

        assertThat(new LostClaimSweeper(a.pods, new ClaimWriter(a.client, java.time.Clock.systemUTC(), a.calls), 0)
                .sweep()).isEqualTo(1);
        assertThat(carrying(key)).extracting(ManagedPods::name).containsExactly(p);
        Allocator.Allocation replay = c.allocator.allocate(key);
        assertThat(replay.replay()).isTrue();
        assertThat(name(replay)).isEqualTo(p);
    }

    /**
     * As above, but no running replica watched the two commits (A restarted): the claim on P was replayed before
     * (so settled), and B's claim on Q came after. A LIST that shows a settled claim of K and another, unsettled,
     * claim of K live at once proves the unsettled one lost (a settled claim stands and is never rolled back, and
     * two claims of one key never both stand), so the new leader's sweep takes Q back; P stays and is replayed.
     */
    @Test
    void aClaimListedBesideASettledClaimOfItsKeyGoesBackToThePoolOnANewLeader() throws Exception {
        runners(0, 4);
        Replica a = replica(0);
        awaitSees(a, 4);
        AllocCommand key = cmd("lost-beside-a-settled-claim");
        String p = name(a.allocator.allocate(key));
        assertThat(a.allocator.allocate(key).replay()).isTrue();
        assertThat(ClaimLedger.isSettled(cluster.client.pods().inNamespace(TestCluster.NS).withName(p).get())).isTrue();
        replicas.remove(a);
        a.close();
        Pod idle = cluster.pods().stream().filter(x -> !ManagedPods.isClaimed(x)).findFirst().orElseThrow();
        String q = ManagedPods.name(idle);
        new ClaimWriter(cluster.client, java.time.Clock.systemUTC(), new ApiCallCounter())
                .claim(idle, idle.getMetadata().getResourceVersion(), key);

        Replica c = replica(0);
        awaitSees(c, 4);
        OperatorHarness.awaitTrue(() -> c.pods.claimsOf(key.keyHash()).size() == 2, Duration.ofSeconds(60),
                "C lists both claims");
        assertThat(c.pods.claimOn(q).orElseThrow().standing()).isEqualTo(ClaimLedger.Standing.UNKNOWN);
        ClaimWriter cWriter = new ClaimWriter(c.client, java.time.Clock.systemUTC(), c.calls);
        assertThat(new LostClaimSweeper(c.pods, cWriter).sweepListed()).as("left to its writer during the grace")
                .isZero();
        assertThat(carrying(key)).hasSize(2);
        LostClaimSweeper noGrace = new LostClaimSweeper(c.pods, cWriter, 0);
        assertThat(noGrace.sweep()).as("C's watch did not see it lose").isZero();
        assertThat(noGrace.sweepListed()).isEqualTo(1);
        assertThat(carrying(key)).extracting(ManagedPods::name).containsExactly(p);
        Pod back = cluster.client.pods().inNamespace(TestCluster.NS).withName(q).get();
        assertThat(ManagedPods.isClaimed(back)).isFalse();
        assertThat(back.getMetadata().getLabels()).doesNotContainKey(PlaypenKeys.KEY_HASH_LABEL);
        Allocator.Allocation replay = c.allocator.allocate(key);
        assertThat(replay.replay()).isTrue();
        assertThat(name(replay)).isEqualTo(p);
    }

    /**
     * A claim handed to a second request (a replay through another replica) is pinned: its writer, whose own
     * client vanished, can no longer take it back. Without the replay, it can.
     */
    @Test
    void aClaimHandedOutAgainCannotBeTakenBackByItsWriter() throws Exception {
        runners(0, 4);
        Replica a = replica(0);
        Replica b = replica(0);
        awaitSees(a, 4);
        awaitSees(b, 4);
        AllocCommand kept = cmd("replayed-elsewhere");
        Allocator.Allocation first = a.allocator.allocate(kept);
        Allocator.Allocation replay = b.allocator.allocate(kept);
        assertThat(replay.replay()).isTrue();
        assertThat(name(replay)).isEqualTo(name(first));
        assertThat(a.allocator.release(first, kept)).isFalse();
        assertThat(carrying(kept)).extracting(ManagedPods::name).containsExactly(name(first));

        AllocCommand dropped = cmd("client-gone");
        Allocator.Allocation lone = a.allocator.allocate(dropped);
        assertThat(a.allocator.release(lone, dropped)).isTrue();
        assertThat(carrying(dropped)).isEmpty();
    }

    /**
     * Replica B judged a claim of a key on pod Q lost (an earlier claim of the key stood on P). Then, unseen by B's
     * watch, the lost claim was rolled back, P released and the key claimed again on Q: that claim stands. B reads
     * the allocation from the API server: it is listed, not hidden as the claim B once saw lose.
     */
    @Test
    void aLaggingReplicaListsAClaimThatStandsWhereAnEarlierClaimOfItsKeyLost() throws Exception {
        runners(0, 4);
        Replica b = replica(0);
        awaitSees(b, 4);
        AllocCommand key = cmd("claimed-again");
        String p = "playpen-runner-amd64-51820";
        String q = "playpen-runner-amd64-51821";
        claimListed(p, key);
        claimListed(q, key);
        OperatorHarness.awaitTrue(() -> b.pods.claimsOf(key.keyHash()).size() == 2, Duration.ofSeconds(60),
                "B judged both claims");
        assertThat(b.pods.claimOn(q).orElseThrow().standing()).isEqualTo(ClaimLedger.Standing.LOST);
        b.proxy.holdWatches();
        ClaimWriter direct = new ClaimWriter(cluster.client, java.time.Clock.systemUTC(), new ApiCallCounter());
        assertThat(direct.rollback(cluster.client.pods().inNamespace(TestCluster.NS).withName(q).get(), key.keyHash()))
                .isEqualTo(ClaimWriter.Rollback.ROLLED_BACK);
        cluster.client.pods().inNamespace(TestCluster.NS).withName(p).delete();
        claimListed(q, key);

        ClaimReads reads = new ClaimReads(b.pods, new ClaimWriter(b.client, java.time.Clock.systemUTC(), b.calls));
        CompletableFuture<List<Pod>> read = CompletableFuture.supplyAsync(
                () -> reads.claimed(null, Hashes.allocationId(TestCluster.NS, q)), threads);
        OperatorHarness.awaitTrue(() -> b.pods.awaited(q) || read.isDone(), Duration.ofSeconds(60),
                "the read waiting for B's watch");
        assertThat(read).as("listed the claim that stands while B's watch holds the lost one").isNotDone();
        b.proxy.releaseWatches();
        assertThat(read.get(30, TimeUnit.SECONDS)).extracting(ManagedPods::name).containsExactly(q);
    }

    /** A claim written directly, with the allocation id label kubectl's reads list by. */
    private void claimListed(String pod, AllocCommand key) {
        claimDirectly(pod, key);
        cluster.client.pods().inNamespace(TestCluster.NS).withName(pod).edit(p -> new PodBuilder(p).editMetadata()
                .addToLabels(PlaypenKeys.ALLOCATED, Hashes.allocationId(TestCluster.NS, pod)).endMetadata().build());
    }

    /** Read through a lagging replica right after an alloc elsewhere: the allocation is listed and renewable. */
    @Test
    void readsAndRenewalsThroughALaggingReplicaSeeAClaimJustMade() throws Exception {
        runners(0, 4);
        Replica a = replica(0);
        Replica b = replica(0);
        awaitSees(b, 4);
        b.proxy.holdWatches();
        String owner = Hashes.ownerHash("bob");
        AllocCommand key = cmd("read-right-after");
        Allocator.Allocation made = a.allocator.allocate(key, owner);

        ClaimReads reads = new ClaimReads(b.pods, new ClaimWriter(b.client, java.time.Clock.systemUTC(), b.calls));
        assertThat(reads.claimed(owner, null)).extracting(ManagedPods::name).containsExactly(name(made));
        String id = Hashes.allocationId(TestCluster.NS, name(made));
        assertThat(reads.claimed(owner, id)).extracting(ManagedPods::name).containsExactly(name(made));

        Renewer renewer = new Renewer(b.client, b.pods, new io.unboundedcloud.playpen.model.TtlPolicy(
                Duration.ofHours(1)), java.time.Clock.systemUTC(), b.calls);
        CompletableFuture<Renewer.Renewal> renewal = CompletableFuture.supplyAsync(
                () -> renewer.renew(key.keyHash(), Duration.ofHours(2)), threads);
        OperatorHarness.awaitTrue(() -> b.pods.awaited(name(made)) || renewal.isDone(), Duration.ofSeconds(60),
                "the renewal waiting for B's watch");
        assertThat(renewal).as("renewed a claim B's watch has not delivered").isNotDone();
        b.proxy.releaseWatches();
        assertThat(renewal.get(30, TimeUnit.SECONDS).pod().getMetadata().getName()).isEqualTo(name(made));
    }

    /**
     * Renewed through B right after the alloc through A, while B's watch lags by more than one of its waits' slices
     * (a second): the renewal lists the claim from the API server and waits for B's watch to deliver it, however
     * long that takes (up to its deadline); it is never a 404 for an allocation answered a moment ago.
     */
    @Test
    void aRenewalThroughAReplicaWhoseWatchLagsSecondsFindsAClaimJustMade() throws Exception {
        runners(0, 4);
        Replica a = replica(0);
        Replica b = replica(0);
        awaitSees(b, 4);
        b.proxy.holdWatches();
        AllocCommand key = cmd("renewed-while-lagging");
        String pod = name(a.allocator.allocate(key));

        Renewer renewer = new Renewer(b.client, b.pods, new io.unboundedcloud.playpen.model.TtlPolicy(
                Duration.ofHours(1)), java.time.Clock.systemUTC(), b.calls);
        CompletableFuture<Renewer.Renewal> renewal = CompletableFuture.supplyAsync(
                () -> renewer.renew(key.keyHash(), Duration.ofHours(2)), threads);
        OperatorHarness.awaitTrue(() -> b.pods.awaited(pod) || renewal.isDone(), Duration.ofSeconds(60),
                "B waiting for its watch");
        // B's watch stays behind for 3 s more
        assertThatThrownBy(() -> renewal.get(3, TimeUnit.SECONDS))
                .isInstanceOf(java.util.concurrent.TimeoutException.class);
        b.proxy.releaseWatches();
        assertThat(renewal.get(60, TimeUnit.SECONDS).pod().getMetadata().getName()).isEqualTo(pod);
    }

    /**
     * A claim made through A and written to since (a renewal, a settle, the kubelet's status: B's watch has that
     * later version), then released through A while B's watch lags. A renewal through B finds the claim standing in
     * its ledger and the pod gone from the API server: it must wait for its watch to deliver the delete, not read
     * the pod again and again until it does.
     */
    @Test
    void aRenewalThroughALaggingReplicaOfAClaimReleasedElsewhereWaitsForTheWatchWithoutPolling() throws Exception {
        runners(0, 4);
        Replica a = replica(0);
        Replica b = replica(0);
        awaitSees(b, 4);
        AllocCommand key = cmd("released-elsewhere");
        String pod = name(a.allocator.allocate(key));
        renewAfterAReleaseElsewhere(a, b, key, pod, ClaimLedger.Standing.WON);
    }

    /**
     * The same through a replica started after the claim (its ledger holds it undecided): the API server shows no
     * pod of the key to settle, and B waits for its watch to deliver the delete, without listing and reading the
     * key's pods again and again until it does.
     */
    @Test
    void aRenewalThroughAReplicaStartedSinceOfAClaimReleasedElsewhereWaitsForTheWatchWithoutPolling() throws Exception {
        runners(0, 4);
        Replica a = replica(0);
        AllocCommand key = cmd("released-elsewhere-undecided");
        String pod = name(a.allocator.allocate(key));
        Replica b = replica(0);
        awaitSees(b, 4);
        renewAfterAReleaseElsewhere(a, b, key, pod, ClaimLedger.Standing.UNKNOWN);
    }

    private void renewAfterAReleaseElsewhere(Replica a, Replica b, AllocCommand key, String pod,
            ClaimLedger.Standing onB) throws Exception {
        cluster.client.pods().inNamespace(TestCluster.NS).withName(pod).edit(p -> new PodBuilder(p).editMetadata()
                .addToAnnotations("example.com/touched", "yes").endMetadata().build());
        OperatorHarness.awaitTrue(() -> b.pods.get(pod)
                .map(p -> ManagedPods.annotations(p).containsKey("example.com/touched")).orElse(false)
                && b.pods.claimsOf(key.keyHash()).stream().anyMatch(c -> c.standing() == onB),
                Duration.ofSeconds(60), "B has the claim, " + onB + ", and the later write");
        b.proxy.holdWatches();
        assertThat(a.allocator.deallocate(key.keyHash())).extracting(ManagedPods::name).containsExactly(pod);

        Renewer renewer = new Renewer(b.client, b.pods, new io.unboundedcloud.playpen.model.TtlPolicy(
                Duration.ofHours(1)), java.time.Clock.systemUTC(), b.calls);
        java.util.function.LongSupplier reads = () -> b.calls.get(KubeApiCall.PODS_GET)
                + b.calls.get(KubeApiCall.PODS_LIST);
        long before = reads.getAsLong();
        CompletableFuture<Renewer.Renewal> renewal = CompletableFuture.supplyAsync(
                () -> renewer.renew(key.keyHash(), Duration.ofHours(2)), threads);
        OperatorHarness.awaitTrue(() -> b.pods.awaited(pod) || renewal.isDone() || reads.getAsLong() - before > 200,
                Duration.ofSeconds(60), "B waiting for its watch, or reading the pod over and over");
        assertThat(reads.getAsLong() - before).as("reads of the released pod while B's watch lags").isLessThan(200);
        assertThat(renewal).isNotDone();
        b.proxy.releaseWatches();
        assertThatThrownBy(() -> renewal.get(60, TimeUnit.SECONDS)).hasCauseInstanceOf(ApiException.class)
                .cause().satisfies(e -> assertThat(((ApiException) e).code()).isEqualTo(404));
    }

    /**
     * A claim the API server wrote whose answer was lost (a 500 after the write, and again on the client's own
     * retry, which meets its own claim): the request must not fail while the pod stays claimed for its key; it
     * learns what happened from a read and answers with that claim, or claims nothing.
     */
    @Test
    void aClaimWhoseAnswerIsLostIsAnsweredNotLeftClaimedBehindAnError() throws Exception {
        runners(0, 3);
        Replica a = replica(0);
        AllocCommand key = cmd("answer-lost");
        java.util.concurrent.atomic.AtomicInteger lost = new java.util.concurrent.atomic.AtomicInteger(2);
        cluster.failAfterWrite = k -> k.startsWith("PATCH /api/v1/namespaces/" + TestCluster.NS + "/pods/")
                && lost.getAndDecrement() > 0;
        Allocator.Allocation answer = a.allocator.allocate(key);
        assertThat(carrying(key)).extracting(ManagedPods::name).containsExactly(answer.pod().getMetadata().getName());
        assertThat(answer.replay()).as("the request's own claim, new: not a replay").isFalse();
    }

    /**
     * A claim the API server refused with a 500 before writing anything (and again on the client's own retry), and
     * every write to the pod after it too: the read-back finds the pod idle at the claim's version, but nothing
     * tells a refusal from a claim the API server may still commit, and the fence that would rule it out is refused
     * as well. The answer is a 503 that says to send the same request again; the request writes no more claims (on
     * this pod or the next), and no pod is left carrying the key.
     */
    @Test
    void aClaimRefusedWithA500WhoseFenceIsRefusedTooIsA503WithNoFurtherClaims() throws Exception {
        runners(0, 3);
        Replica a = replica(0);
        AllocCommand key = cmd("refused-before-write");
        java.util.function.Predicate<String> patches = k -> k.startsWith("PATCH /api/v1/namespaces/" + TestCluster.NS
                + "/pods/");
        java.util.concurrent.atomic.AtomicInteger claims = new java.util.concurrent.atomic.AtomicInteger();
        cluster.addRequestListener(new TestCluster.RequestListener() {
            @Override
            public void onRequest(String k) {
            }

            @Override
            public void onRequest(String k, java.util.function.Supplier<String> body) {
                if (patches.test(k) && body.get().contains(key.keyHash())) {
                    claims.incrementAndGet();
                }
            }
        });
        cluster.failBeforeWrite = patches;
        assertThatThrownBy(() -> a.allocator.allocate(key))
                .isInstanceOfSatisfying(ApiException.class, e -> {
                    assertThat(e.code()).isEqualTo(503);
                    assertThat(e.getMessage()).contains("same idempotency key");
                });
        assertThat(claims.get()).as("the claim and the client's one retry").isEqualTo(2);
        assertThat(carrying(key)).isEmpty();
    }
}
