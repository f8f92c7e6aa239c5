package io.unboundedcloud.playpen.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** The bench's HTTPS clients really reach the front door: connect, allocate, replay, and a refusal is an error. */
class BenchHttpsTest {
    static TestCluster cluster;
    static OperatorHarness op;

    @BeforeAll
    static void up() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-0", "amd64", "203.0.113.10");
        cluster.create(TestCluster.readyRunner("amd64", 20000, "node-0"));
        cluster.create(TestCluster.readyRunner("amd64", 20001, "node-0"));
        op = new OperatorHarness(cluster);
        op.awaitCache(c -> c.size() == 2);
    }

    @AfterAll
    static void down() {
        if (op != null) {
            op.close();
        }
        cluster.close();
    }

    @ParameterizedTest
    @EnumSource(BenchHttps.Kind.class)
    void connectsAllocatesAndReplaysThroughTheFrontDoor(BenchHttps.Kind kind) throws Exception {
        int index = 1000 + kind.ordinal();
        try (BenchHttps https = new BenchHttps(kind, cluster.frontProxyClient, 2)) {
            https.connect(2, w -> op.port);
            String first = https.alloc(0, op.port, Bench.allocBody(index));
            String again = https.alloc(1, op.port, Bench.allocBody(index));
            assertThat(again).isEqualTo(first).contains("\"wireGuardUDPPort\":2000");
            assertThat(cluster.pods().stream().filter(ManagedPods::isClaimed).map(ManagedPods::keyHash))
                    .contains(Bench.command(index).keyHash());
            // the same key with another request: 409, which the bench counts as a failed request
            assertThatThrownBy(() -> https.alloc(0, op.port, Bench.allocBody(index).replace("amd64", "arm64")))
                    .hasMessageContaining("alloc answered 409");
        }
    }

    /** The floor server answers the alloc request over the same TLS, with the given bytes, from both client kinds. */
    @ParameterizedTest
    @EnumSource(BenchHttps.Kind.class)
    void theFloorAnswersTheAllocRequestWithItsFixedBytes(BenchHttps.Kind kind) throws Exception {
        String answer = "{\"resourceType\":\"runner\",\"endpoint\":\"floor-" + kind + "\"}";
        try (TlsFloor floor = TlsFloor.start(cluster.frontProxyCa, answer.getBytes(java.nio.charset.StandardCharsets.UTF_8));
                BenchHttps https = new BenchHttps(kind, cluster.frontProxyClient, 1)) {
            assertThat(floor.port()).isNotEqualTo(op.port);
            https.connect(1, w -> floor.port());
            assertThat(https.alloc(0, floor.port(), Bench.allocBody(2000))).isEqualTo(answer);
            assertThat(https.alloc(0, floor.port(), Bench.allocBody(2001))).isEqualTo(answer);
            // nothing reached the API server: the floor has none of the operator's work
            assertThat(cluster.pods().stream().filter(ManagedPods::isClaimed).map(ManagedPods::keyHash))
                    .doesNotContain(Bench.command(2000).keyHash());
        }
    }
}
