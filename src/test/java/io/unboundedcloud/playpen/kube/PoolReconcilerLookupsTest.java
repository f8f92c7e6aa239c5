package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.client.KubernetesClientException;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.model.PoolPlan;
import io.unboundedcloud.playpen.model.PoolPlanner;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * What a pass learns besides the pods, as the operator wires it: the nodes (an idle pod whose node is gone is
 * replaced, but only once the node cache knows the nodes) and the pool signals told of each unhealthy delete; and
 * a create whose outcome is unknown: one that did not land is tried again by the next pass, a refusal is
 * forgotten without a read.
 */
class PoolReconcilerLookupsTest {
    static final String POST_PODS = "/api/v1/namespaces/" + TestCluster.NS + "/pods";
    static final String STATUS_500 = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":500}";

    /** A reconciler with a node cache (started or not) and pool signals, over a synced pod cache. */
    record Wired(PodCache pods, NodeCache nodes, PoolReconciler pool, List<PoolPlan.Deletion> deleted,
            ApiCallCounter calls) implements AutoCloseable {
        static Wired of(TestCluster cluster, boolean nodesKnown, String... flags) throws Exception {
            OperatorConfig config = OperatorConfig.parse(flags);
            PodCache pods = new PodCache(cluster.client, TestCluster.NS,
                    new Candidates(config.runnerLabelSelector())::idleKindKey);
            NodeCache nodes = new NodeCache(cluster.client);
            if (nodesKnown) {
                nodes.start();
                OperatorHarness.awaitTrue(nodes::hasSynced, Duration.ofSeconds(10), "node cache synced");
            }
            PoolPlanner planner = new PoolPlanner(config, new PodTemplates(config, Map.of()));
            PoolSignals signals = new PoolSignals(planner, nodes, Clock.systemUTC(), config.pools());
            ApiCallCounter calls = new ApiCallCounter();
            PoolReconciler pool = new PoolReconciler(cluster.client, config, pods, nodes, planner, signals, () -> true,
                    calls, Clock.systemUTC());
            // both follow the pod cache, as in the operator: the signals see which pods were ever ready
            pods.addListener(signals);
            pods.addListener(pool);
            // listeners are called in order: a pod this one has been told of, the two before it have too
            java.util.Set<String> told = java.util.concurrent.ConcurrentHashMap.newKeySet();
            pods.addListener((change, pod) -> told.add(ManagedPods.name(pod)));
            pods.start();
            int existing = cluster.pods().size();
            OperatorHarness.awaitTrue(() -> pods.hasSynced() && told.size() == existing, Duration.ofSeconds(10),
                    "pod cache synced and its listeners told");
            List<PoolPlan.Deletion> deleted = new CopyOnWriteArrayList<>();
            pool.addObserver(new PoolReconciler.Observer() {
                @Override
                public void deleted(PoolPlan.Deletion deletion) {
                    deleted.add(deletion);
                }
            });
            return new Wired(pods, nodes, pool, deleted, calls);
        }

        @Override
        public void close() {
            pool.close();
            nodes.close();
            pods.close();
        }
    }

    @Test
    void anIdlePodWhoseNodeIsGoneIsReplacedOnceTheNodesAreKnown() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            cluster.create(TestCluster.readyRunner("amd64", 51820, "node-gone"));
            String flags = "--runner-amd64-count=1";
            String grace = "--pool-node-not-ready-grace=0s"; // a pod on a missing node counts at once
            // the nodes unknown (the node cache not synced): the node checks are skipped, the pod stays
            try (Wired w = Wired.of(cluster, false, flags, grace, "--runner-arm64-count=0")) {
                PoolReconciler.Pass pass = w.pool().plan(w.pool().assess());
                assertThat(pass.plan().toDelete()).isEmpty();
                assertThat(w.pool().finish(w.pool().create(w.pool().delete(pass))).created()).isZero();
            }
            assertThat(cluster.pods()).extracting(ManagedPods::name).containsExactly("playpen-runner-amd64-51820");

            // the nodes known: its node is gone, so it is deleted as unhealthy (observers told) and replaced
            try (Wired w = Wired.of(cluster, true, flags, grace, "--runner-arm64-count=0")) {
                PoolReconciler.Pass pass = w.pool().plan(w.pool().assess());
                assertThat(pass.plan().toDelete()).singleElement().satisfies(d -> {
                    assertThat(d.why()).isEqualTo(PoolPlan.Why.UNHEALTHY);
                    assertThat(ManagedPods.name(d.pod())).isEqualTo("playpen-runner-amd64-51820");
                });
                PoolReconciler.Result r = w.pool().finish(w.pool().create(w.pool().delete(pass)));
                assertThat(r.deleted()).isEqualTo(1);
                assertThat(r.created()).isEqualTo(1);
                assertThat(w.deleted()).singleElement().satisfies(d ->
                        assertThat(d.why()).isEqualTo(PoolPlan.Why.UNHEALTHY));
                assertThat(w.calls().get(KubeApiCall.PODS_DELETE)).isEqualTo(1);
                assertThat(w.calls().get(KubeApiCall.PODS_CREATE)).isEqualTo(1);
            }
            assertThat(cluster.pods()).hasSize(1).noneMatch(p -> "node-gone".equals(p.getSpec().getNodeName()));
        }
    }

    @Test
    void aCreateThatDidNotLandIsTriedAgainByTheNextPass() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                Wired w = Wired.of(cluster, true, "--runner-amd64-count=1", "--runner-arm64-count=0")) {
            // both tries (fabric8 retries once) answered 500 before any write: the outcome is unknown, one read
            // finds no pod, so the name is not kept expected
            cluster.server.expect().post().withPath(POST_PODS).andReturn(500, STATUS_500).times(2);
            assertThatThrownBy(() -> w.pool().reconcile()).isInstanceOfSatisfying(KubernetesClientException.class,
                    e -> assertThat(e.getCode()).isEqualTo(500));
            assertThat(cluster.pods()).isEmpty();
            assertThat(w.calls().get(KubeApiCall.PODS_GET)).isEqualTo(1);
            assertThat(w.pool().reconcile().created()).isEqualTo(1);
            assertThat(cluster.pods()).extracting(ManagedPods::name).containsExactly("playpen-runner-amd64-51820");
        }
    }

    @Test
    void aRefusedCreateIsForgottenWithoutARead() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                Wired w = Wired.of(cluster, true, "--runner-amd64-count=1", "--runner-arm64-count=0")) {
            // 503 (overload) is a refusal before the write: nothing to read, nothing kept expected
            cluster.server.expect().post().withPath(POST_PODS).andReturn(503, "{\"kind\":\"Status\",\"apiVersion\":"
                    + "\"v1\",\"status\":\"Failure\",\"code\":503}").times(2);
            assertThatThrownBy(() -> w.pool().reconcile()).isInstanceOf(KubernetesClientException.class);
            assertThat(w.calls().get(KubeApiCall.PODS_GET)).isZero();
            assertThat(w.pool().reconcile().created()).isEqualTo(1);
        }
    }
}
