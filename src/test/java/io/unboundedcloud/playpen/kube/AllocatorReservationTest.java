package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The pod cache keeps each kind's consistent-hash ring sorted as pods come and go, and two requests of one
 * replica never write to the same pod at once (the second waits for the first's attempt instead of colliding).
 */
class AllocatorReservationTest {
    private static final String KIND = "runner/amd64";

    @Test
    void twoRequestsWhoseWalksStartAtOnePodNeverBothWriteToIt() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            for (int i = 0; i < 4; i++) {
                cluster.create(TestCluster.readyRunner("amd64", 51820 + i, "node-a"));
            }
            Candidates candidates = new Candidates(Map.of());
            PodCache pods = new PodCache(cluster.client, TestCluster.NS, candidates::kindKey);
            NodeCache nodes = new NodeCache(cluster.client);
            pods.start();
            nodes.start();
            try {
                Allocator allocator = new Allocator(pods, nodes,
                        new ClaimWriter(cluster.client, Clock.systemUTC(), new ApiCallCounter()), candidates, 1);
                OperatorHarness.awaitTrue(() -> pods.hasSynced() && nodes.hasSynced()
                        && nodes.externalIp("node-a").isPresent() && pods.ringSize(KIND) == 4, Duration.ofSeconds(60),
                        "caches synced");
                // two keys whose ring walks start at the same pod
                AllocCommand a = cmd("first-key");
                String target = firstOnRing(pods, a);
                AllocCommand b = null;
                for (int k = 0; b == null; k++) {
                    AllocCommand c = cmd("other-key-" + k);
                    if (firstOnRing(pods, c).equals(target)) {
                        b = c;
                    }
                }
                String patchTarget = "PATCH /api/v1/namespaces/" + TestCluster.NS + "/pods/" + target;
                CountDownLatch held = new CountDownLatch(1);
                CountDownLatch release = new CountDownLatch(1);
                // the API server holds the first claim on the target until released
                cluster.addRequestListener(key -> {
                    if (key.equals(patchTarget) && held.getCount() > 0) {
                        held.countDown();
                        await(release);
                    }
                });
                CompletableFuture<Allocator.Allocation> ra = CompletableFuture.supplyAsync(() -> allocator.allocate(a));
                assertThat(held.await(60, TimeUnit.SECONDS)).as("first claim reached the API").isTrue();
                AllocCommand second = b;
                CompletableFuture<Allocator.Allocation> rb = CompletableFuture.supplyAsync(() -> allocator.allocate(second));
                OperatorHarness.awaitTrue(() -> allocator.reservationWaits() == 1, Duration.ofSeconds(60),
                        "the second request waits for the first one's attempt");
                release.countDown();

                Allocator.Allocation got = ra.get(20, TimeUnit.SECONDS);
                Allocator.Allocation other = rb.get(20, TimeUnit.SECONDS);
                assertThat(got.pod().getMetadata().getName()).isEqualTo(target);
                assertThat(other.pod().getMetadata().getName()).isNotEqualTo(target);
                assertThat(other.replay()).isFalse();
                // one write to the contended pod, and no 409 followed by a fresh read anywhere
                assertThat(cluster.requestCount(patchTarget::equals)).isEqualTo(1);
                assertThat(cluster.requestSnapshot().entrySet().stream()
                        .filter(e -> e.getKey().startsWith("PATCH ")).mapToInt(Map.Entry::getValue).sum()).isEqualTo(2);
                assertThat(cluster.requestSnapshot().keySet()).noneMatch(k -> k.startsWith("GET /api/v1/namespaces/"
                        + TestCluster.NS + "/pods/"));
            } finally {
                pods.close();
                nodes.close();
            }
        }
    }

    @Test
    void theRingFollowsTheWatchStoreAndKeepsClaimedPodsInPlace() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            for (int i = 0; i < 6; i++) {
                cluster.create(TestCluster.readyRunner("amd64", 51820 + i, "node-a"));
            }
            cluster.create(TestCluster.readyRunner("arm64", 51900, "node-a"));
            Candidates candidates = new Candidates(Map.of());
            PodCache pods = new PodCache(cluster.client, TestCluster.NS, candidates::kindKey);
            pods.start();
            try {
                OperatorHarness.awaitTrue(() -> pods.hasSynced() && pods.ringSize(KIND) == 6, Duration.ofSeconds(60),
                        "ring filled");
                assertThat(pods.ringSize("runner/arm64")).isEqualTo(1);
                AllocCommand c = cmd("ring-order");
                // the ring walk from the key is exactly the selection's order over the same pods
                List<String> walked = names(pods.ring(KIND, Hashes.seed(c.keyHash())));
                List<String> selected = candidates.select(c, pods.pods(), n -> java.util.Optional.of("203.0.113.10"))
                        .ordered().stream().map(u -> u.pod().getMetadata().getName()).toList();
                assertThat(walked).isEqualTo(selected);

                // a claimed pod keeps its place (a walk must meet a claim made for its key meanwhile); a deleted one goes
                Pod claimed = cluster.pods().stream().filter(p -> p.getMetadata().getName().equals(walked.get(0)))
                        .findFirst().orElseThrow();
                new ClaimWriter(cluster.client, Clock.systemUTC(), new ApiCallCounter()).claim(claimed,
                        claimed.getMetadata().getResourceVersion(), c);
                OperatorHarness.awaitTrue(() -> pods.get(walked.get(0)).map(ManagedPods::isClaimed).orElse(false),
                        Duration.ofSeconds(60), "claim seen by the watch");
                assertThat(names(pods.ring(KIND, Hashes.seed(c.keyHash())))).isEqualTo(walked);
                cluster.client.pods().inNamespace(TestCluster.NS).withName(walked.get(1)).delete();
                OperatorHarness.awaitTrue(() -> pods.ringSize(KIND) == 5, Duration.ofSeconds(60), "delete seen");
                List<String> rest = new ArrayList<>(walked);
                rest.remove(1);
                assertThat(names(pods.ring(KIND, Hashes.seed(c.keyHash())))).isEqualTo(rest);
            } finally {
                pods.close();
            }
        }
    }

    /**
     * Two replicas (own caches, own allocators) walk one key the same way: the key's first stop is taken by another
     * key, so the walk jumps to its next probe, and the second replica, asked the same key afterwards, replays
     * the first one's claim instead of claiming a second pod.
     */
    @Test
    void twoReplicasWalkOneKeyTheSameWayPastAnotherKeysClaim() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            for (int i = 0; i < 8; i++) {
                cluster.create(TestCluster.readyRunner("amd64", 51820 + i, "node-a"));
            }
            Candidates candidates = new Candidates(Map.of());
            PodCache pods1 = new PodCache(cluster.client, TestCluster.NS, candidates::kindKey);
            PodCache pods2 = new PodCache(cluster.client, TestCluster.NS, candidates::kindKey);
            NodeCache nodes1 = new NodeCache(cluster.client);
            NodeCache nodes2 = new NodeCache(cluster.client);
            List<AutoCloseable> all = List.of(pods1, pods2, nodes1, nodes2);
            pods1.start();
            pods2.start();
            nodes1.start();
            nodes2.start();
            try {
                Allocator replica1 = new Allocator(pods1, nodes1,
                        new ClaimWriter(cluster.client, Clock.systemUTC(), new ApiCallCounter()), candidates, 1);
                Allocator replica2 = new Allocator(pods2, nodes2,
                        new ClaimWriter(cluster.client, Clock.systemUTC(), new ApiCallCounter()), candidates, 1);
                OperatorHarness.awaitTrue(() -> pods1.hasSynced() && pods2.hasSynced() && nodes1.hasSynced()
                        && nodes2.hasSynced() && pods1.ringSize(KIND) == 8 && pods2.ringSize(KIND) == 8
                        && nodes1.externalIp("node-a").isPresent() && nodes2.externalIp("node-a").isPresent(),
                        Duration.ofSeconds(60), "both replicas synced");
                AllocCommand other = cmd("someone-else");
                String taken = firstOnRing(pods1, other);
                AllocCommand key = null;
                for (int k = 0; key == null; k++) {
                    AllocCommand c = cmd("shared-key-" + k);
                    if (firstOnRing(pods1, c).equals(taken)) {
                        key = c;
                    }
                }
                assertThat(replica2.allocate(other).pod().getMetadata().getName()).isEqualTo(taken);
                OperatorHarness.awaitTrue(() -> pods1.get(taken).map(ManagedPods::isClaimed).orElse(false),
                        Duration.ofSeconds(60), "replica 1 sees the other key's claim");

                OperatorHarness.awaitTrue(() -> pods2.get(taken).map(ManagedPods::isClaimed).orElse(false),
                        Duration.ofSeconds(60), "replica 2 sees the other key's claim");
                // both replicas' walks for the key pass the taken pod the same way (next probe) and stop at one pod
                String next1 = replica1.firstCandidate(key).orElseThrow().pod().getMetadata().getName();
                String next2 = replica2.firstCandidate(key).orElseThrow().pod().getMetadata().getName();
                assertThat(next1).isEqualTo(next2).isNotEqualTo(taken);

                Allocator.Allocation first = replica1.allocate(key);
                assertThat(first.replay()).isFalse();
                assertThat(first.pod().getMetadata().getName()).isEqualTo(next1);
                AllocCommand same = key;
                OperatorHarness.awaitTrue(() -> pods2.get(first.pod().getMetadata().getName())
                        .map(ManagedPods::isClaimed).orElse(false), Duration.ofSeconds(60), "replica 2 sees the claim");
                Allocator.Allocation second = replica2.allocate(same);
                assertThat(second.replay()).isTrue();
                assertThat(second.pod().getMetadata().getName()).isEqualTo(first.pod().getMetadata().getName());
                assertThat(cluster.pods()).filteredOn(p -> same.keyHash().equals(ManagedPods.keyHash(p))).hasSize(1);
            } finally {
                for (AutoCloseable c : all) {
                    c.close();
                }
            }
        }
    }

    private static AllocCommand cmd(String key) {
        return new AllocCommand(Hashes.keyHash(key), ResourceType.RUNNER, "", TestCluster.wgKey(3), "amd64");
    }

    private static String firstOnRing(PodCache pods, AllocCommand c) {
        return pods.ring(KIND, Hashes.seed(c.keyHash())).next();
    }

    private static List<String> names(Iterator<String> it) {
        List<String> out = new ArrayList<>();
        it.forEachRemaining(out::add);
        return out;
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
