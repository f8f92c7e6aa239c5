package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPortBuilder;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.ContainerStatusBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.config.OperatorConfig;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Which idle pods may serve an alloc, why the others may not, and in which order they are tried. */
class CandidatesTest {
    static final String WG = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    static final String KUBECONFIG = "apiVersion: v1\nclusters:\n- cluster:\n    server: https://127.0.0.1:6443\n  name: default\n";
    static final String UNUSABLE_RUNNERS =
            "no idle playpen runner pods are available with hostPort endpoints on ExternalIP nodes: ";
    static final String UNUSABLE_CONTROL_PLANES =
            "no idle playpen control-plane pods are available with hostPort endpoints on ExternalIP nodes: ";

    static final Map<String, String> NODES = Map.of("node-a", "203.0.113.10", "node-b", "198.51.100.7");
    static final Function<String, Optional<String>> EXTERNAL_IP = node -> Optional.ofNullable(NODES.get(node));

    private final Candidates candidates = new Candidates(OperatorConfig.parse().runnerLabelSelector());

    static AllocCommand runnerCmd(String key, String arch) {
        return new AllocCommand(Hashes.keyHash(key), ResourceType.RUNNER, "", WG, arch);
    }

    static AllocCommand controlPlaneCmd(String key, String version) {
        return new AllocCommand(Hashes.keyHash(key), ResourceType.CONTROL_PLANE, version, "", "amd64");
    }

    private static List<ContainerStatus> readyStatuses(Pod pod) {
        List<ContainerStatus> out = new ArrayList<>();
        for (Container c : pod.getSpec().getContainers()) {
            out.add(new ContainerStatusBuilder().withName(c.getName()).withReady(true)
                    .withNewState().withNewRunning().withStartedAt("2026-01-01T00:00:00Z").endRunning().endState().build());
        }
        return out;
    }

