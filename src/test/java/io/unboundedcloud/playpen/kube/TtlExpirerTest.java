package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.TtlPolicy;
import io.unboundedcloud.playpen.support.MutableClock;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** The expiry timer against a clock it does not control (expiry at the expiry time, not the next sweep). */
class TtlExpirerTest {
    /** Every claim here is made at this instant and lives 2 s. */
    private static final String CLAIMED_AT = "2026-01-01T00:00:00Z";

    private static Pod claimedRunner(TestCluster cluster, String keyHashByte) {
        return cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a").editMetadata()
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, keyHashByte.repeat(32))
                .addToAnnotations(PlaypenKeys.CLAIMED_AT, CLAIMED_AT).endMetadata());
    }

    private static TtlExpirer expirer(TestCluster cluster, PodCache pods, Clock clock, BooleanSupplier leader) {
        return new TtlExpirer(pods, new ClaimWriter(cluster.client, clock, new ApiCallCounter()),
                new TtlPolicy(Duration.ofSeconds(2)), clock, leader);
    }

    /** As a leader with a back-off cap of 30 s whose timers run on {@code scheduler}. */
    private static TtlExpirer expirer(TestCluster cluster, PodCache pods, Clock clock,
            java.util.concurrent.ScheduledExecutorService scheduler) {
        return new TtlExpirer(pods, new ClaimWriter(cluster.client, clock, new ApiCallCounter()),
                new TtlPolicy(Duration.ofSeconds(2)), clock, () -> true, Duration.ofSeconds(30), scheduler);
    }

    /** A pod cache, not started, that holds {@code pod} (as this replica's own write would put it there). */
    private static PodCache holding(TestCluster cluster, Pod pod) {
        PodCache pods = new PodCache(cluster.client, TestCluster.NS, p -> null);
        pods.observe(pod);
        return pods;
    }

    private static int deletes(TestCluster cluster) {
        return cluster.requestCount(k -> k.startsWith("DELETE "));
    }

    /**
     * The delete lands and its answer is lost: the client's own resend finds the pod gone, which another delete could
     * have done as well (a dealloc of the key), so the expiry is not recorded (docs/api.md, a release whose answer
     * was lost).
     */
    @Test
    void anExpiryWhoseDeleteAnswerWasLostIsNotRecorded() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:03Z"));
            Pod pod = claimedRunner(cluster, "ab");
            PodCache pods = holding(cluster, pod);
            AtomicBoolean first = new AtomicBoolean(true);
            cluster.failAfterWrite = k -> k.startsWith("DELETE ") && first.getAndSet(false);
            java.util.concurrent.ScheduledExecutorService timers = java.util.concurrent.Executors
                    .newSingleThreadScheduledExecutor();
            try (TtlExpirer ttl = expirer(cluster, pods, clock, timers)) {
                List<Pod> recorded = new java.util.concurrent.CopyOnWriteArrayList<>();
                ttl.addObserver((p, late) -> recorded.add(p));
                // expired already: its timer is due at once, and has run once a task queued after it has
                ttl.onPodEvent(PodCache.Change.UPDATED, pod);
                timers.submit(() -> { }).get(60, java.util.concurrent.TimeUnit.SECONDS);
                assertThat(first).as("the delete's answer was lost").isFalse();
                assertThat(cluster.client.pods().inNamespace(TestCluster.NS).withName("playpen-runner-amd64-51820")
                        .get()).isNull();
                assertThat(recorded).isEmpty();
            }
        }
    }

    @Test
    void aTimerThatFiresBeforeTheClockReachesExpiryTriesAgainInsteadOfLeavingTheClaimToTheSweep() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:01.900Z"));
            Pod pod = claimedRunner(cluster, "ab");
            PodCache pods = holding(cluster, pod);
            try (TtlExpirer ttl = expirer(cluster, pods, clock, () -> true)) {
                // expires at 00:00:02; the clock says 00:00:01.900, so the timer fires in about 100 ms ...
                ttl.onPodEvent(PodCache.Change.UPDATED, pod);
                Thread.sleep(400);
                // ... and finds the claim not yet expired by that clock: nothing deleted, but not forgotten either
                assertThat(deletes(cluster)).isZero();
                clock.now = Instant.parse("2026-01-01T00:00:02Z");
                OperatorHarness.awaitTrue(() -> deletes(cluster) == 1, Duration.ofSeconds(60),
                        "the expired claim deleted by its timer");
                assertThat(cluster.requestCount(
                        k -> k.equals("DELETE /api/v1/namespaces/playpen/pods/playpen-runner-amd64-51820"))).isEqualTo(1);
            }
        }
    }

    /**
     * The clock passes the expiry instant while the timer is deciding (between two readings): the claim must
     * still be deleted by the timer, not dropped. The clock here steps forward on each reading.
     */
    @Test
    void theClockCrossingExpiryWhileTheTimerDecidesDoesNotLoseTheTimer() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            ConcurrentLinkedDeque<Instant> readings = new ConcurrentLinkedDeque<>(List.of(
                    Instant.parse("2026-01-01T00:00:01.950Z"), Instant.parse("2026-01-01T00:00:01.950Z"),
                    Instant.parse("2026-01-01T00:00:02Z")));
            MutableClock stepping = new MutableClock(readings.peekFirst()) {
                @Override
                public Instant instant() {
                    // each reading takes the next scripted instant; the last one stays
                    return readings.size() > 1 ? readings.pollFirst() : readings.peekFirst();
                }
            };
            Pod pod = claimedRunner(cluster, "cd");
            PodCache pods = holding(cluster, pod);
            try (TtlExpirer ttl = expirer(cluster, pods, stepping, () -> true)) {
                // reading 1 schedules the timer (50 ms), reading 2 is the timer's "not yet", reading 3 is past expiry
                ttl.onPodEvent(PodCache.Change.UPDATED, pod);
                OperatorHarness.awaitTrue(() -> deletes(cluster) == 1, Duration.ofSeconds(60),
                        "the claim deleted by its timer although the clock moved mid-decision");
            }
        }
    }

    /** A claim that expired while this replica did not lead is deleted once it does (timers are rescheduled then). */
    @Test
    void anExpiredClaimSeenWhileNotLeadingIsDeletedOnBecomingLeader() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            MutableClock clock = new MutableClock(Instant.parse("2026-01-01T01:00:00Z"));
            Pod pod = claimedRunner(cluster, "ef");
            PodCache pods = new PodCache(cluster.client, TestCluster.NS, p -> null);
            pods.start();
            AtomicBoolean leading = new AtomicBoolean(false);
            try (pods; TtlExpirer ttl = expirer(cluster, pods, clock, leading::get)) {
                OperatorHarness.awaitTrue(() -> pods.hasSynced() && pods.pods().size() == 1, Duration.ofSeconds(60),
                        "cache synced");
                // already expired: the timer fires at once, on a replica that does not lead, and deletes nothing
                ttl.onPodEvent(PodCache.Change.UPDATED, pod);
                Thread.sleep(300);
                assertThat(deletes(cluster)).isZero();
                leading.set(true);
                ttl.scheduleAll();
                OperatorHarness.awaitTrue(() -> deletes(cluster) == 1, Duration.ofSeconds(60),
                        "the expired claim deleted once leading");
            }
        }
    }

    /**
     * The replica leads, but its timer fires in a moment when it does not count as leading (its last Lease write began
     * more than the renew deadline ago, and the next one lands before its renewal watch looks, so no change of
     * leadership is told and no timer is scheduled again): the claim is still deleted by its timer once the replica
     * is told it counts as leading again, not left to the sweep (none runs here).
     */
    @Test
    void aTimerThatFiresWhileTheLeaderDoesNotCountAsLeadingDeletesOnceItDoesAgain() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            MutableClock clock = new MutableClock(Instant.parse("2026-01-01T01:00:00Z"));
            Pod pod = claimedRunner(cluster, "a1");
            PodCache pods = holding(cluster, pod);
            AtomicBoolean leading = new AtomicBoolean(false);
            java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
            BooleanSupplier leader = () -> {
                asked.incrementAndGet();
                return leading.get();
            };
            try (TtlExpirer ttl = expirer(cluster, pods, clock, leader)) {
                // already expired: the timer fires at once and finds this replica not counting as leading
                ttl.onPodEvent(PodCache.Change.UPDATED, pod);
                OperatorHarness.awaitTrue(() -> asked.get() >= 1, Duration.ofSeconds(60),
                        "the timer asked whether this replica leads");
                assertThat(deletes(cluster)).isZero();
                assertThat(ttl.timersPending()).as("no timer of its own looks again").isZero();
                // leading again without a leadership change told (so no scheduleAll), as the election tells it
                leading.set(true);
                ttl.onLeadingAgain();
                OperatorHarness.awaitTrue(() -> deletes(cluster) == 1, Duration.ofSeconds(60),
                        "the expired claim deleted by its timer once this replica counts as leading again");
            }
        }
    }

    /**
     * The timer's delete fails (an API server error): the claim is tried again by itself after a back-off, not left
     * to the sweep (none runs here).
     */
    @Test
    void aTimerWhoseDeleteFailsTriesAgainAfterABackOff() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            MutableClock clock = new MutableClock(Instant.parse("2026-01-01T01:00:00Z"));
            Pod pod = claimedRunner(cluster, "ab");
            PodCache pods = holding(cluster, pod);
            java.util.concurrent.atomic.AtomicInteger failed = new java.util.concurrent.atomic.AtomicInteger();
            // the first try is refused with a 500 (its request, and the one retry of the client, KubeClients)
            cluster.failBeforeWrite = k -> k.startsWith("DELETE ") && failed.getAndIncrement() < 2;
            try (TtlExpirer ttl = expirer(cluster, pods, clock, () -> true)) {
                ttl.onPodEvent(PodCache.Change.UPDATED, pod);
                OperatorHarness.awaitTrue(() -> deletes(cluster) == 3, Duration.ofSeconds(60),
                        "the expired claim deleted by a second try of its timer");
                assertThat(cluster.pods()).isEmpty();
                assertThat(failed.get()).isEqualTo(3);
            }
        }
    }

    /**
     * The pod is deleted (by someone else) while its timer's delete runs, and that delete fails: the retry finds the
     * pod gone and keeps no count of failed tries for its name, so a later claim of a pod of that name (the pools
     * reuse names) starts its back-off at the first pause again.
     */
    @Test
    void aRetryThatFindsThePodGoneKeepsNoCountOfFailedTries() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            MutableClock clock = new MutableClock(Instant.parse("2026-01-01T01:00:00Z"));
            Pod pod = claimedRunner(cluster, "ab");
            PodCache pods = holding(cluster, pod);
            java.util.concurrent.atomic.AtomicReference<TtlExpirer> expirer = new java.util.concurrent.atomic.AtomicReference<>();
            java.util.concurrent.atomic.AtomicInteger failed = new java.util.concurrent.atomic.AtomicInteger();
            // every delete is refused with a 500; the first one, while it runs, meets the pod's delete by another
            cluster.failBeforeWrite = k -> {
                if (!k.startsWith("DELETE ")) {
                    return false;
                }
                if (failed.getAndIncrement() == 0) {
                    pods.observeDeleted(pod.getMetadata().getName());
                    expirer.get().onPodEvent(PodCache.Change.DELETED, pod);
                }
                return true;
            };
            // counts the timers that have run: the first try, then the retry
            java.util.concurrent.atomic.AtomicInteger ran = new java.util.concurrent.atomic.AtomicInteger();
            java.util.concurrent.ScheduledThreadPoolExecutor scheduler = new java.util.concurrent.ScheduledThreadPoolExecutor(1) {
                @Override
                protected void afterExecute(Runnable r, Throwable t) {
                    ran.incrementAndGet();
                }
            };
            try (TtlExpirer ttl = expirer(cluster, pods, clock, scheduler)) {
                expirer.set(ttl);
                ttl.onPodEvent(PodCache.Change.UPDATED, pod);
                OperatorHarness.awaitTrue(() -> ran.get() >= 2, Duration.ofSeconds(60), "the first try and its retry run");
                assertThat(failed.get()).as("the first try's delete, and the client's one retry of it").isEqualTo(2);
                assertThat(ttl.failedTriesKept()).as("failed tries counted for a pod that is gone").isZero();
            }
        }
    }

    /**
     * A timer due at once may run before the call that scheduled it returns (the scheduling thread paused between
     * the two). If its delete fails, the retry it stores must stand, not be overwritten (and cancelled) by the
     * record of the timer that already ran. The scheduler here runs a timer due now on the scheduling thread,
     * before its scheduling call returns.
     */
    @Test
    void aTimerThatRunsBeforeItsSchedulingReturnsKeepsTheRetryItsFailedDeleteSet() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            MutableClock clock = new MutableClock(Instant.parse("2026-01-01T01:00:00Z"));
            Pod pod = claimedRunner(cluster, "ab");
            PodCache pods = holding(cluster, pod);
            java.util.concurrent.atomic.AtomicInteger failed = new java.util.concurrent.atomic.AtomicInteger();
            // the first try is refused with a 500 (its request, and the one retry of the client, KubeClients)
            cluster.failBeforeWrite = k -> k.startsWith("DELETE ") && failed.getAndIncrement() < 2;
            try (TtlExpirer ttl = expirer(cluster, pods, clock, new DueNowRunsAtOnce())) {
                ttl.onPodEvent(PodCache.Change.UPDATED, pod);
                assertThat(deletes(cluster)).as("the first try ran before its scheduling returned").isEqualTo(2);
                OperatorHarness.awaitTrue(() -> deletes(cluster) == 3, Duration.ofSeconds(60),
                        "the expired claim deleted by the retry of its timer");
                assertThat(cluster.pods()).isEmpty();
            }
        }
    }

    /** Runs a task due now on the calling thread, before {@code schedule} returns; later ones on its own thread. */
    private static final class DueNowRunsAtOnce extends java.util.concurrent.ScheduledThreadPoolExecutor {
        DueNowRunsAtOnce() {
            super(1);
        }

        @Override
        public java.util.concurrent.ScheduledFuture<?> schedule(Runnable task, long delay,
                java.util.concurrent.TimeUnit unit) {
            if (delay > 0) {
                return super.schedule(task, delay, unit);
            }
            task.run();
            return super.schedule(() -> { }, 0, unit);
        }
    }

    /** The back-off between tries of one claim: 1 s, doubling, never above --reconcile-interval. */
    @Test
    void theBackOffDoublesFromOneSecondUpToTheReconcileInterval() {
        Duration max = Duration.ofSeconds(30);
        List<Duration> seen = new java.util.ArrayList<>();
        for (int failures = 1; failures <= 7; failures++) {
            seen.add(TtlExpirer.retryBackOff(max).after(failures));
        }
        assertThat(seen).containsExactly(Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(4),
                Duration.ofSeconds(8), Duration.ofSeconds(16), max, max);
        assertThat(TtlExpirer.retryBackOff(Duration.ofMillis(500)).after(1)).isEqualTo(Duration.ofMillis(500));
    }
}
