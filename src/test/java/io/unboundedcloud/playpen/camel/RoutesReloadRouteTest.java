package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.apache.camel.ServiceStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.HeldRequest;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * With --routes-reload, an edit that cannot be loaded is refused and the running route stays (docs/routes.md): an
 * edit of alloc.camel.yaml naming a bean that does not exist leaves the alloc route serving, with its error handling,
 * and says so in the log; the file saved again without the mistake is loaded. A request waiting for capacity in the
 * alloc route as alloc.camel.yaml is reloaded is answered 503 before a pod is claimed for it, and its retry is served.
 */
class RoutesReloadRouteTest {
    private static final Duration WAIT = Duration.ofSeconds(60);

    @RegisterExtension
    final CapturedLogs camelLogs = CapturedLogs.named("org.apache.camel");

    @RegisterExtension
    final CapturedLogs keptLog = CapturedLogs.of(KeepingRouteReload.class);

    @RegisterExtension
    final CapturedLogs audit = CapturedLogs.named("playpen.audit");

    @Test
    void anEditNamingAnUnknownBeanIsRefusedAndTheRunningRouteStays(@TempDir Path tmp) throws Exception {
        reloading(tmp, true, (routes, cluster, op) -> {
            Path alloc = routes.resolve("alloc.camel.yaml");
            String yaml = Files.readString(alloc);
            String broken = yaml.replace("            id: alloc-parse\n            ref: apiFlows",
                    "            id: alloc-parse\n            ref: noSuchBean");
            assertThat(broken).isNotEqualTo(yaml);
            save(alloc, broken);
            OperatorHarness.awaitTrue(() -> camelLogs.lines().stream()
                    .anyMatch(l -> String.valueOf(l.getFormattedMessage()).contains("alloc.camel.yaml")
                            || l.getThrowableProxy() != null
                                    && String.valueOf(l.getThrowableProxy().getMessage()).contains("noSuchBean")),
                    WAIT, "the refused reload logged");

            assertThat(op.app.camelContext().getRouteController().getRouteStatus("alloc"))
                    .as("the running alloc route").isEqualTo(ServiceStatus.Started);
            HttpResponse<String> answer = op.alloc("{\"idempotencyKey\":\"reload-1\",\"wireGuardPublicKey\":\""
                    + TestCluster.wgKey(1) + "\"}");
            assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
            // the errors configuration is still the route's: a refusal is a Status
            HttpResponse<String> refused = op.alloc("{\"idempotencyKey\":\"reload-2\"}");
            assertThat(refused.statusCode()).as(refused.body()).isEqualTo(400);
            assertThat(refused.body()).contains("\"kind\":\"Status\"").contains("wireGuardPublicKey is required");
            // a good edit of another file is loaded, and the refused file is neither loaded with it nor blamed again
            org.apache.camel.Route audit = op.app.camelContext().getRoute("audit");
            Path auditFile = routes.resolve("audit.camel.yaml");
            save(auditFile, Files.readString(auditFile) + "# edited\n");
            OperatorHarness.awaitTrue(() -> keptLog.lines().stream().anyMatch(l -> l.getFormattedMessage()
                    .contains("audit.camel.yaml")), WAIT, "the audit.camel.yaml edit handled");
            assertThat(keptLog.lines()).extracting(l -> l.getFormattedMessage())
                    .noneMatch(l -> l.contains("audit.camel.yaml not loaded"));
            assertThat(op.app.camelContext().getRoute("audit")).as("the audit route replaced").isNotSameAs(audit);
            // a good edit after it is loaded: the alloc route is replaced
            org.apache.camel.Route kept = op.app.camelContext().getRoute("alloc");
            save(alloc, yaml);
            awaitReplaced(op, kept, "the fixed alloc.camel.yaml loaded");
            assertThat(op.alloc("{\"idempotencyKey\":\"reload-1\",\"wireGuardPublicKey\":\""
                    + TestCluster.wgKey(1) + "\"}").statusCode()).as("a replay on the reloaded route").isEqualTo(200);
            assertThat(keptLog.lines()).anyMatch(l -> l.getFormattedMessage().contains("alloc.camel.yaml not loaded,"
                    + " its routes run as before"));
        });
    }

