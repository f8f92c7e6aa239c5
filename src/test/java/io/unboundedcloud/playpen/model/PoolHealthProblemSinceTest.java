package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;

/**
 * When an allocated pod's problem began, as every replica reads it from the API server: it names the pod's Warning,
 * so one spell gets one Warning whichever replica leads, and a new spell a new one.
 */
class PoolHealthProblemSinceTest {
    static Pod unready(String readyFalseSince) {
        return new PodBuilder().withNewMetadata().withName("p").withUid("uid-p")
                .withCreationTimestamp("2026-01-02T03:00:00Z").endMetadata().withNewSpec().withNodeName("node-a")
                .endSpec().withNewStatus().withPhase("Running").addNewCondition().withType("Ready").withStatus("False")
                .withLastTransitionTime(readyFalseSince).endCondition().endStatus().build();
    }

    @Test
    void aPodProblemBeginsWhenTheReadyConditionLastTurnedFalseANodeProblemWhenTheNodesDid() {
        Pod first = unready("2026-01-02T03:10:00Z");
        assertThat(PoolHealth.problemSince(first, PoolHealth.Problem.NOT_READY_IN_TIME, null))
                .contains(Instant.parse("2026-01-02T03:10:00Z"));
        // ready again in between, then unready again: another spell, another key
        Pod again = unready("2026-01-02T04:20:00Z");
        PoolTarget target = PoolTarget.runner("amd64");
        String firstKey = new PoolPlan.Unhealthy(target, first, PoolHealth.Problem.NOT_READY_IN_TIME,
                PoolHealth.problemSince(first, PoolHealth.Problem.NOT_READY_IN_TIME, null).orElse(null)).key();
        String againKey = new PoolPlan.Unhealthy(target, again, PoolHealth.Problem.NOT_READY_IN_TIME,
                PoolHealth.problemSince(again, PoolHealth.Problem.NOT_READY_IN_TIME, null).orElse(null)).key();
        assertThat(firstKey).isNotEqualTo(againKey).startsWith("uid-p/NotReadyInTime/");
        // the same spell read again (another replica, a later pass): the same key
        assertThat(new PoolPlan.Unhealthy(target, unready("2026-01-02T03:10:00Z"),
                PoolHealth.Problem.NOT_READY_IN_TIME, Instant.parse("2026-01-02T03:10:00Z")).key()).isEqualTo(firstKey);

        Node notReady = new NodeBuilder().withNewMetadata().withName("node-a").endMetadata().withNewStatus()
                .addNewCondition().withType("Ready").withStatus("Unknown")
                .withLastTransitionTime("2026-01-02T03:30:00Z").endCondition().endStatus().build();
        assertThat(PoolHealth.problemSince(first, PoolHealth.Problem.NODE_NOT_READY,
                name -> "node-a".equals(name) ? Optional.of(notReady) : Optional.empty()))
                .contains(Instant.parse("2026-01-02T03:30:00Z"));
        assertThat(PoolHealth.problemSince(first, PoolHealth.Problem.NODE_GONE, name -> Optional.empty())).isEmpty();
    }
}
