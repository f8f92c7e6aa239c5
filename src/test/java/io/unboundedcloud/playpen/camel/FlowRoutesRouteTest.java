package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.fabric8.kubernetes.api.model.Event;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The side-effect routes end to end: the audit line of every allocation decision (allocated, replayed, conflict,
 * forbidden, deallocated, unknown-key, expired), never with a key; the Events written through the kube-event route;
 * camel-micrometer's per-route and per-step metrics in the same scrape as playpen_*.
 */
class FlowRoutesRouteTest {
    static final ObjectMapper M = new ObjectMapper();
    static TestCluster cluster;
    static OperatorHarness op;
    static final ListAppender<ILoggingEvent> AUDIT = new ListAppender<>();
    static final Logger AUDIT_LOGGER = (Logger) LoggerFactory.getLogger("playpen.audit");

    @BeforeAll
    static void up() throws Exception {
        AUDIT.start();
        AUDIT_LOGGER.addAppender(AUDIT);
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        op = new OperatorHarness(cluster, "--management-addr=127.0.0.1:0", "--playpen-ttl=1h",
                "--reconcile-interval=10m", "--runner-amd64-count=0");
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        cluster.create(TestCluster.readyRunner("amd64", 51821, "node-a"));
        op.awaitCache(c -> c.size() == 2);
    }

    @AfterAll
    static void down() {
        if (op != null) {
            op.close();
        }
        if (cluster != null) {
            cluster.close();
        }
        AUDIT_LOGGER.detachAppender(AUDIT);
    }

    static String alloc(String key, int wg) {
        return "{\"idempotencyKey\":\"" + key + "\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(wg) + "\"}";
    }

    static List<JsonNode> auditLines() throws Exception {
        List<JsonNode> out = new ArrayList<>();
        for (ILoggingEvent e : CapturedLogs.snapshot(AUDIT)) {
            out.add(M.readTree(e.getFormattedMessage()));
        }
        return out;
    }

    static List<String> summary() throws Exception {
        return auditLines().stream().map(j -> j.get("user").asText() + " " + j.get("verb").asText() + " "
                + j.get("outcome").asText() + " " + j.get("allocation").asText()).toList();
    }

