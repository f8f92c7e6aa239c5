package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import ch.qos.logback.classic.spi.ILoggingEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.model.PoolBackoff;
import io.unboundedcloud.playpen.model.PoolHealth;
import io.unboundedcloud.playpen.model.PoolPlan;
import io.unboundedcloud.playpen.model.PoolPlanner;
import io.unboundedcloud.playpen.model.PoolTarget;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.MutableClock;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * What a pass learns besides the pods, as the operator wires it: the nodes (an idle pod whose node is gone is
 * replaced, but only once the node cache knows the nodes) and the pool signals told of each unhealthy delete; and
 * a create whose outcome is unknown: one that did not land is tried again by the next pass, a refusal is
 * forgotten without a read. The signals learn from the pass itself: a failed replacement it deletes pauses the pool
 * at once, a paused pool asks for a pass when its pause ends, and a pod's time-to-ready counts from its create call.
 */
class PoolReconcilerLookupsTest {
    @RegisterExtension
    final CapturedLogs logs = CapturedLogs.of(PoolReconciler.class);
    static final String POST_PODS = "/api/v1/namespaces/" + TestCluster.NS + "/pods";
    static final String STATUS_500 = failure(500, null);

    /** A failure Status as the API server answers it. */
    static String failure(int code, String reason) {
        return "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                + (reason == null ? "" : "\"reason\":\"" + reason + "\",") + "\"code\":" + code + "}";
    }

    /**
     * A reconciler with a node cache (started or not) and pool signals, over a synced pod cache; {@code told} holds
     * the pods as a listener added after the pool's has heard of them (listeners are called in order, so the pool
     * has heard of each change it shows). The passes pod events ask for are not run: each test runs its passes
     * itself, and one in the background (a pod deleted asks for one after the debounce) could run before the test's
     * and do its work. A test about the passes asked for records them instead.
     */
    record Wired(PodCache pods, NodeCache nodes, PoolReconciler pool, PoolSignals signals,
            List<PoolPlan.Deletion> deleted, ApiCallCounter calls, PoolReconcilerPassTest.Seen told)
            implements AutoCloseable {
        static Wired of(TestCluster cluster, boolean nodesKnown, String... flags) throws Exception {
            return of(cluster, nodesKnown, true, Clock.systemUTC(), flags);
        }

        /**
         * @param signalsFollowPods whether the pool signals follow the pod cache too (as in the operator); without,
         *                          they learn only what the reconciler tells them
         * @param clock             the reconciler's and the signals' clock
         */
        static Wired of(TestCluster cluster, boolean nodesKnown, boolean signalsFollowPods, Clock clock,
                String... flags) throws Exception {
            OperatorConfig config = OperatorConfig.parse(flags);
            PodCache pods = new PodCache(cluster.client, TestCluster.NS,
                    new Candidates(config.runnerLabelSelector())::idleKindKey);
            NodeCache nodes = new NodeCache(cluster.client);
            if (nodesKnown) {
                nodes.start();
                OperatorHarness.awaitTrue(nodes::hasSynced, Duration.ofSeconds(60), "node cache synced");
            }
            PoolPlanner planner = new PoolPlanner(config, new PodTemplates(config, Map.of()));
            PoolSignals signals = new PoolSignals(planner, nodes, clock, config.pools());
            ApiCallCounter calls = new ApiCallCounter();
            PoolReconciler pool = new PoolReconciler(cluster.client, config, pods, nodes, planner, signals, () -> true,
                    calls, clock);
            pool.runPassesWith(() -> { });
            // both follow the pod cache, as in the operator: the signals see which pods were ever ready
            if (signalsFollowPods) {
                pods.addListener(signals);
            }
            pods.addListener(pool);
            // listeners are called in order: a change this one has been told of, the two before it have too
            PoolReconcilerPassTest.Seen told = new PoolReconcilerPassTest.Seen();
            told.follow(pods);
            pods.start();
            int existing = cluster.pods().size();
            OperatorHarness.awaitTrue(() -> pods.hasSynced() && told.toldToListeners.size() == existing,
                    Duration.ofSeconds(60), "pod cache synced and its listeners told");
            List<PoolPlan.Deletion> deleted = new CopyOnWriteArrayList<>();
            pool.addObserver(new PoolReconciler.Observer() {
                @Override
                public void deleted(PoolPlan.Deletion deletion) {
                    deleted.add(deletion);
                }
            });
            return new Wired(pods, nodes, pool, signals, deleted, calls, told);
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

    /**
     * A replica that has just started or won the Lease may plan before its node cache has synced. A pod ready in
     * itself on a node that turned NotReady (within the grace) is no ready capacity, but only the nodes tell: until
     * they are known the pass deletes no surplus (nor stale) pod, so a lowered count does not take the usable ready
     * pods and keep the cut-off one. Once the nodes are known, the cut-off pod goes first.
     */
    @Test
    void aPassBeforeTheNodesAreKnownDeletesNoSurplusPodThenTheCutOffOneGoesFirst() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            cluster.client.nodes().resource(new io.fabric8.kubernetes.api.model.NodeBuilder().withNewMetadata()
                    .withName("node-down").addToLabels("kubernetes.io/arch", "amd64").endMetadata().withNewStatus()
                    .addNewAddress().withType("ExternalIP").withAddress("203.0.113.11").endAddress()
                    .addNewCondition().withType("Ready").withStatus("Unknown")
                    .withLastTransitionTime(Instant.now().toString()).endCondition().endStatus().build()).create();
            OperatorConfig four = OperatorConfig.parse("--runner-amd64-count=4", "--runner-arm64-count=0");
            PoolPlanner made = new PoolPlanner(four, new PodTemplates(four, Map.of()));
            // four ready idle pods the pool made, the oldest (lowest port) on the node that turned NotReady
            for (int port = 51820; port <= 51823; port++) {
                cluster.create(new PodBuilder(made.podFor(PoolTarget.runner("amd64"), port)).editMetadata()
                        .addToAnnotations(io.unboundedcloud.playpen.model.PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY,
                                TestCluster.wgKey(port)).endMetadata()
                        .editSpec().withNodeName(port == 51820 ? "node-down" : "node-a").endSpec()
                        .withNewStatus().withPhase("Running").addNewContainerStatus().withName("runner")
                        .withReady(true).withNewState().withNewRunning().endRunning().endState().endContainerStatus()
                        .addNewCondition().withType("Ready").withStatus("True").endCondition().endStatus());
            }
            // the count lowered to 2 (a restart with the new flag): the new leader's first pass, the nodes unknown
            String[] two = { "--runner-amd64-count=2", "--runner-arm64-count=0" };
            try (Wired w = Wired.of(cluster, false, two)) {
                PoolReconciler.Pass pass = w.pool().plan(w.pool().assess());
                assertThat(pass.plan().toDelete()).extracting(d -> ManagedPods.name(d.pod()))
                        .as("deletes planned with the nodes unknown").isEmpty();
                assertThat(w.pool().finish(w.pool().create(w.pool().delete(pass))).created()).isZero();
                assertThat(logs.lines()).map(ILoggingEvent::getFormattedMessage)
                        .anyMatch(m -> m.startsWith("outcome=nodes-not-synced"));
                assertThat(cluster.pods()).hasSize(4);

                // the nodes known: the pod on the NotReady node is not ready capacity, it goes first
                w.nodes().start();
                OperatorHarness.awaitTrue(w.nodes()::hasSynced, Duration.ofSeconds(60), "node cache synced");
                PoolReconciler.Result r = w.pool().reconcile();
                assertThat(r.deleted()).isEqualTo(2);
                assertThat(w.deleted()).extracting(d -> ManagedPods.name(d.pod()))
                        .containsExactly("playpen-runner-amd64-51820", "playpen-runner-amd64-51823");
            }
            assertThat(cluster.pods()).extracting(ManagedPods::name)
                    .containsExactlyInAnyOrder("playpen-runner-amd64-51821", "playpen-runner-amd64-51822");
        }
    }

    @Test
    void aCreateThatDidNotLandIsTriedAgainByTheNextPass() throws Exception {
        MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
        try (TestCluster cluster = TestCluster.start();
                Wired w = Wired.of(cluster, true, true, clock, "--runner-amd64-count=1", "--runner-arm64-count=0")) {
            // both tries (fabric8 retries once) answered 500 before any write: the outcome is unknown, one read
            // finds no pod, so the name is not kept expected; but the API server may still commit that create, so
            // the next pass's pod takes the next hostPort
            cluster.server.expect().post().withPath(POST_PODS).andReturn(500, STATUS_500).times(2);
            assertThatThrownBy(() -> w.pool().reconcile()).isInstanceOfSatisfying(KubernetesClientException.class,
                    e -> assertThat(e.getCode()).isEqualTo(500));
            assertThat(cluster.pods()).isEmpty();
            assertThat(w.calls().get(KubeApiCall.PODS_GET)).isEqualTo(1);
            clock.now = clock.now.plusSeconds(1); // past the pause the failure started
            assertThat(w.pool().reconcile().created()).isEqualTo(1);
            assertThat(cluster.pods()).extracting(ManagedPods::name).containsExactly("playpen-runner-amd64-51821");
        }
    }

    @Test
    void aCreateNoReadCouldSettleHoldsItsPlaceForAMinuteThenIsTriedAgain() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                Wired w = Wired.of(cluster, true, "--runner-amd64-count=1", "--runner-arm64-count=0")) {
            java.util.concurrent.atomic.AtomicLong nanos = new java.util.concurrent.atomic.AtomicLong(-5_000_000_000L);
            w.pool().timeExpectationsWith(nanos::get);
            // both tries answered 500 (no write here, but nobody can know) and the read that would tell is refused:
            // the name stays expected, so a pod that did land is not created again under another port
            cluster.server.expect().post().withPath(POST_PODS).andReturn(500, STATUS_500).times(2);
            cluster.forbidden = key -> key.startsWith("GET " + POST_PODS + "/");
            assertThatThrownBy(() -> w.pool().reconcile()).isInstanceOf(KubernetesClientException.class);
            cluster.forbidden = key -> false;
            assertThat(w.pool().reconcile().created()).as("still expected").isZero();
            nanos.addAndGet(Duration.ofSeconds(59).toNanos());
            assertThat(w.pool().reconcile().created()).as("59 s later: still expected").isZero();
            // no watch ever showed it: after a minute the pool stops waiting for it
            nanos.addAndGet(Duration.ofSeconds(2).toNanos());
            assertThat(w.pool().reconcile().created()).isEqualTo(1);
            assertThat(cluster.pods()).extracting(ManagedPods::name).containsExactly("playpen-runner-amd64-51820");
        }
    }

    @Test
    void aCreateAnswered503IsReadBackThenThePassAfterItCreates() throws Exception {
        MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
        try (TestCluster cluster = TestCluster.start();
                Wired w = Wired.of(cluster, true, true, clock, "--runner-amd64-count=1", "--runner-arm64-count=0")) {
            // a 503 (overload) refuses the write it answers, but the client sends a create once more by itself after
            // a 5xx, so the 503 that comes back may follow a first try that was written: the pod is read back
            cluster.server.expect().post().withPath(POST_PODS).andReturn(503, failure(503, null)).times(2);
            assertThatThrownBy(() -> w.pool().reconcile()).isInstanceOf(KubernetesClientException.class);
            assertThat(w.calls().get(KubeApiCall.PODS_GET)).isEqualTo(1);
            clock.now = clock.now.plusSeconds(1); // past the pause the failure started
            assertThat(w.pool().reconcile().created()).isEqualTo(1);
        }
    }

    /** The refused creates the pool tells its observers of, from now on. */
    private static List<PoolReconciler.CreateRefusal> refusalsTold(Wired w) {
        List<PoolReconciler.CreateRefusal> told = new CopyOnWriteArrayList<>();
        w.pool().addObserver(new PoolReconciler.Observer() {
            @Override
            public void createRefused(PoolReconciler.CreateRefusal refusal) {
                told.add(refusal);
            }
        });
        return told;
    }

    /**
     * A create the API server refuses (a quota's 403, a 422) pauses the pool's creates, 1 s doubling per refusal in a
     * row, and each refusal is told once; a create that succeeds ends the pause.
     */
    @Test
    void aRefusedCreatePausesThePoolsCreatesAndIsToldOnce() throws Exception {
        MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
        try (TestCluster cluster = TestCluster.start();
                Wired w = Wired.of(cluster, true, true, clock, "--runner-amd64-count=1", "--runner-arm64-count=0")) {
            List<PoolReconciler.CreateRefusal> told = refusalsTold(w);
            cluster.server.expect().post().withPath(POST_PODS).andReturn(403, "{\"kind\":\"Status\",\"apiVersion\":"
                    + "\"v1\",\"status\":\"Failure\",\"reason\":\"Forbidden\",\"code\":403,\"message\":\"pods "
                    + "is forbidden: exceeded quota: pods, requested: pods=1, used: pods=10, limited: pods=10\"}").once();
            assertThatThrownBy(() -> w.pool().reconcile()).isInstanceOf(KubernetesClientException.class);
            assertThat(w.calls().get(KubeApiCall.PODS_CREATE)).isEqualTo(1);
            assertThat(told).singleElement().satisfies(r -> {
                assertThat(r.code()).isEqualTo(403);
                assertThat(r.pause()).isEqualTo(Duration.ofSeconds(1));
                assertThat(r.message()).contains("runner/amd64").contains("HTTP 403").contains("exceeded quota")
                        .contains("check ResourceQuota and admission webhooks");
            });
            assertThat(logs.lines()).map(ILoggingEvent::getFormattedMessage)
                    .filteredOn(m -> m.contains("outcome=create-refused")).hasSize(1);

            // within the pause: no create, nothing told again
            assertThat(w.pool().reconcile().created()).isZero();
            assertThat(w.calls().get(KubeApiCall.PODS_CREATE)).isEqualTo(1);
            assertThat(told).hasSize(1);

            // after it: tried again; refused again (422), the pause doubles
            clock.now = clock.now.plusSeconds(1);
            cluster.server.expect().post().withPath(POST_PODS).andReturn(422, failure(422, "Invalid")).once();
            assertThatThrownBy(() -> w.pool().reconcile()).isInstanceOf(KubernetesClientException.class);
            assertThat(w.calls().get(KubeApiCall.PODS_CREATE)).isEqualTo(2);
            assertThat(told).hasSize(2).last().satisfies(r -> {
                assertThat(r.code()).isEqualTo(422);
                assertThat(r.pause()).isEqualTo(Duration.ofSeconds(2));
            });
            clock.now = clock.now.plusSeconds(1);
            assertThat(w.pool().reconcile().created()).as("1 s into a 2 s pause").isZero();
            assertThat(w.calls().get(KubeApiCall.PODS_CREATE)).isEqualTo(2);

            // the pause over, the create succeeds: that ends it, a later refusal pauses 1 s again
            clock.now = clock.now.plusSeconds(1);
            assertThat(w.pool().reconcile().created()).isEqualTo(1);
            deleteOnceThePoolHasHeardOf(cluster, w, "playpen-runner-amd64-51820");
            cluster.server.expect().post().withPath(POST_PODS).andReturn(403, failure(403, "Forbidden")).once();
            assertThatThrownBy(() -> w.pool().reconcile()).isInstanceOf(KubernetesClientException.class);
            assertThat(told).hasSize(3).last().satisfies(r -> assertThat(r.pause()).isEqualTo(Duration.ofSeconds(1)));
        }
    }

    /**
     * A 500 that leaves no pod (a webhook the API server cannot reach, an overloaded API server) pauses the pool's
     * creates as a refusal does, and is told as a failure, not a refusal: the passes that follow at once do not hit
     * the failing API server again; the first after the pause creates.
     */
    @Test
    void aServerErrorPausesCreatesAsARefusalDoes() throws Exception {
        MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
        try (TestCluster cluster = TestCluster.start();
                Wired w = Wired.of(cluster, true, true, clock, "--runner-amd64-count=1", "--runner-arm64-count=0")) {
            List<PoolReconciler.CreateRefusal> told = refusalsTold(w);
            cluster.server.expect().post().withPath(POST_PODS).andReturn(500, STATUS_500).times(2);
            assertThatThrownBy(() -> w.pool().reconcile()).isInstanceOf(KubernetesClientException.class);
            long creates = w.calls().get(KubeApiCall.PODS_CREATE);
            assertThat(told).singleElement().satisfies(r -> {
                assertThat(r.code()).isEqualTo(500);
                assertThat(r.pause()).isEqualTo(Duration.ofSeconds(1));
                assertThat(r.message()).contains("failed a pod create with HTTP 500").doesNotContain("refused");
            });
            assertThat(w.pool().reconcile().created()).as("within the pause").isZero();
            assertThat(w.calls().get(KubeApiCall.PODS_CREATE)).isEqualTo(creates);
            clock.now = clock.now.plusSeconds(1);
            assertThat(w.pool().reconcile().created()).isEqualTo(1);
        }
    }

    @Test
    void aPassGivesUpOnAPodAfterSeventeenAlreadyExistsInARowWithoutCallingTheRangeFull() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                // the signals do not follow the pods: deleting a pod that never got ready must not pause the pool here
                Wired w = Wired.of(cluster, true, false, Clock.systemUTC(), "--runner-amd64-count=1",
                        "--runner-arm64-count=0")) {
            java.util.concurrent.atomic.AtomicLong nanos = new java.util.concurrent.atomic.AtomicLong();
            w.pool().timeExpectationsWith(nanos::get);
            // every name answers AlreadyExists but no pod is there to read (a port held by something the reads
            // cannot see): the pass moves on port by port, 80 free in the range, and stops after 17 creates
            cluster.server.expect().post().withPath(POST_PODS).andReturn(409, failure(409, "AlreadyExists"))
                    .times(17);
            PoolReconciler.Result r = w.pool().reconcile();
            assertThat(r.created()).isZero();
            assertThat(r.alreadyExisted()).isEqualTo(17);
            assertThat(r.exhausted()).as("63 ports are still free: no exhaustion Event, metric or condition").isEmpty();
            assertThat(logs.lines()).map(ILoggingEvent::getFormattedMessage).anyMatch(m -> m.contains("outcome=deferred 17 hostPorts in a row answered"
                    + " AlreadyExists") && m.contains("the next pass creates the pod"));
            assertThat(w.calls().get(KubeApiCall.PODS_CREATE)).isEqualTo(17);
            assertThat(w.calls().get(KubeApiCall.PODS_GET)).as("each AlreadyExists read once").isEqualTo(17);
            assertThat(cluster.pods()).isEmpty();

            // the next pass starts past the ports it found held: the pod is made on the first port after them,
            // with no create sent for any of those
            PoolReconciler.Result next = w.pool().reconcile();
            assertThat(next.created()).isEqualTo(1);
            assertThat(next.alreadyExisted()).isZero();
            assertThat(w.calls().get(KubeApiCall.PODS_CREATE)).isEqualTo(18);
            assertThat(cluster.pods()).extracting(ManagedPods::name).containsExactly("playpen-runner-amd64-51837");

            // held ports lapse after a minute, as the expectations do: then the lowest free port is used again
            nanos.addAndGet(Duration.ofSeconds(59).toNanos());
            deleteOnceThePoolHasHeardOf(cluster, w, "playpen-runner-amd64-51837");
            assertThat(w.pool().reconcile().created()).isEqualTo(1);
            assertThat(cluster.pods()).extracting(ManagedPods::name).as("59 s: still held")
                    .containsExactly("playpen-runner-amd64-51837");
            deleteOnceThePoolHasHeardOf(cluster, w, "playpen-runner-amd64-51837");
            nanos.addAndGet(Duration.ofSeconds(2).toNanos());
            assertThat(w.pool().reconcile().created()).isEqualTo(1);
            assertThat(cluster.pods()).extracting(ManagedPods::name).containsExactly("playpen-runner-amd64-51820");
        }
    }

    /**
     * Deletes a pod the pool has heard of and waits until it has heard of the delete too, so the test's next pass
     * counts the pod gone.
     */
    static void deleteOnceThePoolHasHeardOf(TestCluster cluster, Wired w, String name) throws InterruptedException {
        w.told().awaitTold(name, java.util.Optional::isPresent, "the pool told of " + name);
        cluster.client.pods().inNamespace(TestCluster.NS).withName(name).delete();
        w.told().awaitTold(name, java.util.Optional::isEmpty, "the pool told of the delete of " + name);
    }

    /** A pool pod that failed without ever becoming ready. */
    static PodBuilder failedRunner(int hostPort, String node) {
        return TestCluster.readyRunner("amd64", hostPort, node).editStatus().withPhase("Failed")
                .editFirstContainerStatus().withReady(false).endContainerStatus().endStatus();
    }

    @Test
    void aFailedReplacementThePassDeletesPausesThePoolInThatPass() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            cluster.create(failedRunner(51820, "node-a"));
            // the signals follow no watch here: what they know of the delete, the pass itself told them (in the
            // operator the watch's DELETED event may come later, and the pass must not create in the meantime)
            try (Wired w = Wired.of(cluster, true, false, Clock.systemUTC(), "--runner-amd64-count=1",
                    "--runner-arm64-count=0")) {
                PoolReconciler.Pass pass = w.pool().plan(w.pool().assess());
                assertThat(pass.plan().toCreate()).as("the plan replaces the failed pod").hasSize(1);
                PoolReconciler.Result r = w.pool().finish(w.pool().create(w.pool().delete(pass)));
                assertThat(r.deleted()).isEqualTo(1);
                assertThat(r.created()).as("created while the pool pauses").isZero();
                assertThat(w.signals().backoffs().entrySet()).singleElement().satisfies(e -> {
                    assertThat(e.getKey().type()).isEqualTo(io.unboundedcloud.playpen.model.ResourceType.RUNNER);
                    assertThat(e.getValue().failures()).isEqualTo(1);
                    assertThat(e.getValue().pausedAt(Instant.now())).isTrue();
                });
            }
            assertThat(cluster.pods()).isEmpty();
        }
    }

    @Test
    void aPausedPoolAsksForAPassWhenItsPauseEnds() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                // a 5 s pause: the checks below must run while it lasts, which a loaded machine can take more
                // than a second to get through
                Wired w = Wired.of(cluster, true, "--runner-amd64-count=1", "--runner-arm64-count=0",
                        "--pool-backoff-base=5s")) {
            // passes the reconciler asks for are recorded instead of run
            List<Instant> asked = new CopyOnWriteArrayList<>();
            w.pool().runPassesWith(() -> asked.add(Instant.now()));
            PoolTarget amd64 = w.pool().planner().desired().keySet().iterator().next();
            Pod failed = failedRunner(51820, "node-a").editMetadata().withUid("failed-1").endMetadata().build();
            w.signals().deletedUnhealthy(amd64, failed, PoolHealth.Problem.FAILED);
            PoolBackoff.View pause = w.signals().backoffs().get(amd64);
            assertThat(pause.pausedAt(Instant.now())).isTrue();

            assertThat(w.pool().reconcile().created()).as("created while paused").isZero();
            assertThat(asked).as("no pod changed: nothing else asks for a pass").isEmpty();
            OperatorHarness.awaitTrue(() -> !asked.isEmpty(), Duration.ofSeconds(60), "a pass asked for");
            // a scheduled task never runs early: the pass comes after the pause, not at the interval
            assertThat(asked.get(0)).isAfterOrEqualTo(pause.nextCreateAt());
            assertThat(cluster.pods()).isEmpty();
        }
    }

    /** Passes during one pause leave one wake-up behind, not one each: they would pile up until the pause ends. */
    @Test
    void passesDuringAPauseScheduleOneWakeUp() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                Wired w = Wired.of(cluster, true, "--runner-amd64-count=1", "--runner-arm64-count=0",
                        "--pool-backoff-base=5m")) {
            w.pool().runPassesWith(() -> { });
            PoolTarget amd64 = w.pool().planner().desired().keySet().iterator().next();
            Pod failed = failedRunner(51820, "node-a").editMetadata().withUid("failed-1").endMetadata().build();
            w.signals().deletedUnhealthy(amd64, failed, PoolHealth.Problem.FAILED);
            assertThat(w.signals().backoffs().get(amd64).pausedAt(Instant.now())).isTrue();

            for (int i = 0; i < 5; i++) {
                assertThat(w.pool().reconcile().created()).as("created while paused").isZero();
            }

            assertThat(w.pool().scheduledTasks()).as("wake-ups waiting").isEqualTo(1);
        }
    }

    /**
     * A pass whose own delete of a failed replacement starts the pause asks itself for the pass that ends it: it
     * does not leave that to a later pass asked for by the pod's watch events (here recorded, not run: as when the
     * watch has a gap and the pool would wait for the interval timer).
     */
    @Test
    void aPassWhoseOwnDeleteStartsAPauseAsksForAPassWhenItEnds() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            cluster.create(failedRunner(51820, "node-a"));
            try (Wired w = Wired.of(cluster, true, "--runner-amd64-count=1", "--runner-arm64-count=0",
                    "--pool-backoff-base=5s")) {
                List<Instant> asked = new CopyOnWriteArrayList<>();
                w.pool().runPassesWith(() -> asked.add(Instant.now()));
                PoolTarget amd64 = w.pool().planner().desired().keySet().iterator().next();
                assertThat(w.signals().backoffs().getOrDefault(amd64, PoolBackoff.View.NONE).backingOff())
                        .as("no back-off before the pass").isFalse();
                PoolReconciler.Result r = w.pool().reconcile();
                assertThat(r.deleted()).isEqualTo(1);
                assertThat(r.created()).as("created while the pool pauses").isZero();
                PoolBackoff.View pause = w.signals().backoffs().get(amd64);
                assertThat(pause.pausedAt(Instant.now())).isTrue();
                OperatorHarness.awaitTrue(() -> asked.stream().anyMatch(t -> !t.isBefore(pause.nextCreateAt())),
                        Duration.ofSeconds(60), "a pass asked for when the pause ends");
            }
        }
    }

    @Test
    void aPodsTimeToReadyCountsFromItsCreateCall() throws Exception {
        // the signals' clock runs years ahead of the API server's creationTimestamp: a time-to-ready measured from
        // that timestamp would be years, not the seconds between the create call and the pod turning ready
        MutableClock clock = new MutableClock(Instant.parse("2030-01-01T00:00:00Z"));
        try (TestCluster cluster = TestCluster.start()) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            try (Wired w = Wired.of(cluster, true, true, clock, "--runner-amd64-count=1", "--runner-arm64-count=0")) {
                assertThat(w.pool().reconcile().created()).isEqualTo(1);
                String name = "playpen-runner-amd64-51820";
                PoolTarget amd64 = w.pool().planner().desired().keySet().iterator().next();
                clock.now = clock.now.plusSeconds(7);
                Pod ready = TestCluster.readyRunner("amd64", 51820, "node-a").build();
                cluster.client.pods().inNamespace(TestCluster.NS).withName(name).edit(p -> new PodBuilder(p)
                        .editMetadata().addToAnnotations(ready.getMetadata().getAnnotations()).endMetadata()
                        .editSpec().withNodeName("node-a").endSpec().withStatus(ready.getStatus()).build());
                OperatorHarness.awaitTrue(() -> w.signals().demand(amd64).timeToReady() != null,
                        Duration.ofSeconds(60), "time-to-ready learnt");
                assertThat(w.signals().demand(amd64).timeToReady()).isEqualTo(Duration.ofSeconds(7));
            }
        }
    }

    /**
     * With the buffer on, a pool whose count is 0 is one the operator keeps (a 503 tells the user to try again or
     * wait), yet no pod of it was ever seen becoming ready, so it has no time-to-ready to size its buffer by: while
     * allocations ask for it, it keeps one idle pod, which makes it one and teaches it its time-to-ready. Without
     * demand it keeps none.
     */
    @Test
    void aPoolWhoseCountIsZeroMakesAPodForItsDemandBeforeItKnowsItsTimeToReady() throws Exception {
        MutableClock clock = new MutableClock(Instant.parse("2030-01-01T00:00:00Z"));
        try (TestCluster cluster = TestCluster.start();
                Wired w = Wired.of(cluster, true, true, clock, "--runner-amd64-count=0", "--runner-arm64-count=0",
                        "--pool-max-idle=5")) {
            PoolTarget amd64 = PoolTarget.runner("amd64");
            assertThat(w.pool().planner().keeps(amd64)).isTrue();
            assertThat(w.pool().context(clock.now).desired()).as("no demand").containsEntry(amd64, 0);
            assertThat(w.pool().reconcile().created()).isZero();
            // an alloc turned away for lack of a pod
            w.signals().unserved(amd64);
            assertThat(w.pool().context(clock.now).desired()).containsEntry(amd64, 1);
            assertThat(w.pool().reconcile().created()).isEqualTo(1);
            assertThat(cluster.pods()).extracting(ManagedPods::name).contains("playpen-runner-amd64-51820");
            // a minute later nobody asks any more: it keeps none again
            clock.now = clock.now.plusSeconds(61);
            assertThat(w.pool().context(clock.now).desired()).containsEntry(amd64, 0);
        }
    }

    @Test
    void aPlanKnowsEachPoolsDemandAndTimeToReadyAndWithTheBufferOnHowManyIdlePodsToKeep() throws Exception {
        MutableClock clock = new MutableClock(Instant.parse("2030-01-01T00:00:00Z"));
        for (boolean buffer : new boolean[] {true, false}) {
            try (TestCluster cluster = TestCluster.start();
                    Wired w = Wired.of(cluster, true, true, clock, "--runner-amd64-count=1", "--runner-arm64-count=0",
                            "--pool-max-idle=" + (buffer ? 10 : 0))) {
                PoolTarget amd64 = PoolTarget.runner("amd64");
                PoolTarget arm64 = PoolTarget.runner("arm64");
                // amd64: one claim a second ago (0.5 a second over the shortest window), pods ready after 10 s
                w.signals().demand(amd64).claimed(clock.now.minusSeconds(1));
                w.signals().demand(amd64).readyAfter(Duration.ofSeconds(10));
                PoolPlanner.Context c = w.pool().context(clock.now);
                assertThat(c.rates()).containsEntry(amd64, 0.5).containsEntry(arm64, 0.0);
                // a pool no pod of which was seen becoming ready has no time-to-ready
                assertThat(c.readyTimes()).containsEntry(amd64, Duration.ofSeconds(10)).doesNotContainKey(arm64);
                if (buffer) {
                    // ceil(0.5/s x (10 s + the 100 ms refill wait)) = 6 idle pods; arm64 keeps its count, 0
                    assertThat(c.desired()).containsEntry(amd64, 6).containsEntry(arm64, 0);
                } else {
                    assertThat(c.desired()).as("the count flags are fixed").isEmpty();
                }
            }
        }
    }

    @Test
    void anIdlePodOnAGoneNodeIsDeletedWithoutGraceAFailedOneWithItsOwnEachAtThePlansVersion() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.addNode("node-a", "amd64", "203.0.113.10");
            Pod gone = cluster.create(TestCluster.readyRunner("amd64", 51820, "node-gone"));
            Pod failed = cluster.create(failedRunner(51821, "node-a"));
            try (Wired w = Wired.of(cluster, true, "--runner-amd64-count=2", "--runner-arm64-count=0",
                    "--pool-node-not-ready-grace=0s")) {
                Map<String, String> deletes = new java.util.concurrent.ConcurrentHashMap<>();
                cluster.addRequestListener(new TestCluster.RequestListener() {
                    @Override
                    public void onRequest(String key) {
                    }

                    @Override
                    public void onRequest(String key, java.util.function.Supplier<String> body) {
                        if (key.startsWith("DELETE ")) {
                            deletes.put(key.substring(key.lastIndexOf('/') + 1), body.get());
                        }
                    }
                });
                PoolReconciler.Pass pass = w.pool().delete(w.pool().plan(w.pool().assess()));
                w.pool().finish(pass);
                assertThat(pass.deleted()).isEqualTo(2);
                assertThat(deletes).containsOnlyKeys(ManagedPods.name(gone), ManagedPods.name(failed));
                // a pod on a node that is gone: no kubelet will ever confirm its end, so no grace period
                assertThat(deletes.get(ManagedPods.name(gone))).contains("\"gracePeriodSeconds\":0")
                        .contains("\"resourceVersion\":\"" + gone.getMetadata().getResourceVersion() + "\"");
                assertThat(deletes.get(ManagedPods.name(failed))).doesNotContain("gracePeriodSeconds")
                        .contains("\"resourceVersion\":\"" + failed.getMetadata().getResourceVersion() + "\"");
            }
        }
    }
}
