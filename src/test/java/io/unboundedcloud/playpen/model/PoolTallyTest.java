package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.function.Function;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.config.OperatorConfig;

/**
 * The pool reconciler counts pods as the watch reports them, one change at a time (PoolTally), instead of walking
 * every cached pod on each pass: after any sequence of adds, changes and deletes, and whatever the nodes and the
 * time are then, the plan made from it (deletes, creates, ports, reports of unhealthy allocated pods, every pool's
 * status) must be the plan made from the pods as they are now.
 */
class PoolTallyTest {
    static final String[] FLAGS = {"--runner-amd64-count=6", "--runner-arm64-count=3",
        "--control-plane-count=2", "--control-plane-versions=v1.33.0,v1.34.1",
        "--runner-wireguard-host-port-start=51820", "--runner-wireguard-host-port-end=51835",
        "--control-plane-apiserver-host-port-start=16443", "--control-plane-apiserver-host-port-end=16450",
        "--pool-ready-timeout=5m", "--pool-node-not-ready-grace=2m", "--pool-max-surge=1"};
    static final OperatorConfig CONFIG = OperatorConfig.parse(FLAGS);
    static final PoolPlanner PLANNER = new PoolPlanner(CONFIG, new PodTemplates(CONFIG, Map.of()));
    /** The same pools with other images: its pods are stale to {@link #PLANNER}. */
    static final PoolPlanner OLD = planner("--runner-image=example.com/runner:old",
            "--control-plane-image=example.com/control-plane:old");
    static final Instant NOW = Instant.parse("2026-12-01T12:00:00Z");
    static final String KEY = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    static final List<String> NODES = List.of("node-0", "node-1", "node-2", "node-3");

    static PoolPlanner planner(String... more) {
        List<String> all = new ArrayList<>(List.of(FLAGS));
        all.addAll(List.of(more));
        OperatorConfig config = OperatorConfig.parse(all.toArray(new String[0]));
        return new PoolPlanner(config, new PodTemplates(config, Map.of()));
    }

    @Test
    void countingChangeByChangeAgreesWithCountingThePodsAsTheyAreNow() {
        Random r = new Random(7);
        int judged = 0;
        int deleted = 0;
        for (int run = 0; run < 40; run++) {
            PoolTally tally = PLANNER.newTally();
            Map<String, Pod> now = new LinkedHashMap<>();
            for (int step = 0; step < 150; step++) {
                String name = "pod-" + r.nextInt(24);
                if (r.nextInt(5) == 0) {
                    now.remove(name);
                    tally.remove(name);
                } else {
                    Pod p = pod(r, name);
                    now.put(name, p);
                    tally.put(p);
                }
                Set<String> expected = expected(r);
                PoolPlanner.Context ctx = context(r);
                PoolPlan fromTally = PLANNER.plan(tally, expected, ctx);
                assertThat(describe(fromTally)).as("run %d step %d", run, step)
                        .isEqualTo(describe(PLANNER.plan(now.values(), expected, ctx)));
                assertThat(tally.size()).isEqualTo(now.size());
                assertThat(kept(fromTally)).as("run %d step %d", run, step).isEqualTo(walked(now.values(), ctx));
                for (ResourceType type : ResourceType.values()) {
                    Set<Integer> held = HostPortPlanner.usedPorts(now.values(), type);
                    assertThat(fromTally.usedPorts().get(type)).containsAll(held);
                    assertThat(fromTally.toCreate()).noneMatch(c -> c.target().type() == type && held.contains(c.hostPort()));
                }
                judged += fromTally.unhealthyAllocated().size();
                deleted += fromTally.toDelete().size();
            }
        }
        // the sequences reach what the rules act on
        assertThat(judged).isGreaterThan(100);
        assertThat(deleted).isGreaterThan(100);
    }

