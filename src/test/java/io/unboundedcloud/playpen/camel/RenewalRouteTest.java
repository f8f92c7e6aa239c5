package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** POST .../renewals over HTTPS: 200 with the new expiry, 404, 410, 400, 403, discovery, the event. */
class RenewalRouteTest {
    static final String RENEWALS = "/apis/playpen.unbounded-cloud.io/v1alpha1/renewals";
    static final String RUNNER = "playpen-runner-amd64-51820";
    TestCluster cluster;
    OperatorHarness op;
    final ListAppender<ILoggingEvent> audit = new ListAppender<>();
    final Logger auditLogger = (Logger) LoggerFactory.getLogger("playpen.audit");

    /** The audit lines written so far that contain every one of {@code parts}. */
    long auditLines(String... parts) {
        return CapturedLogs.snapshot(audit).stream().map(ILoggingEvent::getFormattedMessage)
                .filter(l -> java.util.Arrays.stream(parts).allMatch(l::contains)).count();
    }

    @BeforeEach
    void up() {
        audit.start();
        auditLogger.addAppender(audit);
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
    }

    @AfterEach
    void down() {
        auditLogger.detachAppender(audit);
        if (op != null) {
            op.close();
        }
        cluster.close();
    }

    Pod pod(String name) {
        return cluster.client.pods().inNamespace("playpen").withName(name).get();
    }

    HttpResponse<String> renew(String body) throws Exception {
        return op.kubectlPost(op.frontProxy(), RENEWALS, body, "alice", "playpen-users");
    }

    void allocate(String key) throws Exception {
        HttpResponse<String> r = op.alloc("{\"idempotencyKey\":\"" + key + "\",\"wireGuardPublicKey\":\""
                + TestCluster.wgKey(3) + "\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    }

    @Test
    void aRenewalMovesTheExpiryWithOneConditionalWriteAndSaysSo() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op = new OperatorHarness(cluster, "--playpen-ttl=1h", "--playpen-max-lifetime=5h", "--reconcile-interval=10m");
        op.awaitCache(c -> c.size() == 1);
        allocate("renew-me");
        Instant claimedAt = Instant.parse(pod(RUNNER).getMetadata().getAnnotations().get(PlaypenKeys.CLAIMED_AT));
        int patches = cluster.requestCount(k -> k.startsWith("PATCH "));
        Instant before = Instant.now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
        HttpResponse<String> r = renew("{\"idempotencyKey\":\"renew-me\",\"ttl\":\"3h\"}");
        Instant after = Instant.now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type")).contains("application/json");
        String expiresAt = pod(RUNNER).getMetadata().getAnnotations().get(PlaypenKeys.EXPIRES_AT);
        assertThat(Instant.parse(expiresAt)).isBetween(before.plus(Duration.ofHours(3)), after.plus(Duration.ofHours(3)));
        assertThat(r.body()).isEqualTo("{\"expiresAt\":\"" + expiresAt + "\",\"maxExpiresAt\":\""
                + claimedAt.plus(Duration.ofHours(5)) + "\"}\n");
        assertThat(cluster.requestCount(k -> k.startsWith("PATCH "))).isEqualTo(patches + 1);
        // the answer of a replayed alloc tells the renewed expiry
        HttpResponse<String> replay = op.alloc("{\"idempotencyKey\":\"renew-me\",\"wireGuardPublicKey\":\""
                + TestCluster.wgKey(3) + "\"}");
        assertThat(replay.body()).endsWith(",\"expiresAt\":\"" + expiresAt + "\"}\n");
        // past the maximum lifetime: capped, and the key may come in the header with an empty body
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url(RENEWALS))).header("Idempotency-Key", "renew-me")
                .POST(HttpRequest.BodyPublishers.ofString("{\"ttl\":\"24h\"}"));
        HttpResponse<String> capped = op.frontProxy().send(OperatorHarness.asUser(b, "bob", "playpen-users").build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(capped.statusCode()).as(capped.body()).isEqualTo(200);
        assertThat(pod(RUNNER).getMetadata().getAnnotations())
                .containsEntry(PlaypenKeys.EXPIRES_AT, claimedAt.plus(Duration.ofHours(5)).toString());
        OperatorHarness.awaitTrue(() -> cluster.client.v1().events().inNamespace("playpen").list().getItems().stream()
                .anyMatch(e -> "Renewed".equals(e.getReason()) && RUNNER.equals(e.getInvolvedObject().getName())),
                Duration.ofSeconds(60), "Renewed event");
        // ... written by a visible step of the renewal route into the kube-event route, like every flow's Events
        assertThat(op.app.camelContext().getProcessor("renewal-event")).as("renewal-event step").isNotNull();
        assertThat(op.app.camelContext().getProcessor("renewal-renewed-event")).as("renewal-renewed-event step")
                .isNotNull();
        // each renewal is an audit line (verb renew, the pod, never the key)
        OperatorHarness.awaitTrue(() -> auditLines("\"verb\":\"renew\"", "\"outcome\":\"renewed\"",
                "\"allocation\":\"" + RUNNER + "\"", "\"user\":\"alice\"") == 1
                && auditLines("\"verb\":\"renew\"", "\"user\":\"bob\"") == 1, Duration.ofSeconds(60),
                "the renewals' audit lines");
        assertThat(auditLines("renew-me")).isZero();
        // the SubjectAccessReview is alloc's: allocs/create in the group
        assertThat(cluster.sarRequests).isNotEmpty().allSatisfy(sar -> {
            assertThat(sar.getSpec().getResourceAttributes().getResource()).isEqualTo("allocs");
            assertThat(sar.getSpec().getResourceAttributes().getVerb()).isEqualTo("create");
        });
    }

