package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.config.OperatorConfig;

/** The pool rules of docs/pools.md, one test each: health, back-off, rollout, scale-down, against the pure planner. */
class PoolRulesTest {
    static final PoolTarget AMD64 = PoolTarget.runner("amd64");
    static final Instant NOW = Instant.parse("2026-12-01T12:00:00Z");
    static final String KEY = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

    static PoolPlanner planner(String... flags) {
        List<String> all = new ArrayList<>(List.of("--runner-arm64-count=0"));
        all.addAll(List.of(flags));
        OperatorConfig config = OperatorConfig.parse(all.toArray(new String[0]));
        return new PoolPlanner(config, new PodTemplates(config, Map.of()));
    }

    /** A pod the pool made at {@code port}, created {@code age} before NOW, not ready yet, on node-a. */
    static PodBuilder starting(PoolPlanner p, int port, Duration age) {
        return new PodBuilder(p.podFor(AMD64, port)).editMetadata().withUid("uid-" + port)
                .withCreationTimestamp(NOW.minus(age).toString()).endMetadata()
                .editSpec().withNodeName("node-a").endSpec()
                .withNewStatus().withPhase("Pending").endStatus();
    }

    /** The same, running and ready with its key published. */
    static PodBuilder ready(PoolPlanner p, int port, Duration age) {
        return ready(starting(p, port, age));
    }