    @Test
    void anAllocatedPodIsJudgedWhenItsNodeFailsWithoutAnyChangeOfThePod() {
        PoolTally tally = PLANNER.newTally();
        Pod pod = ready(new PodBuilder(PLANNER.podFor(PoolTarget.runner("amd64"), 51820)).editMetadata()
                .withUid("u1").withCreationTimestamp(NOW.minus(Duration.ofHours(1)).toString())
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ab".repeat(32)).endMetadata()
                .editSpec().withNodeName("node-0").endSpec()).build();
        tally.put(pod);
        Map<String, Node> nodes = new HashMap<>(Map.of("node-0", node("node-0", "True")));
        PoolPlanner.Context ctx = new PoolPlanner.Context(NOW, name -> Optional.ofNullable(nodes.get(name)), Map.of(),
                Map.of(), Map.of(), Map.of());
        assertThat(PLANNER.plan(tally, Set.of(), ctx).unhealthyAllocated()).isEmpty();
        nodes.put("node-0", node("node-0", "False", NOW.minus(Duration.ofMinutes(1))));
        assertThat(PLANNER.plan(tally, Set.of(), ctx).unhealthyAllocated()).as("within the grace").isEmpty();
        nodes.put("node-0", node("node-0", "False", NOW.minus(Duration.ofMinutes(3))));
        assertThat(PLANNER.plan(tally, Set.of(), ctx).unhealthyAllocated())
                .extracting(u -> u.problem()).containsExactly(PoolHealth.Problem.NODE_NOT_READY);
        nodes.clear();
        assertThat(PLANNER.plan(tally, Set.of(), ctx).unhealthyAllocated())
                .extracting(u -> u.problem()).containsExactly(PoolHealth.Problem.NODE_GONE);
    }

    @Test
    void aPlanIsNotChangedByLaterChangesOfTheTally() {
        PoolTally tally = PLANNER.newTally();
        tally.put(TestPods.runner("amd64", 51820));
        PoolPlan plan = PLANNER.plan(tally, Set.of(), PoolPlanner.Context.NONE);
        Set<Integer> seen = Set.copyOf(plan.usedPorts().get(ResourceType.RUNNER));
        tally.put(TestPods.runner("amd64", 51830));
        tally.remove(ManagedPods.name(TestPods.runner("amd64", 51820)));
        assertThat(plan.usedPorts().get(ResourceType.RUNNER)).containsExactlyInAnyOrderElementsOf(seen)
                .contains(51820).doesNotContain(51830);
        // the reconciler's own additions while creating go to a set of its own
        Set<Integer> mine = plan.portsInUse(ResourceType.RUNNER);
        mine.add(51899);
        assertThat(mine).contains(51899, 51820);
        assertThat(plan.usedPorts().get(ResourceType.RUNNER)).doesNotContain(51899);
    }

    /**
     * What the tally keeps of allocated pods, as the plan shows it: the unhealthy ones reported, and per pool how
     * many there are and the oldest pod; and the ports held (without those the plan adds).
     */
    static List<Object> kept(PoolPlan plan) {
        Set<String> reported = new HashSet<>();
        plan.unhealthyAllocated().forEach(u -> reported.add(ManagedPods.name(u.pod()) + ":" + u.problem()));
        Map<PoolTarget, String> pools = new HashMap<>();
        plan.statuses().forEach((t, st) -> pools.put(t, st.allocated() + "@" + st.oldest()));
        return List.of(reported, pools);
    }

