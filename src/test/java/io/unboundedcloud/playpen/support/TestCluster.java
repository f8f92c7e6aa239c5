package io.unboundedcloud.playpen.support;

import java.net.InetAddress;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReview;
import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReviewStatusBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.mockwebserver.http.Dispatcher;
import io.unboundedcloud.playpen.dev.ResumableCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.ServerRequest;
import io.fabric8.mockwebserver.ServerResponse;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import io.unboundedcloud.playpen.kube.KubeClients;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * A fabric8 mock API server in CRUD mode standing in for kube-apiserver in route tests: front-proxy trust
 * ConfigMap, a scripted SubjectAccessReview responder, nodes and ready runner pods, and request counting.
 */
public final class TestCluster implements AutoCloseable {
    private static final Logger MOCK_LOG = Logger.getLogger("io.fabric8.mockwebserver");

    static {
        MOCK_LOG.setLevel(Level.WARNING);
    }

    public static final String NS = "playpen";
    public final KubernetesMockServer server;
    public final KubernetesClient client;
    public final Pki.Issued frontProxyCa;
    public final Pki.Issued frontProxyClient;
    public volatile Predicate<SubjectAccessReview> sarPolicy =
            sar -> sar.getSpec().getGroups() != null && sar.getSpec().getGroups().contains("playpen-users");
    public final List<SubjectAccessReview> sarRequests = new CopyOnWriteArrayList<>();
    /**
     * The whole status a SubjectAccessReview is answered with (null: allowed as {@link #sarPolicy} says, with a
     * reason): for answers the policy cannot give, such as one that is both allowed and denied.
     */
    public volatile java.util.function.Function<SubjectAccessReview,
            io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReviewStatus> sarAnswer = null;
    private final Map<String, AtomicInteger> requests = new ConcurrentHashMap<>();
    private final List<RequestListener> listeners = new CopyOnWriteArrayList<>();
    private final List<AnswerListener> answerListeners = new CopyOnWriteArrayList<>();
    private final ResumableCrudDispatcher crud;
    /**
     * RBAC stand-in (the mock has no authorization): requests whose "METHOD path" key (see {@link #requestCount})
     * matches are answered 403 Forbidden with a Kubernetes Status, as kube-apiserver answers a verb the caller's
     * roles do not grant. Counted like any other request. Replace it at any time (an RBAC fix while running).
     */
    public volatile Predicate<String> forbidden = key -> false;
    /** Requests ("METHOD path") that reach the store and then get a 500: the write landed, its answer is lost. */
    public volatile Predicate<String> failAfterWrite = key -> false;
    /** Requests ("METHOD path") answered 500 without reaching the store: refused, nothing written. */
    public volatile Predicate<String> failBeforeWrite = key -> false;
    /** The message of the 500 Status {@link #failBeforeWrite} answers with (null: none). */
    public volatile String failBeforeWriteMessage;
    /**
     * Requests ("METHOD path") answered 429 Too Many Requests without reaching the store, as API Priority and Fairness
     * refuses a request when the API server is overloaded.
     */
    public volatile Predicate<String> tooManyRequests = key -> false;
    /**
     * Writes ("METHOD path" and body) answered 504 without reaching the store and held: kube-apiserver runs a request
     * on after it has answered 504 (or after the client gave up), so it may still commit it. {@link #applyHeld} (or
     * {@link #applyHeldBefore}) commits the held writes later, each with its own precondition judged then.
     */
    public volatile java.util.function.BiPredicate<String, String> holdWrite = (key, body) -> false;
    /**
     * Requests ("METHOD path") before which the held writes are committed: when one arrives (and is not held
     * itself), the held writes go to the store first, in the order they came, then it is served.
     */
    public volatile Predicate<String> applyHeldBefore = key -> false;
    /**
     * Told (on the server's thread) of each write as it is held, before its 504 is sent. Changes made here go
     * straight to the store ({@link #patchInStore}), never through a client: the server's thread would wait on itself.
     */
    public volatile java.util.function.Consumer<String> onHold = key -> { };
    private final List<RecordedRequest> held = new ArrayList<>();
    private final Dispatcher store;

    /** Told about each request as it reaches the mock API, before it is served (the benchmark timestamps creates and deletes). */
    @FunctionalInterface
    public interface RequestListener {
        /** {@code key} is the "METHOD path" (or "METHOD WATCH path") key that {@link #requestCount} matches on. */
        void onRequest(String key);

        /** The same with the request's body at hand, read only when asked for (null when it has none). */
        default void onRequest(String key, java.util.function.Supplier<String> body) {
            onRequest(key);
        }
    }

    /**
     * Told about each answer of the mock API once the request has been served (a write is committed by then) and
     * before the answer is sent, on the server's thread: the client that asked gets its answer only after this.
     */
    @FunctionalInterface
    public interface AnswerListener {
        void onAnswer(String method, String path, MockResponse answer);
    }

