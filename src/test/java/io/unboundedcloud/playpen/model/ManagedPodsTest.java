package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ManagedPodsTest {

    private static Pod labelled(String... kv) {
        Map<String, String> labels = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            labels.put(kv[i], kv[i + 1]);
        }
        return new PodBuilder().withNewMetadata().withName("p").withLabels(labels).endMetadata().build();
    }

    @ParameterizedTest(name = "resource-type={0} app={1} → {2}")
    @CsvSource(nullValues = "-", value = {
            "runner,       -,                     RUNNER",
            "controlPlane, -,                     CONTROL_PLANE",
            "control-plane,-,                     CONTROL_PLANE",
            "Runner,       -,                     RUNNER",
            "-,            playpen-runner,        RUNNER",
            "-,            playpen-control-plane, CONTROL_PLANE",
            "bogus,        playpen-control-plane, CONTROL_PLANE",
            "'',           playpen-runner,        RUNNER",
            "controlPlane, playpen-runner,        CONTROL_PLANE",
            "bogus,        -,                     -",
            "'',           -,                     -",
            "-,            nginx,                 -",
            "-,            -,                     -",
    })
    void resourceTypeUsesLabelThenAppName(String type, String app, ResourceType expected) {
        Pod pod = labelled();
        if (type != null) {
            pod.getMetadata().getLabels().put(PlaypenKeys.RESOURCE_TYPE, type);
        }
        if (app != null) {
            pod.getMetadata().getLabels().put(PlaypenKeys.APP_NAME, app);
        }
        if (expected == null) {
            assertThat(ManagedPods.resourceType(pod)).isEmpty();
            assertThat(ManagedPods.isManaged(pod)).isFalse();
        } else {
            assertThat(ManagedPods.resourceType(pod)).contains(expected);
            assertThat(ManagedPods.isManaged(pod)).isTrue();
        }
    }

    @ParameterizedTest(name = "architecture label {0} → {1}")
    @CsvSource(nullValues = "-", value = {"-, amd64", "'', amd64", "amd64, amd64", "ARM64, arm64", "' arm64 ', arm64", "s390x, s390x"})
    void architectureIsNormalised(String label, String expected) {
        Pod pod = label == null ? labelled(PlaypenKeys.APP_NAME, "playpen-runner")
                : labelled(PlaypenKeys.APP_NAME, "playpen-runner", PlaypenKeys.ARCHITECTURE, label);
        assertThat(ManagedPods.architecture(pod)).isEqualTo(expected);
    }

    @Test
    void nullsAndEmptyPodsHaveNoFacts() {
        Pod empty = new Pod();
        assertThat(ManagedPods.isManaged(empty)).isFalse();
        assertThat(ManagedPods.isClaimed(empty)).isFalse();
        assertThat(ManagedPods.isTerminating(empty)).isFalse();
        assertThat(ManagedPods.hostPort(empty)).isEmpty();
        assertThat(ManagedPods.architecture(empty)).isEqualTo("amd64");
        assertThat(ManagedPods.kubernetesVersion(empty)).isEmpty();
        assertThat(ManagedPods.name(empty)).isEmpty();
    }

    @Test
    void claimedNeedsANonEmptyKeyHash() {
        Pod pod = TestPods.runner("amd64", 51820);
        assertThat(ManagedPods.isClaimed(pod)).isFalse();
        pod.getMetadata().getAnnotations().put(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "");
        assertThat(ManagedPods.isClaimed(pod)).isFalse();
        assertThat(ManagedPods.isClaimed(TestPods.claimed(TestPods.runner("amd64", 51820)))).isTrue();
    }

    @Test
    void hostPortPrefersTheContainerPortAndFallsBackToTheLabel() {
        Pod pod = TestPods.runner("amd64", 51820);
        pod.getMetadata().getLabels().put(PlaypenKeys.HOST_PORT, "51899");
        assertThat(ManagedPods.hostPort(pod)).hasValue(51820);
        assertThat(ManagedPods.labelHostPort(pod)).hasValue(51899);

        pod.getSpec().getContainers().get(0).getPorts().get(1).setHostPort(null);
        assertThat(ManagedPods.containerHostPort(pod)).isEmpty();
        assertThat(ManagedPods.hostPort(pod)).hasValue(51899);
        assertThat(ManagedPods.isIdle(pod)).as("idle needs the container hostPort").isFalse();

        pod.getMetadata().getLabels().put(PlaypenKeys.HOST_PORT, "not-a-port");
        assertThat(ManagedPods.hostPort(pod)).isEmpty();
    }

    @Test
    void hostPortNeedsTheRightNameAndProtocol() {
        Pod runner = TestPods.runner("amd64", 51820);
        runner.getSpec().getContainers().get(0).getPorts().get(1).setProtocol("TCP");
        assertThat(ManagedPods.containerHostPort(runner)).isEmpty();

        Pod cp = TestPods.controlPlane("v1.33.0", 16443);
        cp.getSpec().getContainers().get(0).getPorts().get(0).setProtocol(null);
        assertThat(ManagedPods.containerHostPort(cp)).as("absent protocol means TCP").hasValue(16443);
        cp.getSpec().getContainers().get(0).getPorts().get(0).setName("api");
        assertThat(ManagedPods.containerHostPort(cp)).isEmpty();
    }

    @Test
    void idleMeansUnclaimedNotTerminatingWithHostPort() {
        Pod pod = TestPods.runner("arm64", 51820);
        assertThat(ManagedPods.isIdle(pod)).isTrue();
        assertThat(ManagedPods.isIdle(TestPods.claimed(pod))).isFalse();
        assertThat(ManagedPods.isIdle(TestPods.terminating(pod))).isFalse();
        assertThat(ManagedPods.isTerminating(TestPods.terminating(pod))).isTrue();
    }

    @Test
    void kubernetesVersionGetsItsV() {
        assertThat(ManagedPods.kubernetesVersion(labelled(PlaypenKeys.KUBERNETES_VERSION, "1.33.0"))).isEqualTo("v1.33.0");
        assertThat(ManagedPods.kubernetesVersion(labelled(PlaypenKeys.KUBERNETES_VERSION, "v1.33.0-k3s1"))).isEqualTo("v1.33.0-k3s1");
    }
}
