package io.unboundedcloud.playpen.dev;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.TrustManagerFactory;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsExchange;
import com.sun.net.httpserver.HttpsParameters;
import com.sun.net.httpserver.HttpsServer;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReview;
import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReviewBuilder;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.tls.Pki;

/** The simulated cluster end to end, with the real kubectl and a fake operator behind the aggregator shim. */
class DevClusterTest {
    @TempDir
    static Path tmp;

    static DevCluster cluster;
    static HttpsServer fakeOperator;
    static Pki.Issued operatorCert;
    static final AtomicReference<Recorded> lastRequest = new AtomicReference<>();

    /** What the fake operator saw. */
    record Recorded(String method, String path, List<String> remoteUser, List<String> remoteGroups,
            List<String> contentType, String transferEncoding, String clientCn, String body) {
    }

    @BeforeAll
    static void startCluster() throws Exception {
        fakeOperator = HttpsServer.create(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0), 16);
        int operatorPort = fakeOperator.getAddress().getPort();
        cluster = DevCluster.start(DevCluster.Options.defaults().devDir(tmp.resolve("dev")).operatorPort(operatorPort)
                .podReadyDelay(Duration.ofMillis(20)));

        // what the operator does at startup: a self-signed serving certificate, put into the APIService
        String svc = "playpen-operator";
        operatorCert = Pki.selfSigned(new Pki.Subject(svc, List.of(),
                List.of(svc, svc + ".playpen", svc + ".playpen.svc", svc + ".playpen.svc.cluster.local", "localhost"),
                List.of()), Pki.Usage.SERVER, Instant.now().minusSeconds(60), Duration.ofDays(1));
        SSLContext tls = SSLContext.getInstance("TLS");
        tls.init(keyManagers(operatorCert), trustManagers(cluster.frontProxyCa().certificate()), null);
        fakeOperator.setHttpsConfigurator(new HttpsConfigurator(tls) {
            @Override
            public void configure(HttpsParameters params) {
                SSLParameters p = tls.getDefaultSSLParameters();
                p.setWantClientAuth(true);
                params.setSSLParameters(p);
            }
        });
        fakeOperator.createContext("/", DevClusterTest::fakeOperatorHandler);
        fakeOperator.start();
        setCaBundle(Base64.getEncoder().encodeToString(operatorCert.certificatePem().getBytes(StandardCharsets.US_ASCII)));
    }

    @AfterAll
    static void stop() {
        if (fakeOperator != null) {
            fakeOperator.stop(0);
        }
        if (cluster != null) {
            cluster.close();
            cluster.close(); // idempotent
        }
    }

    static void setCaBundle(String value) {
        cluster.client().genericKubernetesResources(DevCluster.API_SERVICES).withName(PlaypenKeys.API_SERVICE)
                .patch(PatchContext.of(PatchType.JSON_MERGE), "{\"spec\":{\"caBundle\":\"" + value + "\"}}");
    }

    private static void fakeOperatorHandler(HttpExchange ex) throws IOException {
        if (answeredReadyz(ex)) {
            return;
        }
        String cn = null;
        try {
            X509Certificate peer = (X509Certificate) ((HttpsExchange) ex).getSSLSession().getPeerCertificates()[0];
            cn = peer.getSubjectX500Principal().getName();
        } catch (SSLPeerUnverifiedException e) {
            // no client certificate
        }
        String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
        var h = ex.getRequestHeaders();
        lastRequest.set(new Recorded(ex.getRequestMethod(), ex.getRequestURI().getPath(), h.get("X-Remote-User"),
                h.get("X-Remote-Group"), h.get("Content-Type"), h.getFirst("Transfer-Encoding"), cn, body));
        String path = ex.getRequestURI().getPath();
        String response;
        int code = 200;
        if (path.equals("/apis/" + PlaypenKeys.GROUP_VERSION)) {
            response = "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\",\"groupVersion\":\"" + PlaypenKeys.GROUP_VERSION
                    + "\",\"resources\":[{\"name\":\"allocs\",\"singularName\":\"alloc\",\"namespaced\":false,"
                    + "\"kind\":\"Alloc\",\"verbs\":[\"create\"]},{\"name\":\"deallocs\",\"singularName\":\"dealloc\","
                    + "\"namespaced\":false,\"kind\":\"Dealloc\",\"verbs\":[\"create\"]}]}";
        } else if (path.equals("/apis/" + PlaypenKeys.GROUP)) {
            response = "{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",\"name\":\"" + PlaypenKeys.GROUP
                    + "\",\"versions\":[{\"groupVersion\":\"" + PlaypenKeys.GROUP_VERSION
                    + "\",\"version\":\"v1alpha1\"}],\"preferredVersion\":{\"groupVersion\":\""
                    + PlaypenKeys.GROUP_VERSION + "\",\"version\":\"v1alpha1\"}}";
        } else if (path.endsWith("/allocs") && ex.getRequestMethod().equals("POST")) {
            response = "{\"resourceType\":\"runner\",\"fake\":\"operator\"}";
        } else {
            code = 404;
            response = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"NotFound\",\"code\":404}";
        }
        byte[] bytes = response.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(code, bytes.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(bytes);
        }
    }

    /** The shim's readiness probe, answered 204 like a ready operator (not recorded as a request). */
    static boolean answeredReadyz(HttpExchange ex) throws IOException {
        if (!ex.getRequestURI().getPath().equals("/readyz")) {
            return false;
        }
        ex.getRequestBody().readAllBytes();
        ex.getResponseHeaders().set("Connection", "close"); // see fakeReplica
        ex.sendResponseHeaders(204, -1);
        ex.close();
        return true;
    }

    @Test
    void writesTheDevFiles() throws Exception {
        Path dir = cluster.devDir();
        // endpoints.env announces a ready playground: the cluster alone does not write it
        assertThat(dir.resolve("endpoints.env")).doesNotExist();
        cluster.writeEndpointsEnv(Map.of("MANAGEMENT_URL", "http://127.0.0.1:1"));
        for (String f : List.of("kubeconfig", "kubeconfig-denied", "operator-kubeconfig", "front-proxy-ca.crt",
                "front-proxy-client.crt", "front-proxy-client.key", "serving-ca.crt", "endpoints.env",
                "alloc-request.json", "dealloc-request.json", "alloc-arm64-request.json", "dealloc-arm64-request.json",
                "alloc-control-plane-request.json", "dealloc-control-plane-request.json", "kubeconfig-admin")) {
            assertThat(dir.resolve(f)).as(f).isRegularFile();
        }
        assertThat(Files.readString(dir.resolve("endpoints.env"))).contains(
                "KUBE_API_URL=" + cluster.kubeApiUrl(), "SHIM_URL=" + cluster.shimUrl(),
                "OPERATOR_URL=https://127.0.0.1:" + fakeOperator.getAddress().getPort(),
                "OPERATOR_REPLICAS=https://127.0.0.1:" + fakeOperator.getAddress().getPort() + "\n",
                "OPERATOR_KUBECONFIG=" + cluster.operatorKubeconfigPath().toAbsolutePath(),
                "MANAGEMENT_URL=http://127.0.0.1:1\n");
        try (var listing = Files.list(dir)) {
            assertThat(listing.map(f -> f.getFileName().toString())).as("no temp file left behind")
                    .noneMatch(n -> n.endsWith(".tmp"));
        }
        assertThat(Files.readString(cluster.operatorKubeconfigPath())).contains("server: " + cluster.kubeApiUrl());
        X509Certificate client = Pki.parseCertificates(Files.readString(dir.resolve("front-proxy-client.crt"))).get(0);
        client.verify(Pki.parseCertificates(Files.readString(dir.resolve("front-proxy-ca.crt"))).get(0).getPublicKey());
        assertThat(client.getExtendedKeyUsage()).contains("1.3.6.1.5.5.7.3.2");
        assertThat(Files.readString(dir.resolve("alloc-request.json"))).contains(cluster.sampleIdempotencyKey());
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        var arm = json.readTree(Files.readString(dir.resolve("alloc-arm64-request.json")));
        assertThat(arm.get("architecture").asText()).isEqualTo("arm64");
        assertThat(Base64.getDecoder().decode(arm.get("wireGuardPublicKey").asText())).hasSize(32);
        var cp = json.readTree(Files.readString(dir.resolve("alloc-control-plane-request.json")));
        assertThat(cp.get("resourceType").asText()).isEqualTo("controlPlane");
        assertThat(json.readTree(Files.readString(dir.resolve("dealloc-control-plane-request.json"))).get("idempotencyKey"))
                .isEqualTo(cp.get("idempotencyKey"));
        assertThat(cluster.tryItCommands()).contains("export KUBECONFIG=" + dir + "/kubeconfig\n",
                "  kubectl get allocs -o wide\n", "wg genkey | wg pubkey",
                "openssl genpkey -algorithm x25519 | openssl pkey -pubout -outform DER | tail -c 32 | base64");
        assertThat(cluster.tryItCommands()).contains("kubectl create --raw /apis/playpen.unbounded-cloud.io/v1alpha1/allocs -f "
                + dir + "/alloc-request.json", "/deallocs");
    }

    @Test
    void seedsNodesTrustConfigMapAndApiService() {
        List<Node> nodes = cluster.client().nodes().list().getItems();
        assertThat(nodes).extracting(n -> n.getMetadata().getName()).containsExactlyInAnyOrder("dev-amd64", "dev-arm64");
        Node arm = cluster.client().nodes().withName("dev-arm64").get();
        assertThat(arm.getMetadata().getLabels()).containsEntry("kubernetes.io/arch", "arm64");
        assertThat(arm.getStatus().getAddresses()).anySatisfy(a -> {
            assertThat(a.getType()).isEqualTo("ExternalIP");
            assertThat(a.getAddress()).startsWith("203.0.113.");
        });
        ConfigMap auth = cluster.client().configMaps().inNamespace("kube-system")
                .withName("extension-apiserver-authentication").get();
        assertThat(auth.getData()).containsEntry("requestheader-allowed-names", "[\"front-proxy-client\"]")
                .containsEntry("requestheader-username-headers", "[\"X-Remote-User\"]")
                .containsEntry("requestheader-group-headers", "[\"X-Remote-Group\"]")
                .containsEntry("requestheader-extra-headers-prefix", "[\"X-Remote-Extra-\"]");
        assertThat(Pki.parseCertificates(auth.getData().get("requestheader-client-ca-file")).get(0))
                .isEqualTo(cluster.frontProxyCa().certificate());
        var api = cluster.client().genericKubernetesResources(DevCluster.API_SERVICES).withName(PlaypenKeys.API_SERVICE).get();
        @SuppressWarnings("unchecked")
        Map<String, Object> spec = (Map<String, Object>) api.getAdditionalProperties().get("spec");
        assertThat(spec).containsEntry("group", PlaypenKeys.GROUP).containsEntry("version", "v1alpha1")
                .containsEntry("groupPriorityMinimum", 1000).containsEntry("versionPriority", 100);
        assertThat(cluster.client().namespaces().withName("playpen").get()).isNotNull();
    }

    @Test
    void kubectlListsPodsThroughTheShim() throws Exception {
        cluster.client().pods().inNamespace("playpen").resource(new PodBuilder().withNewMetadata().withName("hello")
                .addToLabels("app", "hello").endMetadata().withNewSpec().addNewContainer().withName("c").withImage("busybox")
                .endContainer().endSpec().build()).create();
        Result r = kubectl(cluster.kubeconfigPath(), "get", "pods", "-n", "playpen", "-o", "name");
        assertThat(r.exit()).as(r.output()).isZero();
        assertThat(r.output()).contains("pod/hello");
    }

    /**
     * kubectl patch's default, a strategic merge patch, which the simulated API server cannot apply, is answered
     * with what to send instead; a merge patch works.
     */
    @Test
    void aStrategicMergePatchIsToldToUseAMergePatch() throws Exception {
        cluster.client().pods().inNamespace("playpen").resource(new PodBuilder().withNewMetadata().withName("patched")
                .endMetadata().withNewSpec().addNewContainer().withName("c").withImage("busybox").endContainer()
                .endSpec().build()).create();
        Result r = kubectl(cluster.kubeconfigPath(), "patch", "pod", "-n", "playpen", "patched", "-p",
                "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}");
        assertThat(r.exit()).as(r.output()).isNotZero();
        assertThat(r.output()).contains("add --type=merge or --type=json to kubectl patch");
        Result merge = kubectl(cluster.kubeconfigPath(), "patch", "pod", "-n", "playpen", "patched", "--type=merge",
                "-p", "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}");
        assertThat(merge.exit()).as(merge.output()).isZero();
        assertThat(cluster.client().pods().inNamespace("playpen").withName("patched").get().getMetadata().getLabels())
                .containsEntry("x", "y");
    }

    @Test
    void healthEndpointsSayOkAndOtherPathsAreNotFoundAsKubeApiserverAnswersThem() throws Exception {
        for (String health : List.of("/readyz", "/livez", "/healthz")) {
            Result r = kubectl(cluster.kubeconfigPath(), "get", "--raw", health);
            assertThat(r.exit()).as(health + ": " + r.output()).isZero();
            assertThat(r.output().trim()).as(health).isEqualTo("ok");
        }
        // the store behind the simulated API server would list everything it holds, secrets included
        Result other = kubectl(cluster.kubeconfigPath(), "get", "--raw", "/metrics");
        assertThat(other.exit()).isNotZero();
        assertThat(other.output()).contains("NotFound").doesNotContain("\"kind\":\"List\"");
        assertThat(kubectl(cluster.kubeconfigPath(), "get", "--raw", "/api/v1/namespaces").output())
                .as("API paths still reach the store").contains("\"name\":\"playpen\"");
    }

    @Test
    void requestsWithoutClientCertificateAre401() throws Exception {
        SSLContext tls = SSLContext.getInstance("TLS");
        tls.init(null, trustManagers(cluster.servingCa().certificate()), null);
        HttpClient http = HttpClient.newBuilder().sslContext(tls).build();
        HttpResponse<String> res = http.send(HttpRequest.newBuilder(cluster.shimUrl().resolve("/api/v1/pods")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(res.statusCode()).isEqualTo(401);
        assertThat(res.body()).contains("\"kind\":\"Status\"", "\"code\":401");
    }

    @Test
    void runnerPodWithArm64SelectorBecomesReadyOnDevArm64() throws Exception {
        Pod pod = cluster.client().pods().inNamespace("playpen").resource(new PodBuilder()
                .withNewMetadata().withName("playpen-runner-arm64-51820")
                .addToLabels(PlaypenKeys.APP_NAME, PlaypenKeys.RUNNER_APP_NAME)
                .addToLabels(PlaypenKeys.RESOURCE_TYPE, "runner").endMetadata()
                .withNewSpec().addToNodeSelector("kubernetes.io/arch", "arm64")
                .addNewContainer().withName("runner").withImage("ghcr.io/azure/playpen:latest").endContainer()
                .endSpec().build()).create();
        Pod ready = awaitRunning(pod.getMetadata().getName());
        assertThat(ready.getSpec().getNodeName()).isEqualTo("dev-arm64");
        assertThat(ready.getStatus().getPodIP()).isNotBlank();
        assertThat(ready.getStatus().getHostIP()).isEqualTo("10.0.0.11");
        assertThat(ready.getStatus().getContainerStatuses()).singleElement().satisfies(cs -> {
            assertThat(cs.getName()).isEqualTo("runner");
            assertThat(cs.getReady()).isTrue();
            assertThat(cs.getState().getRunning().getStartedAt()).isNotBlank();
        });
        assertThat(ready.getStatus().getConditions()).anySatisfy(c -> {
            assertThat(c.getType()).isEqualTo("Ready");
            assertThat(c.getStatus()).isEqualTo("True");
        });
        Map<String, String> ann = ready.getMetadata().getAnnotations();
        assertThat(Base64.getDecoder().decode(ann.get(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY))).hasSize(32);
        X509Certificate redfish = (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(
                new ByteArrayInputStream(ann.get(PlaypenKeys.REDFISH_CERT_PEM).getBytes(StandardCharsets.US_ASCII)));
        redfish.checkValidity();
        // the key must stay put: later events for the pod must not restart it
        Thread.sleep(200);
        assertThat(cluster.client().pods().inNamespace("playpen").withName(pod.getMetadata().getName()).get()
                .getMetadata().getAnnotations()).containsEntry(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY,
                        ann.get(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY));
    }

    @Test
    void controlPlanePodLandsOnAmd64WithAKubeconfig() throws Exception {
        Pod pod = cluster.client().pods().inNamespace("playpen").resource(new PodBuilder()
                .withNewMetadata().withName("playpen-control-plane-1.33.0-16443")
                .addToLabels(PlaypenKeys.APP_NAME, PlaypenKeys.CONTROL_PLANE_APP_NAME)
                .addToLabels(PlaypenKeys.RESOURCE_TYPE, "controlPlane").endMetadata()
                .withNewSpec()
                .addNewContainer().withName("k3s").withImage("rancher/k3s:v1.33.0-k3s1").endContainer()
                .addNewContainer().withName("helper").withImage("ghcr.io/azure/playpen:latest").endContainer()
                .endSpec().build()).create();
        Pod ready = awaitRunning(pod.getMetadata().getName());
        assertThat(ready.getSpec().getNodeName()).isEqualTo("dev-amd64");
        assertThat(ready.getStatus().getContainerStatuses()).hasSize(2).allSatisfy(cs -> assertThat(cs.getReady()).isTrue());
        String kubeconfig = ready.getMetadata().getAnnotations().get(PlaypenKeys.CONTROL_PLANE_KUBECONFIG);
        assertThat(kubeconfig).contains("server: https://127.0.0.1:6443", "certificate-authority-data: ",
                "client-certificate-data: ", "client-key-data: ", "current-context: default");
        assertThat(ready.getMetadata().getAnnotations()).doesNotContainKey(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY);
    }

    @Test
    void unmanagedPodsAreLeftAlone() throws Exception {
        cluster.client().pods().inNamespace("playpen").resource(new PodBuilder().withNewMetadata().withName("bystander")
                .endMetadata().withNewSpec().addNewContainer().withName("c").withImage("busybox").endContainer()
                .endSpec().build()).create();
        Thread.sleep(300);
        Pod pod = cluster.client().pods().inNamespace("playpen").withName("bystander").get();
        assertThat(pod.getSpec().getNodeName()).isNull();
    }

    @Test
    void subjectAccessReviewAllowsPlaypenUsersOnly() {
        SubjectAccessReview allowed = sar("dev-user", List.of("playpen-users", "system:authenticated"));
        assertThat(allowed.getStatus().getAllowed()).isTrue();
        assertThat(allowed.getSpec().getUser()).isEqualTo("dev-user");
        assertThat(allowed.getSpec().getResourceAttributes().getResource()).isEqualTo("allocs");
        assertThat(sar("root", List.of("system:masters")).getStatus().getAllowed()).isTrue();
        SubjectAccessReview denied = sar("dev-denied", List.of("dev-others"));
        assertThat(denied.getStatus().getAllowed()).isFalse();
        assertThat(denied.getStatus().getReason()).contains("dev-denied", "playpen-users");
    }

    /** allocs/all (everyone's allocations) only for playpen-admins and system:masters. */
    @Test
    void subjectAccessReviewAllowsEveryonesAllocsToAdminsOnly() {
        assertThat(sar("dev-user", List.of("playpen-users"), "all").getStatus().getAllowed()).isFalse();
        assertThat(sar("dev-admin", List.of("playpen-users", "playpen-admins"), "all").getStatus().getAllowed()).isTrue();
        assertThat(sar("root", List.of("system:masters"), "all").getStatus().getAllowed()).isTrue();
        assertThat(sar("dev-user", List.of("playpen-users"), "all").getStatus().getReason()).contains("playpen-admins");
        assertThat(cluster.devDir().resolve("kubeconfig-admin")).exists();
    }

    private static SubjectAccessReview sar(String user, List<String> groups) {
        return sar(user, groups, null);
    }

    private static SubjectAccessReview sar(String user, List<String> groups, String subresource) {
        return cluster.client().authorization().v1().subjectAccessReview().create(new SubjectAccessReviewBuilder()
                .withNewSpec().withUser(user).withGroups(groups).withNewResourceAttributes().withVerb("create")
                .withGroup(PlaypenKeys.GROUP).withResource("allocs").withSubresource(subresource).endResourceAttributes()
                .endSpec().build());
    }

    @Test
    void kubectlCreateRawReachesTheOperatorAsTheUser() throws Exception {
        Path file = tmp.resolve("alloc.json");
        Files.writeString(file, "{\"idempotencyKey\":\"k1\",\"wireGuardPublicKey\":\"" + WireGuardKeys.newPublicKey() + "\"}\n");
        Result r = kubectl(cluster.kubeconfigPath(), "create", "--raw", "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs",
                "-f", file.toString());
        assertThat(r.exit()).as(r.output()).isZero();
        assertThat(r.output()).contains("\"fake\":\"operator\"");
        Recorded seen = lastRequest.get();
        assertThat(seen.method()).isEqualTo("POST");
        assertThat(seen.path()).isEqualTo("/apis/playpen.unbounded-cloud.io/v1alpha1/allocs");
        assertThat(seen.remoteUser()).containsExactly("dev-user");
        assertThat(seen.remoteGroups()).containsExactly("playpen-users");
        assertThat(seen.clientCn()).isEqualTo("CN=front-proxy-client");
        assertThat(seen.contentType()).isNull();
        assertThat(seen.transferEncoding()).isEqualToIgnoringCase("chunked");
        assertThat(seen.body()).isEqualTo(Files.readString(file));

        Result denied = kubectl(cluster.deniedKubeconfigPath(), "create", "--raw",
                "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs", "-f", file.toString());
        assertThat(denied.exit()).as(denied.output()).isZero();
        assertThat(lastRequest.get().remoteUser()).containsExactly("dev-denied");
        assertThat(lastRequest.get().remoteGroups()).containsExactly("dev-others");
    }

    @Test
    void namesWithCommasAndEscapesReachTheOperatorAsTheCertificateHasThem() throws Exception {
        // the aggregator passes the client certificate's CN and each O as they are, not in the escaped form of a
        // distinguished name: a group called "a,b" is one group "a,b", never "a\,b" or two groups
        HttpClient odd = userClient(cluster, "jo+ann=x", List.of("a,b", "c\\d", "#f"));
        HttpResponse<String> r = postAlloc(odd, cluster);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        Recorded seen = lastRequest.get();
        assertThat(seen.remoteUser()).containsExactly("jo+ann=x");
        assertThat(seen.remoteGroups()).containsExactly("a,b", "c\\d", "#f");
    }

    @Test
    void unregisteredOperatorIs503() throws Exception {
        String pem = Base64.getEncoder().encodeToString(operatorCert.certificatePem().getBytes(StandardCharsets.US_ASCII));
        synchronized (DevClusterTest.class) {
            setCaBundle("");
            try {
                // dev mode waits for this before it says it is ready
                assertThat(cluster.registered()).isFalse();
                Result r = kubectl(cluster.kubeconfigPath(), "get", "--raw", "/apis/playpen.unbounded-cloud.io/v1alpha1");
                assertThat(r.exit()).isNotZero();
                assertThat(r.output()).contains("operator not registered yet");
                // a caBundle that does not vouch for the operator's certificate: the shim refuses to talk to it
                setCaBundle(Base64.getEncoder().encodeToString(
                        cluster.servingCa().certificatePem().getBytes(StandardCharsets.US_ASCII)));
                Result untrusted = kubectl(cluster.kubeconfigPath(), "get", "--raw", "/apis/playpen.unbounded-cloud.io/v1alpha1");
                assertThat(untrusted.exit()).isNotZero();
                assertThat(untrusted.output()).contains("error trying to reach the operator");
            } finally {
                setCaBundle(pem);
            }
        }
        assertThat(cluster.registered()).isTrue();
        Result r = kubectl(cluster.kubeconfigPath(), "get", "--raw", "/apis/playpen.unbounded-cloud.io/v1alpha1");
        assertThat(r.exit()).as(r.output()).isZero();
    }

    @Test
    void kubectlApiResourcesIncludesThePlaypenGroup() throws Exception {
        Result r = kubectl(cluster.kubeconfigPath(), "api-resources");
        assertThat(r.exit()).as(r.output()).isZero();
        assertThat(r.output()).contains("allocs", "deallocs", PlaypenKeys.GROUP_VERSION, "pods", "leases",
                "subjectaccessreviews", "apiservices");
    }

    @Test
    void theShimSpreadsOverReadyReplicasAndSkipsDeadOnes() throws Exception {
        java.util.concurrent.atomic.AtomicInteger servedByA = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicInteger servedByB = new java.util.concurrent.atomic.AtomicInteger();
        HttpsServer a = fakeReplica(servedByA);
        HttpsServer b = fakeReplica(servedByB);
        int neverStarted;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            neverStarted = s.getLocalPort();
        }
        URI uriA = URI.create("https://127.0.0.1:" + a.getAddress().getPort());
        URI uriB = URI.create("https://127.0.0.1:" + b.getAddress().getPort());
        try (DevCluster replicas = DevCluster.start(DevCluster.Options.defaults().devDir(tmp.resolve("dev-replicas"))
                .noOperatorInProcess().moreReplicas(List.of(uriA, URI.create("https://127.0.0.1:" + neverStarted), uriB))
                .podReadyDelay(Duration.ofMillis(20)))) {
            replicas.client().genericKubernetesResources(DevCluster.API_SERVICES).withName(PlaypenKeys.API_SERVICE)
                    .patch(PatchContext.of(PatchType.JSON_MERGE), "{\"spec\":{\"caBundle\":\"" + Base64.getEncoder()
                            .encodeToString(operatorCert.certificatePem().getBytes(StandardCharsets.US_ASCII)) + "\"}}");
            awaitReady(replicas, List.of(uriA, uriB));
            HttpClient user = userClient(replicas);
            for (int i = 0; i < 10; i++) {
                assertThat(postAlloc(user, replicas).statusCode()).isEqualTo(200);
            }
            // like a Service: both ready replicas take requests, the one that never started none
            assertThat(servedByA.get()).as("served by A").isPositive();
            assertThat(servedByB.get()).as("served by B").isPositive();
            assertThat(servedByA.get() + servedByB.get()).isEqualTo(10);

            a.stop(0); // A dies; the shim has not probed yet, so its first attempts find the port closed
            int beforeB = servedByB.get();
            for (int i = 0; i < 6; i++) {
                HttpResponse<String> r = postAlloc(user, replicas);
                assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            }
            assertThat(servedByB.get() - beforeB).isEqualTo(6);
            awaitReady(replicas, List.of(uriB));
        } finally {
            a.stop(0);
            b.stop(0);
        }
    }

    /**
     * kubectl get pods shows what kube-apiserver's Table shows (READY, STATUS, RESTARTS, AGE; -o wide: IP, NODE), not
     * only NAME and AGE as the simulated API server alone would give it.
     */
    @Test
    void kubectlShowsPhaseReadinessAndNodeOfPods() throws Exception {
        Pod pod = cluster.client().pods().inNamespace("playpen").resource(new PodBuilder()
                .withNewMetadata().withName("playpen-runner-amd64-51899")
                .addToLabels(PlaypenKeys.APP_NAME, PlaypenKeys.RUNNER_APP_NAME)
                .addToLabels(PlaypenKeys.RESOURCE_TYPE, "runner").addToLabels("shown", "yes").endMetadata()
                .withNewSpec().addToNodeSelector("kubernetes.io/arch", "amd64")
                .addNewContainer().withName("runner").withImage("ghcr.io/azure/playpen:latest").endContainer()
                .endSpec().build()).create();
        Pod running = awaitRunning(pod.getMetadata().getName());
        Result list = kubectl(cluster.kubeconfigPath(), "get", "pods", "-n", "playpen", "-l", "shown=yes", "-o", "wide",
                "-L", "shown");
        assertThat(list.exit()).as(list.output()).isZero();
        List<String> lines = list.output().lines().toList();
        assertThat(lines.get(0).split("\\s{2,}")).containsExactly("NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                "NOMINATED NODE", "READINESS GATES", "SHOWN");
        assertThat(lines.get(1).split("\\s+")).startsWith("playpen-runner-amd64-51899", "1/1", "Running", "0")
                .contains(running.getStatus().getPodIP(), "dev-amd64", "yes");
        Result one = kubectl(cluster.kubeconfigPath(), "get", "pod", "-n", "playpen", pod.getMetadata().getName());
        assertThat(one.output().lines().toList().get(1).split("\\s+")).startsWith("playpen-runner-amd64-51899", "1/1", "Running");
        Result yaml = kubectl(cluster.kubeconfigPath(), "get", "pod", "-n", "playpen", pod.getMetadata().getName(), "-o", "yaml");
        assertThat(yaml.output()).as("other output formats are the pod itself").contains("kind: Pod", "phase: Running");
        cluster.client().pods().inNamespace("playpen").withName(pod.getMetadata().getName()).delete();
    }

    /**
     * The APIService's Available condition follows the stand-in's view, as kube-apiserver's availability controller
     * keeps it: False without a caBundle or a ready replica, True once one answers; a replica that fails one probe on a
     * loaded machine stays in, one that keeps failing leaves after three.
     */
    @Test
    void theApiServiceIsAvailableWhileAReplicaAnswersAndOneSlowProbeIsForgiven() throws Exception {
        java.util.concurrent.atomic.AtomicBoolean healthy = new java.util.concurrent.atomic.AtomicBoolean(true);
        java.util.concurrent.atomic.AtomicInteger failedProbes = new java.util.concurrent.atomic.AtomicInteger();
        // one failed probe, and the shim's ready set as it stands when the next probe arrives: the shim probes from
        // one thread, one probe after the other, so by then it has taken in the failed one and not yet this one
        java.util.concurrent.atomic.AtomicBoolean failOne = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.atomic.AtomicBoolean oneFailed = new java.util.concurrent.atomic.AtomicBoolean();
        AtomicReference<DevCluster> shim = new AtomicReference<>();
        AtomicReference<List<URI>> readyAfterOneFailure = new AtomicReference<>();
        HttpsServer replica = HttpsServer.create(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0), 16);
        SSLContext tls = SSLContext.getInstance("TLS");
        tls.init(keyManagers(operatorCert), null, null);
        replica.setHttpsConfigurator(new HttpsConfigurator(tls));
        replica.createContext("/", ex -> {
            ex.getRequestBody().readAllBytes();
            if (oneFailed.compareAndSet(true, false)) {
                readyAfterOneFailure.set(shim.get().readyReplicas());
            }
            if (healthy.get() && !failOne.compareAndSet(true, false)) {
                ex.sendResponseHeaders(204, -1);
            } else {
                failedProbes.incrementAndGet();
                oneFailed.set(healthy.get());
                ex.sendResponseHeaders(503, -1);
            }
            ex.close();
        });
        replica.start();
        URI uri = URI.create("https://127.0.0.1:" + replica.getAddress().getPort());
        try (DevCluster c = DevCluster.start(DevCluster.Options.defaults().devDir(tmp.resolve("dev-available"))
                .noOperatorInProcess().moreReplicas(List.of(uri)).podReadyDelay(Duration.ofMillis(20)))) {
            shim.set(c);
            awaitCondition(c, "False", "MissingCABundle");
            assertThat(c.available()).isFalse();
            c.client().genericKubernetesResources(DevCluster.API_SERVICES).withName(PlaypenKeys.API_SERVICE)
                    .patch(PatchContext.of(PatchType.JSON_MERGE), "{\"spec\":{\"caBundle\":\"" + Base64.getEncoder()
                            .encodeToString(operatorCert.certificatePem().getBytes(StandardCharsets.US_ASCII)) + "\"}}");
            awaitCondition(c, "True", "Passed");
            assertThat(c.available()).isTrue();
            awaitReady(c, List.of(uri));

            failOne.set(true);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (readyAfterOneFailure.get() == null && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertThat(failedProbes.get()).isEqualTo(1);
            assertThat(readyAfterOneFailure.get()).as("after one failed probe").containsExactly(uri);
            int failedBefore = failedProbes.get();
            healthy.set(false);
            awaitReady(c, List.of());
            assertThat(failedProbes.get() - failedBefore).as("dropped after the third").isGreaterThanOrEqualTo(3);
            awaitCondition(c, "False", "MissingEndpoints");
            healthy.set(true);
            awaitCondition(c, "True", "Passed");
        } finally {
            replica.stop(0);
        }
    }

    @SuppressWarnings("unchecked")
    private static void awaitCondition(DevCluster c, String status, String reason) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        Object last = null;
        while (System.nanoTime() < deadline) {
            var api = c.client().genericKubernetesResources(DevCluster.API_SERVICES).withName(PlaypenKeys.API_SERVICE).get();
            last = api.getAdditionalProperties().get("status");
            if (last instanceof Map<?, ?> st && st.get("conditions") instanceof List<?> conds && conds.size() == 1
                    && conds.get(0) instanceof Map<?, ?> cond && status.equals(cond.get("status"))
                    && reason.equals(cond.get("reason")) && "Available".equals(cond.get("type"))) {
                return;
            }
            Thread.sleep(20);
        }
        throw new AssertionError("APIService status " + last + ", expected Available=" + status + " (" + reason + ")");
    }

    private static HttpsServer fakeReplica(java.util.concurrent.atomic.AtomicInteger served) throws Exception {
        HttpsServer replica = HttpsServer.create(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0), 16);
        SSLContext tls = SSLContext.getInstance("TLS");
        tls.init(keyManagers(operatorCert), null, null);
        replica.setHttpsConfigurator(new HttpsConfigurator(tls));
        replica.createContext("/", ex -> {
            if (answeredReadyz(ex)) {
                return;
            }
            ex.getRequestBody().readAllBytes();
            served.incrementAndGet();
            byte[] ok = "{\"fake\":\"replica\"}".getBytes(StandardCharsets.UTF_8);
            // no kept-alive connection: once the replica stops, the shim's next attempt is refused (never sent),
            // rather than written to a connection the stopping replica is closing meanwhile, which the shim may
            // not retry because the request may have reached the replica
            ex.getResponseHeaders().set("Connection", "close");
            ex.sendResponseHeaders(200, ok.length);
            try (OutputStream os = ex.getResponseBody()) {
                os.write(ok);
            }
        });
        replica.start();
        return replica;
    }

    private static void awaitReady(DevCluster c, List<URI> expected) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!c.readyReplicas().equals(expected)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("ready replicas " + c.readyReplicas() + ", expected " + expected);
            }
            Thread.sleep(50);
        }
    }

    private static HttpClient userClient(DevCluster c) throws Exception {
        return userClient(c, DevCluster.DEV_USER, List.of(DevCluster.USERS_GROUP));
    }

    /** A client with a certificate of {@code c}'s client CA for {@code user} in {@code groups}. */
    private static HttpClient userClient(DevCluster c, String user, List<String> groups) throws Exception {
        SSLContext tls = SSLContext.getInstance("TLS");
        tls.init(keyManagers(c.issueUser(user, groups)), trustManagers(c.servingCa().certificate()), null);
        return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).sslContext(tls).build();
    }

    private static HttpResponse<String> postAlloc(HttpClient user, DevCluster c) throws Exception {
        return user.send(HttpRequest.newBuilder(c.shimUrl().resolve("/apis/playpen.unbounded-cloud.io/v1alpha1/allocs"))
                .POST(HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
    }

    // ---- helpers

    record Result(int exit, String output) {
    }

    private static Result kubectl(Path kubeconfig, String... args) throws Exception {
        String kubectl = findKubectl();
        Assumptions.assumeTrue(kubectl != null, "kubectl not found on PATH or at /usr/bin/kubectl: skipping the kubectl checks");
        List<String> cmd = new ArrayList<>(List.of(kubectl, "--kubeconfig", kubeconfig.toString(),
                "--cache-dir", tmp.resolve("kube-cache").toString(), "--request-timeout", "20s"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("kubectl timed out: " + out);
        }
        return new Result(p.exitValue(), out);
    }

    private static String findKubectl() {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path candidate = Path.of(dir, "kubectl");
            if (Files.isExecutable(candidate)) {
                return candidate.toString();
            }
        }
        return Files.isExecutable(Path.of("/usr/bin/kubectl")) ? "/usr/bin/kubectl" : null;
    }

    private static Pod awaitRunning(String name) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        Pod pod = null;
        while (System.nanoTime() < deadline) {
            pod = cluster.client().pods().inNamespace("playpen").withName(name).get();
            if (pod != null && pod.getStatus() != null && "Running".equals(pod.getStatus().getPhase())) {
                return pod;
            }
            Thread.sleep(25);
        }
        throw new AssertionError("pod " + name + " did not become Running: " + pod);
    }

    private static javax.net.ssl.KeyManager[] keyManagers(Pki.Issued issued) throws Exception {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        ks.setKeyEntry("k", issued.privateKey(), "x".toCharArray(), new X509Certificate[] {issued.certificate()});
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, "x".toCharArray());
        return kmf.getKeyManagers();
    }

    private static javax.net.ssl.TrustManager[] trustManagers(X509Certificate ca) throws Exception {
        KeyStore ts = KeyStore.getInstance("PKCS12");
        ts.load(null, null);
        ts.setCertificateEntry("ca", ca);
        TrustManagerFactory tmf = TrustManagerFactory.getInstance("PKIX");
        tmf.init(ts);
        return tmf.getTrustManagers();
    }

    /**
     * A playground port fixed by a flag that another process holds is refused naming the address, the flag and what
     * to do, not only "Address already in use".
     */
    @Test
    void aFixedPortAnotherProcessHoldsIsRefusedNamingItsFlag() throws Exception {
        try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            int port = taken.getLocalPort();
            for (String flag : List.of("--dev-api-port", "--dev-shim-port")) {
                DevCluster.Options o = DevCluster.Options.defaults().devDir(tmp.resolve("dev-taken" + flag))
                        .noOperatorInProcess().podReadyDelay(Duration.ofMillis(20));
                o = flag.equals("--dev-api-port") ? o.apiPort(port) : o.shimPort(port);
                DevCluster.Options options = o;
                org.assertj.core.api.Assertions.assertThatThrownBy(() -> DevCluster.start(options).close())
                        .as(flag).isInstanceOf(java.io.IOException.class)
                        .hasMessage("cannot listen on 127.0.0.1:" + port + " (" + flag + "): another process already "
                                + "listens on that port (another playground?); stop it, or give " + flag + " another "
                                + "port, or leave " + flag + " out for a free one");
            }
        }
    }
}
