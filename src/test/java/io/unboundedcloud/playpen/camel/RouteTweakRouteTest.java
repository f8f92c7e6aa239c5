package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.slf4j.LoggerFactory;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;

import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** The worked example "send every allocation to a webhook" of docs/routes.md works as written, without touching Java. */
class RouteTweakRouteTest {
    /** The URL the example uses; the test points it at a loopback server. */
    static final String EXAMPLE_URL = "http://allocations-hook.example.svc:8080/allocations";
    /** The steps exactly as docs/routes.md shows them, appended to the audit-line route. */
    static final String WEBHOOK_STEP = String.join("\n",
            "        - filter:",
            "            simple: \"${exchangeProperty.playpenAuditVerb} == 'allocate' && ${exchangeProperty.playpenOutcome} == 'allocated'\"",
            "            steps:",
            "              - to: \"netty-http:" + EXAMPLE_URL + "\"",
            "");

    @Test
    void everyNewAllocationIsPostedToTheWebhookOffTheAnswerPathAndWithoutTheKey(@TempDir Path tmp) throws Exception {
        assertThat(Files.readString(Path.of("docs/routes.md"))).contains(WEBHOOK_STEP);
        ListAppender<ILoggingEvent> auditLines = new ListAppender<>();
        auditLines.start();
        Logger auditLogger = (Logger) LoggerFactory.getLogger("playpen.audit");
        auditLogger.addAppender(auditLines);
        List<String> posted = new CopyOnWriteArrayList<>();
        CountDownLatch answered = new CountDownLatch(1);
        CountDownLatch hookCalled = new CountDownLatch(1);
        java.util.concurrent.atomic.AtomicBoolean hookAnswered = new java.util.concurrent.atomic.AtomicBoolean();
        HttpServer hook = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        hook.createContext("/allocations", ex -> {
            posted.add(ex.getRequestMethod() + " " + new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
            hookCalled.countDown();
            try {
                // a slow webhook: it answers only once the client has its alloc answer
                answered.await(20, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            hookAnswered.set(true);
            ex.sendResponseHeaders(204, -1);
            ex.close();
        });
        hook.start();
        try {
            Path routes = OperatorHarness.copyOfRoutes(tmp);
            Path audit = routes.resolve("audit.camel.yaml");
            String yaml = Files.readString(audit);
            assertThat(yaml).endsWith("            message: \"${body}\"\n");
            Files.writeString(audit, yaml + WEBHOOK_STEP.replace(EXAMPLE_URL,
                    "http://127.0.0.1:" + hook.getAddress().getPort() + "/allocations"));

            ObjectMapper m = new ObjectMapper();
            try (TestCluster cluster = TestCluster.start()) {
                cluster.addNode("node-a", "amd64", "203.0.113.10");
                try (OperatorHarness op = new OperatorHarness(cluster, "--routes-dir=" + routes, "--runner-amd64-count=0")) {
                    cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
                    op.awaitCache(c -> c.size() == 1);
                    String body = "{\"idempotencyKey\":\"hook-secret\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(1) + "\"}";
                    HttpResponse<String> first = op.alloc(body);
                    assertThat(first.statusCode()).isEqualTo(200);
                    // the answer did not wait for the webhook: the hook answers only once the test lets it
                    assertThat(hookAnswered).as("webhook answered before the alloc answer").isFalse();
                    assertThat(hookCalled.await(60, TimeUnit.SECONDS)).as("webhook called").isTrue();
                    // nor do the audit lines after it: the replay's is written while the webhook still holds the post
                    assertThat(op.alloc(body).statusCode()).as("replay: no second post").isEqualTo(200);
                    OperatorHarness.awaitTrue(() -> CapturedLogs.snapshot(auditLines).stream()
                            .anyMatch(e -> e.getFormattedMessage().contains("\"outcome\":\"replayed\"")),
                            java.time.Duration.ofSeconds(60), "the replay's audit line");
                    assertThat(hookAnswered).isFalse();
                    answered.countDown();
                    assertThat(op.dealloc("{\"idempotencyKey\":\"hook-secret\"}").statusCode()).isEqualTo(204);
                    OperatorHarness.awaitTrue(() -> op.app.camelContext().getInflightRepository().size() == 0,
                            java.time.Duration.ofSeconds(60), "audit lines written");
                    assertThat(posted).hasSize(1);
                    assertThat(posted.get(0)).startsWith("POST {");
                    JsonNode line = m.readTree(posted.get(0).substring("POST ".length()));
                    assertThat(line.get("verb").asText()).isEqualTo("allocate");
                    assertThat(line.get("outcome").asText()).isEqualTo("allocated");
                    assertThat(line.get("user").asText()).isEqualTo("alice");
                    assertThat(line.get("allocation").asText())
                            .isEqualTo(m.readTree(first.body()).get("pod").get("name").asText());
                    assertThat(posted.get(0)).doesNotContain("hook-secret").doesNotContain(TestCluster.wgKey(1));
                }
            }
        } finally {
            answered.countDown();
            hook.stop(0);
            auditLogger.detachAppender(auditLines);
        }
    }
}
