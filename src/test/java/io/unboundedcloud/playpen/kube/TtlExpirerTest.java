package io.unboundedcloud.playpen.kube;

import io.unboundedcloud.playpen.support.MutableClock;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.TtlPolicy;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** The expiry timer against a clock it does not control (SPEC B6: expiry at the expiry time, not the next sweep). */
class TtlExpirerTest {

    @Test
    void aTimerThatFiresBeforeTheClockReachesExpiryTriesAgainInsteadOfLeavingTheClaimToTheSweep() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:01.900Z"));
            Pod pod = cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a").editMetadata()
                    .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ab".repeat(32))
                    .addToAnnotations(PlaypenKeys.CLAIMED_AT, "2026-01-01T00:00:00Z").endMetadata());
            PodCache pods = new PodCache(cluster.client, TestCluster.NS, p -> null);
            pods.observe(pod);
            TtlExpirer ttl = new TtlExpirer(pods, new ClaimWriter(cluster.client, clock, new ApiCallCounter()),
                    new TtlPolicy(Duration.ofSeconds(2), clock), clock, () -> true);
            try {
                // expires at 00:00:02; the clock says 00:00:01.900, so the timer fires in about 100 ms ...
                ttl.onPodEvent(PodCache.Change.UPDATED, pod);
                Thread.sleep(400);
                // ... and finds the claim not yet expired by that clock: nothing deleted, but not forgotten either
                assertThat(cluster.requestCount(k -> k.startsWith("DELETE "))).isZero();
                clock.now = Instant.parse("2026-01-01T00:00:02Z");
                OperatorHarness.awaitTrue(() -> cluster.requestCount(k -> k.startsWith("DELETE ")) == 1,
                        Duration.ofSeconds(3), "the expired claim deleted by its timer");
                assertThat(cluster.requestCount(
                        k -> k.equals("DELETE /api/v1/namespaces/playpen/pods/playpen-runner-amd64-51820"))).isEqualTo(1);
            } finally {
                ttl.close();
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
            java.util.concurrent.ConcurrentLinkedDeque<Instant> readings = new java.util.concurrent.ConcurrentLinkedDeque<>(
                    java.util.List.of(Instant.parse("2026-01-01T00:00:01.950Z"), Instant.parse("2026-01-01T00:00:01.950Z"),
                            Instant.parse("2026-01-01T00:00:02Z")));
            Clock stepping = new Clock() {
                @Override
                public ZoneId getZone() {
                    return ZoneOffset.UTC;
                }

                @Override
                public Clock withZone(ZoneId zone) {
                    return this;
                }

                @Override
                public Instant instant() {
                    // each reading takes the next scripted instant; the last one stays
                    Instant next = readings.size() > 1 ? readings.pollFirst() : readings.peekFirst();
                    return next;
                }
            };
            Pod pod = cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a").editMetadata()
                    .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "cd".repeat(32))
                    .addToAnnotations(PlaypenKeys.CLAIMED_AT, "2026-01-01T00:00:00Z").endMetadata());
            PodCache pods = new PodCache(cluster.client, TestCluster.NS, p -> null);
            pods.observe(pod);
            TtlExpirer ttl = new TtlExpirer(pods, new ClaimWriter(cluster.client, stepping, new ApiCallCounter()),
                    new TtlPolicy(Duration.ofSeconds(2), stepping), stepping, () -> true);
            try {
                // reading 1 schedules the timer (50 ms), reading 2 is the timer's "not yet", reading 3 is past expiry
                ttl.onPodEvent(PodCache.Change.UPDATED, pod);
                OperatorHarness.awaitTrue(() -> cluster.requestCount(k -> k.startsWith("DELETE ")) == 1,
                        Duration.ofSeconds(5), "the claim deleted by its timer although the clock moved mid-decision");
            } finally {
                ttl.close();
            }
        }
    }
    /** A claim that expired while this replica did not lead is deleted once it does (timers are rescheduled then). */
    @Test
    void anExpiredClaimSeenWhileNotLeadingIsDeletedOnBecomingLeader() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            MutableClock clock = new MutableClock(Instant.parse("2026-01-01T01:00:00Z"));
            Pod pod = cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a").editMetadata()
                    .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ef".repeat(32))
                    .addToAnnotations(PlaypenKeys.CLAIMED_AT, "2026-01-01T00:00:00Z").endMetadata());
            PodCache pods = new PodCache(cluster.client, TestCluster.NS, p -> null);
            pods.start();
            OperatorHarness.awaitTrue(() -> pods.hasSynced() && pods.pods().size() == 1, Duration.ofSeconds(10), "cache synced");
            java.util.concurrent.atomic.AtomicBoolean leading = new java.util.concurrent.atomic.AtomicBoolean(false);
            TtlExpirer ttl = new TtlExpirer(pods, new ClaimWriter(cluster.client, clock, new ApiCallCounter()),
                    new TtlPolicy(Duration.ofSeconds(2), clock), clock, leading::get);
            try {
                // already expired: the timer fires at once, on a replica that does not lead, and deletes nothing
                ttl.onPodEvent(PodCache.Change.UPDATED, pod);
                Thread.sleep(300);
                assertThat(cluster.requestCount(k -> k.startsWith("DELETE "))).isZero();
                leading.set(true);
                ttl.scheduleAll();
                OperatorHarness.awaitTrue(() -> cluster.requestCount(k -> k.startsWith("DELETE ")) == 1,
                        Duration.ofSeconds(5), "the expired claim deleted once leading");
            } finally {
                ttl.close();
                pods.close();
            }
        }
    }
}
