package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.Replica;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * Replicas that see each other claiming take new claims from their own lanes (ReplicaLanes), so they do not write to
 * the same idle pods; a lane with nothing left falls back to the whole ring; and a same-key race between lanes still
 * ends with one claim standing and the other request answered with it.
 */
class ReplicaLanesAllocationTest {
    static final String NODE = "node-a";
    private TestCluster cluster;
    private final List<Replica> replicas = new ArrayList<>();
    private final ExecutorService threads = Executors.newCachedThreadPool();

    @BeforeEach
    void cluster() {
        cluster = TestCluster.start();
        cluster.addNode(NODE, "amd64", "203.0.113.10");
        for (int i = 0; i < 40; i++) {
            cluster.create(TestCluster.readyRunner("amd64", 51820 + i, NODE));
        }
    }

    @AfterEach
    void stop() {
        threads.shutdownNow();
        replicas.forEach(Replica::close);
        cluster.close();
    }

    private Replica replica(String identity) throws Exception {
        Replica r = new Replica(cluster, 0, identity).awaitReady(NODE);
        replicas.add(r);
        OperatorHarness.awaitTrue(() -> r.pods.pods().size() == 40, Duration.ofSeconds(20), "replica sees the pods");
        return r;
    }

    private static AllocCommand cmd(String key) {
        return new AllocCommand(Hashes.keyHash(key), ResourceType.RUNNER, "", io.unboundedcloud.playpen.support.TestCluster
                .wgKey(3), "amd64");
    }

    /** Each replica's first claim makes the other see it (and the claim records who wrote it). */
    private void meet(Replica a, Replica b) throws Exception {
        Allocator.Allocation fromA = a.allocator.allocate(cmd("hello-from-a"));
        Allocator.Allocation fromB = b.allocator.allocate(cmd("hello-from-b"));
        assertThat(ManagedPods.annotations(fromA.pod())).containsEntry(PlaypenKeys.CLAIMED_BY, a.lanes.self());
        assertThat(ManagedPods.annotations(fromB.pod())).containsEntry(PlaypenKeys.CLAIMED_BY, b.lanes.self());
        OperatorHarness.awaitTrue(() -> a.lanes.replicas() == 2 && b.lanes.replicas() == 2, Duration.ofSeconds(60),
                "replicas see each other");
    }

    @Test
    void replicasThatSeeEachOtherClaimFromTheirOwnLanesUntilTheLaneRunsOut() throws Exception {
        Replica a = replica("replica-a");
        Replica b = replica("replica-b");
        meet(a, b);
        int ownA = (int) a.pods.pods().stream().filter(p -> !ManagedPods.isClaimed(p))
                .filter(p -> a.lanes.mine(ManagedPods.name(p))).count();
        assertThat(ownA).isBetween(8, 30);
        // concurrently from both, as many as A's lane holds: every claim in its writer's lane
        List<CompletableFuture<Allocator.Allocation>> fromA = new ArrayList<>();
        List<CompletableFuture<Allocator.Allocation>> fromB = new ArrayList<>();
        int n = Math.min(ownA, 40 - 2 - ownA) - 1;
        for (int i = 0; i < n; i++) {
            AllocCommand ka = cmd("a-" + i);
            AllocCommand kb = cmd("b-" + i);
            fromA.add(CompletableFuture.supplyAsync(() -> a.allocator.allocate(ka), threads));
            fromB.add(CompletableFuture.supplyAsync(() -> b.allocator.allocate(kb), threads));
        }
        for (CompletableFuture<Allocator.Allocation> f : fromA) {
            String pod = ManagedPods.name(f.get(30, TimeUnit.SECONDS).pod());
            assertThat(a.lanes.mine(pod)).as("A claimed %s in its lane", pod).isTrue();
        }
        for (CompletableFuture<Allocator.Allocation> f : fromB) {
            String pod = ManagedPods.name(f.get(30, TimeUnit.SECONDS).pod());
            assertThat(b.lanes.mine(pod)).as("B claimed %s in its lane", pod).isTrue();
        }
        // A's lane first until it is spent; then A still allocates, from B's lane
        OperatorHarness.awaitTrue(() -> a.pods.pods().stream().filter(ManagedPods::isClaimed).count() == 2 + 2L * n,
                Duration.ofSeconds(60), "A sees every claim");
        long left = a.pods.pods().stream().filter(p -> !ManagedPods.isClaimed(p))
                .filter(p -> a.lanes.mine(ManagedPods.name(p))).count();
        for (int i = 0; i < left; i++) {
            String pod = ManagedPods.name(a.allocator.allocate(cmd("a-rest-" + i)).pod());
            assertThat(a.lanes.mine(pod)).as("A's lane is not spent yet: %s", pod).isTrue();
        }
        String beyond = ManagedPods.name(a.allocator.allocate(cmd("a-beyond")).pod());
        assertThat(a.lanes.mine(beyond)).as("A's lane is spent: %s", beyond).isFalse();
        // every claim stands once, each on its own pod
        List<Pod> claimed = cluster.pods().stream().filter(ManagedPods::isClaimed).toList();
        assertThat(claimed.stream().map(ManagedPods::keyHash).distinct().count()).isEqualTo(claimed.size());
    }

    /**
     * The same key through both replicas while B's watch lags: B claims in its own lane, its claim loses to A's
     * earlier one, is rolled back, and B answers with A's pod, a replay.
     */
    @Test
    void aSameKeyRaceAcrossLanesStillEndsWithOneClaimAndAReplay() throws Exception {
        Replica a = replica("replica-a");
        Replica b = replica("replica-b");
        meet(a, b);
        AllocCommand key = cmd("raced");
        b.proxy.holdWatches();
        Allocator.Allocation first = a.allocator.allocate(key);
        assertThat(a.lanes.mine(ManagedPods.name(first.pod()))).isTrue();
        CompletableFuture<Allocator.Allocation> second = CompletableFuture.supplyAsync(() -> b.allocator.allocate(key),
                threads);
        // B's claim is written before its watch may show A's: released earlier (a pause can end first on a loaded
        // machine), B would find A's claim and write none, and there would be nothing to roll back
        OperatorHarness.awaitTrue(() -> cluster.pods().stream().filter(p -> key.keyHash().equals(ManagedPods.keyHash(p)))
                .count() == 2, Duration.ofSeconds(60), "B's claim written");
        b.proxy.releaseWatches();
        Allocator.Allocation answer = second.get(30, TimeUnit.SECONDS);
        assertThat(ManagedPods.name(answer.pod())).isEqualTo(ManagedPods.name(first.pod()));
        assertThat(answer.replay()).isTrue();
        OperatorHarness.awaitTrue(() -> cluster.pods().stream().filter(p -> key.keyHash().equals(ManagedPods.keyHash(p)))
                .count() == 1, Duration.ofSeconds(60), "the losing claim undone");
        assertThat(b.allocator.rollbacks()).isEqualTo(1);
    }
}
