package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import ch.qos.logback.classic.spi.ILoggingEvent;
import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * A dealloc whose key holds two pods and whose second delete fails: the pod it did release is recorded (Event,
 * audit line, metric) and the caller is told to send the dealloc again, which releases the rest.
 */
class PartialReleaseRouteTest {
    static final ObjectMapper M = new ObjectMapper();
    static final String PODS = "DELETE /api/v1/namespaces/playpen/pods/";

    @RegisterExtension
    final CapturedLogs audit = CapturedLogs.named("playpen.audit");

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

    String metrics() throws Exception {
        int port = op.app.managementAddress().getPort();
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                .build(), HttpResponse.BodyHandlers.ofString()).body();
    }

    static double metric(String scrape, String series) {
        for (String line : scrape.split("\n")) {
            if (line.startsWith(series + " ")) {
                return Double.parseDouble(line.substring(series.length() + 1).trim());
            }
        }
        return -1;
    }

    @Test
    void aDeallocThatFailsPartwayRecordsThePodItReleasedAndSaysToSendItAgain() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        op = new OperatorHarness(cluster, "--management-addr=127.0.0.1:0", "--reconcile-interval=10m");
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        cluster.create(TestCluster.readyRunner("amd64", 51821, "node-a"));
        op.awaitCache(c -> c.size() == 2);
        var r = op.alloc("{\"idempotencyKey\":\"twice\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(1) + "\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        String keyHash = Hashes.keyHash("twice");
        Pod first = cluster.pods().stream().filter(p -> keyHash.equals(ManagedPods.keyHash(p))).findFirst().orElseThrow();
        Pod other = cluster.pods().stream().filter(p -> !p.getMetadata().getName().equals(first.getMetadata().getName()))
                .findFirst().orElseThrow();
        // the key comes to hold a second pod (a claim of the Go operator's, say): its claim's labels and annotations
        Map<String, String> labels = new HashMap<>(first.getMetadata().getLabels());
        labels.put(PlaypenKeys.ALLOCATED, Hashes.allocationId(TestCluster.NS, other.getMetadata().getName()));
        Map<String, String> annotations = new HashMap<>(first.getMetadata().getAnnotations());
        cluster.client.pods().inNamespace(TestCluster.NS).withName(other.getMetadata().getName()).edit(p -> {
            p.getMetadata().getLabels().putAll(labels);
            p.getMetadata().setAnnotations(annotations);
            return p;
        });
        op.awaitCache(c -> c.stream().filter(p -> keyHash.equals(ManagedPods.keyHash(p))).count() == 2);

        // the first pod delete lands, every later one is refused
        AtomicInteger deletes = new AtomicInteger();
        cluster.failBeforeWrite = key -> key.startsWith(PODS) && deletes.incrementAndGet() > 1;
        HttpResponse<String> failed = op.dealloc("{\"idempotencyKey\":\"twice\"}");

        assertThat(failed.statusCode()).as(failed.body()).isEqualTo(503);
        JsonNode status = M.readTree(failed.body());
        assertThat(status.get("kind").asText()).isEqualTo("Status");
        assertThat(status.get("message").asText()).contains("1 pod").contains("send the dealloc again");
        List<String> left = cluster.pods().stream().filter(p -> keyHash.equals(ManagedPods.keyHash(p)))
                .map(p -> p.getMetadata().getName()).toList();
        assertThat(left).hasSize(1);
        String released = List.of(first.getMetadata().getName(), other.getMetadata().getName()).stream()
                .filter(n -> !left.contains(n)).findFirst().orElseThrow();

        OperatorHarness.awaitTrue(() -> cluster.client.v1().events().inNamespace(TestCluster.NS).list().getItems().stream()
                .anyMatch(e -> "Deallocated".equals(e.getReason())
                        && released.equals(e.getInvolvedObject().getName())),
                Duration.ofSeconds(60), "a Deallocated Event on the released pod");
        OperatorHarness.awaitTrue(() -> audit.lines().stream().map(ILoggingEvent::getFormattedMessage)
                .anyMatch(l -> l.contains("\"verb\":\"deallocate\"") && l.contains(released)),
                Duration.ofSeconds(60), "an audit line naming the released pod");
        assertThat(audit.lines()).extracting(ILoggingEvent::getFormattedMessage)
                .filteredOn(l -> l.contains("\"verb\":\"deallocate\""))
                .singleElement().satisfies(l -> assertThat(l).contains("\"outcome\":\"partly-deallocated\""));
        assertThat(metric(metrics(), "playpen_dealloc_requests_total{code=\"503\",result=\"partly-deallocated\"}"))
                .isEqualTo(1.0);

        // sending it again is safe: it releases what the key still holds
        cluster.failBeforeWrite = key -> false;
        assertThat(op.dealloc("{\"idempotencyKey\":\"twice\"}").statusCode()).isEqualTo(204);
        assertThat(cluster.pods()).noneMatch(p -> keyHash.equals(ManagedPods.keyHash(p)));
    }

    @Test
    void aDeleteOfAnAllocWhoseReadAfterTheDeleteFailsAnswersTheDeletedAllocAndRecordsIt() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        op = new OperatorHarness(cluster, "--management-addr=127.0.0.1:0", "--reconcile-interval=10m");
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op.awaitCache(c -> c.size() == 1);
        var r = op.alloc("{\"idempotencyKey\":\"once\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(1) + "\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        Pod pod = cluster.pods().get(0);
        String id = pod.getMetadata().getLabels().get(PlaypenKeys.ALLOCATED);
        String name = pod.getMetadata().getName();

        // the pod's delete lands; every read of the pods after it fails
        java.util.concurrent.atomic.AtomicBoolean deleted = new java.util.concurrent.atomic.AtomicBoolean();
        cluster.failBeforeWrite = key -> {
            if (key.startsWith(PODS)) {
                deleted.set(true);
                return false;
            }
            return deleted.get() && key.startsWith("GET /api/v1/namespaces/playpen/pods");
        };
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url("/apis/playpen.unbounded-cloud.io/v1alpha1/allocs/"
                + id))).timeout(Duration.ofSeconds(60)).DELETE();
        HttpResponse<String> del = op.frontProxy().send(OperatorHarness.asUser(b, "alice", "playpen-users").build(),
                HttpResponse.BodyHandlers.ofString());

        // the allocation asked for is released: the answer is that Alloc, as for any delete that released it
        assertThat(del.statusCode()).as(del.body()).isEqualTo(200);
        assertThat(M.readTree(del.body()).at("/metadata/name").asText()).isEqualTo(id);
        cluster.failBeforeWrite = key -> false;
        assertThat(cluster.client.pods().inNamespace(TestCluster.NS).withName(name).get()).isNull();
        OperatorHarness.awaitTrue(() -> cluster.client.v1().events().inNamespace(TestCluster.NS).list().getItems().stream()
                .anyMatch(e -> "Deallocated".equals(e.getReason()) && name.equals(e.getInvolvedObject().getName())),
                Duration.ofSeconds(60), "a Deallocated Event on the released pod");
        OperatorHarness.awaitTrue(() -> audit.lines().stream().map(ILoggingEvent::getFormattedMessage)
                .anyMatch(l -> l.contains("\"verb\":\"delete\"") && l.contains("\"allocation\":\"" + name + "\"")
                        && l.contains("\"outcome\":\"deallocated\"")),
                Duration.ofSeconds(60), "the delete's audit line");
    }
}
