package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.junit.jupiter.api.Test;

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
}