    @Test
    void aRenewalWithoutTtlTakesTheDefaultAndOneThatAsksForLessChangesNothing() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op = new OperatorHarness(cluster, "--playpen-ttl=1h", "--reconcile-interval=10m");
        op.awaitCache(c -> c.size() == 1);
        HttpResponse<String> a = op.alloc("{\"idempotencyKey\":\"short-first\",\"ttl\":\"10m\","
                + "\"wireGuardPublicKey\":\"" + TestCluster.wgKey(3) + "\"}");
        assertThat(a.statusCode()).as(a.body()).isEqualTo(200);
        String prefix = Hashes.keyHashPrefix(Hashes.keyHash("short-first"));

        Instant before = Instant.now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
        HttpResponse<String> byDefault = renew("{\"idempotencyKey\":\"short-first\"}");
        Instant after = Instant.now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
        assertThat(byDefault.statusCode()).as(byDefault.body()).isEqualTo(200);
        String expiresAt = pod(RUNNER).getMetadata().getAnnotations().get(PlaypenKeys.EXPIRES_AT);
        assertThat(Instant.parse(expiresAt)).as("--playpen-ttl from now")
                .isBetween(before.plus(Duration.ofHours(1)), after.plus(Duration.ofHours(1)));
        assertThat(byDefault.body()).startsWith("{\"expiresAt\":\"" + expiresAt + "\"");

