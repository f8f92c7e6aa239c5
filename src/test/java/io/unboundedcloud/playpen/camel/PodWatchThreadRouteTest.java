package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The operator's pod cache lists and watches through a client of its own, whose I/O thread applies each watch
 * event to the cache (KubeClients.forWatch): a request waiting for a pod's next version is released from that
 * thread, with no hand-off to a thread of the client's pool first (fabric8's default, a thread wake-up per event
 * in every replica).
 */
class PodWatchThreadRouteTest {
    @Test
    void watchEventsReachThePodCacheOnTheIoThreadThatReadThem() throws Exception {
        try (TestCluster cluster = TestCluster.start(); OperatorHarness op = new OperatorHarness(cluster)) {
            String name = "playpen-runner-amd64-51820";
            cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
            op.awaitCache(pods -> pods.size() == 1);
            AtomicReference<String> appliedOn = new AtomicReference<>();
            CompletableFuture<Void> applied = op.app.podCache().awaitChange(name)
                    .thenRun(() -> appliedOn.set(Thread.currentThread().getName()));
            cluster.client.pods().inNamespace(TestCluster.NS).withName(name)
                    .edit(p -> new PodBuilder(p).editMetadata().addToLabels("touched", "yes").endMetadata().build());
            applied.get(60, TimeUnit.SECONDS);
            assertThat(appliedOn.get()).as("the thread that applied the watch event").startsWith("vert.x-eventloop-thread-");
        }
    }
}
