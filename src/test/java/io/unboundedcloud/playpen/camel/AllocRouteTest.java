package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.kube.Allocator;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** Alloc and dealloc through the real routes against the mock API server. */
class AllocRouteTest {
    static final ObjectMapper M = new ObjectMapper();
    static final String KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters:\n- name: default\n  cluster:\n"
            + "    server: https://127.0.0.1:6443\n    certificate-authority-data: Q0E=\nusers:\n- name: admin\n  user:\n"
            + "    token: t\ncontexts:\n- name: default\n  context:\n    cluster: default\n    user: admin\n"
            + "current-context: default\n";
    static TestCluster cluster;
    static OperatorHarness op;

    @BeforeAll
    static void up() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        cluster.addNode("node-b", "arm64", "203.0.113.11");
        cluster.addNode("node-noip", "amd64", null);
        op = new OperatorHarness(cluster, "--control-plane-versions=v1.31.4,v1.33.0,v1.32.1");
    }

    @AfterAll
    static void down() {
        if (op != null) {
            op.close();
        }
        cluster.close();
    }

    @BeforeEach
    void clean() throws Exception {
        op.wipePods();
    }

    static String runnerReq(String key, String wg, String arch) {
        return "{\"idempotencyKey\":\"" + key + "\",\"wireGuardPublicKey\":\"" + wg + "\""
                + (arch == null ? "" : ",\"architecture\":\"" + arch + "\"") + "}";
    }

    void seed(io.fabric8.kubernetes.api.model.PodBuilder... pods) throws InterruptedException {
        for (var p : pods) {
            cluster.create(p);
        }
        op.awaitCache(c -> c.size() == pods.length);
    }

    Pod pod(String name) {
        return cluster.client.pods().inNamespace(TestCluster.NS).withName(name).get();
    }

    @Test
    void runnerEndpointIsNodeExternalIpPlusHostPortAndClaimIsOneConditionalPatch() throws Exception {
        seed(TestCluster.readyRunner("amd64", 51830, "node-a"));
        java.util.function.Predicate<String> podOrNodeRead = k -> k.startsWith("GET ") && !k.contains("WATCH")
                && (k.contains("/pods") || k.contains("/nodes"));
        Map<String, Integer> before = cluster.requestSnapshot();
        int readsBefore = cluster.requestCount(podOrNodeRead);
        int patchesBefore = cluster.requestCount(k -> k.startsWith("PATCH /api/v1/namespaces/playpen/pods"));
        String wg = TestCluster.wgKey(7);
        HttpResponse<String> r = op.alloc(runnerReq("key-1", wg, null));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/json");
        JsonNode body = M.readTree(r.body());
        assertThat(body.at("/endpoint/host").asText()).isEqualTo("203.0.113.10");
        assertThat(body.at("/endpoint/wireGuardUDPPort").asInt()).isEqualTo(51830);
        assertThat(body.at("/pod/nodePublicIP").asText()).isEqualTo("203.0.113.10");
        assertThat(body.at("/wireGuard/serverPublicKey").asText()).isEqualTo(TestCluster.wgKey(51830));
        // no LIST or GET of pods or nodes on the request path, exactly one write (the SAR is a POST)
        assertThat(cluster.requestCount(podOrNodeRead)).as("%s -> %s", before, cluster.requestSnapshot()).isEqualTo(readsBefore);
        assertThat(cluster.requestCount(k -> k.startsWith("PATCH /api/v1/namespaces/playpen/pods")))
                .isEqualTo(patchesBefore + 1);
        Pod claimed = pod("playpen-runner-amd64-51830");
        Map<String, String> ann = claimed.getMetadata().getAnnotations();
        assertThat(ann).containsEntry(PlaypenKeys.IDEMPOTENCY_KEY_HASH, Hashes.keyHash("key-1"))
                .containsEntry(PlaypenKeys.REQUEST_HASH, Hashes.requestHash("runner", "", wg, "amd64"))
                .containsEntry(PlaypenKeys.CLIENT_WIREGUARD_PUBLIC_KEY, wg);
        assertThat(ann.get(PlaypenKeys.CLAIMED_AT)).matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ");
        assertThat(claimed.getMetadata().getLabels()).containsEntry(PlaypenKeys.ALLOCATED,
                Hashes.allocationId("playpen", "playpen-runner-amd64-51830"));
    }

    @Test
    void replayReturnsIdenticalBodyAndOtherRequestWithSameKeyConflicts() throws Exception {
        seed(TestCluster.readyRunner("amd64", 51831, "node-a"), TestCluster.readyRunner("amd64", 51832, "node-a"));
        String wg = TestCluster.wgKey(8);
        HttpResponse<String> first = op.alloc(runnerReq("key-2", wg, "amd64"));
        HttpResponse<String> again = op.alloc(runnerReq("key-2", wg, "amd64"));
        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(again.statusCode()).isEqualTo(200);
        assertThat(again.body()).isEqualTo(first.body());
        HttpResponse<String> other = op.alloc(runnerReq("key-2", TestCluster.wgKey(9), "amd64"));
        assertThat(other.statusCode()).isEqualTo(409);
        JsonNode st = M.readTree(other.body());
        assertThat(st.get("kind").asText()).isEqualTo("Status");
        assertThat(st.get("reason").asText()).isEqualTo("Conflict");
        assertThat(st.get("message").asText()).isEqualTo(Allocator.CONFLICT_MESSAGE);
        // still exactly one pod claimed
        assertThat(cluster.pods()).filteredOn(p -> p.getMetadata().getAnnotations().containsKey(PlaypenKeys.IDEMPOTENCY_KEY_HASH))
                .hasSize(1);
    }

    @Test
    void arm64RequestGetsArm64PodAndNoneAvailableIs503WithRetryAfter() throws Exception {
        seed(TestCluster.readyRunner("amd64", 51833, "node-a"), TestCluster.readyRunner("arm64", 51834, "node-b"));
        HttpResponse<String> r = op.alloc(runnerReq("key-arm", TestCluster.wgKey(10), "arm64"));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(M.readTree(r.body()).at("/pod/name").asText()).isEqualTo("playpen-runner-arm64-51834");
        assertThat(M.readTree(r.body()).at("/pod/architecture").asText()).isEqualTo("arm64");
        HttpResponse<String> none = op.alloc(runnerReq("key-arm-2", TestCluster.wgKey(11), "arm64"));
        assertThat(none.statusCode()).isEqualTo(503);
        assertThat(none.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(M.readTree(none.body()).get("message").asText()).isEqualTo("no idle arm64 playpen runner pods are available"
                + OperatorHarness.noPoolAdvice("--runner-arm64-count"));
    }

    @Test
    void nodeWithoutExternalIpNeverLeavesAPodClaimed() throws Exception {
        seed(TestCluster.readyRunner("amd64", 51835, "node-noip"));
        HttpResponse<String> r = op.alloc(runnerReq("key-noip", TestCluster.wgKey(12), null));
        assertThat(r.statusCode()).isEqualTo(503);
        assertThat(M.readTree(r.body()).get("message").asText()).isEqualTo(
                "no idle playpen runner pods are available with hostPort endpoints on ExternalIP nodes: "
                        + "runner pod playpen/playpen-runner-amd64-51835 is on node node-noip with no ExternalIP"
                        + OperatorHarness.noPoolAdvice("--runner-amd64-count"));
        assertThat(pod("playpen-runner-amd64-51835").getMetadata().getAnnotations())
                .doesNotContainKey(PlaypenKeys.IDEMPOTENCY_KEY_HASH);
        assertThat(pod("playpen-runner-amd64-51835").getMetadata().getLabels()).doesNotContainKey(PlaypenKeys.ALLOCATED);
    }

    @Test
    void everySkipReasonIsReported() throws Exception {
        seed(TestCluster.readyRunner("amd64", 51840, "node-a").editStatus().withPhase("Pending").endStatus(),
                TestCluster.readyRunner("amd64", 51841, "node-a").editStatus().editFirstContainerStatus().withReady(false)
                        .endContainerStatus().endStatus(),
                TestCluster.readyRunner("amd64", 51842, "node-a").editMetadata()
                        .addToAnnotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, "not-a-key").endMetadata(),
                TestCluster.readyRunner("amd64", 51843, "node-a").editSpec().editFirstContainer().editLastPort()
                        .withHostPort(null).endPort().endContainer().endSpec(),
                TestCluster.readyRunner("amd64", 51844, "").editSpec().withNodeName(null).endSpec());
        HttpResponse<String> r = op.alloc(runnerReq("key-skip", TestCluster.wgKey(13), null));
        assertThat(r.statusCode()).isEqualTo(503);
        String msg = M.readTree(r.body()).get("message").asText();
        // the reference's words, in pod-name order
        assertThat(msg).isEqualTo("no idle playpen runner pods are available with hostPort endpoints on ExternalIP nodes: "
                + "runner pod playpen-runner-amd64-51840 is Pending; "
                + "runner pod playpen-runner-amd64-51841 container runner is not ready; "
                + "runner pod \"playpen-runner-amd64-51842\" has no valid server WireGuard public key; "
                + "runner pod playpen/playpen-runner-amd64-51843 has no WireGuard hostPort; "
                + "runner pod is not scheduled" + OperatorHarness.noPoolAdvice("--runner-amd64-count"));
        assertThat(cluster.pods()).allSatisfy(p ->
                assertThat(p.getMetadata().getAnnotations()).doesNotContainKey(PlaypenKeys.IDEMPOTENCY_KEY_HASH));
    }

    /**
     * The request hash covers the version an alloc without kubernetesVersion resolved to, as the Go operator's does:
     * once a redeploy offers a newer one, the same body is another request. Its 409 says which version the key
     * holds, and sending that version replays it.
     */
    @Test
    void defaultVersionMovedTellsWhichVersionTheKeyHolds() throws Exception {
        seed(TestCluster.readyControlPlane("v1.33.0", 16445, "node-a", KUBECONFIG));
        String body = "{\"idempotencyKey\":\"cp-moved\",\"resourceType\":\"controlPlane\"}";
        HttpResponse<String> first = op.alloc(body);
        assertThat(first.statusCode()).as(first.body()).isEqualTo(200);
        OperatorHarness moved = new OperatorHarness(cluster, "--control-plane-versions=v1.31.4,v1.33.0,v1.34.0");
        try {
            moved.awaitCache(c -> c.size() == 1);
            HttpResponse<String> again = moved.alloc(body);
            assertThat(again.statusCode()).as(again.body()).isEqualTo(409);
            assertThat(M.readTree(again.body()).get("message").asText()).isEqualTo(
                    io.unboundedcloud.playpen.kube.Allocator.CONFLICT_MESSAGE + "; this key holds a v1.33.0 control plane,"
                            + " and kubernetesVersion was left out, which now means v1.34.0: send"
                            + " \"kubernetesVersion\":\"v1.33.0\" for its answer");
            HttpResponse<String> named = moved.alloc("{\"idempotencyKey\":\"cp-moved\",\"resourceType\":\"controlPlane\","
                    + "\"kubernetesVersion\":\"v1.33.0\"}");
            assertThat(named.statusCode()).as(named.body()).isEqualTo(200);
            assertThat(named.body()).isEqualTo(first.body());
            HttpResponse<String> other = moved.alloc("{\"idempotencyKey\":\"cp-moved\",\"resourceType\":\"controlPlane\","
                    + "\"kubernetesVersion\":\"v1.34.0\"}");
            assertThat(M.readTree(other.body()).get("message").asText()).as("a version sent is the request's own")
                    .isEqualTo(io.unboundedcloud.playpen.kube.Allocator.CONFLICT_MESSAGE);
        } finally {
            moved.close();
        }
    }

    @Test
    void controlPlaneDefaultsToHighestConfiguredVersionAndRewritesKubeconfig() throws Exception {
        seed(TestCluster.readyControlPlane("v1.33.0", 16443, "node-a", KUBECONFIG),
                TestCluster.readyControlPlane("v1.31.4", 16444, "node-a", KUBECONFIG));
        HttpResponse<String> r = op.alloc("{\"idempotencyKey\":\"cp-key\",\"resourceType\":\"control-plane\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode b = M.readTree(r.body());
        assertThat(b.get("resourceType").asText()).isEqualTo("controlPlane");
        assertThat(b.at("/pod/name").asText()).isEqualTo("playpen-control-plane-1.33.0-16443");
        assertThat(b.at("/endpoint/apiServerTCPPort").asInt()).isEqualTo(16443);
        assertThat(b.at("/endpoint/wireGuardUDPPort").asInt()).isZero();
        assertThat(b.get("redfish").isNull()).isTrue();
        assertThat(b.at("/controlPlane/apiServerURL").asText()).isEqualTo("https://203.0.113.10:16443");
        JsonNode kubeconfig = new ObjectMapper(new com.fasterxml.jackson.dataformat.yaml.YAMLFactory())
                .readTree(b.at("/controlPlane/kubeconfig").asText());
        assertThat(kubeconfig.at("/clusters/0/cluster/server").asText()).isEqualTo("https://203.0.113.10:16443");
        assertThat(kubeconfig.at("/clusters/0/cluster/tls-server-name").asText()).isEqualTo("192.168.200.1");
        assertThat(kubeconfig.at("/users/0/user/token").asText()).isEqualTo("t");
        assertThat(pod("playpen-control-plane-1.33.0-16443").getMetadata().getAnnotations())
                .containsEntry(PlaypenKeys.CLIENT_WIREGUARD_PUBLIC_KEY, "");
        HttpResponse<String> v131 = op.alloc("{\"idempotencyKey\":\"cp-key-2\",\"resourceType\":\"controlPlane\","
                + "\"kubernetesVersion\":\"1.31.4\"}");
        assertThat(M.readTree(v131.body()).at("/pod/name").asText()).isEqualTo("playpen-control-plane-1.31.4-16444");
        HttpResponse<String> none = op.alloc("{\"idempotencyKey\":\"cp-key-3\",\"resourceType\":\"controlPlane\","
                + "\"kubernetesVersion\":\"v1.32.1\"}");
        assertThat(none.statusCode()).isEqualTo(503);
        assertThat(M.readTree(none.body()).get("message").asText()).isEqualTo("no idle v1.32.1 playpen control-plane pods are available"
                + OperatorHarness.noPoolAdvice("--control-plane-count"));
    }

    @Test
    void deallocByHeaderByBodyUnknownAndTwice() throws Exception {
        seed(TestCluster.readyRunner("amd64", 51850, "node-a"), TestCluster.readyRunner("amd64", 51851, "node-a"));
        assertThat(op.alloc(runnerReq("d-1", TestCluster.wgKey(20), null)).statusCode()).isEqualTo(200);
        assertThat(op.alloc(runnerReq("d-2", TestCluster.wgKey(21), null)).statusCode()).isEqualTo(200);
        // by header, empty body
        var http = op.frontProxy();
        var req = OperatorHarness.asUser(java.net.http.HttpRequest.newBuilder(java.net.URI.create(
                op.url("/apis/playpen.unbounded-cloud.io/v1alpha1/deallocs"))).header("Idempotency-Key", " d-1 ")
                .POST(java.net.http.HttpRequest.BodyPublishers.noBody()), "alice", "playpen-users").build();
        HttpResponse<String> byHeader = http.send(req, HttpResponse.BodyHandlers.ofString());
        assertThat(byHeader.statusCode()).isEqualTo(204);
        assertThat(byHeader.body()).isEmpty();
        HttpResponse<String> byBody = op.dealloc("{\"idempotencyKey\":\"d-2\"}");
        assertThat(byBody.statusCode()).isEqualTo(204);
        assertThat(cluster.pods()).isEmpty();
        assertThat(op.dealloc("{\"idempotencyKey\":\"never-used\"}").statusCode()).isEqualTo(204);
        assertThat(op.dealloc("{\"idempotencyKey\":\"d-2\"}").statusCode()).isEqualTo(204);
        HttpResponse<String> missing = op.dealloc("{}");
        assertThat(missing.statusCode()).isEqualTo(400);
        assertThat(M.readTree(missing.body()).get("message").asText())
                .isEqualTo(io.unboundedcloud.playpen.model.AllocRequestParser.RELEASE_KEY_REQUIRED);
    }

    @Test
    void requestIsNotEchoedAndKeyIsNeverLogged() throws Exception {
        seed(TestCluster.readyRunner("amd64", 51860, "node-a"));
        HttpResponse<String> r = op.alloc(runnerReq("secret-key-value", TestCluster.wgKey(30), null));
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().map().keySet()).noneMatch(h -> h.equalsIgnoreCase("X-Remote-User"));
        assertThat(List.of(r.body())).noneMatch(b -> b.contains("secret-key-value"));
    }
}
