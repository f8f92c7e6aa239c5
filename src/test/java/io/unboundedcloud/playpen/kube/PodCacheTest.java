package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** The watch cache's listener contract: every pod, including those listed at start, reaches every listener. */
class PodCacheTest {

    @Test
    void listenersSeeThePodsThatExistedBeforeStartAndCannotBeAddedLater() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
            cluster.create(TestCluster.readyRunner("amd64", 51821, "node-a"));
            PodCache pods = new PodCache(cluster.client, TestCluster.NS, p -> null);
            Set<String> added = ConcurrentHashMap.newKeySet();
            pods.addListener((change, pod) -> {
                if (change == PodCache.Change.ADDED) {
                    added.add(pod.getMetadata().getName());
                }
            });
            pods.start();
            try {
                OperatorHarness.awaitTrue(() -> added.size() == 2, Duration.ofSeconds(10), "both listed pods added");
                assertThat(added).containsExactlyInAnyOrder("playpen-runner-amd64-51820", "playpen-runner-amd64-51821");
                // a listener added now would never hear of those two: refused rather than silently incomplete
                assertThatThrownBy(() -> pods.addListener((change, pod) -> { }))
                        .isInstanceOf(IllegalStateException.class).hasMessageContaining("before start()");
            } finally {
                pods.close();
            }
        }
    }

    /**
     * The pool reuses pod names: a claim of the new pod, known to this process before the watch has even delivered
     * the old pod's delete, must survive that delete event (else the next same-key request claims a second pod).
     */
    @Test
    void theOldPodsDeleteEventKeepsOurClaimOfTheNewPodWithTheSameName() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            String name = "playpen-runner-amd64-51820";
            Pod old = cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
            cluster.create(TestCluster.readyRunner("amd64", 51821, "node-a"));
            CountDownLatch handlerStalled = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            CountDownLatch deleteHandled = new CountDownLatch(1);
            PodCache pods = new PodCache(cluster.client, TestCluster.NS, p -> null);
            pods.addListener((change, pod) -> {
                if (change == PodCache.Change.UPDATED && pod.getMetadata().getName().endsWith("51821")) {
                    handlerStalled.countDown();
                    try {
                        release.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                } else if (change == PodCache.Change.DELETED && pod.getMetadata().getName().equals(name)) {
                    deleteHandled.countDown();
                }
            });
            pods.start();
            try {
                OperatorHarness.awaitTrue(() -> pods.pods().size() == 2, Duration.ofSeconds(10), "both pods cached");
                // the event handler stalls on an unrelated update, so the old pod's delete event queues behind it
                cluster.client.pods().inNamespace(TestCluster.NS).withName("playpen-runner-amd64-51821")
                        .edit(p -> new PodBuilder(p).editMetadata().addToLabels("touched", "yes").endMetadata().build());
                assertThat(handlerStalled.await(20, TimeUnit.SECONDS)).isTrue();
                cluster.client.pods().inNamespace(TestCluster.NS).withName(name).delete();
                OperatorHarness.awaitTrue(() -> pods.get(name).isEmpty(), Duration.ofSeconds(10), "old pod gone from the store");
                // this process claims the pool's new pod of that name (a newer resourceVersion)
                String keyHash = Hashes.keyHash("reused-name");
                Pod claimedNew = new PodBuilder(old).editMetadata().withUid("new-uid")
                        .withResourceVersion(String.valueOf(Long.parseLong(old.getMetadata().getResourceVersion()) + 1000))
                        .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, keyHash).endMetadata().build();
                pods.observe(claimedNew);
                assertThat(pods.byKeyHash(keyHash)).hasSize(1);

                release.countDown();
                assertThat(deleteHandled.await(20, TimeUnit.SECONDS)).isTrue();
                assertThat(pods.byKeyHash(keyHash)).extracting(p -> p.getMetadata().getUid()).containsExactly("new-uid");
            } finally {
                release.countDown();
                pods.close();
            }
        }
    }

    @Test
    void aFailedFirstListIsRetriedUntilTheCacheSyncs() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
            // the API server refuses the informer's first LIST and WATCH (overload, RBAC not applied yet...)
            cluster.forbidden = key -> key.startsWith("GET /api/v1/namespaces/playpen/pods")
                    || key.startsWith("GET WATCH /api/v1/namespaces/playpen/pods");
            PodCache pods = new PodCache(cluster.client, TestCluster.NS, p -> null);
            pods.start();
            try {
                OperatorHarness.awaitTrue(() -> cluster.requestCount(k -> k.startsWith("GET /api/v1/namespaces/playpen/pods")) >= 1,
                        Duration.ofSeconds(10), "the first LIST was refused");
                assertThat(pods.isWatching()).isFalse();
                cluster.forbidden = key -> false;
                // fabric8's default gives up for good after a failed first LIST; the cache must recover by itself
                OperatorHarness.awaitTrue(pods::isWatching, Duration.ofSeconds(30), "pod cache synced after the refusal ended");
                assertThat(pods.get("playpen-runner-amd64-51820")).isPresent();
            } finally {
                pods.close();
            }
        }
    }
}
