package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.unboundedcloud.playpen.chaos.ChaosProxy;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.kube.KubeClients;
import io.unboundedcloud.playpen.kube.WatchContinuity;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The informers end their watches every 5 to 10 minutes and open new ones; the replica must stay ready meanwhile
 * (before, /readyz answered 503 for the second or so a new watch took on a loaded machine, and the dev playground's
 * stand-in dropped the replica). Here every watch is cut at once through a proxy in front of the API server, and
 * readiness is sampled until the informers are watching again.
 */
class ReadinessAcrossRewatchRouteTest {
    @Test
    void reopeningTheWatchesDoesNotMakeTheReplicaNotReady() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                ChaosProxy proxy = new ChaosProxy(URI.create(cluster.server.url("/")), 1);
                KubernetesClient client = KubeClients.create(new ConfigBuilder().withMasterUrl(proxy.url().toString())
                        .withNamespace(TestCluster.NS).withTrustCerts(true).build());
                OperatorApp app = OperatorHarness.startOnFreePort(port -> new OperatorApp(OperatorConfig.parse(
                        "--listen-addr=127.0.0.1:" + port, "--leader-elect=false", "--management-addr=",
                        "--runner-amd64-count=0", "--runner-arm64-count=0"), client, Clock.systemUTC(), Map.of())).app()) {
            OperatorHarness.awaitTrue(app::ready, Duration.ofSeconds(60), "ready");
            OperatorHarness.awaitTrue(() -> app.podCache().isWatching() && app.nodeCache().isWatching(),
                    Duration.ofSeconds(60), "watching");
            for (int round = 0; round < 3; round++) {
                assertThat(proxy.closeWatches()).as("watches cut").isPositive();
                long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
                boolean sawGap = false;
                while (System.nanoTime() < deadline) {
                    boolean watching = app.podCache().isWatching() && app.nodeCache().isWatching();
                    sawGap |= !watching;
                    assertThat(app.ready()).as("ready while the watches reopen (round %d)", round).isTrue();
                    if (sawGap && watching) {
                        break;
                    }
                    Thread.sleep(1);
                }
                assertThat(sawGap).as("the cut was seen as a gap in the watches").isTrue();
                OperatorHarness.awaitTrue(() -> app.podCache().isWatching() && app.nodeCache().isWatching(),
                        Duration.ofSeconds(60), "watching again");
            }
        }
    }

    /**
     * Watches that stay down (every connection to the API server reset) keep the replica ready for the grace, then
     * make it not ready, saying that the watches have been down and what to check; once they are back it is ready
     * again. The grace is timed on a clock the test moves, not waited out.
     */
    @Test
    void watchesDownForLongerThanTheGraceMakeTheReplicaNotReadyAndSaySo() throws Exception {
        java.util.concurrent.atomic.AtomicLong nanos = new java.util.concurrent.atomic.AtomicLong();
        try (TestCluster cluster = TestCluster.start();
                ChaosProxy proxy = new ChaosProxy(URI.create(cluster.server.url("/")), 1);
                KubernetesClient client = KubeClients.create(new ConfigBuilder().withMasterUrl(proxy.url().toString())
                        .withNamespace(TestCluster.NS).withTrustCerts(true).build());
                OperatorApp app = OperatorHarness.startOnFreePort(port -> {
                    OperatorApp made = new OperatorApp(OperatorConfig.parse("--listen-addr=127.0.0.1:" + port,
                            "--leader-elect=false", "--management-addr=", "--runner-amd64-count=0",
                            "--runner-arm64-count=0"), client, Clock.systemUTC(), Map.of());
                    made.timeWatchesWith(nanos::get);
                    return made;
                }).app()) {
            OperatorHarness.awaitTrue(app::ready, Duration.ofSeconds(60), "ready");
            proxy.rate(ChaosProxy.Fault.RESET_BEFORE, 1);
            assertThat(proxy.closeWatches()).as("watches cut").isPositive();
            OperatorHarness.awaitTrue(() -> !app.podCache().isWatching() || !app.nodeCache().isWatching(),
                    Duration.ofSeconds(60), "a watch down");
            assertThat(app.notReady()).as("ready within the grace").isNull();

            nanos.addAndGet(WatchContinuity.GRACE.toNanos());
            assertThat(app.notReady()).as("down for the grace").isEqualTo(Readiness.WATCHES_DOWN)
                    .contains("have been down for more than 10 s", "check that the API server is reachable");
            assertThat(app.ready()).isFalse();

            proxy.clear();
            OperatorHarness.awaitTrue(app::ready, Duration.ofSeconds(60), "ready once the watches are back");
        }
    }
}
