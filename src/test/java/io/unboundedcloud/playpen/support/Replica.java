package io.unboundedcloud.playpen.support;

import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.unboundedcloud.playpen.kube.Allocator;
import io.unboundedcloud.playpen.kube.ApiCallCounter;
import io.unboundedcloud.playpen.kube.ClaimWriter;
import io.unboundedcloud.playpen.kube.KubeClients;
import io.unboundedcloud.playpen.kube.NodeCache;
import io.unboundedcloud.playpen.kube.PodCache;
import io.unboundedcloud.playpen.model.Candidates;

/**
 * One operator replica's allocation core (pod and node caches, claim writer, allocator) with a client of its own
 * that reaches the mock API server through a {@link LagProxy}, so a test can make this replica lag, restart it
 * (close it and make a new one) and ask it for allocations while other replicas run.
 */
public final class Replica implements AutoCloseable {
    public final LagProxy proxy;
    public final KubernetesClient client;
    public final PodCache pods;
    public final NodeCache nodes;
    public final Allocator allocator;
    public final ApiCallCounter calls = new ApiCallCounter();

    public Replica(TestCluster cluster, int maxPerOwner) throws IOException {
        proxy = new LagProxy(java.net.URI.create(cluster.server.url("/")));
        Config config = new ConfigBuilder().withMasterUrl(proxy.url().toString()).withNamespace(TestCluster.NS)
                .withTrustCerts(true).withRequestTimeout(60_000).build();
        client = KubeClients.create(config);
        Candidates candidates = new Candidates(Map.of());
        pods = new PodCache(client, TestCluster.NS, candidates::kindKey);
        nodes = new NodeCache(client);
        pods.start();
        nodes.start();
        allocator = new Allocator(pods, nodes, new ClaimWriter(client, Clock.systemUTC(), calls), candidates, 1,
                maxPerOwner);
    }

    /**
     * Waits until both caches are synced, their watches are open and the node's ExternalIP is known (a test that
     * holds this replica's watches must not hold a watch's opening handshake: fabric8 then falls back to plain HTTP
     * watches, which the simulated API server does not serve).
     */
    public Replica awaitReady(String node) throws InterruptedException {
        OperatorHarness.awaitTrue(() -> pods.hasSynced() && nodes.hasSynced() && pods.isWatching()
                && nodes.isWatching() && nodes.externalIp(node).isPresent(), Duration.ofSeconds(20),
                "replica caches synced and watching");
        return this;
    }

    @Override
    public void close() {
        proxy.releaseWatches();
        pods.close();
        nodes.close();
        client.close();
        proxy.close();
    }
}
