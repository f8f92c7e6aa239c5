package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.kube.ApiCallCounter;
import io.unboundedcloud.playpen.kube.EventRecorder;
import io.unboundedcloud.playpen.kube.NodeCache;
import io.unboundedcloud.playpen.kube.PodCache;
import io.unboundedcloud.playpen.kube.PoolReconciler;
import io.unboundedcloud.playpen.kube.PoolSignals;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.model.PoolBackoff;
import io.unboundedcloud.playpen.model.PoolHealth;
import io.unboundedcloud.playpen.model.PoolPlanner;
import io.unboundedcloud.playpen.model.PoolTarget;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * A failed replacement is told once as a Warning BackOff, whichever leader tells it: the leader whose pass deleted
 * the pod tells it then, and a replica that became leader before its watch saw the pod gone (within the pod's grace
 * period, as in a rollout of the operator) learns the same failure from the watch and finds the Event there.
 */
class BackOffAcrossLeadersTest {

    @Test
    void aNewLeaderThatLearnsTheSameFailedReplacementDoesNotRecordBackOffAgain() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            OperatorConfig config = OperatorConfig.parse("--namespace=" + TestCluster.NS);
            Pod failed = new PodBuilder().withApiVersion("v1").withKind("Pod").withNewMetadata()
                    .withNamespace(TestCluster.NS).withName("playpen-runner-amd64-51821")
                    .withUid("uid-playpen-runner-amd64-51821").endMetadata().build();
            PoolSignals.BackoffChange change = new PoolSignals.BackoffChange(PoolTarget.runner("amd64"),
                    new PoolBackoff.View(1, Duration.ofSeconds(10), Instant.parse("2026-01-02T03:04:05Z")),
                    PoolHealth.Problem.NOT_READY_IN_TIME, failed);
            for (String replica : List.of("playpen-operator-old", "playpen-operator-new")) {
                try (EventRecorder recorder = new EventRecorder(cluster.client, Clock.systemUTC(),
                        new ApiCallCounter(), 100, 100, Duration.ofSeconds(1))) {
                    ObservedEvents observed = new ObservedEvents(recorder, config,
                            Map.of("POD_NAME", replica, "POD_NAMESPACE", TestCluster.NS));
                    observed.backoffChanged(change);
                    OperatorHarness.awaitTrue(() -> recorder.written() + recorder.failed()
                            + recorder.recordedElsewhere() == 1, Duration.ofSeconds(60), replica + "'s Event answered");
                    assertThat(recorder.failed()).as("%s: failed", replica).isZero();
                }
            }
            List<Event> backOffs = cluster.client.v1().events().inNamespace(TestCluster.NS).list().getItems()
                    .stream().filter(e -> "BackOff".equals(e.getReason())).toList();
            assertThat(backOffs).as("BackOff Events").hasSize(1);
            assertThat(backOffs.get(0).getInvolvedObject().getName()).isEqualTo("playpen-operator-old");
        }
    }

    /**
     * The BackOff Warning of a pool that is still backing off is recorded again in a later term as leader when the API
     * server no longer has it (kube-apiserver deletes Events after its --event-ttl): the create under the failed pod's
     * Event name tells, AlreadyExists while it is there. Within one term it is recorded once.
     */
    @Test
    void aLaterTermRecordsTheBackOffAgainWhenTheApiServerNoLongerHasIt() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            OperatorConfig config = OperatorConfig.parse("--namespace=" + TestCluster.NS, "--runner-amd64-count=1",
                    "--runner-arm64-count=0", "--pool-backoff-base=5m");
            java.util.concurrent.atomic.AtomicBoolean leads = new java.util.concurrent.atomic.AtomicBoolean(true);
            PodCache cache = new PodCache(cluster.client, TestCluster.NS,
                    new Candidates(config.runnerLabelSelector())::idleKindKey);
            PoolPlanner planner = new PoolPlanner(config, new PodTemplates(config, Map.of()));
            PoolSignals signals = new PoolSignals(planner, new NodeCache(null), Clock.systemUTC(), config.pools());
            try (EventRecorder recorder = new EventRecorder(cluster.client, Clock.systemUTC(), new ApiCallCounter(),
                    100, 100, Duration.ofSeconds(1));
                    PoolReconciler pool = new PoolReconciler(cluster.client, config, cache, null, planner, signals,
                            leads::get, new ApiCallCounter(), Clock.systemUTC())) {
                ObservedEvents observed = new ObservedEvents(recorder, config,
                        Map.of("POD_NAME", "playpen-operator-a", "POD_NAMESPACE", TestCluster.NS));
                pool.runPassesWith(() -> { });
                pool.addObserver(new PoolReconciler.Observer() {
                    @Override
                    public void backoffChanged(PoolSignals.BackoffChange change) {
                        observed.backoffChanged(change);
                    }
                });
                cache.addListener(signals);
                cache.addListener(pool);
                cache.start();
                OperatorHarness.awaitTrue(cache::listenersCaughtUp, Duration.ofSeconds(60), "pod cache synced");
                PoolTarget amd64 = PoolTarget.runner("amd64");
                Pod failed = new PodBuilder(planner.podFor(amd64, 51821)).editMetadata()
                        .withUid("uid-playpen-runner-amd64-51821").endMetadata().build();
                signals.deletedUnhealthy(amd64, failed, PoolHealth.Problem.NOT_READY_IN_TIME);
                OperatorHarness.awaitTrue(() -> recorder.written() == 1, Duration.ofSeconds(60), "BackOff recorded");
                pool.reconcile();
                pool.reconcile();

                // the Event expires; the replica loses the Lease and leads again, the pool still backing off
                cluster.client.v1().events().inNamespace(TestCluster.NS).delete();
                OperatorHarness.awaitTrue(() -> backOffs(cluster).isEmpty(), Duration.ofSeconds(60), "Event gone");
                leads.set(false);
                pool.reconcile();
                // leading again, told as the operator's leadership listener tells it: a new term
                leads.set(true);
                pool.onLeadership();
                pool.reconcile();
                OperatorHarness.awaitTrue(() -> recorder.written() + recorder.failed() + recorder.recordedElsewhere()
                        == 2, Duration.ofSeconds(60), "the later term's Event answered");
                assertThat(recorder.written()).as("written: the first term's and the later one's").isEqualTo(2);
                List<Event> again = backOffs(cluster);
                assertThat(again).as("BackOff Events").hasSize(1);
                assertThat(again.get(0).getMessage()).contains("pool runner-amd64",
                        "last: pod playpen-runner-amd64-51821, NotReadyInTime");
                pool.reconcile();
                assertThat(recorder.written() + recorder.failed() + recorder.recordedElsewhere())
                        .as("once per term: no second create in the same term").isEqualTo(2);
            } finally {
                cache.close();
            }
        }
    }

    private static List<Event> backOffs(TestCluster cluster) {
        return cluster.client.v1().events().inNamespace(TestCluster.NS).list().getItems().stream()
                .filter(e -> "BackOff".equals(e.getReason())).toList();
    }
}
