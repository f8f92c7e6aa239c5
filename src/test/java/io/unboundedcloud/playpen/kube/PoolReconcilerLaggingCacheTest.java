package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.model.PoolHealth;
import io.unboundedcloud.playpen.model.PoolTarget;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.LagProxy;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * A leader whose pod cache lags the API server: the ready idle pods a rollout or a scale-down counts on were claimed
 * by another replica, and the leader's watch has not shown it yet. The stale or surplus pod stays until the API
 * server's count of ready idle pods allows its delete, so the pool is never left without a ready idle pod.
 */
class PoolReconcilerLaggingCacheTest {
    private static final PoolTarget AMD64 = PoolTarget.runner("amd64");

    @RegisterExtension
    final CapturedLogs logs = CapturedLogs.of(PoolReconciler.class);

    interface Body {
        void run(TestCluster cluster, LagProxy lag, PoolReconciler pool, PodCache cache, PoolReconcilerPassTest.Seen seen)
                throws Exception;
    }

    /** A leader whose client (and so its pod watch) goes through a {@link LagProxy}; the test writes directly. */
    static void withLaggingLeader(Body body, String... flags) throws Exception {
        try (TestCluster cluster = TestCluster.start();
                LagProxy lag = new LagProxy(java.net.URI.create(cluster.server.url("/")));
                KubernetesClient viaLag = KubeClients.create(new ConfigBuilder().withMasterUrl(lag.url().toString())
                        .withNamespace(TestCluster.NS).withTrustCerts(true).build())) {
            PoolReconcilerPassTest.withFollowingPool(cluster, viaLag, lag::releaseWatches,
                    (c, pool, cache, seen) -> body.run(c, lag, pool, cache, seen), flags);
        }
    }

    /** A ready idle pod of the pool on {@code port}, from its template, with {@code templateHash} recorded. */
    static String readyPoolPod(TestCluster cluster, PoolReconciler pool, PoolReconcilerPassTest.Seen seen, int port,
            String templateHash) throws Exception {
        Pod ready = TestCluster.readyRunner("amd64", port, "node-a").build();
        PodBuilder made = new PodBuilder(pool.planner().podFor(AMD64, port)).editSpec().withNodeName("node-a")
                .endSpec().editMetadata().addToAnnotations(ready.getMetadata().getAnnotations()).endMetadata();
        if (templateHash != null) {
            made.editMetadata().addToLabels(PlaypenKeys.TEMPLATE_HASH, templateHash).endMetadata();
        }
        Pod pod = made.build();
        String name = ManagedPods.name(pod);
        cluster.client.pods().inNamespace(TestCluster.NS).resource(pod).create();
        makeReady(cluster, name, port);
        seen.awaitTold(name, p -> p.map(PoolHealth::ready).orElse(false), "the ready pod told to the pools");
        return name;
    }

    /** {@code name} (on {@code port}) made ready, as its kubelet and runner would. */
    static void makeReady(TestCluster cluster, String name, int port) {
        Pod ready = TestCluster.readyRunner("amd64", port, "node-a").build();
        cluster.client.pods().inNamespace(TestCluster.NS).withName(name).edit(p -> new PodBuilder(p)
                .editSpec().withNodeName("node-a").endSpec()
                .editMetadata().addToAnnotations(ready.getMetadata().getAnnotations()).endMetadata()
                .withStatus(ready.getStatus()).build());
    }

    /** Another replica claims {@code name}, straight in the API server. */
    static void claimElsewhere(TestCluster cluster, String name) {
        Pod pod = cluster.client.pods().inNamespace(TestCluster.NS).withName(name).get();
        new ClaimWriter(cluster.client, Clock.systemUTC(), new ApiCallCounter()).claim(pod,
                pod.getMetadata().getResourceVersion(), new AllocCommand(Hashes.keyHash("claimed-elsewhere-" + name),
                        ResourceType.RUNNER, "", TestCluster.wgKey(1), "amd64"));
    }

    /** The pool's ready idle pods as the API server has them. */
    static List<String> readyIdleInApiServer(TestCluster cluster) {
        return cluster.pods().stream().filter(p -> ManagedPods.isIdle(p) && PoolHealth.ready(p))
                .map(ManagedPods::name).sorted().toList();
    }

