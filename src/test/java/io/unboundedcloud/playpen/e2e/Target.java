package io.unboundedcloud.playpen.e2e;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * What the suite runs against, and as whom. Either a cluster where the operator is installed ({@code
 * -De2e.kubeconfig=PATH}, an admin's kubeconfig: users are impersonated and bound to {@code playpen-user} for the run)
 * or a playground ({@code endpoints.env} beside the kubeconfig: its {@code kubeconfig}, {@code kubeconfig-admin} and
 * {@code kubeconfig-denied} are the three identities), started by the suite itself when no kubeconfig is given.
 * Properties (all optional): e2e.target=cluster|playground, e2e.userKubeconfig, e2e.adminKubeconfig,
 * e2e.deniedKubeconfig, e2e.user, e2e.userGroup, e2e.deniedUser, e2e.kubectl, e2e.workDir, playpen.jar (and, read
 * by the cases, e2e.runnerNamespace, e2e.tlsSecret, e2e.lease); docs/real-cluster.md describes them.
 */
final class Target implements AutoCloseable {
    static final String GROUP_VERSION = "playpen.unbounded-cloud.io/v1alpha1";
    static final String API_SERVICE = "v1alpha1.playpen.unbounded-cloud.io";
    static final String USERS_BINDING = "playpen-e2e-users";

    enum Kind { PLAYGROUND, CLUSTER }

    /** A place to reach one operator replica's port from this machine; closing it ends a port-forward. */
    record Endpoint(String replica, String host, int port, AutoCloseable forward) implements AutoCloseable {
        @Override
        public void close() throws Exception {
            forward.close();
        }
    }

    final Kind kind;
    /** Cluster administrator: built-in resources, and everyone's allocations. */
    final Kubectl admin;
    /** A user bound to playpen-user. */
    final Kubectl user;
    /** A user without any playpen grant. */
    final Kubectl denied;
    final Path work;
    private final Map<String, String> endpoints;
    private final Playground playground;
    private final List<Runnable> cleanups = new ArrayList<>();

    private Target(Kind kind, Kubectl admin, Kubectl user, Kubectl denied, Path work, Map<String, String> endpoints,
            Playground playground) {
        this.kind = kind;
        this.admin = admin;
        this.user = user;
        this.denied = denied;
        this.work = work;
        this.endpoints = endpoints;
        this.playground = playground;
    }

    /**
     * -De2e.install=kind: the cluster was set up by kind/ as docs/real-cluster.md does (CI does so). What that
     * installation guarantees (kubectl, a control-plane pool, two operator replicas) is then asserted, so a case
     * that would otherwise be skipped for lack of it fails instead.
     */
    static boolean kindInstall() {
        String install = prop("e2e.install", "");
        if (!install.isEmpty() && !install.equals("kind")) {
            throw new IllegalArgumentException("e2e.install is kind (the cluster kind/ sets up) or not set, not "
                    + install);
        }
        return install.equals("kind");
    }

    static String prop(String name, String fallback) {
        String v = System.getProperty(name);
        return v == null || v.isBlank() ? fallback : v.trim();
    }

    static Target resolve() throws Exception {
        Path work = Path.of(prop("e2e.workDir", "target/e2e")).toAbsolutePath();
        Files.createDirectories(work);
        Path kubectl = Kubectl.find();
        String given = prop("e2e.kubeconfig", "");
        Playground playground = null;
        Path kubeconfig;
        if (given.isEmpty()) {
            Path dir = work.resolve("playground-" + System.currentTimeMillis());
            // certificate checks every second, so the rotation case takes seconds here, not half a minute
            playground = Playground.start(Path.of(prop("playpen.jar", "target/playpen-operator.jar")), dir,
                    List.of("--serving-cert-check-interval=1s", "--serving-cert-publish-grace=1s"));
            kubeconfig = playground.kubeconfig();
        } else {
            kubeconfig = Path.of(given).toAbsolutePath();
        }
        try {
            return resolve(kubectl, kubeconfig, work, playground);
        } catch (Exception | Error e) {
            if (playground != null) {
                playground.close();
            }
            throw e;
        }
    }

    private static Target resolve(Path kubectl, Path kubeconfig, Path work, Playground playground) throws Exception {
        if (!Files.isRegularFile(kubeconfig)) {
            throw new IllegalArgumentException("e2e.kubeconfig " + kubeconfig + " is not a file");
        }
        Path dir = kubeconfig.getParent();
        String t = prop("e2e.target", "");
        Kind kind = t.isEmpty() ? (Files.isRegularFile(dir.resolve("endpoints.env")) ? Kind.PLAYGROUND : Kind.CLUSTER)
                : Kind.valueOf(t.toUpperCase(Locale.ROOT));
        if (kindInstall() && kind != Kind.CLUSTER) {
            throw new IllegalArgumentException("e2e.install=kind names a cluster kind/ set up, but the target is the"
                    + " playground (" + kubeconfig + ")");
        }
        if (kind == Kind.PLAYGROUND) {
            Kubectl user = identity(kubectl, "e2e.userKubeconfig", kubeconfig, work, "user");
            Kubectl admin = identity(kubectl, "e2e.adminKubeconfig", dir.resolve("kubeconfig-admin"), work, "admin");
            Kubectl denied = identity(kubectl, "e2e.deniedKubeconfig", dir.resolve("kubeconfig-denied"), work, "denied");
            Map<String, String> env = Files.isRegularFile(dir.resolve("endpoints.env")) ? Playground.endpoints(dir) : Map.of();
            return new Target(kind, admin, user, denied, work, env, playground);
        }
        Kubectl admin = identity(kubectl, "e2e.adminKubeconfig", kubeconfig, work, "admin");
        boolean impersonate = prop("e2e.userKubeconfig", "").isEmpty();
        String group = prop("e2e.userGroup", "playpen-e2e-users");
        Kubectl user = impersonate ? admin.as(prop("e2e.user", "playpen-e2e-user"), List.of(group), "user")
                : identity(kubectl, "e2e.userKubeconfig", null, work, "user");
        Kubectl denied = prop("e2e.deniedKubeconfig", "").isEmpty()
                ? admin.as(prop("e2e.deniedUser", "playpen-e2e-nobody"), List.of(), "denied")
                : identity(kubectl, "e2e.deniedKubeconfig", null, work, "denied");
        Target target = new Target(kind, admin, user, denied, work, Map.of(), playground);
        if (impersonate) {
            // the grant deploy/README.md tells admins to give users
            admin.ok("delete", "clusterrolebinding", USERS_BINDING, "--ignore-not-found");
            admin.ok("create", "clusterrolebinding", USERS_BINDING, "--clusterrole=playpen-user", "--group=" + group);
            target.cleanups.add(() -> admin.run("delete", "clusterrolebinding", USERS_BINDING, "--ignore-not-found"));
            // the operator caches a denied SubjectAccessReview for seconds: use the grant only once it is in force
            await(Duration.ofSeconds(60), "the playpen-user grant to take effect", () -> user.run("auth", "can-i",
                    "create", "allocs.playpen.unbounded-cloud.io").out().trim().equals("yes"));
        }
        return target;
    }

    private static Kubectl identity(Path kubectl, String property, Path fallback, Path work, String label) {
        String p = prop(property, "");
        Path file = p.isEmpty() ? fallback : Path.of(p).toAbsolutePath();
        if (file == null || !Files.isRegularFile(file)) {
            throw new IllegalArgumentException("no kubeconfig for the " + label + " identity: " + (file == null
                    ? "set -D" + property : file + " is not a file (set -D" + property + ")"));
        }
        return new Kubectl(kubectl, file, List.of(), work, label);
    }

    boolean isCluster() {
        return kind == Kind.CLUSTER;
    }

    /** Waits until the aggregated API answers (a cluster may still be rolling the operator out). */
    void awaitServing(Duration timeout) throws InterruptedException {
        String[] last = {""};
        await(timeout, "the playpen API to be served (APIService " + API_SERVICE + " Available)", () -> {
            Kubectl.Run r = admin.run("get", "--raw", "/apis/" + GROUP_VERSION);
            last[0] = r.err().strip();
            return r.ok() && r.out().contains("\"allocs\"");
        }, () -> last[0]);
    }

    JsonNode apiService() {
        return admin.json("get", "apiservice", API_SERVICE, "-o", "json");
    }

    /** The namespace of the operator's Service, as the APIService names it. */
    String operatorNamespace() {
        return apiService().at("/spec/service/namespace").asText();
    }

    String serviceName() {
        return apiService().at("/spec/service/name").asText();
    }

    /** The operator's pods that are Ready, by the Service's selector (cluster only). */
    List<String> readyOperatorPods() {
        String ns = operatorNamespace();
        JsonNode selector = admin.json("get", "service", serviceName(), "-n", ns, "-o", "json").at("/spec/selector");
        List<String> terms = new ArrayList<>();
        selector.fields().forEachRemaining(e -> terms.add(e.getKey() + "=" + e.getValue().asText()));
        List<String> out = new ArrayList<>();
        for (JsonNode pod : admin.json("get", "pods", "-n", ns, "-l", String.join(",", terms), "-o", "json").path("items")) {
            if (!pod.at("/metadata/deletionTimestamp").isMissingNode()) {
                continue;
            }
            for (JsonNode c : pod.at("/status/conditions")) {
                if (c.path("type").asText().equals("Ready") && c.path("status").asText().equals("True")) {
                    out.add(pod.at("/metadata/name").asText());
                }
            }
        }
        return out;
    }

    /** Every ready replica's HTTPS port (8443): port-forwards on a cluster, the replicas' URLs in a playground. */
    List<Endpoint> operatorHttps() throws Exception {
        if (kind == Kind.PLAYGROUND) {
            List<Endpoint> out = new ArrayList<>();
            String replicas = endpoints.getOrDefault("OPERATOR_REPLICAS", endpoints.getOrDefault("OPERATOR_URL", ""));
            for (String u : replicas.split(",")) {
                if (!u.isBlank()) {
                    URI uri = URI.create(u.trim());
                    out.add(new Endpoint(uri.getAuthority(), uri.getHost(), uri.getPort(), () -> { }));
                }
            }
            return out;
        }
        return forwardEach(8443);
    }

    /** Every ready replica's management port (9876): port-forwards on a cluster, MANAGEMENT_URL in a playground. */
    List<Endpoint> operatorManagement() throws Exception {
        if (kind == Kind.PLAYGROUND) {
            String m = endpoints.getOrDefault("MANAGEMENT_URL", "");
            if (m.isEmpty()) {
                return List.of();
            }
            URI uri = URI.create(m);
            return List.of(new Endpoint(uri.getAuthority(), uri.getHost(), uri.getPort(), () -> { }));
        }
        return forwardEach(9876);
    }

    private List<Endpoint> forwardEach(int port) throws Exception {
        List<Endpoint> out = new ArrayList<>();
        try {
            for (String pod : readyOperatorPods()) {
                out.add(portForward(operatorNamespace(), pod, port));
            }
        } catch (Exception | Error e) {
            for (Endpoint ep : out) {
                ep.close();
            }
            throw e;
        }
        return out;
    }

    private static final Pattern FORWARDING = Pattern.compile("Forwarding from 127\\.0\\.0\\.1:(\\d+) -> (\\d+)");

    /** {@code kubectl port-forward pod/NAME :PORT}: how an admin reaches one pod's port (NetworkPolicies do not apply). */
    Endpoint portForward(String namespace, String pod, int port) throws Exception {
        Path log = Files.createTempFile(work, "port-forward-", ".log");
        Process p = admin.start(log, "port-forward", "-n", namespace, "pod/" + pod, ":" + port, "--address=127.0.0.1");
        AutoCloseable stop = () -> {
            p.destroy();
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
            Files.deleteIfExists(log);
        };
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            Matcher m = FORWARDING.matcher(Files.readString(log, StandardCharsets.UTF_8));
            if (m.find()) {
                return new Endpoint(pod, "127.0.0.1", Integer.parseInt(m.group(1)), stop);
            }
            if (!p.isAlive()) {
                break;
            }
            Thread.sleep(100);
        }
        String out = Files.readString(log, StandardCharsets.UTF_8);
        stop.close();
        throw new AssertionError("kubectl port-forward to " + namespace + "/" + pod + ":" + port + " did not start: " + out);
    }

    /** Polls {@code condition} every 250 ms; fails naming what it waited for and the last observation. */
    static void await(Duration timeout, String what, BooleanSupplier condition, java.util.function.Supplier<String> last)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            if (condition.getAsBoolean()) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("waited " + timeout.toSeconds() + " s for " + what + "; last seen: " + last.get());
            }
            Thread.sleep(250);
        }
    }

    static void await(Duration timeout, String what, BooleanSupplier condition) throws InterruptedException {
        await(timeout, what, condition, () -> "-");
    }

    void onClose(Runnable cleanup) {
        cleanups.add(cleanup);
    }

    @Override
    public void close() {
        for (int i = cleanups.size() - 1; i >= 0; i--) {
            try {
                cleanups.get(i).run();
            } catch (RuntimeException e) {
                System.err.println("e2e cleanup failed: " + e.getMessage());
            }
        }
        if (playground != null) {
            playground.close();
        }
    }

    @Override
    public String toString() {
        return kind.name().toLowerCase(Locale.ROOT) + " (" + admin.kubeconfig() + ")";
    }
}
