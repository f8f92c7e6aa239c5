package io.unboundedcloud.playpen.dev;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Base64;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import java.util.logging.Level;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceList;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.dsl.NonNamespaceOperation;
import io.fabric8.kubernetes.client.dsl.Resource;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.unboundedcloud.playpen.config.PortInUse;
import io.fabric8.mockwebserver.ServerRequest;
import io.fabric8.mockwebserver.ServerResponse;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * The embedded simulated cluster behind {@code --dev}: a fabric8 mock API server in CRUD mode with discovery, a
 * SubjectAccessReview authorizer, two nodes, the front-proxy trust ConfigMap and the playpen APIService; a simulated
 * kubelet that brings managed pods to Running/Ready; and an aggregator stand-in ("shim") that lets kubectl reach the
 * operator with client certificates. Writes kubeconfigs, certificates and {@code endpoints.env} into the dev dir.
 * Never used in production paths.
 */
public final class DevCluster implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DevCluster.class);
    /** The mock web server logs every request at INFO through java.util.logging; held strongly so the level sticks. */
    private static final java.util.logging.Logger MOCK_WEB_SERVER_LOG = java.util.logging.Logger.getLogger("io.fabric8.mockwebserver");

    static {
        MOCK_WEB_SERVER_LOG.setLevel(Level.WARNING);
    }

    /** The group the dev authorizer allows (besides system:masters); dev-user is in it, dev-denied is not. */
    public static final String USERS_GROUP = "playpen-users";
    public static final String DEV_USER = "dev-user";
    /** The group the dev authorizer allows on allocs/all (everyone's allocations); dev-admin is in it. */
    public static final String ADMINS_GROUP = "playpen-admins";
    public static final String ADMIN_USER = "dev-admin";
    public static final String DENIED_USER = "dev-denied";
    public static final String NODE_AMD64 = "dev-amd64";
    public static final String NODE_ARM64 = "dev-arm64";
    public static final String AUTH_CONFIGMAP_NAMESPACE = "kube-system";
    public static final String AUTH_CONFIGMAP_NAME = "extension-apiserver-authentication";
    public static final String FRONT_PROXY_CLIENT_CN = "front-proxy-client";

    static final ResourceDefinitionContext API_SERVICES = new ResourceDefinitionContext.Builder()
            .withGroup("apiregistration.k8s.io").withVersion("v1").withKind("APIService").withPlural("apiservices")
            .withNamespaced(false).build();

    /** Where the shim looks for operators when none runs in the dev process and no address is given. */
    static final List<String> DEFAULT_REPLICA_ADDRS = java.util.stream.IntStream.rangeClosed(9441, 9448)
            .mapToObj(p -> "127.0.0.1:" + p).toList();

    private static final List<SimulatedKubelet.DevNode> NODES = List.of(
            new SimulatedKubelet.DevNode(NODE_AMD64, "amd64", "10.0.0.10", "203.0.113.10"),
            new SimulatedKubelet.DevNode(NODE_ARM64, "arm64", "10.0.0.11", "203.0.113.11"));

    /** What to start and where; every setter returns this. */
    public static final class Options {
        private Path devDir = Path.of("target/dev");
        private int apiPort;
        private int shimPort;
        /** The operator running in this process, or null when there is none (--dev-operators=0). */
        private Supplier<URI> operatorUrl = () -> URI.create("https://127.0.0.1:8443");
        private List<URI> moreReplicas = List.of();
        private String runnerNamespace = "playpen";
        private String operatorNamespace = "playpen";
        private String serviceName = "playpen-operator";
        private Duration podReadyDelay = Duration.ofMillis(200);
        private Map<String, SimulatedKubelet.Fault> imageFaults = Map.of();

        public static Options defaults() {
            return new Options();
        }

        /** Dev dir, ports, namespaces, service name and the operator's listen port from the operator's flags. */
        public static Options fromConfig(OperatorConfig config) {
            Options o = new Options().devDir(Path.of(config.devDir())).apiPort(config.devApiPort())
                    .shimPort(config.devShimPort()).runnerNamespace(config.runnerNamespace())
                    .operatorNamespace(config.namespace()).serviceName(config.serviceName())
                    .imageFaults(SimulatedKubelet.Fault.parse(config.devImageFaults()));
            boolean inProcess = config.devOperators() == 1 && config.devReplicas() == 0;
            if (!inProcess) {
                o.operatorUrl = null;
            } else if (config.listenPort() > 0) {
                o.operatorPort(config.listenPort());
            }
            List<String> addrs = config.devOperatorAddrs();
            if (addrs.isEmpty() && config.devReplicas() > 0) {
                // the playground starts these replicas itself: free ports (below the ephemeral range, see FreePorts),
                // printed and in endpoints.env
                addrs = new java.util.ArrayList<>();
                for (int i = 0; i < config.devReplicas(); i++) {
                    addrs.add("127.0.0.1:" + FreePorts.pick());
                }
            } else if (addrs.isEmpty() && !inProcess) {
                addrs = DEFAULT_REPLICA_ADDRS;
            }
            o.moreReplicas(addrs.stream().map(a -> URI.create("https://" + a)).toList());
            return o;
        }

        public Options devDir(Path dir) {
            this.devDir = Objects.requireNonNull(dir);
            return this;
        }

        /** Port of the simulated API server (0 = a free port). */
        public Options apiPort(int port) {
            this.apiPort = port;
            return this;
        }

        /** Port of the aggregator shim kubectl talks to (0 = a free port). */
        public Options shimPort(int port) {
            this.shimPort = port;
            return this;
        }

        /** The operator serves HTTPS on this loopback port. */
        public Options operatorPort(int port) {
            URI uri = URI.create("https://127.0.0.1:" + port);
            this.operatorUrl = () -> uri;
            return this;
        }

        /** The operator's base URL, asked for at every forward (for an operator that picks its port after we start). */
        public Options operatorUrl(Supplier<URI> url) {
            this.operatorUrl = Objects.requireNonNull(url);
            return this;
        }

        /** No operator in this process: kubectl reaches only the {@link #moreReplicas} started separately. */
        public Options noOperatorInProcess() {
            this.operatorUrl = null;
            return this;
        }

        /** Operator replicas in other processes (base URLs); the shim spreads requests over the ready ones. */
        public Options moreReplicas(List<URI> urls) {
            this.moreReplicas = List.copyOf(urls);
            return this;
        }

        public Options runnerNamespace(String ns) {
            this.runnerNamespace = Objects.requireNonNull(ns);
            return this;
        }

        /** Namespace of the operator's Service (APIService spec.service.namespace). */
        public Options operatorNamespace(String ns) {
            this.operatorNamespace = Objects.requireNonNull(ns);
            return this;
        }

        /** Name of the operator's Service (APIService spec.service.name). */
        public Options serviceName(String name) {
            this.serviceName = Objects.requireNonNull(name);
            return this;
        }

        /** Images the simulated kubelet fails: never ready, crash looping or evicted (--dev-image-faults). */
        public Options imageFaults(Map<String, SimulatedKubelet.Fault> faults) {
            this.imageFaults = Map.copyOf(faults);
            return this;
        }

        /** How long the simulated kubelet takes to start a pod. */
        public Options podReadyDelay(Duration delay) {
            this.podReadyDelay = Objects.requireNonNull(delay);
            return this;
        }
    }

    private final Options options;
    private final Pki.Issued frontProxyCa;
    private final Pki.Issued frontProxyClient;
    private final Pki.Issued servingCa;
    private final Pki.Issued clientCa;
    private KubernetesMockServer server;
    private KubernetesClient client;
    private SimulatedKubelet kubelet;
    private AggregatorShim shim;
    private URI kubeApiUrl;
    private URI shimUrl;
    private String sampleIdempotencyKey;
    private DevDirLock lock;
    private final AtomicBoolean closed = new AtomicBoolean();

    private DevCluster(Options options) {
        this.options = options;
        Instant notBefore = Instant.now().minus(1, ChronoUnit.HOURS);
        Duration year = Duration.ofDays(365);
        frontProxyCa = Pki.selfSigned(Pki.Subject.cn("playpen-dev-front-proxy-ca"), Pki.Usage.CA, notBefore, year);
        frontProxyClient = Pki.issue(frontProxyCa, Pki.Subject.cn(FRONT_PROXY_CLIENT_CN), Pki.Usage.CLIENT, notBefore, year);
        servingCa = Pki.selfSigned(Pki.Subject.cn("playpen-dev-serving-ca"), Pki.Usage.CA, notBefore, year);
        clientCa = Pki.selfSigned(Pki.Subject.cn("playpen-dev-client-ca"), Pki.Usage.CA, notBefore, year);
    }

    /** Starts everything and writes the dev dir; on failure whatever was started is closed again. */
    public static DevCluster start(Options options) throws IOException {
        DevCluster cluster = new DevCluster(options);
        try {
            cluster.startAll();
            return cluster;
        } catch (IOException | RuntimeException e) {
            cluster.close();
            throw e;
        }
    }

    private void startAll() throws IOException {
        // one playground per directory: a second one would take over the files the first one's users rely on
        lock = DevDirLock.acquire(options.devDir);
        // endpoints.env means "ready": a file left by an earlier run must not announce this one
        Files.deleteIfExists(options.devDir.resolve("endpoints.env"));
        InetAddress loopback = InetAddress.getByName("127.0.0.1");

        Map<ServerRequest, Queue<ServerResponse>> expectations = new HashMap<>();
        server = new KubernetesMockServer(new Context(Serialization.jsonMapper()), new MockWebServer(), expectations,
                new DevApiDispatcher(expectations), false);
        PortInUse.listening("--dev-api-port", "127.0.0.1", options.apiPort, true, () -> {
            server.init(loopback, options.apiPort);
            return server;
        });
        kubeApiUrl = URI.create("http://127.0.0.1:" + server.getPort());

        Config config = new ConfigBuilder(Config.empty())
                .withMasterUrl(kubeApiUrl.toString())
                .withNamespace(options.runnerNamespace)
                .withHttp2Disable(true)
                .withMaxConcurrentRequests(128)
                .withMaxConcurrentRequestsPerHost(128)
                .build();
        client = new KubernetesClientBuilder().withConfig(config).build();
        seed();

        Pki.Issued controlPlaneCa = Pki.selfSigned(Pki.Subject.cn("k3s-server-ca"), Pki.Usage.CA,
                Instant.now().minus(1, ChronoUnit.HOURS), Duration.ofDays(3650));
        kubelet = new SimulatedKubelet(client, options.runnerNamespace, options.podReadyDelay, NODES, controlPlaneCa,
                options.imageFaults);
        kubelet.start();

        Instant notBefore = Instant.now().minus(1, ChronoUnit.HOURS);
        Pki.Issued serving = Pki.issue(servingCa, new Pki.Subject("playpen-dev-apiserver", List.of(),
                List.of("localhost"), List.of("127.0.0.1")), Pki.Usage.SERVER, notBefore, Duration.ofDays(365));
        shim = PortInUse.listening("--dev-shim-port", "127.0.0.1", options.shimPort, true,
                () -> new AggregatorShim(options.shimPort, serving, servingCa, clientCa.certificate(), kubeApiUrl,
                        this::replicas, this::registration, frontProxyClient, this::recordAvailability));
        shimUrl = URI.create("https://127.0.0.1:" + shim.port());
        writeFiles();
        LOG.info("dev cluster up: API {} (plain HTTP), kubectl endpoint {} , operator replicas expected at {}, files in {}",
                kubeApiUrl, shimUrl, replicas(), options.devDir);
    }

    private void seed() {
        Set<String> namespaces = new LinkedHashSet<>(List.of("default", AUTH_CONFIGMAP_NAMESPACE,
                options.operatorNamespace, options.runnerNamespace));
        for (String ns : namespaces) {
            client.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName(ns).endMetadata()
                    .withNewStatus().withPhase("Active").endStatus().build()).create();
        }
        for (SimulatedKubelet.DevNode n : NODES) {
            client.nodes().resource(new NodeBuilder()
                    .withNewMetadata().withName(n.name())
                    .addToLabels("kubernetes.io/arch", n.arch())
                    .addToLabels("kubernetes.io/os", "linux")
                    .addToLabels("kubernetes.io/hostname", n.name())
                    .endMetadata()
                    .withNewStatus()
                    .addNewAddress().withType("InternalIP").withAddress(n.internalIp()).endAddress()
                    .addNewAddress().withType("ExternalIP").withAddress(n.externalIp()).endAddress()
                    .addNewAddress().withType("Hostname").withAddress(n.name()).endAddress()
                    .addNewCondition().withType("Ready").withStatus("True").withReason("KubeletReady")
                    .withMessage("kubelet is posting ready status (simulated)")
                    .withLastTransitionTime(Instant.now().truncatedTo(ChronoUnit.SECONDS).toString()).endCondition()
                    .addToCapacity("cpu", new Quantity("16")).addToCapacity("memory", new Quantity("64Gi"))
                    .addToCapacity("pods", new Quantity("110"))
                    .addToAllocatable("cpu", new Quantity("16")).addToAllocatable("memory", new Quantity("64Gi"))
                    .addToAllocatable("pods", new Quantity("110"))
                    .withNewNodeInfo().withArchitecture(n.arch()).withOperatingSystem("linux")
                    .withKubeletVersion("v1.32.0").withContainerRuntimeVersion("containerd://2.0.0")
                    .withOsImage("playpen dev (simulated)").endNodeInfo()
                    .endStatus().build()).create();
        }
        client.configMaps().inNamespace(AUTH_CONFIGMAP_NAMESPACE).resource(new ConfigMapBuilder()
                .withNewMetadata().withName(AUTH_CONFIGMAP_NAME).withNamespace(AUTH_CONFIGMAP_NAMESPACE).endMetadata()
                .addToData("client-ca-file", clientCa.certificatePem())
                .addToData("requestheader-client-ca-file", frontProxyCa.certificatePem())
                .addToData("requestheader-allowed-names", "[\"" + FRONT_PROXY_CLIENT_CN + "\"]")
                .addToData("requestheader-username-headers", "[\"X-Remote-User\"]")
                .addToData("requestheader-group-headers", "[\"X-Remote-Group\"]")
                .addToData("requestheader-extra-headers-prefix", "[\"X-Remote-Extra-\"]")
                .build()).create();
        Map<String, Object> spec = new LinkedHashMap<>();
        spec.put("service", Map.of("name", options.serviceName, "namespace", options.operatorNamespace, "port", 443));
        spec.put("group", PlaypenKeys.GROUP);
        spec.put("version", PlaypenKeys.VERSION);
        spec.put("insecureSkipTLSVerify", false);
        spec.put("groupPriorityMinimum", 1000);
        spec.put("versionPriority", 100);
        spec.put("caBundle", "");
        apiServices().resource(new GenericKubernetesResourceBuilder()
                .withApiVersion("apiregistration.k8s.io/v1").withKind("APIService")
                .withNewMetadata().withName(PlaypenKeys.API_SERVICE).endMetadata()
                .addToAdditionalProperties("spec", spec)
                .build()).create();
    }

    private NonNamespaceOperation<GenericKubernetesResource, GenericKubernetesResourceList, Resource<GenericKubernetesResource>> apiServices() {
        return client.genericKubernetesResources(API_SERVICES);
    }

    /**
     * The APIService's Available condition, as kube-apiserver's availability controller keeps it: True once a replica
     * answers /readyz through the caBundle, False with the reason otherwise.
     */
    private void recordAvailability(boolean available, String reason, String message) {
        Map<String, Object> condition = new LinkedHashMap<>();
        condition.put("type", "Available");
        condition.put("status", available ? "True" : "False");
        condition.put("lastTransitionTime", Instant.now().truncatedTo(ChronoUnit.SECONDS).toString());
        condition.put("reason", reason);
        condition.put("message", message);
        // a JSON patch replaces the whole status (the simulated API server merges lists in a merge patch)
        apiServices().withName(PlaypenKeys.API_SERVICE).patch(
                io.fabric8.kubernetes.client.dsl.base.PatchContext.of(io.fabric8.kubernetes.client.dsl.base.PatchType.JSON),
                Serialization.asJson(List.of(Map.of("op", "add", "path", "/status",
                        "value", Map.of("conditions", List.of(condition))))));
    }

    /** Whether the APIService's Available condition is True (what {@code kubectl wait --for=condition=Available} waits for). */
    public boolean available() {
        GenericKubernetesResource api = apiServices().withName(PlaypenKeys.API_SERVICE).get();
        if (api == null || !(api.getAdditionalProperties().get("status") instanceof Map<?, ?> status)
                || !(status.get("conditions") instanceof List<?> conditions)) {
            return false;
        }
        return conditions.stream().anyMatch(c -> c instanceof Map<?, ?> m && "Available".equals(m.get("type"))
                && "True".equals(m.get("status")));
    }

    /**
     * Whether every pool that should hold pods has at least one idle pod the simulated kubelet has started (Running,
     * annotations published), so the sample requests can be served: runners per architecture with a count above 0,
     * control planes per version when their count is above 0.
     */
    public boolean poolsWarm(int amd64, int arm64, int controlPlanes, List<String> versions) {
        List<io.fabric8.kubernetes.api.model.Pod> pods = client.pods().inNamespace(options.runnerNamespace).list().getItems();
        java.util.function.Predicate<io.fabric8.kubernetes.api.model.Pod> started = p -> p.getStatus() != null
                && "Running".equals(p.getStatus().getPhase())
                && io.unboundedcloud.playpen.model.ManagedPods.isIdle(p);
        java.util.function.BiPredicate<io.unboundedcloud.playpen.model.ResourceType, java.util.function.Predicate<io.fabric8.kubernetes.api.model.Pod>> any =
                (type, which) -> pods.stream().anyMatch(p -> io.unboundedcloud.playpen.model.ManagedPods.isKind(p, type)
                        && which.test(p) && started.test(p));
        io.unboundedcloud.playpen.model.ResourceType runner = io.unboundedcloud.playpen.model.ResourceType.RUNNER;
        if (amd64 > 0 && !any.test(runner, p -> "amd64".equals(io.unboundedcloud.playpen.model.ManagedPods.architecture(p)))) {
            return false;
        }
        if (arm64 > 0 && !any.test(runner, p -> "arm64".equals(io.unboundedcloud.playpen.model.ManagedPods.architecture(p)))) {
            return false;
        }
        if (controlPlanes > 0) {
            for (String v : versions) {
                // in label form, as the pods carry it: v1.33.0+k3s1 is v1.33.0-k3s1 there
                String version = io.unboundedcloud.playpen.model.PodTemplates.kubernetesVersionLabel(v);
                if (!any.test(io.unboundedcloud.playpen.model.ResourceType.CONTROL_PLANE,
                        p -> labelled(version, io.unboundedcloud.playpen.model.ManagedPods.kubernetesVersion(p)))) {
                    return false;
                }
            }
        }
        return true;
    }

    /** Whether a pod's version label (blank: none) is {@code version} in label form. */
    private static boolean labelled(String version, String podVersion) {
        return !podVersion.isBlank()
                && version.equals(io.unboundedcloud.playpen.model.PodTemplates.kubernetesVersionLabel(podVersion));
    }

    /** The aggregator stand-in kubectl talks to. */
    AggregatorShim shim() {
        return shim;
    }

    /** True once the operator has published its caBundle: from then on kubectl reaches it through the shim. */
    public boolean registered() {
        AggregatorShim.Registration reg = registration();
        return reg != null && !reg.caBundlePem().isBlank();
    }

    /** The operator's registration as the shim sees it now: caBundle (PEM) and the service host name; null if absent. */
    private AggregatorShim.Registration registration() {
        GenericKubernetesResource api = apiServices().withName(PlaypenKeys.API_SERVICE).get();
        if (api == null || !(api.getAdditionalProperties().get("spec") instanceof Map<?, ?> spec)) {
            return null;
        }
        String caBundle = spec.get("caBundle") instanceof String s ? s.trim() : "";
        String pem = "";
        if (caBundle.contains("-----BEGIN")) {
            pem = caBundle;
        } else if (!caBundle.isEmpty()) {
            try {
                pem = new String(Base64.getMimeDecoder().decode(caBundle), StandardCharsets.US_ASCII);
            } catch (IllegalArgumentException e) {
                pem = "";
            }
        }
        String svc = options.serviceName;
        String ns = options.operatorNamespace;
        if (spec.get("service") instanceof Map<?, ?> service) {
            svc = service.get("name") instanceof String s ? s : svc;
            ns = service.get("namespace") instanceof String s ? s : ns;
        }
        return new AggregatorShim.Registration(pem, svc + "." + ns + ".svc");
    }

    private void writeFiles() throws IOException {
        String servingCaPem = servingCa.certificatePem();
        writePrivate("kubeconfig", Kubeconfigs.withClientCertificate("playpen-dev", shimUrl.toString(), servingCaPem,
                DEV_USER, issueUser(DEV_USER, List.of(USERS_GROUP)), options.runnerNamespace));
        writePrivate("kubeconfig-denied", Kubeconfigs.withClientCertificate("playpen-dev", shimUrl.toString(),
                servingCaPem, DENIED_USER, issueUser(DENIED_USER, List.of("dev-others")), options.runnerNamespace));
        writePrivate("kubeconfig-admin", Kubeconfigs.withClientCertificate("playpen-dev", shimUrl.toString(), servingCaPem,
                ADMIN_USER, issueUser(ADMIN_USER, List.of(USERS_GROUP, ADMINS_GROUP)), options.runnerNamespace));
        writePrivate("operator-kubeconfig", Kubeconfigs.anonymous("playpen-dev-api", kubeApiUrl.toString(),
                options.operatorNamespace));
        write("front-proxy-ca.crt", frontProxyCa.certificatePem());
        write("front-proxy-client.crt", frontProxyClient.certificatePem());
        writePrivate("front-proxy-client.key", frontProxyClient.privateKeyPem());
        // the playground's own throwaway CA: tests issue bad front-proxy certificates with it (expired, wrong CN, ...)
        writePrivate("front-proxy-ca.key", frontProxyCa.privateKeyPem());
        write("serving-ca.crt", servingCaPem);
        byte[] b = new byte[8];
        ThreadLocalRandom.current().nextBytes(b);
        sampleIdempotencyKey = "dev-" + HexFormat.of().formatHex(b);
        write("alloc-request.json", "{\"idempotencyKey\":\"" + sampleIdempotencyKey + "\",\"resourceType\":\"runner\","
                + "\"architecture\":\"amd64\",\"wireGuardPublicKey\":\"" + WireGuardKeys.newPublicKey() + "\"}\n");
        write("dealloc-request.json", "{\"idempotencyKey\":\"" + sampleIdempotencyKey + "\"}\n");
        write("alloc-arm64-request.json", "{\"idempotencyKey\":\"" + sampleIdempotencyKey + "-arm64\","
                + "\"resourceType\":\"runner\",\"architecture\":\"arm64\",\"wireGuardPublicKey\":\""
                + WireGuardKeys.newPublicKey() + "\"}\n");
        write("dealloc-arm64-request.json", "{\"idempotencyKey\":\"" + sampleIdempotencyKey + "-arm64\"}\n");
        write("alloc-control-plane-request.json", "{\"idempotencyKey\":\"" + sampleIdempotencyKey + "-cp\","
                + "\"resourceType\":\"controlPlane\"}\n");
        write("dealloc-control-plane-request.json", "{\"idempotencyKey\":\"" + sampleIdempotencyKey + "-cp\"}\n");
    }

    /** Every operator replica the shim may forward to: the one in this process (if any) first. */
    public List<URI> replicas() {
        List<URI> all = new java.util.ArrayList<>();
        if (options.operatorUrl != null) {
            all.add(options.operatorUrl.get());
        }
        all.addAll(options.moreReplicas);
        return all;
    }

    /** The replicas whose {@code /readyz} answered 2xx at the shim's last probe (kubectl reaches only these). */
    public List<URI> readyReplicas() {
        return shim.readyReplicas();
    }

    /**
     * Writes {@code endpoints.env} complete and atomically (temp file, then rename), so whoever waits for it never reads
     * half a file; call it only once the playground is ready. {@code extra} lines go after the cluster's own.
     */
    public void writeEndpointsEnv(Map<String, String> extra) throws IOException {
        StringBuilder env = new StringBuilder();
        env.append("KUBE_API_URL=").append(kubeApiUrl).append('\n');
        env.append("SHIM_URL=").append(shimUrl).append('\n');
        if (options.operatorUrl != null) {
            env.append("OPERATOR_URL=").append(options.operatorUrl.get().toString().replaceAll("/+$", "")).append('\n');
        }
        env.append("OPERATOR_REPLICAS=").append(String.join(",", replicas().stream().map(URI::toString).toList()))
                .append('\n');
        env.append("OPERATOR_KUBECONFIG=").append(operatorKubeconfigPath().toAbsolutePath()).append('\n');
        extra.forEach((k, v) -> env.append(k).append('=').append(v).append('\n'));
        Path tmp = Files.createTempFile(options.devDir, ".endpoints", ".tmp");
        try {
            Files.writeString(tmp, env, StandardCharsets.UTF_8);
            Files.move(tmp, options.devDir.resolve("endpoints.env"), java.nio.file.StandardCopyOption.ATOMIC_MOVE,
                    java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    private void write(String name, String content) throws IOException {
        Files.writeString(options.devDir.resolve(name), content, StandardCharsets.UTF_8);
    }

    /** Files holding private keys: owner-only where the file system allows it. */
    private void writePrivate(String name, String content) throws IOException {
        writePrivate(options.devDir.resolve(name), content);
    }

    /** A file readable and writable by its owner only, where the file system allows it, holding {@code content}. */
    static void writePrivate(Path file, String content) throws IOException {
        Files.deleteIfExists(file);
        try {
            Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } catch (UnsupportedOperationException e) {
            Files.createFile(file);
        }
        Files.writeString(file, content, StandardCharsets.UTF_8);
    }

    /** A kubectl user certificate from the dev client CA: CN = user, O = each group. */
    public Pki.Issued issueUser(String user, List<String> groups) {
        return Pki.issue(clientCa, new Pki.Subject(user, groups, List.of(), List.of()), Pki.Usage.CLIENT,
                Instant.now().minus(1, ChronoUnit.HOURS), Duration.ofDays(365));
    }

    /** The kubectl commands to try: alloc, the same alloc again (idempotent replay), list, dealloc, the pods. */
    public String tryItCommands(List<String> more) {
        String dir = options.devDir.toString();
        String kubeconfig = (options.devDir.isAbsolute() ? "" : "$PWD/") + dir + "/kubeconfig";
        String base = "/apis/" + PlaypenKeys.GROUP_VERSION;
        StringBuilder sb = new StringBuilder();
        sb.append("Try it in another terminal (you are ").append(DEV_USER).append(", group ").append(USERS_GROUP)
                .append("):\n")
                .append("  export KUBECONFIG=").append(kubeconfig).append('\n')
                .append("  kubectl create --raw ").append(base).append("/allocs -f ").append(dir).append("/alloc-request.json\n")
                .append("  kubectl create --raw ").append(base).append("/allocs -f ").append(dir)
                .append("/alloc-request.json   # same key again: same answer\n")
                .append("  kubectl get allocs -o wide\n")
                .append("  kubectl create --raw ").append(base).append("/deallocs -f ").append(dir).append("/dealloc-request.json\n")
                .append("  kubectl get pods -n ").append(options.runnerNamespace).append(" -o wide\n")
                .append("More requests: ").append(dir).append("/alloc-arm64-request.json, ").append(dir)
                .append("/alloc-control-plane-request.json (and their dealloc-*.json).\n")
                .append("A runner request of your own needs the public key of your WireGuard peer:\n")
                .append("  wg genkey | wg pubkey\n")
                .append("  openssl genpkey -algorithm x25519 | openssl pkey -pubout -outform DER | tail -c 32 | base64"
                        + "   # without WireGuard tools\n");
        more.forEach(line -> sb.append(line).append('\n'));
        return sb.toString();
    }

    public String tryItCommands() {
        return tryItCommands(List.of());
    }

    public void printTryIt(PrintStream out, List<String> more) {
        out.print(tryItCommands(more));
        out.flush();
    }

    public void printTryIt(PrintStream out) {
        printTryIt(out, List.of());
    }

    /** Plain-HTTP URL of the simulated API server (no authentication). */
    public URI kubeApiUrl() {
        return kubeApiUrl;
    }

    /** HTTPS URL of the aggregator shim, the server in {@code kubeconfig}. */
    public URI shimUrl() {
        return shimUrl;
    }

    /** A client of the simulated API server (shared; closed with the cluster). */
    public KubernetesClient client() {
        return client;
    }

    public Path devDir() {
        return options.devDir;
    }

    public Path kubeconfigPath() {
        return options.devDir.resolve("kubeconfig");
    }

    public Path adminKubeconfigPath() {
        return options.devDir.resolve("kubeconfig-admin");
    }

    public Path deniedKubeconfigPath() {
        return options.devDir.resolve("kubeconfig-denied");
    }

    /** Kubeconfig for the operator process (its --kubeconfig): the simulated API over plain HTTP, no credentials. */
    public Path operatorKubeconfigPath() {
        return options.devDir.resolve("operator-kubeconfig");
    }

    public String sampleIdempotencyKey() {
        return sampleIdempotencyKey;
    }

    /** The CA in {@code requestheader-client-ca-file}. */
    public Pki.Issued frontProxyCa() {
        return frontProxyCa;
    }

    /** The CA that signed the shim's serving certificate (kubectl trusts it). */
    public Pki.Issued servingCa() {
        return servingCa;
    }

    /**
     * Stops the shim, the kubelet, the client and the mock API, and removes {@code endpoints.env} (only when this
     * cluster holds the dev dir); safe to call more than once.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        if (shim != null) {
            shim.close();
        }
        if (kubelet != null) {
            kubelet.close();
        }
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.destroy();
        }
        if (lock != null) {
            // endpoints.env means "ready": a stopped playground must not announce itself to the next run's scripts
            try {
                Files.deleteIfExists(options.devDir.resolve("endpoints.env"));
            } catch (IOException e) {
                LOG.debug("dev cluster: cannot remove endpoints.env", e);
            }
            lock.close();
        }
    }
}
