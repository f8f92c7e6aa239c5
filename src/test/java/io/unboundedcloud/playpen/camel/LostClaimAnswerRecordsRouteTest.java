package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import ch.qos.logback.classic.spi.ILoggingEvent;

import io.fabric8.kubernetes.api.model.Event;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * Records of writes the API server carried out but whose answer was lost (a 500 after the write). A claim is the
 * request's own new claim, found again by reading the pod back: the request, its audit line and its Event say it was
 * allocated, not replayed. A dealloc's delete is not told apart from another's (the TTL's, another dealloc's): its
 * pod is released, and nothing records it as deallocated (docs/api.md, Release).
 */
class LostClaimAnswerRecordsRouteTest {
    private static final String POD = "playpen-runner-amd64-51820";

    @RegisterExtension
    final CapturedLogs audit = CapturedLogs.named("playpen.audit");
    private TestCluster cluster;
    private OperatorHarness op;

    @BeforeEach
    void start() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        op = new OperatorHarness(cluster);
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op.awaitCache(c -> c.size() == 1);
    }

    @AfterEach
    void stop() {
        op.close();
        cluster.close();
    }

    @Test
    void aNewClaimWhoseAnswerWasLostIsRecordedAsAllocated() throws Exception {
        AtomicBoolean first = new AtomicBoolean(true);
        cluster.failAfterWrite = k -> k.equals("PATCH /api/v1/namespaces/" + TestCluster.NS + "/pods/" + POD)
                && first.getAndSet(false);

        HttpResponse<String> answer = op.alloc("{\"idempotencyKey\":\"answer-lost\",\"wireGuardPublicKey\":\""
                + TestCluster.wgKey(1) + "\"}");

        assertThat(answer.statusCode()).isEqualTo(200);
        assertThat(first).as("the claim's answer was lost").isFalse();
        String prefix = Hashes.keyHash("answer-lost").substring(0, 8);
        OperatorHarness.awaitTrue(() -> audit.lines().stream().anyMatch(e -> e.getFormattedMessage().contains(prefix)),
                Duration.ofSeconds(60), "audited");
        assertThat(audit.lines()).extracting(ILoggingEvent::getFormattedMessage).filteredOn(l -> l.contains(prefix))
                .singleElement().asString().contains("\"allocation\":\"" + POD + "\"")
                .contains("\"outcome\":\"allocated\"");
        assertEventsOfPod("Allocated");
    }

    /** The pod's Events once the operator has written {@code written} (none are dropped here). */
    private void assertEventsOfPod(String... reasons) throws InterruptedException {
        OperatorHarness.awaitTrue(() -> op.app.events().written() >= reasons.length, Duration.ofSeconds(60),
                "Events written");
        assertThat(cluster.client.v1().events().inNamespace(TestCluster.NS).list().getItems())
                .filteredOn(e -> POD.equals(e.getInvolvedObject().getName())).extracting(Event::getReason)
                .containsExactly(reasons);
    }

    private String allocated(String key) throws Exception {
        assertThat(op.alloc("{\"idempotencyKey\":\"" + key + "\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(2)
                + "\"}").statusCode()).isEqualTo(200);
        assertEventsOfPod("Allocated");
        return Hashes.keyHash(key).substring(0, 8);
    }

    /** The audit lines of {@code verb} for a key hash prefix, awaited until there are {@code n}. */
    private java.util.List<String> auditLines(String verb, String prefix, int n) throws InterruptedException {
        java.util.function.Supplier<java.util.List<String>> lines = () -> audit.lines().stream()
                .map(ILoggingEvent::getFormattedMessage)
                .filter(l -> l.contains(prefix) && l.contains("\"verb\":\"" + verb + "\"")).toList();
        OperatorHarness.awaitTrue(() -> lines.get().size() >= n, Duration.ofSeconds(60), verb + " audited");
        return lines.get();
    }

    /** The delete of the claimed pod lands, and its first answer is lost. */
    private AtomicBoolean loseFirstDeleteAnswer() {
        AtomicBoolean first = new AtomicBoolean(true);
        cluster.failAfterWrite = k -> k.equals("DELETE /api/v1/namespaces/" + TestCluster.NS + "/pods/" + POD)
                && first.getAndSet(false);
        return first;
    }

    /**
     * The delete lands and its answer is lost; the Kubernetes client sends it again by itself, and that answer (the
     * pod gone) cannot say whose delete it was: the dealloc is answered like one of a key that held nothing.
     */
    @Test
    void aDeallocWhoseDeleteAnswerWasLostOnceIsAnsweredAsNothingReleased() throws Exception {
        String prefix = allocated("dealloc-answer-lost");
        AtomicBoolean first = loseFirstDeleteAnswer();

        HttpResponse<String> answer = op.dealloc("{\"idempotencyKey\":\"dealloc-answer-lost\"}");

        assertThat(first).as("the delete's answer was lost").isFalse();
        assertThat(answer.statusCode()).isEqualTo(204);
        assertThat(answer.headers().firstValue("Warning")).get().asString().contains("nothing was deallocated");
        assertThat(cluster.client.pods().inNamespace(TestCluster.NS).withName(POD).get()).isNull();
        assertThat(auditLines("deallocate", prefix, 1)).singleElement().asString().contains("\"outcome\":\"unknown-key\"")
                .contains("\"allocation\":\"\"");
        assertEventsOfPod("Allocated");
    }

    /** The same for a delete by id ({@code kubectl delete alloc}): its pod gone when it looks again, it is a 404. */
    @Test
    void aDeleteOfAnAllocWhoseAnswerWasLostIsAnswered404() throws Exception {
        String prefix = allocated("delete-answer-lost");
        AtomicBoolean first = loseFirstDeleteAnswer();

        HttpResponse<String> answer = op.frontProxy().send(OperatorHarness.asUser(java.net.http.HttpRequest.newBuilder(
                java.net.URI.create(op.url("/apis/playpen.unbounded-cloud.io/v1alpha1/allocs/"
                        + Hashes.allocationId(TestCluster.NS, POD)))).DELETE(), "alice", "playpen-users").build(),
                HttpResponse.BodyHandlers.ofString());

        assertThat(first).as("the delete's answer was lost").isFalse();
        assertThat(answer.statusCode()).isEqualTo(404);
        assertThat(cluster.client.pods().inNamespace(TestCluster.NS).withName(POD).get()).isNull();
        assertThat(auditLines("delete", prefix, 1)).singleElement().asString().contains("\"outcome\":\"notFound\"");
        assertEventsOfPod("Allocated");
    }

    /** Both answers lost: a 503 saying to try again, and the dealloc sent again is answered as nothing released. */
    @Test
    void aDeallocWhoseDeleteAnswersWereLostIs503ThenNothingReleased() throws Exception {
        String prefix = allocated("dealloc-answers-lost");
        cluster.failAfterWrite = k -> k.equals("DELETE /api/v1/namespaces/" + TestCluster.NS + "/pods/" + POD);

        HttpResponse<String> answer = op.dealloc("{\"idempotencyKey\":\"dealloc-answers-lost\"}");
        assertThat(answer.statusCode()).isEqualTo(503);
        assertThat(answer.body()).contains("could not complete the request; try again");
        cluster.failAfterWrite = k -> false;
        HttpResponse<String> again = op.dealloc("{\"idempotencyKey\":\"dealloc-answers-lost\"}");

        assertThat(again.statusCode()).isEqualTo(204);
        assertThat(again.headers().firstValue("Warning")).get().asString().contains("nothing was deallocated");
        assertThat(cluster.client.pods().inNamespace(TestCluster.NS).withName(POD).get()).isNull();
        assertThat(auditLines("deallocate", prefix, 2)).satisfiesExactly(
                l -> assertThat(l).contains("\"outcome\":\"serviceUnavailable\"").contains("\"allocation\":\"\""),
                l -> assertThat(l).contains("\"outcome\":\"unknown-key\""));
        assertEventsOfPod("Allocated");
    }
}
