package io.unboundedcloud.playpen.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * The packaged jar in --dev mode as a separate process, driven with the real kubectl through the dev
 * kubeconfig and directly over HTTPS as kube-apiserver would call it.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class DevModeIT {
    static final ObjectMapper M = new ObjectMapper();
    static final String ALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs";
    static final String DEALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/deallocs";
    static final String KUBECTL = System.getenv().getOrDefault("KUBECTL", "/usr/bin/kubectl");
    static Process process;
    static Path dir;
    static Map<String, String> endpoints;
    static long startupMillis;

    @BeforeAll
    static void start() throws Exception {
        String jar = System.getProperty("playpen.jar", "target/playpen-operator.jar");
        assumeTrue(new File(jar).isFile(), "packaged jar " + jar + " not found (run mvn verify)");
        dir = Files.createTempDirectory(Path.of("target"), "it-dev-");
        long t0 = System.nanoTime();
        process = new ProcessBuilder(javaBin(), "-jar", jar, "--dev", "--dev-dir=" + dir, "--playpen-ttl=1h")
                .redirectErrorStream(true).redirectOutput(dir.resolve("operator.log").toFile()).start();
        Path env = dir.resolve("endpoints.env");
        Path log = dir.resolve("operator.log");
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        // "ready" as a user sees it: the announcement printed with the commands to try
        while (!Files.readString(log).contains("dev playground ready in")) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                throw new IllegalStateException("dev mode did not start:\n" + Files.readString(dir.resolve("operator.log")));
            }
            Thread.sleep(50);
        }
        // the contract: once dev mode says it is ready, kubectl reaches the operator (registered, caBundle published)
        assertThat(kubectlOk("get", "apiservice", "v1alpha1.playpen.unbounded-cloud.io", "-o", "jsonpath={.spec.caBundle}"))
                .as("APIService caBundle when dev mode says it is ready").isNotBlank();
        endpoints = new HashMap<>();
        for (String line : Files.readAllLines(env)) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                endpoints.put(line.substring(0, eq).trim(), line.substring(eq + 1).trim());
            }
        }
        HttpClient anon = OperatorHarness.client(null);
        OperatorHarness.awaitTrue(() -> {
            try {
                return anon.send(HttpRequest.newBuilder(URI.create(endpoints.get("OPERATOR_URL") + "/readyz")).build(),
                        HttpResponse.BodyHandlers.ofString()).statusCode() == 204;
            } catch (Exception e) {
                return false;
            }
        }, Duration.ofSeconds(30), "operator ready");
        startupMillis = (System.nanoTime() - t0) / 1_000_000;
        // the pools fill and the simulated kubelet makes them ready
        OperatorHarness.awaitTrue(() -> kubectlOk("get", "pods", "-n", "playpen", "-o", "name").split("\n").length >= 3,
                Duration.ofSeconds(20), "pools filled");
    }

    static String javaBin() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    @AfterAll
    static void stop() {
        if (process != null && process.isAlive()) {
            process.destroyForcibly();
        }
    }

    record Run(int code, String out, String err) {
    }

    static Run kubectlAs(String kubeconfig, String... args) {
        assumeTrue(new File(KUBECTL).canExecute(), "kubectl not found at " + KUBECTL + "; set KUBECTL to run the kubectl end-to-end tests");
        List<String> cmd = new ArrayList<>(List.of(KUBECTL, "--kubeconfig", dir.resolve(kubeconfig).toString()));
        cmd.addAll(List.of(args));
        try {
            Path out = Files.createTempFile(dir, "out", ".txt");
            Path err = Files.createTempFile(dir, "err", ".txt");
            Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("kubectl timed out: " + cmd);
            }
            return new Run(p.exitValue(), Files.readString(out), Files.readString(err));
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    static String kubectlOk(String... args) {
        Run r = kubectlAs("kubeconfig", args);
        if (r.code() != 0) {
            throw new AssertionError("kubectl " + String.join(" ", args) + " failed: " + r.err());
        }
        return r.out();
    }

    static Path request(String name, String json) throws IOException {
        Path p = dir.resolve(name);
        Files.writeString(p, json, StandardCharsets.UTF_8);
        return p;
    }

    static String wgKey(int seed) {
        byte[] k = new byte[32];
        java.util.Arrays.fill(k, (byte) seed);
        return java.util.Base64.getEncoder().encodeToString(k);
    }

    @Test
    @Order(1)
    void startsAndWritesItsFiles() {
        // how long it took is reported, not asserted: the machine may be shared
        System.out.println("dev mode: startup to ready " + startupMillis + " ms");
        assertThat(endpoints).containsKeys("OPERATOR_URL", "KUBE_API_URL", "SHIM_URL");
        assertThat(dir.resolve("kubeconfig")).exists();
        assertThat(dir.resolve("kubeconfig-denied")).exists();
        assertThat(dir.resolve("front-proxy-ca.crt")).exists();
        assertThat(dir.resolve("serving-ca.crt")).exists();
    }

    @Test
    @Order(2)
    void kubectlAllocRetryConflictListAndDealloc() throws Exception {
        Path req = request("req.json", "{\"idempotencyKey\":\"it-1\",\"wireGuardPublicKey\":\"" + wgKey(1) + "\"}\n");
        String first = kubectlOk("create", "--raw", ALLOCS, "-f", req.toString());
        JsonNode a = M.readTree(first);
        String pod = a.at("/pod/name").asText();
        assertThat(a.at("/endpoint/host").asText()).startsWith("203.0.113.");
        assertThat(a.at("/endpoint/host").asText()).isEqualTo(a.at("/pod/nodePublicIP").asText());
        String hostPortLabel = kubectlOk("get", "pod", pod, "-n", "playpen", "-o",
                "jsonpath={.metadata.labels.playpen\\.unbounded-cloud\\.io/host-port}");
        assertThat(a.at("/endpoint/wireGuardUDPPort").asText()).isEqualTo(hostPortLabel);
        assertThat(kubectlOk("create", "--raw", ALLOCS, "-f", req.toString())).isEqualTo(first);
        Path other = request("req-other.json", "{\"idempotencyKey\":\"it-1\",\"wireGuardPublicKey\":\"" + wgKey(2) + "\"}");
        Run conflict = kubectlAs("kubeconfig", "create", "--raw", ALLOCS, "-f", other.toString());
        assertThat(conflict.code()).isNotZero();
        assertThat(conflict.err()).contains("Error from server (Conflict)");
        assertThat(kubectlOk("get", "pods", "-n", "playpen", "-l", "playpen.unbounded-cloud.io/allocated", "-o", "name"))
                .contains("pod/" + pod);
        Path dealloc = request("dealloc.json", "{\"idempotencyKey\":\"it-1\"}");
        kubectlOk("create", "--raw", DEALLOCS, "-f", dealloc.toString());
        Run gone = kubectlAs("kubeconfig", "get", "pod", pod, "-n", "playpen");
        assertThat(gone.err()).contains("NotFound");
        OperatorHarness.awaitTrue(() -> {
            String names = kubectlOk("get", "pods", "-n", "playpen", "-o", "name");
            return names.lines().filter(l -> l.contains("playpen-runner-" + a.at("/pod/architecture").asText())).count() >= 1;
        }, Duration.ofSeconds(60), "replacement runner");
    }

    @Test
    @Order(3)
    void apiResourcesAndForbiddenUser() throws Exception {
        String resources = kubectlOk("api-resources", "--api-group=playpen.unbounded-cloud.io");
        assertThat(resources).contains("allocs").contains("deallocs");
        Path req = request("req-denied.json", "{\"idempotencyKey\":\"it-denied\",\"wireGuardPublicKey\":\"" + wgKey(3) + "\"}");
        Run denied = kubectlAs("kubeconfig-denied", "create", "--raw", ALLOCS, "-f", req.toString());
        assertThat(denied.code()).isNotZero();
        assertThat(denied.err()).contains("Error from server (Forbidden)");
    }

    @Test
    @Order(4)
    void controlPlaneKubeconfigPointsAtExternalIpAndHostPort() throws Exception {
        OperatorHarness.awaitTrue(() -> kubectlOk("get", "pods", "-n", "playpen", "-o", "name").contains("control-plane"),
                Duration.ofSeconds(60), "control-plane pod");
        Path req = request("cp.json", "{\"idempotencyKey\":\"it-cp\",\"resourceType\":\"controlPlane\"}");
        String out = null;
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (out == null) {
            Run r = kubectlAs("kubeconfig", "create", "--raw", ALLOCS, "-f", req.toString());
            if (r.code() == 0) {
                out = r.out();
            } else if (System.nanoTime() > deadline) {
                throw new AssertionError(r.err());
            } else {
                Thread.sleep(200);
            }
        }
        JsonNode cp = M.readTree(out);
        String server = "https://" + cp.at("/endpoint/host").asText() + ":" + cp.at("/endpoint/apiServerTCPPort").asInt();
        assertThat(cp.at("/endpoint/host").asText()).startsWith("203.0.113.");
        assertThat(cp.at("/controlPlane/apiServerURL").asText()).isEqualTo(server);
        JsonNode kubeconfig = new ObjectMapper(new com.fasterxml.jackson.dataformat.yaml.YAMLFactory())
                .readTree(cp.at("/controlPlane/kubeconfig").asText());
        for (JsonNode c : kubeconfig.get("clusters")) {
            assertThat(c.at("/cluster/server").asText()).isEqualTo(server);
        }
    }

    @Test
    @Order(5)
    void directHttpsAsTheAggregatorGivesTheSameResults() throws Exception {
        Pki.Issued frontProxy = new Pki.Issued(
                Pki.parseCertificates(Files.readString(dir.resolve("front-proxy-client.crt"))).get(0),
                Pki.parsePrivateKey(Files.readString(dir.resolve("front-proxy-client.key"))));
        HttpClient http = OperatorHarness.client(frontProxy);
        String body = "{\"idempotencyKey\":\"it-direct\",\"wireGuardPublicKey\":\"" + wgKey(4) + "\"}";
        OperatorHarness.awaitTrue(() -> kubectlOk("get", "pods", "-n", "playpen", "-o", "name").lines()
                .filter(l -> l.contains("runner")).count() >= 2, Duration.ofSeconds(60), "runners");
        HttpResponse<String> first = null;
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (first == null || first.statusCode() == 503 && System.nanoTime() < deadline) {
            if (first != null) {
                Thread.sleep(200);
            }
            first = http.send(HttpRequest.newBuilder(URI.create(endpoints.get("OPERATOR_URL") + ALLOCS))
                    .header("X-Remote-User", "dev-user").header("X-Remote-Group", "playpen-users")
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        }
        assertThat(first.statusCode()).as(first.body()).isEqualTo(200);
        HttpResponse<String> again = http.send(HttpRequest.newBuilder(URI.create(endpoints.get("OPERATOR_URL") + ALLOCS))
                .header("X-Remote-User", "dev-user").header("X-Remote-Group", "playpen-users")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(again.body()).isEqualTo(first.body());
        Path req = request("req-direct.json", body);
        assertThat(kubectlOk("create", "--raw", ALLOCS, "-f", req.toString())).isEqualTo(first.body());
        HttpResponse<String> denied = http.send(HttpRequest.newBuilder(URI.create(endpoints.get("OPERATOR_URL") + ALLOCS))
                .header("X-Remote-User", "eve").header("X-Remote-Group", "others")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(denied.statusCode()).isEqualTo(403);
    }

    @Test
    @Order(6)
    void theJarAppliesItsJvmDefaults() throws Exception {
        // Main sets Netty's smaller allocator chunks (see JvmDefaults) before any library class loads
        Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
        Process p = new ProcessBuilder(jcmd.toString(), String.valueOf(process.pid()), "VM.system_properties")
                .redirectErrorStream(true).start();
        String props = new String(p.getInputStream().readAllBytes());
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(props).contains("io.netty.allocator.maxOrder=7");
    }

    /** A second --dev on the same directory refuses to start and leaves the first one's files alone. */
    @Test
    @Order(7)
    void aSecondPlaygroundOnTheSameDirectoryRefusesToStart() throws Exception {
        String jar = System.getProperty("playpen.jar", "target/playpen-operator.jar");
        String before = Files.readString(dir.resolve("endpoints.env"));
        String kubeconfig = Files.readString(dir.resolve("kubeconfig"));
        Path out = dir.resolve("second.log");
        Process second = new ProcessBuilder(javaBin(), "-jar", jar, "--dev", "--dev-dir=" + dir).redirectErrorStream(true)
                .redirectOutput(out.toFile()).start();
        assertThat(second.waitFor(60, TimeUnit.SECONDS)).as("the second playground ends by itself").isTrue();
        assertThat(second.exitValue()).isEqualTo(1);
        assertThat(Files.readString(out)).contains(dir + " is in use by another --dev playground (pid " + process.pid())
                .contains("--dev-dir=");
        assertThat(Files.readString(dir.resolve("endpoints.env"))).isEqualTo(before);
        assertThat(Files.readString(dir.resolve("kubeconfig"))).isEqualTo(kubeconfig);
        assertThat(kubectlOk("get", "allocs")).as("the first one still serves").isNotNull();
    }

    /** Audit lines go to the dev dir's audit.log, one JSON object each, and never into the operator's log. */
    @Test
    @Order(8)
    void auditLinesGoToTheirOwnFile() throws Exception {
        List<String> audit = Files.readAllLines(dir.resolve("audit.log"));
        assertThat(audit).as("the allocations above were audited").isNotEmpty();
        for (String line : audit) {
            JsonNode n = M.readTree(line);
            assertThat(n.has("verb") && n.has("outcome") && n.has("keyHashPrefix")).as(line).isTrue();
        }
        assertThat(audit).anyMatch(l -> l.contains("\"verb\":\"allocate\"") && l.contains("\"outcome\":\"allocated\""));
        assertThat(Files.readAllLines(dir.resolve("operator.log"))).noneMatch(l -> l.startsWith("{\"time\""));
    }

    @Test
    @Order(10)
    void exitsZeroOnSigterm() throws Exception {
        process.destroy(); // SIGTERM
        assertThat(process.waitFor(20, TimeUnit.SECONDS)).as("exited within 20s").isTrue();
        assertThat(process.exitValue()).as(Files.readString(dir.resolve("operator.log"))).isZero();
    }
}