    /**
     * A rollout: a stale ready pod goes once a ready current pod stays. That current pod was claimed by another
     * replica, and the leader's watch has not shown it: the stale pod stays (the pool's only ready idle pod) until
     * the API server shows a ready current pod that stays without it.
     */
    @Test
    void aRolloutKeepsTheStalePodWhenTheCurrentPodItCountsOnWasClaimedElsewhere() throws Exception {
        withLaggingLeader((cluster, lag, pool, cache, seen) -> {
            String stale = readyPoolPod(cluster, pool, seen, 51820, "0000000000000000");
            String current = readyPoolPod(cluster, pool, seen, 51821, null);
            lag.holdWatches();
            claimElsewhere(cluster, current);
            assertThat(ManagedPods.isClaimed(cache.get(current).orElseThrow()))
                    .as("the leader's cache does not show the claim yet").isFalse();

            PoolReconciler.Result lagging = pool.reconcile();

            assertThat(readyIdleInApiServer(cluster)).as("the pool keeps its one ready idle pod").containsExactly(stale);
            assertThat(lagging.deleted()).isZero();
            assertThat(seen.deleted).isEmpty();
            assertThat(seen.calls.get(KubeApiCall.PODS_DELETE)).as("no delete sent").isZero();
            assertThat(seen.calls.get(KubeApiCall.PODS_LIST)).as("one read of the pool's pods").isEqualTo(1);
            assertThat(logs.lines()).extracting(e -> e.getFormattedMessage())
                    .anyMatch(l -> l.contains(stale) && l.contains("outcome=too-few-ready-left"));

            // the watch catches up: the stale pod still serves, and a current pod is created to replace it
            lag.releaseWatches();
            seen.awaitTold(current, p -> p.map(ManagedPods::isClaimed).orElse(false), "the claim told to the pools");
            PoolReconciler.Result caughtUp = pool.reconcile();
            assertThat(caughtUp.deleted()).isZero();
            assertThat(caughtUp.created()).isEqualTo(1);
            String replacement = seen.created.get(seen.created.size() - 1);
            seen.awaitTold(replacement, java.util.Optional::isPresent, "the replacement told to the pools");
            makeReady(cluster, replacement,
                    ManagedPods.hostPort(cache.get(replacement).orElseThrow()).orElseThrow());
            seen.awaitTold(replacement, p -> p.map(PoolHealth::ready).orElse(false), "the replacement ready");

            // once the API server shows a ready current pod that stays, the stale pod goes
            PoolReconciler.Result rolled = pool.reconcile();
            assertThat(rolled.deleted()).isEqualTo(1);
            assertThat(seen.deleted).containsExactly(stale);
            assertThat(readyIdleInApiServer(cluster)).containsExactly(replacement);
        }, "--runner-amd64-count=1", "--runner-arm64-count=0");
    }

    /**
     * A scale-down: the younger of two ready pods is surplus while the other stays. The other was claimed by another
     * replica and the leader's watch has not shown it: the surplus pod stays, the pool's only ready idle pod.
     */
    @Test
    void aScaleDownKeepsTheSurplusPodWhenThePodThatWasToStayWasClaimedElsewhere() throws Exception {
        withLaggingLeader((cluster, lag, pool, cache, seen) -> {
            String older = readyPoolPod(cluster, pool, seen, 51820, null);
            String younger = readyPoolPod(cluster, pool, seen, 51821, null);
            lag.holdWatches();
            claimElsewhere(cluster, older);
            assertThat(ManagedPods.isClaimed(cache.get(older).orElseThrow()))
                    .as("the leader's cache does not show the claim yet").isFalse();

            PoolReconciler.Result lagging = pool.reconcile();

            assertThat(readyIdleInApiServer(cluster)).as("the pool keeps its one ready idle pod")
                    .containsExactly(younger);
            assertThat(lagging.deleted()).isZero();
            assertThat(seen.calls.get(KubeApiCall.PODS_DELETE)).as("no delete sent").isZero();
            assertThat(seen.calls.get(KubeApiCall.PODS_LIST)).as("one read of the pool's pods").isEqualTo(1);
        }, "--runner-amd64-count=1", "--runner-arm64-count=0");
    }

    /** When the read of the pool's pods fails, the surplus pod stays and the pass goes on without failing. */
    @Test
    void aReadOfThePoolThatFailsKeepsThePod() throws Exception {
        withLaggingLeader((cluster, lag, pool, cache, seen) -> {
            readyPoolPod(cluster, pool, seen, 51820, null);
            String younger = readyPoolPod(cluster, pool, seen, 51821, null);
            cluster.forbidden = key -> key.equals("GET /api/v1/namespaces/" + TestCluster.NS + "/pods");

            PoolReconciler.Result r = pool.reconcile();

            assertThat(r.deleted()).isZero();
            assertThat(seen.passFailed).containsExactly(false);
            assertThat(seen.calls.get(KubeApiCall.PODS_DELETE)).as("no delete sent").isZero();
            assertThat(cluster.client.pods().inNamespace(TestCluster.NS).withName(younger).get()).isNotNull();
            assertThat(logs.lines()).extracting(e -> e.getFormattedMessage())
                    .anyMatch(l -> l.contains("outcome=ready-count-unread"));
        }, "--runner-amd64-count=1", "--runner-arm64-count=0");
    }

    /** A pass that deletes nothing makes no read of the pool's pods: an idle pass still costs no API call. */
    @Test
    void aPassThatDeletesNothingReadsNothing() throws Exception {
        withLaggingLeader((cluster, lag, pool, cache, seen) -> {
            readyPoolPod(cluster, pool, seen, 51820, null);
            PoolReconciler.Result idle = pool.reconcile();
            assertThat(idle.deleted()).isZero();
            assertThat(idle.created()).isZero();
            assertThat(seen.calls.get(KubeApiCall.PODS_LIST)).isZero();
            assertThat(seen.calls.get(KubeApiCall.PODS_GET)).isZero();
            assertThat(seen.calls.get(KubeApiCall.PODS_DELETE)).isZero();
            assertThat(seen.calls.get(KubeApiCall.PODS_CREATE)).isZero();
        }, "--runner-amd64-count=1", "--runner-arm64-count=0");
    }
}
