package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.TestMethodOrder;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.support.HostileCorpus;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The hostile-client corpus ({@code src/test/resources/hostile/*.txt}) against one operator: each case gets its 4xx
 * Status (or a closed connection), leaks no class names, claims nothing (an idle runner waits to be claimed) and leaves
 * the server healthy. One dynamic test per case, named by its id.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class HostileClientsRouteTest {
    static TestCluster cluster;
    static OperatorHarness op;
    static HostileCorpus.Target target;

    @BeforeAll
    static void up() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        // short deadlines so the cases that stall (a partial TLS record, a body that never comes) end in seconds
        op = new OperatorHarness(cluster, "--request-header-timeout=2s", "--request-body-timeout=2s");
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op.awaitCache(c -> c.size() == 1);
        target = new HostileCorpus.Target("127.0.0.1", op.port, cluster.frontProxyCa, "front-proxy-client")
                .readBudget(Duration.ofSeconds(8));
    }

    @AfterAll
    static void down() {
        if (op != null) {
            op.close();
        }
        cluster.close();
    }

    /** Every pod's name, resourceVersion and annotations: any write at all shows. */
    static Object snapshot() {
        Map<String, String> state = new TreeMap<>();
        for (Pod p : cluster.pods()) {
            state.put(p.getMetadata().getName(), p.getMetadata().getResourceVersion() + " " + p.getMetadata().getAnnotations());
        }
        return state;
    }

    @Test
    @Order(1)
    void corpusCoversEveryCategoryWithAtLeast150Cases() throws Exception {
        List<HostileCorpus.Case> cases = HostileCorpus.load();
        assertThat(cases).hasSizeGreaterThanOrEqualTo(150);
        assertThat(cases.stream().map(HostileCorpus.Case::id).distinct().count()).as("unique ids").isEqualTo(cases.size());
        Map<String, Long> byPrefix = cases.stream().collect(Collectors.groupingBy(c -> c.id().replaceAll("-.*", ""),
                Collectors.counting()));
        assertThat(byPrefix.keySet()).contains("json", "hdr", "tls", "plain", "http");
        for (String topic : List.of("json-depth", "json-size", "json-nul", "json-utf8", "json-bom", "json-dup", "json-type",
                "hdr-oversize", "hdr-groups-1000", "hdr-crlf", "hdr-query", "tls-none", "tls-wrongca", "tls-expired",
                "tls-noeku", "tls-badcn", "http-10", "http-pipeline", "http-h2c", "plain-http", "http-method-unknown",
                "http-path")) {
            assertThat(cases).as(topic).anyMatch(c -> c.id().startsWith(topic));
        }
    }

    @TestFactory
    @Order(2)
    Stream<DynamicTest> everyHostileCaseIsRefusedAndChangesNothing() throws Exception {
        return HostileCorpus.load().stream().map(c -> DynamicTest.dynamicTest(c.id(), () -> {
            HostileCorpus.Outcome o = HostileCorpus.run(c, target, HostileClientsRouteTest::snapshot,
                    () -> HostileCorpus.ready(target));
            assertThat(o.problems()).as(c.source() + " " + c.id() + " got " + o.observed()).isEmpty();
        }));
    }

    @Test
    @Order(3)
    void afterTheCorpusTheIdleRunnerIsStillClaimable() throws Exception {
        // the runner every case could have claimed is still idle, and the server still serves a good request
        assertThat(op.alloc("{\"idempotencyKey\":\"after-hostile\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(9)
                + "\"}").statusCode()).isEqualTo(200);
        assertThat(op.dealloc("{\"idempotencyKey\":\"after-hostile\"}").statusCode()).isEqualTo(204);
    }
}