    @Test
    void aRequestWaitingInTheReloadedRouteIsAnswered503BeforeAnyClaimAndItsRetryIsServed(@TempDir Path tmp)
            throws Exception {
        reloading(tmp, false, (routes, cluster, op) -> {
            String waiting = "{\"idempotencyKey\":\"wait-1\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(1)
                    + "\",\"waitSeconds\":40}";
            CompletableFuture<HttpResponse<String>> first = allocAsync(op, waiting);
            OperatorHarness.awaitTrue(() -> op.app.waitingQueue().waiting() == 1, WAIT, "the request waiting");

            org.apache.camel.Route before = op.app.camelContext().getRoute("alloc");
            Path alloc = routes.resolve("alloc.camel.yaml");
            save(alloc, Files.readString(alloc) + "# edited\n");
            awaitReplaced(op, before, "alloc.camel.yaml reloaded");
            // a pod comes after the reload: nothing waits for it any more, so it stays idle
            cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
            HttpResponse<String> ended = first.get(60, TimeUnit.SECONDS);
            assertThat(ended.statusCode()).as(ended.body()).isEqualTo(503);
            assertThat(ended.headers().firstValue("Retry-After")).isPresent();
            assertThat(ended.body()).contains("\"kind\":\"Status\"")
                    .contains("send it again with the same idempotency key");
            assertThat(op.app.waitingQueue().waiting()).as("nothing left to claim a pod for").isZero();
            op.awaitCache(c -> c.size() == 1);
            assertThat(cluster.pods()).as("the pod that came").singleElement()
                    .satisfies(p -> assertThat(ManagedPods.keyHash(p)).as("its claim").isEmpty());

            // the retry, in the new route, is answered that pod
            HttpResponse<String> served = allocAsync(op, waiting).get(60, TimeUnit.SECONDS);
            assertThat(served.statusCode()).as(served.body()).isEqualTo(200);
            assertThat(served.body()).contains("playpen-runner-amd64-51820");
            OperatorHarness.awaitTrue(() -> audit.lines().stream()
                    .anyMatch(l -> l.getFormattedMessage().contains("\"outcome\":\"allocated\"")), WAIT,
                    "the retry's audit line");
            assertThat(audit.lines()).anyMatch(l -> l.getFormattedMessage()
                    .contains("\"outcome\":\"serviceUnavailable\""));
        }, "--reconcile-interval=10m");
    }

    /**
     * A request whose wait starts only after a reload has replaced the route it is in (the LIST of its user's claims
     * that the quota makes before it waits answered late, after the reload gave up waiting for it and stopped the
     * route) is answered 503 at once, as a request waiting there when the reload began is: not left waiting in a
     * route that can no longer answer it, to be answered 500 once a pod is claimed for it.
     */
    @Test
    void aRequestWhoseWaitStartsAfterItsRouteWasReplacedIsAnswered503(@TempDir Path tmp) throws Exception {
        try (HeldRequest quotaList = new HeldRequest(r -> "GET".equals(r.method())
                && r.uri().getPath().endsWith("/pods") && String.valueOf(r.uri().getQuery()).contains("owner-hash"))) {
            reloading(tmp, false, quotaList, (routes, cluster, op) -> {
                CompletableFuture<HttpResponse<String>> late = allocAsync(op, "{\"idempotencyKey\":\"late-1\","
                        + "\"wireGuardPublicKey\":\"" + TestCluster.wgKey(1) + "\",\"waitSeconds\":3}");
                assertThat(quotaList.awaitHeld(WAIT.toSeconds())).as("the quota's LIST held").isTrue();
                org.apache.camel.Route before = op.app.camelContext().getRoute("alloc");
                Path alloc = routes.resolve("alloc.camel.yaml");
                save(alloc, Files.readString(alloc) + "# edited\n");
                awaitReplaced(op, before, "alloc.camel.yaml reloaded");

                quotaList.release();
                HttpResponse<String> ended = late.get(60, TimeUnit.SECONDS);
                assertThat(ended.statusCode()).as(ended.body()).isEqualTo(503);
                assertThat(ended.body()).contains(RouteWaits.RELOADED);
                assertThat(op.app.waitingQueue().waiting()).isZero();
            }, "--reconcile-interval=10m", "--max-allocs-per-user=2");
        }
    }

