package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.model.TtlPolicy;
import io.unboundedcloud.playpen.support.MutableClock;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.ScriptedWatch;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The same request sent again after its allocation expired, while the pod is still there (no TTL runs here: no
 * replica leads, or its delete fails): it is answered 410 with nothing written, never with the allocation.
 */
class ExpiredReplayTest {
    static final String NAME = "playpen-runner-amd64-51820";
    static final AllocCommand CMD = new AllocCommand(Hashes.keyHash("expired-replay"), ResourceType.RUNNER, "",
            TestCluster.wgKey(5), "amd64");

    /**
     * One replica's allocation core on {@code clock}, with leases of an hour; its pod cache is fed by a
     * {@link ScriptedWatch} that follows the mock API server (each write is in it before its writer is answered).
     */
    private record Core(ScriptedWatch watch, PodCache pods, NodeCache nodes, Allocator allocator, Renewer renewer)
            implements AutoCloseable {
        static Core start(TestCluster cluster, MutableClock clock) throws Exception {
            TtlPolicy leases = new TtlPolicy(Duration.ofHours(1));
            ApiCallCounter calls = new ApiCallCounter();
            Candidates candidates = new Candidates(Map.of());
            ScriptedWatch watch = new ScriptedWatch(TestCluster.NS).follow(cluster);
            PodCache pods = new PodCache(watch.client(), TestCluster.NS, candidates::kindKey);
            NodeCache nodes = new NodeCache(cluster.client);
            pods.start();
            nodes.start();
            watch.awaitWatching();
            OperatorHarness.awaitTrue(() -> nodes.hasSynced() && nodes.externalIp("node-a").isPresent(),
                    Duration.ofSeconds(20), "the node cache synced");
            Allocator allocator = new Allocator(pods, nodes, new ClaimWriter(cluster.client, clock, calls, leases),
                    candidates, 1, 0, ReplicaLanes.alone(), leases, clock);
            return new Core(watch, pods, nodes, allocator, new Renewer(cluster.client, pods, leases, clock, calls));
        }

        @Override
        public void close() {
            watch.release();
            pods.close();
            nodes.close();
        }
    }

    private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
    private TestCluster cluster;
    private Core core;

    @BeforeEach
    void start() {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
    }

    @AfterEach
    void stop() {
        if (core != null) {
            core.close();
        }
        cluster.close();
    }

