package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.config.OperatorConfig;

/**
 * Which pool pods count as ready capacity (the rollout, surplus and status rules count them): running with every
 * container ready and what its kind publishes for the allocation answer (a runner its WireGuard key, a control
 * plane its kubeconfig), on a hostPort. A pod short of any of these could not be handed out, so it is not ready.
 */
class PoolHealthReadyTest {
    static final PoolPlanner PLANNER = planner();
    static final String KEY = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

    static PoolPlanner planner() {
        OperatorConfig config = OperatorConfig.parse(new String[] {"--control-plane-count=1"});
        return new PoolPlanner(config, new PodTemplates(config, Map.of()));
    }

    static PodBuilder running(PoolTarget target, int port, Map<String, String> published) {
        return new PodBuilder(PLANNER.podFor(target, port)).editMetadata().addToAnnotations(published).endMetadata()
                .withNewStatus().withPhase("Running").addNewContainerStatus().withName("main").withReady(true)
                .withNewState().withNewRunning().endRunning().endState().endContainerStatus()
                .addNewCondition().withType("Ready").withStatus("True").endCondition().endStatus();
    }

    static final PoolTarget RUNNER = PoolTarget.runner("amd64");
    static final PoolTarget CONTROL_PLANE = PoolTarget.controlPlane("v1.33.0");

    @Test
    void aRunnerIsReadyWithAValidWireGuardKeyOnly() {
        assertThat(PoolHealth.ready(running(RUNNER, 51820, Map.of(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, KEY)).build()))
                .isTrue();
        assertThat(PoolHealth.ready(running(RUNNER, 51820, Map.of(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, " " + KEY + "\n"))
                .build())).as("white space around the key, as the reference trims it").isTrue();
        assertThat(PoolHealth.ready(running(RUNNER, 51820, Map.of()).build())).as("no key published yet").isFalse();
        assertThat(PoolHealth.ready(running(RUNNER, 51820, Map.of(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, "not-a-key"))
                .build())).isFalse();
        Pod notReady = running(RUNNER, 51820, Map.of(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, KEY)).editStatus()
                .editFirstContainerStatus().withReady(false).endContainerStatus().endStatus().build();
        assertThat(PoolHealth.ready(notReady)).as("a container not ready").isFalse();
    }

    @Test
    void aControlPlaneIsReadyOnceItsKubeconfigIsPublished() {
        assertThat(PoolHealth.ready(running(CONTROL_PLANE, 16443,
                Map.of(PlaypenKeys.CONTROL_PLANE_KUBECONFIG, "apiVersion: v1\nkind: Config\n")).build())).isTrue();
        assertThat(PoolHealth.ready(running(CONTROL_PLANE, 16443, Map.of()).build())).as("none yet").isFalse();
        assertThat(PoolHealth.ready(running(CONTROL_PLANE, 16443, Map.of(PlaypenKeys.CONTROL_PLANE_KUBECONFIG, " \n"))
                .build())).as("a blank one").isFalse();
        assertThat(PoolHealth.ready(running(CONTROL_PLANE, 16443, Map.of(PlaypenKeys.CONTROL_PLANE_KUBECONFIG,
                "\u00a0\u0085")).build())).as("Unicode spaces only, blank to the alloc answer").isFalse();
        assertThat(PoolHealth.ready(running(CONTROL_PLANE, 16443, Map.of(PlaypenKeys.CONTROL_PLANE_KUBECONFIG,
                "clusters: [unclosed")).build())).as("one the alloc answer cannot rewrite").isFalse();
        assertThat(PoolHealth.ready(running(CONTROL_PLANE, 16443, Map.of(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, KEY))
                .build())).as("a runner's key is not a control plane's kubeconfig").isFalse();
    }

    @Test
    void aPodWithoutItsKindOrItsHostPortIsNotReady() {
        Map<String, String> published = Map.of(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, KEY);
        Pod noPort = running(RUNNER, 51820, published).editSpec().editFirstContainer().withPorts().endContainer()
                .endSpec().build();
        assertThat(PoolHealth.ready(noPort)).isFalse();
        Pod noKind = running(RUNNER, 51820, published).editMetadata().removeFromLabels(PlaypenKeys.RESOURCE_TYPE)
                .removeFromLabels(PlaypenKeys.APP_NAME).endMetadata().build();
        assertThat(ManagedPods.resourceType(noKind)).as("the test's premise").isEmpty();
        assertThat(PoolHealth.ready(noKind)).isFalse();
    }
}
