package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** The allocator against scripted interleavings of the watch cache (one key on two pods). */
class AllocatorTest {

    /**
     * The watch applies an event to its store in steps (the pod's entry, then each index). A request for the same
     * key that reads between those steps must still see the claim and replay it, never claim a second pod.
     */
    @Test
    void aClaimHalfAppliedByTheWatchIsReplayedNotClaimedAgain() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                // the watch gets a client of its own: its thread is held below, the claims must not wait for it
                KubernetesClient watchClient = KubeClients.create(new ConfigBuilder()
                        .withMasterUrl(cluster.server.url("/")).withNamespace(TestCluster.NS).withTrustCerts(true).build())) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
            cluster.create(TestCluster.readyRunner("amd64", 51821, "node-a"));
            AllocCommand cmd = new AllocCommand(Hashes.keyHash("half-applied"), ResourceType.RUNNER, "",
                    TestCluster.wgKey(7), "amd64");
            Candidates candidates = new Candidates(Map.of());
            CountDownLatch watchMidEvent = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            Set<Thread> requestThreads = java.util.concurrent.ConcurrentHashMap.newKeySet();
            // the watch thread stops inside its store update for the claim: the pod's entry already shows it
            // claimed, the key-hash index does not list it yet (fabric8 updates the idle-kind index first)
            PodCache pods = new PodCache(watchClient, TestCluster.NS, pod -> {
                if (!requestThreads.contains(Thread.currentThread()) && cmd.keyHash().equals(ManagedPods.keyHash(pod))
                        && watchMidEvent.getCount() > 0) {
                    watchMidEvent.countDown();
                    await(release);
                }
                return candidates.idleKindKey(pod);
            });
            NodeCache nodes = new NodeCache(cluster.client);
            pods.start();
            nodes.start();
            try {
                Allocator allocator = new Allocator(pods, nodes,
                        new ClaimWriter(cluster.client, Clock.systemUTC(), new ApiCallCounter()), candidates, 1);
                OperatorHarness.awaitTrue(() -> pods.hasSynced() && nodes.hasSynced()
                        && nodes.externalIp("node-a").isPresent() && pods.idleOfKind("runner/amd64").size() == 2,
                        Duration.ofSeconds(60), "caches synced");

                Request first = new Request(allocator, cmd, requestThreads);
                assertThat(watchMidEvent.await(20, TimeUnit.SECONDS)).as("the claim's watch event arrived").isTrue();
                first.awaitDoneOrWaiting(null);
                Request second = new Request(allocator, cmd, requestThreads);
                second.awaitDoneOrWaiting(first);
                release.countDown();

                Allocator.Allocation a = first.result.get(20, TimeUnit.SECONDS);
                Allocator.Allocation b = second.result.get(20, TimeUnit.SECONDS);
                assertThat(a.replay()).isFalse();
                assertThat(b.pod().getMetadata().getName()).isEqualTo(a.pod().getMetadata().getName());
                assertThat(b.replay()).isTrue();
                assertThat(cluster.pods()).filteredOn(p -> cmd.keyHash().equals(ManagedPods.keyHash(p)))
                        .extracting(p -> p.getMetadata().getName()).containsExactly(a.pod().getMetadata().getName());
            } finally {
                release.countDown();
                pods.close();
                nodes.close();
            }
        }
    }

    /** One allocate call on its own thread. */
    private static final class Request {
        final CompletableFuture<Allocator.Allocation> result = new CompletableFuture<>();
        final Thread thread;

        Request(Allocator allocator, AllocCommand cmd, Set<Thread> requestThreads) {
            thread = new Thread(() -> {
                try {
                    result.complete(allocator.allocate(cmd));
                } catch (RuntimeException e) {
                    result.completeExceptionally(e);
                }
            }, "alloc-request");
            requestThreads.add(thread);
            thread.start();
        }

        /**
         * Done, or waiting for the watch store (which the scripted watch thread holds until released), or sharing
         * the outcome of {@code earlier} still under way (single-flight).
         */
        void awaitDoneOrWaiting(Request earlier) throws InterruptedException {
            OperatorHarness.awaitTrue(() -> result.isDone() || waitsForWatchStore(thread)
                    || earlier != null && !earlier.result.isDone() && thread.getState() == Thread.State.WAITING,
                    Duration.ofSeconds(20), "request done or waiting for the watch store");
        }
    }

    private static boolean waitsForWatchStore(Thread t) {
        java.lang.management.ThreadInfo info = java.lang.management.ManagementFactory.getThreadMXBean()
                .getThreadInfo(t.getId());
        return info != null && info.getThreadState() == Thread.State.BLOCKED && info.getLockName() != null
                && info.getLockName().contains("CacheImpl");
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
