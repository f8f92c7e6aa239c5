package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.config.OperatorConfig.PortRange;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class PoolPlannerTest {
    private static final PoolTarget AMD64 = PoolTarget.runner("amd64");
    private static final PoolTarget ARM64 = PoolTarget.runner("arm64");
    private static final PoolTarget V133 = PoolTarget.controlPlane("v1.33.0");
    private static final PoolTarget V134 = PoolTarget.controlPlane("v1.34.1");

    private static PoolPlanner planner(String... flags) {
        OperatorConfig config = OperatorConfig.parse(flags);
        return new PoolPlanner(config, new PodTemplates(config, Map.of()));
    }

    private static List<String> names(PoolPlan plan) {
        return plan.pods().stream().map(ManagedPods::name).toList();
    }

    /** A kind is kept when its count is above 0, or the demand-aware buffer may grow it from 0; never otherwise. */
    @Test
    void keepsTheKindsWhosePoolsCanHoldPods() {
        PoolPlanner fixed = planner("--runner-amd64-count=1", "--runner-arm64-count=0", "--control-plane-count=0",
                "--control-plane-versions=v1.33.0");
        assertThat(fixed.keeps(AMD64)).isTrue();
        assertThat(fixed.keeps(ARM64)).isFalse();
        assertThat(fixed.keeps(V133)).isFalse();
        assertThat(fixed.keeps(V134)).as("a version not offered").isFalse();
        PoolPlanner demand = planner("--runner-amd64-count=0", "--runner-arm64-count=0", "--control-plane-count=0",
                "--control-plane-versions=v1.33.0", "--pool-max-idle=2");
        assertThat(demand.keeps(AMD64)).isTrue();
        assertThat(demand.keeps(V133)).isTrue();
        assertThat(demand.keeps(V134)).isFalse();
        assertThat(planner("--control-plane-count=2", "--control-plane-versions=v1.33.0").keeps(V133)).isTrue();
        // the pool an alloc asks of
        assertThat(PoolTarget.of(new AllocCommand("k", ResourceType.RUNNER, "", "w", "arm64"))).isEqualTo(ARM64);
        assertThat(PoolTarget.of(new AllocCommand("k", ResourceType.CONTROL_PLANE, "1.33.0", "", "")))
                .isEqualTo(V133);
    }

    @Test
    void emptyNamespaceGetsExactCountsPerArchitectureAndVersion() {
        PoolPlan plan = planner("--runner-amd64-count=2", "--runner-arm64-count=1",
                "--control-plane-count=2", "--control-plane-versions=v1.33.0,v1.34.1")
                .plan(List.of(), Set.of());

        assertThat(names(plan)).containsExactly(
                "playpen-runner-amd64-51820",
                "playpen-runner-amd64-51821",
                "playpen-runner-arm64-51822",
                "playpen-control-plane-1.33.0-16443",
                "playpen-control-plane-1.33.0-16444",
                "playpen-control-plane-1.34.1-16445",
                "playpen-control-plane-1.34.1-16446");
        assertThat(plan.exhausted()).isEmpty();
        assertThat(plan.toCreate()).extracting(PoolPlan.PlannedPod::target)
                .containsExactly(AMD64, AMD64, ARM64, V133, V133, V134, V134);
        assertThat(plan.usedPorts().get(ResourceType.RUNNER)).containsExactlyInAnyOrder(51820, 51821, 51822);
        // The planned pod is the template plus its template-hash label, so the create carries exactly what the
        // golden tests check and the hash of that template.
        Pod planned = plan.toCreate().get(0).pod();
        assertThat(planned.getMetadata().getLabels()).containsEntry(PlaypenKeys.TEMPLATE_HASH,
                TemplateHashes.of(TestPods.runner("amd64", 51820)));
        Pod withoutHash = new io.fabric8.kubernetes.api.model.PodBuilder(planned).editMetadata()
                .removeFromLabels(PlaypenKeys.TEMPLATE_HASH).endMetadata().build();
        assertThat(withoutHash).isEqualTo(TestPods.runner("amd64", 51820));
    }

    @Test
    void defaultFlagsWantOneRunnerPerArchitectureAndNoControlPlanes() {
        PoolPlan plan = planner().plan(List.of(), Set.of());
        assertThat(names(plan)).containsExactly("playpen-runner-amd64-51820", "playpen-runner-arm64-51821");
    }

    @Test
    void partiallyFilledPoolsOnlyCreateTheDifferenceOnFreePorts() {
        List<Pod> pods = List.of(
                TestPods.runner("amd64", 51820),
                TestPods.runner("amd64", 51822),
                TestPods.runner("arm64", 51821),
                TestPods.runner("arm64", 51823),
                TestPods.runner("arm64", 51824));
        PoolPlan plan = planner("--runner-amd64-count=3", "--runner-arm64-count=2").plan(pods, Set.of());

        assertThat(names(plan)).containsExactly("playpen-runner-amd64-51825");
    }

    @Test
    void claimedPodsAreNotIdleAndKeepTheirPorts() {
        List<Pod> pods = List.of(
                TestPods.claimed(TestPods.runner("amd64", 51820)),
                TestPods.claimed(TestPods.controlPlane("v1.33.0", 16443)));
        PoolPlan plan = planner("--control-plane-count=1").plan(pods, Set.of());

        assertThat(names(plan)).containsExactly(
                "playpen-runner-amd64-51821", "playpen-runner-arm64-51822", "playpen-control-plane-1.33.0-16444");
    }

    @Test
    void terminatingPodsAreNotIdleButTheirPortsAreUsed() {
        List<Pod> pods = List.of(
                TestPods.terminating(TestPods.runner("amd64", 51820)),
                TestPods.terminating(TestPods.runner("arm64", 51821)));
        PoolPlan plan = planner().plan(pods, Set.of());

        assertThat(names(plan)).containsExactly("playpen-runner-amd64-51822", "playpen-runner-arm64-51823");
    }

    @Test
    void podsWithoutAHostPortAreNotIdle() {
        Pod noPort = TestPods.runner("amd64", 51820);
        noPort.getSpec().getContainers().get(0).getPorts().get(1).setHostPort(null);
        noPort.getMetadata().getLabels().remove(PlaypenKeys.HOST_PORT);
        PoolPlan plan = planner("--runner-arm64-count=0").plan(List.of(noPort), Set.of());
        assertThat(names(plan)).containsExactly("playpen-runner-amd64-51820");
    }

    @Test
    void unmanagedPodsAreIgnored() {
        Pod foreign = TestPods.runner("amd64", 51820);
        foreign.getMetadata().getLabels().clear();
        PoolPlan plan = planner("--runner-arm64-count=0").plan(List.of(foreign), Set.of());
        assertThat(names(plan)).containsExactly("playpen-runner-amd64-51820");
    }

    @Test
    void expectationsCountAsIdleAndHoldTheirPorts() {
        PoolPlanner planner = planner("--runner-amd64-count=2", "--control-plane-count=1");
        PoolPlan first = planner.plan(List.of(), Set.of());
        Set<String> expected = first.pods().stream().map(ManagedPods::name).collect(Collectors.toSet());

        // Nothing is visible yet: a second pass must not create again.
        PoolPlan second = planner.plan(List.of(), expected);
        assertThat(second.toCreate()).isEmpty();

        // One expected amd64 runner shows up claimed at once; its sibling is still only expected.
        List<Pod> visible = List.of(TestPods.claimed(first.toCreate().get(0).pod()));
        PoolPlan third = planner.plan(visible, expected);
        assertThat(names(third)).containsExactly("playpen-runner-amd64-51823");
    }

    @Test
    void expectationsForUnconfiguredPoolsStillHoldTheirPorts() {
        PoolPlan plan = planner("--runner-arm64-count=0", "--control-plane-count=1")
                .plan(List.of(), Set.of("playpen-runner-amd64-51820", "playpen-runner-s390x-51821",
                        "playpen-control-plane-1.30.0-16443", "something-else-1", "playpen-runner-amd64-x"));
        assertThat(names(plan)).containsExactly("playpen-control-plane-1.33.0-16444");
        assertThat(plan.usedPorts().get(ResourceType.RUNNER)).containsExactlyInAnyOrder(51820, 51821);
    }

    @Test
    void controlPlanesMatchTheirSanitisedVersionLabel() {
        PoolPlanner planner = planner("--runner-amd64-count=0", "--runner-arm64-count=0",
                "--control-plane-count=1", "--control-plane-versions=v1.33.0+k3s1");
        Pod existing = TestPods.controlPlane("v1.33.0+k3s1", 16443);
        assertThat(existing.getMetadata().getLabels()).containsEntry(PlaypenKeys.KUBERNETES_VERSION, "v1.33.0-k3s1");

        assertThat(planner.plan(List.of(existing), Set.of()).toCreate()).isEmpty();
        assertThat(planner.plan(List.of(), Set.of("playpen-control-plane-1.33.0-k3s1-16443")).toCreate()).isEmpty();
    }

    /**
     * Two configured versions whose pods would carry the same version label (v1.33.0+k3s1 and v1.33.0-k3s1) cannot
     * be told apart by their pods: one pool would count them all and the other would create pods on every pass.
     * Such flags are refused.
     */
    @Test
    void versionsThatShareAPodLabelAreRefused() {
        assertThatThrownBy(() -> planner("--control-plane-count=1", "--control-plane-versions=v1.33.0+k3s1,v1.33.0-k3s1"))
                .isInstanceOf(io.unboundedcloud.playpen.config.ConfigException.class)
                .hasMessageContaining("--control-plane-versions")
                .hasMessageContaining("v1.33.0+k3s1 and v1.33.0-k3s1");
    }

    @Test
    void aFullRangeIsReportedWithTheRemainingDeficit() {
        PoolPlan plan = planner("--runner-amd64-count=2", "--runner-arm64-count=2",
                "--runner-wireguard-host-port-start=51820", "--runner-wireguard-host-port-end=51822")
                .plan(List.of(), Set.of());

        assertThat(names(plan)).containsExactly(
                "playpen-runner-amd64-51820", "playpen-runner-amd64-51821", "playpen-runner-arm64-51822");
        assertThat(plan.exhausted()).containsExactly(new PoolPlan.Exhaustion(ARM64, new PortRange(51820, 51822), 1));
        assertThat(plan.statuses().get(ARM64).portsExhausted()).isTrue();
        assertThat(plan.statuses().get(AMD64).portsExhausted()).isFalse();
        assertThat(plan.exhausted().get(0).message())
                .isEqualTo("no free WireGuard hostPorts are available in range 51820-51822; 1 runner/arm64 pod(s) not created");
    }

    @Test
    void portsHeldElsewhereAreNeitherPlannedNorCountedFree() {
        PoolPlanner planner = planner("--runner-amd64-count=2", "--runner-arm64-count=0",
                "--runner-wireguard-host-port-start=51820", "--runner-wireguard-host-port-end=51823");
        PoolPlan plan = planner.plan(planner.newTally(), Set.of(),
                Map.of(ResourceType.RUNNER, Set.of(51820, 51822)), PoolPlanner.Context.NONE);
        assertThat(names(plan)).containsExactly("playpen-runner-amd64-51821", "playpen-runner-amd64-51823");
        assertThat(plan.exhausted()).isEmpty();

        PoolPlan full = planner.plan(planner.newTally(), Set.of(),
                Map.of(ResourceType.RUNNER, Set.of(51820, 51821, 51822)), PoolPlanner.Context.NONE);
        assertThat(names(full)).containsExactly("playpen-runner-amd64-51823");
        assertThat(full.exhausted()).containsExactly(new PoolPlan.Exhaustion(AMD64, new PortRange(51820, 51823), 1));
    }

    @Test
    void exhaustionCountsUsedPortsOfClaimedAndTerminatingPods() {
        List<Pod> pods = new ArrayList<>();
        pods.add(TestPods.claimed(TestPods.controlPlane("v1.33.0", 16443)));
        pods.add(TestPods.terminating(TestPods.controlPlane("v1.33.0", 16444)));
        PoolPlan plan = planner("--runner-amd64-count=0", "--runner-arm64-count=0", "--control-plane-count=3",
                "--control-plane-apiserver-host-port-start=16443", "--control-plane-apiserver-host-port-end=16445")
                .plan(pods, Set.of());

        assertThat(names(plan)).containsExactly("playpen-control-plane-1.33.0-16445");
        assertThat(plan.exhausted()).containsExactly(new PoolPlan.Exhaustion(V133, new PortRange(16443, 16445), 2));
        assertThat(plan.exhausted().get(0).message()).startsWith("no free control-plane API server hostPorts");
    }

    @Test
    void controlPlaneCountZeroPlansNothing() {
        PoolPlan plan = planner("--runner-amd64-count=0", "--runner-arm64-count=0", "--control-plane-count=0",
                "--control-plane-versions=v1.33.0,v1.34.1").plan(List.of(), Set.of());
        assertThat(plan.isEmpty()).isTrue();
    }

    @Test
    void surplusIsNeverNegativeAndIsDeletedYoungestFirst() {
        PoolPlanner planner = planner("--runner-amd64-count=1", "--runner-arm64-count=0");
        List<Pod> pods = List.of(planner.podFor(AMD64, 51820), planner.podFor(AMD64, 51821),
                planner.podFor(ARM64, 51822));
        PoolPlan plan = planner.plan(pods, Set.of());
        assertThat(plan.toCreate()).isEmpty();
        // no creation times here: the higher port counts as the younger pod
        assertThat(plan.toDelete()).extracting(d -> ManagedPods.name(d.pod()))
                .containsExactly("playpen-runner-amd64-51821", "playpen-runner-arm64-51822");
        assertThat(plan.toDelete()).extracting(PoolPlan.Deletion::why).containsOnly(PoolPlan.Why.SURPLUS);
    }

    @Test
    void podsThePoolDidNotMakeAreNeverSurplus() {
        // made by the Go operator (or by hand): no template-hash label; used, but never deleted to lower the count
        List<Pod> pods = List.of(TestPods.runner("amd64", 51820), TestPods.runner("amd64", 51821));
        PoolPlan plan = planner("--runner-amd64-count=1", "--runner-arm64-count=0").plan(pods, Set.of());
        assertThat(plan.toDelete()).isEmpty();
        assertThat(plan.toCreate()).isEmpty();
        // nor when another image makes them stale in a pool that wants none: nothing would take their place
        PoolPlan none = planner("--runner-amd64-count=0", "--runner-arm64-count=0", "--pool-max-surge=1",
                "--runner-image=example.com/other:1").plan(pods, Set.of());
        assertThat(none.toDelete()).isEmpty();
    }

    @Test
    void anAlreadyExistsMovesOnPastPlannedPorts() {
        PoolPlan plan = planner("--runner-amd64-count=2", "--runner-arm64-count=0").plan(List.of(), Set.of());
        HostPortPlanner runners = HostPortPlanner.forKind(TestPods.DEFAULTS, ResourceType.RUNNER);
        // 51820 answered AlreadyExists: the replacement skips 51821, which this plan gave the second pod.
        assertThat(runners.next(plan.usedPorts().get(ResourceType.RUNNER), 51820)).hasValue(51822);
    }

    /**
     * A stale or surplus delete of a ready pod carries the pool's ready idle pods (current and stale, itself
     * included; no starting or claimed pod) and how many of them must stay: the reconciler re-checks them before it
     * sends the delete, so a wrong list could delete a pod the pool still counts on. A delete of a pod not ready
     * counts on none.
     */
    @Test
    void aStaleOrSurplusDeleteCarriesThePoolsReadyIdlePods() {
        java.time.Duration hour = java.time.Duration.ofHours(1);
        PoolPlanner rolling = PoolRulesTest.planner("--runner-amd64-count=2", "--pool-max-surge=1");
        Pod staleOld = PoolRulesTest.staleReady(51820, hour.multipliedBy(3)).build();
        Pod staleYoung = PoolRulesTest.staleReady(51821, hour).build();
        Pod current = PoolRulesTest.ready(rolling, 51822, java.time.Duration.ofMinutes(5)).build();
        Pod starting = PoolRulesTest.starting(rolling, 51823, java.time.Duration.ofMinutes(1)).build();
        Pod taken = PoolRulesTest.claimed(PoolRulesTest.ready(rolling, 51824, hour)).build();
        PoolPlan rollout = PoolRulesTest.plan(rolling, List.of(staleOld, staleYoung, current, starting, taken));
        assertThat(rollout.toDelete()).hasSize(1);
        PoolPlan.Deletion stale = rollout.toDelete().get(0);
        assertThat(stale.why()).isEqualTo(PoolPlan.Why.STALE);
        assertThat(ManagedPods.name(stale.pod())).isEqualTo("playpen-runner-amd64-51820");
        assertThat(stale.keepReady()).isEqualTo(2);
        assertThat(stale.ready()).extracting(ManagedPods::name).containsExactlyInAnyOrder(
                "playpen-runner-amd64-51820", "playpen-runner-amd64-51821", "playpen-runner-amd64-51822");

        PoolPlanner shrinking = PoolRulesTest.planner("--runner-amd64-count=1");
        Pod older = PoolRulesTest.ready(shrinking, 51820, hour.multipliedBy(3)).build();
        Pod younger = PoolRulesTest.ready(shrinking, 51821, hour).build();
        Pod notReady = PoolRulesTest.starting(shrinking, 51822, java.time.Duration.ofMinutes(1)).build();
        PoolPlan scaleDown = PoolRulesTest.plan(shrinking, List.of(older, younger, notReady));
        assertThat(scaleDown.toDelete()).extracting(d -> ManagedPods.name(d.pod()))
                .containsExactly("playpen-runner-amd64-51822", "playpen-runner-amd64-51821");
        PoolPlan.Deletion startingSurplus = scaleDown.toDelete().get(0);
        assertThat(startingSurplus.keepReady()).isZero();
        assertThat(startingSurplus.ready()).isEmpty();
        PoolPlan.Deletion readySurplus = scaleDown.toDelete().get(1);
        assertThat(readySurplus.why()).isEqualTo(PoolPlan.Why.SURPLUS);
        assertThat(readySurplus.keepReady()).isEqualTo(1);
        assertThat(readySurplus.ready()).extracting(ManagedPods::name)
                .containsExactlyInAnyOrder("playpen-runner-amd64-51820", "playpen-runner-amd64-51821");
    }
}
