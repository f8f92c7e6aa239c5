package io.unboundedcloud.playpen.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * deploy/monitoring (optional kustomize component) rendered on top of deploy/ with the real kubectl: the
 * scrape path reaches the management listener, and every metric the dashboard and the alerts query is one
 * the operator actually exports.
 */
class MonitoringComponentTest {
    static final Pattern METRIC = Pattern.compile("\\bplaypen_[a-z0-9_]+");
    static List<ObjectNode> docs;

    @BeforeAll
    static void render() throws Exception {
        Path overlay = RenderedDeploy.projectDir().resolve("target/monitoring-overlay");
        Files.createDirectories(overlay);
        Files.writeString(overlay.resolve("kustomization.yaml"),
                "resources: [../../deploy]\ncomponents: [../../deploy/monitoring]\n");
        Path out = Files.createTempFile("kustomize-monitoring-", ".yaml");
        Path err = Files.createTempFile("kustomize-monitoring-", ".err");
        try {
            Process p = new ProcessBuilder(RenderedDeploy.kubectl().toString(), "kustomize", overlay.toString())
                    .redirectOutput(out.toFile()).redirectError(err.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start();
            assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
            assertThat(p.exitValue()).as(Files.readString(err)).isZero();
            docs = RenderedDeploy.parse(Files.readString(out, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    static ObjectNode one(String kind, String name) {
        return docs.stream().filter(d -> kind.equals(d.path("kind").asText()) && name.equals(d.path("metadata").path("name").asText()))
                .findFirst().orElseThrow(() -> new AssertionError("no " + kind + "/" + name + " rendered"));
    }

    static boolean selects(JsonNode selector, JsonNode labels) {
        var it = selector.fields();
        boolean any = false;
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            any = true;
            if (!e.getValue().asText().equals(labels.path(e.getKey()).asText(null))) {
                return false;
            }
        }
        return any;
    }

    @Test
    void prometheusReachesTheManagementListenerOfTheOperatorPods() {
        ObjectNode deployment = one("Deployment", "playpen-operator");
        ObjectNode service = one("Service", "playpen-operator-metrics");
        ObjectNode monitor = one("ServiceMonitor", "playpen-operator");
        String ns = deployment.path("metadata").path("namespace").asText();
        for (ObjectNode d : List.of(service, monitor, one("PrometheusRule", "playpen-operator"),
                one("ConfigMap", "playpen-operator-dashboard"))) {
            assertThat(d.path("metadata").path("namespace").asText()).as(d.path("kind").asText()).isEqualTo(ns);
        }
        JsonNode podLabels = deployment.path("spec").path("template").path("metadata").path("labels");
        assertThat(selects(service.path("spec").path("selector"), podLabels)).as("Service selects the operator pods").isTrue();
        assertThat(selects(monitor.path("spec").path("selector").path("matchLabels"), service.path("metadata").path("labels")))
                .as("ServiceMonitor selects the metrics Service").isTrue();
        assertThat(selects(monitor.path("spec").path("selector").path("matchLabels"),
                one("Service", "playpen-operator").path("metadata").path("labels"))).as("but not the API Service").isFalse();

        // the args as the operator parses them: the management listener is on the pod's address
        List<String> args = new ArrayList<>();
        deployment.path("spec").path("template").path("spec").path("containers").get(0).path("args").forEach(a -> args.add(a.asText()));
        OperatorConfig config = OperatorConfig.parse(args.toArray(new String[0]));
        assertThat(config.managementHost()).isEqualTo("0.0.0.0");
        JsonNode port = service.path("spec").path("ports").get(0);
        assertThat(port.path("targetPort").asInt()).isEqualTo(config.managementPort());
        assertThat(monitor.path("spec").path("endpoints").get(0).path("port").asText()).isEqualTo(port.path("name").asText());
        assertThat(monitor.path("spec").path("endpoints").get(0).path("path").asText()).isEqualTo("/metrics");
        assertThat(one("ConfigMap", "playpen-operator-dashboard").path("metadata").path("labels").path("grafana_dashboard").asText())
                .isEqualTo("1");
    }

    @Test
    void everyMetricTheDashboardAndTheAlertsQueryIsExported() throws Exception {
        Set<String> queried = new TreeSet<>();
        String dashboard = one("ConfigMap", "playpen-operator-dashboard").path("data").path("playpen-operator.json").asText();
        new ObjectMapper().readTree(dashboard).path("panels").forEach(p -> p.path("targets").forEach(t -> names(t.path("expr").asText(), queried)));
        Set<String> alerts = new TreeSet<>();
        one("PrometheusRule", "playpen-operator").path("spec").path("groups").forEach(g -> g.path("rules").forEach(r -> {
            alerts.add(r.path("alert").asText());
            names(r.path("expr").asText(), queried);
        }));
        assertThat(alerts).contains("PlaypenNoIdlePods", "PlaypenAllocErrorRatioHigh", "PlaypenReconcileErrors",
                "PlaypenNoLeader", "PlaypenHostPortRangeExhausted", "PlaypenTrustBundleInvalid", "PlaypenPoolBackingOff",
                "PlaypenPoolUnhealthyPods", "PlaypenPoolRolloutStuck");
        assertThat(queried).hasSizeGreaterThanOrEqualTo(12);

        Set<String> exported = new TreeSet<>();
        try (TestCluster cluster = TestCluster.start()) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            int mgmt = OperatorHarness.freePort();
            try (OperatorHarness op = new OperatorHarness(cluster, "--management-addr=127.0.0.1:" + mgmt,
                    "--runner-amd64-count=1", "--reconcile-interval=10m")) {
                // a little traffic so the per-request series exist, as they do in any running cluster
                cluster.create(TestCluster.readyRunner("amd64", 51830, "node-a"));
                op.awaitCache(c -> c.stream().anyMatch(p -> p.getMetadata().getName().endsWith("51830")));
                assertThat(op.alloc("{\"idempotencyKey\":\"m\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(1) + "\"}")
                        .statusCode()).isEqualTo(200);
                assertThat(op.dealloc("{\"idempotencyKey\":\"m\"}").statusCode()).isEqualTo(204);
                String scrape = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + mgmt + "/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
                for (String line : scrape.split("\n")) {
                    if (!line.isEmpty() && !line.startsWith("#")) {
                        exported.add(line.split("[{ ]", 2)[0]);
                    }
                }
            }
        }
        assertThat(exported).as("exported by the operator").containsAll(queried);
    }

    static void names(String expr, Set<String> into) {
        Matcher m = METRIC.matcher(expr);
        while (m.find()) {
            into.add(m.group());
        }
    }
}
