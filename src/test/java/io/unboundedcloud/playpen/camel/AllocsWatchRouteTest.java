package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * Watches of allocations ({@code kubectl get allocs -w}, and the wait of {@code kubectl delete} and {@code kubectl
 * wait --for=delete}): the answer streams one event per line, made from the API server's watch of the pods, from
 * the resourceVersion a list answered, on any replica.
 */
class AllocsWatchRouteTest {
    static final ObjectMapper M = new ObjectMapper();
    static final String ALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs";
    static final String TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

    static final int HISTORY = 200;

    TestCluster cluster;
    OperatorHarness op;
    OperatorHarness op2;
    HttpClient http;
    final List<Watching> watches = new ArrayList<>();

    @BeforeEach
    void up() throws Exception {
        // the simulated API server keeps the last 200 changes for watches that go on from a version (plenty here)
        cluster = TestCluster.withWatchHistory(HISTORY);
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        cluster.sarPolicy = sar -> {
            List<String> groups = sar.getSpec().getGroups() == null ? List.of() : sar.getSpec().getGroups();
            String sub = sar.getSpec().getResourceAttributes().getSubresource();
            return sub != null && !sub.isEmpty() ? groups.contains("playpen-admins") : groups.contains("playpen-users");
        };
        op = new OperatorHarness(cluster, "--playpen-ttl=1h");
        http = op.frontProxy();
        for (int i = 0; i < 4; i++) {
            cluster.create(TestCluster.readyRunner("amd64", 51820 + i, "node-a"));
        }
        op.awaitCache(c -> c.size() == 4);
    }

    @AfterEach
    void down() {
        watches.forEach(Watching::cancel);
        if (op2 != null) {
            op2.close();
        }
        if (op != null) {
            op.close();
        }
        cluster.close();
    }

    /** One watch's answer, its lines read as they come. */
    static final class Watching {
        final HttpResponse<Stream<String>> response;
        final LinkedBlockingQueue<JsonNode> events = new LinkedBlockingQueue<>();
        final CompletableFuture<Void> ended = new CompletableFuture<>();
        final Thread reader;

        Watching(HttpResponse<Stream<String>> response) {
            this.response = response;
            reader = new Thread(() -> {
                try (Stream<String> lines = response.body()) {
                    lines.forEach(line -> {
                        try {
                            events.add(M.readTree(line));
                        } catch (Exception e) {
                            throw new IllegalStateException("not a JSON watch event: " + line, e);
                        }
                    });
                    ended.complete(null);
                } catch (RuntimeException e) {
                    ended.completeExceptionally(e);
                }
            }, "watch-reader");
            reader.setDaemon(true);
            reader.start();
        }

        /** The next event; fails when none comes within 20 s. */
        JsonNode next() throws InterruptedException {
            JsonNode e = events.poll(20, TimeUnit.SECONDS);
            assertThat(e).as("a watch event").isNotNull();
            return e;
        }

        /** The next event that is not a MODIFIED (a delete is asked for, then done). */
        JsonNode nextNotModified() throws InterruptedException {
            JsonNode e = next();
            while (e.path("type").asText().equals("MODIFIED")) {
                e = next();
            }
            return e;
        }

        /** Waits for the answer to end (its last chunk); fails when it does not within 20 s. */
        List<JsonNode> awaitEnd() throws Exception {
            ended.get(20, TimeUnit.SECONDS);
            List<JsonNode> rest = new ArrayList<>();
            events.drainTo(rest);
            return rest;
        }

        void cancel() {
            reader.interrupt();
        }
    }

