package io.unboundedcloud.playpen.fakerunner;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.function.Supplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.unboundedcloud.playpen.kube.KubeClients;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * {@code playpen-operator fake-runner}: a stand-in for the playpen runner image on clusters that cannot run its VMs
 * (kind, CI), so that allocations succeed end to end. It keeps the runner's side of the operator's contract and nothing
 * more: through its own pod's ServiceAccount it publishes on its own pod what the runner publishes (runners: server
 * WireGuard key and Redfish certificate; control-plane helpers: the k3s kubeconfig and guest server), and it answers
 * the kubelet's HTTPS probes. There is no VM, no WireGuard interface and no Kubernetes API behind it.
 *
 * <p>The image starts it under the paths the operator's pod templates run: {@code /unbounded/bin/playpen-runner}
 * (runner, or {@code control-plane} for the helper) and {@code /bin/k3s} ({@code k3s server}); deploy/'s
 * {@code components/fake-runner} points {@code --runner-image} and {@code --control-plane-image} at the operator's image.
 */
public final class FakeRunner {
    private static final Logger LOG = LoggerFactory.getLogger(FakeRunner.class);
    /** The first argument that selects this mode of the jar. */
    public static final String COMMAND = "fake-runner";
    /** The runner container's {@code https} port (liveness probe) and the k3s container's {@code apiserver} port. */
    static final int RUNNER_HTTPS_PORT = 8443;
    static final int K3S_PORT = 6443;
    /** The runner pod's {@code data} emptyDir: the Redfish certificate is kept there across container restarts. */
    static final Path RUNNER_DATA_DIR = Path.of("/var/lib/playpen-runner");
    static final String USAGE = """
            Usage: playpen-operator fake-runner [control-plane | k3s server] [flags]
            A stand-in for the playpen runner image on clusters without VMs: it publishes on its own pod what the
            runner publishes and answers the kubelet's probes; it serves no VM, no WireGuard and no Kubernetes API.
              fake-runner --architecture=amd64 --wireguard-private-key-file=F --wireguard-listen-port=51820
                  runner: publishes server-wireguard-public-key and redfish-cert-pem, serves HTTPS probes on :8443
              fake-runner control-plane --kubeconfig=F --guest-server=URL --kubernetes-version=V
                  control-plane helper: waits for F, publishes control-plane-kubeconfig and control-plane-guest-server
              fake-runner k3s server --write-kubeconfig=F --write-kubeconfig-mode=0644 --tls-san=IP ...
                  k3s container: writes an admin kubeconfig to F, serves HTTPS probes on :6443
            Runner and helper need POD_NAME and POD_NAMESPACE (downward API) and the pod's ServiceAccount token.
            """;

    /** A command line that cannot be run; the message names the flag. */
    static final class UsageException extends Exception {
        private static final long serialVersionUID = 1L;

        UsageException(String message) {
            super(message);
        }
    }

    /** One parsed command line: the role and its flags. */
    record Invocation(Role role, Map<String, List<String>> flags) {
        String one(String name) {
            List<String> v = flags.get(name);
            return v == null || v.isEmpty() ? null : v.get(v.size() - 1);
        }

        List<String> all(String name) {
            return flags.getOrDefault(name, List.of());
        }
    }

    enum Role {
        RUNNER(Set.of("architecture", "wireguard-private-key-file", "wireguard-listen-port")),
        CONTROL_PLANE(Set.of("kubeconfig", "guest-server", "kubernetes-version")),
        K3S(Set.of("disable-agent", "disable", "write-kubeconfig", "write-kubeconfig-mode", "tls-san",
                "advertise-address", "bind-address"));

        final Set<String> flags;

        Role(Set<String> flags) {
            this.flags = flags;
        }
    }

    private FakeRunner() {
    }

