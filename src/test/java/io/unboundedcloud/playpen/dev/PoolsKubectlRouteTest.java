package io.unboundedcloud.playpen.dev;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.camel.OperatorApp;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The pools in the playground with the real kubectl, as docs/pools.md shows them: kubectl get pools, an eviction
 * with kubectl patch --subresource=status and its replacement, a rollout to another image (the operator restarted
 * with another --runner-image) that never leaves the pool without its ready pods, and a rollout to an image the
 * simulated kubelet never makes ready (--dev-image-faults): the pool backs off and keeps handing out its stale pods.
 * Every command's output is kept in target/pools-kubectl.txt.
 */
class PoolsKubectlRouteTest {
    static final String KUBECTL = System.getenv().getOrDefault("KUBECTL", "/usr/bin/kubectl");
    static final String BROKEN = "example.com/playpen-runner:broken";
    static DevCluster cluster;
    static OperatorApp operator;
    static final AtomicReference<URI> operatorUrl = new AtomicReference<>(URI.create("https://127.0.0.1:1"));
    static Path dir;
    static final StringBuilder transcript = new StringBuilder();

    record Run(int code, String out, String err) {
    }

    @BeforeAll
    static void start() throws Exception {
        assumeTrue(new File(KUBECTL).canExecute(), "kubectl not found at " + KUBECTL);
        dir = Files.createTempDirectory(Path.of("target"), "pools-kubectl-");
        OperatorConfig config = OperatorConfig.parse("--dev-image-faults=" + BROKEN + "=never-ready");
        cluster = DevCluster.start(DevCluster.Options.fromConfig(config).devDir(dir).operatorUrl(operatorUrl::get)
                .moreReplicas(List.of()).podReadyDelay(Duration.ofMillis(100)));
        operator("ghcr.io/azure/playpen:latest");
    }

    /** (Re)starts the operator against the playground with {@code image}: a restart with another --runner-image. */
    static void operator(String image) throws Exception {
        if (operator != null) {
            operator.close();
        }
        OperatorHarness.Started started = OperatorHarness.startOnFreePort(port -> new OperatorApp(OperatorConfig.parse(
                "--listen-addr=127.0.0.1:" + port, "--management-addr=",
                "--runner-amd64-count=2", "--runner-arm64-count=1", "--control-plane-count=0", "--runner-image=" + image,
                "--pool-ready-timeout=4s", "--pool-backoff-base=3s", "--pool-max-surge=1", "--reconcile-interval=2s"),
                cluster.client(), Clock.systemUTC(), Map.of()));
        operator = started.app();
        URI url = URI.create("https://127.0.0.1:" + started.port());
        operatorUrl.set(url);
        // the stand-in's ready set is this operator alone (not the one stopped above, until its next probe)
        OperatorHarness.awaitTrue(() -> operator.ready() && cluster.registered()
                && cluster.readyReplicas().equals(List.of(url)), Duration.ofSeconds(60), "operator ready and registered");
    }

    @AfterAll
    static void stop() throws IOException {
        if (operator != null) {
            operator.close();
        }
        if (cluster != null) {
            cluster.close();
        }
        if (dir != null) {
            Files.writeString(Path.of("target", "pools-kubectl.txt"), transcript, StandardCharsets.UTF_8);
        }
    }