    static PodBuilder ready(PodBuilder b) {
        return b.editMetadata().addToAnnotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, KEY).endMetadata()
                .withNewStatus().withPhase("Running").addNewContainerStatus().withName("runner").withReady(true)
                .withNewState().withNewRunning().endRunning().endState().endContainerStatus()
                .addNewCondition().withType("Ready").withStatus("True").endCondition().endStatus();
    }

    static PodBuilder claimed(PodBuilder b) {
        return b.editMetadata().addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ab".repeat(32)).endMetadata();
    }

    /** A pod of another template: built with another image, hash and all. */
    static PodBuilder staleReady(int port, Duration age) {
        return ready(starting(planner("--runner-image=example.com/runner:old"), port, age));
    }

    static Node node(String name, String ready, Instant since) {
        NodeBuilder b = new NodeBuilder().withNewMetadata().withName(name).endMetadata().withNewStatus()
                .addNewAddress().withType("ExternalIP").withAddress("203.0.113.10").endAddress().endStatus();
        if (ready != null) {
            b.editStatus().addNewCondition().withType("Ready").withStatus(ready)
                    .withLastTransitionTime(since.toString()).endCondition().endStatus();
        }
        return b.build();
    }

    static Function<String, Optional<Node>> nodes(Node... ns) {
        return name -> List.of(ns).stream().filter(n -> n.getMetadata().getName().equals(name)).findFirst();
    }

    static final Function<String, Optional<Node>> NODE_A_READY = nodes(node("node-a", "True", NOW.minusSeconds(3600)));

    static PoolPlanner.Context ctx(Function<String, Optional<Node>> nodes, PoolBackoff.View backoff) {
        return new PoolPlanner.Context(NOW, nodes, backoff == null ? Map.of() : Map.of(AMD64, backoff), Map.of(),
                Map.of(), Map.of());
    }

    static PoolPlan plan(PoolPlanner p, List<Pod> pods) {
        return p.plan(pods, Set.of(), ctx(NODE_A_READY, null));
    }

    static List<String> deleted(PoolPlan plan) {
        return plan.toDelete().stream().map(d -> ManagedPods.name(d.pod()) + ":" + d.reason()).toList();
    }

    // ---- health ----

    @Test
    void endedPodsAreUnhealthyWithTheirReason() {
        PoolPlanner p = planner("--runner-amd64-count=3");
        List<Pod> pods = List.of(
                ready(p, 51820, Duration.ofMinutes(1)).editStatus().withPhase("Failed").withReason("Evicted").endStatus()
                        .build(),
                ready(p, 51821, Duration.ofMinutes(1)).editStatus().withPhase("Failed").withReason("Error").endStatus()
                        .build(),
                ready(p, 51822, Duration.ofMinutes(1)).editStatus().withPhase("Succeeded").endStatus().build());
        PoolPlan plan = plan(p, pods);
        assertThat(deleted(plan)).containsExactly("playpen-runner-amd64-51820:Evicted",
                "playpen-runner-amd64-51821:Failed", "playpen-runner-amd64-51822:Succeeded");
        assertThat(plan.toDelete()).noneMatch(PoolPlan.Deletion::force);
        // replaced: three new pods on free ports (the ended ones keep theirs until they are gone)
        assertThat(plan.toCreate()).extracting(PoolPlan.PlannedPod::hostPort).containsExactly(51823, 51824, 51825);
        assertThat(plan.statuses().get(AMD64).unhealthyByReason()).containsEntry("Evicted", 1).containsEntry("Failed", 1)
                .containsEntry("Succeeded", 1);
    }

    /**
     * A container in CrashLoopBackOff after three restarts is a crash loop, judged by its restarts: here it passed
     * its readiness check for a moment after its last restart, so the time since it was last ready (20 s) is far
     * below the ready timeout, and the pod would otherwise stay in the pool as capacity for as long as it flaps.
     * Two restarts are not enough yet, and --pool-ready-timeout=0 turns this check off with the other.
     */
    @Test
    void aCrashLoopingPodIsReplacedByItsRestartsWhateverItsLastMomentOfReadiness() {
        PoolPlanner p = planner("--runner-amd64-count=2", "--pool-ready-timeout=5m");
        java.util.function.BiFunction<PoolPlanner, Integer, Pod> looping = (planner, restarts) -> ready(planner, 51820,
                Duration.ofHours(1)).editStatus().withConditions(new io.fabric8.kubernetes.api.model.PodConditionBuilder()
                        .withType("Ready").withStatus("False")
                        .withLastTransitionTime(NOW.minus(Duration.ofSeconds(20)).toString()).build())
                .editFirstContainerStatus().withReady(false).withRestartCount(restarts).withNewState().withNewWaiting()
                .withReason("CrashLoopBackOff").endWaiting().endState().endContainerStatus().endStatus().build();
        PoolPlan plan = plan(p, List.of(looping.apply(p, 3)));
        assertThat(deleted(plan)).containsExactly("playpen-runner-amd64-51820:CrashLoopBackOff");
        assertThat(plan.statuses().get(AMD64).unhealthyByReason()).containsEntry("CrashLoopBackOff", 1);
        assertThat(deleted(plan(p, List.of(looping.apply(p, 2))))).isEmpty();
        PoolPlanner off = planner("--runner-amd64-count=2", "--pool-ready-timeout=0");
        assertThat(deleted(plan(off, List.of(looping.apply(off, 9))))).isEmpty();
    }

    @Test
    void aPodNotReadyWithinTheTimeoutIsReplacedAndTheTimeoutCanBeOff() {
        PoolPlanner p = planner("--runner-amd64-count=2", "--pool-ready-timeout=5m");
        Pod old = starting(p, 51820, Duration.ofMinutes(5)).build();
        Pod young = starting(p, 51821, Duration.ofMinutes(4)).build();
        assertThat(deleted(plan(p, List.of(old, young)))).containsExactly("playpen-runner-amd64-51820:NotReadyInTime");
        // a pod that was ready and became unready counts from that moment, not from its creation
        Pod wasReady = ready(p, 51822, Duration.ofHours(3)).editStatus().withConditions(new io.fabric8.kubernetes.api
                .model.PodConditionBuilder().withType("Ready").withStatus("False")
                .withLastTransitionTime(NOW.minus(Duration.ofMinutes(2)).toString()).build())
                .editFirstContainerStatus().withReady(false).endContainerStatus().endStatus().build();
        assertThat(deleted(plan(p, List.of(wasReady)))).isEmpty();
        // a pod that is Running but never published its key is not ready either
        Pod noKey = starting(p, 51823, Duration.ofMinutes(6)).withNewStatus().withPhase("Running")
                .addNewContainerStatus().withName("runner").withReady(true).withNewState().withNewRunning().endRunning()
                .endState().endContainerStatus().endStatus().build();
        assertThat(deleted(plan(p, List.of(noKey)))).containsExactly("playpen-runner-amd64-51823:NotReadyInTime");
        PoolPlanner off = planner("--runner-amd64-count=2", "--pool-ready-timeout=0");
        assertThat(deleted(plan(off, List.of(starting(off, 51820, Duration.ofDays(3)).build())))).isEmpty();
    }

    @Test
    void podsOnAGoneOrLongNotReadyNodeAreDeletedWithoutGrace() {
        PoolPlanner p = planner("--runner-amd64-count=3", "--pool-node-not-ready-grace=2m");
        Pod onGone = ready(p, 51820, Duration.ofMinutes(10)).editSpec().withNodeName("node-gone").endSpec().build();
        Pod youngOnUnknown = ready(p, 51821, Duration.ofSeconds(30)).editSpec().withNodeName("node-new").endSpec().build();
        Pod onNotReady = ready(p, 51822, Duration.ofMinutes(10)).editSpec().withNodeName("node-b").endSpec().build();
        Pod onBriefly = ready(p, 51823, Duration.ofMinutes(10)).editSpec().withNodeName("node-c").endSpec().build();
        var lookup = nodes(node("node-b", "Unknown", NOW.minus(Duration.ofMinutes(3))),
                node("node-c", "False", NOW.minus(Duration.ofMinutes(1))));
        PoolPlan plan = p.plan(List.of(onGone, youngOnUnknown, onNotReady, onBriefly), Set.of(), ctx(lookup, null));
        assertThat(deleted(plan)).containsExactly("playpen-runner-amd64-51820:NodeGone",
                "playpen-runner-amd64-51822:NodeNotReady");
        assertThat(plan.toDelete()).allMatch(PoolPlan.Deletion::force);
        // with the node cache not synced, nothing is judged by its node
        assertThat(deleted(p.plan(List.of(onGone, onNotReady), Set.of(), ctx(null, null)))).isEmpty();
    }

    /**
     * A pod ready in itself on a node that turned NotReady (within the grace) is not handed out, so it is not ready
     * capacity; nor is it starting: the pools resource says where it is and when the pool replaces it, not that
     * pods of the template are starting.
     */
    @Test
    void aReadyPodOnANotReadyNodeIsNeitherReadyNorStarting() {
        var lookup = nodes(node("node-a", "True", NOW.minusSeconds(3600)),
                node("node-b", "Unknown", NOW.minus(Duration.ofMinutes(1))));
        PoolPlanner p = planner("--runner-amd64-count=2", "--pool-node-not-ready-grace=2m");
        Pod served = ready(p, 51820, Duration.ofHours(1)).build();
        Pod cutOff = ready(p, 51821, Duration.ofHours(1)).editSpec().withNodeName("node-b").endSpec().build();
        PoolStatus s = p.plan(List.of(served, cutOff), Set.of(), ctx(lookup, null)).statuses().get(AMD64);
        assertThat(s.ready()).isEqualTo(1);
        assertThat(s.starting()).isZero();
        List<PoolViews.Condition> conditions = new PoolViews("25%").conditions(s, NOW);
        assertThat(conditions.get(0).status() + " " + conditions.get(0).reason()).isEqualTo("False Short");
        assertThat(conditions.get(0).message()).isEqualTo("1 of 2 idle pods ready, 1 more on a node that is NotReady "
                + "or gone (never handed out; replaced once the node has been so for --pool-node-not-ready-grace)");
        assertThat(conditions.get(1).reason()).isEqualTo("Current");
    }

    /**
     * A pool backing off creates one pod at a time once its pause is over, and none while one is still starting. A pod
     * ready in itself on a node that turned NotReady is not starting: it never becomes ready capacity there, so it
     * holds back no create until the node grace replaces it. It still keeps the back-off shown: the pool is short.
     */
    @Test
    void aReadyPodOnANotReadyNodeDoesNotHoldBackTheCreatesOfAPoolBackingOff() {
        var lookup = nodes(node("node-a", "True", NOW.minusSeconds(3600)),
                node("node-b", "Unknown", NOW.minus(Duration.ofMinutes(1))));
        PoolPlanner p = planner("--runner-amd64-count=3", "--pool-node-not-ready-grace=2m");
        PoolBackoff.View over = new PoolBackoff.View(2, Duration.ofSeconds(20), NOW.minusSeconds(1));
        Pod served = ready(p, 51820, Duration.ofHours(1)).build();
        Pod cutOff = ready(p, 51821, Duration.ofHours(1)).editSpec().withNodeName("node-b").endSpec().build();
        PoolPlan plan = p.plan(List.of(served, cutOff), Set.of(), ctx(lookup, over));
        assertThat(plan.toCreate()).as("the one create after the pause").hasSize(1);
        assertThat(plan.statuses().get(AMD64).starting()).isZero();
        assertThat(plan.statuses().get(AMD64).backoff()).isEqualTo(over);
        // a pool at its count with such a pod is not settled either: the grace replaces it, one pod at a time
        PoolPlanner two = planner("--runner-amd64-count=2", "--pool-node-not-ready-grace=2m");
        PoolPlan atCount = two.plan(List.of(served, cutOff), Set.of(), ctx(lookup, over));
        assertThat(atCount.toCreate()).isEmpty();
        assertThat(atCount.statuses().get(AMD64).backoff()).isEqualTo(over);
    }

    @Test
    void thePoolsStatusCountsUnhealthyIdleAndAllocatedPodsAndPodsStartingOrAwaited() {
        PoolPlanner p = planner("--runner-amd64-count=4");
        Pod failedIdle = ready(p, 51820, Duration.ofHours(1)).editStatus().withPhase("Failed").endStatus().build();
        Pod failedAllocated = claimed(ready(p, 51821, Duration.ofHours(1))).editStatus().withPhase("Failed").endStatus()
                .build();
        Pod starting = starting(p, 51822, Duration.ofSeconds(5)).build();
        Pod ready = ready(p, 51823, Duration.ofHours(1)).build();
        // one more pod created by this process that the watch has not shown yet
        PoolStatus status = p.plan(List.of(failedIdle, failedAllocated, starting, ready),
                Set.of("playpen-runner-amd64-51824"), ctx(NODE_A_READY, null)).statuses().get(AMD64);
        assertThat(status.unhealthy()).as("the idle pod deleted and the allocated one reported").isEqualTo(2);
        assertThat(status.starting()).as("the starting pod and the one awaited").isEqualTo(2);
        assertThat(status.ready()).isEqualTo(1);
    }

    @Test
    void unhealthyAllocatedPodsAreReportedNeverDeleted() {
        PoolPlanner p = planner("--runner-amd64-count=1");
        Pod evicted = claimed(ready(p, 51820, Duration.ofMinutes(5))).editStatus().withPhase("Failed")
                .withReason("Evicted").endStatus().build();
        PoolPlan plan = plan(p, List.of(evicted));
        assertThat(plan.toDelete()).isEmpty();
        assertThat(plan.unhealthyAllocated()).extracting(u -> u.problem().reason()).containsExactly("Evicted");
        assertThat(plan.statuses().get(AMD64).unhealthyAllocatedByReason()).containsEntry("Evicted", 1);
        assertThat(plan.statuses().get(AMD64).allocated()).isEqualTo(1);
        assertThat(plan.toCreate()).hasSize(1);
    }

    // ---- back-off ----

    @Test
    void backOffDoublesFromBaseToMaxAndEndsOnSuccess() {
        PoolBackoff b = new PoolBackoff(Duration.ofSeconds(10), Duration.ofSeconds(60));
        assertThat(b.view().backingOff()).isFalse();
        List<Long> delays = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            delays.add(b.failed(NOW).delay().toSeconds());
        }
        assertThat(delays).containsExactly(10L, 20L, 40L, 60L, 60L);
        assertThat(b.view().nextCreateAt()).isEqualTo(NOW.plusSeconds(60));
        assertThat(b.succeeded()).isTrue();
        assertThat(b.view()).isEqualTo(PoolBackoff.View.NONE);
        assertThat(b.succeeded()).isFalse();
    }

    @Test
    void aPoolBackingOffCreatesNothingWhilePausedThenOnePodAtATime() {
        PoolPlanner p = planner("--runner-amd64-count=3");
        PoolBackoff.View paused = new PoolBackoff.View(2, Duration.ofSeconds(20), NOW.plusSeconds(5));
        PoolBackoff.View over = new PoolBackoff.View(2, Duration.ofSeconds(20), NOW.minusSeconds(1));
        assertThat(p.plan(List.of(), Set.of(), ctx(NODE_A_READY, paused)).toCreate()).isEmpty();
        assertThat(p.plan(List.of(), Set.of(), ctx(NODE_A_READY, over)).toCreate()).hasSize(1);
        // and none while that one is still starting
        Pod probe = starting(p, 51820, Duration.ofSeconds(3)).build();
        assertThat(p.plan(List.of(probe), Set.of(), ctx(NODE_A_READY, over)).toCreate()).isEmpty();
        assertThat(p.plan(List.of(), Set.of("playpen-runner-amd64-51820"), ctx(NODE_A_READY, over)).toCreate()).isEmpty();
        // unhealthy pods are still deleted while the pool pauses
        Pod evicted = ready(p, 51821, Duration.ofMinutes(1)).editStatus().withPhase("Failed").endStatus().build();
        assertThat(deleted(p.plan(List.of(evicted), Set.of(), ctx(NODE_A_READY, paused))))
                .containsExactly("playpen-runner-amd64-51821:Failed");
        // without a back-off the same pool refills at once
        assertThat(p.plan(List.of(), Set.of(), ctx(NODE_A_READY, null)).toCreate()).hasSize(3);
    }

    /**
     * A pool backing off that then needs no new pods (its count lowered, its demand fallen, enough ready pods there
     * anyway) shows no back-off: it creates nothing whatever the back-off says, so Degraded/BackOff, the status's
     * back-off and the metrics the alert reads would say something that is not happening. A pool that needs pods, or
     * whose one pod at a time is still starting, still backs off.
     */
    @Test
    void aPoolBackingOffShowsTheBackOffOnlyWhileItNeedsNewPods() {
        PoolBackoff.View paused = new PoolBackoff.View(3, Duration.ofSeconds(40), NOW.plusSeconds(30));
        PoolBackoff.View over = new PoolBackoff.View(3, Duration.ofSeconds(40), NOW.minusSeconds(30));
        Pod readyPod = ready(planner("--runner-amd64-count=1"), 51820, Duration.ofHours(1)).build();
        for (PoolBackoff.View b : List.of(paused, over)) {
            // count lowered to 1 (or demand fell): the ready pod is all the pool wants
            PoolPlan settled = planner("--runner-amd64-count=1").plan(List.of(readyPod), Set.of(), ctx(NODE_A_READY, b));
            assertThat(settled.toCreate()).isEmpty();
            assertThat(settled.statuses().get(AMD64).backoff().backingOff()).as("a pool at its count, every pod ready")
                    .isFalse();
            assertThat(new PoolViews("25%").conditions(settled.statuses().get(AMD64), NOW))
                    .noneMatch(c -> c.reason().equals("BackOff"));
            // a count of 0: nothing wanted at all
            PoolPlan none = planner("--runner-amd64-count=0").plan(List.of(), Set.of(), ctx(NODE_A_READY, b));
            assertThat(none.statuses().get(AMD64).backoff().backingOff()).as("a pool that wants no pods").isFalse();

            // the same pool with a count of 2 needs a pod: it still backs off
            PoolPlan needs = planner("--runner-amd64-count=2").plan(List.of(readyPod), Set.of(), ctx(NODE_A_READY, b));
            assertThat(needs.statuses().get(AMD64).backoff()).isEqualTo(b);
            assertThat(needs.toCreate()).hasSize(b == paused ? 0 : 1);
        }
        // replacements that keep failing: the one pod at a time is starting, so the pool needs no create now, but its
        // back-off goes on (else each failure would start again from the base pause)
        PoolPlanner p = planner("--runner-amd64-count=1");
        Pod probe = starting(p, 51821, Duration.ofSeconds(5)).build();
        PoolPlan probing = p.plan(List.of(probe), Set.of(), ctx(NODE_A_READY, over));
        assertThat(probing.toCreate()).isEmpty();
        assertThat(probing.statuses().get(AMD64).backoff()).isEqualTo(over);
        PoolPlan awaited = p.plan(List.of(), Set.of("playpen-runner-amd64-51821"), ctx(NODE_A_READY, over));
        assertThat(awaited.statuses().get(AMD64).backoff()).isEqualTo(over);
        // and a pool whose probe is deleted unhealthy this pass is not settled either
        Pod failedProbe = starting(p, 51821, Duration.ofMinutes(20)).build();
        PoolPlan failing = p.plan(List.of(readyPod, failedProbe), Set.of(), ctx(NODE_A_READY, over));
        assertThat(deleted(failing)).containsExactly("playpen-runner-amd64-51821:NotReadyInTime");
        assertThat(failing.statuses().get(AMD64).backoff()).isEqualTo(over);
    }

    /**
     * A never-ready image, simulated for an hour with the planner and the back-off as the reconciler drives them (a
     * pass every 10 s, a failure per pod deleted unhealthy): the creates are bounded, not a hot loop.
     */
    @Test
    void aNeverReadyImageCostsABoundedNumberOfCreatesPerHour() {
        OperatorConfig config = OperatorConfig.parse("--runner-amd64-count=4", "--runner-arm64-count=0",
                "--pool-ready-timeout=2m", "--pool-backoff-base=10s", "--pool-backoff-max=5m");
        PoolPlanner p = new PoolPlanner(config, new PodTemplates(config, Map.of()));
        PoolBackoff backoff = new PoolBackoff(Duration.ofSeconds(10), Duration.ofMinutes(5));
        List<Pod> live = new ArrayList<>();
        int creates = 0;
        Instant t = NOW;
        Instant end = NOW.plus(Duration.ofHours(1));
        int[] perTenMinutes = new int[6];
        for (; t.isBefore(end); t = t.plusSeconds(10)) {
            PoolPlanner.Context c = new PoolPlanner.Context(t, NODE_A_READY, Map.of(AMD64, backoff.view()), Map.of(),
                    Map.of(), Map.of());
            PoolPlan plan = p.plan(live, Set.of(), c);
            for (PoolPlan.Deletion d : plan.toDelete()) {
                live.remove(d.pod());
                backoff.failed(t);
            }
            if (backoff.view().pausedAt(t)) {
                continue; // the create step skips a pool that this pass's deletes paused
            }
            for (PoolPlan.PlannedPod planned : plan.toCreate()) {
                live.add(new PodBuilder(planned.pod()).editMetadata().withUid("u" + creates)
                        .withCreationTimestamp(t.toString()).endMetadata().editSpec().withNodeName("node-a").endSpec()
                        .withNewStatus().withPhase("Running").endStatus().build());
                creates++;
                perTenMinutes[(int) (Duration.between(NOW, t).toMinutes() / 10)]++;
            }
        }
        // 4 at the start, then each failure doubles the pause up to 5 minutes and one pod is tried at a time: after
        // the first 10 minutes a pod every ready timeout + 5 minutes at most, i.e. 2 per 10 minutes
        assertThat(creates).isLessThanOrEqualTo(20);
        for (int i = 1; i < perTenMinutes.length; i++) {
            assertThat(perTenMinutes[i]).as("creates in minutes %d-%d", i * 10, i * 10 + 10).isLessThanOrEqualTo(2);
        }
        // without the back-off the same hour would replace 4 pods every 2 minutes: 120 creates
        assertThat(creates).isLessThan(120 / 4);
    }

    // ---- rollout ----

    @Test
    void stalePodsAreReplacedSurgeFirstAndDeletedOnlyOnceACurrentPodIsReady() {
        PoolPlanner p = planner("--runner-amd64-count=2", "--pool-max-surge=1");
        Pod s1 = staleReady(51820, Duration.ofHours(2)).build();
        Pod s2 = staleReady(51821, Duration.ofHours(1)).build();
        // step 1: one surge pod, nothing deleted
        PoolPlan first = plan(p, List.of(s1, s2));
        assertThat(first.toDelete()).isEmpty();
        assertThat(first.toCreate()).extracting(PoolPlan.PlannedPod::hostPort).containsExactly(51822);
        assertThat(first.statuses().get(AMD64).stale()).isEqualTo(2);
        // step 2: the surge pod is starting: nothing more (the surge is used up), nothing deleted
        Pod c1 = starting(p, 51822, Duration.ofSeconds(5)).build();
        PoolPlan second = plan(p, List.of(s1, s2, c1));
        assertThat(second.toDelete()).isEmpty();
        assertThat(second.toCreate()).isEmpty();
        // step 3: it is ready: the oldest stale pod goes, the next surge pod comes
        Pod c1Ready = ready(p, 51822, Duration.ofSeconds(30)).build();
        PoolPlan third = plan(p, List.of(s1, s2, c1Ready));
        assertThat(deleted(third)).containsExactly("playpen-runner-amd64-51820:Stale");
        assertThat(third.toCreate()).hasSize(1);
        // step 4: both current and ready: the last stale pod goes, nothing is created
        Pod c2Ready = ready(p, 51823, Duration.ofSeconds(20)).build();
        PoolPlan fourth = plan(p, List.of(s2, c1Ready, c2Ready));
        assertThat(deleted(fourth)).containsExactly("playpen-runner-amd64-51821:Stale");
        assertThat(fourth.toCreate()).isEmpty();
    }

    @Test
    void aRolloutDeletesStalePodsNotReadyFirstThenTheOldestWhateverOrderTheyAreListedIn() {
        PoolPlanner p = planner("--runner-amd64-count=2", "--pool-max-surge=1");
        Pod staleStarting = starting(planner("--runner-image=example.com/runner:old"), 51823, Duration.ofMinutes(1))
                .build();
        Pod staleYoung = staleReady(51820, Duration.ofHours(1)).build();
        Pod staleOld = staleReady(51821, Duration.ofHours(3)).build();
        Pod current = ready(p, 51822, Duration.ofMinutes(5)).build();
        // three ready, two wanted: one ready stale pod may go, the oldest; the stale pod that is not ready goes first
        PoolPlan plan = plan(p, List.of(staleYoung, staleStarting, staleOld, current));
        assertThat(deleted(plan)).containsExactly("playpen-runner-amd64-51823:Stale", "playpen-runner-amd64-51821:Stale");
        assertThat(plan(p, List.of(current, staleOld, staleStarting, staleYoung)).toDelete())
                .as("listed the other way round").extracting(d -> ManagedPods.name(d.pod()))
                .containsExactly("playpen-runner-amd64-51823", "playpen-runner-amd64-51821");
    }

    @Test
    void aRolloutToANeverReadyTemplateKeepsTheStalePodsServing() {
        PoolPlanner p = planner("--runner-amd64-count=2", "--pool-max-surge=1", "--pool-ready-timeout=5m");
        Pod s1 = staleReady(51820, Duration.ofHours(2)).build();
        Pod s2 = staleReady(51821, Duration.ofHours(1)).build();
        Pod broken = starting(p, 51822, Duration.ofMinutes(6)).build();
        PoolPlan plan = plan(p, List.of(s1, s2, broken));
        assertThat(deleted(plan)).containsExactly("playpen-runner-amd64-51822:NotReadyInTime");
        assertThat(plan.statuses().get(AMD64).ready()).isEqualTo(2);
    }

    /**
     * A pod on a node that has turned NotReady is never handed out (PoolHandOut), whatever the grace: while the grace
     * runs it is no ready capacity, so a rollout keeps the stale pod that still serves instead of retiring it for
     * the current one that cannot, and the pools resource does not call it ready.
     */
    @Test
    void aRolloutDoesNotRetireAStalePodForACurrentOneOnANotReadyNode() {
        PoolPlanner p = planner("--runner-amd64-count=1", "--pool-max-surge=1", "--pool-node-not-ready-grace=2m");
        Pod stale = staleReady(51820, Duration.ofHours(1)).build();
        Pod current = ready(p, 51821, Duration.ofMinutes(5)).editSpec().withNodeName("node-b").endSpec().build();
        var lookup = nodes(node("node-a", "True", NOW.minusSeconds(3600)),
                node("node-b", "Unknown", NOW.minus(Duration.ofMinutes(1))));
        PoolPlan plan = p.plan(List.of(stale, current), Set.of(), ctx(lookup, null));
        assertThat(deleted(plan)).as("the stale pod is the only one that can be handed out").isEmpty();
        assertThat(plan.statuses().get(AMD64).ready()).isEqualTo(1);
    }

    /**
     * Before the node cache has synced nobody knows which ready pods are on a node that is not Ready: a rollout
     * retires no stale pod, and its surge creates stay within D + S counting every pod; an empty pool still fills.
     */
    @Test
    void beforeTheNodesAreKnownARolloutRetiresNothingAndAnEmptyPoolStillFills() {
        PoolPlanner p = planner("--runner-amd64-count=2", "--pool-max-surge=1");
        PoolPlanner.Context pending = new PoolPlanner.Context(NOW, null, Map.of(), Map.of(), Map.of(), Map.of(), true);
        List<Pod> pods = List.of(staleReady(51820, Duration.ofHours(2)).build(),
                staleReady(51821, Duration.ofHours(1)).build(), ready(p, 51822, Duration.ofMinutes(5)).build());
        PoolPlan held = p.plan(pods, Set.of(), pending);
        assertThat(deleted(held)).isEmpty();
        assertThat(held.toCreate()).as("D + S = 3 pods already").isEmpty();
        // the nodes known: the oldest stale pod goes, and a current one takes its place within the surge
        PoolPlan known = p.plan(pods, Set.of(), ctx(NODE_A_READY, null));
        assertThat(deleted(known)).containsExactly("playpen-runner-amd64-51820:Stale");
        assertThat(known.toCreate()).hasSize(1);
        assertThat(p.plan(List.of(), Set.of(), pending).toCreate()).hasSize(2);
    }

    /**
     * A ready idle pod on a node without an ExternalIP is never handed out (its endpoint needs the address): it is
     * not ready capacity for READY, the Ready condition, playpen_pool_ready_pods, nor a rollout.
     */
    @Test
    void aReadyPodOnANodeWithoutAnExternalIpIsNotCountedReady() {
        Node noIp = new NodeBuilder(node("node-c", "True", NOW.minusSeconds(3600))).editStatus().withAddresses()
                .endStatus().build();
        var lookup = nodes(node("node-a", "True", NOW.minusSeconds(3600)), noIp);
        PoolPlanner p = planner("--runner-amd64-count=2");
        Pod served = ready(p, 51820, Duration.ofHours(1)).build();
        Pod stranded = ready(p, 51821, Duration.ofHours(1)).editSpec().withNodeName("node-c").endSpec().build();
        PoolStatus s = p.plan(List.of(served, stranded), Set.of(), ctx(lookup, null)).statuses().get(AMD64);
        assertThat(s.ready()).isEqualTo(1);
        assertThat(s.starting()).isZero();
        assertThat(s.noExternalIp()).isEqualTo(1);
        PoolViews.Condition ready = new PoolViews("25%").conditions(s, NOW).get(0);
        assertThat(ready.status() + " " + ready.reason()).isEqualTo("False NoExternalIP");
        assertThat(ready.message()).startsWith("1 of 2 idle pods ready, 1 more ready on a node without an ExternalIP");
        @SuppressWarnings("unchecked")
        Map<String, Object> status = (Map<String, Object>) new PoolViews("25%").object(s, NOW).get("status");
        assertThat(status).containsEntry("ready", 1).containsEntry("readyWithoutExternalIP", 1);

        // a rollout keeps the stale pod that serves rather than count on the current one that cannot
        PoolPlanner one = planner("--runner-amd64-count=1");
        Pod current = ready(one, 51821, Duration.ofMinutes(1)).editSpec().withNodeName("node-c").endSpec().build();
        PoolPlan rollout = one.plan(List.of(staleReady(51820, Duration.ofHours(1)).build(), current), Set.of(),
                ctx(lookup, null));
        assertThat(deleted(rollout)).isEmpty();
    }

    @Test
    void theSurgeBoundsHowManyNewPodsARolloutAddsAtOnce() {
        PoolPlanner p = planner("--runner-amd64-count=8");
        List<Pod> stale = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            stale.add(staleReady(51820 + i, Duration.ofHours(1)).build());
        }
        // 25% of 8 = 2
        assertThat(plan(p, stale).toCreate()).hasSize(2);
        assertThat(plan(planner("--runner-amd64-count=8", "--pool-max-surge=3"), stale).toCreate()).hasSize(3);
        // rolling off: stale pods count as capacity and stay
        PoolPlan off = plan(planner("--runner-amd64-count=8", "--pool-max-surge=0"), stale);
        assertThat(off.toCreate()).isEmpty();
        assertThat(off.toDelete()).isEmpty();
        assertThat(off.statuses().get(AMD64).stale()).isEqualTo(8);
    }

    @Test
    void aSwapInPlaceFromTheGoOperatorKeepsItsPodsWhenTheTemplateIsEqualAndRollsThemBoundedWhenNot() {
        PoolPlanner p = planner("--runner-amd64-count=4");
        List<Pod> goPods = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            // the Go operator's pods: our template without the template-hash label
            Pod made = ready(p, 51820 + i, Duration.ofHours(1)).build();
            goPods.add(new PodBuilder(made).editMetadata().removeFromLabels(PlaypenKeys.TEMPLATE_HASH).endMetadata()
                    .build());
        }
        PoolPlan same = plan(p, goPods);
        assertThat(same.toCreate()).isEmpty();
        assertThat(same.toDelete()).isEmpty();
        assertThat(same.statuses().get(AMD64).stale()).isZero();
        // another image: stale, replaced one surge at a time (25% of 4 = 1), never all at once
        PoolPlan other = plan(planner("--runner-amd64-count=4", "--runner-image=example.com/runner:new"), goPods);
        assertThat(other.toCreate()).hasSize(1);
        assertThat(other.toDelete()).isEmpty();
        assertThat(other.statuses().get(AMD64).stale()).isEqualTo(4);
    }

    @Test
    void claimedStalePodsAreUntouched() {
        PoolPlanner p = planner("--runner-amd64-count=1");
        Pod claimedStale = claimed(staleReady(51820, Duration.ofHours(1))).build();
        Pod current = ready(p, 51821, Duration.ofMinutes(1)).build();
        PoolPlan plan = plan(p, List.of(claimedStale, current));
        assertThat(plan.toDelete()).isEmpty();
        assertThat(plan.toCreate()).isEmpty();
        assertThat(plan.statuses().get(AMD64).stale()).isZero();
        assertThat(plan.statuses().get(AMD64).allocated()).isEqualTo(1);
    }

    @Test
    void theTemplateHashChangesWithTheTemplateAndNotWithThePort() {
        PoolPlanner p = planner("--runner-amd64-count=1");
        String h = TemplateHashes.recorded(p.podFor(AMD64, 51820));
        assertThat(h).hasSize(16).isEqualTo(TemplateHashes.recorded(p.podFor(AMD64, 51899)));
        assertThat(TemplateHashes.recorded(planner("--runner-image=example.com/runner:2").podFor(AMD64, 51820)))
                .isNotEqualTo(h);
        assertThat(TemplateHashes.recorded(planner("--runner-require-kvm=false").podFor(AMD64, 51820))).isNotEqualTo(h);
        assertThat(TemplateHashes.recorded(planner("--runner-amd64-count=5").podFor(AMD64, 51820))).isEqualTo(h);
    }

    // ---- scale-down ----

    @Test
    void scaleDownDeletesUnhealthyThenStaleThenTheYoungestAndNeverAClaimedPod() {
        PoolPlanner p = planner("--runner-amd64-count=2", "--pool-max-surge=0");
        Pod unhealthy = ready(p, 51820, Duration.ofHours(5)).editStatus().withPhase("Failed").endStatus().build();
        Pod stale = staleReady(51821, Duration.ofHours(4)).build();
        Pod old = ready(p, 51822, Duration.ofHours(3)).build();
        Pod middle = ready(p, 51823, Duration.ofHours(2)).build();
        Pod young = ready(p, 51824, Duration.ofHours(1)).build();
        Pod taken = claimed(ready(p, 51825, Duration.ofMinutes(1))).build();
        PoolPlan plan = plan(p, List.of(unhealthy, stale, old, middle, young, taken));
        assertThat(deleted(plan)).containsExactly("playpen-runner-amd64-51820:Failed",
                "playpen-runner-amd64-51821:Surplus", "playpen-runner-amd64-51824:Surplus");
        assertThat(plan.toCreate()).isEmpty();
    }

    @Test
    void scaleDownTakesStartingPodsBeforeReadyOnesAndKeepsTheDesiredReady() {
        PoolPlanner p = planner("--runner-amd64-count=1");
        Pod ready = ready(p, 51820, Duration.ofMinutes(10)).build();
        Pod startingOld = starting(p, 51821, Duration.ofMinutes(2)).build();
        Pod startingYoung = starting(p, 51822, Duration.ofMinutes(1)).build();
        assertThat(deleted(plan(p, List.of(ready, startingOld, startingYoung))))
                .containsExactly("playpen-runner-amd64-51822:Surplus", "playpen-runner-amd64-51821:Surplus");
    }

    @Test
    void aReadyPodIsNeverRemovedInFavourOfOneThatIsNotReadyYet() {
        PoolPlanner p = planner("--runner-amd64-count=1");
        Pod ready = ready(p, 51820, Duration.ofMinutes(10)).build();
        // a starting pod the pool did not make: never surplus itself, and no reason to drop the ready one
        Pod foreignStarting = new PodBuilder(starting(p, 51821, Duration.ofMinutes(1)).build()).editMetadata()
                .removeFromLabels(PlaypenKeys.TEMPLATE_HASH).endMetadata().build();
        assertThat(deleted(plan(p, List.of(ready, foreignStarting)))).isEmpty();
    }

    /** Lowering the count keeps the pod that can be handed out, not the one on a node that has turned NotReady. */
    @Test
    void scaleDownKeepsThePodThatCanServeOverOneOnANotReadyNode() {
        PoolPlanner p = planner("--runner-amd64-count=1", "--pool-node-not-ready-grace=2m");
        Pod onNotReady = ready(p, 51820, Duration.ofHours(1)).editSpec().withNodeName("node-b").endSpec().build();
        Pod onReady = ready(p, 51821, Duration.ofMinutes(1)).build();
        var lookup = nodes(node("node-a", "True", NOW.minusSeconds(3600)),
                node("node-b", "False", NOW.minus(Duration.ofMinutes(1))));
        PoolPlan plan = p.plan(List.of(onNotReady, onReady), Set.of(), ctx(lookup, null));
        assertThat(deleted(plan)).containsExactly("playpen-runner-amd64-51820:Surplus");
    }

    @Test
    void aScaledDownPodsHostPortIsFreeOnceItIsGone() {
        PoolPlanner p = planner("--runner-amd64-count=1");
        Pod keep = ready(p, 51820, Duration.ofHours(1)).build();
        Pod extra = ready(p, 51821, Duration.ofMinutes(1)).build();
        assertThat(deleted(plan(p, List.of(keep, extra)))).containsExactly("playpen-runner-amd64-51821:Surplus");
        // once the pod is gone its port is the lowest free one again
        PoolPlanner two = planner("--runner-amd64-count=2");
        assertThat(plan(two, List.of(keep)).toCreate()).extracting(PoolPlan.PlannedPod::hostPort).containsExactly(51821);
    }

    @Test
    void aPoolNoFlagAsksForAnyMoreDrains() {
        PoolPlanner old = planner("--control-plane-count=1", "--control-plane-versions=v1.32.0");
        Pod cp = new PodBuilder(old.podFor(PoolTarget.controlPlane("v1.32.0"), 16443)).editMetadata().withUid("cp")
                .withCreationTimestamp(NOW.minusSeconds(60).toString()).endMetadata().build();
        PoolPlanner now = planner("--control-plane-count=1", "--control-plane-versions=v1.33.0");
        PoolPlan plan = plan(now, List.of(cp));
        assertThat(deleted(plan)).containsExactly("playpen-control-plane-1.32.0-16443:Surplus");
        assertThat(plan.statuses().get(PoolTarget.controlPlane("v1.32.0")).configured()).isFalse();
    }

    /**
     * A pool that wants no pods (no flag asks for it, or its count is 0) deletes its pods of an older template as
     * surplus, whatever form the surge takes: no current pod replaces them, and a number of pods as the surge (here 1)
     * is no rollout for a pool of none.
     */
    @Test
    void aPoolThatWantsNoPodsDeletesItsStalePodsAsSurplusWhateverTheSurge() {
        PoolPlanner old = planner("--control-plane-count=1", "--control-plane-versions=v1.32.0");
        Pod cp = ready(new PodBuilder(old.podFor(PoolTarget.controlPlane("v1.32.0"), 16443)).editMetadata()
                .withUid("cp").withCreationTimestamp(NOW.minusSeconds(60).toString()).endMetadata()).build();
        PoolPlanner now = planner("--control-plane-count=1", "--control-plane-versions=v1.33.0", "--pool-max-surge=1",
                "--runner-image=example.com/runner:2");
        PoolPlan drained = plan(now, List.of(cp));
        assertThat(drained.statuses().get(PoolTarget.controlPlane("v1.32.0")).stale()).isEqualTo(1);
        assertThat(deleted(drained)).containsExactly("playpen-control-plane-1.32.0-16443:Surplus");

        PoolPlanner zero = planner("--runner-amd64-count=0", "--pool-max-surge=1");
        PoolPlan none = plan(zero, List.of(staleReady(51820, Duration.ofHours(1)).build()));
        assertThat(deleted(none)).containsExactly("playpen-runner-amd64-51820:Surplus");
        assertThat(none.toDelete()).singleElement().satisfies(d -> assertThat(d.message()).endsWith("beyond the "
                + "desired count; deleted"));
    }

    /**
     * A pool scaled to 0 keeps no pod it made, whatever number of pods --pool-max-surge says: a surge is for a rollout,
     * and a pool that wants none rolls nothing out. The Go operator's pod of another image (no template hash) stays,
     * as it always does, but it does not make room for pods the pool made.
     */
    @Test
    void aPoolScaledToZeroKeepsNoPodItMadeBesideAGoOperatorsStalePod() {
        PoolPlanner zero = planner("--runner-amd64-count=0", "--pool-max-surge=2",
                "--runner-image=example.com/runner:new");
        Pod goPod = new PodBuilder(staleReady(51820, Duration.ofHours(2)).build()).editMetadata()
                .removeFromLabels(PlaypenKeys.TEMPLATE_HASH).endMetadata().build();
        Pod made = ready(zero, 51821, Duration.ofHours(1)).build();
        PoolPlan plan = plan(zero, List.of(goPod, made));
        assertThat(deleted(plan)).containsExactly("playpen-runner-amd64-51821:Surplus");
        assertThat(plan.toCreate()).isEmpty();
    }

    // ---- demand-aware buffer ----

    @Test
    void theBufferIsRateTimesTimeToReadyBetweenTheCountAndTheMaximum() {
        Duration none = Duration.ZERO;
        assertThat(DemandBuffer.desired(20, Duration.ofMillis(500), 2, 30, none)).isEqualTo(10);
        assertThat(DemandBuffer.desired(20, Duration.ofSeconds(5), 2, 30, none)).isEqualTo(30);
        assertThat(DemandBuffer.desired(0.1, Duration.ofSeconds(5), 2, 30, none)).isEqualTo(2);
        assertThat(DemandBuffer.desired(20, null, 2, 30, none)).as("no time-to-ready seen yet").isEqualTo(2);
        assertThat(DemandBuffer.desired(3, Duration.ofMillis(900), 1, 30, Duration.ofMillis(100))).isEqualTo(3);
        assertThat(DemandBuffer.desired(3, Duration.ofMillis(900), 1, 30, Duration.ofMillis(600)))
                .as("the reaction time adds to the time-to-ready: 3/s over 1.5 s").isEqualTo(5);
    }

    @Test
    void theTimeToReadyIsTheSlowestOfThePoolsLastFivePods() {
        DemandBuffer d = new DemandBuffer();
        assertThat(d.timeToReady()).isNull();
        d.readyAfter(Duration.ofSeconds(-1));
        assertThat(d.timeToReady()).as("a negative time (clocks apart) is no sample").isNull();
        d.readyAfter(Duration.ofSeconds(10));
        for (int i = 0; i < 4; i++) {
            d.readyAfter(Duration.ofSeconds(1));
        }
        assertThat(d.timeToReady()).as("five pods, the first the slowest").isEqualTo(Duration.ofSeconds(10));
        d.readyAfter(Duration.ofSeconds(2));
        assertThat(d.timeToReady()).as("the slow one is no longer among the last five").isEqualTo(Duration.ofSeconds(2));
    }

    @Test
    void aStepInDemandRaisesTheBufferWithinTwoSecondsAndItFallsBackAfterAMinute() {
        DemandBuffer d = new DemandBuffer();
        d.readyAfter(Duration.ofSeconds(1));
        Instant t = NOW;
        for (int i = 0; i < 60; i++) {
            d.claimed(t.plusSeconds(i)); // 1 per second
        }
        t = t.plusSeconds(60);
        assertThat(d.desired(t, 1, 50, Duration.ZERO)).isEqualTo(1);
        for (int i = 0; i < 40; i++) {
            d.claimed(t.plusMillis(i * 50L)); // 20 per second for two seconds
        }
        t = t.plusSeconds(2);
        assertThat(d.rate(t)).isGreaterThanOrEqualTo(19.5);
        assertThat(d.desired(t, 1, 50, Duration.ZERO)).isEqualTo(20);
        // the rate falls with the windows: the 10 s window still remembers, the 60 s one at last forgets
        assertThat(d.desired(t.plusSeconds(5), 1, 50, Duration.ZERO)).isBetween(2, 20);
        assertThat(d.desired(t.plusSeconds(61), 1, 50, Duration.ZERO)).isEqualTo(1);
    }

    @Test
    void theDemandSizeIsUsedByThePlanWithinItsBounds() {
        PoolPlanner p = planner("--runner-amd64-count=2", "--pool-max-idle=10");
        PoolPlanner.Context c = new PoolPlanner.Context(NOW, NODE_A_READY, Map.of(), Map.of(AMD64, 25), Map.of(),
                Map.of());
        PoolPlan plan = p.plan(List.of(), Set.of(), c);
        assertThat(plan.toCreate()).hasSize(10);
        assertThat(plan.statuses().get(AMD64).desired()).isEqualTo(10);
        assertThat(plan.statuses().get(AMD64).maximum()).isEqualTo(10);
        assertThat(plan.statuses().get(AMD64).minimum()).isEqualTo(2);
    }
}