    /**
     * An edit of errors.camel.yaml (the error handling every HTTP flow shares) reaches the routes built before it:
     * they are built again with it, as when their own files are edited, and keep serving.
     */
    @Test
    void anEditOfTheSharedErrorHandlingReachesTheRoutesBuiltBeforeIt(@TempDir Path tmp) throws Exception {
        reloading(tmp, true, (routes, cluster, op) -> {
            String refused = "{\"idempotencyKey\":\"errors-1\"}";
            assertThat(op.alloc(refused).headers().firstValue("X-Errors-Edited")).isEmpty();

            // the routes built with the error handling, each to be built again (the listener's among them)
            org.apache.camel.CamelContext camel = op.app.camelContext();
            java.util.Map<String, org.apache.camel.Route> users = new java.util.HashMap<>();
            camel.getCamelContextExtension().getContextPlugin(org.apache.camel.model.Model.class)
                    .getRouteDefinitions().stream()
                    .filter(d -> d.getRouteConfigurationId() != null && d.getRouteConfigurationId().contains("errors"))
                    .forEach(d -> users.put(d.getRouteId(), camel.getRoute(d.getRouteId())));
            assertThat(users).containsKeys("https-ingress", "alloc");
            Path errors = routes.resolve("errors.camel.yaml");
            String yaml = Files.readString(errors);
            assertThat(yaml).endsWith("                      uri: direct:audit\n");
            save(errors, yaml + String.join("\n",
                    "            - setHeader:",
                    "                id: errors-edited",
                    "                name: X-Errors-Edited",
                    "                constant: \"yes\"", ""));

            OperatorHarness.awaitTrue(() -> {
                try {
                    return op.alloc(refused).headers().firstValue("X-Errors-Edited").isPresent();
                } catch (Exception e) {
                    // the listener is being built again: the next try finds it
                    return false;
                }
            }, WAIT, "the alloc route's refusal handled by the edited error handling");
            // the reload goes on route by route (while the listener is built again, a request may be refused):
            // what follows is answered once every route that uses the error handling is running again, built anew
            OperatorHarness.awaitTrue(() -> users.entrySet().stream().allMatch(e -> {
                org.apache.camel.Route now = camel.getRoute(e.getKey());
                return now != null && now != e.getValue()
                        && camel.getRouteController().getRouteStatus(e.getKey()) == ServiceStatus.Started;
            }), WAIT, "every route that uses the error handling built again and started");
            HttpResponse<String> answer = op.alloc(refused);
            assertThat(answer.statusCode()).as(answer.body()).isEqualTo(400);
            assertThat(answer.body()).contains("\"kind\":\"Status\"").contains("wireGuardPublicKey is required");
            assertServed(op, "errors-2", 2);
        });
    }

    /**
     * A route taken out of its file, and every route of a deleted file, is stopped and removed by the reload: Camel
     * replaces only the ids the file it loads defines, so they ran on (their timers firing) until a restart.
     */
    @Test
    void aRouteTakenOutOfItsFileAndTheRoutesOfADeletedFileAreRemoved(@TempDir Path tmp) throws Exception {
        reloading(tmp, false, (routes, cluster, op) -> {
            org.apache.camel.CamelContext camel = op.app.camelContext();
            assertThat(camel.getRoute("lost-claims-listed")).isNotNull();
            org.apache.camel.Route lostClaims = camel.getRoute("lost-claims");
            Path ttl = routes.resolve("ttl-expiry.camel.yaml");
            String yaml = Files.readString(ttl);
            int from = yaml.indexOf("- route:\n    id: lost-claims-listed\n");
            int to = yaml.indexOf("# One expired claim");
            assertThat(from).isPositive().isLessThan(to);
            save(ttl, yaml.substring(0, from) + yaml.substring(to));

            OperatorHarness.awaitTrue(() -> camel.getRoute("lost-claims") != lostClaims
                    && camel.getRoute("lost-claims-listed") == null, WAIT,
                    "ttl-expiry.camel.yaml reloaded without the lost-claims-listed route, and that route gone");
            assertThat(camel.getRouteController().getRouteStatus("lost-claims")).isEqualTo(ServiceStatus.Started);
            assertThat(camel.getRoute("ttl-expired")).as("the file's other routes").isNotNull();

            Files.delete(routes.resolve("trust-refresh.camel.yaml"));
            // each removal is logged once it is done
            OperatorHarness.awaitTrue(() -> java.util.stream.Stream.of("trust-refresh", "trust-bundle-invalid")
                    .allMatch(id -> keptLog.lines().stream().anyMatch(l -> l.getFormattedMessage()
                            .startsWith("route " + id + " stopped and removed:"))), WAIT,
                    "the deleted file's routes removed");
            assertThat(camel.getRoute("trust-refresh")).isNull();
            assertThat(camel.getRoute("trust-bundle-invalid")).isNull();
            assertThat(camel.getRouteController().getRouteStatus("alloc")).isEqualTo(ServiceStatus.Started);
            assertThat(keptLog.lines()).extracting(l -> l.getFormattedMessage())
                    .anyMatch(l -> l.startsWith("route lost-claims-listed stopped and removed:")
                            && l.endsWith("ttl-expiry.camel.yaml no longer defines it"))
                    .anyMatch(l -> l.startsWith("route trust-refresh stopped and removed:")
                            && l.endsWith("trust-refresh.camel.yaml was deleted"));
        }, "--reconcile-interval=10m");
    }