    private TestCluster() {
        this(ResumableCrudDispatcher.DEFAULT_HISTORY);
    }

    private TestCluster(int watchHistory) {
        Map<ServerRequest, Queue<ServerResponse>> responses = new HashMap<>();
        crud = new ResumableCrudDispatcher(watchHistory);
        store = ResumableCrudDispatcher.mixed(responses, crud);
        Dispatcher dispatcher = new Dispatcher() {
            @Override
            public MockResponse dispatch(RecordedRequest request) {
                String key = key(request);
                requests.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
                for (RequestListener l : listeners) {
                    // the body's bytes stay for the store: reading them here does not consume them
                    l.onRequest(key, () -> request.getBody() == null ? null
                            : new String(request.getBody().getBytes(), java.nio.charset.StandardCharsets.UTF_8));
                }
                if (forbidden.test(key)) {
                    return forbiddenAnswer(key);
                }
                if (tooManyRequests.test(key)) {
                    return new MockResponse().setResponseCode(429).setHeader("Retry-After", "1").setBody("{\"kind\":"
                            + "\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"TooManyRequests\","
                            + "\"message\":\"Too many requests, please try again later.\",\"code\":429}");
                }
                if (failBeforeWrite.test(key)) {
                    String message = failBeforeWriteMessage;
                    return new MockResponse().setResponseCode(500).setBody(
                            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                                    + (message == null ? "" : "\"message\":\"" + message.replace("\"", "'") + "\",")
                                    + "\"code\":500}");
                }
                if (!"GET".equals(request.getMethod()) && holdWrite.test(key, request.getBody() == null ? ""
                        : new String(request.getBody().getBytes(), java.nio.charset.StandardCharsets.UTF_8))) {
                    synchronized (held) {
                        held.add(request);
                    }
                    onHold.accept(key);
                    return new MockResponse().setResponseCode(504).setBody("{\"kind\":\"Status\",\"apiVersion\":"
                            + "\"v1\",\"status\":\"Failure\",\"reason\":\"Timeout\",\"code\":504}");
                }
                if (applyHeldBefore.test(key)) {
                    applyHeld();
                }
                if (failAfterWrite.test(key)) {
                    MockResponse landed = store.dispatch(request);
                    for (AnswerListener l : answerListeners) {
                        l.onAnswer(request.getMethod(), request.getPath(), landed);
                    }
                    return new MockResponse().setResponseCode(500).setBody(
                            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":500}");
                }
                MockResponse answer = store.dispatch(request);
                for (AnswerListener l : answerListeners) {
                    l.onAnswer(request.getMethod(), request.getPath(), answer);
                }
                return answer;
            }

            @Override
            public void shutdown() {
                store.shutdown();
            }
        };
        server = new KubernetesMockServer(new Context(Serialization.jsonMapper()), new MockWebServer(), responses,
                dispatcher, false);
        server.init(InetAddress.getLoopbackAddress(), 0);
        server.expect().post().withPath("/apis/authorization.k8s.io/v1/subjectaccessreviews").andReply(201, req -> {
            SubjectAccessReview sar = Serialization.unmarshal(req.getBody().readUtf8(), SubjectAccessReview.class);
            sarRequests.add(sar);
            var answer = sarAnswer;
            if (answer != null) {
                sar.setStatus(answer.apply(sar));
                return sar;
            }
            boolean allowed = sarPolicy.test(sar);
            sar.setStatus(new SubjectAccessReviewStatusBuilder().withAllowed(allowed)
                    .withReason(allowed ? "test policy allows" : "test policy denies").build());
            return sar;
        }).always();
        Config config = new ConfigBuilder().withMasterUrl(server.url("/")).withNamespace(NS).withTrustCerts(true).build();
        client = KubeClients.create(config);
        frontProxyCa = Pki.selfSigned(Pki.Subject.cn("front-proxy-ca"), Pki.Usage.CA, Instant.now().minusSeconds(60),
                Duration.ofDays(1));
        frontProxyClient = Pki.issue(frontProxyCa, Pki.Subject.cn("front-proxy-client"), Pki.Usage.CLIENT,
                Instant.now().minusSeconds(60), Duration.ofDays(1));
        client.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName(NS).endMetadata().build()).create();
        setTrust(frontProxyCa.certificatePem(), "[\"front-proxy-client\"]");
    }

    private static MockResponse forbiddenAnswer(String key) {
        String body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                + "\"message\":\"forbidden by the test's RBAC: " + key.replace("\"", "'") + "\",\"reason\":\"Forbidden\",\"code\":403}";
        return new MockResponse().setResponseCode(403).setHeader("Content-Type", "application/json").setBody(body);
    }

    public static TestCluster start() {
        return new TestCluster();
    }

    /** A cluster whose watches resume only within the last {@code watchHistory} changes (older: 410 Gone). */
    public static TestCluster withWatchHistory(int watchHistory) {
        return new TestCluster(watchHistory);
    }

    private static String key(RecordedRequest r) {
        String path = r.getPath();
        boolean watch = path.contains("watch=true");
        int q = path.indexOf('?');
        String p = q >= 0 ? path.substring(0, q) : path;
        return r.getMethod() + (watch ? " WATCH " : " ") + p;
    }

    /** Commits the held writes ({@link #holdWrite}) now, in the order they came: the codes they are answered with. */
    public List<Integer> applyHeld() {
        List<RecordedRequest> now;
        synchronized (held) {
            now = new ArrayList<>(held);
            held.clear();
        }
        List<Integer> codes = new ArrayList<>();
        for (RecordedRequest r : now) {
            codes.add(commit(r).code());
        }
        return codes;
    }

    /** Writes held and not committed yet. */
    public int heldWrites() {
        synchronized (held) {
            return held.size();
        }
    }

    /**
     * A JSON merge patch of the object at {@code path} committed straight in the store (another writer's, which no
     * request counter or listener sees): its answer's code.
     */
    public int patchInStore(String path, String mergePatch) {
        io.fabric8.mockwebserver.http.Headers headers = io.fabric8.mockwebserver.http.Headers.builder()
                .add("Content-Type", "application/merge-patch+json").build();
        return commit(new RecordedRequest("HTTP/1.1", io.fabric8.mockwebserver.dsl.HttpMethod.PATCH, path, headers,
                new io.fabric8.mockwebserver.http.Buffer(mergePatch.getBytes(java.nio.charset.StandardCharsets.UTF_8))))
                .code();
    }

    private MockResponse commit(RecordedRequest r) {
        MockResponse answer = store.dispatch(r);
        for (AnswerListener l : answerListeners) {
            l.onAnswer(r.getMethod(), r.getPath(), answer);
        }
        return answer;
    }

    public void addRequestListener(RequestListener listener) {
        listeners.add(listener);
    }

    public void removeRequestListener(RequestListener listener) {
        listeners.remove(listener);
    }

    public void addAnswerListener(AnswerListener listener) {
        answerListeners.add(listener);
    }

    /** The newest resourceVersion the mock API server has committed (of any object). */
    public long currentResourceVersion() {
        return crud.currentResourceVersion();
    }

    /** Requests seen so far whose "METHOD path" key matches the predicate. */
    public int requestCount(Predicate<String> which) {
        return requests.entrySet().stream().filter(e -> which.test(e.getKey())).mapToInt(e -> e.getValue().get()).sum();
    }

    public Map<String, Integer> requestSnapshot() {
        Map<String, Integer> out = new HashMap<>();
        requests.forEach((k, v) -> out.put(k, v.get()));
        return out;
    }

    /** The trust ConfigMap of a kube-apiserver that sends the caller's uid in X-Remote-Uid (1.32+, with the flag). */
    public void setTrust(String caPem, String allowedNamesJson) {
        setTrust(caPem, allowedNamesJson, "[\"X-Remote-Uid\"]");
    }

    /** {@code uidHeadersJson}: requestheader-uid-headers, or null for a kube-apiserver that sends no uid header. */
    public void setTrust(String caPem, String allowedNamesJson, String uidHeadersJson) {
        Map<String, String> data = new HashMap<>();
        data.put("requestheader-client-ca-file", caPem);
        if (allowedNamesJson != null) {
            data.put("requestheader-allowed-names", allowedNamesJson);
        }
        if (uidHeadersJson != null) {
            data.put("requestheader-uid-headers", uidHeadersJson);
        }
        client.configMaps().inNamespace("kube-system").resource(new ConfigMapBuilder().withNewMetadata()
                .withName("extension-apiserver-authentication").withNamespace("kube-system").endMetadata()
                .withData(data).build()).createOr(c -> c.update());
    }

    public void addNode(String name, String arch, String externalIp) {
        NodeBuilder b = new NodeBuilder().withNewMetadata().withName(name).addToLabels("kubernetes.io/arch", arch)
                .endMetadata().withNewStatus().addNewAddress().withType("InternalIP").withAddress("10.0.0." + (name.length() + 1))
                .endAddress().endStatus();
        if (externalIp != null) {
            b.editStatus().addNewAddress().withType("ExternalIP").withAddress(externalIp).endAddress().endStatus();
        }
        client.nodes().resource(b.build()).create();
    }

    /** A runner pod as the pool creates it and the runner completes it: Running, Ready, key published. */
    public static PodBuilder readyRunner(String arch, int hostPort, String node) {
        String name = "playpen-runner-" + arch + "-" + hostPort;
        return new PodBuilder().withNewMetadata().withName(name).withNamespace(NS)
                .addToLabels(PlaypenKeys.APP_NAME, PlaypenKeys.RUNNER_APP_NAME)
                .addToLabels(PlaypenKeys.APP_COMPONENT, PlaypenKeys.RUNNER_COMPONENT)
                .addToLabels(PlaypenKeys.RESOURCE_TYPE, "runner")
                .addToLabels(PlaypenKeys.ARCHITECTURE, arch)
                .addToLabels(PlaypenKeys.HOST_PORT, String.valueOf(hostPort))
                .addToAnnotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, wgKey(hostPort))
                .addToAnnotations(PlaypenKeys.REDFISH_CERT_PEM, "-----BEGIN CERTIFICATE-----\nMIIB" + hostPort + "\n-----END CERTIFICATE-----\n")
                .endMetadata()
                .withNewSpec().withNodeName(node)
                .addNewContainer().withName("runner").withImage("ghcr.io/azure/playpen:latest")
                .addNewPort().withName("https").withContainerPort(8443).withProtocol("TCP").endPort()
                .addNewPort().withName("wireguard").withContainerPort(51820).withProtocol("UDP").withHostPort(hostPort).endPort()
                .endContainer().endSpec()
                .withNewStatus().withPhase("Running")
                .addNewContainerStatus().withName("runner").withReady(true).withNewState().withNewRunning()
                .withStartedAt("2026-01-01T00:00:00Z").endRunning().endState().endContainerStatus()
                .endStatus();
    }

    /** A control-plane pod with its kubeconfig published, ready to be handed out. */
    public static PodBuilder readyControlPlane(String version, int hostPort, String node, String kubeconfig) {
        String name = "playpen-control-plane-" + version.substring(1) + "-" + hostPort;
        return new PodBuilder().withNewMetadata().withName(name).withNamespace(NS)
                .addToLabels(PlaypenKeys.APP_NAME, PlaypenKeys.CONTROL_PLANE_APP_NAME)
                .addToLabels(PlaypenKeys.APP_COMPONENT, PlaypenKeys.CONTROL_PLANE_COMPONENT)
                .addToLabels(PlaypenKeys.RESOURCE_TYPE, "controlPlane")
                .addToLabels(PlaypenKeys.KUBERNETES_VERSION, version)
                .addToLabels(PlaypenKeys.HOST_PORT, String.valueOf(hostPort))
                .addToAnnotations(PlaypenKeys.CONTROL_PLANE_KUBECONFIG, kubeconfig)
                .addToAnnotations(PlaypenKeys.CONTROL_PLANE_GUEST_SERVER, "https://192.168.200.1:6443")
                .endMetadata()
                .withNewSpec().withNodeName(node)
                .addNewContainer().withName("k3s").withImage("rancher/k3s:" + version + "-k3s1")
                .addNewPort().withName("apiserver").withContainerPort(6443).withProtocol("TCP").withHostPort(hostPort).endPort()
                .endContainer()
                .addNewContainer().withName("helper").withImage("ghcr.io/azure/playpen:latest").endContainer()
                .endSpec()
                .withNewStatus().withPhase("Running")
                .addNewContainerStatus().withName("k3s").withReady(true).withNewState().withNewRunning().endRunning().endState().endContainerStatus()
                .addNewContainerStatus().withName("helper").withReady(true).withNewState().withNewRunning().endRunning().endState().endContainerStatus()
                .endStatus();
    }

    public static String wgKey(int seed) {
        byte[] k = new byte[32];
        for (int i = 0; i < 32; i++) {
            k[i] = (byte) (seed * 31 + i);
        }
        return Base64.getEncoder().encodeToString(k);
    }

    public Pod create(PodBuilder pod) {
        return client.pods().inNamespace(NS).resource(pod.build()).create();
    }

    /**
     * A pod cache of the runner namespace (no kind key) started on this cluster, returned once it holds every pod
     * the cluster has now; the caller closes it.
     */
    public io.unboundedcloud.playpen.kube.PodCache syncedPodCache() throws InterruptedException {
        io.unboundedcloud.playpen.kube.PodCache cache = new io.unboundedcloud.playpen.kube.PodCache(client, NS, p -> null);
        cache.start();
        int n = pods().size();
        OperatorHarness.awaitTrue(() -> cache.hasSynced() && cache.pods().size() == n, Duration.ofSeconds(60),
                "the pod cache synced with the " + n + " pods");
        return cache;
    }

    public List<Pod> pods() {
        return new ArrayList<>(client.pods().inNamespace(NS).list().getItems());
    }

    @Override
    public void close() {
        client.close();
        server.destroy();
    }
}
