package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;
import java.util.TreeMap;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.AllocRequestParser;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** Bad input gets the right Status and changes nothing in the cluster. */
class BadInputRouteTest {
    static final ObjectMapper M = new ObjectMapper();
    static final String ALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs";
    static TestCluster cluster;
    static OperatorHarness op;

    @BeforeAll
    static void up() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        op = new OperatorHarness(cluster);
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op.awaitCache(c -> c.size() == 1);
    }

    @AfterAll
    static void down() {
        if (op != null) {
            op.close();
        }
        cluster.close();
    }

    Map<String, String> clusterState() {
        Map<String, String> state = new TreeMap<>();
        for (Pod p : cluster.pods()) {
            state.put(p.getMetadata().getName(), p.getMetadata().getResourceVersion());
        }
        return state;
    }

    HttpResponse<String> send(String method, String path, String contentType, byte[] body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url(path)))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
        if (contentType != null) {
            b.header("Content-Type", contentType);
        }
        return op.frontProxy().send(OperatorHarness.asUser(b, "alice", "playpen-users").build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** The Status message of an alloc body that does not decode. */
    static String badAlloc(String whatIsWrong) {
        return AllocRequestParser.invalidJsonMessage(whatIsWrong, AllocRequestParser.ALLOC_SHAPE);
    }

    void expect(HttpResponse<String> r, int code, String reason, String message) throws Exception {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(code);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/json");
        JsonNode st = M.readTree(r.body());
        assertThat(st.get("kind").asText()).isEqualTo("Status");
        assertThat(st.get("status").asText()).isEqualTo("Failure");
        assertThat(st.get("reason").asText()).isEqualTo(reason);
        assertThat(st.get("code").asInt()).isEqualTo(code);
        if (message != null) {
            assertThat(st.get("message").asText()).isEqualTo(message);
        }
    }

    @Test
    void malformedBodiesAre400AndChangeNothing() throws Exception {
        Map<String, String> before = clusterState();
        String wg = TestCluster.wgKey(1);
        expect(op.alloc("not json"), 400, "BadRequest", badAlloc("the body is not valid JSON near line 1, column 1"));
        expect(op.alloc("[{\"idempotencyKey\":\"a\"}]"), 400, "BadRequest", badAlloc("the body is an array, not an object"));
        expect(op.alloc("{\"idempotencyKey\":42}"), 400, "BadRequest",
                badAlloc("field \"idempotencyKey\" is a number, not a string"));
        expect(op.alloc("{\"idempotencyKey\":\"a\",\"architecture\":[\"arm64\"]}"), 400, "BadRequest",
                badAlloc("field \"architecture\" is an array, not a string"));
        expect(op.alloc("{\"resourceType\":\"runner\"}"), 400, "BadRequest",
                "Idempotency-Key header or idempotencyKey body field is required: any string that names this request,"
                        + " such as a UUID (uuidgen); the same key again returns the same allocation");
        expect(op.alloc("{\"idempotencyKey\":\"a\"}"), 400, "BadRequest",
                "wireGuardPublicKey is required for runners: the base64 public key of your WireGuard peer, as"
                        + " \"wg genkey | wg pubkey\" prints it");
        expect(op.alloc("{\"idempotencyKey\":\"a\",\"resourceType\":\"vm\"}"), 400, "BadRequest",
                "resourceType must be \"runner\" or \"controlPlane\"");
        expect(op.alloc("{\"idempotencyKey\":\"a\",\"wireGuardPublicKey\":\"short\"}"), 400, "BadRequest",
                "wireGuardPublicKey must be a valid WireGuard public key; send the 44 characters of standard base64"
                        + " (A-Z, a-z, 0-9, + and /, then \"=\") that \"wg genkey | wg pubkey\" prints for your peer; this"
                        + " one is 5 characters long");
        expect(op.alloc("{\"idempotencyKey\":\"a\",\"wireGuardPublicKey\":\"" + wg + "\",\"architecture\":\"s390x\"}"),
                400, "BadRequest", "architecture must be \"amd64\" or \"arm64\"");
        expect(op.alloc("{\"idempotencyKey\":\"a\",\"resourceType\":\"controlPlane\",\"kubernetesVersion\":\"1.20.0\"}"),
                400, "BadRequest", "kubernetes version \"v1.20.0\" is not configured for control-plane allocation;"
                        + " send the one this operator offers, v1.33.0, or leave kubernetesVersion out");
        assertThat(clusterState()).isEqualTo(before);
    }

    @Test
    void oversizedFormAndWrongMethodOrPath() throws Exception {
        Map<String, String> before = clusterState();
        byte[] big = new byte[65 * 1024];
        java.util.Arrays.fill(big, (byte) ' ');
        big[0] = '{';
        big[big.length - 1] = '}';
        String tooLarge = "request body is larger than 65536 bytes: send the request's JSON object alone, such as"
                + " {\"idempotencyKey\":\"job-42\"} (an alloc, dealloc or renewal body is a few hundred bytes)";
        expect(send("POST", ALLOCS, "application/json", big), 413, "RequestEntityTooLarge", tooLarge);
        // chunked (no Content-Length) like kubectl, still limited
        HttpResponse<String> chunked = op.kubectlPost(op.frontProxy(), ALLOCS, new String(big), "alice", "playpen-users");
        expect(chunked, 413, "RequestEntityTooLarge", tooLarge);
        // any media type is read as JSON like the reference; only a charset other than UTF-8 is refused
        expect(send("POST", ALLOCS, "application/x-www-form-urlencoded", "idempotencyKey=a".getBytes()), 400,
                "BadRequest", badAlloc("the body is not valid JSON near line 1, column 1"));
        expect(send("POST", ALLOCS, "text/plain; charset=utf-16", "{}".getBytes()), 415, "UnsupportedMediaType", null);
        // GET lists allocations (ours); other methods are 405 naming both
        HttpResponse<String> put = send("PUT", ALLOCS, null, null);
        expect(put, 405, "MethodNotAllowed", null);
        assertThat(put.headers().firstValue("Allow")).hasValue("GET, POST");
        expect(send("GET", "/apis/playpen.unbounded-cloud.io/v1alpha1/widgets", null, null), 404, "NotFound", null);
        expect(send("POST", "/apis/other.group/v1/allocs", "application/json", "{}".getBytes()), 404, "NotFound", null);
        // JSON with a charset parameter is JSON
        HttpResponse<String> ok = send("POST", ALLOCS, "application/json; charset=utf-8",
                "{\"idempotencyKey\":\"a\",\"wireGuardPublicKey\":\"bad\"}".getBytes());
        expect(ok, 400, "BadRequest", "wireGuardPublicKey must be a valid WireGuard public key; send the 44 characters"
                + " of standard base64 (A-Z, a-z, 0-9, + and /, then \"=\") that \"wg genkey | wg pubkey\" prints for your"
                + " peer; this one is 3 characters long");
        assertThat(clusterState()).isEqualTo(before);
    }

    /**
     * A field name that names no field exactly is accepted as the reference accepts it (ignored, or read through Go's
     * case-insensitive match) and reported in a Warning header, which kubectl prints; on errors too.
     */
    @Test
    void unknownAndMisspelledFieldsAreAcceptedWithAWarning() throws Exception {
        String wg = TestCluster.wgKey(3);
        cluster.create(TestCluster.readyRunner("amd64", 51821, "node-a"));
        op.awaitCache(c -> c.size() == 2);
        HttpResponse<String> folded = op.alloc("{\"idempotencyKey\":\"warn-1\",\"resourcetype\":\"runner\","
                + "\"wireGuardPublicKey\":\"" + wg + "\",\"color\":\"blue\"}");
        assertThat(folded.statusCode()).as(folded.body()).isEqualTo(200);
        assertThat(folded.headers().allValues("Warning")).containsExactly(
                "299 - \"field \\\"resourcetype\\\" was read as \\\"resourceType\\\" (names are matched ignoring case)\", "
                + "299 - \"unknown field \\\"color\\\" ignored; an alloc takes idempotencyKey, resourceType, architecture,"
                + " wireGuardPublicKey, kubernetesVersion, ttl, waitSeconds\"");
        HttpResponse<String> exact = op.alloc("{\"idempotencyKey\":\"warn-1\",\"resourceType\":\"runner\","
                + "\"wireGuardPublicKey\":\"" + wg + "\"}");
        assertThat(exact.statusCode()).as("the same request spelled exactly replays").isEqualTo(200);
        assertThat(exact.headers().allValues("Warning")).as("no warning when every field is named exactly").isEmpty();
        assertThat(exact.body()).isEqualTo(folded.body());

        Map<String, String> before = clusterState();
        HttpResponse<String> misspelt = op.alloc("{\"idempotencyKey\":\"warn-2\",\"wireguardKey\":\"" + wg + "\"}");
        expect(misspelt, 400, "BadRequest", io.unboundedcloud.playpen.model.AllocRequestParser.WIREGUARD_KEY_REQUIRED);
        assertThat(misspelt.headers().firstValue("Warning")).hasValueSatisfying(
                w -> assertThat(w).startsWith("299 - \"unknown field \\\"wireguardKey\\\" ignored;"));
        assertThat(clusterState()).as("a refused request changes nothing").isEqualTo(before);
        // a name that would break the header line is made harmless
        HttpResponse<String> crlf = op.alloc("{\"idempotencyKey\":\"warn-3\",\"a\\r\\nX-Injected: 1\":1,"
                + "\"wireGuardPublicKey\":\"" + wg + "\"}");
        assertThat(crlf.headers().map()).doesNotContainKey("x-injected");
        assertThat(crlf.headers().firstValue("Warning")).hasValueSatisfying(
                w -> assertThat(w).startsWith("299 - \"unknown field \\\"a\\\\r\\\\nX-Injected: 1\\\" ignored;"));
    }

    /**
     * No dry run is carried out, so a POST that asks for one ({@code ?dryRun=All}) is refused with 400 and nothing
     * happens: no pod is claimed, an allocation's expiry stays, its pod is not released.
     */
    @Test
    void aDryRunIsRefusedAndChangesNothing() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51823, "node-a"));
        op.awaitCache(c -> c.stream().anyMatch(p -> p.getMetadata().getName().endsWith("51823")));
        String wg = TestCluster.wgKey(5);
        String held = "{\"idempotencyKey\":\"dry-held\",\"wireGuardPublicKey\":\"" + wg + "\"}";
        HttpResponse<String> real = op.alloc(held);
        assertThat(real.statusCode()).as(real.body()).isEqualTo(200);
        // an idle pod the dry run could have claimed for real
        cluster.create(TestCluster.readyRunner("amd64", 51824, "node-a"));
        op.awaitCache(c -> c.stream().anyMatch(p -> p.getMetadata().getName().endsWith("51824")));
        Map<String, String> before = clusterState();
        String fresh = "{\"idempotencyKey\":\"dry-new\",\"wireGuardPublicKey\":\"" + wg + "\"}";
        expect(op.kubectlPost(op.frontProxy(), ALLOCS + "?dryRun=All", fresh, "alice", "playpen-users"), 400,
                "BadRequest", "dry-run allocations are not supported: nothing was allocated; send the request without "
                        + "dryRun to carry it out");
        expect(op.kubectlPost(op.frontProxy(), ALLOCS + "?fieldManager=kubectl-create&dryRun=All", held, "alice",
                "playpen-users"), 400, "BadRequest", "dry-run allocations are not supported: nothing was allocated; "
                        + "send the request without dryRun to carry it out");
        expect(op.kubectlPost(op.frontProxy(), "/apis/playpen.unbounded-cloud.io/v1alpha1/renewals?dryRun=All",
                "{\"idempotencyKey\":\"dry-held\",\"ttl\":\"2h\"}", "alice", "playpen-users"), 400, "BadRequest",
                "dry-run renewals are not supported: nothing was renewed; send the request without dryRun to carry it "
                        + "out");
        expect(op.kubectlPost(op.frontProxy(), "/apis/playpen.unbounded-cloud.io/v1alpha1/deallocs?dryRun=All",
                "{\"idempotencyKey\":\"dry-held\"}", "alice", "playpen-users"), 400, "BadRequest",
                "dry-run deallocations are not supported: nothing was released; send the request without dryRun to "
                        + "carry it out");
        assertThat(clusterState()).as("a refused dry run changes nothing").isEqualTo(before);
        HttpResponse<String> replay = op.alloc(held);
        assertThat(replay.statusCode()).as("the allocation is still held: " + replay.body()).isEqualTo(200);
        assertThat(replay.body()).isEqualTo(real.body());
        assertThat(op.dealloc("{\"idempotencyKey\":\"dry-held\"}").statusCode()).isEqualTo(204);
    }

    /**
     * {@code fieldValidation=Strict} (client-go's CreateOptions, kubectl create -f) refuses a field name that names no
     * field exactly before anything is claimed, renewed or released; Ignore drops the warnings; any other value is
     * kube-apiserver's 422 on CreateOptions.
     */
    @Test
    void strictFieldValidationRefusesUnknownFieldsAndChangesNothing() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51825, "node-a"));
        op.awaitCache(c -> c.stream().anyMatch(p -> p.getMetadata().getName().endsWith("51825")));
        String wg = TestCluster.wgKey(6);
        String misspelt = "{\"idempotencyKey\":\"strict-1\",\"wireGuardPublicKey\":\"" + wg + "\",\"architecure\":\"arm64\"}";
        Map<String, String> before = clusterState();
        HttpResponse<String> strict = op.kubectlPost(op.frontProxy(), ALLOCS + "?fieldValidation=Strict", misspelt,
                "alice", "playpen-users");
        expect(strict, 400, "BadRequest", "strict decoding error: unknown field \"architecure\"; an alloc takes"
                + " idempotencyKey, resourceType, architecture, wireGuardPublicKey, kubernetesVersion, ttl, waitSeconds,"
                + " each once and spelled exactly: nothing was allocated");
        assertThat(strict.headers().allValues("Warning")).as("the refusal says it all").isEmpty();
        HttpResponse<String> bogus = op.kubectlPost(op.frontProxy(), ALLOCS + "?fieldValidation=Bogus", misspelt,
                "alice", "playpen-users");
        expect(bogus, 422, "Invalid", "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value:"
                + " \"Bogus\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"");
        JsonNode cause = M.readTree(bogus.body()).at("/details/causes/0");
        assertThat(cause.get("reason").asText()).isEqualTo("FieldValueNotSupported");
        assertThat(cause.get("field").asText()).isEqualTo("fieldValidation");
        assertThat(clusterState()).as("a refused request claims nothing").isEqualTo(before);

        // Ignore: accepted as the Go operator accepts it, without the warning
        String spelt = "{\"idempotencyKey\":\"strict-1\",\"wireGuardPublicKey\":\"" + wg + "\",\"color\":\"blue\"}";
        HttpResponse<String> ignored = op.kubectlPost(op.frontProxy(), ALLOCS + "?fieldValidation=Ignore", spelt,
                "alice", "playpen-users");
        assertThat(ignored.statusCode()).as(ignored.body()).isEqualTo(200);
        assertThat(ignored.headers().allValues("Warning")).isEmpty();
        Map<String, String> held = clusterState();
        String renewals = "/apis/playpen.unbounded-cloud.io/v1alpha1/renewals?fieldValidation=Strict";
        expect(op.kubectlPost(op.frontProxy(), renewals, "{\"idempotencyKey\":\"strict-1\",\"tll\":\"8h\"}", "alice",
                "playpen-users"), 400, "BadRequest", "strict decoding error: unknown field \"tll\"; a renewal takes"
                        + " idempotencyKey, ttl, each once and spelled exactly: nothing was renewed");
        String deallocs = "/apis/playpen.unbounded-cloud.io/v1alpha1/deallocs?fieldValidation=Strict";
        expect(op.kubectlPost(op.frontProxy(), deallocs, "{\"idempotencyKey\":\"strict-1\",\"idempotencyKey\":\"strict-1\"}",
                "alice", "playpen-users"), 400, "BadRequest", "strict decoding error: duplicate field"
                        + " \"idempotencyKey\"; a dealloc takes idempotencyKey, each once and spelled exactly: nothing was"
                        + " released");
        assertThat(clusterState()).as("nothing renewed or released").isEqualTo(held);
        assertThat(op.kubectlPost(op.frontProxy(), deallocs, "{\"idempotencyKey\":\"strict-1\"}", "alice",
                "playpen-users").statusCode()).isEqualTo(204);
    }

    /**
     * An Alloc object (kubectl create -f alloc.yaml, which also sends fieldValidation=Strict) is told that allocations
     * are made from an alloc request with kubectl create --raw, not that it lacks a key it cannot add.
     */
    @Test
    void anAllocObjectIsToldToSendTheAllocRequest() throws Exception {
        Map<String, String> before = clusterState();
        String object = "{\"apiVersion\":\"playpen.unbounded-cloud.io/v1alpha1\",\"kind\":\"Alloc\",\"metadata\":"
                + "{\"name\":\"x\"},\"spec\":{\"resourceType\":\"runner\"}}";
        String told = "this body is a Kubernetes object (it has kind or apiVersion), and allocations are not made from"
                + " one: send an alloc request with kubectl create --raw /apis/playpen.unbounded-cloud.io/v1alpha1/allocs"
                + " -f request.json, the file holding " + AllocRequestParser.ALLOC_SHAPE;
        expect(op.alloc(object), 400, "BadRequest", told);
        expect(op.kubectlPost(op.frontProxy(), ALLOCS + "?fieldManager=kubectl-create&fieldValidation=Strict", object,
                "alice", "playpen-users"), 400, "BadRequest", told);
        assertThat(clusterState()).isEqualTo(before);
    }

    /** A dealloc stays 204 (clients check for it); a key that holds nothing also gets a Warning kubectl prints. */
    @Test
    void deallocOfAnUnknownKeyIs204WithAWarning() throws Exception {
        HttpResponse<String> r = op.dealloc("{\"idempotencyKey\":\"never-allocated\"}");
        assertThat(r.statusCode()).isEqualTo(204);
        assertThat(r.body()).isEmpty();
        assertThat(r.headers().firstValue("Warning")).hasValue("299 - \"" + ApiFlows.NOTHING_RELEASED + "\"");
        cluster.create(TestCluster.readyRunner("amd64", 51822, "node-a"));
        op.awaitCache(c -> c.stream().anyMatch(p -> p.getMetadata().getName().endsWith("51822")));
        String wg = TestCluster.wgKey(4);
        HttpResponse<String> held = op.alloc("{\"idempotencyKey\":\"dealloc-known\",\"wireGuardPublicKey\":\"" + wg + "\"}");
        assertThat(held.statusCode()).as(held.body()).isEqualTo(200);
        HttpResponse<String> released = op.dealloc("{\"idempotencyKey\":\"dealloc-known\"}");
        assertThat(released.statusCode()).isEqualTo(204);
        assertThat(released.headers().firstValue("Warning")).as("a real release warns of nothing").isEmpty();
        HttpResponse<String> noKey = op.dealloc("{\"key\":\"k\"}");
        expect(noKey, 400, "BadRequest", "Idempotency-Key header or idempotencyKey body field is required: the key the"
                + " allocation was made with");
        assertThat(noKey.headers().firstValue("Warning")).hasValue(
                "299 - \"unknown field \\\"key\\\" ignored; a dealloc takes idempotencyKey\"");
    }
}
