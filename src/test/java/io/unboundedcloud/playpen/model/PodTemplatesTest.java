package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.unboundedcloud.playpen.config.OperatorConfig;
import java.io.IOException;
import java.io.InputStream;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class PodTemplatesTest {
    private static final KubernetesSerialization SERIALIZATION = new KubernetesSerialization();
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void runnerAmd64WithDefaultFlagsMatchesGolden() throws IOException {
        PodTemplates templates = new PodTemplates(OperatorConfig.parse(),
                Map.of("KUBERNETES_SERVICE_HOST", "10.0.0.1", "KUBERNETES_SERVICE_PORT", "443", "HOME", "/root"));
        assertMatchesGolden(templates.runner("amd64", 51820), "runner-amd64.json");
    }

    @Test
    void runnerArm64WithoutKvmWithTolerationsMatchesGolden() throws IOException {
        PodTemplates templates = new PodTemplates(
                OperatorConfig.parse("--runner-require-kvm=false", "--runner-control-plane-tolerations=true"),
                Map.of());
        assertMatchesGolden(templates.runner("arm64", 51821), "runner-arm64-nokvm-tolerations.json");
    }

    @Test
    void controlPlaneMatchesGolden() throws IOException {
        PodTemplates templates = new PodTemplates(OperatorConfig.parse("--control-plane-count=1"), Map.of(
                "KUBERNETES_SERVICE_HOST", "10.0.0.1",
                "KUBERNETES_SERVICE_PORT", "443",
                "KUBERNETES_SERVICE_PORT_HTTPS", "443"));
        assertMatchesGolden(templates.controlPlane("v1.33.0", 16443), "control-plane-v1.33.0.json");
    }

    @Test
    void controlPlaneVersionWithoutVIsNormalised() {
        Pod pod = TestPods.TEMPLATES.controlPlane("1.33.0", 16443);
        assertThat(pod.getMetadata().getName()).isEqualTo("playpen-control-plane-1.33.0-16443");
        assertThat(pod.getSpec().getContainers().get(0).getImage()).isEqualTo("rancher/k3s:v1.33.0-k3s1");
        assertThat(pod.getSpec().getContainers().get(1).getArgs()).contains("--kubernetes-version=v1.33.0");
    }

    @Test
    void blankServiceEnvValuesAreSkipped() {
        Pod pod = new PodTemplates(OperatorConfig.parse(), Map.of("KUBERNETES_SERVICE_HOST", "  ")).runner("amd64", 51820);
        assertThat(pod.getSpec().getContainers().get(0).getEnv()).extracting("name")
                .containsExactly("POD_NAME", "POD_NAMESPACE");
    }

    @Test
    void flagsReachTheTemplates() {
        OperatorConfig config = OperatorConfig.parse("--runner-namespace=pp", "--runner-image=img:1",
                "--runner-image-pull-policy=IfNotPresent", "--runner-service-account-name=sa-r",
                "--control-plane-service-account-name=sa-cp", "--control-plane-image=k3s:{version}",
                "--runner-guest-gateway=10.9.0.1", "--runner-wireguard-listen-port=51999");
        PodTemplates templates = new PodTemplates(config, Map.of());

        Pod runner = templates.runner("amd64", 51830);
        assertThat(runner.getMetadata().getNamespace()).isEqualTo("pp");
        assertThat(runner.getSpec().getServiceAccountName()).isEqualTo("sa-r");
        assertThat(runner.getSpec().getContainers().get(0).getImage()).isEqualTo("img:1");
        assertThat(runner.getSpec().getContainers().get(0).getImagePullPolicy()).isEqualTo("IfNotPresent");
        assertThat(runner.getSpec().getContainers().get(0).getArgs()).contains("--wireguard-listen-port=51999");
        assertThat(ManagedPods.containerHostPort(runner)).hasValue(51830);

        Pod cp = templates.controlPlane("v1.34.1", 16450);
        assertThat(cp.getMetadata().getNamespace()).isEqualTo("pp");
        assertThat(cp.getSpec().getServiceAccountName()).isEqualTo("sa-cp");
        assertThat(cp.getSpec().getContainers().get(0).getImage()).isEqualTo("k3s:v1.34.1");
        assertThat(cp.getSpec().getContainers().get(0).getArgs()).contains("--tls-san=10.9.0.1");
        assertThat(cp.getSpec().getContainers().get(1).getArgs()).contains("--guest-server=https://10.9.0.1:6443");
        assertThat(cp.getMetadata().getAnnotations())
                .containsEntry(PlaypenKeys.CONTROL_PLANE_GUEST_SERVER, "https://10.9.0.1:6443");
    }

    @ParameterizedTest
    @CsvSource({
            "v1.33.0,          v1.33.0,          playpen-control-plane-1.33.0-16443",
            "v1.33.0+k3s1,     v1.33.0-k3s1,     playpen-control-plane-1.33.0-k3s1-16443",
            "v1.33.0_rc.1,     v1.33.0-rc.1,     playpen-control-plane-1.33.0-rc.1-16443",
            "v1.33.0-,         v1.33.0,          playpen-control-plane-1.33.0--16443",
            "1.34.2,           v1.34.2,          playpen-control-plane-1.34.2-16443",
    })
    void versionLabelAndName(String version, String label, String name) {
        assertThat(PodTemplates.kubernetesVersionLabel(version)).isEqualTo(label);
        assertThat(PodTemplates.controlPlaneName(version, 16443)).isEqualTo(name);
    }

    @Test
    void builtPodsAreManagedAndReadBackConsistently() {
        Pod runner = TestPods.runner("arm64", 51822);
        assertThat(ManagedPods.resourceType(runner)).contains(ResourceType.RUNNER);
        assertThat(ManagedPods.architecture(runner)).isEqualTo("arm64");
        assertThat(ManagedPods.hostPort(runner)).hasValue(51822);
        assertThat(ManagedPods.isIdle(runner)).isTrue();

        Pod cp = TestPods.controlPlane("v1.33.0", 16444);
        assertThat(ManagedPods.resourceType(cp)).contains(ResourceType.CONTROL_PLANE);
        assertThat(ManagedPods.architecture(cp)).isEqualTo("amd64");
        assertThat(ManagedPods.kubernetesVersion(cp)).isEqualTo("v1.33.0");
        assertThat(ManagedPods.hostPort(cp)).hasValue(16444);
    }

    @Test
    void rejectsUnknownArchitectureAndBadPort() {
        assertThatThrownBy(() -> TestPods.TEMPLATES.runner("riscv64", 51820)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> TestPods.TEMPLATES.runner("amd64", 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> TestPods.TEMPLATES.controlPlane(" ", 16443)).isInstanceOf(IllegalArgumentException.class);
    }

    private static void assertMatchesGolden(Pod pod, String golden) throws IOException {
        String actualJson = SERIALIZATION.asJson(pod);
        JsonNode actual = JSON.readTree(actualJson);
        JsonNode expected;
        try (InputStream in = PodTemplatesTest.class.getResourceAsStream("/golden/" + golden)) {
            assertThat(in).as("golden file %s", golden).isNotNull();
            expected = JSON.readTree(in);
        }
        // JsonNode equality is deep and exact: any missing, extra or changed field fails.
        assertThat(actual).as("pod JSON differs from golden/%s; actual:%n%s", golden,
                JSON.writerWithDefaultPrettyPrinter().writeValueAsString(actual)).isEqualTo(expected);
    }
}
