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
import io.unboundedcloud.playpen.kube.PoolSignals;
import io.unboundedcloud.playpen.model.PoolBackoff;
import io.unboundedcloud.playpen.model.PoolHealth;
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
}