        // asking for less than is left: the same answer, no write, and the audit line says so
        int patches = cluster.requestCount(k -> k.startsWith("PATCH "));
        HttpResponse<String> less = renew("{\"idempotencyKey\":\"short-first\",\"ttl\":\"5m\"}");
        assertThat(less.statusCode()).as(less.body()).isEqualTo(200);
        assertThat(less.body()).isEqualTo(byDefault.body());
        assertThat(cluster.requestCount(k -> k.startsWith("PATCH "))).isEqualTo(patches);
        OperatorHarness.awaitTrue(() -> auditLines("\"verb\":\"renew\"", "\"outcome\":\"renewed\"",
                "\"keyHashPrefix\":\"" + prefix + "\"") == 1
                && auditLines("\"verb\":\"renew\"", "\"outcome\":\"unchanged\"",
                        "\"keyHashPrefix\":\"" + prefix + "\"", "\"allocation\":\"" + RUNNER + "\"") == 1,
                Duration.ofSeconds(60), "the renewed and the unchanged renewal's audit lines");
    }

    @Test
    void unknownKeyIs404AndAnEndingAllocationIs410() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51821, "node-a").editMetadata()
                .addToAnnotations(Map.of(PlaypenKeys.IDEMPOTENCY_KEY_HASH, Hashes.keyHash("leaving"),
                        PlaypenKeys.CLAIMED_AT, Instant.now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS).toString()))
                .addToFinalizers("example.com/hold").endMetadata());
        cluster.client.pods().inNamespace("playpen").withName("playpen-runner-amd64-51821").delete();
        op = new OperatorHarness(cluster, "--playpen-ttl=1h");
        op.awaitCache(c -> c.size() == 1 && c.iterator().next().getMetadata().getDeletionTimestamp() != null);
        HttpResponse<String> unknown = renew("{\"idempotencyKey\":\"nobody\",\"ttl\":\"1h\"}");
        assertThat(unknown.statusCode()).isEqualTo(404);
        assertThat(unknown.body()).contains("\"reason\":\"NotFound\"")
                .contains("\"message\":\"no allocation is held with this idempotency key (released already, "
                        + "expired, or never made): nothing was renewed; send your alloc request again for a new "
                        + "allocation\"");
        HttpResponse<String> gone = renew("{\"idempotencyKey\":\"leaving\",\"ttl\":\"1h\"}");
        assertThat(gone.statusCode()).isEqualTo(410);
        assertThat(gone.body()).contains("\"kind\":\"Status\"").contains("\"reason\":\"Gone\"").contains("\"code\":410")
                .contains("\"message\":\"the allocation held with this idempotency key has expired or is being "
                        + "deleted: it cannot be renewed; once it is gone, send your alloc request again for a new "
                        + "allocation\"");
        // refused renewals are audited too (through the errors configuration)
        OperatorHarness.awaitTrue(() -> auditLines("\"verb\":\"renew\"") == 2, Duration.ofSeconds(60),
                "two refused renewals audited");
        assertThat(cluster.requestCount(k -> k.startsWith("PATCH "))).isZero();
    }

    /**
     * A renewal whose conditional write keeps meeting other writes to its pod answers 503 with the Retry-After of
     * --retry-after-seconds, as every other 503 does, and says to try again; nothing is written.
     */
    @Test
    void aRenewalThatKeepsConflictingIs503WithTheConfiguredRetryAfter() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op = new OperatorHarness(cluster, "--playpen-ttl=1h", "--retry-after-seconds=7", "--reconcile-interval=10m");
        op.awaitCache(c -> c.size() == 1);
        allocate("busy");
        String before = pod(RUNNER).getMetadata().getAnnotations().get(PlaypenKeys.EXPIRES_AT);
        // every conditional write of the new expiry meets another write first
        cluster.server.expect().patch().withPath("/api/v1/namespaces/playpen/pods/" + RUNNER)
                .andReturn(409, new io.fabric8.kubernetes.api.model.StatusBuilder().withCode(409).withReason("Conflict")
                        .withStatus("Failure").withMessage("the object has been modified").build())
                .times(5);
        HttpResponse<String> r = renew("{\"idempotencyKey\":\"busy\",\"ttl\":\"2h\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
        assertThat(r.headers().firstValue("Retry-After")).hasValue("7");
        assertThat(r.body()).contains("\"reason\":\"ServiceUnavailable\"").contains("try again");
        assertThat(pod(RUNNER).getMetadata().getAnnotations().get(PlaypenKeys.EXPIRES_AT)).isEqualTo(before);
    }

    @Test
    void badRenewalsAre400AndDeniedOnesAre403() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op = new OperatorHarness(cluster, "--playpen-ttl=0", "--playpen-max-ttl=2h");
        op.awaitCache(c -> c.size() == 1);
        allocate("mine");
        Map<String, String> cases = Map.of(
                "{\"ttl\":\"1h\"}", "Idempotency-Key header or idempotencyKey body field is required: the key the allocation was made with",
                "{\"idempotencyKey\":\"mine\",\"ttl\":\"3h\"}", "ttl must not exceed 2h0m0s (--playpen-max-ttl): ask for 2h0m0s"
                        + " or less, and renew the allocation (POST .../renewals) before it expires to keep it longer",
                "{\"idempotencyKey\":\"mine\",\"ttl\":0}", "ttl must be a duration string such as \\\"30m\\\" or \\\"2h\\\"",
                "{\"idempotencyKey\":\"mine\",\"ttl\":\"-1s\"}", "ttl must be greater than 0: send how long the"
                        + " allocation should last, such as \\\"30m\\\" or \\\"2h\\\" (at least 1s)",
                "{\"idempotencyKey\":\"mine\"}", "ttl is required: expiry has no default (--playpen-ttl is 0); send how"
                        + " long the allocation should last from now, such as {\\\"idempotencyKey\\\":\\\"job-42\\\","
                        + "\\\"ttl\\\":\\\"1h\\\"}",
                "[1]", "invalid JSON request: the body is an array, not an object; send one JSON object such as"
                        + " {\\\"idempotencyKey\\\":\\\"job-42\\\",\\\"ttl\\\":\\\"1h\\\"}");
        for (Map.Entry<String, String> c : cases.entrySet()) {
            HttpResponse<String> r = renew(c.getKey());
            assertThat(r.statusCode()).as(c.getKey()).isEqualTo(400);
            assertThat(r.body()).as(c.getKey()).contains("\"message\":\"" + c.getValue() + "\"");
        }
        cluster.sarPolicy = sar -> false;
        Thread.sleep(50);
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url(RENEWALS)))
                .POST(HttpRequest.BodyPublishers.ofString("{\"idempotencyKey\":\"mine\",\"ttl\":\"1h\"}"));
        HttpResponse<String> denied = op.frontProxy().send(OperatorHarness.asUser(b, "mallory").build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(denied.statusCode()).isEqualTo(403);
        assertThat(pod(RUNNER).getMetadata().getAnnotations()).doesNotContainKey(PlaypenKeys.EXPIRES_AT);
        // GET is 405 with Allow: POST, and discovery lists the resource
        HttpResponse<String> get = op.frontProxy().send(HttpRequest.newBuilder(URI.create(op.url(RENEWALS))).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(get.statusCode()).isEqualTo(405);
        HttpResponse<String> discovery = op.frontProxy().send(HttpRequest.newBuilder(
                URI.create(op.url("/apis/playpen.unbounded-cloud.io/v1alpha1"))).GET().build(), HttpResponse.BodyHandlers.ofString());
        assertThat(discovery.body()).contains("{\"kind\":\"Renewal\",\"name\":\"renewals\",\"namespaced\":false,"
                + "\"singularName\":\"renewal\",\"verbs\":[\"create\"]}");
    }

    /**
     * playpen_renewals_total counts each renewal once by its answer, those refused before the renewer runs (a bad
     * body: 400; a caller RBAC denies: 403) as well as those it answers.
     */
    @Test
    void everyRenewalAnswerIsCountedOnceIncludingThoseRefusedBeforeTheRenewer() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op = new OperatorHarness(cluster, "--management-addr=127.0.0.1:0", "--playpen-ttl=1h", "--reconcile-interval=10m");
        op.awaitCache(c -> c.size() == 1);
        allocate("mine");
        assertThat(renew("{\"idempotencyKey\":\"mine\",\"ttl\":\"3h\"}").statusCode()).isEqualTo(200);
        assertThat(renew("{\"idempotencyKey\":\"nobody\",\"ttl\":\"3h\"}").statusCode()).isEqualTo(404);
        assertThat(renew("[1]").statusCode()).isEqualTo(400);
        cluster.sarPolicy = sar -> false;
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url(RENEWALS)))
                .POST(HttpRequest.BodyPublishers.ofString("{\"idempotencyKey\":\"mine\",\"ttl\":\"1h\"}"));
        assertThat(op.frontProxy().send(OperatorHarness.asUser(b, "mallory").build(), HttpResponse.BodyHandlers.ofString())
                .statusCode()).isEqualTo(403);

        String scrape = java.net.http.HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                + op.app.managementAddress().getPort() + "/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
        Map<String, Double> renewals = new java.util.TreeMap<>();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^playpen_renewals_total\\{result=\"([^\"]*)\",?\\} (\\S+)$")
                .matcher(scrape);
        while (m.find()) {
            renewals.put(m.group(1), Double.parseDouble(m.group(2)));
        }
        assertThat(renewals).as(scrape).containsExactlyInAnyOrderEntriesOf(
                Map.of("renewed", 1.0, "not-found", 1.0, "invalid", 1.0, "forbidden", 1.0));
    }

    /**
     * With --playpen-ttl=0 an allocation that asked for no ttl never expires. A renewal only ever extends, so one of
     * that allocation writes no expiry: it must not give it one (1 hour from now here) and so end it then. The
     * answer leaves expiresAt out, as the alloc answer does for an allocation that never expires.
     */
    @Test
    void aRenewalOfAnAllocationThatNeverExpiresChangesNothing() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op = new OperatorHarness(cluster, "--playpen-ttl=0", "--reconcile-interval=10m");
        op.awaitCache(c -> c.size() == 1);
        allocate("forever");
        assertThat(pod(RUNNER).getMetadata().getAnnotations()).doesNotContainKey(PlaypenKeys.EXPIRES_AT);
        int patches = cluster.requestCount(k -> k.startsWith("PATCH "));
        HttpResponse<String> r = renew("{\"idempotencyKey\":\"forever\",\"ttl\":\"1h\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(pod(RUNNER).getMetadata().getAnnotations()).doesNotContainKey(PlaypenKeys.EXPIRES_AT);
        // its one write pins the claim (its writer may no longer take it back), and gives it no expiry
        assertThat(pod(RUNNER).getMetadata().getAnnotations()).containsEntry(PlaypenKeys.CLAIM_SETTLED, "true");
        assertThat(cluster.requestCount(k -> k.startsWith("PATCH "))).isEqualTo(patches + 1);
        assertThat(r.body()).isEqualTo("{}\n");
        HttpResponse<String> again = renew("{\"idempotencyKey\":\"forever\",\"ttl\":\"1h\"}");
        assertThat(again.statusCode()).as(again.body()).isEqualTo(200);
        assertThat(again.body()).isEqualTo("{}\n");
        assertThat(cluster.requestCount(k -> k.startsWith("PATCH "))).isEqualTo(patches + 1);
        assertThat(pod(RUNNER).getMetadata().getAnnotations()).doesNotContainKey(PlaypenKeys.EXPIRES_AT);
    }

    @Test
    void theTimerFollowsARenewedExpiry() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        // claimed-at has whole seconds, so the first expiry can come 3 s after the claim: the renewal has that long
        // to reach the operator on a loaded machine; and the renewed expiry is 5 s after the first one has passed
        op = new OperatorHarness(cluster, "--playpen-ttl=4s", "--reconcile-interval=10m");
        op.awaitCache(c -> c.size() == 1);
        allocate("keep-going");
        HttpResponse<String> r = renew("{\"idempotencyKey\":\"keep-going\",\"ttl\":\"10s\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        Instant renewed = Instant.parse(pod(RUNNER).getMetadata().getAnnotations().get(PlaypenKeys.EXPIRES_AT));
        Instant claimedAt = Instant.parse(pod(RUNNER).getMetadata().getAnnotations().get(PlaypenKeys.CLAIMED_AT));
        assertThat(renewed).isAfter(claimedAt.plusSeconds(4));
        // the first expiry passes without a delete ...
        while (Instant.now().isBefore(claimedAt.plusSeconds(5))) {
            Thread.sleep(50);
        }
        assertThat(pod(RUNNER)).as("deleted at the old expiry").isNotNull();
        // ... and the renewed one is met by the timer: with a 10 minute interval nothing else deletes it within the
        // minute (how late after the instant, on a given machine, is the benchmark's to measure)
        OperatorHarness.awaitTrue(() -> pod(RUNNER) == null, Duration.ofSeconds(60), "expiry at the renewed instant");
        Instant gone = Instant.now();
        assertThat(gone).isAfterOrEqualTo(renewed);
    }
}
