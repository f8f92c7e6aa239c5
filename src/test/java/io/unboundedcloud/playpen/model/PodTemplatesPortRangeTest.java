package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Both templates publish a hostPort from 1 to 65535 and refuse anything else with a message that names it. */
class PodTemplatesPortRangeTest {

    @ParameterizedTest
    @ValueSource(ints = {1, 65535})
    void theEndsOfThePortRangeAreAccepted(int port) {
        assertThat(Candidates.hostPort(TestPods.TEMPLATES.runner("amd64", port), ResourceType.RUNNER)).isEqualTo(port);
        assertThat(Candidates.hostPort(TestPods.TEMPLATES.controlPlane("v1.33.0", port), ResourceType.CONTROL_PLANE))
                .isEqualTo(port);
    }

    @ParameterizedTest
    @ValueSource(ints = {0, -1, 65536})
    void portsOutsideTheRangeAreRefused(int port) {
        assertThatThrownBy(() -> TestPods.TEMPLATES.runner("amd64", port))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("hostPort must be between 1 and 65535, not " + port);
        assertThatThrownBy(() -> TestPods.TEMPLATES.controlPlane("v1.33.0", port))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("hostPort must be between 1 and 65535, not " + port);
    }
}
