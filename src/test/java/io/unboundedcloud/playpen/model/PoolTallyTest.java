package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.config.OperatorConfig;

/**
 * The pool reconciler counts pods as the watch reports them, one change at a time (PoolTally), instead of walking
 * every cached pod on each pass: after any sequence of adds, changes and deletes, what it counts, and the plan made
 * from it, must be what counting the pods as they are now gives.
 */
class PoolTallyTest {
    static final OperatorConfig CONFIG = OperatorConfig.parse("--runner-amd64-count=6", "--runner-arm64-count=3",
            "--control-plane-count=2", "--control-plane-versions=v1.33.0,v1.34.1",
            "--runner-wireguard-host-port-start=51820", "--runner-wireguard-host-port-end=51835",
            "--control-plane-apiserver-host-port-start=16443", "--control-plane-apiserver-host-port-end=16450");
    static final PoolPlanner PLANNER = new PoolPlanner(CONFIG, new PodTemplates(CONFIG, Map.of()));

    @Test
    void countingChangeByChangeAgreesWithCountingThePodsAsTheyAreNow() {
        Random r = new Random(7);
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
                assertThat(describe(PLANNER.plan(tally, expected)))
                        .as("run %d step %d", run, step).isEqualTo(describe(PLANNER.plan(now.values(), expected)));
                assertThat(tally.size()).isEqualTo(now.size());
            }
        }
    }

    @Test
    void aPlanIsNotChangedByLaterChangesOfTheTally() {
        PoolTally tally = PLANNER.newTally();
        tally.put(TestPods.runner("amd64", 51820));
        PoolPlan plan = PLANNER.plan(tally, Set.of());
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

    /** A pod of any kind the pool tells apart: idle or not, of a pool or not, with its ports in any shape. */
    static Pod pod(Random r, String name) {
        int port = 51820 + r.nextInt(16);
        Pod base = switch (r.nextInt(5)) {
            case 0 -> TestPods.controlPlane(r.nextBoolean() ? "v1.33.0" : "v1.30.0", 16443 + r.nextInt(8));
            case 1 -> TestPods.runner("arm64", port);
            default -> TestPods.runner("amd64", port);
        };
        PodBuilder b = new PodBuilder(base).editMetadata().withName(name).endMetadata();
        switch (r.nextInt(9)) {
            case 0 -> b.editMetadata().addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ab".repeat(32)).endMetadata();
            case 1 -> b.editMetadata().withDeletionTimestamp("2026-01-02T03:04:05Z").endMetadata();
            case 2 -> b.editMetadata().addToLabels(PlaypenKeys.HOST_PORT, String.valueOf(51820 + r.nextInt(16)))
                    .endMetadata();
            case 3 -> b.editSpec().editFirstContainer().withPorts(List.of()).endContainer().endSpec();
            case 4 -> b.editMetadata().withLabels(Map.of("app", "other")).endMetadata();
            case 5 -> b.editMetadata().addToLabels(PlaypenKeys.ARCHITECTURE, "s390x").endMetadata();
            case 6 -> b.editSpec().editFirstContainer().editMatchingPort(cp -> cp.getHostPort() != null)
                    .withHostPort(70_000 + r.nextInt(3)).endPort().endContainer().endSpec(); // no valid port, but a spec
            default -> {
            }
        }
        return b.build();
    }

    static String describe(PoolPlan plan) {
        List<String> created = new ArrayList<>();
        plan.toCreate().forEach(p -> created.add(p.target() + ":" + p.hostPort() + ":" + ManagedPods.name(p.pod())));
        Map<ResourceType, List<Integer>> used = new LinkedHashMap<>();
        plan.usedPorts().forEach((t, s) -> used.put(t, s.stream().sorted().toList()));
        return created + " exhausted=" + plan.exhausted() + " deficits=" + plan.deficits() + " used=" + used;
    }
}