    @Test
    void everyDecisionIsOneAuditLineThroughTheRoutesAndNoneCarriesAKey() throws Exception {
        String kept = "audit-key-kept-0001";
        String freed = "audit-key-freed-0002";
        HttpResponse<String> first = op.alloc(alloc(kept, 1));
        assertThat(first.statusCode()).isEqualTo(200);
        String pod = M.readTree(first.body()).get("pod").get("name").asText();
        assertThat(op.alloc(alloc(kept, 1)).statusCode()).as("replay").isEqualTo(200);
        assertThat(op.alloc(alloc(kept, 2)).statusCode()).as("same key, other request").isEqualTo(409);
        HttpResponse<String> mallory = op.kubectlPost(op.frontProxy(), "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs",
                alloc("mallory-key-0003", 3), "mallory", "others");
        assertThat(mallory.statusCode()).isEqualTo(403);
        HttpResponse<String> second = op.alloc(alloc(freed, 4));
        assertThat(second.statusCode()).isEqualTo(200);
        String other = M.readTree(second.body()).get("pod").get("name").asText();
        assertThat(op.dealloc("{\"idempotencyKey\":\"" + freed + "\"}").statusCode()).isEqualTo(204);
        assertThat(op.dealloc("{\"idempotencyKey\":\"never-used-0004\"}").statusCode()).isEqualTo(204);

        // this test's lines: its keys' hashes, or mallory's (refused before the body is read)
        java.util.Set<String> mine = java.util.Set.of(kept, freed, "never-used-0004").stream()
                .map(k -> io.unboundedcloud.playpen.model.Hashes.keyHash(k).substring(0, 8))
                .collect(java.util.stream.Collectors.toSet());
        java.util.function.Predicate<JsonNode> ours = j -> mine.contains(j.get("keyHashPrefix").asText())
                || "mallory".equals(j.get("user").asText());
        OperatorHarness.awaitTrue(() -> {
            try {
                return auditLines().stream().filter(ours).count() >= 7;
            } catch (Exception e) {
                return false;
            }
        }, Duration.ofSeconds(60), "7 audit lines");
        assertThat(auditLines().stream().filter(ours).map(j -> j.get("user").asText() + " " + j.get("verb").asText()
                + " " + j.get("outcome").asText() + " " + j.get("allocation").asText()).toList()).containsExactly(
                "alice allocate allocated " + pod,
                "alice allocate replayed " + pod,
                "alice allocate conflict ",
                "mallory allocate forbidden ",
                "alice allocate allocated " + other,
                "alice deallocate deallocated " + other,
                "alice deallocate unknown-key ");
        // written off the request threads, by the audit writer's one thread (hence in the order they were decided)
        assertThat(CapturedLogs.snapshot(AUDIT)).extracting(ILoggingEvent::getThreadName).containsOnly("audit-writer");
        for (JsonNode line : auditLines()) {
            List<String> fields = new ArrayList<>();
            line.fieldNames().forEachRemaining(fields::add);
            assertThat(fields).containsExactly("time", "user", "verb", "allocation", "keyHashPrefix", "outcome");
            assertThat(line.get("time").asText()).matches("\\d{4}-\\d\\d-\\d\\dT.*Z");
            if (!"forbidden".equals(line.get("outcome").asText())) {
                assertThat(line.get("keyHashPrefix").asText()).as(line.toString()).matches("[0-9a-f]{8}");
            }
        }
        String all = String.join("\n", CapturedLogs.snapshot(AUDIT).stream().map(ILoggingEvent::getFormattedMessage).toList());
        assertThat(all).doesNotContain(kept).doesNotContain(freed).doesNotContain("never-used").doesNotContain("mallory-key")
                .doesNotContain(TestCluster.wgKey(1));
        // the replay and the conflict name the same key hash as the claim
        List<JsonNode> lines = auditLines();
        String keptHash = lines.stream().filter(j -> pod.equals(j.get("allocation").asText())
                && "allocated".equals(j.get("outcome").asText())).findFirst().orElseThrow().get("keyHashPrefix").asText();
        assertThat(lines.stream().filter(j -> "conflict".equals(j.get("outcome").asText())).findFirst().orElseThrow()
                .get("keyHashPrefix").asText()).isEqualTo(keptHash);

        // the Events went through the kube-event route (one exchange per caller) into EventRecorder
        OperatorHarness.awaitTrue(() -> reasons().containsAll(List.of("Allocated", "Deallocated")),
                Duration.ofSeconds(60), "Allocated and Deallocated events");
        assertThat(cluster.client.v1().events().inNamespace("playpen").list().getItems().stream()
                .filter(e -> "Allocated".equals(e.getReason()) && pod.equals(e.getInvolvedObject().getName())).count())
                .as("one Allocated Event for the claim, none for its replay").isEqualTo(1);
        String scrape = scrape();
        assertThat(series(scrape, "routeId=\"kube-event\"")).as(scrape).isNotEmpty();
    }

    @Test
    void routeAndStepMetricsShareTheScrapeWithThePlaypenMetrics() throws Exception {
        assertThat(op.alloc(alloc("metrics-key-0005", 5)).statusCode()).isIn(200, 503);
        String scrape = scrape();
        assertThat(scrape).contains("playpen_alloc_requests_total");
        // per route (route policy) and per step (message history), tagged with the YAML ids
        assertThat(series(scrape, "routeId=\"alloc\"")).as(scrape).anyMatch(l -> l.startsWith("camel_exchanges_total"));
        assertThat(series(scrape, "nodeId=\"alloc-replay-or-claim\"")).as(scrape).isNotEmpty();
        assertThat(series(scrape, "nodeId=\"alloc-authorize\"")).isNotEmpty();
        assertThat(series(scrape, "nodeId=\"alloc-answer\"")).isNotEmpty();
    }

