package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** Pools against the mock API: fill, refill on claim, debounced bursts, foreign pods, exhaustion. */
class PoolRouteTest {
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

    void start(String... flags) throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        cluster.addNode("node-b", "arm64", "203.0.113.11");
        op = new OperatorHarness(cluster, flags);
    }

    List<String> names() {
        return cluster.pods().stream().map(p -> p.getMetadata().getName()).sorted().collect(Collectors.toList());
    }

    int podCreates() {
        return cluster.requestCount(k -> k.equals("POST /api/v1/namespaces/playpen/pods"));
    }

    /** Marks every pod as the runner would: scheduled, running, ready, key published. */
    void makeReady() {
        for (Pod p : cluster.pods()) {
            if ("Running".equals(p.getStatus() == null ? null : p.getStatus().getPhase())) {
                continue;
            }
            String arch = ManagedPods.architecture(p);
            int port = ManagedPods.hostPort(p).orElseThrow();
            Pod ready = TestCluster.readyRunner(arch, port, arch.equals("arm64") ? "node-b" : "node-a").build();
            cluster.client.pods().inNamespace("playpen").withName(p.getMetadata().getName()).edit(x -> new PodBuilder(x)
                    .editMetadata().addToAnnotations(ready.getMetadata().getAnnotations()).endMetadata()
                    .editSpec().withNodeName(ready.getSpec().getNodeName()).endSpec()
                    .withStatus(ready.getStatus()).build());
        }
    }

    @Test
    void emptyNamespaceFillsToCountsWithLowestPortsAndNothingMore() throws Exception {
        start("--runner-amd64-count=2", "--runner-arm64-count=1", "--control-plane-count=1",
                "--control-plane-versions=v1.33.0,v1.32.1", "--reconcile-interval=10m");
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 5, Duration.ofSeconds(60), "5 pods");
        assertThat(names()).containsExactly("playpen-control-plane-1.32.1-16444", "playpen-control-plane-1.33.0-16443",
                "playpen-runner-amd64-51820", "playpen-runner-amd64-51821", "playpen-runner-arm64-51822");
        Thread.sleep(500);
        op.app.poolReconciler().reconcile();
        assertThat(cluster.pods()).hasSize(5);
        assertThat(podCreates()).isEqualTo(5);
    }

    @Test
    void claimTriggersRefillLongBeforeTheIntervalAndBurstsDoNotOverCreate() throws Exception {
        start("--runner-amd64-count=1", "--runner-arm64-count=0", "--reconcile-interval=10m");
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 1, Duration.ofSeconds(60), "first runner");
        makeReady();
        op.awaitCache(c -> c.stream().anyMatch(p -> p.getStatus() != null && "Running".equals(p.getStatus().getPhase())));
        assertThat(op.alloc("{\"idempotencyKey\":\"r1\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(1) + "\"}")
                .statusCode()).isEqualTo(200);
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 2, Duration.ofSeconds(60), "replacement runner");
        assertThat(names()).containsExactly("playpen-runner-amd64-51820", "playpen-runner-amd64-51821");
        // a burst of 20 cache events (touching the claimed pod) must not create beyond the deficit (0),
        // and updates that do not change whether a pod is idle trigger no pass at all
        Thread.sleep(500);
        long passesBefore = op.app.poolReconciler().passes();
        for (int i = 0; i < 20; i++) {
            int n = i;
            cluster.client.pods().inNamespace("playpen").withName("playpen-runner-amd64-51820")
                    .edit(p -> new PodBuilder(p).editMetadata().addToAnnotations("touch", String.valueOf(n)).endMetadata().build());
        }
        // the cache has every edit; then ten debounces, in which a pass the edits asked for would have run
        op.awaitCache(c -> c.stream().anyMatch(p -> p.getMetadata().getAnnotations() != null
                && "19".equals(p.getMetadata().getAnnotations().get("touch"))));
        Thread.sleep(1000);
        assertThat(cluster.pods()).hasSize(2);
        assertThat(podCreates()).isEqualTo(2);
        assertThat(op.app.poolReconciler().passes()).isEqualTo(passesBefore);
    }

    @Test
    void portTakenByAnotherActorIsSkippedAndExhaustionKeepsServing() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        // another actor already created the pod named for the lowest port, without our labels
        cluster.create(new PodBuilder().withNewMetadata().withName("playpen-runner-amd64-51820").withNamespace("playpen")
                .endMetadata().withNewSpec().addNewContainer().withName("x").withImage("x").endContainer().endSpec());
        op = new OperatorHarness(cluster, "--runner-amd64-count=3", "--runner-arm64-count=0",
                "--runner-wireguard-host-port-start=51820", "--runner-wireguard-host-port-end=51822",
                "--reconcile-interval=10m");
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 3, Duration.ofSeconds(60), "pods");
        Thread.sleep(300);
        assertThat(names()).containsExactly("playpen-runner-amd64-51820", "playpen-runner-amd64-51821",
                "playpen-runner-amd64-51822");
        assertThat(cluster.pods()).filteredOn(ManagedPods::isManaged).hasSize(2);
        // the range is full: a pass reports exhaustion (and an event) and the operator keeps serving
        var result = op.app.poolReconciler().reconcile();
        assertThat(result.exhausted()).isNotEmpty();
        assertThat(result.exhausted().get(0).message()).contains("51820-51822");
        // on the APIService (the harness sets no POD_NAME): cluster-scoped, so its Events are in "default"
        OperatorHarness.awaitTrue(() -> cluster.client.v1().events().inNamespace("default").list().getItems().stream()
                .anyMatch(e -> "HostPortRangeExhausted".equals(e.getReason())), Duration.ofSeconds(60), "exhaustion event");
        assertThat(op.alloc("{\"idempotencyKey\":\"x\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(1) + "\"}")
                .statusCode()).isEqualTo(503);
        assertThat(OperatorHarness.client(null).send(java.net.http.HttpRequest.newBuilder(
                java.net.URI.create(op.url("/healthz"))).build(), java.net.http.HttpResponse.BodyHandlers.ofString())
                .statusCode()).isEqualTo(204);
    }

    /**
     * A pass whose every planned pod meets a port held by a pod the cache does not show as its holder reports the
     * full range once for the pool (one Event, one count of playpen_host_port_range_exhausted_total), with every
     * pod it could not create, not once per such pod.
     */
    @Test
    void aPassReportsAFullRangeOncePerPool() throws Exception {
        // no pass on claims (a long debounce): the two claims below leave one pass a deficit of two
        start("--runner-amd64-count=2", "--runner-arm64-count=0", "--runner-wireguard-host-port-start=51820",
                "--runner-wireguard-host-port-end=51823", "--reconcile-interval=10m", "--refill-debounce=10m");
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 2, Duration.ofSeconds(60), "two runners");
        makeReady();
        op.awaitCache(c -> c.stream().filter(p -> p.getStatus() != null && "Running".equals(p.getStatus().getPhase()))
                .count() == 2);
        // another actor holds the pod names of the two ports left, with no hostPort the cache would count
        for (int port : new int[] {51822, 51823}) {
            cluster.create(new PodBuilder().withNewMetadata().withName("playpen-runner-amd64-" + port)
                    .withNamespace("playpen").endMetadata().withNewSpec().addNewContainer().withName("x").withImage("x")
                    .endContainer().endSpec());
        }
        op.awaitCache(c -> c.size() == 4);
        // counted from here: the new leader's prompt pass (not debounced) may run after the claims, on a loaded
        // machine, and try the two ports before the pass below does; then this pass knows them held
        int before = podCreates();
        assertThat(op.alloc("{\"idempotencyKey\":\"e1\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(1) + "\"}")
                .statusCode()).isEqualTo(200);
        assertThat(op.alloc("{\"idempotencyKey\":\"e2\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(2) + "\"}")
                .statusCode()).isEqualTo(200);
        op.awaitCache(c -> c.stream().filter(ManagedPods::isClaimed).count() == 2);

        // the pass plans the two free-looking ports, and each create meets AlreadyExists
        var result = op.app.poolReconciler().reconcile();
        assertThat(podCreates() - before).as("both free-looking ports were tried").isGreaterThanOrEqualTo(2);
        assertThat(result.exhausted()).as("one report for the pool").hasSize(1);
        assertThat(result.exhausted().get(0).message()).contains("51820-51823").contains("; 2 runner/amd64 pod(s)");
    }

    @Test
    void createdPodsMatchTheTemplateAndCarryThePoolLabels() throws Exception {
        start("--runner-amd64-count=0", "--runner-arm64-count=1", "--reconcile-interval=10m");
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 1, Duration.ofSeconds(60), "arm64 runner");
        Pod p = cluster.pods().get(0);
        assertThat(p.getMetadata().getName()).isEqualTo("playpen-runner-arm64-51820");
        assertThat(p.getMetadata().getLabels()).containsEntry(PlaypenKeys.ARCHITECTURE, "arm64")
                .containsEntry(PlaypenKeys.RESOURCE_TYPE, "runner").containsEntry(PlaypenKeys.HOST_PORT, "51820");
        assertThat(p.getSpec().getNodeSelector()).containsEntry("kubernetes.io/arch", "arm64");
        OperatorHarness.awaitTrue(() -> cluster.client.v1().events().inNamespace("playpen").list().getItems().stream()
                .anyMatch(e -> "Created".equals(e.getReason())), Duration.ofSeconds(60), "Created event");
    }
}
