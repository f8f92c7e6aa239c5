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
import io.unboundedcloud.playpen.kube.ReplicaLanes;
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
    public final ReplicaLanes lanes;

    public Replica(TestCluster cluster, int maxPerOwner) throws IOException {
        this(cluster, maxPerOwner, null);
    }

    /**
     * A replica that records itself in its claims and walks its own lane first when it sees other replicas
     * claiming ({@link ReplicaLanes}), as the operator does; {@code identity} null: neither (one lane for all).
     */
    public Replica(TestCluster cluster, int maxPerOwner, String identity) throws IOException {
        lanes = identity == null ? ReplicaLanes.alone() : new ReplicaLanes(identity);
        proxy = new LagProxy(java.net.URI.create(cluster.server.url("/")));
        Config config = new ConfigBuilder().withMasterUrl(proxy.url().toString()).withNamespace(TestCluster.NS)
                .withTrustCerts(true).withRequestTimeout(60_000).build();
        client = KubeClients.create(config);
        Candidates candidates = new Candidates(Map.of());
        pods = new PodCache(client, TestCluster.NS, candidates::kindKey);
        nodes = new NodeCache(client);
        if (identity != null) {
            pods.addListener(lanes);
        }
        pods.start();
        nodes.start();
        allocator = new Allocator(pods, nodes, new ClaimWriter(client, Clock.systemUTC(), calls, null,
                identity == null ? null : lanes.self()), candidates, 1, maxPerOwner, lanes);
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
