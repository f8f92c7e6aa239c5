package io.unboundedcloud.playpen.chaos;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.unboundedcloud.playpen.support.OperatorHarness;

/**
 * The packaged jar as separate processes: one {@code --dev --dev-operators=0} simulated cluster and any number of
 * operator replicas against it (each on its own port, killable with SIGKILL and restartable).
 */
public final class Playground implements AutoCloseable {
    /** Lease timings short enough that a failover fits a test, long enough for a loaded 2-core machine. */
    public static final List<String> FAST_LEASE = List.of("--leader-election-lease-duration=6s",
            "--leader-election-renew-deadline=4s", "--leader-election-retry-period=1s");

    private final Path jar;
    private final Path dir;
    private final Process cluster;
    private final Map<String, String> endpoints;
    private final List<Replica> replicas = new ArrayList<>();

    /** One operator replica: its ports stay the same across restarts (the stand-in knows it by address). */
    public static final class Replica {
        final int index;
        final int port;
        final int managementPort;
        Process process;

        Replica(int index, int port, int managementPort) {
            this.index = index;
            this.port = port;
            this.managementPort = managementPort;
        }

        public int port() {
            return port;
        }

        public int managementPort() {
            return managementPort;
        }

        public boolean alive() {
            return process != null && process.isAlive();
        }

        public long pid() {
            return process.pid();
        }
    }

    private Playground(Path jar, Path dir, Process cluster, Map<String, String> endpoints, List<Replica> replicas) {
        this.jar = jar;
        this.dir = dir;
        this.cluster = cluster;
        this.endpoints = endpoints;
        this.replicas.addAll(replicas);
    }

    /** Starts the simulated cluster alone, expecting {@code replicaCount} replicas on free ports; waits for endpoints.env. */
    public static Playground startCluster(Path jar, Path dir, int replicaCount, List<String> clusterFlags) throws Exception {
        Files.createDirectories(dir);
        List<Replica> rs = new ArrayList<>();
        List<String> addrs = new ArrayList<>();
        for (int i = 0; i < replicaCount; i++) {
            Replica r = new Replica(i, OperatorHarness.freePort(), OperatorHarness.freePort());
            rs.add(r);
            addrs.add("127.0.0.1:" + r.port);
        }
        List<String> cmd = new ArrayList<>(List.of(javaBin(), "-Xmx256m", "-jar", jar.toString(), "--dev",
                "--dev-operators=0", "--dev-dir=" + dir, "--dev-operator-addrs=" + String.join(",", addrs)));
        cmd.addAll(clusterFlags);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(dir.resolve("cluster.log").toFile())
                .start();
        Path env = dir.resolve("endpoints.env");
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (!Files.exists(env)) {
            if (!p.isAlive() || System.nanoTime() > deadline) {
                p.destroyForcibly();
                throw new IllegalStateException("dev cluster did not start:\n" + Files.readString(dir.resolve("cluster.log")));
            }
            Thread.sleep(50);
        }
        Map<String, String> endpoints = new HashMap<>();
        for (String line : Files.readAllLines(env)) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                endpoints.put(line.substring(0, eq), line.substring(eq + 1));
            }
        }
        return new Playground(jar, dir, p, endpoints, rs);
    }

    public Map<String, String> endpoints() {
        return endpoints;
    }

    public Path dir() {
        return dir;
    }

    public URI kubeApiUrl() {
        return URI.create(endpoints.get("KUBE_API_URL"));
    }

    public Path operatorKubeconfig() {
        return Path.of(endpoints.get("OPERATOR_KUBECONFIG"));
    }

    public List<Replica> replicas() {
        return replicas;
    }

    /** Writes a kubeconfig for the operators that points at {@code server} (e.g. a fault proxy) instead of the API. */
    public Path kubeconfigFor(URI server, String name) throws IOException {
        String text = Files.readString(operatorKubeconfig()).replace("server: " + endpoints.get("KUBE_API_URL"),
                "server: " + server.toString().replaceAll("/+$", ""));
        Path file = dir.resolve(name);
        Files.writeString(file, text);
        return file;
    }

    /** Starts (or restarts) replica {@code i} with the given kubeconfig and extra flags; returns at once. */
    public void start(int i, Path kubeconfig, List<String> flags) throws IOException {
        Replica r = replicas.get(i);
        if (r.alive()) {
            throw new IllegalStateException("replica " + i + " is running");
        }
        List<String> cmd = new ArrayList<>(List.of(javaBin(), "-Xmx256m", "-jar", jar.toString(),
                "--kubeconfig=" + kubeconfig, "--listen-addr=127.0.0.1:" + r.port,
                "--management-addr=127.0.0.1:" + r.managementPort));
        cmd.addAll(flags);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("replica-" + i + ".log").toFile()));
        pb.environment().remove("KUBECONFIG");
        pb.environment().put("POD_NAME", "replica-" + i);
        r.process = pb.start();
    }

    /** SIGTERM and wait: the replica shuts down as a Deployment's rolling update stops it (the Lease is released). */
    public void stop(int i) throws InterruptedException {
        Replica r = replicas.get(i);
        if (r.process != null && r.process.isAlive()) {
            r.process.destroy();
            if (!r.process.waitFor(30, TimeUnit.SECONDS)) {
                r.process.destroyForcibly();
                r.process.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    /** {@code kill -9}: no shutdown hook, no Lease release, connections reset. */
    public void kill(int i) throws InterruptedException {
        Replica r = replicas.get(i);
        if (r.process != null) {
            r.process.destroyForcibly();
            r.process.waitFor(30, TimeUnit.SECONDS);
        }
    }

    /** GET /readyz on the replica's own port (not through the stand-in). */
    public boolean ready(int i, HttpClient anonymous) {
        Replica r = replicas.get(i);
        if (!r.alive()) {
            return false;
        }
        try {
            return anonymous.send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + r.port + "/readyz"))
                    .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.discarding()).statusCode() / 100 == 2;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** The replica's Prometheus text, or "" when it does not answer. */
    public String metrics(int i, HttpClient plain) {
        Replica r = replicas.get(i);
        try {
            HttpResponse<String> res = plain.send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + r.managementPort + "/metrics")).timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.ofString());
            return res.statusCode() == 200 ? res.body() : "";
        } catch (IOException e) {
            return "";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "";
        }
    }

    /** Sum of a metric's samples whose line starts with {@code prefix} (name plus optional labels). */
    public static double sum(String metrics, String prefix) {
        double total = 0;
        for (String line : metrics.split("\n")) {
            if (line.startsWith(prefix)) {
                total += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return total;
    }

    public String log(int i) throws IOException {
        Path f = dir.resolve("replica-" + i + ".log");
        return Files.exists(f) ? Files.readString(f) : "";
    }

    static String javaBin() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    @Override
    public void close() {
        for (Replica r : replicas) {
            if (r.process != null) {
                r.process.destroyForcibly();
            }
        }
        cluster.destroyForcibly();
    }
}