    Watching watch(OperatorHarness to, String query, String accept, String user, String... groups) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(to.url(ALLOCS + query)));
        if (accept != null) {
            b.header("Accept", accept);
        }
        HttpResponse<Stream<String>> r = http.send(OperatorHarness.asUser(b, user, groups).build(),
                HttpResponse.BodyHandlers.ofLines());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith(
                "application/json"));
        Watching w = new Watching(r);
        watches.add(w);
        return w;
    }

    HttpResponse<String> get(OperatorHarness to, String query, String user, String... groups) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(to.url(ALLOCS + query))).timeout(Duration.ofSeconds(20));
        return http.send(OperatorHarness.asUser(b, user, groups).build(), HttpResponse.BodyHandlers.ofString());
    }

    String alloc(OperatorHarness to, String key, String user) throws Exception {
        HttpResponse<String> r = to.kubectlPost(http, ALLOCS, "{\"idempotencyKey\":\"" + key
                + "\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(7) + "\"}", user, "playpen-users");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return idOf(podOf(key));
    }

    void dealloc(String key, String user) throws Exception {
        HttpResponse<String> r = op.kubectlPost(http, "/apis/playpen.unbounded-cloud.io/v1alpha1/deallocs",
                "{\"idempotencyKey\":\"" + key + "\"}", user, "playpen-users");
        assertThat(r.statusCode()).as(r.body()).isIn(200, 204);
    }

    Pod podOf(String key) {
        String hash = io.unboundedcloud.playpen.model.Hashes.keyHash(key);
        return cluster.pods().stream()
                .filter(p -> hash.equals(p.getMetadata().getAnnotations().get(PlaypenKeys.IDEMPOTENCY_KEY_HASH)))
                .findFirst().orElseThrow();
    }

    static String idOf(Pod p) {
        return p.getMetadata().getLabels().get(PlaypenKeys.ALLOCATED);
    }

    String listVersion(OperatorHarness to, String user) throws Exception {
        HttpResponse<String> list = get(to, "", user, "playpen-users");
        assertThat(list.statusCode()).as(list.body()).isEqualTo(200);
        String version = M.readTree(list.body()).path("metadata").path("resourceVersion").asText();
        assertThat(version).as("a list's resourceVersion, where a watch goes on from").isNotEmpty();
        return version;
    }

    @Test
    void aWatchFromAListSeesTheCallersNewAllocationAndItsReleaseAndNoOtherUsers() throws Exception {
        String from = listVersion(op, "alice");
        Watching w = watch(op, "?watch=1&resourceVersion=" + from, null, "alice", "playpen-users");
        alloc(op, "bob-1", "bob");
        String mine = alloc(op, "alice-1", "alice");
        JsonNode added = w.next();
        assertThat(added.path("type").asText()).isEqualTo("ADDED");
        assertThat(added.path("object").path("kind").asText()).isEqualTo("Alloc");
        assertThat(added.path("object").path("metadata").path("name").asText()).isEqualTo(mine);
        assertThat(added.path("object").path("status").path("endpoint").asText()).startsWith("203.0.113.10:518");
        dealloc("alice-1", "alice");
        JsonNode deleted = w.nextNotModified();
        assertThat(deleted.path("type").asText()).isEqualTo("DELETED");
        assertThat(deleted.path("object").path("metadata").path("name").asText()).isEqualTo(mine);
        assertThat(Long.parseLong(deleted.path("object").path("metadata").path("resourceVersion").asText()))
                .as("the deletion's version, after the allocation's own")
                .isGreaterThan(Long.parseLong(added.path("object").path("metadata").path("resourceVersion").asText()));
        assertThat(w.events).as("bob's allocation is not alice's to see").isEmpty();
    }

    @Test
    void aWatchWithoutAVersionStartsWithEveryAllocationThereIsAsAdded() throws Exception {
        String mine = alloc(op, "alice-1", "alice");
        Watching w = watch(op, "?watch=true&timeoutSeconds=2", TABLE, "alice", "playpen-users");
        JsonNode added = w.next();
        assertThat(added.path("type").asText()).isEqualTo("ADDED");
        assertThat(added.path("object").path("kind").asText()).isEqualTo("Table");
        assertThat(added.path("object").path("rows").get(0).path("cells").get(0).asText()).isEqualTo(mine);
        // timeoutSeconds ends the answer (its last chunk) with nothing more to tell
        assertThat(w.awaitEnd()).isEmpty();

        Watching listed = watch(op, "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                + "&allowWatchBookmarks=true&timeoutSeconds=2", null, "alice", "playpen-users");
        assertThat(listed.next().path("object").path("metadata").path("name").asText()).isEqualTo(mine);
        JsonNode end = listed.next();
        assertThat(end.path("type").asText()).isEqualTo("BOOKMARK");
        assertThat(end.path("object").path("metadata").path("annotations").path("k8s.io/initial-events-end").asText())
                .isEqualTo("true");
        assertThat(end.path("object").path("metadata").path("resourceVersion").asText()).isNotEmpty();
    }

    /**
     * A claim made before the owner-hash key existed carries the unkeyed hash in its owner label until it is moved:
     * a list shows it to its owner, so their watch sees it too (its going, and among the initial events).
     */
    @Test
    void aWatchOfTheOwnersAllocationsSeesTheirLegacyLabelledClaimGo() throws Exception {
        String mine = alloc(op, "alice-1", "alice");
        Pod claimed = podOf("alice-1");
        String legacy = io.unboundedcloud.playpen.model.Hashes.sha256Hex("alice");
        cluster.client.pods().inNamespace(TestCluster.NS).withName(claimed.getMetadata().getName())
                .edit(p -> new io.fabric8.kubernetes.api.model.PodBuilder(p).editMetadata()
                        .addToAnnotations(PlaypenKeys.OWNER_HASH, legacy)
                        .addToLabels(PlaypenKeys.OWNER_HASH_LABEL,
                                io.unboundedcloud.playpen.kube.ClaimWriter.labelValue(legacy))
                        .endMetadata().build());
        op.awaitCache(c -> c.stream().anyMatch(p -> legacy.equals(p.getMetadata().getAnnotations() == null ? null
                : p.getMetadata().getAnnotations().get(PlaypenKeys.OWNER_HASH))));

        HttpResponse<String> list = get(op, "", "alice", "playpen-users");
        assertThat(list.statusCode()).as(list.body()).isEqualTo(200);
        JsonNode listed = M.readTree(list.body());
        assertThat(listed.path("items").findValuesAsText("name")).as("the list shows the legacy claim").contains(mine);

        Watching initial = watch(op, "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                + "&allowWatchBookmarks=true&timeoutSeconds=5", null, "alice", "playpen-users");
        JsonNode first = initial.next();
        assertThat(first.path("type").asText()).as(first.toString()).isEqualTo("ADDED");
        assertThat(first.path("object").path("metadata").path("name").asText()).isEqualTo(mine);
        assertThat(initial.next().path("type").asText()).isEqualTo("BOOKMARK");

        String from = listed.path("metadata").path("resourceVersion").asText();
        Watching w = watch(op, "?watch=1&resourceVersion=" + from, null, "alice", "playpen-users");
        cluster.client.pods().inNamespace(TestCluster.NS).withName(claimed.getMetadata().getName()).delete();
        JsonNode deleted = w.nextNotModified();
        assertThat(deleted.path("type").asText()).as(deleted.toString()).isEqualTo("DELETED");
        assertThat(deleted.path("object").path("metadata").path("name").asText()).isEqualTo(mine);
    }

    /**
     * kubectl delete and kubectl wait --for=delete watch one allocation by name: its owner sees it go; another user
     * who names it sees nothing of it (as a read of it is 404 to them).
     */
    @Test
    void aWatchOfOneAllocationByNameSeesItGoAndOnlyItsOwnerSeesIt() throws Exception {
        String mine = alloc(op, "alice-1", "alice");
        String from = listVersion(op, "alice");
        Watching owner = watch(op, "?watch=1&fieldSelector=metadata.name%3D" + mine + "&resourceVersion=" + from,
                null, "alice", "playpen-users");
        Watching other = watch(op, "?watch=1&fieldSelector=metadata.name%3D" + mine + "&resourceVersion=" + from
                + "&timeoutSeconds=3", null, "bob", "playpen-users");
        dealloc("alice-1", "alice");
        JsonNode e = owner.nextNotModified();
        assertThat(e.path("type").asText()).isEqualTo("DELETED");
        assertThat(e.path("object").path("metadata").path("name").asText()).isEqualTo(mine);
        assertThat(other.awaitEnd()).as("events bob's watch was sent").isEmpty();
    }

    /**
     * A watch whose fieldSelector names what no allocation id is (here no label could have it either: it ends in a
     * '-', which the API server refuses in a label selector) opens, sends nothing of the caller's other allocations
     * and ends at its timeout: the name is never sent to the API server as a label value.
     */
    @Test
    void aWatchOfANameThatIsNoAllocationIdSendsNothingAndEndsAtItsTimeout() throws Exception {
        alloc(op, "alice-1", "alice");
        String from = listVersion(op, "alice");
        Watching w = watch(op, "?watch=1&fieldSelector=metadata.name%3Dnot-an-id-&resourceVersion=" + from
                + "&timeoutSeconds=2", null, "alice", "playpen-users");
        dealloc("alice-1", "alice");
        assertThat(w.awaitEnd()).as("events of a name no allocation has").isEmpty();
    }

    /**
     * A client that listed on one replica watches on another from the list's resourceVersion, as the aggregator
     * spreads its requests: the version is the API server's, so the second replica goes on exactly from it.
     */
    @Test
    void aWatchOnAnotherReplicaGoesOnFromTheFirstOnesList() throws Exception {
        op2 = new OperatorHarness(cluster, "--playpen-ttl=1h");
        op2.awaitCache(c -> c.size() == 4);
        String first = alloc(op, "alice-1", "alice");
        String from = listVersion(op, "alice");
        String second = alloc(op, "alice-2", "alice");
        // op2 is asked only now: what came after op's list (the second allocation) is what it sends, not the first
        Watching w = watch(op2, "?watch=1&resourceVersion=" + from, null, "alice", "playpen-users");
        JsonNode added = w.next();
        while (added.path("type").asText().equals("MODIFIED")
                && added.path("object").path("metadata").path("name").asText().equals(first)) {
            added = w.next();
        }
        assertThat(added.path("type").asText()).isEqualTo("ADDED");
        assertThat(added.path("object").path("metadata").path("name").asText()).isEqualTo(second);
    }

    /**
     * A client that goes while its watch is being set up (here: while the list it starts from is read) leaves
     * nothing open: the stream ends, its slot and the API server's watch are freed.
     */
    @Test
    void aClientGoneBeforeItsWatchIsAnsweredLeavesNothingOpen() throws Exception {
        java.util.concurrent.CountDownLatch listing = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        cluster.addRequestListener(key -> {
            if (key.startsWith("GET /api/v1/namespaces/") && key.endsWith("/pods") && listing.getCount() > 0) {
                listing.countDown();
                try {
                    release.await(20, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        try (javax.net.ssl.SSLSocket s = (javax.net.ssl.SSLSocket) OperatorHarness.sslContext(
                cluster.frontProxyClient).getSocketFactory().createSocket("127.0.0.1", op.port)) {
            s.getOutputStream().write(("GET " + ALLOCS + "?watch=1 HTTP/1.1\r\nHost: a\r\nX-Remote-User: alice\r\n"
                    + "X-Remote-Group: playpen-users\r\n\r\n").getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            s.getOutputStream().flush();
            assertThat(listing.await(20, TimeUnit.SECONDS)).as("the watch's list reached the API server").isTrue();
            assertThat(op.app.openWatches()).isEqualTo(1);
        }
        release.countDown();
        OperatorHarness.awaitTrue(() -> op.app.openWatches() == 0, Duration.ofSeconds(20),
                "the watch of a client that went ended");
    }

    @Test
    void aStoppingReplicaEndsItsWatchesSoTheirClientsWatchAgainElsewhere() throws Exception {
        Watching w = watch(op, "?watch=1", null, "alice", "playpen-users");
        op.close();
        op = null;
        assertThat(w.awaitEnd()).isEmpty();
    }

    @Test
    void aWatchFromAVersionTheApiServerNoLongerKeepsEndsWith410Expired() throws Exception {
        // the simulated API server keeps the last changes only; enough of them push an old version out
        String from = listVersion(op, "alice");
        String pod = "/api/v1/namespaces/" + cluster.pods().get(0).getMetadata().getNamespace() + "/pods/"
                + cluster.pods().get(0).getMetadata().getName();
        for (int i = 0; i < HISTORY + 10; i++) {
            assertThat(cluster.patchInStore(pod, "{\"metadata\":{\"annotations\":{\"touched\":\"" + i + "\"}}}"))
                    .isBetween(200, 202);
        }
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url(ALLOCS + "?watch=1&resourceVersion=" + from)))
                .timeout(Duration.ofSeconds(20));
        HttpResponse<String> r = http.send(OperatorHarness.asUser(b, "alice", "playpen-users").build(),
                HttpResponse.BodyHandlers.ofString());
        JsonNode status = r.statusCode() == 410 ? M.readTree(r.body())
                : M.readTree(r.body().lines().filter(l -> l.contains("\"ERROR\"")).findFirst().orElseThrow())
                        .path("object");
        assertThat(status.path("code").asInt()).as(r.body()).isEqualTo(410);
        assertThat(status.path("reason").asText()).isEqualTo("Expired");
        assertThat(status.path("message").asText()).contains("list the allocations again");
    }
}
