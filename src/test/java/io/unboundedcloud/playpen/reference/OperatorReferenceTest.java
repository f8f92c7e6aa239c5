package io.unboundedcloud.playpen.reference;

import static io.unboundedcloud.playpen.reference.ReferencePods.NS;
import static io.unboundedcloud.playpen.reference.ReferencePods.podServerPublicKey;
import static io.unboundedcloud.playpen.reference.ReferencePods.testControlPlanePod;
import static io.unboundedcloud.playpen.reference.ReferencePods.testNode;
import static io.unboundedcloud.playpen.reference.ReferencePods.testPod;
import static io.unboundedcloud.playpen.reference.ReferencePods.testPodWithAnnotations;
import static io.unboundedcloud.playpen.reference.ReferencePods.testPodWithArchitecture;
import static io.unboundedcloud.playpen.reference.ReferencePods.testPodWithHostPort;
import static io.unboundedcloud.playpen.reference.ReferencePods.testPublicKey;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReview;
import io.unboundedcloud.playpen.kube.Allocator;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The alloc, dealloc and HTTP-handler tests of the reference's operator_test.go (commit 420b010), one method per
 * Go test with the same fixtures and expectations, run through the real routes against the mock API server.
 * The Go tests call {@code op.Alloc(ctx, key, req)}; here the same request goes over HTTPS with the key in the
 * Idempotency-Key header, as the reference's handler would receive it. Errors are Kubernetes Status objects here
 * (a kept deviation); the codes and messages are the reference's.
 */
class OperatorReferenceTest {
    static final ObjectMapper JSON = new ObjectMapper();
    static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    static final String ALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs";
    static final String DEALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/deallocs";
    static final String GROUP = "/apis/playpen.unbounded-cloud.io";
    static final String VERSION = GROUP + "/v1alpha1";
    /** DefaultConfig().ControlPlaneVersions of the reference. */
    static final String DEFAULT_VERSIONS = "v1.33.0";

    static TestCluster cluster;
    /** One operator per --control-plane-versions value the Go tests set (op.Config.ControlPlaneVersions = ...). */
    static final Map<String, OperatorHarness> OPERATORS = new HashMap<>();
    static final List<String> NODES = new ArrayList<>();

    @BeforeAll
    static void up() {
        cluster = TestCluster.start();
    }

    @AfterAll
    static void down() {
        OPERATORS.values().forEach(OperatorHarness::close);
        OPERATORS.clear();
        cluster.close();
    }

    static OperatorHarness op(String versions) throws Exception {
        OperatorHarness op = OPERATORS.get(versions);
        if (op == null) {
            // no SubjectAccessReview caching: the tests switch the review's answer between them
            op = new OperatorHarness(cluster, "--control-plane-versions=" + versions, "--sar-allowed-ttl=0",
                    "--sar-denied-ttl=0");
            OPERATORS.put(versions, op);
        }
        return op;
    }

    @BeforeEach
    void clean() throws Exception {
        // the Go tests build a fresh fake client each time: start from no pods and no nodes
        for (Pod p : cluster.pods()) {
            cluster.client.pods().inNamespace(NS).withName(p.getMetadata().getName()).withGracePeriod(0).delete();
        }
        for (String n : NODES) {
            cluster.client.nodes().withName(n).delete();
        }
        for (OperatorHarness op : OPERATORS.values()) {
            op.awaitCache(java.util.Collection::isEmpty);
            OperatorHarness.awaitTrue(() -> NODES.stream().allMatch(n -> op.app.nodeCache().externalIp(n).isEmpty()),
                    Duration.ofSeconds(60), "nodes gone from the node cache");
        }
        NODES.clear();
        // testAggregatedOperator(t, true): the review allows
        cluster.sarRequests.clear();
        cluster.sarPolicy = sar -> true;
    }

    /** testOperator(t, objects...): the objects exist and the operator's caches have seen them. */
    static OperatorHarness testOperator(String versions, Object... objects) throws Exception {
        OperatorHarness op = op(versions);
        List<String> pods = new ArrayList<>();
        for (Object o : objects) {
            if (o instanceof Node n) {
                cluster.client.nodes().resource(n).create();
                NODES.add(n.getMetadata().getName());
            } else {
                Pod p = (Pod) o;
                cluster.client.pods().inNamespace(NS).resource(p).create();
                pods.add(p.getMetadata().getName());
            }
        }
        op.awaitCache(c -> c.stream().map(p -> p.getMetadata().getName()).toList().containsAll(pods));
        for (Object o : objects) {
            if (o instanceof Node n && !n.getStatus().getAddresses().isEmpty()) {
                OperatorHarness.awaitTrue(() -> op.app.nodeCache().externalIp(n.getMetadata().getName()).isPresent(),
                        Duration.ofSeconds(60), "node " + n.getMetadata().getName() + " in the node cache");
            }
        }
        return op;
    }

