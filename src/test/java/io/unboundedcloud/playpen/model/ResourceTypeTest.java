package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The pod label value is matched exactly; requests are normalised; each type has its own app name and component. */
class ResourceTypeTest {

    @Test
    void labelsMatchExactly() {
        assertThat(ResourceType.fromLabel("runner")).contains(ResourceType.RUNNER);
        assertThat(ResourceType.fromLabel("controlPlane")).contains(ResourceType.CONTROL_PLANE);
        for (String other : new String[] {"Runner", "control-plane", "controlplane", "", " runner", null}) {
            assertThat(ResourceType.fromLabel(other)).as("%s", other).isEmpty();
        }
    }

    @Test
    void requestsAreNormalised() {
        assertThat(ResourceType.fromRequest(null)).contains(ResourceType.RUNNER);
        assertThat(ResourceType.fromRequest(" Runner ")).contains(ResourceType.RUNNER);
        assertThat(ResourceType.fromRequest("Control-Plane")).contains(ResourceType.CONTROL_PLANE);
        assertThat(ResourceType.fromRequest("controlplane")).contains(ResourceType.CONTROL_PLANE);
        assertThat(ResourceType.fromRequest("k3s")).isEmpty();
    }

    @Test
    void eachTypeNamesItsOwnAppAndComponent() {
        assertThat(ResourceType.RUNNER.appName()).isEqualTo(PlaypenKeys.RUNNER_APP_NAME);
        assertThat(ResourceType.RUNNER.component()).isEqualTo(PlaypenKeys.RUNNER_COMPONENT);
        assertThat(ResourceType.CONTROL_PLANE.appName()).isEqualTo(PlaypenKeys.CONTROL_PLANE_APP_NAME);
        assertThat(ResourceType.CONTROL_PLANE.component()).isEqualTo(PlaypenKeys.CONTROL_PLANE_COMPONENT);
        assertThat(ResourceType.RUNNER.appName()).isNotEmpty().isNotEqualTo(ResourceType.CONTROL_PLANE.appName());
        assertThat(ResourceType.RUNNER.component()).isNotEmpty().isNotEqualTo(ResourceType.CONTROL_PLANE.component());
    }

    @Test
    void aPoolTargetReadsAsItsKey() {
        assertThat(PoolTarget.controlPlane("1.33.0")).hasToString("controlPlane/v1.33.0");
        assertThat(PoolTarget.runner("arm64")).hasToString("runner/arm64");
    }
}
