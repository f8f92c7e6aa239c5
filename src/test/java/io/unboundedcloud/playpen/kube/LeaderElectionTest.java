package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * A leader past its renew deadline does not count as leading; when its next Lease write lands before the renewal
 * watch looks, it counts again in the same term, and its listeners are told so, once, as no change of leadership.
 * The renew deadline is judged here by a clock the test moves.
 */
class LeaderElectionTest {
    static final String LEASES = LeaderElectionFallbackTest.LEASES;
    static final Duration RENEW_DEADLINE = Duration.ofSeconds(20);

    TestCluster cluster;
    LeaderElection election;
    /** The renew deadline's clock: it moves only when a test moves it. */
    final AtomicLong nanos = new AtomicLong(TimeUnit.DAYS.toNanos(1));
    final List<Boolean> changes = new CopyOnWriteArrayList<>();
    /** Each time the listeners were told the replica leads while it did not count as leading. */
    final List<String> toldLeadingNotCounting = new CopyOnWriteArrayList<>();
    /** Per call of onLeadingAgain: whether the replica counted as leading then, and the Lease writes sent so far. */
    final List<String> leadingAgain = new CopyOnWriteArrayList<>();
    /** Lease writes (merge patches) sent since the clock was moved; -1 before that. */
    final AtomicInteger patchesSinceMoved = new AtomicInteger(-1);

    @BeforeEach
    void up() {
        cluster = TestCluster.start();
        cluster.addRequestListener(key -> {
            if (key.startsWith("PATCH " + LEASES) && patchesSinceMoved.get() >= 0) {
                patchesSinceMoved.incrementAndGet();
            }
        });
    }

    @AfterEach
    void down() {
        if (election != null) {
            election.close();
        }
        cluster.close();
    }

    /**
     * Elected with renewals every 100 ms (real time) and a renew deadline of 20 s by the test's clock; the renewal
     * watch looks every {@code watch}.
     */
    LeaderElection elected(Duration watch) throws InterruptedException {
        return elected(prepared(watch));
    }

    LeaderElection elected(LeaderElection prepared) throws InterruptedException {
        prepared.start();
        OperatorHarness.awaitTrue(prepared::isLeader, Duration.ofSeconds(60), "elected");
        return prepared;
    }

    /** As {@link #elected}, not started yet. */
    LeaderElection prepared(Duration watch) {
        return prepared(watch, RENEW_DEADLINE);
    }

    /** As {@link #prepared(Duration)}, with {@code renewDeadline} (fabric8's elector judges it in real time). */
    LeaderElection prepared(Duration watch, Duration renewDeadline) {
        election = new LeaderElection(cluster.client, true, "playpen", "playpen-operator", "me", Duration.ofSeconds(30),
                renewDeadline, Duration.ofMillis(100), Duration.ofMinutes(5), Duration.ofMinutes(5));
        election.timeRenewalsWith(nanos::get);
        election.checkRenewalsEvery(watch);
        election.addListener(new LeaderElection.Listener() {
            @Override
            public void leadershipChanged(boolean leader) {
                changes.add(leader);
                if (leader && !election.isLeader()) {
                    toldLeadingNotCounting.add("change " + changes.size());
                }
            }

            @Override
            public void onLeadingAgain() {
                leadingAgain.add("leading=" + election.isLeader() + " patches=" + patchesSinceMoved.get());
            }
        });
        return election;
    }

    int patches() {
        return cluster.requestCount(k -> k.startsWith("PATCH " + LEASES));
    }