    static OperatorHarness testOperator(Object... objects) throws Exception {
        return testOperator(DEFAULT_VERSIONS, objects);
    }

    /** An AllocRequest as Go's json.Marshal writes it (omitempty: only the fields that are set). */
    static Map<String, String> req(String... fieldsAndValues) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < fieldsAndValues.length; i += 2) {
            m.put(fieldsAndValues[i], fieldsAndValues[i + 1]);
        }
        return m;
    }

    record Reply(int status, String body) {
        JsonNode json() throws Exception {
            return JSON.readTree(body);
        }

        String message() throws Exception {
            return json().path("message").asText();
        }
    }

    static Reply post(OperatorHarness op, HttpClient http, String path, String key, Object body, String user,
            String... groups) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url(path)))
                .POST(HttpRequest.BodyPublishers.ofString(body == null ? "" : JSON.writeValueAsString(body)));
        if (key != null) {
            b.header("Idempotency-Key", key);
        }
        if (user != null) {
            OperatorHarness.asUser(b, user, groups);
        }
        HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        return new Reply(r.statusCode(), r.body());
    }

    /** op.Alloc(ctx, key, req). */
    static Reply alloc(OperatorHarness op, String key, Map<String, String> req) throws Exception {
        return post(op, op.frontProxy(), ALLOCS, key, req, "alice");
    }

    /** op.Dealloc(ctx, key). */
    static Reply dealloc(OperatorHarness op, String key) throws Exception {
        return post(op, op.frontProxy(), DEALLOCS, key, null, "alice");
    }

    static Pod get(String name) {
        return cluster.client.pods().inNamespace(NS).withName(name).get();
    }

    static Map<String, String> annotations(String name) {
        Map<String, String> a = get(name).getMetadata().getAnnotations();
        return a == null ? Map.of() : a;
    }

    // ---- Alloc ----

    @Test // TestAllocAllocatesRunnerWithHostPortEndpoint
    void allocAllocatesRunnerWithHostPortEndpoint() throws Exception {
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"), testPod("runner-1", "node-1", null));
        String key = testPublicKey();
        Reply r = alloc(op, "alloc-key", req("wireGuardPublicKey", key));
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        JsonNode resp = r.json();
        assertThat(resp.at("/endpoint/host").asText()).isEqualTo("20.30.40.50");
        assertThat(resp.at("/pod/nodePublicIP").asText()).isEqualTo("20.30.40.50");
        assertThat(resp.at("/pod/architecture").asText()).isEqualTo("amd64");
        assertThat(resp.at("/endpoint/wireGuardUDPPort").asInt()).isNotZero();
        assertThat(resp.at("/endpoint/externalTrafficPolicy").asText()).isEqualTo("HostPort");
        assertThat(resp.at("/wireGuard/serverPublicKey").asText()).isNotEmpty().isEqualTo(podServerPublicKey("runner-1"));
        JsonNode redfish = resp.get("redfish");
        assertThat(redfish.get("url").asText()).isEqualTo("https://10.88.0.1:8443");
        assertThat(redfish.get("systemURL").asText())
                .isEqualTo(redfish.get("url").asText() + "/redfish/v1/Systems/" + redfish.get("deviceID").asText());
        assertThat(redfish.get("serialConsoleStreamURI").asText())
                .isEqualTo("/redfish/v1/Systems/" + redfish.get("deviceID").asText() + "/Oem/Unbounded/SerialConsole/Stream");
        Pod pod = get("runner-1");
        assertThat(pod.getMetadata().getAnnotations()).containsEntry(PlaypenKeys.CLIENT_WIREGUARD_PUBLIC_KEY, key);
        assertThat(pod.getMetadata().getLabels().get(PlaypenKeys.ALLOCATED)).isNotEmpty();
    }

    @Test // TestAllocPrefersRunnerHostPortOnNodeExternalIP
    void allocPrefersRunnerHostPortOnNodeExternalIP() throws Exception {
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"), testPodWithHostPort("runner-1", "node-1", 51821));
        Reply r = alloc(op, "alloc-key", req("wireGuardPublicKey", testPublicKey()));
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        assertThat(r.json().at("/endpoint/host").asText()).isEqualTo("20.30.40.50");
        assertThat(r.json().at("/endpoint/wireGuardUDPPort").asInt()).isEqualTo(51821);
        assertThat(r.json().at("/endpoint/externalTrafficPolicy").asText()).isEqualTo("HostPort");
    }

    @Test // TestAllocUsesDistinctHostPortsForMultiplePodsOnSameNode
    void allocUsesDistinctHostPortsForMultiplePodsOnSameNode() throws Exception {
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"),
                testPodWithHostPort("runner-1", "node-1", 51821), testPodWithHostPort("runner-2", "node-1", 51822));
        Reply first = alloc(op, "alloc-key-1", req("wireGuardPublicKey", testPublicKey()));
        assertThat(first.status()).as(first.body()).isEqualTo(200);
        Reply second = alloc(op, "alloc-key-2", req("wireGuardPublicKey", testPublicKey()));
        assertThat(second.status()).as(second.body()).isEqualTo(200);
        assertThat(second.json().at("/pod/name").asText()).isNotEqualTo(first.json().at("/pod/name").asText());
        assertThat(first.json().at("/endpoint/host").asText()).isEqualTo("20.30.40.50");
        assertThat(second.json().at("/endpoint/host").asText()).isEqualTo("20.30.40.50");
        assertThat(second.json().at("/endpoint/wireGuardUDPPort").asInt())
                .isNotEqualTo(first.json().at("/endpoint/wireGuardUDPPort").asInt());
    }

    @Test // TestAllocIsIdempotentAndConflictsOnDifferentRequest
    void allocIsIdempotentAndConflictsOnDifferentRequest() throws Exception {
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"), testPod("runner-1", "node-1", null));
        Map<String, String> req = req("wireGuardPublicKey", testPublicKey());
        Reply first = alloc(op, "alloc-key", req);
        assertThat(first.status()).as(first.body()).isEqualTo(200);
        Reply second = alloc(op, "alloc-key", req);
        assertThat(second.status()).as(second.body()).isEqualTo(200);
        assertThat(second.json().at("/pod/name").asText()).isEqualTo(first.json().at("/pod/name").asText());
        // a replay is the same bytes, as the reference rebuilds it from the same pod
        assertThat(second.body()).isEqualTo(first.body());
        Reply conflict = alloc(op, "alloc-key", req("wireGuardPublicKey", testPublicKey()));
        assertThat(conflict.status()).isEqualTo(409);
        // the reference's words, then what to do
        assertThat(conflict.message()).startsWith("idempotency key was already used with a different request: ")
                .isEqualTo(Allocator.CONFLICT_MESSAGE);
    }

    @Test // TestAllocDefaultsToAMD64AndSkipsARM64Runner
    void allocDefaultsToAMD64AndSkipsARM64Runner() throws Exception {
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"),
                testPodWithArchitecture("arm64-runner", "node-1", "arm64"),
                testPodWithArchitecture("amd64-runner", "node-1", "amd64"));
        Reply r = alloc(op, "alloc-key", req("wireGuardPublicKey", testPublicKey()));
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        assertThat(r.json().at("/pod/name").asText()).isEqualTo("amd64-runner");
        assertThat(r.json().at("/pod/architecture").asText()).isEqualTo("amd64");
    }

    @Test // TestAllocCanRequestARM64Runner
    void allocCanRequestARM64Runner() throws Exception {
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"),
                testPodWithArchitecture("amd64-runner", "node-1", "amd64"),
                testPodWithArchitecture("arm64-runner", "node-1", "arm64"));
        Reply r = alloc(op, "alloc-key", req("wireGuardPublicKey", testPublicKey(), "architecture", "arm64"));
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        assertThat(r.json().at("/pod/name").asText()).isEqualTo("arm64-runner");
        assertThat(r.json().at("/pod/architecture").asText()).isEqualTo("arm64");
    }

    @Test // TestAllocRejectsInvalidArchitecture
    void allocRejectsInvalidArchitecture() throws Exception {
        OperatorHarness op = testOperator();
        Reply r = alloc(op, "alloc-key", req("wireGuardPublicKey", testPublicKey(), "architecture", "s390x"));
        assertThat(r.status()).isEqualTo(400);
        assertThat(r.message()).isEqualTo("architecture must be \"amd64\" or \"arm64\"");
    }

    @Test // TestAllocReportsNoMatchingArchitecture
    void allocReportsNoMatchingArchitecture() throws Exception {
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"),
                testPodWithArchitecture("amd64-runner", "node-1", "amd64"));
        Reply r = alloc(op, "alloc-key", req("wireGuardPublicKey", testPublicKey(), "architecture", "arm64"));
        assertThat(r.status()).isEqualTo(503);
        // the Go operator's words, then what to do
        assertThat(r.message()).isEqualTo("no idle arm64 playpen runner pods are available"
                + OperatorHarness.noPoolAdvice("--runner-arm64-count"));
        assertThat(annotations("amd64-runner")).doesNotContainKey(PlaypenKeys.IDEMPOTENCY_KEY_HASH);
    }

    @Test // TestAllocIdempotencyIncludesArchitecture
    void allocIdempotencyIncludesArchitecture() throws Exception {
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"),
                testPodWithArchitecture("amd64-runner", "node-1", "amd64"),
                testPodWithArchitecture("arm64-runner", "node-1", "arm64"));
        String publicKey = testPublicKey();
        Reply first = alloc(op, "alloc-key", req("wireGuardPublicKey", publicKey, "architecture", "amd64"));
        assertThat(first.status()).as(first.body()).isEqualTo(200);
        Reply second = alloc(op, "alloc-key", req("wireGuardPublicKey", publicKey, "architecture", "arm64"));
        assertThat(second.status()).isEqualTo(409);
    }

    @Test // TestAllocRejectsInvalidResourceType
    void allocRejectsInvalidResourceType() throws Exception {
        OperatorHarness op = testOperator();
        Reply r = alloc(op, "alloc-key", req("resourceType", "database"));
        assertThat(r.status()).isEqualTo(400);
        assertThat(r.message()).isEqualTo("resourceType must be \"runner\" or \"controlPlane\"");
    }

    @Test // TestAllocAllocatesControlPlaneWithHostReachableKubeconfig
    void allocAllocatesControlPlaneWithHostReachableKubeconfig() throws Exception {
        // the Go test configures only v1.33.1; the operator that also serves the unordered-versions test adds
        // v1.34.1 and v1.33.9, which changes nothing for an explicit v1.33.1 request and saves a start
        OperatorHarness op = testOperator("v1.34.1,v1.33.9,v1.33.1", testNode("node-1", "20.30.40.50"),
                testControlPlanePod("control-plane-1", "node-1", "v1.33.1", 16443));
        Reply r = alloc(op, "alloc-key", req("resourceType", "controlPlane", "kubernetesVersion", "1.33.1"));
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        JsonNode resp = r.json();
        assertThat(resp.get("resourceType").asText()).isEqualTo("controlPlane");
        assertThat(resp.at("/pod/resourceType").asText()).isEqualTo("controlPlane");
        assertThat(resp.at("/controlPlane/kubernetesVersion").asText()).isEqualTo("v1.33.1");
        assertThat(resp.at("/controlPlane/apiServerURL").asText()).isEqualTo("https://20.30.40.50:16443");
        assertThat(resp.at("/controlPlane/guestAPIServerURL").asText()).isEqualTo("https://192.168.200.1:6443");
        JsonNode cfg = YAML.readTree(resp.at("/controlPlane/kubeconfig").asText());
        assertThat(cfg.path("clusters")).isNotEmpty();
        for (JsonNode c : cfg.path("clusters")) {
            assertThat(c.at("/cluster/server").asText()).isEqualTo("https://20.30.40.50:16443");
            assertThat(c.at("/cluster/tls-server-name").asText()).isEqualTo("192.168.200.1");
        }
        Pod pod = get("control-plane-1");
        assertThat(pod.getMetadata().getAnnotations().getOrDefault(PlaypenKeys.CLIENT_WIREGUARD_PUBLIC_KEY, "")).isEmpty();
        assertThat(pod.getMetadata().getLabels().get(PlaypenKeys.ALLOCATED)).isNotEmpty();
    }

    @Test // TestAllocDefaultsControlPlaneVersion
    void allocDefaultsControlPlaneVersion() throws Exception {
        OperatorHarness op = testOperator("v1.33.0,v1.34.0", testNode("node-1", "20.30.40.50"),
                testControlPlanePod("control-plane-1", "node-1", "v1.33.0", 16443),
                testControlPlanePod("control-plane-2", "node-1", "v1.34.0", 16444));
        Reply r = alloc(op, "alloc-key", req("resourceType", "controlPlane"));
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        assertThat(r.json().at("/controlPlane/kubernetesVersion").asText()).isEqualTo("v1.34.0");
    }

    @Test // TestAllocDefaultsControlPlaneVersionToLatestUnorderedVersion
    void allocDefaultsControlPlaneVersionToLatestUnorderedVersion() throws Exception {
        OperatorHarness op = testOperator("v1.34.1,v1.33.9,v1.33.1", testNode("node-1", "20.30.40.50"),
                testControlPlanePod("control-plane-1", "node-1", "v1.34.1", 16443));
        Reply r = alloc(op, "alloc-key", req("resourceType", "controlPlane"));
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        assertThat(r.json().at("/controlPlane/kubernetesVersion").asText()).isEqualTo("v1.34.1");
    }

    @Test // TestAllocRejectsUnconfiguredControlPlaneVersion
    void allocRejectsUnconfiguredControlPlaneVersion() throws Exception {
        OperatorHarness op = testOperator(DEFAULT_VERSIONS);
        Reply r = alloc(op, "alloc-key", req("resourceType", "controlPlane", "kubernetesVersion", "v1.34.0"));
        assertThat(r.status()).isEqualTo(400);
        // the Go operator's words, then what to send instead
        assertThat(r.message()).startsWith("kubernetes version \"v1.34.0\" is not configured for control-plane allocation; ")
                .contains("v1.33.0");
    }

    @Test // TestAllocIdempotencyIncludesResourceType
    void allocIdempotencyIncludesResourceType() throws Exception {
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"), testPod("runner-1", "node-1", null),
                testControlPlanePod("control-plane-1", "node-1", "v1.33.0", 16443));
        Reply runner = alloc(op, "alloc-key", req("wireGuardPublicKey", testPublicKey()));
        assertThat(runner.status()).as(runner.body()).isEqualTo(200);
        Reply cp = alloc(op, "alloc-key", req("resourceType", "controlPlane"));
        assertThat(cp.status()).isEqualTo(409);
    }

    @Test // TestAllocRequiresRunnerNodeExternalIP
    void allocRequiresRunnerNodeExternalIP() throws Exception {
        OperatorHarness op = testOperator(testNode("private-node", ""), testNode("gateway-node", "20.30.40.50"),
                testPod("runner-1", "private-node", null));
        Reply r = alloc(op, "alloc-key", req("wireGuardPublicKey", testPublicKey()));
        assertThat(r.status()).isEqualTo(503);
        assertThat(r.message()).isEqualTo("no idle playpen runner pods are available with hostPort endpoints on "
                + "ExternalIP nodes: runner pod playpen/runner-1 is on node private-node with no ExternalIP"
                + OperatorHarness.noPoolAdvice("--runner-amd64-count"));
        assertThat(annotations("runner-1")).doesNotContainKey(PlaypenKeys.IDEMPOTENCY_KEY_HASH);
    }

    @Test // TestAllocRequiresAnyNodeExternalIP
    void allocRequiresAnyNodeExternalIP() throws Exception {
        OperatorHarness op = testOperator(testNode("node-1", ""), testPod("runner-1", "node-1", null));
        Reply r = alloc(op, "alloc-key", req("wireGuardPublicKey", testPublicKey()));
        assertThat(r.status()).isEqualTo(503);
        assertThat(annotations("runner-1")).doesNotContainKey(PlaypenKeys.IDEMPOTENCY_KEY_HASH);
    }

    @Test // TestAllocSkipsRunnerWithoutServerWireGuardPublicKey
    void allocSkipsRunnerWithoutServerWireGuardPublicKey() throws Exception {
        // testPodWithAnnotations gives the pod no WireGuard port at all; the key is checked first
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"),
                testPodWithAnnotations("runner-1", "node-1", Map.of()));
        Reply r = alloc(op, "alloc-key", req("wireGuardPublicKey", testPublicKey()));
        assertThat(r.status()).isEqualTo(503);
        assertThat(r.message()).isEqualTo("no idle playpen runner pods are available with hostPort endpoints on "
                + "ExternalIP nodes: runner pod \"runner-1\" has no valid server WireGuard public key"
                + OperatorHarness.noPoolAdvice("--runner-amd64-count"));
        assertThat(annotations("runner-1")).doesNotContainKey(PlaypenKeys.IDEMPOTENCY_KEY_HASH);
    }

    @Test // TestAllocSkipsUnavailableRunnerPods
    void allocSkipsUnavailableRunnerPods() throws Exception {
        Pod terminating = new PodBuilder(testPod("terminating-runner", "node-1", null))
                .editMetadata().withFinalizers("test.finalizer").endMetadata().build();
        Pod pending = new PodBuilder(testPod("pending-runner", "node-1", null)).editStatus().withPhase("Pending").endStatus().build();
        Pod unready = new PodBuilder(testPod("unready-runner", "node-1", null))
                .editStatus().editFirstContainerStatus().withReady(false).endContainerStatus().endStatus().build();
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"), terminating, pending, unready,
                testPod("ready-runner", "node-1", null));
        // the Go test creates the pod with a DeletionTimestamp and a finalizer; an API server only sets it on delete
        cluster.client.pods().inNamespace(NS).withName("terminating-runner").delete();
        op.awaitCache(c -> c.stream().anyMatch(p -> "terminating-runner".equals(p.getMetadata().getName())
                && p.getMetadata().getDeletionTimestamp() != null));
        Reply r = alloc(op, "alloc-key", req("wireGuardPublicKey", testPublicKey()));
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        assertThat(r.json().at("/pod/name").asText()).isEqualTo("ready-runner");
        // and once it is gone, the others are reported in the reference's words, in pod-name order
        Reply none = alloc(op, "alloc-key-2", req("wireGuardPublicKey", testPublicKey()));
        assertThat(none.status()).isEqualTo(503);
        assertThat(none.message()).isEqualTo("no idle playpen runner pods are available with hostPort endpoints on "
                + "ExternalIP nodes: runner pod pending-runner is Pending; runner pod terminating-runner is terminating; "
                + "runner pod unready-runner container runner is not ready" + OperatorHarness.noPoolAdvice("--runner-amd64-count"));
        cluster.client.pods().inNamespace(NS).withName("terminating-runner")
                .edit(p -> new PodBuilder(p).editMetadata().withFinalizers().endMetadata().build());
    }

    @Test // TestAllocUsesPodScopedServerWireGuardPublicKey
    void allocUsesPodScopedServerWireGuardPublicKey() throws Exception {
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"), testPod("runner-1", "node-1", null),
                testPod("runner-2", "node-1", null));
        Reply first = alloc(op, "alloc-key-1", req("wireGuardPublicKey", testPublicKey()));
        Reply second = alloc(op, "alloc-key-2", req("wireGuardPublicKey", testPublicKey()));
        assertThat(first.status()).as(first.body()).isEqualTo(200);
        assertThat(second.status()).as(second.body()).isEqualTo(200);
        assertThat(second.json().at("/pod/name").asText()).isNotEqualTo(first.json().at("/pod/name").asText());
        assertThat(second.json().at("/wireGuard/serverPublicKey").asText())
                .isNotEqualTo(first.json().at("/wireGuard/serverPublicKey").asText());
    }

    // ---- Dealloc ----

    @Test // TestDeallocDeletesClaimedRunner
    void deallocDeletesClaimedRunner() throws Exception {
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"), testPod("runner-1", "node-1", null));
        assertThat(alloc(op, "alloc-key", req("wireGuardPublicKey", testPublicKey())).status()).isEqualTo(200);
        Reply r = dealloc(op, "alloc-key");
        assertThat(r.status()).isEqualTo(204);
        assertThat(get("runner-1")).isNull();
    }

    @Test // TestDeallocIsIdempotentWhenClaimIsMissing
    void deallocIsIdempotentWhenClaimIsMissing() throws Exception {
        OperatorHarness op = testOperator();
        assertThat(dealloc(op, "alloc-key").status()).isEqualTo(204);
    }

    // ---- the HTTP handler (testAggregatedOperator + trustedAggregatedRequest) ----

    @Test // TestAggregatedDiscoveryRequiresTrustedFrontProxy
    void aggregatedDiscoveryRequiresTrustedFrontProxy() throws Exception {
        OperatorHarness op = testOperator();
        HttpResponse<String> group = op.frontProxy().send(HttpRequest.newBuilder(URI.create(op.url(GROUP))).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(group.statusCode()).isEqualTo(200);
        assertThat(group.body()).contains("playpen.unbounded-cloud.io/v1alpha1");
        HttpResponse<String> version = op.frontProxy().send(HttpRequest.newBuilder(URI.create(op.url(VERSION))).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(version.statusCode()).isEqualTo(200);
        assertThat(version.body()).contains("\"allocs\"").contains("\"deallocs\"");
        HttpResponse<String> untrusted = OperatorHarness.client(null).send(
                HttpRequest.newBuilder(URI.create(op.url(VERSION))).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(untrusted.statusCode()).isEqualTo(403);
    }

    @Test // TestAllocEndpointAuthorizesSharedAllocAction
    void allocEndpointAuthorizesSharedAllocAction() throws Exception {
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"), testPod("runner-1", "node-1", null));
        Reply r = post(op, op.frontProxy(), ALLOCS, "alloc-key", req("wireGuardPublicKey", testPublicKey()), "alice",
                "team-a", "team-b,team-c");
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        assertThat(cluster.sarRequests).isNotEmpty();
        SubjectAccessReview sar = cluster.sarRequests.get(cluster.sarRequests.size() - 1);
        assertThat(sar.getSpec().getUser()).isEqualTo("alice");
        // deliberate difference: the reference splits a group line on commas (team-a, team-b, team-c); here each
        // X-Remote-Group line is one group, as kube-apiserver sends them (DN-style and OIDC group names hold commas,
        // and a split would let "x,system:masters" claim system:masters)
        assertThat(sar.getSpec().getGroups()).containsExactly("team-a", "team-b,team-c");
        assertThat(sar.getSpec().getResourceAttributes().getVerb()).isEqualTo("create");
        assertThat(sar.getSpec().getResourceAttributes().getGroup()).isEqualTo("playpen.unbounded-cloud.io");
        assertThat(sar.getSpec().getResourceAttributes().getResource()).isEqualTo("allocs");
    }

    @Test // TestAllocEndpointAcceptsBodyIdempotencyKey
    void allocEndpointAcceptsBodyIdempotencyKey() throws Exception {
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"), testPod("runner-1", "node-1", null));
        Reply r = post(op, op.frontProxy(), ALLOCS, null,
                req("idempotencyKey", "alloc-key", "wireGuardPublicKey", testPublicKey()), "alice");
        assertThat(r.status()).as(r.body()).isEqualTo(200);
    }

    @Test // TestAllocEndpointRejectsMissingRemoteUser
    void allocEndpointRejectsMissingRemoteUser() throws Exception {
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"), testPod("runner-1", "node-1", null));
        Reply r = post(op, op.frontProxy(), ALLOCS, "alloc-key", req("wireGuardPublicKey", testPublicKey()), null);
        assertThat(r.status()).isEqualTo(403);
        assertThat(annotations("runner-1")).doesNotContainKey(PlaypenKeys.IDEMPOTENCY_KEY_HASH);
    }

    @Test // TestAllocEndpointRejectsDeniedSubjectAccessReview
    void allocEndpointRejectsDeniedSubjectAccessReview() throws Exception {
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"), testPod("runner-1", "node-1", null));
        cluster.sarPolicy = sar -> false;
        Reply r = post(op, op.frontProxy(), ALLOCS, "alloc-key", req("wireGuardPublicKey", testPublicKey()), "alice");
        assertThat(r.status()).isEqualTo(403);
        assertThat(annotations("runner-1")).doesNotContainKey(PlaypenKeys.IDEMPOTENCY_KEY_HASH);
    }

    @Test // TestDeallocEndpointDeletesAllocatedRunner
    void deallocEndpointDeletesAllocatedRunner() throws Exception {
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"), testPod("runner-1", "node-1", null));
        assertThat(alloc(op, "alloc-key", req("wireGuardPublicKey", testPublicKey())).status()).isEqualTo(200);
        // an empty body, the key in the header
        Reply r = post(op, op.frontProxy(), DEALLOCS, "alloc-key", null, "alice");
        assertThat(r.status()).isEqualTo(204);
        assertThat(get("runner-1")).isNull();
    }

    @Test // TestDeallocEndpointAcceptsBodyIdempotencyKey
    void deallocEndpointAcceptsBodyIdempotencyKey() throws Exception {
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"), testPod("runner-1", "node-1", null));
        assertThat(alloc(op, "alloc-key", req("wireGuardPublicKey", testPublicKey())).status()).isEqualTo(200);
        Reply r = post(op, op.frontProxy(), DEALLOCS, null, req("idempotencyKey", "alloc-key"), "alice");
        assertThat(r.status()).isEqualTo(204);
        assertThat(get("runner-1")).isNull();
    }

    /**
     * The reference reviews each POST for the resource it names: a dealloc asks for {@code create} on
     * {@code deallocs}, so a Role that grants only that (a clean-up job's) releases allocations after a swap too.
     */
    @Test
    void deallocEndpointIsReviewedAsCreateDeallocs() throws Exception {
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"), testPod("runner-1", "node-1", null));
        assertThat(alloc(op, "alloc-key", req("wireGuardPublicKey", testPublicKey())).status()).isEqualTo(200);
        cluster.sarPolicy = sar -> "deallocs".equals(sar.getSpec().getResourceAttributes().getResource());
        cluster.sarRequests.clear();
        Reply r = post(op, op.frontProxy(), DEALLOCS, "alloc-key", null, "janitor");
        assertThat(r.status()).as(r.body()).isEqualTo(204);
        assertThat(get("runner-1")).isNull();
        assertThat(cluster.sarRequests).singleElement().satisfies(sar -> {
            assertThat(sar.getSpec().getUser()).isEqualTo("janitor");
            assertThat(sar.getSpec().getResourceAttributes().getVerb()).isEqualTo("create");
            assertThat(sar.getSpec().getResourceAttributes().getResource()).isEqualTo("deallocs");
        });
    }

    // ---- not one of the Go tests: the Go handler's reading of the same bytes ----

    /**
     * A POST whose Idempotency-Key header is {@code key} in UTF-8 bytes, as a Go client or kubectl sends it (the JDK
     * client cannot: it writes '?' for every char outside ASCII), on its own connection, as alice.
     */
    static Reply postWithUtf8Key(OperatorHarness op, String path, String key, String body) throws Exception {
        try (javax.net.ssl.SSLSocket s = (javax.net.ssl.SSLSocket) OperatorHarness.sslContext(cluster.frontProxyClient)
                .getSocketFactory().createSocket("127.0.0.1", op.port)) {
            s.setSoTimeout(30_000);
            byte[] content = body.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            java.io.ByteArrayOutputStream head = new java.io.ByteArrayOutputStream();
            head.writeBytes(("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                    + "X-Remote-User: alice\r\nContent-Type: application/json\r\nContent-Length: " + content.length
                    + "\r\nIdempotency-Key: ").getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            head.writeBytes(key.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            head.writeBytes("\r\n\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            head.writeBytes(content);
            s.getOutputStream().write(head.toByteArray());
            s.getOutputStream().flush();
            String reply = new String(s.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            int bodyAt = reply.indexOf("\r\n\r\n");
            return new Reply(Integer.parseInt(reply.split(" ")[1]), bodyAt < 0 ? "" : reply.substring(bodyAt + 4));
        }
    }

    @Test // Go hashes strings.TrimSpace(r.Header.Get("Idempotency-Key")): the bytes as sent
    void aHeaderKeyOutsideAsciiNamesTheClaimTheGoOperatorMadeForIt() throws Exception {
        String key = "cl\u00e9-\u4e2d\u6587";
        String wg = testPublicKey();
        // the claim the Go operator wrote for this header key and request
        Pod goClaim = testPod("runner-1", "node-1", Map.of(
                PlaypenKeys.IDEMPOTENCY_KEY_HASH, io.unboundedcloud.playpen.model.Hashes.sha256Hex(key),
                PlaypenKeys.REQUEST_HASH, io.unboundedcloud.playpen.model.Hashes.requestHash("runner", "", wg, "amd64"),
                PlaypenKeys.CLIENT_WIREGUARD_PUBLIC_KEY, wg,
                PlaypenKeys.CLAIMED_AT, io.unboundedcloud.playpen.model.TtlPolicy.formatClaimedAt(java.time.Instant.now())));
        OperatorHarness op = testOperator(testNode("node-1", "20.30.40.50"), goClaim, testPod("runner-2", "node-1", null));
        // with Unicode spaces around it, which Go's TrimSpace drops too
        Reply replay = postWithUtf8Key(op, ALLOCS, "\u00a0" + key + "\u3000",
                JSON.writeValueAsString(req("wireGuardPublicKey", wg)));
        assertThat(replay.status()).as(replay.body()).isEqualTo(200);
        assertThat(replay.json().at("/pod/name").asText()).as("the Go claim is replayed").isEqualTo("runner-1");
        assertThat(annotations("runner-2")).as("no second pod for the key").doesNotContainKey(PlaypenKeys.IDEMPOTENCY_KEY_HASH);
        assertThat(postWithUtf8Key(op, DEALLOCS, key, "").status()).isEqualTo(204);
        assertThat(get("runner-1")).as("the dealloc releases the Go claim").isNull();
    }
}
