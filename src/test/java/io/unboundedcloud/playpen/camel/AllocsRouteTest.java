package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.slf4j.LoggerFactory;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.unboundedcloud.playpen.kube.KubeClients;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.model.AllocResponses;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.LagProxy;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * Allocations as a resource over the real routes: owners recorded in the claim, list/get/delete scoped to the caller,
 * everyone's with the verb on allocs/all, 404 for other users' ids, Table output, bad options, and the per-user quota
 * under concurrency (one replica: exact; two replicas: at most twice the quota).
 */
class AllocsRouteTest {
    static final ListAppender<ILoggingEvent> AUDIT = new ListAppender<>();
    static final Logger AUDIT_LOGGER = (Logger) LoggerFactory.getLogger("playpen.audit");
    static final ObjectMapper M = new ObjectMapper();
    static final String ALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs";
    static final String TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
            + "g=meta.k8s.io,application/json";

    TestCluster cluster;
    OperatorHarness op;
    OperatorHarness op2;
    HttpClient http;

    @BeforeEach
    void up() throws Exception {
        AUDIT.list.clear();
        AUDIT.start();
        AUDIT_LOGGER.addAppender(AUDIT);
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        // normal users may use allocs; only playpen-admins may act on allocs/all (everyone's)
        cluster.sarPolicy = sar -> {
            List<String> groups = sar.getSpec().getGroups() == null ? List.of() : sar.getSpec().getGroups();
            String sub = sar.getSpec().getResourceAttributes().getSubresource();
            return sub != null && !sub.isEmpty() ? groups.contains("playpen-admins") : groups.contains("playpen-users");
        };
    }

    @AfterEach
    void down() {
        AUDIT_LOGGER.detachAppender(AUDIT);
        if (op2 != null) {
            op2.close();
        }
        if (op != null) {
            op.close();
        }
        cluster.close();
    }

    void runners(int n) throws Exception {
        for (int i = 0; i < n; i++) {
            cluster.create(TestCluster.readyRunner("amd64", 51820 + i, "node-a"));
        }
        op.awaitCache(c -> c.size() == n);
    }

    HttpResponse<String> send(String method, String path, String accept, String user, String... groups) throws Exception {
        return sendBody(method, path, accept, null, user, groups);
    }

