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
}
