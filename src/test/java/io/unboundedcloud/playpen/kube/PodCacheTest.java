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
import io.unboundedcloud.playpen.support.LagProxy;
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
                OperatorHarness.awaitTrue(() -> added.size() == 2, Duration.ofSeconds(60), "both listed pods added");
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
     * The listeners hear of the initial list's pods after the store holds them, on their own thread: they have not
     * caught up until they have heard of every one (a pool pass counting pods its tally has not heard of yet would
     * create pods for them), and from then on they count as caught up.
     */
    @Test
    void listenersCatchUpOnceTheyHaveHeardOfEveryListedPod() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            for (int i = 0; i < 3; i++) {
                cluster.create(TestCluster.readyRunner("amd64", 51820 + i, "node-a"));
            }
            PodCache pods = new PodCache(cluster.client, TestCluster.NS, p -> null);
            CountDownLatch hold = new CountDownLatch(1);
            Set<String> heard = ConcurrentHashMap.newKeySet();
            pods.addListener((change, pod) -> {
                try {
                    hold.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                heard.add(pod.getMetadata().getName());
            });
            pods.start();
            try {
                OperatorHarness.awaitTrue(() -> pods.pods().size() == 3 && pods.hasSynced(), Duration.ofSeconds(60),
                        "the store holds the list");
                assertThat(pods.listenersCaughtUp()).as("caught up while the listener has heard of no pod").isFalse();
                hold.countDown();
                OperatorHarness.awaitTrue(pods::listenersCaughtUp, Duration.ofSeconds(60), "the listener caught up");
                assertThat(heard).hasSize(3);
                cluster.client.pods().inNamespace(TestCluster.NS).withName("playpen-runner-amd64-51820").delete();
                OperatorHarness.awaitTrue(() -> pods.pods().size() == 2, Duration.ofSeconds(60), "the delete applied");
                assertThat(pods.listenersCaughtUp()).as("still caught up").isTrue();
            } finally {
                pods.close();
            }
        }
    }

    /**
     * The cache holds pods slim (SlimPods): what the operator reads and nothing else, whether a pod came from the
     * watch's LIST (in pages), from a watch event or from this process's own write; its listeners see the same.
     */
    @Test
    void theCacheKeepsPodsSlimFromTheListTheWatchAndOwnWrites() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            int listed = (int) PodCache.LIST_PAGE + 3; // more than one page of the LIST
            for (int i = 0; i < listed; i++) {
                cluster.create(withUnreadFields(TestCluster.readyRunner("amd64", 20000 + i, "node-a")));
            }
            PodCache pods = new PodCache(cluster.client, TestCluster.NS, p -> "runner/amd64");
            Set<String> fatSeen = ConcurrentHashMap.newKeySet();
            pods.addListener((change, pod) -> {
                if (!pod.getSpec().getVolumes().isEmpty()) {
                    fatSeen.add(pod.getMetadata().getName());
                }
            });
            pods.start();
            try {
                OperatorHarness.awaitTrue(() -> pods.pods().size() == listed, Duration.ofSeconds(30), "all listed");
                Pod watched = cluster.create(withUnreadFields(TestCluster.readyRunner("amd64", 29999, "node-a")));
                OperatorHarness.awaitTrue(() -> pods.get(watched.getMetadata().getName()).isPresent(),
                        Duration.ofSeconds(60), "the watch delivers the new pod");
                assertThat(cluster.client.pods().inNamespace(TestCluster.NS).withName(watched.getMetadata().getName())
                        .get().getSpec().getVolumes()).as("the API server keeps it all").isNotEmpty();
                Pod written = new PodBuilder(watched).editMetadata().withResourceVersion("999999").endMetadata().build();
                pods.observe(written);
                assertThat(pods.get(watched.getMetadata().getName()).orElseThrow().getMetadata().getResourceVersion())
                        .isEqualTo("999999");
                for (Pod p : pods.pods()) {
                    assertThat(p.getSpec().getVolumes()).as(p.getMetadata().getName()).isEmpty();
                    assertThat(p.getSpec().getContainers().get(0).getEnv()).isEmpty();
                    assertThat(p.getMetadata().getManagedFields()).isEmpty();
                    assertThat(p.getSpec().getContainers().get(0).getPorts()).isNotEmpty();
                    assertThat(p.getStatus().getContainerStatuses()).isNotEmpty();
                }
                assertThat(fatSeen).as("listeners get the slim pods too").isEmpty();
            } finally {
                pods.close();
            }
        }
    }

    /** A pod with what the API server adds and the operator never reads. */
    static PodBuilder withUnreadFields(PodBuilder b) {
        return b.editMetadata().addNewManagedField().withManager("kubelet").withOperation("Update").endManagedField()
                .endMetadata().editSpec().addNewVolume().withName("kube-api-access").withNewEmptyDir().endEmptyDir()
                .endVolume().editFirstContainer().addNewEnv().withName("POD_NAME").withValue("x").endEnv().endContainer()
                .endSpec();
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
                OperatorHarness.awaitTrue(() -> pods.pods().size() == 2, Duration.ofSeconds(60), "both pods cached");
                // the event handler stalls on an unrelated update, so the old pod's delete event queues behind it
                cluster.client.pods().inNamespace(TestCluster.NS).withName("playpen-runner-amd64-51821")
                        .edit(p -> new PodBuilder(p).editMetadata().addToLabels("touched", "yes").endMetadata().build());
                assertThat(handlerStalled.await(20, TimeUnit.SECONDS)).isTrue();
                cluster.client.pods().inNamespace(TestCluster.NS).withName(name).delete();
                OperatorHarness.awaitTrue(() -> pods.get(name).isEmpty(), Duration.ofSeconds(60), "old pod gone from the store");
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

    /**
     * The quota's count of an owner's claims comes from an index (no scan of every pod): it sees this process's own
     * claim at once (the overlay), the watch's version after, another owner's claims never, and a pod whose claim was
     * released no more.
     */
    @Test
    void ownerIndexFollowsClaimsFromTheOverlayAndTheWatch() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            Pod a = cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
            Pod b = cluster.create(TestCluster.readyRunner("amd64", 51821, "node-a"));
            cluster.create(TestCluster.readyRunner("amd64", 51822, "node-a"));
            PodCache pods = new PodCache(cluster.client, TestCluster.NS, p -> null);
            pods.start();
            try {
                OperatorHarness.awaitTrue(() -> pods.pods().size() == 3, Duration.ofSeconds(60), "three pods cached");
                String alice = Hashes.ownerHash("alice");
                String bob = Hashes.ownerHash("bob");
                assertThat(pods.byOwnerHash(alice)).isEmpty();
                // this process's claim of a, known before the watch has delivered it
                Pod claimedA = new PodBuilder(a).editMetadata()
                        .withResourceVersion(String.valueOf(Long.parseLong(a.getMetadata().getResourceVersion()) + 1000))
                        .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, Hashes.keyHash("k-a"))
                        .addToAnnotations(PlaypenKeys.OWNER_HASH, alice).endMetadata().build();
                pods.observe(claimedA);
                assertThat(pods.byOwnerHash(alice)).extracting(p -> p.getMetadata().getName())
                        .containsExactly(a.getMetadata().getName());
                // another replica's claims reach it through the watch
                cluster.client.pods().inNamespace(TestCluster.NS).withName(b.getMetadata().getName())
                        .edit(p -> new PodBuilder(p).editMetadata()
                                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, Hashes.keyHash("k-b"))
                                .addToAnnotations(PlaypenKeys.OWNER_HASH, alice).endMetadata().build());
                Pod c = cluster.pods().stream().filter(p -> p.getMetadata().getName().endsWith("51822")).findFirst()
                        .orElseThrow();
                cluster.client.pods().inNamespace(TestCluster.NS).withName(c.getMetadata().getName())
                        .edit(p -> new PodBuilder(p).editMetadata()
                                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, Hashes.keyHash("k-c"))
                                .addToAnnotations(PlaypenKeys.OWNER_HASH, bob).endMetadata().build());
                OperatorHarness.awaitTrue(() -> pods.byOwnerHash(alice).size() == 2 && pods.byOwnerHash(bob).size() == 1,
                        Duration.ofSeconds(60), "the watched claims indexed by owner");
                assertThat(pods.byOwnerHash(bob)).extracting(p -> p.getMetadata().getName())
                        .containsExactly(c.getMetadata().getName());
                // b's claim released (its owner annotation gone): alice holds one less
                cluster.client.pods().inNamespace(TestCluster.NS).withName(b.getMetadata().getName())
                        .edit(p -> new PodBuilder(p).editMetadata().removeFromAnnotations(PlaypenKeys.OWNER_HASH)
                                .removeFromAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH).endMetadata().build());
                OperatorHarness.awaitTrue(() -> pods.byOwnerHash(alice).size() == 1, Duration.ofSeconds(60),
                        "the released pod left the owner's index");
                assertThat(pods.byOwnerHash(alice)).extracting(p -> p.getMetadata().getName())
                        .containsExactly(a.getMetadata().getName());
            } finally {
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
                        Duration.ofSeconds(60), "the first LIST was refused");
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

    /**
     * The first LIST times out (the API server answers later than the client's request timeout, as an overloaded one
     * does at a replica's start): the cache retries it and syncs once the API server is quick again.
     */
    @Test
    void aFirstListThatTimesOutIsRetriedUntilTheCacheSyncs() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                LagProxy lag = new LagProxy(java.net.URI.create(cluster.server.url("/")));
                io.fabric8.kubernetes.client.KubernetesClient viaLag = KubeClients.create(
                        new io.fabric8.kubernetes.client.ConfigBuilder().withMasterUrl(lag.url().toString())
                                .withNamespace(TestCluster.NS).withTrustCerts(true).withRequestTimeout(1000).build())) {
            cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
            lag.delay(Duration.ofSeconds(3)); // each way: the answer comes long after the client's 1 s timeout
            PodCache pods = new PodCache(viaLag, TestCluster.NS, p -> null);
            pods.start();
            try {
                OperatorHarness.awaitTrue(() -> cluster.requestCount(k -> k.startsWith(
                        "GET /api/v1/namespaces/playpen/pods")) >= 1, Duration.ofSeconds(60),
                        "the first LIST reached the API server, 3 s after it was sent");
                assertThat(pods.isWatching()).as("synced although the LIST timed out").isFalse();
                lag.delay(Duration.ZERO);
                OperatorHarness.awaitTrue(pods::isWatching, Duration.ofSeconds(60),
                        "pod cache synced once the API server answered in time");
                assertThat(pods.get("playpen-runner-amd64-51820")).isPresent();
            } finally {
                pods.close();
            }
        }
    }
}