    static Run kubectl(String... args) {
        List<String> cmd = new ArrayList<>(List.of(KUBECTL, "--kubeconfig", dir.resolve("kubeconfig").toString()));
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

    static String ok(String... args) {
        Run r = kubectl(args);
        transcript.append("$ kubectl ").append(String.join(" ", args)).append('\n').append(r.out()).append(r.err())
                .append('\n');
        assertThat(r.code()).as("kubectl %s: %s", String.join(" ", args), r.err()).isZero();
        return r.out();
    }

    static List<Pod> pods() {
        return cluster.client().pods().inNamespace("playpen").list().getItems();
    }

    static boolean readyIdle(Pod p) {
        return p.getStatus() != null && "Running".equals(p.getStatus().getPhase()) && p.getStatus().getConditions() != null
                && p.getStatus().getConditions().stream().anyMatch(c -> "Ready".equals(c.getType())
                        && "True".equals(c.getStatus()))
                && (p.getMetadata().getAnnotations() == null
                        || !p.getMetadata().getAnnotations().containsKey(PlaypenKeys.IDEMPOTENCY_KEY_HASH));
    }

    static long readyIdle(String arch, String image) {
        return pods().stream().filter(p -> p.getMetadata().getName().startsWith("playpen-runner-" + arch))
                .filter(p -> image == null || image.equals(p.getSpec().getContainers().get(0).getImage()))
                .filter(PoolsKubectlRouteTest::readyIdle).count();
    }

    @Test
    void healRollAndBackOffWithTheRealKubectl() throws Exception {
        OperatorHarness.awaitTrue(() -> readyIdle("amd64", null) == 2 && readyIdle("arm64", null) == 1,
                Duration.ofSeconds(30), "the pools full");
        // kubectl get pools
        List<String> table = ok("get", "pools").lines().toList();
        assertThat(table.get(0).split("\\s+")).containsExactly("NAME", "TYPE", "ARCH/VERSION", "DESIRED", "READY",
                "IDLE", "ALLOCATED", "STALE", "UNHEALTHY", "AGE");
        assertThat(table.get(1)).matches("runner-amd64\\s+runner\\s+amd64\\s+2\\s+2\\s+2\\s+0\\s+0\\s+0\\s+\\d+s");
        assertThat(ok("get", "pools", "-o", "wide").lines().findFirst().orElseThrow()).matches(".*\\sTEMPLATE\\s+IMAGE");
        assertThat(ok("get", "pool", "runner-amd64", "-o", "jsonpath={.status.conditions[0].type}={.status.conditions[0]"
                + ".status}")).isEqualTo("Ready=True");
        ok("api-resources", "--api-group=playpen.unbounded-cloud.io");
        assertThat(ok("explain", "pools.status")).contains("conditions", "stale");

        // an eviction, as a node under memory pressure does it: the pod is replaced
        String victim = pods().stream().filter(p -> p.getMetadata().getName().startsWith("playpen-runner-amd64"))
                .findFirst().orElseThrow().getMetadata().getName();
        ok("-n", "playpen", "patch", "pod", victim, "--subresource=status", "--type=merge", "-p",
                "{\"status\":{\"phase\":\"Failed\",\"reason\":\"Evicted\",\"message\":\"The node was low on resource: "
                        + "memory.\"}}");
        OperatorHarness.awaitTrue(() -> pods().stream().noneMatch(p -> p.getMetadata().getName().equals(victim)
                && "Failed".equals(p.getStatus().getPhase())) && readyIdle("amd64", null) == 2, Duration.ofSeconds(60),
                "the evicted pod replaced");
        assertThat(ok("-n", "playpen", "get", "events", "-o", "custom-columns=REASON:.reason,OBJECT:.involvedObject.name,"
                + "MESSAGE:.message")).contains("Evicted", victim);

        // a rollout: never fewer ready idle pods than desired, never more than desired + surge
        AtomicBoolean sampling = new AtomicBoolean(true);
        AtomicInteger minReady = new AtomicInteger(Integer.MAX_VALUE);
        AtomicInteger maxIdle = new AtomicInteger();
        Thread sampler = new Thread(() -> {
            while (sampling.get()) {
                long ready = readyIdle("amd64", null);
                minReady.accumulateAndGet((int) ready, Math::min);
                maxIdle.accumulateAndGet((int) ready, Math::max);
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        sampler.start();
        operator("example.com/playpen-runner:v2");
        OperatorHarness.awaitTrue(() -> readyIdle("amd64", "example.com/playpen-runner:v2") == 2
                && readyIdle("arm64", "example.com/playpen-runner:v2") == 1
                && readyIdle("amd64", null) == 2 && readyIdle("arm64", null) == 1, Duration.ofSeconds(30), "rolled");
        sampling.set(false);
        sampler.join();
        // (the operator's own restart takes its time; the pool never dropped below its ready pods meanwhile)
        assertThat(minReady.get()).as("ready idle amd64 pods during the rollout").isGreaterThanOrEqualTo(2);
        assertThat(maxIdle.get()).as("ready idle amd64 pods at most desired + surge").isLessThanOrEqualTo(3);
        assertThat(ok("get", "pools")).contains("runner-amd64");
        assertThat(ok("-n", "playpen", "get", "events", "-o", "custom-columns=REASON:.reason,OBJECT:.involvedObject.name"))
                .contains("Stale");

        // a rollout to an image that never gets ready: the pool backs off and keeps its stale pods serving
        operator(BROKEN);
        OperatorHarness.awaitTrue(() -> kubectl("get", "pool", "runner-amd64", "-o",
                "jsonpath={.status.conditions[2].reason}").out().equals("BackOff"), Duration.ofSeconds(40), "backing off");
        String yaml = ok("get", "pool", "runner-amd64", "-o", "yaml");
        assertThat(yaml).contains("reason: BackOff", "reason: RollingOut", "stale: 2", "image: " + BROKEN);
        assertThat(readyIdle("amd64", "example.com/playpen-runner:v2")).as("stale pods still serving").isEqualTo(2);
        Path req = dir.resolve("alloc.json");
        Files.writeString(req, "{\"idempotencyKey\":\"pools-kubectl\",\"architecture\":\"amd64\",\"wireGuardPublicKey\":\""
                + TestCluster.wgKey(9) + "\"}");
        assertThat(ok("create", "--raw", "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs", "-f", req.toString()))
                .contains("\"resourceType\":\"runner\"");
        ok("get", "pools");
        assertThat(ok("get", "events", "-A", "-o", "custom-columns=REASON:.reason,MESSAGE:.message"))
                .contains("NotReadyInTime", "BackOff");
    }
}
