package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import org.apache.camel.api.management.ManagedCamelContext;
import org.apache.camel.api.management.mbean.ManagedRouteMBean;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.kube.PoolReconciler;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The pools end to end against the mock API: the read-only pools resource (Table, objects, conditions, errors,
 * authorization), the pass as route steps, healing with its Events (an evicted idle pod is replaced, an evicted
 * allocated one only reported), a rollout that never hands out a stale pod once a current one is ready; how the
 * pool-pass route ends a pass that failed.
 */
class PoolsRouteTest {
    static final ObjectMapper M = new ObjectMapper();
    static final String POOLS = "/apis/playpen.unbounded-cloud.io/v1alpha1/pools";
    static final String TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
            + "g=meta.k8s.io,application/json";
    static final String POST_PODS = "POST /api/v1/namespaces/playpen/pods";
    @RegisterExtension
    final CapturedLogs camel = CapturedLogs.named("org.apache.camel");
    @RegisterExtension
    final CapturedLogs pool = CapturedLogs.of(PoolReconciler.class);
    TestCluster cluster;
    OperatorHarness op;
    HttpClient http;

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
        http = op.frontProxy();
    }

    HttpResponse<String> get(String path, String accept, String user, String... groups) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url(path))).timeout(Duration.ofSeconds(20)).GET();
        if (accept != null) {
            b.header("Accept", accept);
        }
        return http.send(OperatorHarness.asUser(b, user, groups).build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> get(String path, String accept) throws Exception {
        return get(path, accept, "alice", "playpen-users");
    }

    /** The idle pods the operator's answer for the pool shows now. */
    private int idleShown(String pool) {
        try {
            return M.readTree(get(POOLS + "/" + pool, "application/json").body()).at("/status/idle").asInt();
        } catch (Exception e) {
            throw new AssertionError("reading pool " + pool, e);
        }
    }

    /** Marks the pool's pods as the kubelet and runner would: scheduled, running, ready, key published. */
    void makeReady(String name) {
        Pod p = cluster.client.pods().inNamespace("playpen").withName(name).get();
        String arch = ManagedPods.architecture(p);
        Pod ready = TestCluster.readyRunner(arch, ManagedPods.hostPort(p).orElseThrow(),
                arch.equals("arm64") ? "node-b" : "node-a").build();
        cluster.client.pods().inNamespace("playpen").withName(name).edit(x -> new PodBuilder(x)
                .editMetadata().addToAnnotations(ready.getMetadata().getAnnotations()).endMetadata()
                .editSpec().withNodeName(ready.getSpec().getNodeName()).endSpec()
                .withStatus(ready.getStatus()).build());
    }

    List<String> names() {
        List<String> out = new ArrayList<>();
        cluster.pods().forEach(p -> out.add(p.getMetadata().getName()));
        return out.stream().sorted().toList();
    }

    /** Events on the pods, and on the operator (the APIService without POD_NAME: in "default"). */
    boolean event(String reason, String about) {
        return cluster.client.v1().events().inAnyNamespace().list().getItems().stream()
                .anyMatch(e -> reason.equals(e.getReason()) && (about == null
                        || about.equals(e.getInvolvedObject().getName())));
    }

    Event theEvent(String reason) {
        return cluster.client.v1().events().inAnyNamespace().list().getItems().stream()
                .filter(e -> reason.equals(e.getReason())).findFirst().orElseThrow();
    }

    @Test
    void kubectlGetPoolsShowsATableWithTheColumnsOfThePools() throws Exception {
        start("--runner-amd64-count=2", "--runner-arm64-count=1", "--reconcile-interval=10m");
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 3, Duration.ofSeconds(60), "3 pool pods");
        makeReady("playpen-runner-amd64-51820");
        OperatorHarness.awaitTrue(() -> {
            try {
                return get(POOLS + "/runner-amd64", null).body().contains("\"ready\":1");
            } catch (Exception e) {
                return false;
            }
        }, Duration.ofSeconds(60), "a ready pod in the pool");
        HttpResponse<String> r = get(POOLS, TABLE);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("application/json;as=Table;g=meta.k8s.io;v=v1");
        JsonNode t = M.readTree(r.body());
        List<String> columns = new ArrayList<>();
        t.path("columnDefinitions").forEach(c -> columns.add(c.path("name").asText() + (c.path("priority").asInt() > 0
                ? "(wide)" : "")));
        assertThat(columns).containsExactly("Name", "Type", "Arch/Version", "Desired", "Ready", "Idle", "Allocated",
                "Stale", "Unhealthy", "Age", "Template(wide)", "Image(wide)");
        List<String> rows = new ArrayList<>();
        t.path("rows").forEach(row -> {
            List<String> cells = new ArrayList<>();
            row.path("cells").forEach(c -> cells.add(c.asText()));
            rows.add(String.join(" ", cells.subList(0, 9)));
        });
        assertThat(rows).containsExactly("runner-amd64 runner amd64 2 1 2 0 0 0", "runner-arm64 runner arm64 1 0 1 0 0 0",
                "control-plane-v1.33.0 controlPlane v1.33.0 0 0 0 0 0 0");
        // kubectl get pools -o json: a PoolList
        JsonNode list = M.readTree(get(POOLS, "application/json").body());
        assertThat(list.path("kind").asText()).isEqualTo("PoolList");
        assertThat(list.path("items")).hasSize(3);
    }

    /**
     * A pool whose pod creates the API server refuses (RBAC here; a quota or an admission webhook alike) says so in its
     * Degraded condition: the refusal, the API server's message and what to check. A create that succeeds ends it.
     */
    @Test
    void aPoolWhoseCreatesAreRefusedShowsItInItsDegradedCondition() throws Exception {
        String postPods = "POST /api/v1/namespaces/playpen/pods";
        cluster = TestCluster.start();
        cluster.forbidden = key -> key.equals(postPods);
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        op = new OperatorHarness(cluster, "--runner-amd64-count=1", "--runner-arm64-count=0",
                "--reconcile-interval=10m");
        http = op.frontProxy();
        OperatorHarness.awaitTrue(() -> cluster.requestCount(postPods::equals) > 0, Duration.ofSeconds(60),
                "a pod create refused");
        JsonNode degraded = awaitCondition("runner-amd64", "Degraded", "CreateRefused");
        assertThat(degraded.path("status").asText()).isEqualTo("True");
        assertThat(degraded.path("message").asText()).contains("of pool runner-amd64", "HTTP 403",
                "forbidden by the test's RBAC", "ResourceQuota", "admission webhooks");

        cluster.forbidden = key -> false;
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 1, Duration.ofSeconds(60),
                "the pod created once the refusals end");
        awaitCondition("runner-amd64", "Degraded", "Healthy");
    }

    /** The pool's condition of {@code type} once its reason is {@code reason}. */
    JsonNode awaitCondition(String pool, String type, String reason) throws Exception {
        return awaitCondition(op, http, pool, type, reason);
    }

    /**
     * The pool's condition of {@code type} in {@code replica}'s answer (asked through {@code http}), once its reason
     * is {@code reason}.
     */
    static JsonNode awaitCondition(OperatorHarness replica, HttpClient http, String pool, String type, String reason)
            throws Exception {
        java.util.concurrent.atomic.AtomicReference<JsonNode> found = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.atomic.AtomicReference<String> last = new java.util.concurrent.atomic.AtomicReference<>();
        try {
            OperatorHarness.awaitTrue(() -> {
                try {
                    JsonNode p = M.readTree(http.send(OperatorHarness.asUser(HttpRequest.newBuilder(
                            URI.create(replica.url(POOLS + "/" + pool))).timeout(Duration.ofSeconds(20))
                            .header("Accept", "application/json").GET(), "alice", "playpen-users").build(),
                            HttpResponse.BodyHandlers.ofString()).body());
                    last.set(p.at("/status/conditions").toString());
                    for (JsonNode c : p.at("/status/conditions")) {
                        if (type.equals(c.path("type").asText()) && reason.equals(c.path("reason").asText())) {
                            found.set(c);
                            return true;
                        }
                    }
                    return false;
                } catch (Exception e) {
                    return false;
                }
            }, Duration.ofSeconds(60), type + " " + reason + " on " + pool);
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; the conditions last shown: " + last.get(), e);
        }
        return found.get();
    }

    @Test
    void onePoolShowsItsSpecStatusAndConditions() throws Exception {
        start("--runner-amd64-count=2", "--runner-arm64-count=0", "--reconcile-interval=10m");
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 2, Duration.ofSeconds(60), "2 pool pods");
        String hash = cluster.pods().get(0).getMetadata().getLabels().get(PlaypenKeys.TEMPLATE_HASH);
        // the pool's status is the operator's watch's: wait until it has delivered both pods too
        OperatorHarness.awaitTrue(() -> idleShown("runner-amd64") == 2, Duration.ofSeconds(60),
                "the pool's status shows 2 idle pods");
        JsonNode pool = M.readTree(get(POOLS + "/runner-amd64", "application/json").body());
        assertThat(pool.path("kind").asText()).isEqualTo("Pool");
        assertThat(pool.path("apiVersion").asText()).isEqualTo("playpen.unbounded-cloud.io/v1alpha1");
        assertThat(pool.at("/spec/templateHash").asText()).isEqualTo(hash).hasSize(16);
        assertThat(pool.at("/spec/minIdle").asInt()).isEqualTo(2);
        assertThat(pool.at("/spec/maxSurge").asText()).isEqualTo("25%");
        assertThat(pool.at("/status/idle").asInt()).isEqualTo(2);
        assertThat(pool.at("/status/starting").asInt()).isEqualTo(2);
        List<String> conditions = new ArrayList<>();
        pool.at("/status/conditions").forEach(c -> conditions.add(c.path("type").asText() + "=" + c.path("status")
                .asText() + "/" + c.path("reason").asText()));
        assertThat(conditions).containsExactly("Ready=False/Short", "Progressing=True/Starting", "Degraded=False/Healthy");
        assertThat(pool.at("/status/conditions/0/message").asText()).isEqualTo("0 of 2 idle pods ready, 2 starting");
        assertThat(pool.at("/status/conditions/0/lastTransitionTime").asText()).isNotBlank();
    }

    @Test
    void badReadsGetAStatusWithTheRightCode() throws Exception {
        start("--runner-amd64-count=0", "--runner-arm64-count=0", "--reconcile-interval=10m");
        HttpResponse<String> missing = get(POOLS + "/runner-s390x", "application/json");
        assertThat(missing.statusCode()).isEqualTo(404);
        assertThat(M.readTree(missing.body()).path("message").asText())
                .isEqualTo("pools.playpen.unbounded-cloud.io \"runner-s390x\" not found");
        HttpResponse<String> watch = get(POOLS + "?watch=true", "application/json");
        assertThat(watch.statusCode()).isEqualTo(405);
        assertThat(watch.headers().firstValue("Allow")).contains("GET");
        assertThat(M.readTree(watch.body()).path("message").asText()).as("says what to do instead")
                .isEqualTo("watch is not supported on pools: list them again instead (kubectl get pools), for "
                        + "example every 2 seconds with: watch kubectl get pools");
        HttpResponse<String> selector = get(POOLS + "?labelSelector=%3D%3D", "application/json");
        assertThat(selector.statusCode()).as(selector.body()).isEqualTo(400);
        assertThat(M.readTree(selector.body()).path("message").asText()).startsWith("invalid labelSelector");
        HttpResponse<String> field = get(POOLS + "?fieldSelector=spec.x%3Dy", "application/json");
        assertThat(field.statusCode()).isEqualTo(400);
        assertThat(M.readTree(field.body()).path("message").asText()).contains("pools support metadata.name only");
        HttpResponse<String> post = http.send(OperatorHarness.asUser(HttpRequest.newBuilder(URI.create(op.url(POOLS)))
                .POST(HttpRequest.BodyPublishers.ofString("{}")), "alice", "playpen-users").build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(post.statusCode()).as("pools are read-only").isEqualTo(405);
        assertThat(M.readTree(post.body()).path("message").asText()).as("says where a pool's size comes from")
                .startsWith("pools are read-only: ");
        // only JSON is served: protobuf or YAML alone is 406 NotAcceptable; client-go's protobuf-then-JSON is answered
        HttpResponse<String> yaml = get(POOLS, "application/yaml");
        assertThat(yaml.statusCode()).as(yaml.body()).isEqualTo(406);
        assertThat(M.readTree(yaml.body()).path("reason").asText()).isEqualTo("NotAcceptable");
        assertThat(get(POOLS + "/runner-s390x", "application/vnd.kubernetes.protobuf").statusCode()).isEqualTo(406);
        assertThat(get(POOLS, "application/vnd.kubernetes.protobuf,application/json").statusCode()).isEqualTo(200);
        // a resourceVersionMatch without a resourceVersion is a 422 Invalid, as kube-apiserver answers it
        HttpResponse<String> match = get(POOLS + "?resourceVersionMatch=NotOlderThan", "application/json");
        assertThat(match.statusCode()).as(match.body()).isEqualTo(422);
        assertThat(M.readTree(match.body()).path("reason").asText()).isEqualTo("Invalid");
        assertThat(M.readTree(match.body()).path("message").asText())
                .contains("resourceVersionMatch is forbidden unless resourceVersion is provided");
        assertThat(get(POOLS + "?resourceVersion=0&resourceVersionMatch=NotOlderThan", "application/json")
                .statusCode()).isEqualTo(200);
        // its details name ListOptions and carry one cause per error, as kube-apiserver's do, in its field order
        assertThat(match.body()).contains("\"reason\":\"Invalid\",\"details\":{\"group\":\"meta.k8s.io\","
                + "\"kind\":\"ListOptions\",\"causes\":[{\"reason\":\"FieldValueForbidden\",\"message\":\"Forbidden: "
                + "resourceVersionMatch is forbidden unless resourceVersion is provided\",\"field\":"
                + "\"resourceVersionMatch\"}]},\"code\":422}");
        HttpResponse<String> two = get(POOLS + "?resourceVersion=1&resourceVersionMatch=Newest&sendInitialEvents=true",
                "application/json");
        assertThat(two.statusCode()).as(two.body()).isEqualTo(422);
        assertThat(M.readTree(two.body()).path("details")).isEqualTo(M.readTree("{\"group\":\"meta.k8s.io\","
                + "\"kind\":\"ListOptions\",\"causes\":[{\"reason\":\"FieldValueNotSupported\",\"message\":"
                + "\"Unsupported value: \\\"Newest\\\": supported values: \\\"Exact\\\", \\\"NotOlderThan\\\", \\\"\\\"\","
                + "\"field\":\"resourceVersionMatch\"},{\"reason\":\"FieldValueForbidden\",\"message\":\"Forbidden: "
                + "sendInitialEvents is forbidden for list\",\"field\":\"sendInitialEvents\"}]}"));
        // a Role naming one pool (resourceNames) lists it by its name, and nothing else
        var readers = cluster.sarPolicy;
        cluster.sarPolicy = sar -> "erin".equals(sar.getSpec().getUser())
                ? "runner-arm64".equals(sar.getSpec().getResourceAttributes().getName()) : readers.test(sar);
        HttpResponse<String> named = get(POOLS + "?fieldSelector=metadata.name%3Drunner-arm64", "application/json",
                "erin", "named");
        assertThat(named.statusCode()).as(named.body()).isEqualTo(200);
        assertThat(M.readTree(named.body()).at("/items/0/metadata/name").asText()).isEqualTo("runner-arm64");
        assertThat(get(POOLS + "/runner-arm64", "application/json", "erin", "named").statusCode()).isEqualTo(200);
        assertThat(get(POOLS + "/runner-amd64", "application/json", "erin", "named").statusCode()).isEqualTo(403);
        assertThat(get(POOLS, "application/json", "erin", "named").statusCode()).isEqualTo(403);
        // a watch is reviewed with the verb watch, as kube-apiserver reviews it: watch without list is the 405
        cluster.sarPolicy = sar -> "wendy".equals(sar.getSpec().getUser())
                ? "watch".equals(sar.getSpec().getResourceAttributes().getVerb()) : readers.test(sar);
        HttpResponse<String> watcher = get(POOLS + "?watch=1", "application/json", "wendy", "watchers");
        assertThat(watcher.statusCode()).as(watcher.body()).isEqualTo(405);
        assertThat(get(POOLS, "application/json", "wendy", "watchers").statusCode()).isEqualTo(403);
        cluster.sarPolicy = readers;
        // RBAC: a user without get/list on pools is refused, and the review asked about pools
        HttpResponse<String> denied = get(POOLS, "application/json", "mallory", "others");
        assertThat(denied.statusCode()).isEqualTo(403);
        assertThat(M.readTree(denied.body()).path("message").asText()).contains("cannot list resource \"pools\"");
        assertThat(cluster.sarRequests).anyMatch(s -> "pools".equals(s.getSpec().getResourceAttributes().getResource())
                && "list".equals(s.getSpec().getResourceAttributes().getVerb()));
        // a label selector that matches a pool's labels selects it
        JsonNode arm = M.readTree(get(POOLS + "?labelSelector=playpen.unbounded-cloud.io%2Farchitecture%3Darm64",
                "application/json").body());
        assertThat(arm.path("items")).hasSize(1);
        assertThat(arm.at("/items/0/metadata/name").asText()).isEqualTo("runner-arm64");
    }

    @Test
    void discoveryAndOpenApiListPools() throws Exception {
        start("--reconcile-interval=10m");
        JsonNode list = M.readTree(get("/apis/playpen.unbounded-cloud.io/v1alpha1", null).body());
        List<String> resources = new ArrayList<>();
        list.path("resources").forEach(r -> resources.add(r.path("name").asText() + ":" + r.path("verbs")));
        assertThat(resources).contains("pools:[\"get\",\"list\"]");
        JsonNode v3 = M.readTree(get("/openapi/v3/apis/playpen.unbounded-cloud.io/v1alpha1", null).body());
        assertThat(v3.at("/components/schemas/io.unboundedcloud.playpen.v1alpha1.Pool/properties/status/properties")
                .has("conditions")).isTrue();
        assertThat(v3.at("/paths").has("/apis/playpen.unbounded-cloud.io/v1alpha1/pools/{name}")).isTrue();
    }

    @Test
    void thePassRunsAsRouteStepsAndEachSideEffectIsAStep() throws Exception {
        start("--reconcile-interval=10m");
        var ctx = op.app.camelContext();
        for (String id : List.of("pool-pass-now", "pool-assess", "pool-plan", "pool-delete", "pool-create", "pool-finish",
                "pool-deleted-to-event", "pool-created-to-event", "pool-backoff-to-event",
                "pool-unhealthy-allocated-to-event", "pool-exhausted-to-event", "pool-create-refused-to-event")) {
            assertThat(ctx.getProcessor(id)).as("node %s", id).isNotNull();
        }
        long passes = op.app.poolReconciler().passes();
        // a refill runs through the pool-pass route
        var managed = route("pool-pass");
        long exchanges = managed.getExchangesTotal();
        op.app.poolReconciler().requestRefill();
        // both counts: a pass already running when the counts were read (the startup pass, or its refill) can end
        // the route's exchange before the requested one has started
        OperatorHarness.awaitTrue(() -> managed.getExchangesTotal() > exchanges
                && op.app.poolReconciler().passes() > passes, Duration.ofSeconds(60), "a refill through the route");
        assertThat(op.app.poolReconciler().passes()).isGreaterThan(passes);
    }

    @Test
    void anEvictedIdlePodIsReplacedAndAnEvictedAllocatedPodIsOnlyReported() throws Exception {
        start("--runner-amd64-count=1", "--runner-arm64-count=0", "--reconcile-interval=10m");
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 1, Duration.ofSeconds(60), "the pool pod");
        makeReady("playpen-runner-amd64-51820");
        op.awaitCache(c -> c.stream().anyMatch(p -> p.getStatus() != null && "Running".equals(p.getStatus().getPhase())));
        // kubectl patch pod ... --subresource=status: what a node under memory pressure does
        cluster.client.pods().inNamespace("playpen").withName("playpen-runner-amd64-51820").edit(p -> new PodBuilder(p)
                .editStatus().withPhase("Failed").withReason("Evicted").endStatus().build());
        OperatorHarness.awaitTrue(() -> names().equals(List.of("playpen-runner-amd64-51821")), Duration.ofSeconds(60),
                "the evicted pod replaced");
        OperatorHarness.awaitTrue(() -> event("Evicted", "playpen-runner-amd64-51820"), Duration.ofSeconds(60),
                "Warning Evicted on the pod");
        assertThat(theEvent("Evicted").getType()).isEqualTo("Warning");
        assertThat(theEvent("Evicted").getMessage()).isEqualTo(
                "idle pod of pool runner-amd64 is unhealthy (Evicted); deleted and replaced");

        makeReady("playpen-runner-amd64-51821");
        op.awaitCache(c -> c.stream().anyMatch(p -> "playpen-runner-amd64-51821".equals(p.getMetadata().getName())
                && p.getStatus() != null && "Running".equals(p.getStatus().getPhase())));
        assertThat(op.alloc("{\"idempotencyKey\":\"k\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(1) + "\"}")
                .statusCode()).isEqualTo(200);
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 2, Duration.ofSeconds(60), "the refill");
        cluster.client.pods().inNamespace("playpen").withName("playpen-runner-amd64-51821").edit(p -> new PodBuilder(p)
                .editStatus().withPhase("Failed").withReason("Evicted").endStatus().build());
        OperatorHarness.awaitTrue(() -> event("UnhealthyEvicted", "playpen-runner-amd64-51821"), Duration.ofSeconds(60),
                "Warning UnhealthyEvicted on the allocated pod");
        Thread.sleep(500);
        assertThat(names()).as("the allocated pod is the user's: never deleted by the pool")
                .contains("playpen-runner-amd64-51821");
        JsonNode pool = M.readTree(get(POOLS + "/runner-amd64", "application/json").body());
        assertThat(pool.at("/status/unhealthyAllocated/Evicted").asInt()).isEqualTo(1);
        assertThat(pool.at("/status/conditions/2/reason").asText()).isEqualTo("UnhealthyPods");
    }

    @Test
    void aRolloutReplacesStalePodsSurgeFirstAndHandsOutTheCurrentOne() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        // two ready pods of an older image, made by the Go operator (no template hash)
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a").editSpec().editFirstContainer()
                .withImage("example.com/runner:1").endContainer().endSpec());
        cluster.create(TestCluster.readyRunner("amd64", 51821, "node-a").editSpec().editFirstContainer()
                .withImage("example.com/runner:1").endContainer().endSpec());
        op = new OperatorHarness(cluster, "--runner-amd64-count=2", "--runner-image=example.com/runner:2",
                "--pool-max-surge=1", "--reconcile-interval=10m");
        http = op.frontProxy();
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 3, Duration.ofSeconds(60), "one surge pod");
        Thread.sleep(300);
        op.app.poolReconciler().reconcile();
        assertThat(names()).as("surge 1: one new pod, the stale ones stay while it is not ready")
                .containsExactly("playpen-runner-amd64-51820", "playpen-runner-amd64-51821", "playpen-runner-amd64-51822");
        JsonNode rolling = M.readTree(get(POOLS + "/runner-amd64", "application/json").body());
        assertThat(rolling.at("/status/stale").asInt()).isEqualTo(2);
        assertThat(rolling.at("/status/conditions/1/reason").asText()).isEqualTo("RollingOut");

        makeReady("playpen-runner-amd64-51822");
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 3 && !names().contains("playpen-runner-amd64-51820"),
                Duration.ofSeconds(60), "the oldest stale pod retired and the next surge pod created");
        OperatorHarness.awaitTrue(() -> event("Stale", "playpen-runner-amd64-51820"), Duration.ofSeconds(60), "Stale event");
        op.awaitCache(c -> c.stream().anyMatch(p -> "playpen-runner-amd64-51822".equals(p.getMetadata().getName())
                && p.getStatus() != null && "Running".equals(p.getStatus().getPhase())));
        // the stale pod 51821 is still ready, but the current one is handed out
        HttpResponse<String> a = op.alloc("{\"idempotencyKey\":\"roll\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(2)
                + "\"}");
        assertThat(a.statusCode()).as(a.body()).isEqualTo(200);
        assertThat(M.readTree(a.body()).at("/pod/name").asText()).isEqualTo("playpen-runner-amd64-51822");
    }

    @Test
    void aLowerCountDeletesTheYoungestSurplusPodAndItsPortIsReusedLater() throws Exception {
        start("--runner-amd64-count=3", "--runner-arm64-count=0", "--reconcile-interval=10m");
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 3, Duration.ofSeconds(60), "3 pool pods");
        op.close();
        op = new OperatorHarness(cluster, "--runner-amd64-count=2", "--runner-arm64-count=0", "--reconcile-interval=10m");
        http = op.frontProxy();
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 2, Duration.ofSeconds(60), "scaled down to 2");
        // same creation second: the higher port counts as the younger pod
        assertThat(names()).containsExactly("playpen-runner-amd64-51820", "playpen-runner-amd64-51821");
        OperatorHarness.awaitTrue(() -> event("Surplus", "playpen-runner-amd64-51822"), Duration.ofSeconds(60),
                "Surplus event");
        op.close();
        op = new OperatorHarness(cluster, "--runner-amd64-count=3", "--runner-arm64-count=0", "--reconcile-interval=10m");
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 3, Duration.ofSeconds(60), "back to 3");
        assertThat(names()).as("the freed hostPort is the lowest free one again").contains("playpen-runner-amd64-51822");
    }

    @Test
    void aPodClaimedAfterThePlanIsNotDeleted() throws Exception {
        // no refills: only the timer's first pass, the new leader's prompt pass and the pass this test runs
        start("--runner-amd64-count=1", "--runner-arm64-count=0", "--reconcile-interval=10m", "--refill-debounce=1h");
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 1, Duration.ofSeconds(60), "the pool pod");
        makeReady("playpen-runner-amd64-51820");
        var pool = op.app.poolReconciler();
        // this test's pass starts before the eviction and holds the pass lock: an early pass of the operator's own
        // (the timer's first tick and the prompt pass may both run, one after the other) would otherwise be the one
        // to see the evicted pod and delete it, and this pass would never plan that delete
        PoolReconciler.Pass[] held = new PoolReconciler.Pass[1];
        OperatorHarness.awaitTrue(() -> (held[0] = pool.assess()) != null, Duration.ofSeconds(60), "a pass started");
        PoolReconciler.Pass pass = held[0];
        cluster.client.pods().inNamespace("playpen").withName("playpen-runner-amd64-51820").edit(p -> new PodBuilder(p)
                .editStatus().withPhase("Failed").withReason("Evicted").endStatus().build());
        // the pass planned with the pod idle and evicted (once the pools have heard of the eviction)
        OperatorHarness.awaitTrue(() -> pool.plan(pass).plan().toDelete().size() == 1, Duration.ofSeconds(60),
                "a plan that deletes the evicted pod");
        // a claim lands before its delete step
        cluster.client.pods().inNamespace("playpen").withName("playpen-runner-amd64-51820").edit(p -> new PodBuilder(p)
                .editMetadata().addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ab".repeat(32))
                .addToAnnotations(PlaypenKeys.CLAIMED_AT, java.time.Instant.now().truncatedTo(
                        java.time.temporal.ChronoUnit.SECONDS).toString()).endMetadata()
                .build());
        op.awaitCache(c -> c.stream().anyMatch(ManagedPods::isClaimed));
        var result = pool.finish(pool.create(pool.delete(pass)));
        assertThat(result.deleted()).isZero();
        assertThat(names()).contains("playpen-runner-amd64-51820");
    }

    @Test
    void aNewLeaderFillsThePoolsEvenWhenTheTimersFirstTickIsLost(@TempDir Path tmp) throws Exception {
        // Camel drops a timer tick that fires before the timer's consumer counts as started, as the pool-reconcile
        // route's first tick can when the route is started on winning the Lease. Here that tick never comes (the
        // timer waits an hour) and refills wait an hour: only the pass the new leader asks for can create the pod.
        Path routes = OperatorHarness.copyOfRoutes(tmp);
        Path timer = routes.resolve("pool-reconcile.camel.yaml");
        String yaml = Files.readString(timer);
        assertThat(yaml).contains("        delay: 0\n");
        Files.writeString(timer, yaml.replace("        delay: 0\n", "        delay: 3600000\n"));
        start("--routes-dir=" + routes, "--runner-amd64-count=1", "--runner-arm64-count=0", "--reconcile-interval=10m",
                "--refill-debounce=1h");
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 1, Duration.ofSeconds(60), "the pool pod");
        assertThat(op.app.poolReconciler().passes()).isGreaterThanOrEqualTo(1);
    }

    @Test
    void aPoolWhosePodsNeverGetReadyBacksOffWithAnEventAndACondition() throws Exception {
        // the mock API has no kubelet: pool pods never get ready
        start("--runner-amd64-count=1", "--runner-arm64-count=0", "--pool-ready-timeout=2s", "--pool-backoff-base=4s",
                "--reconcile-interval=1s");
        OperatorHarness.awaitTrue(() -> event("NotReadyInTime", null), Duration.ofSeconds(60), "the first pod replaced");
        OperatorHarness.awaitTrue(() -> event("BackOff", null), Duration.ofSeconds(60), "Warning BackOff");
        assertThat(theEvent("BackOff").getMessage()).startsWith("pool runner-amd64: 1 replacement(s) in a row never "
                + "became ready (last: pod playpen-runner-amd64-");
        assertThat(theEvent("BackOff").getType()).isEqualTo("Warning");
        JsonNode pool = M.readTree(get(POOLS + "/runner-amd64", "application/json").body());
        assertThat(pool.at("/status/conditions/2/type").asText()).isEqualTo("Degraded");
        assertThat(pool.at("/status/conditions/2/reason").asText()).isEqualTo("BackOff");
        assertThat(pool.at("/status/backoff/failures").asInt()).isGreaterThanOrEqualTo(1);
        // paused: with a pass every second, still no new pod while the pause lasts
        int creates = cluster.requestCount(k -> k.equals("POST /api/v1/namespaces/playpen/pods"));
        Thread.sleep(2000);
        assertThat(cluster.requestCount(k -> k.equals("POST /api/v1/namespaces/playpen/pods")))
                .isLessThanOrEqualTo(creates + 1);
    }

    long poolLines(String start) {
        return pool.lines().stream().map(ILoggingEvent::getFormattedMessage).filter(m -> m.startsWith(start)).count();
    }

    ManagedRouteMBean route(String id) {
        return op.app.camelContext().getCamelContextExtension().getContextPlugin(ManagedCamelContext.class)
                .getManagedRoute(id);
    }

    /**
     * A pass whose create is refused (a quota, RBAC) is a failed pass, and says so in its own lines (the WARN
     * outcome=create-refused, pool pass failed) and metrics; a steady refusal repeats it every pause. Camel's error
     * handler must not add an ERROR with a stack trace ("Failed delivery") for each of those passes.
     */
    @Test
    void aFailedPassLogsItsOwnLinesAndNoErrorOfCamels() throws Exception {
        cluster = TestCluster.start();
        cluster.forbidden = key -> key.equals(POST_PODS);
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        op = new OperatorHarness(cluster, "--runner-amd64-count=1", "--runner-arm64-count=0",
                "--reconcile-interval=10m");
        ManagedRouteMBean passes = route("pool-pass");
        // the first pass and the one after its pause (1 s), both through the route, both refused, both ended
        OperatorHarness.awaitTrue(() -> poolLines("pool pass failed") >= 2 && passes.getExchangesInflight() == 0,
                Duration.ofSeconds(60), "two failed passes ended");
        assertThat(poolLines("pool=runner/amd64 outcome=create-refused")).isGreaterThanOrEqualTo(2);
        assertThat(passes.getExchangesTotal()).as("passes through the route").isPositive();
        assertThat(camel.lines()).filteredOn(e -> e.getLevel().isGreaterOrEqual(Level.ERROR))
                .extracting(ILoggingEvent::getFormattedMessage).isEmpty();
        assertThat(passes.getExchangesFailed()).as("route exchanges failed").isZero();
    }

    /**
     * The routes are meant to be edited and reloaded: a step added between the pass's steps that fails ends the
     * exchange before pool-finish. The pass still ends (the lock that keeps passes from overlapping is released), so
     * a pass on another thread (the timer's, a refill's) is not blocked for good.
     */
    @Test
    void aStepThatFailsBetweenThePassStepsStillEndsThePass(@TempDir Path tmp) throws Exception {
        Path routes = OperatorHarness.copyOfRoutes(tmp);
        Path file = routes.resolve("pool-reconcile.camel.yaml");
        String yaml = Files.readString(file);
        String edited = yaml.replaceFirst("(?m)^( *)- bean:\n( *)id: pool-delete\n", "$1- throwException:\n"
                + "$2id: pool-edited-step\n$2exceptionType: java.lang.IllegalStateException\n"
                + "$2message: an edited step that fails\n$0");
        assertThat(edited).as("the step added before pool-delete").isNotEqualTo(yaml);
        Files.writeString(file, edited);
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        op = new OperatorHarness(cluster, "--routes-dir=" + routes, "--runner-amd64-count=1",
                "--runner-arm64-count=0", "--reconcile-interval=10m");
        ManagedRouteMBean passes = route("pool-pass");
        OperatorHarness.awaitTrue(() -> passes.getExchangesFailed() >= 1, Duration.ofSeconds(60),
                "a pass through the edited route failed");
        assertThat(cluster.pods()).as("no step after the failing one ran").isEmpty();

        // a pass on another thread (this test's own) gets the pass lock and creates the pod
        PoolReconciler reconciler = op.app.poolReconciler();
        CompletableFuture<PoolReconciler.Result> other = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                other.complete(reconciler.reconcile());
            } catch (RuntimeException e) {
                other.completeExceptionally(e);
            }
        }, "another-pass");
        t.setDaemon(true);
        t.start();
        OperatorHarness.awaitTrue(other::isDone, Duration.ofSeconds(60), "the other thread's pass ended");
        assertThat(other.get().created()).isEqualTo(1);
        assertThat(cluster.pods()).hasSize(1);
    }
}