    /** The runner, allocated anew for {@link #CMD} at midnight (expiring at 01:00). */
    private void allocated() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        core = Core.start(cluster, clock);
        assertThat(core.allocator().allocate(CMD).replay()).isFalse();
    }

    private Pod pod() {
        return cluster.client.pods().inNamespace(TestCluster.NS).withName(NAME).get();
    }

    private void assertExpiredWithNothingWritten() {
        String before = pod().getMetadata().getResourceVersion();
        assertThatThrownBy(() -> core.allocator().allocate(CMD)).isInstanceOfSatisfying(ApiException.class, e -> {
            assertThat(e.code()).isEqualTo(410);
            assertThat(e.getMessage()).contains("has expired").contains("new idempotency key");
        });
        Pod after = pod();
        assertThat(after.getMetadata().getResourceVersion()).as("nothing written").isEqualTo(before);
        assertThat(after.getMetadata().getAnnotations()).containsEntry(PlaypenKeys.IDEMPOTENCY_KEY_HASH, CMD.keyHash());
    }

    private void assertReplayedExpiring(String expiresAt) {
        Allocator.Allocation again = core.allocator().allocate(CMD);
        assertThat(again.replay()).isTrue();
        assertThat(again.pod().getMetadata().getAnnotations()).containsEntry(PlaypenKeys.EXPIRES_AT, expiresAt);
    }

    @Test
    void anExpiredAllocationIsAnswered410WhileARenewedOneIsReplayed() throws Exception {
        allocated();
        // renewed before its expiry: past the first expiry, it is the renewed allocation that is replayed
        clock.now = Instant.parse("2026-01-01T00:30:00Z");
        core.renewer().renew(CMD.keyHash(), Duration.ofHours(2));
        clock.now = Instant.parse("2026-01-01T01:30:00Z");
        assertReplayedExpiring("2026-01-01T02:30:00Z");
        // past the renewed expiry, the pod not deleted yet
        clock.now = Instant.parse("2026-01-01T02:30:00Z");
        assertExpiredWithNothingWritten();
    }

    /**
     * A renewal (through another replica) lands just after the replay read the pod, and the expiry the pod had as read
     * passes before the replay judges it: that version was never expired while it was the pod's, so the replay is not
     * refused (its settle on that version meets the renewal), and the renewed allocation is answered.
     */
    @Test
    void aRenewalThatLandsAfterTheReplayReadThePodWins() throws Exception {
        allocated();
        clock.now = Instant.parse("2026-01-01T00:59:59Z");
        AtomicBoolean once = new AtomicBoolean(true);
        String path = "/api/v1/namespaces/" + TestCluster.NS + "/pods/" + NAME;
        cluster.addAnswerListener((method, at, answer) -> {
            if ("GET".equals(method) && path.equals(at) && once.getAndSet(false)) {
                cluster.patchInStore(path, "{\"metadata\":{\"annotations\":{\"" + PlaypenKeys.EXPIRES_AT
                        + "\":\"2026-01-01T03:00:00Z\"}}}");
                clock.now = Instant.parse("2026-01-01T01:00:00Z");
            }
        });
        assertReplayedExpiring("2026-01-01T03:00:00Z");
        assertThat(once).as("the replay read the pod").isFalse();
    }

    @Test
    void anExpiredClaimFirstSeenInAListIsRefusedBeforeItWouldBeSettled() throws Exception {
        expiredClaimFirstSeenInAList();
        assertExpiredWithNothingWritten();
        assertThat(pod().getMetadata().getAnnotations()).doesNotContainKey(PlaypenKeys.CLAIM_SETTLED);
    }

    /**
     * A claim this replica never saw committed (undecided here: a request for its key would settle it), made for
     * {@link #CMD} at midnight and expired at 01:00; the replica starts a second later.
     */
    private void expiredClaimFirstSeenInAList() throws Exception {
        claimFirstSeenInAList("2026-01-01T01:00:00Z");
    }

    /** As {@link #expiredClaimFirstSeenInAList}, the claim expiring at {@code expiresAt}. */
    private void claimFirstSeenInAList(String expiresAt) throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a").editMetadata()
                .addToLabels(PlaypenKeys.KEY_HASH_LABEL, ClaimWriter.labelValue(CMD.keyHash()))
                .addToAnnotations(Map.of(PlaypenKeys.IDEMPOTENCY_KEY_HASH, CMD.keyHash(),
                        PlaypenKeys.REQUEST_HASH, CMD.requestHash(),
                        PlaypenKeys.CLAIMED_AT, "2026-01-01T00:00:00Z",
                        PlaypenKeys.EXPIRES_AT, expiresAt))
                .endMetadata());
        clock.now = Instant.parse("2026-01-01T01:00:01Z");
        core = Core.start(cluster, clock);
    }

    /**
     * A different request under the key of an expired allocation is answered 409 (the key was used with another
     * request), as it is while the allocation has not expired, never 410, with nothing written: here a claim first
     * seen in a LIST (undecided), which the 410's check meets before it would be settled.
     */
    @Test
    void aDifferentRequestUnderTheKeyOfAnExpiredClaimFirstSeenInAListIs409() throws Exception {
        expiredClaimFirstSeenInAList();
        assertConflictWithNothingWritten();
        assertThat(pod().getMetadata().getAnnotations()).doesNotContainKey(PlaypenKeys.CLAIM_SETTLED);
    }

    /**
     * A different request under the key of a claim this replica has not judged (first seen in a LIST) is 409 before
     * the claim would be settled: settling pins the claim, and one pinned for a request that was refused would stop
     * its writer from taking it back. The request the claim was made for is then replayed.
     */
    @Test
    void aDifferentRequestUnderTheKeyOfAClaimFirstSeenInAListIs409WithoutSettlingIt() throws Exception {
        claimFirstSeenInAList("2026-01-01T03:00:00Z");
        assertConflictWithNothingWritten();
        assertThat(pod().getMetadata().getAnnotations()).doesNotContainKey(PlaypenKeys.CLAIM_SETTLED);
        assertReplayedExpiring("2026-01-01T03:00:00Z");
    }

    @Test
    void aDifferentRequestUnderTheKeyOfAnExpiredStandingAllocationIs409() throws Exception {
        allocated();
        clock.now = Instant.parse("2026-01-01T01:00:00Z");
        assertConflictWithNothingWritten();
        assertExpiredWithNothingWritten();
    }

    /**
     * A different request under the key arrives while the same request, sent again after the expiry, is being judged
     * (it joins that one's outcome): the first is answered 410, the second 409, as it would be alone.
     */
    @Test
    void aDifferentRequestThatJoinsAnExpiredReplayIs409() throws Exception {
        allocated();
        clock.now = Instant.parse("2026-01-01T01:00:00Z");
        java.util.concurrent.CountDownLatch reading = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch answer = new java.util.concurrent.CountDownLatch(1);
        cluster.addRequestListener(key -> {
            if (key.equals("GET /api/v1/namespaces/" + TestCluster.NS + "/pods/" + NAME) && reading.getCount() > 0) {
                reading.countDown();
                try {
                    answer.await(30, java.util.concurrent.TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        java.util.concurrent.CompletableFuture<Allocator.Allocation> replay =
                java.util.concurrent.CompletableFuture.supplyAsync(() -> core.allocator().allocate(CMD));
        assertThat(reading.await(30, java.util.concurrent.TimeUnit.SECONDS)).as("the replay reads the pod").isTrue();
        java.util.concurrent.atomic.AtomicReference<Throwable> other = new java.util.concurrent.atomic.AtomicReference<>();
        Thread joining = new Thread(() -> {
            try {
                core.allocator().allocate(ScriptedReplica.otherRequest(CMD));
            } catch (Throwable e) {
                other.set(e);
            }
        }, "joining");
        joining.setDaemon(true);
        joining.start();
        OperatorHarness.awaitTrue(() -> ScriptedReplica.parkedIn(joining, "Allocator", "join"), Duration.ofSeconds(30),
                "the different request joins the replay's outcome");
        answer.countDown();
        assertThatThrownBy(replay::join).hasCauseInstanceOf(ApiException.class)
                .satisfies(e -> assertThat(((ApiException) e.getCause()).code()).isEqualTo(410));
        joining.join(java.util.concurrent.TimeUnit.SECONDS.toMillis(30));
        assertThat(other.get()).isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.code()).isEqualTo(409));
    }

    private void assertConflictWithNothingWritten() {
        String before = pod().getMetadata().getResourceVersion();
        assertThatThrownBy(() -> core.allocator().allocate(ScriptedReplica.otherRequest(CMD)))
                .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.code()).isEqualTo(409));
        assertThat(pod().getMetadata().getResourceVersion()).as("nothing written").isEqualTo(before);
    }
}
