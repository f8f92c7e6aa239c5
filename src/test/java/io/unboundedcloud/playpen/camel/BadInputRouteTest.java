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
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** Bad input gets the right Status and changes nothing in the cluster (SPEC A3, B1, B5). */
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
        expect(op.alloc("not json"), 400, "BadRequest", "invalid JSON request");
        expect(op.alloc("[{\"idempotencyKey\":\"a\"}]"), 400, "BadRequest", "invalid JSON request");
        expect(op.alloc("{\"idempotencyKey\":42}"), 400, "BadRequest", "invalid JSON request");
        expect(op.alloc("{\"idempotencyKey\":\"a\",\"architecture\":[\"arm64\"]}"), 400, "BadRequest", "invalid JSON request");
        expect(op.alloc("{\"resourceType\":\"runner\"}"), 400, "BadRequest",
                "Idempotency-Key header or idempotencyKey body field is required");
        expect(op.alloc("{\"idempotencyKey\":\"a\",\"resourceType\":\"vm\"}"), 400, "BadRequest",
                "resourceType must be \"runner\" or \"controlPlane\"");
        expect(op.alloc("{\"idempotencyKey\":\"a\",\"wireGuardPublicKey\":\"short\"}"), 400, "BadRequest",
                "wireGuardPublicKey must be a valid WireGuard public key");
        expect(op.alloc("{\"idempotencyKey\":\"a\",\"wireGuardPublicKey\":\"" + wg + "\",\"architecture\":\"s390x\"}"),
                400, "BadRequest", "architecture must be \"amd64\" or \"arm64\"");
        expect(op.alloc("{\"idempotencyKey\":\"a\",\"resourceType\":\"controlPlane\",\"kubernetesVersion\":\"1.20.0\"}"),
                400, "BadRequest", "kubernetes version \"v1.20.0\" is not configured for control-plane allocation");
        assertThat(clusterState()).isEqualTo(before);
    }

    @Test
    void oversizedFormAndWrongMethodOrPath() throws Exception {
        Map<String, String> before = clusterState();
        byte[] big = new byte[65 * 1024];
        java.util.Arrays.fill(big, (byte) ' ');
        big[0] = '{';
        big[big.length - 1] = '}';
        expect(send("POST", ALLOCS, "application/json", big), 413, "RequestEntityTooLarge", null);
        // chunked (no Content-Length) like kubectl, still limited
        HttpResponse<String> chunked = op.kubectlPost(op.frontProxy(), ALLOCS, new String(big), "alice", "playpen-users");
        expect(chunked, 413, "RequestEntityTooLarge", null);
        // any media type is read as JSON like the reference; only a charset other than UTF-8 is refused
        expect(send("POST", ALLOCS, "application/x-www-form-urlencoded", "idempotencyKey=a".getBytes()), 400,
                "BadRequest", "invalid JSON request");
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
        expect(ok, 400, "BadRequest", "wireGuardPublicKey must be a valid WireGuard public key");
        assertThat(clusterState()).isEqualTo(before);
    }
}
