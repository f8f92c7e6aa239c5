package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The nodes as the watch delivers them: the endpoint's address is a node's first non-blank ExternalIP (trimmed), none
 * for a node with only internal addresses, no addresses or no status, and nothing at all before the cache starts,
 * for no node name, or after it closed; a node's changes arrive without a restart; a refused first LIST is retried.
 */
class NodeCacheTest {
    static final Duration SOON = Duration.ofSeconds(10);

    @Test
    void theEndpointAddressIsANodesFirstExternalIp() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.client.nodes().resource(new NodeBuilder().withNewMetadata().withName("two-external").endMetadata()
                    .withNewStatus().addNewAddress().withType("InternalIP").withAddress("10.0.0.9").endAddress()
                    .addNewAddress().withType("ExternalIP").withAddress("  ").endAddress()
                    .addNewAddress().withType("ExternalIP").withAddress(" 203.0.113.7 ").endAddress()
                    .addNewAddress().withType("ExternalIP").withAddress("203.0.113.8").endAddress()
                    .endStatus().build()).create();
            cluster.addNode("internal-only", "amd64", null);
            cluster.client.nodes().resource(new NodeBuilder().withNewMetadata().withName("no-addresses").endMetadata()
                    .withNewStatus().endStatus().build()).create();
            cluster.client.nodes().resource(new NodeBuilder().withNewMetadata().withName("no-status").endMetadata()
                    .build()).create();

            NodeCache nodes = new NodeCache(cluster.client);
            assertThat(nodes.hasSynced()).isFalse();
            assertThat(nodes.isWatching()).isFalse();
            assertThat(nodes.externalIp("two-external")).isEmpty();
            assertThat(nodes.node("two-external")).isEmpty();
            nodes.start();
            nodes.start();
            OperatorHarness.awaitTrue(nodes::isWatching, SOON, "the node cache synced and watching");
            assertThat(nodes.hasSynced()).isTrue();

            assertThat(nodes.externalIp("two-external")).hasValue("203.0.113.7");
            assertThat(nodes.node("two-external")).hasValueSatisfying(n ->
                    assertThat(n.getMetadata().getName()).isEqualTo("two-external"));
            for (String none : new String[] {"internal-only", "no-addresses", "no-status", "unknown", "", null}) {
                assertThat(nodes.externalIp(none)).as(String.valueOf(none)).isEmpty();
            }
            assertThat(nodes.node("internal-only")).isPresent();
            assertThat(nodes.node("")).isEmpty();
            assertThat(nodes.node(null)).isEmpty();

            // a node that gains an ExternalIP is seen without a restart
            cluster.client.nodes().withName("internal-only").edit(n -> new NodeBuilder(n).editStatus().addNewAddress()
                    .withType("ExternalIP").withAddress("198.51.100.4").endAddress().endStatus().build());
            OperatorHarness.awaitTrue(() -> nodes.externalIp("internal-only").isPresent(), SOON, "the new address seen");
            assertThat(nodes.externalIp("internal-only")).hasValue("198.51.100.4");
            assertThat(nodes.isWatching()).as("the watch that delivered it").isTrue();

            nodes.close();
            nodes.close();
            assertThat(nodes.hasSynced()).isFalse();
            assertThat(nodes.externalIp("two-external")).isEmpty();
            assertThat(nodes.node("two-external")).isEmpty();
        }
    }

    @Test
    void aRefusedFirstListIsRetriedUntilTheCacheSyncs() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.addNode("node-a", "amd64", "203.0.113.1");
            // RBAC not applied yet, or the API server overloaded at start: fabric8's default would give up for good
            cluster.forbidden = key -> key.startsWith("GET /api/v1/nodes") || key.startsWith("GET WATCH /api/v1/nodes");
            NodeCache nodes = new NodeCache(cluster.client);
            nodes.start();
            try {
                OperatorHarness.awaitTrue(() -> cluster.requestCount(k -> k.startsWith("GET /api/v1/nodes")) >= 1, SOON,
                        "the first LIST was refused");
                assertThat(nodes.hasSynced()).isFalse();
                assertThat(nodes.isWatching()).isFalse();
                cluster.forbidden = key -> false;
                OperatorHarness.awaitTrue(nodes::isWatching, Duration.ofSeconds(30), "node cache synced after the refusal ended");
                assertThat(nodes.externalIp("node-a")).hasValue("203.0.113.1");
            } finally {
                nodes.close();
            }
        }
    }
}