    /** The same, pod by pod: every pod judged on its own ({@link PoolHealth#problem}), nothing remembered. */
    static List<Object> walked(java.util.Collection<Pod> pods, PoolPlanner.Context ctx) {
        Set<String> reported = new HashSet<>();
        Map<PoolTarget, Integer> allocated = new HashMap<>();
        Map<PoolTarget, Instant> oldest = new HashMap<>();
        for (PoolTarget t : PLANNER.desired().keySet()) {
            allocated.put(t, 0);
        }
        PoolHealth.Limits limits = ctx.now() == null ? new PoolHealth.Limits(Duration.ZERO, Duration.ofMinutes(2))
                : PLANNER.limits();
        for (Pod pod : pods) {
            Optional<PoolTarget> t = PLANNER.poolOf(pod);
            if (t.isEmpty()) {
                continue;
            }
            allocated.putIfAbsent(t.get(), 0);
            if (ManagedPods.isTerminating(pod)) {
                continue;
            }
            PoolHealth.instant(pod.getMetadata().getCreationTimestamp()).ifPresent(c -> oldest.merge(t.get(), c,
                    (a, b) -> a.isBefore(b) ? a : b));
            if (ManagedPods.isClaimed(pod)) {
                allocated.merge(t.get(), 1, Integer::sum);
                PoolHealth.problem(pod, ctx.now() == null ? null : ctx.nodes(),
                        ctx.now() == null ? Instant.MIN : ctx.now(), limits)
                        .ifPresent(p -> reported.add(ManagedPods.name(pod) + ":" + p));
            }
        }
        Map<PoolTarget, String> out = new HashMap<>();
        allocated.forEach((t, n) -> out.put(t, n + "@" + oldest.get(t)));
        return List.of(reported, out);
    }

    static Set<String> expected(Random r) {
        Set<String> out = new HashSet<>();
        for (int i = r.nextInt(3); i > 0; i--) {
            out.add(r.nextBoolean() ? PodTemplates.runnerName(r.nextBoolean() ? "amd64" : "arm64", 51820 + r.nextInt(16))
                    : PodTemplates.controlPlaneName("v1.33.0", 16443 + r.nextInt(8)));
        }
        if (r.nextInt(4) == 0) {
            out.add("pod-" + r.nextInt(24)); // a name the tally may count
        }
        return out;
    }

    /** A pass's time and nodes: none at all, no synced node cache, or nodes ready, not ready (long or briefly), gone. */
    static PoolPlanner.Context context(Random r) {
        if (r.nextInt(6) == 0) {
            return PoolPlanner.Context.NONE;
        }
        Instant at = NOW.plusSeconds(r.nextInt(600));
        Function<String, Optional<Node>> nodes = null;
        if (r.nextInt(5) != 0) {
            Map<String, Node> known = new HashMap<>();
            for (String name : NODES) {
                switch (r.nextInt(5)) {
                    case 0 -> known.put(name, node(name, "False"));
                    case 1 -> known.put(name, node(name, "Unknown"));
                    case 2 -> {
                    }
                    default -> known.put(name, node(name, "True"));
                }
            }
            nodes = name -> Optional.ofNullable(known.get(name));
        }
        return new PoolPlanner.Context(at, nodes, Map.of(), Map.of(), Map.of(), Map.of());
    }

    /** A node whose Ready condition has been {@code ready} since a minute before NOW. */
    static Node node(String name, String ready) {
        return node(name, ready, NOW.minus(Duration.ofMinutes(1)));
    }

    static Node node(String name, String ready, Instant since) {
        return new io.fabric8.kubernetes.api.model.NodeBuilder().withNewMetadata().withName(name).endMetadata()
                .withNewStatus().addNewCondition().withType("Ready").withStatus(ready)
                .withLastTransitionTime(since.toString()).endCondition().endStatus().build();
    }

