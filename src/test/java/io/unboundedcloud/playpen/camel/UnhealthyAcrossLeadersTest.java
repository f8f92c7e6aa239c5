package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.kube.ApiCallCounter;
import io.unboundedcloud.playpen.kube.ClaimWriter;
import io.unboundedcloud.playpen.kube.EventRecorder;
import io.unboundedcloud.playpen.kube.PodCache;
import io.unboundedcloud.playpen.kube.PoolReconciler;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.model.PoolPlan;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The Warning on an allocated pod that is unhealthy is recorded once, whichever leader finds it: a replica that becomes
 * leader while the pod is still unhealthy (a rollout of the operator) finds the Event the one before it recorded.
 */
class UnhealthyAcrossLeadersTest {
    private static final String[] FLAGS = {"--namespace=" + TestCluster.NS, "--runner-amd64-count=1",
        "--runner-arm64-count=0"};

    @Test
    void aNewLeaderDoesNotRecordTheWarningOfAPodStillUnhealthyAgain() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            AtomicInteger eventCreatesAnswered = new AtomicInteger();
            cluster.addAnswerListener((method, path, answer) -> {
                if ("POST".equals(method) && path.startsWith("/api/v1/namespaces/" + TestCluster.NS + "/events")) {
                    eventCreatesAnswered.incrementAndGet();
                }
            });
            Pod pod = cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
            String name = ManagedPods.name(pod);
            new ClaimWriter(cluster.client, Clock.systemUTC(), new ApiCallCounter()).claim(pod,
                    pod.getMetadata().getResourceVersion(), new AllocCommand(Hashes.keyHash("across-leaders"),
                            ResourceType.RUNNER, "", TestCluster.wgKey(1), "amd64"));
            cluster.client.pods().inNamespace(TestCluster.NS).withName(name)
                    .edit(p -> new PodBuilder(p).editOrNewStatus().withPhase("Failed").endStatus().build());

            assertThat(asLeader(cluster, name, eventCreatesAnswered, 1)).as("first leader: written, failed, recorded elsewhere")
                    .containsExactly(1, 0, 0);
            // the first leader stepped down (closed); the next one finds the same pod still unhealthy: the API
            // server's AlreadyExists tells it the Event is there, which is no failure
            assertThat(asLeader(cluster, name, eventCreatesAnswered, 2)).as("second leader: written, failed, recorded elsewhere")
                    .containsExactly(0, 0, 1);

            List<Event> warnings = cluster.client.v1().events().inNamespace(TestCluster.NS).list().getItems().stream()
                    .filter(e -> "UnhealthyFailed".equals(e.getReason())).toList();
            assertThat(warnings).as("UnhealthyFailed Events on %s", name).hasSize(1);
            assertThat(warnings.get(0).getInvolvedObject().getName()).isEqualTo(name);
        }
    }

    /**
     * One leader's life: its cache, pool and recorder, one pass with the pod unhealthy; it steps down once the API
     * server has answered its Event's create ({@code answered} reaches {@code answers}).
     */
    private static long[] asLeader(TestCluster cluster, String name, AtomicInteger answered, int answers)
            throws Exception {
        OperatorConfig config = OperatorConfig.parse(FLAGS);
        PodCache cache = new PodCache(cluster.client, TestCluster.NS,
                new Candidates(config.runnerLabelSelector())::idleKindKey);
        try (EventRecorder recorder = new EventRecorder(cluster.client, Clock.systemUTC(), new ApiCallCounter(), 100,
                100, Duration.ofSeconds(1));
                PoolReconciler pool = new PoolReconciler(cluster.client, config, cache,
                        new PodTemplates(config, Map.of()), () -> true, new ApiCallCounter())) {
            ObservedEvents observed = new ObservedEvents(recorder, config, Map.of());
            AtomicInteger reported = new AtomicInteger();
            pool.runPassesWith(() -> { });
            pool.addObserver(new PoolReconciler.Observer() {
                @Override
                public void unhealthyAllocated(PoolPlan.Unhealthy u) {
                    reported.incrementAndGet();
                    observed.unhealthyAllocated(u);
                }
            });
            cache.addListener(pool);
            cache.start();
            OperatorHarness.awaitTrue(() -> cache.listenersCaughtUp() && cache.get(name).map(p -> ManagedPods.isClaimed(p)
                    && "Failed".equals(p.getStatus().getPhase())).orElse(false), Duration.ofSeconds(60),
                    "the claimed, failed pod in the cache");
            pool.reconcile();
            // each leader finds the pod unhealthy: what it does about the Event is the recorder's part
            assertThat(reported).hasValue(1);
            OperatorHarness.awaitTrue(() -> answered.get() == answers, Duration.ofSeconds(60),
                    "the leader's Event create answered");
            // the answer is handled on the recorder's thread after the listener saw it
            OperatorHarness.awaitTrue(() -> recorder.written() + recorder.failed() + recorder.recordedElsewhere() >= 1,
                    Duration.ofSeconds(60), "the answer handled");
            return new long[] {recorder.written(), recorder.failed(), recorder.recordedElsewhere()};
        } finally {
            cache.close();
        }
    }
}