    /** A pool pod as the kubelet and the runner (or helper) complete it: scheduled, Running, Ready, published. */
    static Pod ready(Pod template, String node) {
        PodBuilder b = new PodBuilder(template)
                .editSpec().withNodeName(node).endSpec()
                .withNewStatus().withPhase("Running").withContainerStatuses(readyStatuses(template)).endStatus();
        if (ManagedPods.isKind(template, ResourceType.RUNNER)) {
            b.editMetadata().addToAnnotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, WG).endMetadata();
        } else {
            b.editMetadata().addToAnnotations(PlaypenKeys.CONTROL_PLANE_KUBECONFIG, KUBECONFIG).endMetadata();
        }
        return b.build();
    }

    static Pod readyRunner(String arch, int port) {
        return ready(TestPods.runner(arch, port), "node-a");
    }

    static Pod readyControlPlane(String version, int port) {
        return ready(TestPods.controlPlane(version, port), "node-a");
    }

    static Pod edit(Pod pod, UnaryOperator<PodBuilder> change) {
        return change.apply(new PodBuilder(pod)).build();
    }

    private static List<String> names(Candidates.Selection s) {
        return s.ordered().stream().map(u -> u.pod().getMetadata().getName()).toList();
    }

    @Test
    void aReadyRunnerIsUsable() {
        Pod pod = readyRunner("amd64", 51820);
        Candidates.Selection s = candidates.select(runnerCmd("k", "amd64"), List.of(pod), EXTERNAL_IP);
        assertThat(s.skipped()).isEmpty();
        assertThat(s.ofKind()).isEqualTo(1);
        assertThat(s.ordered()).hasSize(1);
        Candidates.Usable u = s.ordered().get(0);
        assertThat(u.pod()).isSameAs(pod);
        assertThat(u.hostPort()).isEqualTo(51820);
        assertThat(u.externalIp()).isEqualTo("203.0.113.10");
        assertThat(u.score()).isEqualTo(Hashes.ringDistance(Hashes.seed(Hashes.keyHash("k")), "playpen-runner-amd64-51820"));
    }

    /** The node watch may drop a node's ExternalIP mid-selection: a pod is kept with the address it was judged by. */
    @Test
    void aNodeThatLosesItsExternalIpDuringASelectionDoesNotFailIt() {
        Pod pod = readyRunner("amd64", 51820);
        for (int way = 0; way < 2; way++) {
            java.util.concurrent.atomic.AtomicInteger reads = new java.util.concurrent.atomic.AtomicInteger();
            Function<String, Optional<String>> once = node -> reads.getAndIncrement() == 0 ? EXTERNAL_IP.apply(node)
                    : Optional.empty();
            Optional<Candidates.Usable> u = way == 0
                    ? candidates.select(runnerCmd("k", "amd64"), List.of(pod), once).ordered().stream().findFirst()
                    : candidates.walk(runnerCmd("k", "amd64"), List.of(pod), once).next();
            assertThat(u).as(way == 0 ? "select" : "walk").map(Candidates.Usable::externalIp).contains("203.0.113.10");
        }
    }

    @Test
    void aReadyControlPlaneIsUsable() {
        Pod pod = ready(TestPods.controlPlane("v1.33.0", 16443), "node-b");
        Candidates.Selection s = candidates.select(controlPlaneCmd("k", "v1.33.0"), List.of(pod), EXTERNAL_IP);
        assertThat(s.skipped()).isEmpty();
        assertThat(s.ordered()).extracting(Candidates.Usable::hostPort, Candidates.Usable::externalIp)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(16443, "198.51.100.7"));
    }

    static Stream<Arguments> unusableRunners() {
        Pod base = readyRunner("amd64", 51820);
        return Stream.of(
                Arguments.of("terminating", TestPods.terminating(base), "runner pod playpen-runner-amd64-51820 is terminating"),
                Arguments.of("phase Pending", edit(base, b -> b.editStatus().withPhase("Pending").endStatus()), "runner pod playpen-runner-amd64-51820 is Pending"),
                Arguments.of("phase Succeeded", edit(base, b -> b.editStatus().withPhase("Succeeded").endStatus()),
                        "runner pod playpen-runner-amd64-51820 is Succeeded"),
                Arguments.of("no status", edit(base, b -> b.withStatus(null)), "runner pod playpen-runner-amd64-51820 has no phase yet (not started)"),
                Arguments.of("empty phase", edit(base, b -> b.editStatus().withPhase("").endStatus()),
                        "runner pod playpen-runner-amd64-51820 has no phase yet (not started)"),
                Arguments.of("container not ready", edit(base, b -> b.editStatus().editFirstContainerStatus().withReady(false)
                        .endContainerStatus().endStatus()), "runner pod playpen-runner-amd64-51820 container runner is not ready"),
                Arguments.of("container ready but waiting", edit(base, b -> b.editStatus().editFirstContainerStatus()
                        .withNewState().withNewWaiting().withReason("CrashLoopBackOff").endWaiting().endState()
                        .endContainerStatus().endStatus()), "runner pod playpen-runner-amd64-51820 container runner is not running"),
                Arguments.of("container terminated", edit(base, b -> b.editStatus().editFirstContainerStatus()
                        .withNewState().withNewTerminated().withExitCode(1).endTerminated().endState()
                        .endContainerStatus().endStatus()), "runner pod playpen-runner-amd64-51820 container runner is not running"),
                Arguments.of("no container statuses yet", edit(base, b -> b.editStatus().withContainerStatuses().endStatus()),
                        "runner pod playpen-runner-amd64-51820 has no container status"),
                Arguments.of("missing server WireGuard key", edit(base, b -> b.editMetadata()
                        .removeFromAnnotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY).endMetadata()),
                        "runner pod \"playpen-runner-amd64-51820\" has no valid server WireGuard public key"),
                Arguments.of("invalid server WireGuard key", edit(base, b -> b.editMetadata()
                        .addToAnnotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, "not-a-key").endMetadata()),
                        "runner pod \"playpen-runner-amd64-51820\" has no valid server WireGuard public key"),
                Arguments.of("wireguard port only on TCP", edit(base, b -> b.editSpec().editFirstContainer()
                        .withPorts(new ContainerPortBuilder().withName("wireguard").withProtocol("TCP").withContainerPort(51820)
                                .withHostPort(51820).build())
                        .endContainer().endSpec()), "runner pod playpen/playpen-runner-amd64-51820 has no WireGuard hostPort"),
                Arguments.of("wireguard port without hostPort", edit(base, b -> b.editSpec().editFirstContainer()
                        .withPorts(new ContainerPortBuilder().withName("wireguard").withProtocol("UDP").withContainerPort(51820).build())
                        .endContainer().endSpec()), "runner pod playpen/playpen-runner-amd64-51820 has no WireGuard hostPort"),
                Arguments.of("hostPort on another port name", edit(base, b -> b.editSpec().editFirstContainer()
                        .withPorts(new ContainerPortBuilder().withName("wg").withProtocol("UDP").withContainerPort(51820)
                                .withHostPort(51820).build())
                        .endContainer().endSpec()), "runner pod playpen/playpen-runner-amd64-51820 has no WireGuard hostPort"),
                Arguments.of("unscheduled", edit(base, b -> b.editSpec().withNodeName(null).endSpec()), "runner pod is not scheduled"),
                Arguments.of("node without ExternalIP", ready(TestPods.runner("amd64", 51820), "node-c"),
                        "runner pod playpen/playpen-runner-amd64-51820 is on node node-c with no ExternalIP"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("unusableRunners")
    void unusableRunnerIsSkippedWithItsReason(String what, Pod pod, String reason) {
        AllocCommand cmd = runnerCmd("k", "amd64");
        Candidates.Selection s = candidates.select(cmd, List.of(pod), EXTERNAL_IP);
        assertThat(s.ordered()).isEmpty();
        assertThat(s.ofKind()).isEqualTo(1);
        assertThat(s.skipped()).containsExactly(reason);
        assertThat(Candidates.unavailableMessage(cmd, s)).isEqualTo(UNUSABLE_RUNNERS + reason);
    }

    static Stream<Arguments> unusableControlPlanes() {
        Pod base = readyControlPlane("v1.33.0", 16443);
        return Stream.of(
                // the reference words these "runner pod" for control planes too
                Arguments.of("terminating", TestPods.terminating(base), "runner pod playpen-control-plane-1.33.0-16443 is terminating"),
                Arguments.of("phase Pending", edit(base, b -> b.editStatus().withPhase("Pending").endStatus()), "runner pod playpen-control-plane-1.33.0-16443 is Pending"),
                Arguments.of("helper not ready", edit(base, b -> b.editStatus().editLastContainerStatus().withReady(false)
                        .endContainerStatus().endStatus()), "runner pod playpen-control-plane-1.33.0-16443 container helper is not ready"),
                Arguments.of("missing kubeconfig", edit(base, b -> b.editMetadata()
                        .removeFromAnnotations(PlaypenKeys.CONTROL_PLANE_KUBECONFIG).endMetadata()),
                        "control-plane pod playpen-control-plane-1.33.0-16443 has no kubeconfig annotation"),
                // blank as the alloc answer trims it (Go's TrimSpace), which would answer 503 for the claimed pod
                Arguments.of("kubeconfig of Unicode spaces", edit(base, b -> b.editMetadata()
                        .addToAnnotations(PlaypenKeys.CONTROL_PLANE_KUBECONFIG, "\u00a0\u0085\u3000").endMetadata()),
                        "control-plane pod playpen-control-plane-1.33.0-16443 has no kubeconfig annotation"),
                // a kubeconfig the alloc answer cannot rewrite: a claim of it could only ever answer 503
                Arguments.of("kubeconfig that does not parse", edit(base, b -> b.editMetadata()
                        .addToAnnotations(PlaypenKeys.CONTROL_PLANE_KUBECONFIG, "clusters: [unclosed").endMetadata()),
                        "control-plane pod playpen-control-plane-1.33.0-16443 has a kubeconfig annotation that cannot be used:"
                                + " kubeconfig is not valid YAML (line 1, column 20)"),
                Arguments.of("blank kubeconfig", edit(base, b -> b.editMetadata()
                        .addToAnnotations(PlaypenKeys.CONTROL_PLANE_KUBECONFIG, " \n").endMetadata()),
                        "control-plane pod playpen-control-plane-1.33.0-16443 has no kubeconfig annotation"),
                Arguments.of("apiserver port only on UDP", edit(base, b -> b.editSpec().editFirstContainer()
                        .withPorts(new ContainerPortBuilder().withName("apiserver").withProtocol("UDP").withContainerPort(6443)
                                .withHostPort(16443).build())
                        .endContainer().endSpec()), "control-plane pod playpen/playpen-control-plane-1.33.0-16443 has no API server hostPort"),
                Arguments.of("unscheduled", edit(base, b -> b.editSpec().withNodeName("").endSpec()), "runner pod is not scheduled"),
                Arguments.of("node without ExternalIP", ready(TestPods.controlPlane("v1.33.0", 16443), "node-gone"),
                        "runner pod playpen/playpen-control-plane-1.33.0-16443 is on node node-gone with no ExternalIP"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("unusableControlPlanes")
    void unusableControlPlaneIsSkippedWithItsReason(String what, Pod pod, String reason) {
        AllocCommand cmd = controlPlaneCmd("k", "v1.33.0");
        Candidates.Selection s = candidates.select(cmd, List.of(pod), EXTERNAL_IP);
        assertThat(s.ordered()).isEmpty();
        assertThat(s.skipped()).containsExactly(reason);
        assertThat(Candidates.unavailableMessage(cmd, s)).isEqualTo(UNUSABLE_CONTROL_PLANES + reason);
    }

    @Test
    void onlyTheContainerStatusesPresentAreChecked() {
        // like the reference: a container without a status yet does not make the pod unusable
        Pod pod = edit(readyControlPlane("v1.33.0", 16443), b -> b.editStatus().removeMatchingFromContainerStatuses(
                cs -> "helper".equals(cs.getName())).endStatus());
        assertThat(candidates.select(controlPlaneCmd("k", "v1.33.0"), List.of(pod), EXTERNAL_IP).ordered()).hasSize(1);
    }

    @Test
    void aRunnerWithoutServerKeyIsFineAsAControlPlaneIsNot() {
        // the WireGuard key check is for runners; the kubeconfig check is for control planes
        Pod cp = edit(readyControlPlane("v1.33.0", 16443),
                b -> b.editMetadata().removeFromAnnotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY).endMetadata());
        assertThat(candidates.select(controlPlaneCmd("k", "v1.33.0"), List.of(cp), EXTERNAL_IP).ordered()).hasSize(1);
        Pod runner = edit(readyRunner("amd64", 51820),
                b -> b.editMetadata().removeFromAnnotations(PlaypenKeys.CONTROL_PLANE_KUBECONFIG).endMetadata());
        assertThat(candidates.select(runnerCmd("k", "amd64"), List.of(runner), EXTERNAL_IP).ordered()).hasSize(1);
    }

    @Test
    void reasonsAreInPodNameOrderAndJoined() {
        AllocCommand cmd = runnerCmd("k", "amd64");
        List<Pod> pods = List.of(
                TestPods.terminating(readyRunner("amd64", 51822)),
                edit(readyRunner("amd64", 51821), b -> b.editStatus().withPhase("Pending").endStatus()),
                readyRunner("amd64", 51823).toBuilder().editSpec().withNodeName("node-c").endSpec().build());
        Candidates.Selection s = candidates.select(cmd, pods, EXTERNAL_IP);
        assertThat(Candidates.unavailableMessage(cmd, s)).isEqualTo(UNUSABLE_RUNNERS
                + "runner pod playpen-runner-amd64-51821 is Pending; "
                + "runner pod playpen-runner-amd64-51822 is terminating; "
                + "runner pod playpen/playpen-runner-amd64-51823 is on node node-c with no ExternalIP");
    }

    @Test
    void atMostTenReasonsAreListed() {
        AllocCommand cmd = runnerCmd("k", "amd64");
        List<Pod> pods = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            pods.add(TestPods.terminating(readyRunner("amd64", 51820 + i)));
        }
        Candidates.Selection s = candidates.select(cmd, pods, EXTERNAL_IP);
        String message = Candidates.unavailableMessage(cmd, s);
        assertThat(message).startsWith(UNUSABLE_RUNNERS + "runner pod playpen-runner-amd64-51820 is terminating; ")
                .endsWith("runner pod playpen-runner-amd64-51829 is terminating; and 2 more")
                .doesNotContain("51830").doesNotContain("51831");
        assertThat(message.split("; ")).hasSize(11);

        // exactly ten: all of them, and no "and 0 more"
        String ten = Candidates.unavailableMessage(cmd, candidates.select(cmd, pods.subList(0, 10), EXTERNAL_IP));
        assertThat(ten).endsWith("runner pod playpen-runner-amd64-51829 is terminating").doesNotContain("more");
        assertThat(ten.split("; ")).hasSize(10);
    }

    @Test
    void claimedPodsAreNotCandidates() {
        AllocCommand cmd = runnerCmd("k", "amd64");
        Pod claimed = TestPods.claimed(readyRunner("amd64", 51820));
        Candidates.Selection s = candidates.select(cmd, List.of(claimed), EXTERNAL_IP);
        assertThat(s.ordered()).isEmpty();
        assertThat(s.skipped()).isEmpty();
        assertThat(s.ofKind()).isZero();
        assertThat(Candidates.unavailableMessage(cmd, s)).isEqualTo("no idle amd64 playpen runner pods are available");

        Candidates.Selection withIdle = candidates.select(cmd, List.of(claimed, readyRunner("amd64", 51821)), EXTERNAL_IP);
        assertThat(names(withIdle)).containsExactly("playpen-runner-amd64-51821");
    }

    @Test
    void aPodOfTheKeyIsItsClaimUntilItIsBeingDeleted() {
        Pod claimed = TestPods.claimed(readyRunner("amd64", 51820));
        AllocCommand sameKey = new AllocCommand(ManagedPods.keyHash(claimed), ResourceType.RUNNER, "", WG, "amd64");
        assertThat(candidates.classify(sameKey, claimed, EXTERNAL_IP)).isEqualTo(Candidates.Verdict.CLAIMED_BY_THIS_KEY);
        assertThat(candidates.classify(runnerCmd("k", "amd64"), claimed, EXTERNAL_IP)).isEqualTo(Candidates.Verdict.SKIP);
        // released or expired: the key's allocation is gone with it, so the walk passes it
        assertThat(candidates.classify(sameKey, TestPods.terminating(claimed), EXTERNAL_IP))
                .isEqualTo(Candidates.Verdict.SKIP);
    }

    @Test
    void arm64RequestNeverGetsAmd64Pods() {
        AllocCommand cmd = runnerCmd("k", "arm64");
        List<Pod> amd64Only = List.of(readyRunner("amd64", 51820), readyRunner("amd64", 51821),
                TestPods.terminating(readyRunner("amd64", 51822)));
        Candidates.Selection s = candidates.select(cmd, amd64Only, EXTERNAL_IP);
        assertThat(s.ordered()).isEmpty();
        assertThat(s.ofKind()).isZero();
        assertThat(Candidates.unavailableMessage(cmd, s)).isEqualTo("no idle arm64 playpen runner pods are available");

        List<Pod> mixed = List.of(readyRunner("amd64", 51820), readyRunner("arm64", 51821), readyRunner("amd64", 51822));
        assertThat(names(candidates.select(cmd, mixed, EXTERNAL_IP))).containsExactly("playpen-runner-arm64-51821");
        assertThat(names(candidates.select(runnerCmd("k", "amd64"), mixed, EXTERNAL_IP)))
                .containsExactlyInAnyOrder("playpen-runner-amd64-51820", "playpen-runner-amd64-51822");
    }

    @Test
    void controlPlaneRequestNeedsItsVersion() {
        AllocCommand cmd = controlPlaneCmd("k", "v1.33.0");
        List<Pod> pods = List.of(readyControlPlane("v1.32.0", 16443), readyRunner("amd64", 51820));
        Candidates.Selection s = candidates.select(cmd, pods, EXTERNAL_IP);
        assertThat(s.ordered()).isEmpty();
        assertThat(s.ofKind()).isZero();
        assertThat(Candidates.unavailableMessage(cmd, s)).isEqualTo("no idle v1.33.0 playpen control-plane pods are available");

        List<Pod> both = List.of(readyControlPlane("v1.32.0", 16443), readyControlPlane("v1.33.0", 16444));
        assertThat(names(candidates.select(cmd, both, EXTERNAL_IP))).containsExactly("playpen-control-plane-1.33.0-16444");
    }

    @Test
    void runnersAndControlPlanesDoNotMix() {
        List<Pod> pods = List.of(readyControlPlane("v1.33.0", 16443));
        Candidates.Selection s = candidates.select(runnerCmd("k", "amd64"), pods, EXTERNAL_IP);
        assertThat(s.ofKind()).isZero();
        assertThat(s.ordered()).isEmpty();
    }

    @Test
    void runnerLabelSelectorFiltersRunners() {
        Candidates blue = new Candidates(
                OperatorConfig.parse("--runner-label-selector=app.kubernetes.io/name=playpen-runner,pool=blue").runnerLabelSelector());
        Pod plain = readyRunner("amd64", 51820);
        Pod bluePod = edit(readyRunner("amd64", 51821), b -> b.editMetadata().addToLabels("pool", "blue").endMetadata());
        Pod greenPod = edit(readyRunner("amd64", 51822), b -> b.editMetadata().addToLabels("pool", "green").endMetadata());
        AllocCommand cmd = runnerCmd("k", "amd64");

        Candidates.Selection s = blue.select(cmd, List.of(plain, bluePod, greenPod), EXTERNAL_IP);
        assertThat(names(s)).containsExactly("playpen-runner-amd64-51821");
        assertThat(s.ofKind()).isEqualTo(1);

        Candidates.Selection none = blue.select(cmd, List.of(plain, greenPod), EXTERNAL_IP);
        assertThat(Candidates.unavailableMessage(cmd, none)).isEqualTo("no idle amd64 playpen runner pods are available");

        // the default selector (app.kubernetes.io/name=playpen-runner) takes all three
        assertThat(names(candidates.select(cmd, List.of(plain, bluePod, greenPod), EXTERNAL_IP))).hasSize(3);
        // and a runner without that label is not a candidate
        Pod unnamed = edit(readyRunner("amd64", 51823), b -> b.editMetadata().removeFromLabels(PlaypenKeys.APP_NAME).endMetadata());
        assertThat(candidates.select(cmd, List.of(unnamed), EXTERNAL_IP).ofKind()).isZero();
    }

    @Test
    void setBasedRunnerLabelSelectorFiltersRunners() {
        // the reference passes --runner-label-selector through labels.Parse, so set-based selectors must work too
        Candidates notGreen = new Candidates(OperatorConfig.parse(
                "--runner-label-selector=app.kubernetes.io/name in (playpen-runner), pool notin (green), !quarantined")
                .runnerLabelSelector());
        Pod plain = readyRunner("amd64", 51820);
        Pod bluePod = edit(readyRunner("amd64", 51821), b -> b.editMetadata().addToLabels("pool", "blue").endMetadata());
        Pod greenPod = edit(readyRunner("amd64", 51822), b -> b.editMetadata().addToLabels("pool", "green").endMetadata());
        Pod quarantined = edit(readyRunner("amd64", 51823), b -> b.editMetadata().addToLabels("quarantined", "yes").endMetadata());
        AllocCommand cmd = runnerCmd("k", "amd64");

        Candidates.Selection s = notGreen.select(cmd, List.of(plain, bluePod, greenPod, quarantined), EXTERNAL_IP);
        assertThat(names(s)).containsExactlyInAnyOrder("playpen-runner-amd64-51820", "playpen-runner-amd64-51821");
        assertThat(s.ofKind()).isEqualTo(2);
    }

    @Test
    void orderIsTheRingClockwiseFromTheKey() {
        List<Pod> pods = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            pods.add(ready(TestPods.runner("amd64", 51820 + i), i % 2 == 0 ? "node-a" : "node-b"));
        }
        for (String key : List.of("k", "key-2", "another key")) {
            long seed = Hashes.seed(Hashes.keyHash(key));
            List<String> expected = pods.stream().map(p -> p.getMetadata().getName())
                    .sorted((a, b) -> Long.compareUnsigned(Hashes.ringPosition(a) - seed, Hashes.ringPosition(b) - seed))
                    .toList();
            // clockwise: the positions from the key's seed on, then round from the lowest
            List<String> clockwise = new ArrayList<>(pods.stream().map(p -> p.getMetadata().getName())
                    .filter(n -> Long.compareUnsigned(Hashes.ringPosition(n), seed) >= 0)
                    .sorted((a, b) -> Long.compareUnsigned(Hashes.ringPosition(a), Hashes.ringPosition(b))).toList());
            clockwise.addAll(pods.stream().map(p -> p.getMetadata().getName())
                    .filter(n -> Long.compareUnsigned(Hashes.ringPosition(n), seed) < 0)
                    .sorted((a, b) -> Long.compareUnsigned(Hashes.ringPosition(a), Hashes.ringPosition(b))).toList());
            assertThat(expected).isEqualTo(clockwise);
            Candidates.Selection s = candidates.select(runnerCmd(key, "amd64"), pods, EXTERNAL_IP);
            assertThat(names(s)).as(key).isEqualTo(expected);
            // the input order does not matter
            List<Pod> reversed = new ArrayList<>(pods);
            java.util.Collections.reverse(reversed);
            assertThat(names(candidates.select(runnerCmd(key, "amd64"), reversed, EXTERNAL_IP))).isEqualTo(expected);
        }
        // keys spread over the ring: two keys in one arc share an order, but 20 keys do not all start at one pod
        java.util.Set<String> firsts = new java.util.HashSet<>();
        for (int k = 0; k < 20; k++) {
            firsts.add(names(candidates.select(runnerCmd("spread-" + k, "amd64"), pods, EXTERNAL_IP)).get(0));
        }
        assertThat(firsts.size()).isGreaterThanOrEqualTo(6);
    }
}