    /**
     * An edit of errors.camel.yaml that the routes using it cannot be built with is refused as a whole: the routes run
     * as before, the WARN names errors.camel.yaml, and the old error handling is put back, so a later good edit of
     * another file is loaded (the broken configuration stayed in force and failed every later build).
     */
    @Test
    void aRefusedEditOfTheSharedErrorHandlingIsNamedAndPutBack(@TempDir Path tmp) throws Exception {
        reloading(tmp, true, (routes, cluster, op) -> {
            Path errors = routes.resolve("errors.camel.yaml");
            String yaml = Files.readString(errors);
            String broken = yaml.replace("ref: replyWriter", "ref: noSuchWriter");
            assertThat(broken).isNotEqualTo(yaml);
            save(errors, broken);
            OperatorHarness.awaitTrue(() -> keptLog.lines().stream().anyMatch(l -> l.getFormattedMessage()
                    .contains(" not loaded")), WAIT, "the refused edit logged");
            assertThat(keptLog.lines()).extracting(l -> l.getFormattedMessage())
                    .anyMatch(l -> l.contains("errors.camel.yaml not loaded, its routes run as before"));
            HttpResponse<String> refused = op.alloc("{\"idempotencyKey\":\"errors-3\"}");
            assertThat(refused.statusCode()).as(refused.body()).isEqualTo(400);
            assertThat(refused.body()).contains("\"kind\":\"Status\"");

            org.apache.camel.Route kept = op.app.camelContext().getRoute("alloc");
            Path alloc = routes.resolve("alloc.camel.yaml");
            save(alloc, Files.readString(alloc) + "# edited\n");
            awaitReplaced(op, kept, "a good edit of alloc.camel.yaml loaded");
            assertServed(op, "errors-4", 4);
        });
    }

    /**
     * A refused edit of a file of several routes leaves all of them as they were: Camel builds a file's routes one by
     * one, so those before the one that failed ran their new versions (here lost-claims, its new period).
     */
    @Test
    void aRefusedEditOfAFileOfSeveralRoutesLeavesEachAsItWas(@TempDir Path tmp) throws Exception {
        reloading(tmp, false, (routes, cluster, op) -> {
            org.apache.camel.CamelContext camel = op.app.camelContext();
            Path ttl = routes.resolve("ttl-expiry.camel.yaml");
            String yaml = Files.readString(ttl);
            String edited = yaml.replace("{{playpen.lost-claims.interval-ms:1000}}", "1500")
                    .replace("            id: ttl-audit\n            uri: direct:audit",
                            "            id: ttl-audit\n            uri: nosuch:audit");
            assertThat(edited).contains("1500").contains("nosuch:audit");
            save(ttl, edited);
            OperatorHarness.awaitTrue(() -> keptLog.lines().stream().anyMatch(l -> l.getFormattedMessage()
                    .contains("ttl-expiry.camel.yaml not loaded")), WAIT, "the refused edit logged");

            assertThat(camel.getRoute("lost-claims").getEndpoint().getEndpointUri()).as("lost-claims as it was")
                    .doesNotContain("1500");
            assertThat(java.util.List.of("ttl-expiry", "lost-claims", "lost-claims-listed", "ttl-expired"))
                    .allSatisfy(id -> assertThat(camel.getRoute(id)).as(id).isNotNull());
            assertThat(camel.getRouteController().getRouteStatus("ttl-expired")).isEqualTo(ServiceStatus.Started);
        }, "--reconcile-interval=10m");
    }

