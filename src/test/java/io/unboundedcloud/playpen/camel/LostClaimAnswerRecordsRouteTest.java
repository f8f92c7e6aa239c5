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
 * A claim the API server wrote but whose answer was lost (a 500 after the write) is the request's own new claim,
 * found again by reading the pod back: the request, its audit line and its Event say it was allocated, not replayed.
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
        OperatorHarness.awaitTrue(() -> op.app.events().written() >= 1, Duration.ofSeconds(60), "Event written");
        assertThat(cluster.client.v1().events().inNamespace(TestCluster.NS).list().getItems())
                .filteredOn(e -> POD.equals(e.getInvolvedObject().getName())).extracting(Event::getReason)
                .containsExactly("Allocated");
    }
}