    @Test
    void readinessIsACheckInCamelsHealthRegistryBehindObserveHealth() throws Exception {
        var registry = org.apache.camel.health.HealthCheckRegistry.get(op.app.camelContext());
        var check = registry.getCheck("playpen-ready").orElseThrow();
        assertThat(check.isReadiness()).isTrue();
        assertThat(check.isLiveness()).as("an unready replica is not restarted").isFalse();
        assertThat(check.call().getState()).isEqualTo(org.apache.camel.health.HealthCheck.State.UP);
        assertThat(registry.getCheck("context")).isPresent();
        // leader-only routes are stopped on every other replica: route checks must not make a replica unready
        assertThat(registry.stream().map(c -> c.getId())).noneMatch(id -> id.startsWith("route:"));
        assertThat(org.apache.camel.health.HealthCheckHelper.invokeReadiness(op.app.camelContext()))
                .allMatch(r -> r.getState() == org.apache.camel.health.HealthCheck.State.UP);
        var a = op.app.managementAddress();
        HttpResponse<String> health = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + a.getPort() + "/observe/health/ready")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(health.statusCode()).isEqualTo(200);
    }

    /** A claim that runs out is deleted by its timer; the ttl-expired route writes its Event and audit line. */
    @Test
    void anExpiryIsAuditedAsTheOperatorWithItsEvent() throws Exception {
        try (TestCluster c = TestCluster.start()) {
            c.addNode("node-a", "amd64", "203.0.113.10");
            try (OperatorHarness o = new OperatorHarness(c, "--playpen-ttl=1s", "--reconcile-interval=10m",
                    "--runner-amd64-count=0")) {
                c.create(TestCluster.readyRunner("amd64", 51840, "node-a"));
                o.awaitCache(p -> p.size() == 1);
                HttpResponse<String> r = o.alloc(alloc("expiring-key-0007", 7));
                assertThat(r.statusCode()).isEqualTo(200);
                String pod = M.readTree(r.body()).get("pod").get("name").asText();
                String expected = "system:playpen-operator expire expired " + pod;
                OperatorHarness.awaitTrue(() -> {
                    try {
                        return summary().contains(expected);
                    } catch (Exception e) {
                        return false;
                    }
                }, Duration.ofSeconds(60), "the expiry's audit line");
                JsonNode line = auditLines().stream().filter(j -> "expire".equals(j.get("verb").asText())
                        && pod.equals(j.get("allocation").asText())).findFirst().orElseThrow();
                String claimHash = auditLines().stream().filter(j -> "allocate".equals(j.get("verb").asText())
                        && pod.equals(j.get("allocation").asText())).findFirst().orElseThrow().get("keyHashPrefix").asText();
                assertThat(line.get("keyHashPrefix").asText()).isEqualTo(claimHash);
                OperatorHarness.awaitTrue(() -> c.client.v1().events().inNamespace("playpen").list().getItems().stream()
                        .anyMatch(e -> "Expired".equals(e.getReason())), Duration.ofSeconds(60), "Expired event");
                assertThat(o.app.camelContext().getRoute("ttl-expired")).isNotNull();
            }
        }
    }

    /** Camel's test kit on the live routes: a mock endpoint woven after record-event sees each Event once. */
    @Test
    void theEventRouteCarriesOneKubeEventPerNewClaimAndNoneForAReplay() throws Exception {
        org.apache.camel.CamelContext ctx = op.app.camelContext();
        org.apache.camel.builder.AdviceWith.adviceWith(ctx, "kube-event",
                a -> a.weaveById("record-event").after().to("mock:events"));
        org.apache.camel.component.mock.MockEndpoint events = ctx.getEndpoint("mock:events",
                org.apache.camel.component.mock.MockEndpoint.class);
        events.expectedMessageCount(1);
        events.message(0).body().isInstanceOf(KubeEvent.class);
        int auditBefore = CapturedLogs.snapshot(AUDIT).size();
        cluster.create(TestCluster.readyRunner("amd64", 51830, "node-a"));
        op.awaitCache(c -> c.stream().anyMatch(p -> p.getMetadata().getName().endsWith("51830")));
        String body = alloc("mock-key-0006", 6);
        HttpResponse<String> first = op.alloc(body);
        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(op.alloc(body).statusCode()).isEqualTo(200);
        OperatorHarness.awaitTrue(() -> CapturedLogs.snapshot(AUDIT).size() >= auditBefore + 2, Duration.ofSeconds(60), "two audit lines");
        events.assertIsSatisfied(5000);
        KubeEvent e = events.getExchanges().get(0).getMessage().getBody(KubeEvent.class);
        assertThat(e.reason()).isEqualTo("Allocated");
        assertThat(e.type()).isEqualTo(KubeEvent.NORMAL);
        assertThat(e.about().getMetadata().getName()).isEqualTo(M.readTree(first.body()).get("pod").get("name").asText());
        assertThat(e.message()).doesNotContain("mock-key-0006");
    }

    /**
     * Every step of every route, and of the error handling they share, has an id of its own: Hawtio, the route
     * metrics and advice find a step by the name the YAML gives it, not by a number Camel makes up from its place.
     */
    @Test
    void everyStepOfEveryRouteIsNamed() {
        org.apache.camel.model.Model model = op.app.camelContext().getCamelContextExtension()
                .getContextPlugin(org.apache.camel.model.Model.class);
        List<String> unnamed = new ArrayList<>();
        int steps = 0;
        for (org.apache.camel.model.RouteDefinition route : model.getRouteDefinitions()) {
            assertThat(route.hasCustomIdAssigned()).as("a route without an id").isTrue();
            for (org.apache.camel.model.ProcessorDefinition<?> step : route.getOutputs()) {
                steps += unnamedSteps(route.getId(), step, unnamed);
            }
        }
        for (org.apache.camel.model.RouteConfigurationDefinition config : model.getRouteConfigurationDefinitions()) {
            for (org.apache.camel.model.OnExceptionDefinition handler : config.getOnExceptions()) {
                for (org.apache.camel.model.ProcessorDefinition<?> step : handler.getOutputs()) {
                    steps += unnamedSteps(config.getId(), step, unnamed);
                }
            }
        }
        assertThat(steps).as("steps walked").isGreaterThan(100);
        assertThat(unnamed).as("steps without an id").isEmpty();
    }

    /** How many steps {@code step} is (itself and those within it); each without an id is added to {@code unnamed}. */
    private static int unnamedSteps(String route, org.apache.camel.model.OptionalIdentifiedDefinition<?> step,
            List<String> unnamed) {
        if (!step.hasCustomIdAssigned()) {
            unnamed.add(route + ": " + step.getShortName() + " " + step.getLabel());
        }
        List<org.apache.camel.model.OptionalIdentifiedDefinition<?>> within = new ArrayList<>();
        if (step instanceof org.apache.camel.model.ChoiceDefinition choice) {
            within.addAll(choice.getWhenClauses());
            if (choice.getOtherwise() != null) {
                within.add(choice.getOtherwise());
            }
        } else if (step instanceof org.apache.camel.model.ProcessorDefinition<?> processor) {
            within.addAll(processor.getOutputs());
        } else if (step instanceof org.apache.camel.model.OutputNode branch) {
            within.addAll(branch.getOutputs());
        }
        int n = 1;
        for (org.apache.camel.model.OptionalIdentifiedDefinition<?> s : within) {
            n += unnamedSteps(route, s, unnamed);
        }
        return n;
    }

    static List<String> reasons() {
        return cluster.client.v1().events().inNamespace("playpen").list().getItems().stream().map(Event::getReason).toList();
    }

    static List<String> series(String scrape, String tag) {
        return scrape.lines().filter(l -> !l.startsWith("#") && l.contains(tag)).toList();
    }

    static String scrape() throws Exception {
        var a = op.app.managementAddress();
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + a.getPort()
                + "/observe/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
    }
}
