package io.unboundedcloud.playpen.reference;

import static io.unboundedcloud.playpen.reference.ReferencePods.NS;
import static io.unboundedcloud.playpen.reference.ReferencePods.testPod;
import static io.unboundedcloud.playpen.reference.ReferencePods.testPodWithHostPort;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.kube.ApiCallCounter;
import io.unboundedcloud.playpen.kube.ClaimWriter;
import io.unboundedcloud.playpen.kube.PodCache;
import io.unboundedcloud.playpen.kube.PoolReconciler;
import io.unboundedcloud.playpen.kube.TtlExpirer;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.model.TtlPolicy;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The reconcile and pod-template tests of the reference's operator_test.go (commit 420b010), one method per Go
 * test with the same inputs and expectations. The reference's ReconcileRunners is one pass of TTL expiry and
 * pool planning over the cluster; here that is one {@link TtlExpirer#sweep} and one {@link PoolReconciler#reconcile}
 * over the watch-fed cache of the mock API server (the routes only schedule these passes).
 */
class ReconcileReferenceTest {
    static TestCluster cluster;
    PodCache cache;

    @BeforeAll
    static void up() {
        cluster = TestCluster.start();
    }

    @AfterAll
    static void down() {
        cluster.close();
    }

    @AfterEach
    void clean() throws Exception {
        if (cache != null) {
            cache.close();
        }
        for (Pod p : cluster.pods()) {
            cluster.client.pods().inNamespace(NS).withName(p.getMetadata().getName()).withGracePeriod(0).delete();
        }
        OperatorHarness.awaitTrue(() -> cluster.pods().isEmpty(), Duration.ofSeconds(60), "no pods left");
    }

    /** testOperator(t, objects...) with op.Config set by {@code flags}: the pods exist and the cache has them. */
    OperatorConfig testOperator(List<Pod> pods, String... flags) throws Exception {
        OperatorConfig config = OperatorConfig.parse(flags);
        for (Pod p : pods) {
            cluster.client.pods().inNamespace(NS).resource(p).create();
        }
        cache = new PodCache(cluster.client, NS, new Candidates(config.runnerLabelSelector())::kindKey);
        cache.start();
        OperatorHarness.awaitTrue(() -> cache.hasSynced() && cache.pods().size() == pods.size(), Duration.ofSeconds(60),
                "pod cache");
        return config;
    }

    /** op.ReconcileRunners(ctx): TTL first, then the pools, as the reference orders it. */
    PoolReconciler.Result reconcile(OperatorConfig config) throws Exception {
        TtlExpirer ttl = new TtlExpirer(cache, new ClaimWriter(cluster.client, Clock.systemUTC(), new ApiCallCounter()),
                new TtlPolicy(config.playpenTtl()), Clock.systemUTC(), () -> true);
        try {
            ttl.sweep();
        } finally {
            ttl.close();
        }
        // the pool planner must see the deletions, as the reference plans from the pods that remain
        Set<String> names = new HashSet<>();
        cluster.pods().forEach(p -> names.add(p.getMetadata().getName()));
        OperatorHarness.awaitTrue(() -> cache.pods().stream().allMatch(p -> names.contains(p.getMetadata().getName())),
                Duration.ofSeconds(60), "cache to drop deleted pods");
        PoolReconciler pool = new PoolReconciler(cluster.client, config, cache, new PodTemplates(config, Map.of()),
                () -> true, new ApiCallCounter());
        try {
            return pool.reconcile();
        } finally {
            pool.close();
        }
    }

    static Map<String, String> claim(String key, String request, Object claimedAt) {
        Map<String, String> m = new HashMap<>();
        m.put(PlaypenKeys.IDEMPOTENCY_KEY_HASH, Hashes.sha256Hex(key));
        m.put(PlaypenKeys.REQUEST_HASH, Hashes.sha256Hex(request));
        m.put(PlaypenKeys.CLAIMED_AT, claimedAt.toString());
        return m;
    }

    static List<Pod> byAppName(String appName) {
        return cluster.pods().stream().filter(p -> appName.equals(ManagedPods.labels(p).get(PlaypenKeys.APP_NAME))).toList();
    }

    @Test // TestReconcileDeletesExpiredClaimedRunner
    void reconcileDeletesExpiredClaimedRunner() throws Exception {
        Instant now = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        OperatorConfig config = testOperator(List.of(
                testPod("old-runner", "node-1", claim("old-claim", "old-request", now.minus(Duration.ofHours(2)))),
                testPod("fresh-runner", "node-1", claim("fresh-claim", "fresh-request", now))),
                "--playpen-ttl=1h");
        reconcile(config);
        assertThat(cluster.client.pods().inNamespace(NS).withName("old-runner").get()).isNull();
        assertThat(cluster.client.pods().inNamespace(NS).withName("fresh-runner").get()).isNotNull();
    }

    @Test // TestReconcileDeletesClaimWithInvalidClaimedAt
    void reconcileDeletesClaimWithInvalidClaimedAt() throws Exception {
        OperatorConfig config = testOperator(List.of(testPod("runner-1", "node-1", claim("claim", "request", "not-a-time"))),
                "--playpen-ttl=1h");
        reconcile(config);
        assertThat(cluster.client.pods().inNamespace(NS).withName("runner-1").get()).isNull();
    }

    @Test // TestReconcileCreatesIdleRunnerPodsWithUniqueHostPorts
    void reconcileCreatesIdleRunnerPodsWithUniqueHostPorts() throws Exception {
        OperatorConfig config = testOperator(List.of(), "--runner-amd64-count=2", "--runner-arm64-count=1",
                "--runner-wireguard-host-port-start=52000", "--runner-wireguard-host-port-end=52002");
        reconcile(config);
        List<Pod> pods = byAppName("playpen-runner");
        assertThat(pods).hasSize(3);
        Set<Integer> hostPorts = new HashSet<>();
        Map<String, Integer> counts = new HashMap<>();
        for (Pod pod : pods) {
            int hostPort = ManagedPods.containerHostPort(pod).orElse(0);
            assertThat(hostPort).as(pod.getMetadata().getName()).isBetween(52000, 52002);
            assertThat(hostPorts.add(hostPort)).as("duplicate hostPort %d", hostPort).isTrue();
            counts.merge(ManagedPods.architecture(pod), 1, Integer::sum);
            assertThat(pod.getSpec().getServiceAccountName()).isEqualTo("playpen-runner");
            assertThat(pod.getSpec().getNodeSelector()).containsEntry("kubernetes.io/arch", ManagedPods.architecture(pod));
        }
        assertThat(counts).isEqualTo(Map.of("amd64", 2, "arm64", 1));
    }

    @Test // TestReconcileSkipsUsedRunnerHostPorts
    void reconcileSkipsUsedRunnerHostPorts() throws Exception {
        OperatorConfig config = testOperator(List.of(testPodWithHostPort("existing-runner", "node-1", 52000)),
                "--runner-amd64-count=2", "--runner-arm64-count=0",
                "--runner-wireguard-host-port-start=52000", "--runner-wireguard-host-port-end=52001");
        reconcile(config);
        List<Pod> pods = byAppName("playpen-runner");
        assertThat(pods).hasSize(2);
        Set<Integer> seen = new HashSet<>();
        pods.forEach(p -> seen.add(ManagedPods.containerHostPort(p).orElse(0)));
        assertThat(seen).as("existing hostPort 52000 kept, the new runner on the next free one").containsExactlyInAnyOrder(52000, 52001);
    }

    @Test // TestReconcileReportsNoFreeRunnerHostPorts
    void reconcileReportsNoFreeRunnerHostPorts() throws Exception {
        OperatorConfig config = testOperator(List.of(testPodWithHostPort("existing-runner", "node-1", 52000)),
                "--runner-amd64-count=2", "--runner-arm64-count=0",
                "--runner-wireguard-host-port-start=52000", "--runner-wireguard-host-port-end=52000");
        PoolReconciler.Result result = reconcile(config);
        // the reference's pass returns an error; ours reports the exhausted range (log, event, metric) and goes on
        assertThat(result.exhausted()).hasSize(1);
        assertThat(result.created()).isZero();
        assertThat(cluster.pods()).hasSize(1);
    }

    @Test // TestReconcileCreatesIdleControlPlanePodsPerVersion
    void reconcileCreatesIdleControlPlanePodsPerVersion() throws Exception {
        OperatorConfig config = testOperator(List.of(), "--runner-amd64-count=0", "--runner-arm64-count=0",
                "--control-plane-count=1", "--control-plane-versions=v1.33.0,1.34.0",
                "--control-plane-apiserver-host-port-start=16443", "--control-plane-apiserver-host-port-end=16444");
        reconcile(config);
        List<Pod> pods = byAppName("playpen-control-plane");
        assertThat(pods).hasSize(2);
        Map<String, Integer> versions = new HashMap<>();
        Set<Integer> hostPorts = new HashSet<>();
        for (Pod pod : pods) {
            versions.merge(ManagedPods.kubernetesVersion(pod), 1, Integer::sum);
            int hostPort = ManagedPods.containerHostPort(pod).orElse(0);
            assertThat(hostPort).as(pod.getMetadata().getName()).isBetween(16443, 16444);
            assertThat(hostPorts.add(hostPort)).as("duplicate hostPort %d", hostPort).isTrue();
            assertThat(pod.getSpec().getServiceAccountName()).isEqualTo("playpen-control-plane");
            Container k3s = pod.getSpec().getContainers().get(0);
            assertThat(k3s.getArgs()).contains("--write-kubeconfig=/etc/rancher/k3s/k3s.yaml");
            Container helper = pod.getSpec().getContainers().get(1);
            assertThat(helper.getCommand()).containsExactly("/unbounded/bin/playpen-runner");
            assertThat(helper.getArgs()).isNotEmpty();
            assertThat(helper.getArgs().get(0)).isEqualTo("control-plane");
        }
        assertThat(versions).isEqualTo(Map.of("v1.33.0", 1, "v1.34.0", 1));
    }

    @Test // TestManagedPodsInheritKubernetesServiceEnvOverrides
    void managedPodsInheritKubernetesServiceEnvOverrides() {
        Map<String, String> env = Map.of("KUBERNETES_SERVICE_HOST", "172.18.0.3", "KUBERNETES_SERVICE_PORT", "6443",
                "KUBERNETES_SERVICE_PORT_HTTPS", "6443");
        PodTemplates templates = new PodTemplates(OperatorConfig.parse(), env);
        List<EnvVar> runnerEnv = templates.runner("amd64", 51820).getSpec().getContainers().get(0).getEnv();
        assertEnvVar(runnerEnv, "KUBERNETES_SERVICE_HOST", "172.18.0.3");
        assertEnvVar(runnerEnv, "KUBERNETES_SERVICE_PORT", "6443");
        assertEnvVar(runnerEnv, "KUBERNETES_SERVICE_PORT_HTTPS", "6443");
        List<EnvVar> helperEnv = templates.controlPlane("v1.33.0", 16443).getSpec().getContainers().get(1).getEnv();
        assertEnvVar(helperEnv, "KUBERNETES_SERVICE_HOST", "172.18.0.3");
        assertEnvVar(helperEnv, "KUBERNETES_SERVICE_PORT", "6443");
        assertEnvVar(helperEnv, "KUBERNETES_SERVICE_PORT_HTTPS", "6443");
    }

    static void assertEnvVar(List<EnvVar> env, String name, String want) {
        List<String> values = new ArrayList<>();
        env.stream().filter(e -> e.getName().equals(name)).forEach(e -> values.add(e.getValue()));
        assertThat(values).as("env %s in %s", name, env).containsExactly(want);
    }
}