    /** Parses the arguments after {@code fake-runner}; flags are {@code --name=value} or {@code --name value}. */
    static Invocation parse(String... args) throws UsageException {
        List<String> rest = new ArrayList<>(Arrays.asList(args));
        Role role = Role.RUNNER;
        if (!rest.isEmpty() && rest.get(0).equals("control-plane")) {
            role = Role.CONTROL_PLANE;
            rest.remove(0);
        } else if (!rest.isEmpty() && rest.get(0).equals("k3s")) {
            role = Role.K3S;
            rest.remove(0);
            if (rest.isEmpty() || !rest.get(0).equals("server")) {
                throw new UsageException("the k3s stand-in runs only as `k3s server`");
            }
            rest.remove(0);
        }
        Map<String, List<String>> flags = new LinkedHashMap<>();
        for (int i = 0; i < rest.size(); i++) {
            String a = rest.get(i);
            if (!a.startsWith("--") || a.length() == 2) {
                throw new UsageException("unexpected argument " + a);
            }
            String name = a.substring(2);
            String value;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            } else if (name.equals("disable-agent")) {
                value = "true";
            } else if (i + 1 < rest.size()) {
                value = rest.get(++i);
            } else {
                throw new UsageException("flag --" + name + " needs a value");
            }
            if (!role.flags.contains(name)) {
                throw new UsageException("unknown flag --" + name + " for the " + role.name().toLowerCase().replace('_', '-')
                        + " stand-in");
            }
            flags.computeIfAbsent(name, k -> new ArrayList<>()).add(value);
        }
        Invocation inv = new Invocation(role, flags);
        require(inv, switch (role) {
            case RUNNER -> List.of("architecture");
            case CONTROL_PLANE -> List.of("kubeconfig", "guest-server");
            case K3S -> List.of("write-kubeconfig");
        });
        if (role == Role.RUNNER && inv.one("wireguard-listen-port") != null
                && !inv.one("wireguard-listen-port").matches("\\d{1,5}")) {
            throw new UsageException("--wireguard-listen-port must be a port number, not " + inv.one("wireguard-listen-port"));
        }
        return inv;
    }

    private static void require(Invocation inv, List<String> names) throws UsageException {
        for (String n : names) {
            String v = inv.one(n);
            if (v == null || v.isBlank()) {
                throw new UsageException("flag --" + n + " is required");
            }
        }
    }

    /** What a runner publishes on its pod. */
    public static Map<String, String> runnerAnnotations(String serverPublicKey, String redfishCertificatePem) {
        Map<String, String> a = new LinkedHashMap<>();
        a.put(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, serverPublicKey);
        a.put(PlaypenKeys.REDFISH_CERT_PEM, redfishCertificatePem);
        return a;
    }

    /** What the control-plane helper publishes on its pod. */
    public static Map<String, String> controlPlaneAnnotations(String kubeconfig, String guestServer) {
        Map<String, String> a = new LinkedHashMap<>();
        a.put(PlaypenKeys.CONTROL_PLANE_KUBECONFIG, kubeconfig);
        a.put(PlaypenKeys.CONTROL_PLANE_GUEST_SERVER, guestServer);
        return a;
    }

    /**
     * The Redfish certificate a runner serves (and publishes) on its HTTPS port, for its pod and the tunnel address:
     * the one kept in {@code dataDir} by an earlier start of this pod's container, else a new one, kept there when the
     * folder is writable (so a restarted container publishes the same certificate and writes nothing).
     */
    static Pki.Issued redfishCertificate(String podName, Path dataDir) {
        Path crt = dataDir.resolve("redfish.crt");
        Path key = dataDir.resolve("redfish.key");
        try {
            if (Files.isRegularFile(crt) && Files.isRegularFile(key)) {
                List<X509Certificate> kept = Pki.parseCertificates(Files.readString(crt, StandardCharsets.US_ASCII));
                if (!kept.isEmpty()) {
                    return new Pki.Issued(kept.get(0), Pki.parsePrivateKey(Files.readString(key, StandardCharsets.US_ASCII)));
                }
            }
        } catch (IOException | IllegalArgumentException e) {
            LOG.warn("ignoring the Redfish certificate kept in {}: {}", dataDir, e.getMessage());
        }
        Pki.Issued fresh = Pki.selfSigned(new Pki.Subject(podName, List.of(), List.of(podName, "localhost"),
                List.of("10.88.0.1", "127.0.0.1")), Pki.Usage.SERVER, Instant.now().minus(1, ChronoUnit.MINUTES),
                Duration.ofDays(365));
        try {
            WireGuardKey.writePrivate(key, fresh.privateKeyPem());
            Files.writeString(crt, fresh.certificatePem(), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            LOG.warn("cannot keep the Redfish certificate in {} ({}): a restart publishes a new one", dataDir, e.getMessage());
        }
        return fresh;
    }

    /**
     * Runs the stand-in until the process is stopped; returns only on failure, with the exit code (2: bad command
     * line, 1: could not start or the API server refused its writes for good).
     */
    public static int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err)
            throws InterruptedException {
        if (Arrays.asList(args).contains("--help") || Arrays.asList(args).contains("-h")) {
            out.print(USAGE);
            out.flush();
            return 0;
        }
        Invocation inv;
        try {
            inv = parse(args);
        } catch (UsageException e) {
            err.println("playpen-operator fake-runner: " + e.getMessage());
            return 2;
        }
        try {
            start(inv, env, new Places(RUNNER_HTTPS_PORT, K3S_PORT, RUNNER_DATA_DIR),
                    () -> KubeClients.create((String) null));
        } catch (OwnPodPublisher.Refused e) {
            LOG.error("{}", e.getMessage());
            return 1;
        } catch (IOException | IllegalArgumentException | IllegalStateException e) {
            err.println("playpen-operator fake-runner: " + e.getMessage());
            return 1;
        }
        new CountDownLatch(1).await(); // until SIGTERM
        return 0;
    }

    /** The body of the one write the runner and the helper make: a JSON merge PATCH of their own pod. */
    public static String mergePatch(Map<String, String> annotations) {
        return OwnPodPublisher.mergePatch(annotations);
    }

    /** Where the stand-ins listen and keep state: the pod templates' ports and volume in a pod, free ports in tests. */
    record Places(int runnerPort, int k3sPort, Path runnerDataDir) {
    }

    /**
     * Starts the stand-in for {@code inv} and returns once it has published what it publishes (runner, helper) or
     * written its kubeconfig (k3s); closing the result stops its HTTPS endpoint.
     */
    static AutoCloseable start(Invocation inv, Map<String, String> env, Places places, Supplier<KubernetesClient> clients)
            throws IOException, OwnPodPublisher.Refused, InterruptedException {
        return switch (inv.role()) {
            case RUNNER -> runner(inv, env, places, clients);
            case CONTROL_PLANE -> controlPlaneHelper(inv, env, clients);
            case K3S -> k3s(inv, places.k3sPort());
        };
    }

    private static String requireEnv(Map<String, String> env, String name) {
        String v = env.get(name);
        if (v == null || v.isBlank()) {
            throw new IllegalStateException(name + " is not set: the pod template passes it from the downward API");
        }
        return v;
    }

    private static AutoCloseable runner(Invocation inv, Map<String, String> env, Places places,
            Supplier<KubernetesClient> clients) throws IOException, OwnPodPublisher.Refused, InterruptedException {
        String pod = requireEnv(env, "POD_NAME");
        String namespace = requireEnv(env, "POD_NAMESPACE");
        String keyFile = inv.one("wireguard-private-key-file");
        WireGuardKey key = WireGuardKey.loadOrCreate(keyFile == null || keyFile.isBlank() ? null : Path.of(keyFile));
        Pki.Issued redfish = redfishCertificate(pod, places.runnerDataDir());
        // probes first: the liveness probe starts 10 s after the container, whatever the API server does meanwhile
        ProbeServer probes = new ProbeServer("0.0.0.0", places.runnerPort(), redfish);
        LOG.info("fake runner for pod {}/{} ({}): HTTPS probes on :{}", namespace, pod, inv.one("architecture"),
                probes.port());
        try (KubernetesClient client = clients.get()) {
            OwnPodPublisher.Outcome o = new OwnPodPublisher(client, namespace, pod)
                    .publish(runnerAnnotations(key.publicKeyBase64(), redfish.certificatePem()));
            LOG.info("fake runner: server WireGuard key and Redfish certificate {} on pod {}/{}",
                    o == OwnPodPublisher.Outcome.PATCHED ? "published" : "already published", namespace, pod);
        } catch (OwnPodPublisher.Refused | RuntimeException e) {
            probes.close();
            throw e;
        }
        return probes;
    }

    private static AutoCloseable controlPlaneHelper(Invocation inv, Map<String, String> env,
            Supplier<KubernetesClient> clients) throws IOException, OwnPodPublisher.Refused, InterruptedException {
        String pod = requireEnv(env, "POD_NAME");
        String namespace = requireEnv(env, "POD_NAMESPACE");
        Path kubeconfig = Path.of(inv.one("kubeconfig"));
        LOG.info("fake control-plane helper for pod {}/{} ({}): waiting for {}", namespace, pod,
                inv.one("kubernetes-version"), kubeconfig);
        String content = awaitFile(kubeconfig);
        try (KubernetesClient client = clients.get()) {
            OwnPodPublisher.Outcome o = new OwnPodPublisher(client, namespace, pod)
                    .publish(controlPlaneAnnotations(content, inv.one("guest-server")));
            LOG.info("fake control-plane helper: kubeconfig and guest server {} on pod {}/{}",
                    o == OwnPodPublisher.Outcome.PATCHED ? "published" : "already published", namespace, pod);
        }
        return () -> { };
    }

    /** The file's content once it exists and is not empty (k3s writes it some time after the pod starts). */
    static String awaitFile(Path file) throws IOException, InterruptedException {
        long lastNote = System.nanoTime();
        while (true) {
            if (Files.isRegularFile(file)) {
                String content = Files.readString(file, StandardCharsets.UTF_8);
                if (!content.isBlank()) {
                    return content;
                }
            }
            if (System.nanoTime() - lastNote > Duration.ofMinutes(1).toNanos()) {
                LOG.info("still waiting for {}", file);
                lastNote = System.nanoTime();
            }
            Thread.sleep(250);
        }
    }

    private static AutoCloseable k3s(Invocation inv, int port) throws IOException {
        StandInK3s.Flags flags = new StandInK3s.Flags(Path.of(inv.one("write-kubeconfig")),
                inv.one("write-kubeconfig-mode"), inv.all("tls-san"), inv.one("advertise-address"),
                inv.one("bind-address"));
        StandInK3s k3s = StandInK3s.start(flags, port);
        LOG.info("stand-in k3s: admin kubeconfig written to {}, HTTPS probes on :{} (no Kubernetes API is served)",
                flags.writeKubeconfig(), k3s.port());
        return k3s;
    }
}
