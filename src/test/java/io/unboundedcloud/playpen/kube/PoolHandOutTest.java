package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.model.PoolPlanner;
import io.unboundedcloud.playpen.model.PoolTarget;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.support.TestCluster;

/** Which idle pod an alloc may get: never a stale one while a current one is usable, never one on a NotReady node. */
class PoolHandOutTest {
    static final OperatorConfig CONFIG = OperatorConfig.parse("--runner-amd64-count=4", "--runner-image=example.com/r:2");
    static final PoolPlanner PLANNER = new PoolPlanner(CONFIG, new PodTemplates(CONFIG, Map.of()));
    static final OperatorConfig OLD = OperatorConfig.parse("--runner-image=example.com/r:1");
    static final PoolPlanner OLD_PLANNER = new PoolPlanner(OLD, new PodTemplates(OLD, Map.of()));

    static Pod ready(PoolPlanner p, int port, String node) {
        return new PodBuilder(p.podFor(PoolTarget.runner("amd64"), port)).editMetadata().withUid("u" + port)
                .addToAnnotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, TestCluster.wgKey(port)).endMetadata()
                .editSpec().withNodeName(node).endSpec()
                .withNewStatus().withPhase("Running").addNewContainerStatus().withName("runner").withReady(true)
                .withNewState().withNewRunning().endRunning().endState().endContainerStatus().endStatus().build();
    }

    static Node node(String name, String ready) {
        return new NodeBuilder().withNewMetadata().withName(name).endMetadata().withNewStatus().addNewCondition()
                .withType("Ready").withStatus(ready).withLastTransitionTime("2026-01-01T00:00:00Z").endCondition()
                .endStatus().build();
    }

    static final Function<String, Optional<String>> IP = n -> Optional.of("203.0.113.10");

    static Candidates candidates(List<Pod> idle, Node... nodes) {
        Function<String, Optional<Node>> lookup = n -> List.of(nodes).stream()
                .filter(x -> x.getMetadata().getName().equals(n)).findFirst();
        return new Candidates(CONFIG.runnerLabelSelector(), new PoolHandOut(PLANNER, lookup, kind -> idle));
    }

    static AllocCommand cmd(String key) {
        return new AllocCommand(Hashes.keyHash(key), ResourceType.RUNNER, "", TestCluster.wgKey(1), "amd64");
    }

    @Test
    void whateverTheKeyAStalePodIsNotHandedOutWhileACurrentOneIsUsable() {
        List<Pod> idle = List.of(ready(OLD_PLANNER, 51820, "a"), ready(OLD_PLANNER, 51821, "a"),
                ready(OLD_PLANNER, 51822, "a"), ready(PLANNER, 51823, "a"));
        Candidates c = candidates(idle, node("a", "True"));
        List<String> chosen = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            AllocCommand cmd = cmd("key-" + i);
            Candidates.Selection s = c.select(cmd, idle, IP);
            chosen.add(ManagedPods.name(s.ordered().get(0).pod()));
            assertThat(s.ordered()).hasSize(1);
            for (Pod p : idle) {
                assertThat(c.classify(cmd, p, IP)).isEqualTo(p == idle.get(3) ? Candidates.Verdict.USABLE
                        : Candidates.Verdict.SKIP);
            }
            assertThat(c.walk(cmd, idle, IP).next()).get().extracting(u -> ManagedPods.name(u.pod()))
                    .isEqualTo("playpen-runner-amd64-51823");
        }
        assertThat(chosen).containsOnly("playpen-runner-amd64-51823");
    }

    @Test
    void withoutAUsableCurrentPodStalePodsAreHandedOut() {
        Pod currentNotReady = new PodBuilder(ready(PLANNER, 51823, "a")).editStatus().withPhase("Pending").endStatus()
                .build();
        Pod currentClaimed = new PodBuilder(ready(PLANNER, 51824, "a")).editMetadata()
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ab".repeat(32)).endMetadata().build();
        List<Pod> idle = List.of(ready(OLD_PLANNER, 51820, "a"), currentNotReady, currentClaimed);
        Candidates c = candidates(idle, node("a", "True"));
        assertThat(c.select(cmd("k"), idle, IP).ordered()).extracting(u -> ManagedPods.name(u.pod()))
                .containsExactly("playpen-runner-amd64-51820");
        // a pod of the Go operator with the current image counts as current: no preference against it
        Pod goPod = new PodBuilder(ready(PLANNER, 51825, "a")).editMetadata().removeFromLabels(PlaypenKeys.TEMPLATE_HASH)
                .endMetadata().build();
        List<Pod> mixed = List.of(goPod, ready(PLANNER, 51826, "a"));
        assertThat(candidates(mixed, node("a", "True")).select(cmd("k"), mixed, IP).ordered()).hasSize(2);
    }

    @Test
    void aStalePodSaysWhyItWasPassedOverAndACurrentPodOnANotReadyNodeIsNoAlternative() {
        List<Pod> idle = List.of(ready(OLD_PLANNER, 51820, "up"), ready(PLANNER, 51821, "up"));
        Candidates.Selection s = candidates(idle, node("up", "True")).select(cmd("k"), idle, IP);
        assertThat(s.skipped())
                .containsExactly("runner pod playpen-runner-amd64-51820 runs an older template and current pods are available");
        // the only current pod is on a node that is not ready: the stale pod is handed out
        List<Pod> apart = List.of(ready(OLD_PLANNER, 51820, "up"), ready(PLANNER, 51821, "down"));
        assertThat(candidates(apart, node("up", "True"), node("down", "False")).select(cmd("k"), apart, IP).ordered())
                .extracting(u -> ManagedPods.name(u.pod())).containsExactly("playpen-runner-amd64-51820");
    }

    @Test
    void aKindWithoutAPoolHasNoTemplateToPreferAndIsNeverRefusedForIt() {
        Pod stale = ready(OLD_PLANNER, 51820, "up");
        PoolHandOut handOut = new PoolHandOut(PLANNER, n -> Optional.of(node("up", "True")),
                kind -> List.of(ready(PLANNER, 51821, "up")));
        assertThat(handOut.refuse("runner/riscv64", stale, IP)).isNull(); // no pool of that kind
        assertThat(handOut.refuse("runner/amd64", stale, IP)).isNotNull();
    }

    /**
     * The reasons a control plane is passed over (they end up in a 503 when nothing else is left) name it a
     * control-plane pod, not a runner pod.
     */
    @Test
    void aControlPlanePassedOverIsCalledAControlPlanePod() {
        OperatorConfig config = OperatorConfig.parse("--control-plane-count=1", "--runner-image=example.com/r:2");
        PoolPlanner planner = new PoolPlanner(config, new PodTemplates(config, Map.of()));
        String kubeconfig = "apiVersion: v1\nclusters:\n- cluster:\n    server: https://127.0.0.1:6443\n  name: default\n";
        // made by the Go operator with another helper image: stale
        Pod stale = TestCluster.readyControlPlane("v1.33.0", 16443, "up", kubeconfig).build();
        Pod current = TestCluster.readyControlPlane("v1.33.0", 16444, "up", kubeconfig).editMetadata()
                .addToLabels(PlaypenKeys.TEMPLATE_HASH, planner.template(PoolTarget.controlPlane("v1.33.0")).hash())
                .endMetadata().build();
        Function<String, Optional<Node>> nodes = n -> Optional.of(node(n, n.equals("up") ? "True" : "False"));
        PoolHandOut handOut = new PoolHandOut(planner, nodes, kind -> List.of(stale, current));
        assertThat(handOut.refuse("controlPlane/v1.33.0", current, IP)).isNull();
        assertThat(handOut.refuse("controlPlane/v1.33.0", stale, IP)).isEqualTo("control-plane pod "
                + "playpen-control-plane-1.33.0-16443 runs an older template and current pods are available");
        Pod down = new PodBuilder(current).editSpec().withNodeName("down").endSpec().build();
        assertThat(handOut.refuse("controlPlane/v1.33.0", down, IP))
                .isEqualTo("control-plane pod playpen-control-plane-1.33.0-16444 is on node down, which is NotReady");
    }

    @Test
    void podsOnANotReadyNodeAreNotHandedOut() {
        List<Pod> idle = List.of(ready(PLANNER, 51820, "down"), ready(PLANNER, 51821, "up"));
        Candidates c = candidates(idle, node("down", "Unknown"), node("up", "True"));
        Candidates.Selection s = c.select(cmd("k"), idle, IP);
        assertThat(s.ordered()).extracting(u -> ManagedPods.name(u.pod())).containsExactly("playpen-runner-amd64-51821");
        assertThat(s.skipped()).containsExactly("runner pod playpen-runner-amd64-51820 is on node down, which is NotReady");
        // the only pod on a NotReady node: 503 with the reason
        List<Pod> only = List.of(idle.get(0));
        Candidates.Selection none = candidates(only, node("down", "False")).select(cmd("k"), only, IP);
        assertThat(Candidates.unavailableMessage(cmd("k"), none)).contains("is on node down, which is NotReady");
    }
}
