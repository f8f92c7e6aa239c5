package io.unboundedcloud.playpen.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.unboundedcloud.playpen.chaos.ChaosSuite;
import io.unboundedcloud.playpen.chaos.Playground;

/**
 * The simulated cluster alone ({@code --dev --dev-operators=0}), two operator processes
 * against it (through the chaos proxy, faults off), kubectl's allocs spread over both, the "replicas and duplicates"
 * chaos scenario at a small size with zero invariant violations, then one replica killed with SIGKILL and kubectl
 * still served.
 */
class DevReplicasIT {
    static final String ALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs";
    static final String KUBECTL = System.getenv().getOrDefault("KUBECTL", "/usr/bin/kubectl");
    static final ObjectMapper M = new ObjectMapper();

    @Test
    void twoReplicasShareTheLoadAndOneSurvivesTheOthersKill() throws Exception {
        String jar = System.getProperty("playpen.jar", "target/playpen-operator.jar");
        assumeTrue(new File(jar).isFile(), "packaged jar " + jar + " not found (run mvn verify)");
        assumeTrue(new File(KUBECTL).canExecute(), "kubectl not found at " + KUBECTL);
        Path dir = Files.createTempDirectory(Path.of("target"), "it-replicas-");
        try (ChaosSuite suite = ChaosSuite.start(Path.of(jar), dir, 2, 7)) {
            Playground pg = suite.playground();
            assertThat(pg.endpoints()).containsKeys("KUBE_API_URL", "SHIM_URL", "OPERATOR_REPLICAS", "OPERATOR_KUBECONFIG")
                    .doesNotContainKey("OPERATOR_URL");
            // the cluster alone says how to start each replica: its address and a management port of its own (two
            // replicas on the default management port would clash)
            String announced = Files.readAllLines(pg.dir().resolve("cluster.log")).stream()
                    .filter(l -> l.contains("dev cluster ready")).findFirst().orElseThrow();
            for (String addr : pg.endpoints().get("OPERATOR_REPLICAS").split(",")) {
                String hostPort = java.net.URI.create(addr.trim()).getAuthority();
                assertThat(announced).contains("--listen-addr=" + hostPort + " --management-addr=127.0.0.1:");
            }
            HttpClient plain = HttpClient.newHttpClient();
            int n = 0;
            // round robin over two ready replicas: within a handful of allocs both must have served one
            while (n < 12 && (allocsServed(pg, plain, 0) == 0 || allocsServed(pg, plain, 1) == 0)) {
                alloc(dir, "spread-" + n++);
            }
            assertThat(allocsServed(pg, plain, 0)).as("allocs answered by replica 0").isPositive();
            assertThat(allocsServed(pg, plain, 1)).as("allocs answered by replica 1").isPositive();

            ChaosSuite.Result smoke = suite.replicasAndDuplicates(200, 16);
            System.out.println(ChaosSuite.table(List.of(smoke)));
            assertThat(smoke.violations()).as("invariant violations").isEmpty();
            assertThat(smoke.outcomes()).containsKey("200");

            pg.kill(0);
            double before = allocsServed(pg, plain, 1);
            for (int i = 0; i < 4; i++) {
                alloc(dir, "after-kill-" + i);
            }
            assertThat(allocsServed(pg, plain, 1) - before).as("allocs answered by the survivor").isGreaterThanOrEqualTo(4);
        }
    }

    private static double allocsServed(Playground pg, HttpClient plain, int i) {
        return Playground.sum(pg.metrics(i, plain), "playpen_alloc_requests");
    }

    /** One kubectl alloc; a 503/429 (pool empty while it refills) is retried with the same key, anything else fails. */
    private static void alloc(Path dir, String key) throws Exception {
        Path req = dir.resolve(key + ".json");
        byte[] wg = new byte[32];
        java.util.Arrays.fill(wg, (byte) key.hashCode());
        Files.writeString(req, "{\"idempotencyKey\":\"" + key + "\",\"wireGuardPublicKey\":\""
                + java.util.Base64.getEncoder().encodeToString(wg) + "\"}");
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (true) {
            Path out = dir.resolve(key + ".out");
            Path err = dir.resolve(key + ".err");
            Process p = new ProcessBuilder(KUBECTL, "--kubeconfig", dir.resolve("kubeconfig").toString(), "create",
                    "--raw", ALLOCS, "-f", req.toString()).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            if (p.exitValue() == 0) {
                JsonNode a = M.readTree(Files.readString(out));
                assertThat(a.at("/pod/name").asText()).startsWith("playpen-runner-");
                return;
            }
            String e = Files.readString(err);
            // the pool (3) is smaller than what the test allocates: "no idle pod" is a 503 with Retry-After
            boolean retryable = e.contains("ServiceUnavailable") || e.contains("Too Many") || e.contains("(ServiceUnavailable)");
            assertThat(retryable).as("kubectl alloc %s failed: %s", key, e).isTrue();
            assertThat(e).as("the stand-in never lacks a ready replica").doesNotContain("no replica among");
            if (System.nanoTime() > deadline) {
                throw new AssertionError("alloc " + key + " kept failing: " + e);
            }
            Thread.sleep(300);
        }
    }
}
