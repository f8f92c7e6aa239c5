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
import java.util.stream.StreamSupport;

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
                "PlaypenPoolUnhealthyPods", "PlaypenPoolRolloutStuck", "PlaypenPoolCreatesRefused");
        assertThat(queried).hasSizeGreaterThanOrEqualTo(12);

        Set<String> exported = new TreeSet<>();
        try (TestCluster cluster = TestCluster.start()) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            try (OperatorHarness op = new OperatorHarness(cluster, "--management-addr=127.0.0.1:0",
                    "--runner-amd64-count=1", "--reconcile-interval=10m")) {
                int mgmt = op.app.managementAddress().getPort();
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

    /**
     * The Deployment keeps no control-plane pool (--control-plane-count=0) but names a version, so the operator
     * exports playpen_pods{resource_type="controlPlane",state="idle"} 0 for it from the start, forever. The
     * no-idle-pods alert must fire only for pools the operator keeps, or every install pages from its first ten
     * minutes on; and it must still fire for a kept pool that has run dry.
     */
    @Test
    void noIdlePodsFiresOnlyForPoolsTheDeploymentKeeps() throws Exception {
        String expr = noIdlePodsExpr();
        List<String> poolFlags = new ArrayList<>();
        one("Deployment", "playpen-operator").path("spec").path("template").path("spec").path("containers").get(0).path("args")
                .forEach(a -> {
                    if (a.asText().matches("--(runner-(amd|arm)64-count|control-plane-count|control-plane-versions)=.*")) {
                        poolFlags.add(a.asText());
                    }
                });
        assertThat(poolFlags).contains("--control-plane-count=0", "--runner-amd64-count=1");

        List<Sample> scrape = scrapeAfterAPoolPass(poolFlags, true);
        assertThat(scrape).as("the unkept control-plane pool is exported with no idle pod")
                .anyMatch(x -> x.name.equals("playpen_pods") && "controlPlane".equals(x.labels.get("resource_type"))
                        && "idle".equals(x.labels.get("state")) && x.value == 0);
        assertThat(firing(expr, scrape)).as("%s on the Deployment's own pools", expr).isEmpty();

        // the same scrape once the kept amd64 pool has run dry
        List<Sample> dry = scrape.stream().map(x -> (x.name.equals("playpen_pods") && "idle".equals(x.labels.get("state"))
                || x.name.equals("playpen_pool_ready_pods")) && "amd64".equals(x.labels.get("variant"))
                        ? new Sample(x.name, x.labels, 0) : x).toList();
        assertThat(firing(expr, dry)).containsExactly(Map.of("resource_type", "runner", "variant", "amd64"));
    }

    /**
     * A kept pool whose pods never become ready (Pending for want of a node that fits, an image that does not
     * start) has idle pods, but none to hand out: its allocations answer 503 just as with no pod at all, and the
     * no-idle-pods alert, whose runbook starts with such Pending pods, must fire for it.
     */
    @Test
    void noIdlePodsFiresForAKeptPoolWhosePodsNeverBecomeReady() throws Exception {
        String expr = noIdlePodsExpr();
        // the test cluster runs no kubelet: the pods the pools create stay Pending
        List<Sample> scrape = scrapeAfterAPoolPass(List.of("--runner-amd64-count=1", "--runner-arm64-count=1",
                "--control-plane-count=0", "--control-plane-versions=v1.33.0"), false);
        assertThat(scrape).as("the pools' pods are there, idle and not ready")
                .anyMatch(x -> x.name.equals("playpen_pods") && "idle".equals(x.labels.get("state"))
                        && "amd64".equals(x.labels.get("variant")) && x.value > 0)
                .noneMatch(x -> x.name.equals("playpen_pool_ready_pods") && x.value > 0);
        assertThat(firing(expr, scrape)).containsExactlyInAnyOrder(Map.of("resource_type", "runner", "variant", "amd64"),
                Map.of("resource_type", "runner", "variant", "arm64"));
    }

    /**
     * Events the API server refuses for another reason than RBAC (5xx, invalid, unreachable) are as lost as those
     * dropped: the events alert, whose runbook names both, watches both counters, each alone enough to fire it.
     */
    @Test
    void theEventsAlertWatchesDroppedAndFailedEvents() {
        JsonNode rule = StreamSupport.stream(one("PrometheusRule", "playpen-operator").path("spec").path("groups").spliterator(), false)
                .flatMap(g -> StreamSupport.stream(g.path("rules").spliterator(), false))
                .filter(r -> "PlaypenEventsDropped".equals(r.path("alert").asText())).findFirst().orElseThrow();
        String expr = rule.path("expr").asText();
        Set<String> queried = new TreeSet<>();
        names(expr, queried);
        assertThat(queried).as(expr).contains("playpen_events_dropped_total", "playpen_events_failed_total");
        // a counter with no series must not hide the other: each side is kept on its own (or vector(0))
        assertThat(expr.replaceAll("\\s+", " ")).as(expr)
                .contains("(sum(rate(playpen_events_dropped_total[10m])) or vector(0))")
                .contains("(sum(rate(playpen_events_failed_total[10m])) or vector(0))");
    }

    /**
     * With --pool-max-surge=0 rolling replacement is off: stale idle pods stay until they are allocated, and a
     * healthy pool holds them for good. The rollout alert must not fire for such a pool, and must still fire for a
     * pool whose rollout should progress (a surge) but does not (its new pods never become ready).
     */
    @Test
    void rolloutStuckFiresOnlyForPoolsThatRollOut() throws Exception {
        String expr = alertExpr("PlaypenPoolRolloutStuck");
        // the test cluster's ready runners run another image than the operator's template: both pools hold a stale
        // ready pod, and the new pods the pools create stay Pending (no kubelet)
        List<String> flags = List.of("--runner-amd64-count=1", "--runner-arm64-count=1", "--control-plane-count=0",
                "--control-plane-versions=v1.33.0", "--runner-image=example.com/runner:v2");
        List<String> off = new ArrayList<>(flags);
        off.add("--pool-max-surge=0");
        List<Sample> kept = scrapeAfterAPoolPass(off, true);
        assertThat(kept).as("the stale pods stay with rolling replacement off")
                .anyMatch(x -> x.name.equals("playpen_pool_stale_pods") && "amd64".equals(x.labels.get("variant")) && x.value > 0);
        assertThat(firing(expr, kept)).as("%s on pools run with --pool-max-surge=0", expr).isEmpty();

        List<String> on = new ArrayList<>(flags);
        on.add("--pool-max-surge=1");
        List<Sample> stuck = scrapeAfterAPoolPass(on, true);
        assertThat(firing(expr, stuck)).as("%s on pools whose replacements never become ready", expr)
                .containsExactlyInAnyOrder(Map.of("resource_type", "runner", "variant", "amd64"),
                        Map.of("resource_type", "runner", "variant", "arm64"));
    }

    /**
     * A pool that wants no idle pod (its count flag is 0) rolls nothing out, whatever --pool-max-surge says: a pod
     * of another template the Go operator left there (no template hash) stays until it is allocated, by design, and
     * the rollout alert must not fire for it.
     */
    @Test
    void rolloutStuckDoesNotFireForAPoolThatWantsNoPods() throws Exception {
        String expr = alertExpr("PlaypenPoolRolloutStuck");
        List<Sample> scrape = scrapeAfterAPoolPass(List.of("--runner-amd64-count=1", "--runner-arm64-count=0",
                "--control-plane-count=0", "--control-plane-versions=v1.33.0", "--runner-image=example.com/runner:v2",
                "--pool-max-surge=1"), true);
        assertThat(scrape).as("the arm64 pool keeps its stale pod")
                .anyMatch(x -> x.name.equals("playpen_pool_stale_pods") && "arm64".equals(x.labels.get("variant")) && x.value > 0);
        assertThat(firing(expr, scrape)).as("%s with a pool of count 0", expr)
                .containsExactly(Map.of("resource_type", "runner", "variant", "amd64"));
    }

    static String alertExpr(String alert) {
        return StreamSupport.stream(one("PrometheusRule", "playpen-operator").path("spec").path("groups").spliterator(), false)
                .flatMap(g -> StreamSupport.stream(g.path("rules").spliterator(), false))
                .filter(r -> alert.equals(r.path("alert").asText())).findFirst().orElseThrow()
                .path("expr").asText();
    }

    static String noIdlePodsExpr() {
        return StreamSupport.stream(one("PrometheusRule", "playpen-operator").path("spec").path("groups").spliterator(), false)
                .flatMap(g -> StreamSupport.stream(g.path("rules").spliterator(), false))
                .filter(r -> "PlaypenNoIdlePods".equals(r.path("alert").asText())).findFirst().orElseThrow()
                .path("expr").asText();
    }

    /**
     * One scrape of an operator run with {@code poolFlags} on nodes of both architectures, taken once a pool pass
     * has filled every runner pool; with {@code ready}, each runner pool has a ready idle pod to begin with.
     */
    static List<Sample> scrapeAfterAPoolPass(List<String> poolFlags, boolean ready) throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            cluster.addNode("node-b", "arm64", "203.0.113.11");
            if (ready) {
                cluster.create(TestCluster.readyRunner("amd64", 51830, "node-a"));
                cluster.create(TestCluster.readyRunner("arm64", 51831, "node-b"));
            }
            List<String> flags = new ArrayList<>(List.of("--management-addr=127.0.0.1:0"));
            flags.addAll(poolFlags);
            try (OperatorHarness op = new OperatorHarness(cluster, flags.toArray(new String[0]))) {
                int mgmt = op.app.managementAddress().getPort();
                HttpClient http = HttpClient.newHttpClient();
                java.util.concurrent.atomic.AtomicReference<List<Sample>> last = new java.util.concurrent.atomic.AtomicReference<>();
                OperatorHarness.awaitTrue(() -> {
                    try {
                        last.set(samples(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + mgmt + "/metrics"))
                                .build(), HttpResponse.BodyHandlers.ofString()).body()));
                    } catch (Exception e) {
                        return false;
                    }
                    // a pool pass has run: the kept pools report what they want, and have their idle pod (ready
                    // when asked for)
                    return last.get().stream().anyMatch(x -> x.name.equals("playpen_pool_desired_pods") && x.value > 0)
                            && last.get().stream().filter(x -> x.name.equals("playpen_pods") && "idle".equals(x.labels.get("state"))
                                    && "runner".equals(x.labels.get("resource_type"))).allMatch(x -> x.value > 0)
                            && (!ready || last.get().stream().filter(x -> x.name.equals("playpen_pool_ready_pods")
                                    && "runner".equals(x.labels.get("resource_type"))).allMatch(x -> x.value > 0));
                }, java.time.Duration.ofSeconds(60), "a pool pass with every runner pool filled");
                return last.get();
            }
        }
    }

    /**
     * Every label an alert's annotations print is one each branch of its expression keeps: a branch that
     * aggregates it away fires with that label empty ("No free hostPort left for  pods").
     */
    @Test
    void everyLabelAnAlertPrintsIsKeptByItsExpression() {
        Pattern printed = Pattern.compile("\\$labels\\.(\\w+)");
        Pattern by = Pattern.compile("\\bby \\(([^)]*)\\)");
        List<String> wrong = new ArrayList<>();
        one("PrometheusRule", "playpen-operator").path("spec").path("groups").forEach(g -> g.path("rules").forEach(r -> {
            Set<String> used = new TreeSet<>();
            r.path("annotations").forEach(a -> {
                // a label printed only inside {{ with $labels.x }} ... {{ end }} may be absent
                Matcher m = printed.matcher(a.asText().replaceAll("\\{\\{ with \\$labels\\.\\w+ }}.*?\\{\\{ end }}", ""));
                while (m.find()) {
                    used.add(m.group(1));
                }
            });
            for (String branch : r.path("expr").asText().split("\\s+or\\s+")) {
                Set<String> kept = new TreeSet<>();
                Matcher m = by.matcher(branch);
                if (m.find()) {
                    kept.addAll(List.of(m.group(1).trim().split("\\s*,\\s*")));
                }
                for (String label : used) {
                    if (!kept.contains(label)) {
                        wrong.add(r.path("alert").asText() + ": " + label + " not kept by " + branch.trim());
                    }
                }
            }
        }));
        assertThat(wrong).isEmpty();
    }

    record Sample(String name, Map<String, String> labels, double value) {
    }

    static final Pattern SAMPLE = Pattern.compile("([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{(.*)\\})? (\\S+)");
    static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");

    static List<Sample> samples(String exposition) {
        List<Sample> out = new ArrayList<>();
        for (String line : exposition.split("\n")) {
            Matcher m = SAMPLE.matcher(line);
            if (line.startsWith("#") || !m.matches()) {
                continue;
            }
            Map<String, String> labels = new java.util.TreeMap<>();
            Matcher l = LABEL.matcher(m.group(2) == null ? "" : m.group(2));
            while (l.find()) {
                labels.put(l.group(1), l.group(2));
            }
            out.add(new Sample(m.group(1), labels, Double.parseDouble(m.group(3))));
        }
        return out;
    }

    /** {@code max by (l, ...) (metric{k="v", ...}) OP n}, optionally parenthesised. */
    static final Pattern MAX_BY = Pattern.compile(
            "\\(?\\s*max by \\(([^)]*)\\)\\s*\\((\\w+)(?:\\{([^}]*)\\})?\\)\\s*(==|>)\\s*([0-9.]+)\\s*\\)?");

    /**
     * The label sets the expression returns on one scrape (one replica), for the forms these alerts use:
     * {@code max by (...) (m{...}) OP n} alone or joined by {@code and on (...)} with another of that form.
     */
    static Set<Map<String, String>> firing(String expr, List<Sample> scrape) {
        String[] sides = expr.trim().split("\\s+and on \\(([^)]*)\\)\\s+");
        assertThat(sides.length).as("expression form: %s", expr).isBetween(1, 2);
        Set<Map<String, String>> result = side(sides[0], scrape);
        if (sides.length == 2) {
            Matcher on = Pattern.compile("and on \\(([^)]*)\\)").matcher(expr);
            assertThat(on.find()).isTrue();
            List<String> keys = List.of(on.group(1).split("\\s*,\\s*"));
            Set<Map<String, String>> right = new java.util.HashSet<>();
            side(sides[1], scrape).forEach(r -> right.add(project(r, keys)));
            result.removeIf(r -> !right.contains(project(r, keys)));
        }
        return result;
    }

    static Set<Map<String, String>> side(String s, List<Sample> scrape) {
        Matcher m = MAX_BY.matcher(s.trim());
        assertThat(m.matches()).as("expression form: %s", s).isTrue();
        List<String> by = List.of(m.group(1).trim().split("\\s*,\\s*"));
        Map<String, String> match = new java.util.HashMap<>();
        Matcher l = LABEL.matcher(m.group(3) == null ? "" : m.group(3));
        while (l.find()) {
            match.put(l.group(1), l.group(2));
        }
        Map<Map<String, String>, Double> max = new java.util.HashMap<>();
        scrape.stream().filter(x -> x.name.equals(m.group(2)))
                .filter(x -> match.entrySet().stream().allMatch(e -> e.getValue().equals(x.labels.get(e.getKey()))))
                .forEach(x -> max.merge(project(x.labels, by), x.value, Math::max));
        double n = Double.parseDouble(m.group(5));
        Set<Map<String, String>> out = new java.util.HashSet<>();
        max.forEach((k, v) -> {
            if ("==".equals(m.group(4)) ? v == n : v > n) {
                out.add(k);
            }
        });
        return out;
    }

    static Map<String, String> project(Map<String, String> labels, List<String> keys) {
        Map<String, String> out = new java.util.TreeMap<>();
        keys.forEach(k -> {
            if (labels.containsKey(k)) {
                out.put(k, labels.get(k));
            }
        });
        return out;
    }

    static void names(String expr, Set<String> into) {
        Matcher m = METRIC.matcher(expr);
        while (m.find()) {
            into.add(m.group());
        }
    }
}
