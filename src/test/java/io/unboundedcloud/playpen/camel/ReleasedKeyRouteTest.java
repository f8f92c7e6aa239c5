package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * A key released and sent again at once, while the pod of its released allocation is still being deleted (its
 * grace period, a finalizer, a node that does not answer): the request is a new allocation on another pod, not a
 * 503 for as long as the old pod takes to go.
 */
class ReleasedKeyRouteTest {
    static final ObjectMapper M = new ObjectMapper();

    TestCluster cluster;
    OperatorHarness op;

    @AfterEach
    void down() {
        if (op != null) {
            op.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    private String allocatedPod(String body) throws Exception {
        var r = op.alloc(body);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return M.readTree(r.body()).path("pod").path("name").asText();
    }

    @Test
    void aKeySentAgainWhileItsReleasedPodTerminatesIsAllocatedAnew() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        op = new OperatorHarness(cluster, "--reconcile-interval=10m");
        for (int port = 51820; port < 51822; port++) {
            cluster.create(TestCluster.readyRunner("amd64", port, "node-a").editMetadata()
                    .addToFinalizers("test/hold").endMetadata());
        }
        op.awaitCache(c -> c.size() == 2);
        String body = "{\"idempotencyKey\":\"again\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(1) + "\"}";
        String first = allocatedPod(body);

        assertThat(op.dealloc("{\"idempotencyKey\":\"again\"}").statusCode()).isEqualTo(204);
        Pod released = cluster.client.pods().inNamespace(TestCluster.NS).withName(first).get();
        assertThat(ManagedPods.isTerminating(released)).as("held by its finalizer").isTrue();
        op.awaitCache(c -> c.stream().anyMatch(p -> ManagedPods.name(p).equals(first) && ManagedPods.isTerminating(p)));

        String second = allocatedPod(body);
        assertThat(second).isNotEqualTo(first);
        String keyHash = Hashes.keyHash("again");
        assertThat(cluster.pods().stream().filter(p -> keyHash.equals(ManagedPods.keyHash(p)))
                .filter(p -> !ManagedPods.isTerminating(p)).map(ManagedPods::name)).containsExactly(second);
        // sent again, it is the new allocation's replay
        assertThat(allocatedPod(body)).isEqualTo(second);
    }
}
