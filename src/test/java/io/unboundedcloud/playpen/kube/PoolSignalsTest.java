package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.model.PoolHealth;
import io.unboundedcloud.playpen.model.PoolPlanner;
import io.unboundedcloud.playpen.model.PoolTarget;
import io.unboundedcloud.playpen.support.MutableClock;

/**
 * What every replica learns from the watch: a pod deleted unhealthy without ever being ready is a failed
 * replacement (counted once, whichever of the pool's delete and the watch's DELETED comes first), a pod that becomes
 * ready ends the back-off, claims and times-to-ready feed the demand buffer.
 */
class PoolSignalsTest {
    static final PoolTarget AMD64 = PoolTarget.runner("amd64");
    static final Instant T0 = Instant.parse("2026-12-01T12:00:00Z");
    final OperatorConfig config = OperatorConfig.parse("--pool-ready-timeout=1m", "--pool-backoff-base=10s");
    final PoolPlanner planner = new PoolPlanner(config, new PodTemplates(config, Map.of()));
    final MutableClock clock = new MutableClock(T0);
    final PoolSignals signals = new PoolSignals(planner, new NodeCache(null), clock, config.pools());
    final List<PoolSignals.BackoffChange> changes = new ArrayList<>();

    PoolSignalsTest() {
        signals.addObserver(changes::add);
    }

    Pod starting(String uid, Instant created) {
        return new PodBuilder(planner.podFor(AMD64, 51820)).editMetadata().withUid(uid)
                .withCreationTimestamp(created.toString()).endMetadata()
                .withNewStatus().withPhase("Running").addNewContainerStatus().withName("runner").withReady(false)
                .withNewState().withNewRunning().endRunning().endState().endContainerStatus().endStatus().build();
    }