    /** {@code body} null: none; else sent as application/json (a DELETE's DeleteOptions). */
    HttpResponse<String> sendBody(String method, String path, String accept, String body, String user, String... groups)
            throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url(path))).timeout(Duration.ofSeconds(20));
        b.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        if (accept != null) {
            b.header("Accept", accept);
        }
        return http.send(OperatorHarness.asUser(b, user, groups).build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> alloc(OperatorHarness to, String key, String user, String... groups) throws Exception {
        return to.kubectlPost(http, ALLOCS, "{\"idempotencyKey\":\"" + key + "\",\"wireGuardPublicKey\":\""
                + TestCluster.wgKey(7) + "\"}", user, groups);
    }

    static JsonNode json(HttpResponse<String> r) throws Exception {
        return M.readTree(r.body());
    }

    static void assertStatus(HttpResponse<String> r, int code, String reason, String message) throws Exception {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(code);
        JsonNode st = json(r);
        assertThat(st.get("kind").asText()).isEqualTo("Status");
        assertThat(st.get("reason").asText()).isEqualTo(reason);
        if (message != null) {
            assertThat(st.get("message").asText()).isEqualTo(message);
        }
    }

    Map<String, String> podState() {
        Map<String, String> st = new TreeMap<>();
        cluster.pods().forEach(p -> st.put(p.getMetadata().getName(), p.getMetadata().getResourceVersion()));
        return st;
    }

    Pod podOf(String key) {
        String hash = Hashes.keyHash(key);
        return cluster.pods().stream()
                .filter(p -> hash.equals(p.getMetadata().getAnnotations().get(PlaypenKeys.IDEMPOTENCY_KEY_HASH)))
                .findFirst().orElseThrow();
    }

    static String idOf(Pod p) {
        return p.getMetadata().getLabels().get(PlaypenKeys.ALLOCATED);
    }

    /** The owner hash this installation writes for a user (every replica shares the key). */
    String owner(String user) {
        return op.app.ownerHashes().of(user).current();
    }

    @Test
    void ownersSeeGetAndDeleteOnlyTheirOwnAdminsSeeEveryones() throws Exception {
        op = new OperatorHarness(cluster, "--playpen-ttl=1h");
        http = op.frontProxy();
        runners(4);
        assertThat(alloc(op, "alice-1", "alice", "playpen-users").statusCode()).isEqualTo(200);
        assertThat(alloc(op, "alice-2", "alice", "playpen-users").statusCode()).isEqualTo(200);
        assertThat(alloc(op, "bob-1", "bob", "playpen-users").statusCode()).isEqualTo(200);
        Pod a1 = podOf("alice-1");
        Pod a2 = podOf("alice-2");
        Pod b1 = podOf("bob-1");
        // the owner is the installation-keyed hash of the user name, written by the claim itself; the name appears
        // nowhere, and neither does its unkeyed sha256 (a dictionary would reverse that)
        assertThat(a1.getMetadata().getAnnotations()).containsEntry(PlaypenKeys.OWNER_HASH, owner("alice"));
        assertThat(b1.getMetadata().getAnnotations()).containsEntry(PlaypenKeys.OWNER_HASH, owner("bob"));
        assertThat(M.writeValueAsString(a1.getMetadata())).doesNotContain(Hashes.sha256Hex("alice"));
        assertThat(M.writeValueAsString(a1.getMetadata())).doesNotContain("\"alice\"");

        // list: alice sees her two, sorted by name, with exactly the promised fields
        HttpResponse<String> list = send("GET", ALLOCS, "application/json", "alice", "playpen-users");
        assertThat(list.statusCode()).as(list.body()).isEqualTo(200);
        JsonNode l = json(list);
        assertThat(l.get("kind").asText()).isEqualTo("AllocList");
        assertThat(l.get("apiVersion").asText()).isEqualTo("playpen.unbounded-cloud.io/v1alpha1");
        List<String> names = new ArrayList<>();
        l.get("items").forEach(i -> names.add(i.at("/metadata/name").asText()));
        assertThat(names).containsExactlyElementsOf(new java.util.TreeSet<>(List.of(idOf(a1), idOf(a2))));
        assertThat(list.body()).doesNotContain(Hashes.keyHash("alice-1")).doesNotContain("alice-1")
                .doesNotContain("idempotency");

        HttpResponse<String> get = send("GET", ALLOCS + "/" + idOf(a1), "application/json", "alice", "playpen-users");
        assertThat(get.statusCode()).isEqualTo(200);
        String claimedAt = a1.getMetadata().getAnnotations().get(PlaypenKeys.CLAIMED_AT);
        int port = a1.getSpec().getContainers().get(0).getPorts().get(1).getHostPort();
        assertThat(json(get)).isEqualTo(M.readTree("{\"apiVersion\":\"playpen.unbounded-cloud.io/v1alpha1\",\"kind\":\"Alloc\","
                + "\"metadata\":{\"name\":\"" + idOf(a1) + "\",\"uid\":\"" + a1.getMetadata().getUid() + "\","
                + "\"resourceVersion\":\"" + a1.getMetadata().getResourceVersion() + "\",\"creationTimestamp\":\"" + claimedAt + "\"},"
                + "\"spec\":{\"resourceType\":\"runner\",\"architecture\":\"amd64\"},"
                + "\"status\":{\"pod\":\"" + a1.getMetadata().getName() + "\",\"node\":\"node-a\",\"endpoint\":\"203.0.113.10:" + port
                + "\",\"claimedAt\":\"" + claimedAt + "\",\"expiresAt\":\"" + Instant.parse(claimedAt).plusSeconds(3600) + "\"}}"));

        // bob's id is 404 for alice, exactly like an id nobody holds: ids cannot be probed
        Map<String, String> before = podState();
        HttpResponse<String> other = send("GET", ALLOCS + "/" + idOf(b1), null, "alice", "playpen-users");
        assertStatus(other, 404, "NotFound", "allocs.playpen.unbounded-cloud.io \"" + idOf(b1) + "\" not found");
        assertStatus(send("GET", ALLOCS + "/0000000000000000", null, "alice", "playpen-users"), 404, "NotFound",
                "allocs.playpen.unbounded-cloud.io \"0000000000000000\" not found");
        assertStatus(send("DELETE", ALLOCS + "/" + idOf(b1), null, "alice", "playpen-users"), 404, "NotFound", null);
        assertThat(podState()).isEqualTo(before);

        // bob sees only his; an admin sees all three and may delete bob's
        assertThat(json(send("GET", ALLOCS, null, "bob", "playpen-users")).get("items")).hasSize(1);
        assertThat(json(send("GET", ALLOCS, null, "root", "playpen-users", "playpen-admins")).get("items")).hasSize(3);
        assertThat(send("GET", ALLOCS + "/" + idOf(b1), null, "root", "playpen-users", "playpen-admins").statusCode())
                .isEqualTo(200);
        // no list permission at all: 403 with the verb
        assertStatus(send("GET", ALLOCS, null, "mallory", "others"), 403, "Forbidden", null);
        assertThat(json(send("GET", ALLOCS, null, "mallory", "others")).get("message").asText())
                .contains("cannot list resource \"allocs\"");

        // alice deletes her own: 200 with the object, the pod is gone, then 404
        HttpResponse<String> del = send("DELETE", ALLOCS + "/" + idOf(a1), null, "alice", "playpen-users");
        assertThat(del.statusCode()).as(del.body()).isEqualTo(200);
        assertThat(json(del).at("/metadata/name").asText()).isEqualTo(idOf(a1));
        assertThat(cluster.client.pods().inNamespace("playpen").withName(a1.getMetadata().getName()).get()).isNull();
        assertStatus(send("GET", ALLOCS + "/" + idOf(a1), null, "alice", "playpen-users"), 404, "NotFound", null);
        // the delete went through the dealloc steps: its audit line (verb delete, never the key) and its Event
        String pod = a1.getMetadata().getName();
        OperatorHarness.awaitTrue(() -> CapturedLogs.snapshot(AUDIT).stream().map(ILoggingEvent::getFormattedMessage)
                .anyMatch(line -> line.contains("\"verb\":\"delete\"") && line.contains("\"outcome\":\"deallocated\"")
                        && line.contains("\"allocation\":\"" + pod + "\"") && line.contains("\"user\":\"alice\"")),
                Duration.ofSeconds(60), "the delete's audit line");
        OperatorHarness.awaitTrue(() -> cluster.client.v1().events().inNamespace("playpen").list().getItems().stream()
                .anyMatch(e -> "Deallocated".equals(e.getReason()) && pod.equals(e.getInvolvedObject().getName())),
                Duration.ofSeconds(60), "the delete's Deallocated Event");
        assertStatus(send("DELETE", ALLOCS + "/" + idOf(a1), null, "alice", "playpen-users"), 404, "NotFound", null);
        HttpResponse<String> adminDel = send("DELETE", ALLOCS + "/" + idOf(b1), null, "root", "playpen-users",
                "playpen-admins");
        assertThat(adminDel.statusCode()).isEqualTo(200);
        assertThat(cluster.client.pods().inNamespace("playpen").withName(b1.getMetadata().getName()).get()).isNull();
        // the SubjectAccessReviews asked the request's verb
        assertThat(cluster.sarRequests).anyMatch(s -> "delete".equals(s.getSpec().getResourceAttributes().getVerb())
                && "all".equals(s.getSpec().getResourceAttributes().getSubresource()));
        assertThat(cluster.sarRequests).anyMatch(s -> "list".equals(s.getSpec().getResourceAttributes().getVerb())
                && s.getSpec().getResourceAttributes().getSubresource() == null);
    }

    /**
     * A Role that names the allocations it grants ({@code resourceNames}) lets its user get and delete exactly those,
     * as kube-apiserver would: the review of a get or delete of one allocation names it, and a verdict for one name
     * never answers for another.
     */
    @Test
    void aRoleLimitedByResourceNamesGetsAndDeletesTheNamedAllocationsOnly() throws Exception {
        // dave's Role: get and delete on allocs with resourceNames [granted], nothing else
        String[] names = carolsTwoAllocationsAndDavesRole(List.of("get", "delete"));
        String granted = names[0];
        String other = names[1];
        // dave acts on carol's allocations: he sees them only with allocs/all, which he holds for the named one
        HttpResponse<String> get = send("GET", ALLOCS + "/" + granted, "application/json", "dave", "named");
        assertThat(get.statusCode()).as(get.body()).isEqualTo(200);
        assertThat(json(get).at("/metadata/name").asText()).isEqualTo(granted);
        HttpResponse<String> notNamed = send("GET", ALLOCS + "/" + other, "application/json", "dave", "named");
        assertStatus(notNamed, 403, "Forbidden", null);
        assertThat(json(notNamed).get("message").asText()).contains("cannot get resource \"allocs\"");
        assertStatus(send("DELETE", ALLOCS + "/" + other, null, "dave", "named"), 403, "Forbidden", null);
        assertStatus(send("GET", ALLOCS, null, "dave", "named"), 403, "Forbidden", null);
        HttpResponse<String> del = send("DELETE", ALLOCS + "/" + granted, null, "dave", "named");
        assertThat(del.statusCode()).as(del.body()).isEqualTo(200);
        assertThat(cluster.client.pods().inNamespace("playpen").withName(podOf("carol-2").getMetadata().getName())
                .get()).isNotNull();
        assertThat(cluster.sarRequests).anyMatch(s -> "dave".equals(s.getSpec().getUser())
                && "get".equals(s.getSpec().getResourceAttributes().getVerb())
                && granted.equals(s.getSpec().getResourceAttributes().getName()));
    }

    /**
     * Only JSON is served: an Accept that admits no JSON (protobuf only, YAML only) is a 406 NotAcceptable Status as
     * kube-apiserver answers it, while what kubectl and client-go send, a wildcard and no Accept at all are answered.
     */
    @Test
    void anAcceptThatAdmitsNoJsonIsNotAcceptable() throws Exception {
        op = new OperatorHarness(cluster, "--playpen-ttl=1h");
        http = op.frontProxy();
        runners(1);
        assertThat(alloc(op, "alice-1", "alice", "playpen-users").statusCode()).isEqualTo(200);
        String one = ALLOCS + "/" + idOf(podOf("alice-1"));
        for (String accept : List.of("application/vnd.kubernetes.protobuf", "application/yaml",
                "application/json;q=0, application/yaml", "text/plain")) {
            for (String path : List.of(ALLOCS, one)) {
                HttpResponse<String> r = send("GET", path, accept, "alice", "playpen-users");
                assertStatus(r, 406, "NotAcceptable", null);
                assertThat(json(r).get("code").asInt()).isEqualTo(406);
                assertThat(json(r).get("message").asText()).as(accept)
                        .startsWith("only the following media types are accepted: application/json");
                assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("application/json");
            }
        }
        for (String accept : java.util.Arrays.asList(null, "", TABLE, "application/vnd.kubernetes.protobuf,application/json",
                "*/*", "application/*", "application/yaml, */*;q=0.1", "APPLICATION/JSON")) {
            for (String path : List.of(ALLOCS, one)) {
                HttpResponse<String> r = send("GET", path, accept, "alice", "playpen-users");
                assertThat(r.statusCode()).as(accept + " " + path + ": " + r.body()).isEqualTo(200);
            }
        }
    }

    /**
     * A list's resourceVersionMatch is checked as kube-apiserver checks it: without a resourceVersion, with a
     * continue token, an unknown value, or Exact with resourceVersion 0 it is a 422 Invalid naming the option; a get
     * of one allocation takes no such option and ignores it.
     */
    @Test
    void aListsResourceVersionMatchIsCheckedAsKubeApiserverChecksIt() throws Exception {
        op = new OperatorHarness(cluster, "--playpen-ttl=1h");
        http = op.frontProxy();
        runners(1);
        assertThat(alloc(op, "alice-1", "alice", "playpen-users").statusCode()).isEqualTo(200);
        String invalid = "ListOptions.meta.k8s.io \"\" is invalid: ";
        assertStatus(send("GET", ALLOCS + "?resourceVersionMatch=NotOlderThan", null, "alice", "playpen-users"), 422,
                "Invalid", invalid + "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
                        + "resourceVersion is provided");
        assertStatus(send("GET", ALLOCS + "?resourceVersion=5&resourceVersionMatch=Newest", null, "alice",
                "playpen-users"), 422, "Invalid", invalid + "resourceVersionMatch: Unsupported value: \"Newest\": "
                        + "supported values: \"Exact\", \"NotOlderThan\", \"\"");
        assertStatus(send("GET", ALLOCS + "?resourceVersion=0&resourceVersionMatch=Exact", null, "alice",
                "playpen-users"), 422, "Invalid", invalid + "resourceVersionMatch: Forbidden: resourceVersionMatch "
                        + "\"exact\" is forbidden for resourceVersion \"0\"");
        HttpResponse<String> both = send("GET", ALLOCS + "?resourceVersionMatch=Exact", null, "alice", "playpen-users");
        assertStatus(both, 422, "Invalid", null);
        assertThat(json(both).get("code").asInt()).isEqualTo(422);
        for (String fine : List.of("?resourceVersion=0&resourceVersionMatch=NotOlderThan", "?resourceVersion=0",
                "?resourceVersionMatch=", "")) {
            HttpResponse<String> r = send("GET", ALLOCS + fine, null, "alice", "playpen-users");
            assertThat(r.statusCode()).as(fine + ": " + r.body()).isEqualTo(200);
            assertThat(json(r).get("items")).hasSize(1);
        }
        HttpResponse<String> one = send("GET", ALLOCS + "/" + idOf(podOf("alice-1")) + "?resourceVersionMatch=Newest",
                null, "alice", "playpen-users");
        assertThat(one.statusCode()).as(one.body()).isEqualTo(200);
    }

    /**
     * A list with resourceVersionMatch=Exact asks for the allocations as they were at that version: the operator
     * lists them as they are now, so an older version is kube-apiserver's 410 Expired, never the current list under
     * the old version's name.
     */
    @Test
    void anExactListOfAnOldVersionIsNotAnsweredWithTheCurrentOne() throws Exception {
        op = new OperatorHarness(cluster, "--playpen-ttl=1h");
        http = op.frontProxy();
        runners(2);
        assertThat(alloc(op, "alice-1", "alice", "playpen-users").statusCode()).isEqualTo(200);
        HttpResponse<String> first = send("GET", ALLOCS, null, "alice", "playpen-users");
        String old = json(first).path("metadata").path("resourceVersion").asText();
        assertThat(old).isNotEmpty();
        assertThat(alloc(op, "alice-2", "alice", "playpen-users").statusCode()).isEqualTo(200);

        HttpResponse<String> exact = send("GET", ALLOCS + "?resourceVersion=" + old + "&resourceVersionMatch=Exact",
                null, "alice", "playpen-users");
        assertStatus(exact, 410, "Expired", null);
        assertThat(json(exact).path("message").asText()).contains(old).contains("resourceVersionMatch");
        // NotOlderThan is answered with the list as it is now
        HttpResponse<String> newer = send("GET", ALLOCS + "?resourceVersion=" + old
                + "&resourceVersionMatch=NotOlderThan", null, "alice", "playpen-users");
        assertThat(newer.statusCode()).as(newer.body()).isEqualTo(200);
        assertThat(json(newer).get("items")).hasSize(2);
    }

    /**
     * Carol's two allocations (their names: the first, which dave's Role grants, and the other) and dave's Role: the
     * {@code verbs} on allocs with resourceNames [the first], nothing else; every other user's reviews as before.
     */
    private String[] carolsTwoAllocationsAndDavesRole(List<String> verbs) throws Exception {
        op = new OperatorHarness(cluster, "--playpen-ttl=1h");
        http = op.frontProxy();
        runners(2);
        assertThat(alloc(op, "carol-1", "carol", "playpen-users").statusCode()).isEqualTo(200);
        assertThat(alloc(op, "carol-2", "carol", "playpen-users").statusCode()).isEqualTo(200);
        String granted = idOf(podOf("carol-1"));
        String other = idOf(podOf("carol-2"));
        var users = cluster.sarPolicy;
        cluster.sarPolicy = sar -> {
            if (!"dave".equals(sar.getSpec().getUser())) {
                return users.test(sar);
            }
            var a = sar.getSpec().getResourceAttributes();
            return verbs.contains(a.getVerb()) && granted.equals(a.getName());
        };
        return new String[] {granted, other};
    }

    /**
     * A watch of allocs is reviewed with the verb watch, as kube-apiserver reviews it: a user who may watch but not
     * list is answered the watch; one who may list but not watch is refused.
     */
    @Test
    void aWatchIsReviewedWithTheVerbWatch() throws Exception {
        op = new OperatorHarness(cluster, "--playpen-ttl=1h");
        http = op.frontProxy();
        var users = cluster.sarPolicy;
        cluster.sarPolicy = sar -> switch (sar.getSpec().getUser()) {
            case "wendy" -> "watch".equals(sar.getSpec().getResourceAttributes().getVerb());
            case "lisa" -> "list".equals(sar.getSpec().getResourceAttributes().getVerb());
            default -> users.test(sar);
        };
        for (String watch : List.of("?watch=true&timeoutSeconds=1", "?watch=1&timeoutSeconds=1")) {
            HttpResponse<String> watcher = send("GET", ALLOCS + watch, null, "wendy", "watchers");
            assertThat(watcher.statusCode()).as(watcher.body()).isEqualTo(200);
            assertThat(watcher.headers().firstValue("Transfer-Encoding")).hasValue("chunked");
            HttpResponse<String> lister = send("GET", ALLOCS + watch, null, "lisa", "listers");
            assertStatus(lister, 403, "Forbidden", null);
            assertThat(json(lister).get("message").asText()).contains("cannot watch resource \"allocs\"");
        }
        assertThat(send("GET", ALLOCS + "?watch=false", null, "lisa", "listers").statusCode()).isEqualTo(200);
        assertStatus(send("GET", ALLOCS, null, "wendy", "watchers"), 403, "Forbidden", null);
    }

    /**
     * A list whose fieldSelector requires one name (metadata.name=<id>, as client-go's one-object list sends it) is
     * reviewed with that name, as kube-apiserver reviews it, so a Role limited by resourceNames may list it.
     */
    @Test
    void aListSelectingOneNameIsReviewedWithThatName() throws Exception {
        // dave's Role: list on allocs with resourceNames [granted], nothing else
        String[] names = carolsTwoAllocationsAndDavesRole(List.of("list"));
        String granted = names[0];
        String other = names[1];
        HttpResponse<String> list = send("GET", ALLOCS + "?fieldSelector=metadata.name%3D" + granted, null, "dave",
                "named");
        assertThat(list.statusCode()).as(list.body()).isEqualTo(200);
        assertThat(json(list).get("items")).hasSize(1);
        assertThat(json(list).at("/items/0/metadata/name").asText()).isEqualTo(granted);
        assertThat(send("GET", ALLOCS + "?fieldSelector=metadata.name%3D%3D" + granted, null, "dave", "named")
                .statusCode()).isEqualTo(200);
        assertStatus(send("GET", ALLOCS + "?fieldSelector=metadata.name%3D" + other, null, "dave", "named"), 403,
                "Forbidden", null);
        assertStatus(send("GET", ALLOCS + "?fieldSelector=metadata.name!%3D" + other, null, "dave", "named"), 403,
                "Forbidden", null);
        assertStatus(send("GET", ALLOCS, null, "dave", "named"), 403, "Forbidden", null);
    }

    /**
     * A 404 and a 403 carry kube-apiserver's Status details (the name, when the request named one, the group, and
     * the resource as kind), which clients read to tell what was not found or refused.
     */
    @Test
    void notFoundAndForbiddenCarryTheirStatusDetails() throws Exception {
        op = new OperatorHarness(cluster, "--playpen-ttl=1h");
        http = op.frontProxy();
        runners(1);
        HttpResponse<String> missing = send("GET", ALLOCS + "/0000000000000000", null, "alice", "playpen-users");
        assertStatus(missing, 404, "NotFound", null);
        assertThat(json(missing).get("details")).isEqualTo(M.readTree("{\"name\":\"0000000000000000\","
                + "\"group\":\"playpen.unbounded-cloud.io\",\"kind\":\"allocs\"}"));
        HttpResponse<String> refused = send("DELETE", ALLOCS + "/0000000000000000", null, "mallory", "others");
        assertStatus(refused, 403, "Forbidden", null);
        assertThat(json(refused).get("details")).isEqualTo(M.readTree("{\"name\":\"0000000000000000\","
                + "\"group\":\"playpen.unbounded-cloud.io\",\"kind\":\"allocs\"}"));
        HttpResponse<String> list = send("GET", ALLOCS, null, "mallory", "others");
        assertThat(json(list).get("details")).isEqualTo(M.readTree("{\"group\":\"playpen.unbounded-cloud.io\","
                + "\"kind\":\"allocs\"}"));
        HttpResponse<String> pool = send("GET", "/apis/playpen.unbounded-cloud.io/v1alpha1/pools/runner-s390x",
                null, "alice", "playpen-users");
        assertStatus(pool, 404, "NotFound", null);
        assertThat(json(pool).get("details")).isEqualTo(M.readTree("{\"name\":\"runner-s390x\","
                + "\"group\":\"playpen.unbounded-cloud.io\",\"kind\":\"pools\"}"));
        // the body's fields in kube-apiserver's order
        assertThat(missing.body()).contains("\"reason\":\"NotFound\",\"details\":{\"name\":\"0000000000000000\"");
    }

    /** A control plane's kubeconfig is in the one object its owner reads, nowhere else (lists, tables, admins). */
    @Test
    void controlPlaneKubeconfigOnlyForItsOwner() throws Exception {
        op = new OperatorHarness(cluster, "--playpen-ttl=1h");
        http = op.frontProxy();
        cluster.create(TestCluster.readyControlPlane("v1.33.0", 16443, "node-a", AllocRouteTest.KUBECONFIG));
        op.awaitCache(c -> c.size() == 1);
        HttpResponse<String> cp = op.kubectlPost(http, ALLOCS, "{\"idempotencyKey\":\"cp\",\"resourceType\":\"controlPlane\"}",
                "alice", "playpen-users");
        assertThat(cp.statusCode()).as(cp.body()).isEqualTo(200);
        String kubeconfig = json(cp).at("/controlPlane/kubeconfig").asText();
        assertThat(kubeconfig).contains("server: https://203.0.113.10:16443");
        String id = idOf(podOf("cp"));
        JsonNode own = json(send("GET", ALLOCS + "/" + id, "application/json", "alice", "playpen-users"));
        assertThat(own.at("/spec/resourceType").asText()).isEqualTo("controlPlane");
        assertThat(own.at("/spec/kubernetesVersion").asText()).isEqualTo("v1.33.0");
        assertThat(own.at("/status/kubeconfig").asText()).isEqualTo(kubeconfig);
        HttpResponse<String> admin = send("GET", ALLOCS + "/" + id, "application/json", "root", "playpen-users",
                "playpen-admins");
        assertThat(admin.statusCode()).isEqualTo(200);
        assertThat(json(admin).at("/status/kubeconfig").isMissingNode()).isTrue();
        assertThat(send("GET", ALLOCS, null, "alice", "playpen-users").body()).doesNotContain("kubeconfig")
                .doesNotContain("BEGIN").doesNotContain("token");
        assertThat(send("GET", ALLOCS + "/" + id, TABLE, "alice", "playpen-users").body()).doesNotContain("kubeconfig");
        // the OpenAPI documents the aggregator fetches with its front-proxy certificate (no user needed)
        for (String path : List.of("/openapi/v2", "/openapi/v3", "/openapi/v3/apis/playpen.unbounded-cloud.io/v1alpha1")) {
            HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url(path))).GET();
            HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as(path).isEqualTo(200);
        }
        JsonNode v2 = json(http.send(HttpRequest.newBuilder(URI.create(op.url("/openapi/v2"))).build(),
                HttpResponse.BodyHandlers.ofString()));
        assertThat(v2.at("/definitions/io.unboundedcloud.playpen.v1alpha1.Alloc/x-kubernetes-group-version-kind/0/kind")
                .asText()).isEqualTo("Alloc");
        JsonNode v3 = json(http.send(HttpRequest.newBuilder(URI.create(op.url("/openapi/v3"))).build(),
                HttpResponse.BodyHandlers.ofString()));
        assertThat(v3.at("/paths/apis~1playpen.unbounded-cloud.io~1v1alpha1/serverRelativeURL").asText())
                .startsWith("/openapi/v3/apis/playpen.unbounded-cloud.io/v1alpha1?hash=");
        // without the front-proxy certificate: 403 like every /apis path
        HttpResponse<String> anon = OperatorHarness.client(null).send(HttpRequest.newBuilder(URI.create(op.url(
                "/openapi/v2"))).build(), HttpResponse.BodyHandlers.ofString());
        assertStatus(anon, 403, "Forbidden", null);
    }

    /**
     * The kubeconfig in an owner's read of a control plane is built from the pod as the API server lists it for
     * that read, as the rest of the object is (and as a replay answers it), not from this replica's watch cache,
     * which may still hold an older version of the pod (before it published a new kubeconfig) or an earlier pod of
     * the same name.
     */
    @Test
    void anOwnersReadOfAControlPlaneHasTheKubeconfigOfThePodAsListed() throws Exception {
        op = new OperatorHarness(cluster, "--playpen-ttl=1h");
        http = op.frontProxy();
        cluster.create(TestCluster.readyControlPlane("v1.33.0", 16443, "node-a", AllocRouteTest.KUBECONFIG));
        op.awaitCache(c -> c.size() == 1);
        HttpResponse<String> cp = op.kubectlPost(http, ALLOCS, "{\"idempotencyKey\":\"cp\",\"resourceType\":\"controlPlane\"}",
                "alice", "playpen-users");
        assertThat(cp.statusCode()).as(cp.body()).isEqualTo(200);
        assertThat(json(cp).at("/controlPlane/kubeconfig").asText()).contains("token: t\n");
        Pod claimed = podOf("cp");
        String id = idOf(claimed);
        // the pod has published a new kubeconfig; the API server lists it so, this replica's watch has not got there
        Pod republished = new io.fabric8.kubernetes.api.model.PodBuilder(claimed).editMetadata()
                .addToAnnotations(PlaypenKeys.CONTROL_PLANE_KUBECONFIG,
                        AllocRouteTest.KUBECONFIG.replace("token: t\n", "token: republished\n"))
                .withResourceVersion(String.valueOf(Long.parseLong(claimed.getMetadata().getResourceVersion()) + 1))
                .endMetadata().build();
        cluster.server.expect().get().withPath("/api/v1/namespaces/playpen/pods?labelSelector="
                + java.net.URLEncoder.encode(PlaypenKeys.ALLOCATED + "=" + id, java.nio.charset.StandardCharsets.UTF_8))
                .andReturn(200, new io.fabric8.kubernetes.api.model.PodListBuilder().withNewMetadata()
                        .withResourceVersion(republished.getMetadata().getResourceVersion()).endMetadata()
                        .addToItems(republished).build()).once();
        JsonNode own = json(send("GET", ALLOCS + "/" + id, "application/json", "alice", "playpen-users"));
        assertThat(own.at("/metadata/resourceVersion").asText()).isEqualTo(republished.getMetadata().getResourceVersion());
        assertThat(own.at("/status/kubeconfig").asText()).contains("token: republished\n")
                .contains("server: https://203.0.113.10:16443");
    }

    @Test
    void tableOutputAndListOptions() throws Exception {
        op = new OperatorHarness(cluster, "--playpen-ttl=0");
        http = op.frontProxy();
        runners(3);
        for (String k : List.of("t1", "t2", "t3")) {
            assertThat(alloc(op, k, "alice", "playpen-users").statusCode()).isEqualTo(200);
        }
        List<String> ids = new ArrayList<>(List.of(idOf(podOf("t1")), idOf(podOf("t2")), idOf(podOf("t3"))));
        java.util.Collections.sort(ids);

        HttpResponse<String> t = send("GET", ALLOCS + "?limit=500", TABLE, "alice", "playpen-users");
        assertThat(t.statusCode()).isEqualTo(200);
        assertThat(t.headers().firstValue("Content-Type")).hasValue("application/json;as=Table;g=meta.k8s.io;v=v1");
        JsonNode table = json(t);
        assertThat(table.get("kind").asText()).isEqualTo("Table");
        List<String> cols = new ArrayList<>();
        table.get("columnDefinitions").forEach(c -> cols.add(c.get("name").asText() + "/" + c.get("priority").asInt()));
        assertThat(cols).containsExactly("Name/0", "Type/0", "Arch/0", "Version/0", "Pod/0", "Age/0", "Expires/0",
                "Node/1", "Endpoint/1");
        JsonNode row = table.get("rows").get(0);
        Pod first = cluster.pods().stream().filter(p -> ids.get(0).equals(idOf(p))).findFirst().orElseThrow();
        List<String> cells = new ArrayList<>();
        row.get("cells").forEach(c -> cells.add(c.asText()));
        assertThat(cells).hasSize(9);
        assertThat(cells.subList(0, 5)).containsExactly(ids.get(0), "runner", "amd64", "<none>",
                first.getMetadata().getName());
        assertThat(cells.get(5)).matches("\\d+s");
        assertThat(cells.subList(6, 9)).containsExactly("<none>", "node-a", "203.0.113.10:"
                + first.getMetadata().getLabels().get(PlaypenKeys.HOST_PORT));
        assertThat(row.at("/object/kind").asText()).isEqualTo("PartialObjectMetadata");
        assertThat(row.at("/object/metadata/name").asText()).isEqualTo(ids.get(0));

        // paging: limit and continue walk the sorted list
        JsonNode p1 = json(send("GET", ALLOCS + "?limit=2", null, "alice", "playpen-users"));
        assertThat(p1.get("items")).hasSize(2);
        String cont = p1.at("/metadata/continue").asText();
        assertThat(cont).isNotEmpty();
        JsonNode p2 = json(send("GET", ALLOCS + "?limit=2&continue=" + cont, null, "alice", "playpen-users"));
        assertThat(p2.get("items")).hasSize(1);
        assertThat(p2.at("/items/0/metadata/name").asText()).isEqualTo(ids.get(2));
        assertThat(p2.at("/metadata/continue").isMissingNode()).isTrue();
        // fieldSelector metadata.name (kubectl delete --wait uses it) and labelSelector (allocs carry no labels)
        assertThat(json(send("GET", ALLOCS + "?fieldSelector=metadata.name%3D" + ids.get(1), null, "alice",
                "playpen-users")).get("items")).hasSize(1);
        assertThat(json(send("GET", ALLOCS + "?labelSelector=team%3Dx", null, "alice", "playpen-users")).get("items"))
                .isEmpty();

        // bad options: a clear 400 Status, nothing changed
        Map<String, String> before = podState();
        // over the 1024-character option bound but inside the request line bound
        String huge = "x".repeat(2000);
        for (String bad : List.of("?limit=-1", "?limit=99999999999999999999", "?limit=ten", "?continue=bm9wZQ",
                "?continue=" + huge, "?fieldSelector=spec.node%3Dx", "?fieldSelector=" + huge,
                "?labelSelector=a%20in%20(", "?labelSelector=" + huge, "?includeObject=All")) {
            HttpResponse<String> r = send("GET", ALLOCS + bad, null, "alice", "playpen-users");
            assertStatus(r, 400, "BadRequest", null);
            assertThat(json(r).get("message").asText().length()).as(bad).isLessThan(300);
        }
        // a request line beyond the listener's bound never reaches the flow
        assertStatus(send("GET", ALLOCS + "?labelSelector=" + "x".repeat(20_000), null, "alice", "playpen-users"), 414,
                "RequestURITooLong", null);
        // a name no allocation can have is missing like any other (kube-apiserver's answer, so kubectl's
        // --ignore-not-found works), and the message says what an id looks like
        assertStatus(send("GET", ALLOCS + "/NOT-AN-ID", null, "alice", "playpen-users"), 404, "NotFound",
                "allocs.playpen.unbounded-cloud.io \"NOT-AN-ID\" not found: an allocation id is 16 lowercase "
                        + "hexadecimal characters, as kubectl get allocs lists them");
        HttpResponse<String> longName = send("DELETE", ALLOCS + "/" + "a".repeat(300), null, "alice", "playpen-users");
        assertStatus(longName, 404, "NotFound", null);
        assertThat(json(longName).get("message").asText()).hasSizeLessThan(300);
        assertStatus(send("DELETE", ALLOCS + "/" + ids.get(0) + "?dryRun=All", null, "alice", "playpen-users"), 400,
                "BadRequest", "dry-run deletes are not supported on allocs: nothing was deleted; kubectl get alloc "
                + ids.get(0) + " -o yaml shows the allocation this delete would release");
        assertStatus(send("GET", ALLOCS + "?watch=true&timeoutSeconds=soon", null, "alice", "playpen-users"), 400,
                "BadRequest", "invalid value for timeoutSeconds: \"soon\": must be a non-negative 64-bit integer");
        assertStatus(send("GET", ALLOCS + "/" + ids.get(0) + "?watch=1&resourceVersion=latest", null, "alice",
                "playpen-users"), 400, "BadRequest", null);
        assertStatus(send("GET", ALLOCS + "?watch=1&resourceVersionMatch=NotOlderThan&resourceVersion=5", null,
                "alice", "playpen-users"), 422, "Invalid", "ListOptions.meta.k8s.io \"\" is invalid: "
                + "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless"
                + " sendInitialEvents is provided");
        HttpResponse<String> put = send("PUT", ALLOCS + "/" + ids.get(0), null, "alice", "playpen-users");
        assertStatus(put, 405, "MethodNotAllowed", io.unboundedcloud.playpen.api.ApiPaths.ALLOC_READ_ONLY);
        assertThat(put.headers().firstValue("Allow")).hasValue("DELETE, GET");
        HttpResponse<String> patch = send("PATCH", ALLOCS, null, "alice", "playpen-users");
        assertStatus(patch, 405, "MethodNotAllowed", "method not allowed: allocs take POST to allocate (kubectl"
                + " create --raw /apis/playpen.unbounded-cloud.io/v1alpha1/allocs -f <file>) and GET to list (kubectl"
                + " get allocs); release one with kubectl delete alloc <id>");
        assertThat(patch.headers().firstValue("Allow")).hasValue("GET, POST");
        assertStatus(send("GET", ALLOCS + "/" + ids.get(0) + "/status", null, "alice", "playpen-users"), 404,
                "NotFound", null);
        assertThat(podState()).isEqualTo(before);
    }

    /** One runner allocated by alice with {@code key} (TTL 1h), and its Alloc as she reads it (its uid is its pod's). */
    JsonNode allocateAndRead(String key) throws Exception {
        op = new OperatorHarness(cluster, "--playpen-ttl=1h");
        http = op.frontProxy();
        runners(1);
        assertThat(alloc(op, key, "alice", "playpen-users").statusCode()).isEqualTo(200);
        Pod pod = podOf(key);
        JsonNode read = json(send("GET", ALLOCS + "/" + idOf(pod), "application/json", "alice", "playpen-users"));
        assertThat(read.at("/metadata/uid").asText()).isEqualTo(pod.getMetadata().getUid());
        return read;
    }

    /**
     * A delete's DeleteOptions preconditions hold as kube-apiserver holds them: an id names whichever allocation has
     * that pod now, so a client that read an allocation, saw it released and its pod claimed again under the same
     * id, deletes nothing when it names the uid it read (409, pod untouched); the right uid or resourceVersion
     * deletes. A body that is not DeleteOptions is a 400 that deletes nothing.
     */
    @Test
    void deletePreconditionsNameTheAllocationTheCallerRead() throws Exception {
        JsonNode read = allocateAndRead("first");
        Pod first = podOf("first");
        String id = idOf(first);
        String readUid = read.at("/metadata/uid").asText();

        // released, its pod replaced under the same name and port, claimed again with another key: the same id
        assertThat(op.dealloc("{\"idempotencyKey\":\"first\"}").statusCode()).isEqualTo(204);
        OperatorHarness.awaitTrue(() -> cluster.pods().isEmpty(), Duration.ofSeconds(60), "the released pod's delete");
        String replacement = cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a")).getMetadata().getUid();
        op.awaitCache(c -> c.size() == 1 && replacement.equals(c.iterator().next().getMetadata().getUid()));
        assertThat(alloc(op, "second", "alice", "playpen-users").statusCode()).isEqualTo(200);
        Pod second = podOf("second");
        assertThat(idOf(second)).isEqualTo(id);
        assertThat(second.getMetadata().getUid()).isNotEqualTo(readUid);

        Map<String, String> before = podState();
        HttpResponse<String> stale = sendBody("DELETE", ALLOCS + "/" + id, null,
                "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"preconditions\":{\"uid\":\"" + readUid + "\"}}",
                "alice", "playpen-users");
        assertStatus(stale, 409, "Conflict", "Precondition failed: UID in precondition: " + readUid
                + ", UID in object meta: " + second.getMetadata().getUid() + "; the allocation " + id + " is not the "
                + "one you read: nothing was deleted; read it again (kubectl get alloc " + id + " -o yaml)");
        HttpResponse<String> oldVersion = sendBody("DELETE", ALLOCS + "/" + id, null,
                "{\"preconditions\":{\"resourceVersion\":\"" + read.at("/metadata/resourceVersion").asText() + "\"}}",
                "alice", "playpen-users");
        assertStatus(oldVersion, 409, "Conflict", null);
        assertThat(json(oldVersion).get("message").asText()).startsWith("Precondition failed: ResourceVersion in "
                + "precondition: " + read.at("/metadata/resourceVersion").asText() + ", ResourceVersion in object meta: "
                + second.getMetadata().getResourceVersion() + "; the allocation " + id + " changed since you read it");
        for (String bad : List.of("[1]", "{\"preconditions\":\"uid\"}", "{\"preconditions\":{\"uid\":7}}")) {
            assertStatus(sendBody("DELETE", ALLOCS + "/" + id, null, bad, "alice", "playpen-users"), 400, "BadRequest",
                    null);
        }
        assertThat(podState()).isEqualTo(before);

        // the uid and resourceVersion of the allocation as it is now: deleted
        HttpResponse<String> current = sendBody("DELETE", ALLOCS + "/" + id, null, "{\"preconditions\":{\"uid\":\""
                + second.getMetadata().getUid() + "\",\"resourceVersion\":\"" + second.getMetadata().getResourceVersion()
                + "\"}}", "alice", "playpen-users");
        assertThat(current.statusCode()).as(current.body()).isEqualTo(200);
        assertThat(json(current).at("/metadata/uid").asText()).isEqualTo(second.getMetadata().getUid());
        assertThat(cluster.client.pods().inNamespace("playpen").withName(second.getMetadata().getName()).get())
                .isNull();
    }

    /**
     * The preconditions hold again on the pod as it is deleted, not only on the allocation as read before: when the
     * API server, asked for the key's pods right before the delete, answers with the pod released and claimed again
     * under the same key (another uid, as a re-allocation with the same idempotency key gets), the delete is the
     * same 409 and the pod is untouched.
     */
    @Test
    void deletePreconditionsHoldOnThePodAsItIsDeleted() throws Exception {
        String readUid = allocateAndRead("first").at("/metadata/uid").asText();
        Pod first = podOf("first");
        String id = idOf(first);

        // the key's pods as the API server would list them after a release and a re-claim with the same key
        Pod reclaimed = new io.fabric8.kubernetes.api.model.PodBuilder(first).editMetadata()
                .withUid("0f0e0d0c-0000-4000-8000-00000000beef").withResourceVersion("999999").endMetadata().build();
        String keyLabel = first.getMetadata().getLabels().get(PlaypenKeys.KEY_HASH_LABEL);
        cluster.server.expect().get().withPath("/api/v1/namespaces/playpen/pods?labelSelector="
                + java.net.URLEncoder.encode(PlaypenKeys.KEY_HASH_LABEL + "=" + keyLabel,
                        java.nio.charset.StandardCharsets.UTF_8))
                .andReturn(200, new io.fabric8.kubernetes.api.model.PodListBuilder().withNewMetadata()
                        .withResourceVersion("999999").endMetadata().addToItems(reclaimed).build()).once();
        Map<String, String> before = podState();

        HttpResponse<String> stale = sendBody("DELETE", ALLOCS + "/" + id, null,
                "{\"preconditions\":{\"uid\":\"" + readUid + "\"}}", "alice", "playpen-users");
        assertStatus(stale, 409, "Conflict", "Precondition failed: UID in precondition: " + readUid
                + ", UID in object meta: " + reclaimed.getMetadata().getUid() + "; the allocation " + id + " is not "
                + "the one you read: nothing was deleted; read it again (kubectl get alloc " + id + " -o yaml)");
        assertThat(podState()).isEqualTo(before);

        // the fake answer was used up: the same delete now finds the pod the caller read, and deletes it
        HttpResponse<String> current = sendBody("DELETE", ALLOCS + "/" + id, null,
                "{\"preconditions\":{\"uid\":\"" + readUid + "\"}}", "alice", "playpen-users");
        assertThat(current.statusCode()).as(current.body()).isEqualTo(200);
        assertThat(cluster.client.pods().inNamespace("playpen").withName(first.getMetadata().getName()).get()).isNull();
    }

    /**
     * A delete by id releases that allocation only. The idempotency key it was made with may meanwhile hold another
     * allocation on another pod (released, then the same key sent again, here by another user): when the API server,
     * asked for the id right before that, still answers with the allocation the caller read, the delete must not take
     * the key's new pod; it finds its own pod gone (404) and leaves the other user's allocation alone, with or
     * without preconditions.
     */
    @Test
    void deleteByIdNeverTakesAnotherAllocationOfTheSameKey() throws Exception {
        op = new OperatorHarness(cluster, "--playpen-ttl=1h");
        http = op.frontProxy();
        runners(2);
        assertThat(alloc(op, "shared", "alice", "playpen-users").statusCode()).isEqualTo(200);
        Pod alices = podOf("shared");
        String id = idOf(alices);
        // released, then the same key used again by bob: the key's new pod is bob's allocation, under another id
        assertThat(op.dealloc("{\"idempotencyKey\":\"shared\"}").statusCode()).isEqualTo(204);
        op.awaitCache(c -> c.size() == 1);
        assertThat(alloc(op, "shared", "bob", "playpen-users").statusCode()).isEqualTo(200);
        Pod bobs = podOf("shared");
        assertThat(bobs.getMetadata().getName()).isNotEqualTo(alices.getMetadata().getName());
        assertThat(idOf(bobs)).isNotEqualTo(id);

        for (String body : new String[] {null, "{\"preconditions\":{\"uid\":\"" + alices.getMetadata().getUid() + "\"}}"}) {
            // the id as the API server answered it just before the release: alice's allocation, as she read it
            readOnceAs(id, alices);
            Map<String, String> before = podState();
            HttpResponse<String> del = sendBody("DELETE", ALLOCS + "/" + id, null, body, "alice", "playpen-users");
            assertStatus(del, 404, "NotFound", "allocs.playpen.unbounded-cloud.io \"" + id + "\" not found");
            assertThat(podState()).as(String.valueOf(body)).isEqualTo(before);
            assertThat(cluster.client.pods().inNamespace("playpen").withName(bobs.getMetadata().getName()).get())
                    .isNotNull();
        }
    }

    /**
     * Alice's allocation of {@code key}, released; the API server is then made to answer the read of its id once more
     * as it was just before the release (a delete by id whose allocation goes while it is being deleted). Its id.
     */
    String releasedAfterItsRead(String key) throws Exception {
        op = new OperatorHarness(cluster, "--playpen-ttl=1h", "--reconcile-interval=10m");
        http = op.frontProxy();
        runners(1);
        assertThat(alloc(op, key, "alice", "playpen-users").statusCode()).isEqualTo(200);
        Pod gone = podOf(key);
        String id = idOf(gone);
        assertThat(op.dealloc("{\"idempotencyKey\":\"" + key + "\"}").statusCode()).isEqualTo(204);
        op.awaitCache(c -> c.isEmpty());
        readOnceAs(id, gone);
        return id;
    }

    /** The API server answers the next read of allocation {@code id} (its LIST by label) with {@code asRead}. */
    void readOnceAs(String id, Pod asRead) {
        cluster.server.expect().get().withPath("/api/v1/namespaces/playpen/pods?labelSelector="
                + java.net.URLEncoder.encode(PlaypenKeys.ALLOCATED + "=" + id, java.nio.charset.StandardCharsets.UTF_8))
                .andReturn(200, new io.fabric8.kubernetes.api.model.PodListBuilder().withNewMetadata()
                        .withResourceVersion("1").endMetadata().addToItems(asRead).build()).once();
    }

    /**
     * A delete by id whose allocation is gone by the time it deletes (its key released, and sent again since by
     * another user, whose request now waits for a pod) answers 404 and releases nothing: the waiting request is no
     * allocation of that id, so it keeps waiting and is served when a pod comes, instead of ending with the 410 a
     * dealloc of its key gives.
     */
    @Test
    void aDeleteByIdLeavesANewRequestOfItsKeyWaiting() throws Exception {
        String id = releasedAfterItsRead("shared");
        // bob sends the key again; no pod is free, so his request waits
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url(ALLOCS))).timeout(Duration.ofSeconds(60))
                .POST(HttpRequest.BodyPublishers.ofString("{\"idempotencyKey\":\"shared\",\"wireGuardPublicKey\":\""
                        + TestCluster.wgKey(7) + "\",\"waitSeconds\":30}"));
        java.util.concurrent.CompletableFuture<HttpResponse<String>> bobs = http.sendAsync(
                OperatorHarness.asUser(b, "bob", "playpen-users").build(), HttpResponse.BodyHandlers.ofString());
        OperatorHarness.awaitTrue(() -> op.app.waitingQueue().waiting() == 1, Duration.ofSeconds(60), "bob waits");

        // alice deletes her allocation by id, read by the API server just before the release
        HttpResponse<String> del = send("DELETE", ALLOCS + "/" + id, null, "alice", "playpen-users");
        assertStatus(del, 404, "NotFound", "allocs.playpen.unbounded-cloud.io \"" + id + "\" not found");
        assertThat(bobs).as("bob's request was not ended by a delete of another allocation").isNotDone();
        assertThat(op.app.waitingQueue().waiting()).as("bob still waits").isEqualTo(1);

        cluster.create(TestCluster.readyRunner("amd64", 51821, "node-a"));
        HttpResponse<String> served = bobs.get(20, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(served.statusCode()).as(served.body()).isEqualTo(200);
        assertThat(podOf("shared").getMetadata().getName()).isEqualTo("playpen-runner-amd64-51821");
    }

    /**
     * An allocation whose pod is being deleted (deletionTimestamp set, a finalizer keeps it) is still there, as
     * kube-apiserver shows an object being deleted: get and list show it with its {@code metadata.deletionTimestamp},
     * and a delete of it answers it again (200), deletes nothing more and writes no Deallocated Event.
     */
    @Test
    void anAllocationBeingDeletedIsShownWithItsDeletionTimestampAndADeleteAnswersIt() throws Exception {
        op = new OperatorHarness(cluster, "--playpen-ttl=1h", "--reconcile-interval=10m");
        http = op.frontProxy();
        runners(1);
        assertThat(alloc(op, "leaving", "alice", "playpen-users").statusCode()).isEqualTo(200);
        Pod claimed = podOf("leaving");
        String pod = claimed.getMetadata().getName();
        String id = idOf(claimed);
        cluster.client.pods().inNamespace("playpen").withName(pod).edit(p -> new io.fabric8.kubernetes.api.model
                .PodBuilder(p).editMetadata().addToFinalizers("example.com/hold").endMetadata().build());
        cluster.client.pods().inNamespace("playpen").withName(pod).delete();
        Pod leaving = cluster.client.pods().inNamespace("playpen").withName(pod).get();
        assertThat(leaving.getMetadata().getDeletionTimestamp()).isNotNull();
        String deletionTimestamp = Instant.parse(leaving.getMetadata().getDeletionTimestamp())
                .truncatedTo(java.time.temporal.ChronoUnit.SECONDS).toString();

        HttpResponse<String> get = send("GET", ALLOCS + "/" + id, "application/json", "alice", "playpen-users");
        assertThat(get.statusCode()).as(get.body()).isEqualTo(200);
        assertThat(json(get).at("/metadata/deletionTimestamp").asText()).isEqualTo(deletionTimestamp);
        JsonNode items = json(send("GET", ALLOCS, "application/json", "alice", "playpen-users")).get("items");
        assertThat(items).hasSize(1);
        assertThat(items.get(0).at("/metadata/name").asText()).isEqualTo(id);
        assertThat(items.get(0).at("/metadata/deletionTimestamp").asText()).isEqualTo(deletionTimestamp);

        Map<String, String> before = podState();
        HttpResponse<String> del = send("DELETE", ALLOCS + "/" + id, null, "alice", "playpen-users");
        assertThat(del.statusCode()).as(del.body()).isEqualTo(200);
        assertThat(json(del).at("/metadata/name").asText()).isEqualTo(id);
        assertThat(json(del).at("/metadata/deletionTimestamp").asText()).isEqualTo(deletionTimestamp);
        assertThat(podState()).isEqualTo(before);
        OperatorHarness.awaitTrue(() -> CapturedLogs.snapshot(AUDIT).stream().map(ILoggingEvent::getFormattedMessage)
                .anyMatch(l -> l.contains("\"verb\":\"delete\"") && l.contains("\"outcome\":\"being-deleted\"")
                        && l.contains("\"user\":\"alice\"")), Duration.ofSeconds(60), "the delete's audit line");
        assertThat(cluster.client.v1().events().inNamespace("playpen").list().getItems())
                .noneMatch(e -> "Deallocated".equals(e.getReason()));
        // a renewal of it stays 410: it is ending
        HttpResponse<String> renew = op.kubectlPost(http, "/apis/playpen.unbounded-cloud.io/v1alpha1/renewals",
                "{\"idempotencyKey\":\"leaving\",\"ttl\":\"1h\"}", "alice", "playpen-users");
        assertThat(renew.statusCode()).as(renew.body()).isEqualTo(410);
    }

    /**
     * A delete by id whose allocation went, and whose key its owner allocated again on the pool's new pod of the same
     * name (so the same allocation id), between the read and the delete: the new allocation is another object (its
     * uid), left alone, and the delete answers 404.
     */
    @Test
    void aDeleteByIdLeavesTheOwnersNewAllocationOnARecreatedPodOfTheSameName() throws Exception {
        String id = releasedAfterItsRead("again");
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op.awaitCache(c -> c.size() == 1);
        assertThat(alloc(op, "again", "alice", "playpen-users").statusCode()).isEqualTo(200);
        Pod renewed = podOf("again");
        assertThat(idOf(renewed)).as("the same name, so the same id").isEqualTo(id);

        HttpResponse<String> del = send("DELETE", ALLOCS + "/" + id, null, "alice", "playpen-users");
        assertStatus(del, 404, "NotFound", "allocs.playpen.unbounded-cloud.io \"" + id + "\" not found");
        assertThat(podOf("again")).as("the new allocation stands").isNotNull();
        assertThat(podOf("again").getMetadata().getUid()).isEqualTo(renewed.getMetadata().getUid());
    }

    /**
     * A delete by id whose allocation's pod went into deletion after the read (its TTL, or a release through another
     * replica, came first; a finalizer keeps the pod) answers as a delete of an allocation already being deleted:
     * 200 with its deletionTimestamp, nothing more deleted, outcome being-deleted; not a 404 while kubectl get still
     * shows it.
     */
    @Test
    void aDeleteByIdWhosePodWentIntoDeletionSinceTheReadAnswersItBeingDeleted() throws Exception {
        op = new OperatorHarness(cluster, "--playpen-ttl=1h", "--reconcile-interval=10m");
        http = op.frontProxy();
        runners(1);
        assertThat(alloc(op, "ending", "alice", "playpen-users").statusCode()).isEqualTo(200);
        Pod read = podOf("ending");
        String pod = read.getMetadata().getName();
        String id = idOf(read);
        cluster.client.pods().inNamespace("playpen").withName(pod).edit(p -> new io.fabric8.kubernetes.api.model
                .PodBuilder(p).editMetadata().addToFinalizers("example.com/hold").endMetadata().build());
        Pod before = cluster.client.pods().inNamespace("playpen").withName(pod).get();
        cluster.client.pods().inNamespace("playpen").withName(pod).delete();
        String deletionTimestamp = Instant.parse(cluster.client.pods().inNamespace("playpen").withName(pod).get()
                .getMetadata().getDeletionTimestamp()).truncatedTo(java.time.temporal.ChronoUnit.SECONDS).toString();
        // the id is read as it was before the delete
        readOnceAs(id, before);
        Map<String, String> state = podState();

        HttpResponse<String> del = send("DELETE", ALLOCS + "/" + id, null, "alice", "playpen-users");
        assertThat(del.statusCode()).as(del.body()).isEqualTo(200);
        assertThat(json(del).at("/metadata/name").asText()).isEqualTo(id);
        assertThat(json(del).at("/metadata/deletionTimestamp").asText()).isEqualTo(deletionTimestamp);
        assertThat(podState()).isEqualTo(state);
        OperatorHarness.awaitTrue(() -> CapturedLogs.snapshot(AUDIT).stream().map(ILoggingEvent::getFormattedMessage)
                .anyMatch(l -> l.contains("\"verb\":\"delete\"") && l.contains("\"outcome\":\"being-deleted\"")),
                Duration.ofSeconds(60), "the delete's audit line");
    }

    /**
     * A delete by id whose allocation is gone by the time it deletes answers 404 and writes one audit line for that
     * decision, its outcome the answer's (notFound); not a second one saying the key held nothing.
     */
    @Test
    void aDeleteByIdThatFindsItsAllocationGoneIsAuditedOnce() throws Exception {
        String id = releasedAfterItsRead("gone-soon");
        HttpResponse<String> del = send("DELETE", ALLOCS + "/" + id, null, "alice", "playpen-users");
        assertStatus(del, 404, "NotFound", "allocs.playpen.unbounded-cloud.io \"" + id + "\" not found");
        // a later request's line marks the end: the audit writer writes lines in the order they came
        assertStatus(send("DELETE", ALLOCS + "/" + "0123456789abcdef", null, "carol", "playpen-users"), 404,
                "NotFound", null);
        OperatorHarness.awaitTrue(() -> CapturedLogs.snapshot(AUDIT).stream().map(ILoggingEvent::getFormattedMessage)
                .anyMatch(l -> l.contains("\"user\":\"carol\"")), Duration.ofSeconds(60), "carol's audit line");
        List<String> alices = CapturedLogs.snapshot(AUDIT).stream().map(ILoggingEvent::getFormattedMessage)
                .filter(l -> l.contains("\"verb\":\"delete\"") && l.contains("\"user\":\"alice\"")).toList();
        assertThat(alices).hasSize(1);
        assertThat(alices.get(0)).contains("\"outcome\":\"notFound\"");
    }

    /**
     * A delete by id whose allocation is gone by the time it deletes is a plain 404, as kubectl delete of any missing
     * name is: no Warning about an idempotency key, which the caller never sent.
     */
    @Test
    void aDeleteByIdThatFindsItsAllocationGoneWarnsOfNoIdempotencyKey() throws Exception {
        String id = releasedAfterItsRead("gone-too");
        HttpResponse<String> del = send("DELETE", ALLOCS + "/" + id, null, "alice", "playpen-users");
        assertStatus(del, 404, "NotFound", "allocs.playpen.unbounded-cloud.io \"" + id + "\" not found");
        assertThat(del.headers().allValues("Warning")).isEmpty();
    }

    /**
     * A replay this replica cannot answer (it knows no ExternalIP for the pod's node: 503, the allocation stands) is
     * audited once, as the 503 it was; no line says it was replayed.
     */
    @Test
    void aReplayAnswered503IsAuditedOnceAsItsAnswer() throws Exception {
        op = new OperatorHarness(cluster, "--playpen-ttl=1h", "--reconcile-interval=10m");
        http = op.frontProxy();
        runners(1);
        assertThat(alloc(op, "no-address-later", "alice", "playpen-users").statusCode()).isEqualTo(200);
        cluster.client.nodes().withName("node-a").edit(n -> {
            n.getStatus().getAddresses().removeIf(a -> "ExternalIP".equals(a.getType()));
            return n;
        });
        OperatorHarness.awaitTrue(() -> op.app.nodeCache().externalIp("node-a").isEmpty(), Duration.ofSeconds(60),
                "the node watch has the node without its ExternalIP");
        HttpResponse<String> replay = alloc(op, "no-address-later", "alice", "playpen-users");
        assertThat(replay.statusCode()).as(replay.body()).isEqualTo(503);
        // the Go operator's reason, then what to do: the allocation stands for the key
        assertThat(json(replay).path("message").asText())
                .endsWith(" is on node node-a with no ExternalIP" + AllocResponses.STANDS_ADVICE);
        // a later request's line marks the end: the audit writer writes lines in the order they came
        assertStatus(send("DELETE", ALLOCS + "/" + "0123456789abcdef", null, "carol", "playpen-users"), 404,
                "NotFound", null);
        OperatorHarness.awaitTrue(() -> CapturedLogs.snapshot(AUDIT).stream().map(ILoggingEvent::getFormattedMessage)
                .anyMatch(l -> l.contains("\"user\":\"carol\"")), Duration.ofSeconds(60), "carol's audit line");
        String prefix = Hashes.keyHash("no-address-later").substring(0, 8);
        List<String> outcomes = CapturedLogs.snapshot(AUDIT).stream().map(ILoggingEvent::getFormattedMessage)
                .filter(l -> l.contains("\"keyHashPrefix\":\"" + prefix + "\""))
                .map(l -> l.replaceAll(".*\"outcome\":\"([^\"]*)\".*", "$1")).toList();
        assertThat(outcomes).containsExactly("allocated", "serviceUnavailable");
    }

    @Test
    void quotaIsExactOnOneReplicaAndReplaysNeverCount() throws Exception {
        op = new OperatorHarness(cluster, "--max-allocs-per-user=3");
        http = op.frontProxy();
        runners(12);
        List<HttpResponse<String>> answers = concurrently(16, i -> alloc(op, "q-" + i, "alice", "playpen-users"));
        long ok = answers.stream().filter(r -> r.statusCode() == 200).count();
        List<HttpResponse<String>> refused = answers.stream().filter(r -> r.statusCode() == 429).toList();
        assertThat(ok).isEqualTo(3);
        assertThat(refused).hasSize(13);
        assertThat(refused.get(0).headers().firstValue("Retry-After")).hasValue("1");
        assertStatus(refused.get(0), 429, "TooManyRequests",
                "allocation quota exceeded: you hold 3 of at most 3 allocations (--max-allocs-per-user); deallocate one first");
        List<Pod> alices = cluster.pods().stream().filter(p -> owner("alice")
                .equals(p.getMetadata().getAnnotations().get(PlaypenKeys.OWNER_HASH))).toList();
        assertThat(alices).hasSize(3);
        // a replay of a held key is answered at the quota, not refused
        String heldKey = null;
        for (int i = 0; i < 16; i++) {
            if (answers.get(i).statusCode() == 200) {
                heldKey = "q-" + i;
            }
        }
        HttpResponse<String> replay = alloc(op, heldKey, "alice", "playpen-users");
        assertThat(replay.statusCode()).isEqualTo(200);
        assertThat(replay.body()).isEqualTo(answers.get(Integer.parseInt(heldKey.substring(2))).body());
        // other users are not affected; freeing one (DELETE) makes room again
        assertThat(alloc(op, "bob-q", "bob", "playpen-users").statusCode()).isEqualTo(200);
        assertThat(send("DELETE", ALLOCS + "/" + idOf(podOf(heldKey)), null, "alice", "playpen-users").statusCode())
                .isEqualTo(200);
        assertThat(alloc(op, "q-after", "alice", "playpen-users").statusCode()).isEqualTo(200);
        assertThat(alloc(op, "q-over", "alice", "playpen-users").statusCode()).isEqualTo(429);
    }

    /**
     * The quota is exact however many replicas serve the user (docs/api.md), also while one replica's watch lags:
     * the second replica counts none of the claims made through the first and claims, and its claim, judged against
     * the quota in the API server's order of commits, is taken back and answered 429.
     */
    @Test
    void quotaIsExactAcrossTwoReplicasWhileTheWatchOfOneLags() throws Exception {
        op = new OperatorHarness(cluster, "--max-allocs-per-user=2");
        http = op.frontProxy();
        runners(12);
        try (LagProxy lag = new LagProxy(URI.create(cluster.server.url("/")));
                KubernetesClient viaLag = KubeClients.create(new ConfigBuilder().withMasterUrl(lag.url().toString())
                        .withNamespace(TestCluster.NS).withTrustCerts(true).build())) {
            op2 = new OperatorHarness(cluster, viaLag, "--max-allocs-per-user=2");
            try {
                op2.awaitCache(c -> c.size() == 12);
                lag.holdWatches();
                List<HttpResponse<String>> answers = new ArrayList<>(
                        concurrently(8, i -> alloc(op, "r-" + i, "alice", "playpen-users")));
                assertThat(answers).filteredOn(r -> r.statusCode() == 200).hasSize(2);
                // the second replica's cache shows none of alice's claims: it claims, and waits for its watch
                ExecutorService second = Executors.newSingleThreadExecutor();
                try {
                    Future<List<HttpResponse<String>>> through2 = second.submit(
                            () -> concurrently(8, i -> alloc(op2, "r-" + (8 + i), "alice", "playpen-users")));
                    OperatorHarness.awaitTrue(() -> aliceClaims() > 2 || through2.isDone(), Duration.ofSeconds(60),
                            "a claim of alice's written through the replica whose watch lags");
                    assertThat(through2).as("answered before its watch delivered the claims").isNotDone();
                    lag.releaseWatches();
                    answers.addAll(through2.get());
                } finally {
                    second.shutdownNow();
                }
                assertThat(answers).allMatch(r -> r.statusCode() == 200 || r.statusCode() == 429);
                long ok = answers.stream().filter(r -> r.statusCode() == 200).count();
                assertThat(ok).as("allocations answered to alice, quota 2").isEqualTo(2L);
                OperatorHarness.awaitTrue(() -> aliceClaims() == 2, Duration.ofSeconds(60), "the claim over the quota "
                        + "taken back");
                // once both watches have seen the claims, neither replica admits another
                op2.awaitCache(c -> c.stream().filter(p -> p.getMetadata().getAnnotations() != null && owner("alice")
                        .equals(p.getMetadata().getAnnotations().get(PlaypenKeys.OWNER_HASH))).count() == 2);
                assertThat(alloc(op, "r-late-1", "alice", "playpen-users").statusCode()).isEqualTo(429);
                assertThat(alloc(op2, "r-late-2", "alice", "playpen-users").statusCode()).isEqualTo(429);
            } finally {
                op2.close();
                op2 = null;
            }
        }
    }

    long aliceClaims() {
        return cluster.pods().stream().filter(p -> p.getMetadata().getAnnotations() != null && owner("alice")
                .equals(p.getMetadata().getAnnotations().get(PlaypenKeys.OWNER_HASH))).count();
    }

    interface Call {
        HttpResponse<String> call(int i) throws Exception;
    }

    static List<HttpResponse<String>> concurrently(int n, Call call) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<HttpResponse<String>>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int idx = i;
                Callable<HttpResponse<String>> c = () -> {
                    go.await();
                    return call.call(idx);
                };
                fs.add(pool.submit(c));
            }
            go.countDown();
            List<HttpResponse<String>> out = new ArrayList<>();
            for (Future<HttpResponse<String>> f : fs) {
                out.add(f.get());
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }
}