    /** Holds the next read of the Lease (a renewal's) until the returned latch is counted down; awaits its arrival. */
    CountDownLatch holdNextRead() throws InterruptedException {
        CountDownLatch reading = new CountDownLatch(1);
        CountDownLatch answer = new CountDownLatch(1);
        AtomicBoolean hold = new AtomicBoolean(true);
        cluster.addRequestListener(key -> {
            if (key.equals("GET " + LEASES + "/playpen-operator") && hold.compareAndSet(true, false)) {
                reading.countDown();
                try {
                    answer.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        assertThat(reading.await(60, TimeUnit.SECONDS)).as("a renewal read the Lease").isTrue();
        return answer;
    }

    /**
     * The clock passes the renew deadline while a renewal's read is held: the leader does not count as leading. That
     * renewal's write dates from before (no change); the next one, read after the deadline, lands before the renewal
     * watch looks (it never does here): the leader counts again and is told so once, with no change of leadership.
     */
    @Test
    void aLeaseWriteThatLandsAfterTheRenewDeadlineTellsTheListenersItLeadsAgainOnce() throws Exception {
        elected(Duration.ofHours(1));
        int before = patches();
        OperatorHarness.awaitTrue(() -> patches() >= before + 3, Duration.ofSeconds(60), "renewals");
        assertThat(leadingAgain).as("renewals within the deadline").isEmpty();

        CountDownLatch answer = holdNextRead();
        nanos.addAndGet(RENEW_DEADLINE.plusSeconds(1).toNanos());
        patchesSinceMoved.set(0);
        assertThat(election.isLeader()).as("past the renew deadline").isFalse();
        answer.countDown();

        OperatorHarness.awaitTrue(() -> !leadingAgain.isEmpty(), Duration.ofSeconds(60), "told it leads again");
        // the held renewal's write (its read sent before the deadline passed) did not count; the next one did
        assertThat(leadingAgain).containsExactly("leading=true patches=2");
        int after = patches();
        OperatorHarness.awaitTrue(() -> patches() >= after + 3, Duration.ofSeconds(60), "renewals after");
        assertThat(leadingAgain).as("told once").hasSize(1);
        assertThat(changes).as("no change of leadership").containsExactly(true);
        assertThat(election.isLeader()).isTrue();
    }

    /** This replica's renewals (and takeovers) are answered 504, nothing written; its release of the Lease lands. */
    void refuseRenewals() {
        cluster.holdWrite = (key, body) -> key.startsWith("PATCH " + LEASES) && body.contains("\"holderIdentity\":\"me\"");
    }

    /**
     * A leader past its renew deadline whose renewals fail until fabric8's elector gives up: the round's end releases
     * the Lease (a write with no holder), and that write is no renewal. The replica is not told it leads again, nor
     * counts as leading after it: it has just given the Lease up, and another replica may take it at once.
     */
    @Test
    void theWriteThatGivesTheLeaseUpDoesNotCountAsARenewal() throws Exception {
        Duration deadline = Duration.ofSeconds(3);
        elected(prepared(Duration.ofHours(1), deadline));
        refuseRenewals();
        nanos.addAndGet(deadline.plusSeconds(1).toNanos());
        patchesSinceMoved.set(0);
        assertThat(election.isLeader()).as("past the renew deadline").isFalse();

        OperatorHarness.awaitTrue(() -> changes.contains(false), Duration.ofSeconds(60), "the round ended");
        assertThat(cluster.client.leases().inNamespace("playpen").withName("playpen-operator").get().getSpec()
                .getLeaseDurationSeconds()).as("the Lease released").isEqualTo(1);
        assertThat(leadingAgain).as("not told it leads again by its release").isEmpty();
        assertThat(changes).containsExactly(true, false);
        assertThat(election.isLeader()).isFalse();
    }

    /**
     * A round ends past the renew deadline without giving the Lease up (its renewals and its release refused); the
     * next round reads the Lease as this replica's, and fabric8's elector tells it leads at that read, before its own
     * write lands. The replica counts as leading, and its listeners are told so, once that write lands: not before
     * (the work they start would find it not leading and be set aside), and not as leading again.
     */
    @Test
    void theWriteOfANewRoundThatReadTheLeaseAsItsOwnIsAChangeOfLeadershipNotLeadingAgain() throws Exception {
        Duration deadline = Duration.ofSeconds(3);
        elected(prepared(Duration.ofHours(1), deadline));
        cluster.holdWrite = (key, body) -> key.startsWith("PATCH " + LEASES);
        nanos.addAndGet(deadline.plusSeconds(1).toNanos());
        patchesSinceMoved.set(0);
        OperatorHarness.awaitTrue(() -> changes.contains(false), Duration.ofSeconds(60), "the round ended");
        assertThat(lease().getSpec().getHolderIdentity()).as("the Lease not given up").isEqualTo("me");

        cluster.holdWrite = (key, body) -> false;
        OperatorHarness.awaitTrue(() -> changes.size() >= 3, Duration.ofSeconds(60), "leading after the next round");
        int after = patches();
        OperatorHarness.awaitTrue(() -> patches() >= after + 2, Duration.ofSeconds(60), "renewals after");
        assertThat(changes).containsExactly(true, false, true);
        assertThat(toldLeadingNotCounting).as("told it leads only once it counts as leading").isEmpty();
        assertThat(leadingAgain).as("not told it leads again by the write that took the Lease back").isEmpty();
        assertThat(election.isLeader()).isTrue();
    }

    /**
     * A renewal read after the renew deadline passed lands while the replica closes (its round cancelled, waiting to
     * release the Lease): a closed replica is not told it leads again, nor counts as leading.
     */
    @Test
    void aRenewalThatLandsWhileTheReplicaClosesDoesNotTellItLeadsAgain() throws Exception {
        elected(Duration.ofHours(1));
        refuseRenewals();
        nanos.addAndGet(RENEW_DEADLINE.plusSeconds(1).toNanos());
        patchesSinceMoved.set(0);
        assertThat(election.isLeader()).as("past the renew deadline").isFalse();
        // a renewal whose read is sent after the deadline passed: its write would count
        CountDownLatch answer = holdNextRead();
        cluster.holdWrite = (key, body) -> false;

        Thread closer = new Thread(election::close, "closer");
        closer.setDaemon(true);
        closer.start();
        // the round cancelled, the release (on a thread of its own) waits for the renewal under way (fabric8's
        // elector runs one at a time)
        OperatorHarness.awaitTrue(() -> Thread.getAllStackTraces().keySet().stream()
                .anyMatch(t -> t.getName().startsWith("leader-release") && blockedIn(t, "LeaderElector", "stopLeading")),
                Duration.ofSeconds(60), "the closing replica waits to release the Lease");
        answer.countDown();
        closer.join(TimeUnit.SECONDS.toMillis(60));
        assertThat(closer.isAlive()).as("closed").isFalse();
        assertThat(leadingAgain).as("a closed replica is not told it leads again").isEmpty();
        assertThat(changes).containsExactly(true, false);
        assertThat(election.isLeader()).isFalse();
    }

    /** {@code t} waits to enter a monitor in {@code type}.{@code method}. */
    static boolean blockedIn(Thread t, String type, String method) {
        if (t.getState() != Thread.State.BLOCKED) {
            return false;
        }
        for (StackTraceElement e : t.getStackTrace()) {
            if (e.getClassName().endsWith("." + type) && e.getMethodName().equals(method)) {
                return true;
            }
        }
        return false;
    }

    /**
     * A renewal that lands past the renew deadline is telling the listeners the replica leads again when it begins to
     * close: the close waits for that to be told (fabric8's elector releases the Lease only after the renewal under
     * way), then tells the loss, and returns only after both. So what the listeners start on leading again is started
     * before the close returns (before the operator closes the work it was handed to), and the loss follows it.
     */
    @Test
    void leadingAgainToldAsTheReplicaBeginsToCloseIsOverBeforeTheCloseTellsTheLossAndReturns() throws Exception {
        elected(Duration.ofHours(1));
        List<String> told = new CopyOnWriteArrayList<>();
        CountDownLatch telling = new CountDownLatch(1);
        CountDownLatch toldOn = new CountDownLatch(1);
        election.addListener(new LeaderElection.Listener() {
            @Override
            public void leadershipChanged(boolean leader) {
                told.add(leader ? "leads" : "lost");
            }

            @Override
            public void onLeadingAgain() {
                told.add("leading again");
                telling.countDown();
                try {
                    toldOn.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                told.add("leading again told");
            }
        });
        nanos.addAndGet(RENEW_DEADLINE.plusSeconds(1).toNanos());
        assertThat(telling.await(60, TimeUnit.SECONDS)).as("told it leads again").isTrue();

        Thread closer = new Thread(election::close, "closer");
        closer.setDaemon(true);
        closer.start();
        // waiting to release the Lease, or to tell the loss
        OperatorHarness.awaitTrue(() -> blockedIn(closer, "LeaderElector", "stopLeading")
                || blockedIn(closer, "LeaderElection", "set") || !closer.isAlive(), Duration.ofSeconds(60),
                "the closing replica waits or has closed");
        assertThat(told).as("nothing told while it is told it leads again").containsExactly("leading again");
        toldOn.countDown();
        closer.join(TimeUnit.SECONDS.toMillis(60));
        assertThat(closer.isAlive()).as("closed").isFalse();
        assertThat(told).containsExactly("leading again", "leading again told", "lost");
        assertThat(election.isLeader()).isFalse();
    }

    /**
     * The renewal watch looks first and steps the leader back: its term ends. Leading again after that is a change
     * of leadership, told as one, not as leading again.
     */
    @Test
    void aLeaderThatStepsBackPastItsDeadlineIsToldAChangeOfLeadershipNotThatItLeadsAgain() throws Exception {
        elected(Duration.ofMillis(100));
        // no renewal lands before the watch looks: the next one's read is held until then
        CountDownLatch answer = holdNextRead();
        nanos.addAndGet(RENEW_DEADLINE.plusSeconds(1).toNanos());
        OperatorHarness.awaitTrue(() -> changes.contains(false), Duration.ofSeconds(60), "stepped back");
        answer.countDown();
        OperatorHarness.awaitTrue(() -> changes.size() >= 3, Duration.ofSeconds(60), "stepped back and elected again");
        assertThat(changes).containsExactly(true, false, true);
        assertThat(leadingAgain).isEmpty();
    }

    /**
     * The leader publishes its pools' refused creates on each of its Lease writes: also on the write that ends a
     * moment past its renew deadline (a refusal pause outlives that moment, as its term does), so the other
     * replicas read them from that write on, not only from the next renewal.
     */
    @Test
    void theLeaseWriteThatEndsAMomentPastTheRenewDeadlinePublishesTheRefusedCreates() throws Exception {
        java.util.concurrent.atomic.AtomicReference<PoolReconciler> pool = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.atomic.AtomicReference<io.fabric8.kubernetes.api.model.coordination.v1.Lease> written =
                new java.util.concurrent.atomic.AtomicReference<>();
        LeaderElection prepared = prepared(Duration.ofHours(1));
        prepared.annotateLeaseWith(LeaseRefusals.annotations("me",
                () -> pool.get() == null ? java.util.Map.of() : pool.get().publishedRefusals()));
        prepared.addListener(new LeaderElection.Listener() {
            @Override
            public void leadershipChanged(boolean leader) {
            }

            @Override
            public void onLeadingAgain() {
                // before the next renewal: this is the elector's thread
                written.set(cluster.client.leases().inNamespace("playpen").withName("playpen-operator").get());
            }
        });
        elected(prepared);
        String amd64 = io.unboundedcloud.playpen.model.PoolStatus.name(
                io.unboundedcloud.playpen.model.PoolTarget.runner("amd64"));
        PoolReconcilerTest.withSyncedPool(cluster, election::isLeader, (c, p, cache) -> {
            pool.set(p);
            p.runPassesWith(() -> { });
            cluster.forbidden = k -> k.equals("POST /api/v1/namespaces/playpen/pods");
            org.assertj.core.api.Assertions.assertThatThrownBy(p::reconcile)
                    .isInstanceOf(io.fabric8.kubernetes.client.KubernetesClientException.class);
            OperatorHarness.awaitTrue(() -> published().containsKey(amd64), Duration.ofSeconds(60),
                    "the refusal published by a renewal");

            nanos.addAndGet(RENEW_DEADLINE.plusSeconds(1).toNanos());
            OperatorHarness.awaitTrue(() -> written.get() != null, Duration.ofSeconds(60), "told it leads again");
            assertThat(LeaseRefusals.decode(written.get(), java.time.Instant.now()).pools())
                    .as("the refusals on the Lease as the write that ended the moment left it").containsKey(amd64);
        }, "--runner-amd64-count=1", "--runner-arm64-count=0");
    }

    io.fabric8.kubernetes.api.model.coordination.v1.Lease lease() {
        return cluster.client.leases().inNamespace("playpen").withName("playpen-operator").get();
    }

    java.util.Map<String, LeaseRefusals.Refusal> published() {
        return LeaseRefusals.decode(cluster.client.leases().inNamespace("playpen").withName("playpen-operator").get(),
                java.time.Instant.now()).pools();
    }
}
