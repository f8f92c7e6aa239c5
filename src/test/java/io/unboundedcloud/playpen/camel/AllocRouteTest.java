package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

class AllocRouteTest {
    static final ObjectMapper M = new ObjectMapper();
    static TestCluster cluster;
    static OperatorHarness op;

    @BeforeAll
    static void up() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        cluster.addNode("node-b", "arm64", "203.0.113.11");
        cluster.addNode("node-noip", "amd64", null);
        op = new OperatorHarness(cluster);
    }

    @AfterAll
    static void down() {
        if (op != null) {
            op.close();
        }
        cluster.close();
    }

    @Test
    void allocatesRunnerWithNodeExternalIpAndHostPort() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51830, "node-a"));
        awaitCached("playpen-runner-amd64-51830");
        String key = TestCluster.wgKey(7);
        HttpResponse<String> r = op.alloc("{\"idempotencyKey\":\"smoke-1\",\"wireGuardPublicKey\":\"" + key + "\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode body = M.readTree(r.body());
        assertThat(body.at("/endpoint/host").asText()).isEqualTo("203.0.113.10");
        assertThat(body.at("/endpoint/wireGuardUDPPort").asInt()).isEqualTo(51830);
        Pod pod = cluster.client.pods().inNamespace("playpen").withName("playpen-runner-amd64-51830").get();
        assertThat(pod.getMetadata().getAnnotations()).containsEntry(PlaypenKeys.IDEMPOTENCY_KEY_HASH, Hashes.keyHash("smoke-1"));
        assertThat(pod.getMetadata().getLabels()).containsEntry(PlaypenKeys.ALLOCATED,
                Hashes.allocationId("playpen", "playpen-runner-amd64-51830"));
        HttpResponse<String> again = op.alloc("{\"idempotencyKey\":\"smoke-1\",\"wireGuardPublicKey\":\"" + key + "\"}");
        assertThat(again.statusCode()).isEqualTo(200);
        assertThat(again.body()).isEqualTo(r.body());
    }

    void awaitCached(String name) throws InterruptedException {
        for (int i = 0; i < 200 && op.app.podCache().get(name).isEmpty(); i++) {
            Thread.sleep(10);
        }
    }
}