    Pod ready(Pod p) {
        return new PodBuilder(p).editMetadata().addToAnnotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY,
                "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=").endMetadata().editStatus().editFirstContainerStatus()
                .withReady(true).endContainerStatus().endStatus().build();
    }

    /** {@code p} claimed by a key whose hash is {@code hashByte} repeated. */
    static Pod claimed(Pod p, String hashByte) {
        return new PodBuilder(p).editMetadata().addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, hashByte.repeat(32))
                .endMetadata().build();
    }

    @Test
    void aPodDeletedUnhealthyWithoutEverBeingReadyIsOneFailureWhicheverSignalComesFirst() {
        Pod a = starting("a", T0);
        signals.onPodEvent(PodCache.Change.ADDED, a);
        clock.now = T0.plus(Duration.ofMinutes(2));
        // the pool's delete first, then the watch
        signals.deletedUnhealthy(AMD64, a, PoolHealth.Problem.NOT_READY_IN_TIME);
        signals.onPodEvent(PodCache.Change.DELETED, a);
        assertThat(signals.backoff(AMD64).view().failures()).isEqualTo(1);
        // the watch first (another replica deleted it, or the event was quicker), then nothing more
        Pod b = starting("b", T0);
        signals.onPodEvent(PodCache.Change.ADDED, b);
        signals.onPodEvent(PodCache.Change.DELETED, b);
        signals.deletedUnhealthy(AMD64, b, PoolHealth.Problem.NOT_READY_IN_TIME);
        assertThat(signals.backoff(AMD64).view().failures()).isEqualTo(2);
        assertThat(signals.backoff(AMD64).view().delay()).isEqualTo(Duration.ofSeconds(20));
        assertThat(changes).hasSize(2).allMatch(c -> !c.recovered());
        assertThat(changes.get(1).message()).contains("runner-amd64", "2 replacement(s)", "NotReadyInTime", "20 s");
    }

    /**
     * A pod still starting on a node that was lost (gone, or NotReady past the grace) is deleted as the node's, not
     * as a replacement that never became ready: the node failed it, and the pool's next pods go to other nodes, so
     * a spot node reclaimed with a few pods starting on it does not pause the pool.
     */
    @Test
    void aStartingPodOnALostNodeIsNoFailedReplacement() {
        for (PoolHealth.Problem lost : List.of(PoolHealth.Problem.NODE_NOT_READY, PoolHealth.Problem.NODE_GONE)) {
            Pod a = starting("a-" + lost, clock.now.minusSeconds(30));
            signals.onPodEvent(PodCache.Change.ADDED, a);
            signals.deletedUnhealthy(AMD64, a, lost);
            // deleted with grace period 0: the watch shows it gone at once
            signals.onPodEvent(PodCache.Change.DELETED, new PodBuilder(a).editMetadata()
                    .withDeletionTimestamp(clock.now.toString()).withDeletionGracePeriodSeconds(0L).endMetadata()
                    .build());
        }
        assertThat(signals.backoff(AMD64).view().failures()).isZero();
        assertThat(changes).isEmpty();
    }

    @Test
    void aPodThatWasReadyIsNoFailureEvenWhenItsDeleteIsSeenFirst() {
        Pod a = starting("a", T0);
        signals.onPodEvent(PodCache.Change.ADDED, a);
        signals.onPodEvent(PodCache.Change.UPDATED, ready(a));
        Pod evicted = new PodBuilder(ready(a)).editStatus().withPhase("Failed").withReason("Evicted").endStatus().build();
        signals.onPodEvent(PodCache.Change.UPDATED, evicted);
        signals.onPodEvent(PodCache.Change.DELETED, evicted);
        signals.deletedUnhealthy(AMD64, evicted, PoolHealth.Problem.EVICTED);
        assertThat(signals.backoff(AMD64).view().backingOff()).isFalse();
    }

    /**
     * What the signals know of a pod that was ready lasts as long as the pod, however many pods of other pools become
     * ready meanwhile (an arm64 pod idle while amd64 churns): evicted, it is no failed replacement, and an update of
     * it (a claim) is no pod becoming ready that would end a real back-off of its pool.
     */
    @Test
    void aLongIdlePodThatWasReadyStaysSoHoweverManyPodsBecomeReadySince() {
        Pod a = starting("a", T0);
        signals.onPodEvent(PodCache.Change.ADDED, a);
        signals.onPodEvent(PodCache.Change.UPDATED, ready(a));
        Pod other = ready(new PodBuilder(planner.podFor(PoolTarget.runner("arm64"), 51900)).editMetadata()
                .withCreationTimestamp(T0.toString()).endMetadata().withNewStatus().withPhase("Running")
                .addNewContainerStatus().withName("runner").withReady(false).withNewState().withNewRunning()
                .endRunning().endState().endContainerStatus().endStatus().build());
        for (int i = 0; i < 50_001; i++) {
            other.getMetadata().setUid("other-" + i);
            signals.onPodEvent(PodCache.Change.ADDED, other);
        }
        // the pool backs off: a replacement deleted unhealthy without ever being ready
        clock.now = T0.plus(Duration.ofMinutes(2));
        Pod failedOne = starting("f", T0);
        signals.onPodEvent(PodCache.Change.ADDED, failedOne);
        signals.deletedUnhealthy(AMD64, failedOne, PoolHealth.Problem.NOT_READY_IN_TIME);
        assertThat(signals.backoff(AMD64).view().backingOff()).isTrue();
        // a claimed: no pod became ready, the back-off goes on
        signals.onPodEvent(PodCache.Change.UPDATED, claimed(ready(a), "ab"));
        assertThat(changes).noneMatch(PoolSignals.BackoffChange::recovered);
        // a evicted (it was ready): no failed replacement
        Pod evicted = new PodBuilder(ready(a)).editStatus().withPhase("Failed").withReason("Evicted").endStatus().build();
        signals.onPodEvent(PodCache.Change.UPDATED, evicted);
        signals.deletedUnhealthy(AMD64, evicted, PoolHealth.Problem.EVICTED);
        signals.onPodEvent(PodCache.Change.DELETED, evicted);
        assertThat(signals.backoff(AMD64).view().failures()).isEqualTo(1);
    }

    @Test
    void aDeletedPodThatWasStillWithinItsTimeIsNoFailure() {
        Pod a = starting("a", T0);
        signals.onPodEvent(PodCache.Change.ADDED, a);
        clock.now = T0.plusSeconds(30);
        signals.onPodEvent(PodCache.Change.DELETED, a); // scaled down, or a rollout retired it
        assertThat(signals.backoff(AMD64).view().backingOff()).isFalse();
    }

    /**
     * A pod deleted while it starts (scaled down, or retired by a rollout) is judged as it was when its delete began:
     * the kubelet gives every pod it stops a terminal phase (Failed, or Succeeded when its containers exit 0) before
     * the pod is removed, and the grace period may run past the ready timeout. Neither makes it a failed replacement;
     * a pod already past its ready timeout when its delete began still is one.
     */
    @Test
    void aPodDeletedWhileStartingIsJudgedAsItWasWhenItsDeleteBegan() {
        for (String phase : List.of("Failed", "Succeeded")) {
            Pod a = starting("a-" + phase, clock.now);
            signals.onPodEvent(PodCache.Change.ADDED, a);
            clock.now = clock.now.plusSeconds(30);
            Pod deleting = terminating(a);
            signals.onPodEvent(PodCache.Change.UPDATED, deleting);
            clock.now = clock.now.plusSeconds(45); // the grace period ran past the ready timeout
            Pod stopped = new PodBuilder(deleting).editStatus().withPhase(phase).endStatus().build();
            signals.onPodEvent(PodCache.Change.UPDATED, stopped);
            signals.onPodEvent(PodCache.Change.DELETED, stopped);
        }
        assertThat(signals.backoff(AMD64).view().backingOff()).isFalse();
        assertThat(changes).isEmpty();

        Pod late = starting("late", clock.now);
        signals.onPodEvent(PodCache.Change.ADDED, late);
        clock.now = clock.now.plus(Duration.ofMinutes(2));
        Pod deleting = terminating(late);
        signals.onPodEvent(PodCache.Change.UPDATED, deleting);
        Pod stopped = new PodBuilder(deleting).editStatus().withPhase("Failed").endStatus().build();
        signals.onPodEvent(PodCache.Change.UPDATED, stopped);
        signals.onPodEvent(PodCache.Change.DELETED, stopped);
        assertThat(signals.backoff(AMD64).view().failures()).isEqualTo(1);
        assertThat(changes).singleElement().satisfies(c -> assertThat(c.problem())
                .isEqualTo(PoolHealth.Problem.NOT_READY_IN_TIME));
    }

    /**
     * A watch that shows a pod for the first time already stopped by its delete (a replica that starts, a relist
     * after a watch gap, or updates that came together): the kubelet's terminal phase and the time that passed since
     * its delete began do not make it a failed replacement. A pod whose containers ended before its delete began
     * still is one.
     */
    @Test
    void aPodFirstSeenStoppedByItsDeleteIsJudgedAsItWasWhenItsDeleteBegan() {
        int n = 0;
        for (String phase : List.of("Failed", "Succeeded")) {
            for (boolean seenStarting : List.of(true, false)) {
                Pod a = starting("stopped-" + n++, clock.now);
                if (seenStarting) {
                    signals.onPodEvent(PodCache.Change.ADDED, a);
                }
                clock.now = clock.now.plusSeconds(30);
                Instant deleteBegan = clock.now;
                Pod deleting = terminating(a);
                clock.now = clock.now.plusSeconds(45); // past the ready timeout when the watch shows it
                Pod stopped = stoppedAt(deleting, phase, clock.now);
                signals.onPodEvent(seenStarting ? PodCache.Change.UPDATED : PodCache.Change.ADDED, stopped);
                signals.onPodEvent(PodCache.Change.DELETED, stopped);
                assertThat(deleteBegan).isBefore(clock.now);
            }
        }
        assertThat(signals.backoff(AMD64).view().backingOff())
                .as("pods stopped by a delete that began within their time").isFalse();
        assertThat(changes).isEmpty();

        Pod crashed = starting("crashed", clock.now);
        clock.now = clock.now.plusSeconds(10);
        Pod ended = stoppedAt(crashed, "Failed", clock.now);
        clock.now = clock.now.plusSeconds(10);
        Pod deleting = terminating(ended);
        signals.onPodEvent(PodCache.Change.ADDED, deleting);
        signals.onPodEvent(PodCache.Change.DELETED, deleting);
        assertThat(signals.backoff(AMD64).view().failures()).as("a pod that failed before its delete").isEqualTo(1);
        assertThat(changes).singleElement().satisfies(c -> assertThat(c.problem())
                .isEqualTo(PoolHealth.Problem.FAILED));
    }

    /**
     * A replica that learns a failed replacement from the watch alone (it does not lead) pauses the pool from when
     * the leader deleted the pod, as the leader does, not from when the pod's grace period ended and the watch showed
     * it gone: else its pools resource, its metrics and, once it leads, its creates would run a grace period late.
     */
    @Test
    void aFailureLearntFromTheWatchPausesFromWhenTheDeleteBegan() {
        Pod a = starting("a", T0);
        signals.onPodEvent(PodCache.Change.ADDED, a);
        clock.now = T0.plus(Duration.ofMinutes(2));
        Instant deleteBegan = clock.now;
        Pod deleting = terminating(a);
        signals.onPodEvent(PodCache.Change.UPDATED, deleting);
        clock.now = clock.now.plusSeconds(30); // the grace period
        signals.onPodEvent(PodCache.Change.DELETED, deleting);
        assertThat(signals.backoff(AMD64).view().failures()).isEqualTo(1);
        assertThat(signals.backoff(AMD64).view().nextCreateAt()).isEqualTo(deleteBegan.plusSeconds(10));
    }

    /**
     * A pod of an older template that never got ready (the broken image an operator restart with a fixed one
     * replaced) says nothing about the pool's current template: its end does not pause the pool's new pods. A pod of
     * the current template still does.
     */
    @Test
    void aNeverReadyPodOfAnOlderTemplateIsNoFailedReplacement() {
        OperatorConfig old = OperatorConfig.parse("--pool-ready-timeout=1m", "--runner-image=example.com/runner:broken");
        Pod broken = new PodBuilder(new PoolPlanner(old, new PodTemplates(old, Map.of())).podFor(AMD64, 51821))
                .editMetadata().withUid("broken-1").withCreationTimestamp(T0.toString()).endMetadata()
                .withNewStatus().withPhase("Running").endStatus().build();
        Pod broken2 = new PodBuilder(broken).editMetadata().withUid("broken-2").endMetadata().build();
        signals.onPodEvent(PodCache.Change.ADDED, broken);
        signals.onPodEvent(PodCache.Change.ADDED, broken2);
        clock.now = T0.plus(Duration.ofMinutes(2));
        signals.deletedUnhealthy(AMD64, broken, PoolHealth.Problem.NOT_READY_IN_TIME); // the leader's pass
        signals.onPodEvent(PodCache.Change.DELETED, broken2); // the watch
        assertThat(signals.backoff(AMD64).view().backingOff()).isFalse();
        assertThat(changes).isEmpty();

        Pod current = starting("current", T0);
        signals.onPodEvent(PodCache.Change.ADDED, current);
        signals.onPodEvent(PodCache.Change.DELETED, current);
        assertThat(signals.backoff(AMD64).view().failures()).isEqualTo(1);
    }

    /**
     * A pod of an older template that becomes ready (one that was still starting when a rollout to a broken template
     * began) tells nothing of the current template: the back-off goes on until a current pod is ready.
     */
    @Test
    void onlyAPodOfTheCurrentTemplateThatBecomesReadyEndsTheBackOff() {
        Pod failed = starting("failed", T0);
        signals.onPodEvent(PodCache.Change.ADDED, failed);
        clock.now = T0.plus(Duration.ofMinutes(2));
        signals.deletedUnhealthy(AMD64, failed, PoolHealth.Problem.NOT_READY_IN_TIME);
        OperatorConfig old = OperatorConfig.parse("--pool-ready-timeout=1m", "--runner-image=example.com/runner:old");
        Pod stale = new PodBuilder(new PoolPlanner(old, new PodTemplates(old, Map.of())).podFor(AMD64, 51821))
                .editMetadata().withUid("stale").withCreationTimestamp(T0.toString()).endMetadata()
                .withNewStatus().withPhase("Running").addNewContainerStatus().withName("runner").withReady(false)
                .withNewState().withNewRunning().endRunning().endState().endContainerStatus().endStatus().build();
        signals.onPodEvent(PodCache.Change.ADDED, stale);
        signals.onPodEvent(PodCache.Change.UPDATED, ready(stale));
        assertThat(signals.backoff(AMD64).view().backingOff()).as("after a stale pod became ready").isTrue();
        Pod current = starting("current", clock.now);
        signals.onPodEvent(PodCache.Change.ADDED, current);
        signals.onPodEvent(PodCache.Change.UPDATED, ready(current));
        assertThat(signals.backoff(AMD64).view().backingOff()).isFalse();
        assertThat(changes).last().satisfies(c -> assertThat(c.recovered()).isTrue());
    }

    /**
     * A pod of the current template that was ready, went unready (a readiness probe failing for a while) and became
     * ready again shows, as a pod ready for the first time does, that the template's pods get ready: it ends a
     * back-off that began meanwhile. An update of a pod that stays ready (a claim, a renewal) ends none.
     */
    @Test
    void aPodReadyAgainAfterBeingUnreadyEndsTheBackOff() {
        Pod a = starting("a", T0);
        signals.onPodEvent(PodCache.Change.ADDED, a);
        signals.onPodEvent(PodCache.Change.UPDATED, ready(a));
        signals.onPodEvent(PodCache.Change.UPDATED, a);
        Pod failed = new PodBuilder(planner.podFor(AMD64, 51821)).editMetadata().withUid("failed")
                .withCreationTimestamp(T0.toString()).endMetadata().build();
        signals.onPodEvent(PodCache.Change.ADDED, failed);
        clock.now = T0.plus(Duration.ofMinutes(2));
        signals.deletedUnhealthy(AMD64, failed, PoolHealth.Problem.NOT_READY_IN_TIME);
        assertThat(signals.backoff(AMD64).view().backingOff()).isTrue();
        signals.onPodEvent(PodCache.Change.UPDATED, ready(a));
        assertThat(signals.backoff(AMD64).view().backingOff()).as("after the pod became ready again").isFalse();
        assertThat(changes).last().satisfies(c -> {
            assertThat(c.recovered()).isTrue();
            assertThat(c.pod().getMetadata().getUid()).isEqualTo("a");
        });

        // a pod that stays ready: its updates end no back-off that began while it was ready
        Pod b = ready(new PodBuilder(starting("b", T0)).editMetadata().withName("playpen-runner-amd64-51822")
                .endMetadata().build());
        signals.onPodEvent(PodCache.Change.ADDED, b);
        Pod failedAgain = new PodBuilder(failed).editMetadata().withUid("failed-again").endMetadata().build();
        signals.deletedUnhealthy(AMD64, failedAgain, PoolHealth.Problem.NOT_READY_IN_TIME);
        signals.onPodEvent(PodCache.Change.UPDATED, claimed(b, "cd"));
        assertThat(signals.backoff(AMD64).view().backingOff()).as("after a ready pod was claimed").isTrue();
    }

    /** {@code p} with its container restarted {@code restarts} times, running (ready or not as {@code p} is). */
    static Pod restarted(Pod p, int restarts) {
        return new PodBuilder(p).editStatus().editFirstContainerStatus().withRestartCount(restarts).endContainerStatus()
                .endStatus().build();
    }

    /** {@code p} not ready, its container waiting in CrashLoopBackOff after {@code restarts} restarts. */
    static Pod crashLooping(Pod p, int restarts) {
        return new PodBuilder(p).editStatus().editFirstContainerStatus().withReady(false).withRestartCount(restarts)
                .withNewState().withNewWaiting().withReason("CrashLoopBackOff").endWaiting().endState()
                .endContainerStatus().endStatus().build();
    }

    /**
     * A pod that became ready and then crash-loops (its container passes for ready for a moment after each restart,
     * as the runner's does with no readiness probe) is evidence against the template, as a pod that never gets ready
     * is: its delete as CrashLoopBackOff is a failed replacement, and a "ready again" that only a container restart
     * brought ends no back-off.
     */
    @Test
    void aPodThatCrashLoopsAfterItWasReadyIsAFailedReplacement() {
        Pod a = starting("a", T0);
        signals.onPodEvent(PodCache.Change.ADDED, a);
        signals.onPodEvent(PodCache.Change.UPDATED, ready(a));
        // the container exits: not ready, restarted once
        signals.onPodEvent(PodCache.Change.UPDATED, stoppedAt(restarted(a, 1), "Running", T0.plusSeconds(20)));
        // another replacement fails meanwhile: the pool backs off
        Pod failed = new PodBuilder(planner.podFor(AMD64, 51821)).editMetadata().withUid("failed")
                .withCreationTimestamp(T0.toString()).endMetadata().build();
        signals.onPodEvent(PodCache.Change.ADDED, failed);
        clock.now = T0.plus(Duration.ofMinutes(2));
        signals.deletedUnhealthy(AMD64, failed, PoolHealth.Problem.NOT_READY_IN_TIME);
        assertThat(signals.backoff(AMD64).view().failures()).isEqualTo(1);
        // ready again only because its container was restarted: no sign that the template's pods work
        signals.onPodEvent(PodCache.Change.UPDATED, restarted(ready(a), 1));
        assertThat(signals.backoff(AMD64).view().failures()).as("after a ready again that a restart brought")
                .isEqualTo(1);
        assertThat(changes).noneMatch(PoolSignals.BackoffChange::recovered);
        // it crash-loops and the pool deletes it
        Pod looping = crashLooping(ready(a), 3);
        signals.onPodEvent(PodCache.Change.UPDATED, looping);
        signals.deletedUnhealthy(AMD64, looping, PoolHealth.Problem.CRASH_LOOP);
        signals.onPodEvent(PodCache.Change.DELETED, looping);
        assertThat(signals.backoff(AMD64).view().failures()).isEqualTo(2);
        assertThat(changes).last().satisfies(c -> {
            assertThat(c.problem()).isEqualTo(PoolHealth.Problem.CRASH_LOOP);
            assertThat(c.message()).contains("crash-looped", "CrashLoopBackOff");
        });
    }

    /**
     * An image whose pods get ready and then crash-loop: each new pod's first ready ends the back-off, and its crash
     * loop takes it up again where that ready ended it, so the pause doubles up to its maximum as for a never-ready
     * image instead of starting over at the base after every pod. Learnt from the watch alone too (another replica's
     * delete), as every replica learns the back-off.
     */
    @Test
    void podsThatGetReadyAndThenCrashLoopDoubleThePause() {
        List<Integer> failures = new ArrayList<>();
        List<Duration> delays = new ArrayList<>();
        for (int i = 0; i < 7; i++) {
            Pod p = starting("p" + i, clock.now);
            signals.onPodEvent(PodCache.Change.ADDED, p);
            signals.onPodEvent(PodCache.Change.UPDATED, ready(p));
            clock.now = clock.now.plusSeconds(20);
            signals.onPodEvent(PodCache.Change.UPDATED, stoppedAt(restarted(p, 1), "Running", clock.now));
            clock.now = clock.now.plusSeconds(10);
            signals.onPodEvent(PodCache.Change.UPDATED, restarted(ready(p), 1));
            clock.now = clock.now.plusSeconds(60);
            Pod looping = crashLooping(ready(p), 3);
            signals.onPodEvent(PodCache.Change.UPDATED, looping);
            if (i % 2 == 0) {
                signals.deletedUnhealthy(AMD64, looping, PoolHealth.Problem.CRASH_LOOP);
                signals.onPodEvent(PodCache.Change.DELETED, looping);
            } else {
                // deleted by the leader elsewhere: this replica sees its delete begin, then the pod gone
                Pod deleting = terminating(looping);
                signals.onPodEvent(PodCache.Change.UPDATED, deleting);
                signals.onPodEvent(PodCache.Change.DELETED, deleting);
            }
            failures.add(signals.backoff(AMD64).view().failures());
            delays.add(signals.backoff(AMD64).view().delay());
            Instant next = signals.backoff(AMD64).view().nextCreateAt();
            clock.now = next != null ? next : clock.now.plusSeconds(10);
        }
        assertThat(failures).containsExactly(1, 2, 3, 4, 5, 6, 7);
        assertThat(delays).startsWith(Duration.ofSeconds(10), Duration.ofSeconds(20), Duration.ofSeconds(40))
                .endsWith(config.pools().backoffMax());
    }

    /** {@code p} stopped at {@code at} in {@code phase}: its container terminated then. */
    static Pod stoppedAt(Pod p, String phase, Instant at) {
        return new PodBuilder(p).editStatus().withPhase(phase).editFirstContainerStatus().withNewState()
                .withNewTerminated().withExitCode("Failed".equals(phase) ? 137 : 0).withFinishedAt(at.toString())
                .endTerminated().endState().endContainerStatus().endStatus().build();
    }

    /**
     * {@code p} with its delete begun now, its status as it was: as the API server writes it, the deletionTimestamp is
     * the end of the grace period.
     */
    Pod terminating(Pod p) {
        return new PodBuilder(p).editMetadata().withDeletionTimestamp(clock.now.plusSeconds(30).toString())
                .withDeletionGracePeriodSeconds(30L).endMetadata().build();
    }

    @Test
    void theFirstPodThatBecomesReadyEndsTheBackOffAndGivesATimeToReady() {
        Pod a = starting("a", T0);
        signals.onPodEvent(PodCache.Change.ADDED, a);
        clock.now = T0.plus(Duration.ofMinutes(2));
        signals.onPodEvent(PodCache.Change.DELETED, a);
        assertThat(signals.backoff(AMD64).view().backingOff()).isTrue();
        Pod b = starting("b", clock.now);
        signals.created("playpen-runner-amd64-51820");
        signals.onPodEvent(PodCache.Change.ADDED, b);
        clock.now = clock.now.plusSeconds(7);
        signals.onPodEvent(PodCache.Change.UPDATED, ready(b));
        assertThat(signals.backoff(AMD64).view().backingOff()).isFalse();
        assertThat(changes).last().satisfies(c -> {
            assertThat(c.recovered()).isTrue();
            assertThat(c.message()).contains("recovered");
        });
        assertThat(signals.demand(AMD64).timeToReady()).isEqualTo(Duration.ofSeconds(7));
    }

    @Test
    void timeToReadyCountsFromThisProcessCreateCallElseFromThePodsCreationTime() {
        // created here 5 s after the timestamp the API server gave it: measured from the create call
        Pod a = starting("a", T0);
        clock.now = T0.plusSeconds(5);
        signals.created("playpen-runner-amd64-51820");
        signals.onPodEvent(PodCache.Change.ADDED, a);
        clock.now = T0.plusSeconds(12);
        signals.onPodEvent(PodCache.Change.UPDATED, ready(a));
        assertThat(signals.demand(AMD64).timeToReady()).isEqualTo(Duration.ofSeconds(7));
        // another replica created it (or this one restarted): measured from its creationTimestamp
        PoolSignals other = new PoolSignals(planner, new NodeCache(null), clock, config.pools());
        Pod b = starting("b", T0);
        other.onPodEvent(PodCache.Change.ADDED, b);
        other.onPodEvent(PodCache.Change.UPDATED, ready(b));
        assertThat(other.demand(AMD64).timeToReady()).isEqualTo(Duration.ofSeconds(12));
    }

    @Test
    void aClaimedPodDeletedIsNoFailedReplacement() {
        Pod a = starting("a", T0);
        Pod claimed = claimed(a, "ab");
        signals.onPodEvent(PodCache.Change.ADDED, claimed);
        clock.now = T0.plus(Duration.ofMinutes(2));
        signals.onPodEvent(PodCache.Change.DELETED, claimed); // deallocated or expired
        // released first (claim removed), then deleted: still the end of an allocation, not a failure
        Pod b = starting("b", T0);
        Pod bClaimed = claimed(b, "cd");
        signals.onPodEvent(PodCache.Change.ADDED, bClaimed);
        signals.onPodEvent(PodCache.Change.DELETED, b);
        assertThat(signals.backoff(AMD64).view().backingOff()).isFalse();
        assertThat(signals.backoffs()).containsEntry(AMD64, signals.backoff(AMD64).view());
        assertThat(changes).isEmpty();
        // the same pod never claimed would have been one
        Pod c = starting("c", T0);
        signals.onPodEvent(PodCache.Change.ADDED, c);
        signals.onPodEvent(PodCache.Change.DELETED, c);
        assertThat(signals.backoffs().get(AMD64).failures()).isEqualTo(1);
    }

    @Test
    void podsAlreadyReadyWhenFirstSeenGiveNoTimeToReady() {
        // a replica that starts (or re-lists) sees pods made hours ago: their age is no time-to-ready
        signals.onPodEvent(PodCache.Change.ADDED, ready(starting("old", T0.minus(Duration.ofHours(5)))));
        assertThat(signals.demand(AMD64).timeToReady()).isNull();
    }

    @Test
    void claimsAreCountedWhenTheyHappenNotWhenAListShowsThem() {
        Pod a = ready(starting("a", T0));
        Pod claimed = claimed(a, "ab");
        Pod listedClaimed = new PodBuilder(claimed).editMetadata().withUid("listed").endMetadata().build();
        signals.onPodEvent(PodCache.Change.ADDED, listedClaimed);
        signals.onPodEvent(PodCache.Change.ADDED, a);
        signals.onPodEvent(PodCache.Change.UPDATED, claimed);
        signals.onPodEvent(PodCache.Change.UPDATED, claimed);
        assertThat(signals.demand(AMD64).rate(T0)).isEqualTo(0.5); // one claim in the 2 s window
    }

    @Test
    void allocsTurnedAwayForLackOfAPodCountAsDemand() {
        signals.unserved(AMD64);
        signals.unserved(AMD64);
        assertThat(signals.demand(AMD64).rate(T0)).isEqualTo(1.0);
        assertThat(signals.demand(PoolTarget.runner("arm64")).rate(T0)).isZero();
    }
}