    /**
     * A pod of any kind the pools tell apart: of a pool or not (configured, or a version no flag asks for), current,
     * stale or made elsewhere, idle, claimed or terminating, starting, ready, not ready, ended, on a node or not, old
     * or young, with its ports in any shape.
     */
    static Pod pod(Random r, String name) {
        int port = 51820 + r.nextInt(16);
        int cpPort = 16443 + r.nextInt(8);
        String version = switch (r.nextInt(4)) {
            case 0 -> "v1.34.1";
            case 1 -> "v1.30.0";
            default -> "v1.33.0";
        };
        String arch = r.nextInt(3) == 0 ? "arm64" : "amd64";
        boolean cp = r.nextInt(4) == 0;
        PoolTarget target = cp ? PoolTarget.controlPlane(version) : PoolTarget.runner(arch);
        Pod base = switch (r.nextInt(4)) {
            case 0 -> OLD.podFor(target, cp ? cpPort : port);
            case 1 -> cp ? TestPods.controlPlane(version, cpPort) : TestPods.runner(arch, port);
            default -> PLANNER.podFor(target, cp ? cpPort : port);
        };
        PodBuilder b = new PodBuilder(base).editMetadata().withName(name).withUid(name + "-" + r.nextInt(1000))
                .endMetadata();
        if (r.nextInt(8) != 0) {
            b.editMetadata().withCreationTimestamp(NOW.minusSeconds(r.nextInt(1200)).toString()).endMetadata();
        }
        if (r.nextInt(6) != 0) {
            b.editSpec().withNodeName(NODES.get(r.nextInt(NODES.size()))).endSpec();
        }
        switch (r.nextInt(7)) {
            case 0 -> b.withNewStatus().withPhase("Pending").endStatus();
            case 1 -> ready(b).editStatus().withPhase("Failed").withReason(r.nextBoolean() ? "Evicted" : "Error")
                    .endStatus();
            case 2 -> ready(b).editStatus().withPhase("Succeeded").endStatus();
            case 3 -> ready(b).editStatus().withConditions(new io.fabric8.kubernetes.api.model.PodConditionBuilder()
                    .withType("Ready").withStatus("False")
                    .withLastTransitionTime(NOW.minusSeconds(r.nextInt(900)).toString()).build())
                    .editFirstContainerStatus().withReady(false).endContainerStatus().endStatus();
            default -> ready(b);
        }
        if (r.nextInt(3) == 0) {
            b.editMetadata().addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ab".repeat(32)).endMetadata();
        }
        switch (r.nextInt(12)) {
            case 0 -> b.editMetadata().withDeletionTimestamp("2026-01-02T03:04:05Z").endMetadata();
            case 1 -> b.editMetadata().addToLabels(PlaypenKeys.HOST_PORT, String.valueOf(51820 + r.nextInt(16)))
                    .endMetadata();
            case 2 -> b.editSpec().editFirstContainer().withPorts(List.of()).endContainer().endSpec();
            case 3 -> b.editMetadata().withLabels(Map.of("app", "other")).endMetadata();
            case 4 -> b.editMetadata().addToLabels(PlaypenKeys.ARCHITECTURE, "s390x").endMetadata();
            case 5 -> b.editSpec().editFirstContainer().editMatchingPort(cp2 -> cp2.getHostPort() != null)
                    .withHostPort(70_000 + r.nextInt(3)).endPort().endContainer().endSpec(); // no valid port, but a spec
            default -> {
            }
        }
        return b.build();
    }

    /** Running and ready, with what a runner or a control plane publishes. */
    static PodBuilder ready(PodBuilder b) {
        return b.editMetadata().addToAnnotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, KEY)
                .addToAnnotations(PlaypenKeys.CONTROL_PLANE_KUBECONFIG, "apiVersion: v1").endMetadata()
                .withNewStatus().withPhase("Running").addNewContainerStatus().withName("runner").withReady(true)
                .withNewState().withNewRunning().endRunning().endState().endContainerStatus()
                .addNewCondition().withType("Ready").withStatus("True").endCondition().endStatus();
    }

    static String describe(PoolPlan plan) {
        List<String> created = new ArrayList<>();
        plan.toCreate().forEach(p -> created.add(p.target() + ":" + p.hostPort() + ":" + ManagedPods.name(p.pod())));
        List<String> deleted = new ArrayList<>();
        plan.toDelete().forEach(d -> deleted.add(d.target() + ":" + ManagedPods.name(d.pod()) + ":" + d.reason()));
        List<String> reported = new ArrayList<>();
        plan.unhealthyAllocated().forEach(u -> reported.add(u.target() + ":" + ManagedPods.name(u.pod()) + ":"
                + u.problem()));
        Map<ResourceType, List<Integer>> used = new LinkedHashMap<>();
        plan.usedPorts().forEach((t, s) -> used.put(t, s.stream().sorted().toList()));
        return "create=" + created + "\ndelete=" + deleted + "\nreport=" + reported + "\nexhausted=" + plan.exhausted()
                + "\nused=" + used + "\nstatuses=" + plan.statuses();
    }
}
