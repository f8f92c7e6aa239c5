package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.model.PoolStatus;
import io.unboundedcloud.playpen.model.PoolTarget;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The pools as one replica sees them: the pools resource reads the cache as it is at that moment (a read right
 * after a change shows it), the metrics a snapshot at most a second old, so that the gauges of one scrape do not
 * each plan the pools again.
 */
class PoolStatusesTest {

    @Test
    void thePoolsResourceSeesEveryChangeTheMetricsASnapshotAtMostASecondOld() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
            OperatorConfig config = OperatorConfig.parse("--runner-amd64-count=2", "--runner-arm64-count=1");
            PodCache cache = cluster.syncedPodCache();
            try (PoolReconciler reconciler = new PoolReconciler(cluster.client, config, cache,
                    new PodTemplates(config, Map.of()), () -> false, new ApiCallCounter())) {
                PoolStatuses pools = new PoolStatuses(cache, reconciler, Clock.systemUTC());
                assertThat(pools.synced()).isTrue();
                try (PodCache cold = new PodCache(cluster.client, TestCluster.NS, p -> null)) {
                    assertThat(new PoolStatuses(cold, reconciler, Clock.systemUTC()).synced())
                            .as("a cache that has not listed yet cannot answer").isFalse();
                }
                PoolTarget amd64 = PoolTarget.runner("amd64");

                Map<PoolTarget, PoolStatus> first = pools.current();
                // configured pools in flag order, each as the cache shows it
                assertThat(List.copyOf(first.keySet())).startsWith(amd64, PoolTarget.runner("arm64"));
                assertThat(first.get(amd64).idle()).isEqualTo(1);
                assertThat(first.get(amd64).desired()).isEqualTo(2);
                // a second read within the second gets the same snapshot (a few tries: a pause of the JVM between
                // two reads could take the second)
                boolean same = false;
                for (int i = 0; i < 5 && !same; i++) {
                    Map<PoolTarget, PoolStatus> a = pools.current();
                    same = pools.current() == a;
                }
                assertThat(same).as("two reads within a second share a snapshot").isTrue();

                // reads of the pools resource while no pod changed do not plan every pod again each time
                // (at most one plan a second: a slow machine may take longer over the reads)
                pools.fresh();
                long plans = pools.plans();
                long start = System.nanoTime();
                for (int i = 0; i < 20; i++) {
                    assertThat(pools.fresh().get(amd64).idle()).isEqualTo(1);
                }
                long seconds = (System.nanoTime() - start) / 1_000_000_000L;
                assertThat(pools.plans()).as("plans for 20 reads of unchanged pods")
                        .isLessThanOrEqualTo(plans + 1 + seconds);

                cluster.create(TestCluster.readyRunner("amd64", 51821, "node-a"));
                OperatorHarness.awaitTrue(() -> cache.pods().size() == 2, Duration.ofSeconds(60), "the pod cached");
                assertThat(pools.fresh().get(amd64).idle()).as("the pools resource: now").isEqualTo(2);
                Map<PoolTarget, PoolStatus> snapshot = pools.current();
                assertThat(snapshot.get(amd64).idle()).as("the fresh read is the metrics' snapshot too").isEqualTo(2);

                cluster.client.pods().inNamespace(TestCluster.NS).withName("playpen-runner-amd64-51821").delete();
                OperatorHarness.awaitTrue(() -> cache.pods().size() == 1, Duration.ofSeconds(60), "the pod gone");
                // the snapshot is kept for a second, then planned again from the cache
                OperatorHarness.awaitTrue(() -> pools.current() != snapshot, Duration.ofSeconds(60),
                        "a new snapshot");
                assertThat(pools.current().get(amd64).idle()).isEqualTo(1);
            } finally {
                cache.close();
            }
        }
    }

    /**
     * The cache's store holds a new pod before its listeners hear of it (they run on their own thread, and may be
     * busy with an earlier event): a read of the pools resource once the cache shows the pod shows it too, rather
     * than a snapshot planned before it came. The listener here holds the listeners' thread on the first pod's
     * event until the end of the test.
     */
    @Test
    void aReadOfThePoolsOnceTheCacheShowsAPodShowsItWhileTheListenersAreBehind() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
            OperatorConfig config = OperatorConfig.parse("--runner-amd64-count=2", "--runner-arm64-count=1");
            CountDownLatch busy = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            PodCache cache = new PodCache(cluster.client, TestCluster.NS, p -> null);
            cache.addListener((change, pod) -> {
                if (busy.getCount() > 0) {
                    busy.countDown();
                    try {
                        release.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            });
            cache.start();
            try (PoolReconciler reconciler = new PoolReconciler(cluster.client, config, cache,
                    new PodTemplates(config, Map.of()), () -> false, new ApiCallCounter())) {
                OperatorHarness.awaitTrue(() -> busy.getCount() == 0 && cache.pods().size() == 1,
                        Duration.ofSeconds(60), "the first pod cached and its event being handled");
                PoolStatuses pools = new PoolStatuses(cache, reconciler, Clock.systemUTC());
                PoolTarget amd64 = PoolTarget.runner("amd64");
                assertThat(pools.fresh().get(amd64).idle()).isEqualTo(1);
                long before = cache.changes();

                cluster.create(TestCluster.readyRunner("amd64", 51821, "node-a"));
                OperatorHarness.awaitTrue(() -> cache.pods().size() == 2, Duration.ofSeconds(60), "the pod cached");
                assertThat(pools.fresh().get(amd64).idle()).as("the pools resource once the cache shows the pod")
                        .isEqualTo(2);
                assertThat(cache.changes()).as("the cache's change count once it shows the pod")
                        .isGreaterThan(before);
            } finally {
                release.countDown();
                cache.close();
            }
        }
    }
}