    /** An edit that does not parse replaces nothing, so a request waiting for capacity waits on and is served. */
    @Test
    void anEditThatDoesNotParseEndsNoWait(@TempDir Path tmp) throws Exception {
        reloading(tmp, false, (routes, cluster, op) -> {
            String waiting = "{\"idempotencyKey\":\"wait-2\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(1)
                    + "\",\"waitSeconds\":40}";
            CompletableFuture<HttpResponse<String>> first = allocAsync(op, waiting);
            OperatorHarness.awaitTrue(() -> op.app.waitingQueue().waiting() == 1, WAIT, "the request waiting");

            Path alloc = routes.resolve("alloc.camel.yaml");
            save(alloc, Files.readString(alloc) + "- route: [not closed\n");
            OperatorHarness.awaitTrue(() -> keptLog.lines().stream().anyMatch(l -> l.getFormattedMessage()
                    .contains("alloc.camel.yaml not loaded")), WAIT, "the refused edit logged");
            assertThat(op.app.waitingQueue().waiting()).as("the request still waiting").isOne();

            cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
            HttpResponse<String> served = first.get(60, TimeUnit.SECONDS);
            assertThat(served.statusCode()).as(served.body()).isEqualTo(200);
        }, "--reconcile-interval=10m");
    }

    /** What a test does with an operator that reloads its copy of the routes. */
    private interface Reloading {
        void run(Path routes, TestCluster cluster, OperatorHarness op) throws Exception;
    }

    /**
     * Runs {@code test} with an operator that reloads a copy of the routes ({@code flags} added), on a cluster of one
     * node, with a ready runner in its cache first when {@code runner}.
     */
    private static void reloading(Path tmp, boolean runner, Reloading test, String... flags) throws Exception {
        reloading(tmp, runner, null, test, flags);
    }

    /** The same, the operator's API calls going through a client whose request {@code held} matches is held. */
    private static void reloading(Path tmp, boolean runner, HeldRequest held, Reloading test, String... flags)
            throws Exception {
        Path routes = OperatorHarness.copyOfRoutes(tmp);
        try (TestCluster cluster = TestCluster.start();
                io.fabric8.kubernetes.client.KubernetesClient client = held == null ? null : held.client(cluster)) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            String[] args = java.util.stream.Stream.concat(java.util.stream.Stream.of("--routes-dir=" + routes,
                    "--routes-reload"), java.util.stream.Stream.of(flags)).toArray(String[]::new);
            try (OperatorHarness op = new OperatorHarness(cluster, client == null ? cluster.client : client, args)) {
                if (runner) {
                    cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
                    op.awaitCache(c -> c.size() == 1);
                }
                test.run(routes, cluster, op);
            }
        }
    }

    /** Saves a route file as an editor does: written beside it, then moved over it in one step. */
    private static void save(Path file, String content) throws java.io.IOException {
        Path edit = file.resolveSibling("." + file.getFileName() + ".tmp");
        Files.writeString(edit, content);
        Files.move(edit, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /** Waits until the alloc route running is another than {@code before}, and started. */
    private static void awaitReplaced(OperatorHarness op, org.apache.camel.Route before, String what)
            throws InterruptedException {
        OperatorHarness.awaitTrue(() -> {
            org.apache.camel.Route now = op.app.camelContext().getRoute("alloc");
            return now != null && now != before
                    && op.app.camelContext().getRouteController().getRouteStatus("alloc") == ServiceStatus.Started;
        }, WAIT, what);
    }

    /** Asserts that an alloc of {@code key} (with runner key {@code n}) is answered 200. */
    private static void assertServed(OperatorHarness op, String key, int n) throws Exception {
        HttpResponse<String> served = op.alloc("{\"idempotencyKey\":\"" + key + "\",\"wireGuardPublicKey\":\""
                + TestCluster.wgKey(n) + "\"}");
        assertThat(served.statusCode()).as(served.body()).isEqualTo(200);
    }

    private static CompletableFuture<HttpResponse<String>> allocAsync(OperatorHarness op, String body)
            throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url(
                "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs"))).timeout(Duration.ofSeconds(120))
                .POST(HttpRequest.BodyPublishers.ofString(body));
        return op.frontProxy().sendAsync(OperatorHarness.asUser(b, "alice", "playpen-users").build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
