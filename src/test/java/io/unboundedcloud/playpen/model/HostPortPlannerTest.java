package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.config.OperatorConfig.PortRange;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class HostPortPlannerTest {
    private static final HostPortPlanner PLANNER = new HostPortPlanner(new PortRange(100, 104));

    private static Set<Integer> ports(String spaced) {
        return spaced.isBlank() ? Set.of()
                : Arrays.stream(spaced.trim().split(" +")).map(Integer::valueOf).collect(Collectors.toSet());
    }

    @ParameterizedTest(name = "used [{0}] → lowest free {1}")
    @CsvSource({
            "'',                  100",
            "'100',               101",
            "'100 101 103',       102",
            "'101 102',           100",
            "'99 105 200',        100",
            "'100 101 102 103',   104",
            "'100 101 102 103 104', -1",
    })
    void lowestFree(String used, int expected) {
        if (expected < 0) {
            assertThat(PLANNER.lowestFree(ports(used))).isEmpty();
        } else {
            assertThat(PLANNER.lowestFree(ports(used))).hasValue(expected);
        }
    }

    @ParameterizedTest(name = "used [{0}], after {1} → {2}")
    @CsvSource({
            "'',        100, 101",
            "'101',     100, 102",
            "'',        50,  100",
            "'',        104, -1",
            "'103 104', 102, -1",
            "'102',     101, 103",
    })
    void nextAfterAnAlreadyExists(String used, int after, int expected) {
        if (expected < 0) {
            assertThat(PLANNER.next(ports(used), after)).isEmpty();
        } else {
            assertThat(PLANNER.next(ports(used), after)).hasValue(expected);
        }
    }

    @ParameterizedTest(name = "used [{0}], want {1} → [{2}] short {3}")
    @CsvSource({
            "'',          3, '100 101 102', 0",
            "'101 103',   3, '100 102 104', 0",
            "'101 103',   4, '100 102 104', 1",
            "'100 101 102 103 104', 2, '', 2",
            "'',          0, '',          0",
    })
    void allocateFillsGapsAndReportsShortfall(String used, int count, String expected, int shortfall) {
        HostPortPlanner.Allocation a = PLANNER.allocate(ports(used), count);
        List<Integer> want = expected.isBlank() ? List.of()
                : Arrays.stream(expected.split(" ")).map(Integer::valueOf).toList();
        assertThat(a.ports()).containsExactlyElementsOf(want);
        assertThat(a.shortfall()).isEqualTo(shortfall);
        assertThat(a.exhausted()).isEqualTo(shortfall > 0);
        assertThat(a.range()).isEqualTo(new PortRange(100, 104));
    }

    @Test
    void usedPortsIncludeTerminatingAndClaimedPodsOfThatKindOnly() {
        Pod idle = TestPods.runner("amd64", 51820);
        Pod claimed = TestPods.claimed(TestPods.runner("arm64", 51821));
        Pod terminating = TestPods.terminating(TestPods.runner("amd64", 51823));
        Pod controlPlane = TestPods.controlPlane("v1.33.0", 51822);
        Pod unmanaged = TestPods.runner("amd64", 51824);
        unmanaged.getMetadata().getLabels().clear();

        List<Pod> pods = List.of(idle, claimed, terminating, controlPlane, unmanaged);
        assertThat(HostPortPlanner.usedPorts(pods, ResourceType.RUNNER)).containsExactlyInAnyOrder(51820, 51821, 51823);
        assertThat(HostPortPlanner.usedPorts(pods, ResourceType.CONTROL_PLANE)).containsExactly(51822);

        HostPortPlanner runners = HostPortPlanner.forKind(TestPods.DEFAULTS, ResourceType.RUNNER);
        assertThat(runners.range()).isEqualTo(new PortRange(51820, 51899));
        assertThat(runners.lowestFree(HostPortPlanner.usedPorts(pods, ResourceType.RUNNER))).hasValue(51822);
    }

    @Test
    void aLabelThatDisagreesWithTheSpecMarksBothPortsUsed() {
        Pod pod = TestPods.runner("amd64", 51820);
        pod.getMetadata().getLabels().put(PlaypenKeys.HOST_PORT, "51821");
        assertThat(HostPortPlanner.usedPorts(List.of(pod), ResourceType.RUNNER)).containsExactlyInAnyOrder(51820, 51821);
    }
}
