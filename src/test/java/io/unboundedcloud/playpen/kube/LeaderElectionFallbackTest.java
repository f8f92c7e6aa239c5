package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.api.model.coordination.v1.LeaseBuilder;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * Leader election when RBAC grants no Lease access (the Go operator's RBAC): single-replica fallback with a loud
 * warning, slow probing, and election again once the Lease API answers; other errors give no leadership. And
 * without the fallback: a leader that loses the Lease stops leading and competes again.
 */
class LeaderElectionFallbackTest {
    static final String LEASES = "/apis/coordination.k8s.io/v1/namespaces/playpen/leases";

    TestCluster cluster;
    LeaderElection election;
    final List<Boolean> changes = new CopyOnWriteArrayList<>();
    @RegisterExtension
    final CapturedLogs logs = CapturedLogs.of(LeaderElection.class);

    @BeforeEach
    void up() {
        cluster = TestCluster.start();
    }

    @AfterEach
    void down() {
        if (election != null) {
            election.close();
        }
        cluster.close();
    }

    /** Short lease timings; the fallback probes every {@code probe} and repeats its warning every {@code warn}. */
    LeaderElection start(Duration probe, Duration warn) {
        election = new LeaderElection(cluster.client, true, "playpen", "playpen-operator", "me", Duration.ofSeconds(3),
                Duration.ofSeconds(2), Duration.ofMillis(100), probe, warn);
        election.addListener(changes::add);
        election.start();
        return election;
    }

    int leaseRequests() {
        return cluster.requestCount(k -> k.contains(LEASES));
    }

    List<String> warnings(String containing) {
        return logs.lines().stream().filter(e -> e.getLevel() == Level.WARN)
                .map(ILoggingEvent::getFormattedMessage).filter(m -> m.contains(containing)).toList();
    }

    Lease lease() {
        return cluster.client.leases().inNamespace("playpen").withName("playpen-operator").get();
    }

    @Test
    void forbiddenLeaseApiFallsBackToSingleReplicaAndProbesSlowly() throws Exception {
        cluster.forbidden = k -> k.contains(LEASES);
        start(Duration.ofSeconds(1), Duration.ofMinutes(5));
        OperatorHarness.awaitTrue(election::isLeader, Duration.ofSeconds(60), "fallback leadership");
        assertThat(election.inFallback()).isTrue();
        // the refused verb and the API server's own words
        assertThat(election.fallbackReason()).isEqualTo("get leases.coordination.k8s.io playpen/playpen-operator forbidden:"
                + " forbidden by the test's RBAC: GET " + LEASES + "/playpen-operator");
        assertThat(changes).containsExactly(true);
        assertThat(logs.lines()).extracting(ILoggingEvent::getFormattedMessage)
                .contains("leadership acquired identity=me (single-replica fallback, no Lease)");
        // counted from here, not from the fallback's first answer: more probes may have come meanwhile (this thread
        // can be held up for a second on a loaded machine); one probe may be on its way while the two counts are
        // read, so four answers from here are at least three requests from here
        long t0 = System.nanoTime();
        long answersBefore = election.forbiddenAnswers();
        int before = leaseRequests();
        OperatorHarness.awaitTrue(() -> election.forbiddenAnswers() >= answersBefore + 4, Duration.ofSeconds(30),
                "four more probes");
        double seconds = (System.nanoTime() - t0) / 1e9;
        // a probe per second, not a retry per retry period (100 ms: ten requests a second)
        assertThat(leaseRequests() - before).isBetween(3, (int) seconds + 2);
        assertThat(election.isLeader()).isTrue();
        assertThat(changes).containsExactly(true);
        assertThat(warnings("LEADER ELECTION DISABLED")).hasSize(1);
        assertThat(warnings("STILL DISABLED")).isEmpty();
    }

    @Test
    void theWarningRepeatsPerIntervalNotPerProbe() throws Exception {
        cluster.forbidden = k -> k.contains(LEASES);
        start(Duration.ofMillis(100), Duration.ofSeconds(1));
        OperatorHarness.awaitTrue(() -> election.forbiddenAnswers() >= 1, Duration.ofSeconds(60), "fallback");
        long t0 = System.nanoTime();
        OperatorHarness.awaitTrue(() -> election.forbiddenAnswers() >= 25, Duration.ofSeconds(30), "two dozen probes");
        double seconds = (System.nanoTime() - t0) / 1e9;
        assertThat(warnings("LEADER ELECTION DISABLED")).hasSize(1);
        int repeats = warnings("STILL DISABLED").size();
        // one repeat per elapsed second at most, however many probes were refused meanwhile
        assertThat(repeats).isBetween(1, (int) seconds + 1).isLessThan((int) election.forbiddenAnswers() - 1);
    }

    @Test
    void anRbacFixReenablesElectionWithoutDroppingLeadership() throws Exception {
        cluster.forbidden = k -> k.contains(LEASES);
        start(Duration.ofMillis(500), Duration.ofMinutes(5));
        OperatorHarness.awaitTrue(election::isLeader, Duration.ofSeconds(60), "fallback leadership");
        assertThat(cluster.requestCount(k -> k.startsWith("POST " + LEASES) || k.startsWith("PATCH " + LEASES))).isZero();
        cluster.forbidden = k -> false; // the Lease RBAC is applied
        OperatorHarness.awaitTrue(() -> !election.inFallback(), Duration.ofSeconds(60), "fallback ended");
        assertThat(lease().getSpec().getHolderIdentity()).isEqualTo("me");
        assertThat(election.isLeader()).isTrue();
        assertThat(changes).containsExactly(true); // never lost the background work on the way
        assertThat(warnings("leader election re-enabled")).hasSize(1);
        // and it renews like any leader
        ZonedDateTime renewed = lease().getSpec().getRenewTime();
        OperatorHarness.awaitTrue(() -> lease().getSpec().getRenewTime().isAfter(renewed), Duration.ofSeconds(60), "renewal");
    }

    @Test
    void whenAnotherReplicaHoldsTheLeaseAfterTheFixThisOneStepsBack() throws Exception {
        // another replica (whose RBAC works) holds the Lease; this one is refused until its RBAC is fixed
        ZonedDateTime now = ZonedDateTime.now(ZoneOffset.UTC);
        cluster.client.leases().inNamespace("playpen").resource(new LeaseBuilder().withNewMetadata()
                .withName("playpen-operator").withNamespace("playpen").endMetadata().withNewSpec()
                .withHolderIdentity("other").withLeaseDurationSeconds(3600).withAcquireTime(now).withRenewTime(now)
                .withLeaseTransitions(0).endSpec().build()).create();
        cluster.forbidden = k -> k.contains(LEASES);
        start(Duration.ofMillis(500), Duration.ofMinutes(5));
        OperatorHarness.awaitTrue(election::isLeader, Duration.ofSeconds(60), "fallback leadership");
        cluster.forbidden = k -> false;
        OperatorHarness.awaitTrue(() -> !election.isLeader(), Duration.ofSeconds(60), "stepped back");
        assertThat(election.inFallback()).isFalse();
        assertThat(changes).containsExactly(true, false);
        assertThat(lease().getSpec().getHolderIdentity()).isEqualTo("other");
    }

    @Test
    void takeoverForbiddenAloneAlsoFallsBack() throws Exception {
        // a stale Lease from an earlier holder: get is allowed, taking it over (a merge patch) is not
        ZonedDateTime old = ZonedDateTime.now(ZoneOffset.UTC).minusHours(1);
        cluster.client.leases().inNamespace("playpen").resource(new LeaseBuilder().withNewMetadata()
                .withName("playpen-operator").withNamespace("playpen").endMetadata().withNewSpec()
                .withHolderIdentity("gone").withLeaseDurationSeconds(15).withAcquireTime(old).withRenewTime(old)
                .withLeaseTransitions(0).endSpec().build()).create();
        cluster.forbidden = k -> k.startsWith("PATCH " + LEASES);
        // when each refused patch reached the API server: timed there, not by this thread, which a loaded machine
        // can hold up past a probe
        List<Long> patchedAt = new CopyOnWriteArrayList<>();
        cluster.addRequestListener(key -> {
            if (key.startsWith("PATCH " + LEASES)) {
                patchedAt.add(System.nanoTime());
            }
        });
        start(Duration.ofSeconds(1), Duration.ofMinutes(5));
        OperatorHarness.awaitTrue(election::isLeader, Duration.ofSeconds(60), "fallback leadership");
        assertThat(election.inFallback()).isTrue();
        assertThat(election.fallbackReason()).startsWith("patch leases");
        // every probe reads the stale Lease again: it is no reason to step back; and the elector's round, which
        // would retry the refused patch every retry period (100 ms), is stopped: patches come with the probes (1 s),
        // not every retry period. A probe's patches: one, and on a loaded machine maybe a retry sent before the
        // round's cancel lands, so a probe starts with the first patch after a pause of half a second
        OperatorHarness.awaitTrue(() -> probeStarts(patchedAt).size() >= 3, Duration.ofSeconds(30), "two more probes");
        List<Long> probes = probeStarts(patchedAt);
        assertThat(Duration.ofNanos(probes.get(2) - probes.get(0))).isGreaterThan(Duration.ofMillis(1500));
        assertThat(election.inFallback()).isTrue();
        assertThat(changes).containsExactly(true);
        assertThat(lease().getSpec().getHolderIdentity()).isEqualTo("gone");
    }

    /** The first of each run of times (System.nanoTime) that follows a pause of half a second or more. */
    static List<Long> probeStarts(List<Long> times) {
        List<Long> starts = new java.util.ArrayList<>();
        for (int i = 0; i < times.size(); i++) {
            if (i == 0 || times.get(i) - times.get(i - 1) >= Duration.ofMillis(500).toNanos()) {
                starts.add(times.get(i));
            }
        }
        return starts;
    }

    @Test
    void creatingTheLeaseForbiddenAloneAlsoFallsBack() throws Exception {
        // no Lease yet: reading it is allowed (404), creating it is not
        cluster.forbidden = k -> k.startsWith("POST " + LEASES);
        start(Duration.ofSeconds(1), Duration.ofMinutes(5));
        OperatorHarness.awaitTrue(election::isLeader, Duration.ofSeconds(60), "fallback leadership");
        assertThat(election.inFallback()).isTrue();
        assertThat(election.fallbackReason()).startsWith("create leases.coordination.k8s.io playpen/playpen-operator forbidden");
        assertThat(lease()).isNull();
    }

    @Test
    void renewalIsAMergePatchSoRbacMustGrantPatchOnTheLease() throws Exception {
        start(Duration.ofSeconds(1), Duration.ofMinutes(5));
        OperatorHarness.awaitTrue(election::isLeader, Duration.ofSeconds(60), "elected");
        assertThat(logs.lines()).extracting(ILoggingEvent::getFormattedMessage).contains("leadership acquired identity=me");
        OperatorHarness.awaitTrue(() -> cluster.requestCount(k -> k.startsWith("PATCH " + LEASES)) >= 2,
                Duration.ofSeconds(60), "renewals");
        assertThat(cluster.requestCount(k -> k.startsWith("PUT " + LEASES))).isZero();
        assertThat(election.inFallback()).isFalse();
        // what deploy/ grants is tested against this list (DeployRbacTest): patch must be on it, update need not
        assertThat(KubeApiCall.all()).anyMatch(c -> c.resource().equals("leases") && c.verb().equals("patch"))
                .noneMatch(c -> c.resource().equals("leases") && c.verb().equals("update"));
    }

    @Test
    void withElectionOffTheReplicaLeadsAtOnceWithoutALeaseAndStopsOnClose() {
        election = new LeaderElection(cluster.client, false, "playpen", "playpen-operator", "me", Duration.ofSeconds(3),
                Duration.ofSeconds(2), Duration.ofMillis(100));
        election.addListener(changes::add);
        election.start();
        assertThat(election.isLeader()).isTrue();
        assertThat(election.identity()).isEqualTo("me");
        assertThat(changes).containsExactly(true);
        election.close();
        assertThat(election.isLeader()).isFalse();
        assertThat(changes).containsExactly(true, false);
        assertThat(leaseRequests()).isZero();
    }

    @Test
    void otherErrorsGiveNoLeadershipAndNoFallback() throws Exception {
        cluster.server.expect().get().withPath(LEASES + "/playpen-operator")
                .andReturn(500, "{\"kind\":\"Status\",\"code\":500}").always();
        start(Duration.ofSeconds(1), Duration.ofMinutes(5));
        OperatorHarness.awaitTrue(() -> leaseRequests() >= 5, Duration.ofSeconds(60), "retries");
        assertThat(election.isLeader()).isFalse();
        assertThat(election.inFallback()).isFalse();
        assertThat(election.forbiddenAnswers()).isZero();
        assertThat(changes).isEmpty();
    }

    /**
     * A leader whose Lease another replica took (after an API server blip, say) stops leading once it cannot renew
     * within the renew deadline, and competes again: it leads again once the other's Lease has expired.
     */
    @Test
    void aLeaderThatLosesTheLeaseStopsLeadingAndCompetesAgain() throws Exception {
        start(Duration.ofSeconds(30), Duration.ofMinutes(5));
        java.util.concurrent.atomic.AtomicReference<String> holderWhenSteppedBack =
                new java.util.concurrent.atomic.AtomicReference<>();
        election.addListener(leading -> {
            if (!leading && holderWhenSteppedBack.get() == null) {
                // called on the elector's thread, which schedules the next round only once this returns
                holderWhenSteppedBack.set(String.valueOf(lease().getSpec().getHolderIdentity()));
            }
        });
        OperatorHarness.awaitTrue(election::isLeader, Duration.ofSeconds(60), "elected");
        assertThat(election.inFallback()).isFalse();
        // another replica holds the Lease now, renewed just now, and then never again (its write is conditional
        // like any replica's: it tries again when it meets this one's renewal)
        for (int attempt = 0; ; attempt++) {
            try {
                cluster.client.leases().inNamespace("playpen").withName("playpen-operator").edit(l -> new LeaseBuilder(l)
                        .editSpec().withHolderIdentity("other").withRenewTime(ZonedDateTime.now(ZoneOffset.UTC))
                        .endSpec().build());
                break;
            } catch (io.fabric8.kubernetes.client.KubernetesClientException e) {
                if (e.getCode() != 409 || attempt >= 20) {
                    throw e;
                }
            }
        }

        OperatorHarness.awaitTrue(() -> !election.isLeader(), Duration.ofSeconds(30),
                "stopped leading within the renew deadline");
        // the Lease as it was when this replica stepped back, read by the listener before the next round can start:
        // read here, a second later on a loaded machine, it could already be this replica's again
        OperatorHarness.awaitTrue(() -> holderWhenSteppedBack.get() != null, Duration.ofSeconds(30),
                "the Lease read on stepping back");
        assertThat(holderWhenSteppedBack.get()).isEqualTo("other");
        OperatorHarness.awaitTrue(election::isLeader, Duration.ofSeconds(30),
                "leading again once the other replica's Lease expired (3 s)");
        assertThat(lease().getSpec().getHolderIdentity()).isEqualTo("me");
        assertThat(changes).containsExactly(true, false, true);
        assertThat(warnings("LEADER ELECTION DISABLED")).isEmpty();
    }

    /**
     * A leader whose Lease renewals hang (the API server takes the request and never answers, a network that drops
     * the answers) must step back by its renew deadline, as it does when they fail: a request that hangs longer
     * than the Lease lasts would otherwise leave it leading while another replica, seeing the Lease expire, takes
     * it, and two replicas would run pool passes and TTL deletes at once.
     */
    @Test
    void aLeaderWhoseRenewalsHangStepsBackBeforeAnotherReplicaCanTakeTheLease() throws Exception {
        try (Relay relay = new Relay(cluster.client)) {
            leadThenGoSilent(relay, Duration.ofSeconds(3), Duration.ofSeconds(2), Duration.ofMillis(100));
            java.util.concurrent.atomic.AtomicReference<Boolean> meLeadingWhenTaken =
                    new java.util.concurrent.atomic.AtomicReference<>();
            // the other replica takes the Lease once it has gone unrenewed for 6 s, well past this one's 2 s deadline
            LeaderElection other = new LeaderElection(cluster.client, true, "playpen", "playpen-operator", "other",
                    Duration.ofSeconds(6), Duration.ofSeconds(4), Duration.ofMillis(100), Duration.ofMinutes(5),
                    Duration.ofMinutes(5));
            other.addListener(leading -> {
                if (leading) {
                    meLeadingWhenTaken.compareAndSet(null, election.isLeader());
                }
            });
            try {
                other.start();
                OperatorHarness.awaitTrue(other::isLeader, Duration.ofSeconds(60), "the other replica took the expired Lease");
                assertThat(meLeadingWhenTaken.get()).as("this replica still led when the other took the Lease").isFalse();
            } finally {
                other.close();
                relay.swallow = false;
                election.close();
            }
        }
    }

    /**
     * The renew deadline holds for each write a leader checks leadership before, not only from the next look at it:
     * that look comes every retry period (2 s here), so the one after the deadline (4.5 s) comes at 6 s, past the
     * moment another replica may take the Lease (its renewTime plus the lease duration, 5 s), while the pool passes
     * and TTL deletes still ask.
     */
    @Test
    void aLeaderPastItsRenewDeadlineIsNoLeaderForItsWritesBeforeItNextLooks() throws Exception {
        try (Relay relay = new Relay(cluster.client)) {
            leadThenGoSilent(relay, Duration.ofSeconds(5), Duration.ofMillis(4500), Duration.ofSeconds(2));
            assertNotLeadingOnceAnotherReplicaMayTakeTheLease(Duration.ofSeconds(5));
        }
    }

    /**
     * A renewal dates the Lease when it starts, before it reads the Lease (fabric8's elector takes the time, then
     * reads, then writes), and another replica counts the lease duration from that renewTime. A read that the API
     * server answers late must not move this replica's renew deadline past the moment the other may take the Lease.
     */
    @Test
    void aRenewalWhoseReadIsAnsweredLateCountsItsDeadlineFromTheRenewTimeItWrites() throws Exception {
        election = new LeaderElection(cluster.client, true, "playpen", "playpen-operator", "me", Duration.ofSeconds(3),
                Duration.ofMillis(2500), Duration.ofMillis(100), Duration.ofMinutes(5), Duration.ofMinutes(5));
        election.start();
        OperatorHarness.awaitTrue(election::isLeader, Duration.ofSeconds(60), "elected");
        java.util.concurrent.CountDownLatch reading = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch answer = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.atomic.AtomicBoolean holdNextRead = new java.util.concurrent.atomic.AtomicBoolean(true);
        cluster.addRequestListener(key -> {
            if (key.equals("GET " + LEASES + "/playpen-operator") && holdNextRead.compareAndSet(true, false)) {
                reading.countDown();
                try {
                    answer.await(60, java.util.concurrent.TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        assertThat(reading.await(60, java.util.concurrent.TimeUnit.SECONDS)).as("a renewal read the Lease").isTrue();
        // the renewal whose read is held writes (its merge patch lands); every later one fails
        java.util.concurrent.atomic.AtomicInteger patches = new java.util.concurrent.atomic.AtomicInteger();
        cluster.failBeforeWrite = k -> k.startsWith("PATCH " + LEASES) && patches.getAndIncrement() > 0;
        // the read is answered 2 s late (an API server under load), within the renew deadline of the renewal before
        long heldSince = System.nanoTime();
        OperatorHarness.awaitTrue(() -> System.nanoTime() - heldSince >= 2_000_000_000L, Duration.ofSeconds(60),
                "the read held 2 s");
        answer.countDown();
        // the renewal after it has tried its write: the held one's landed before
        OperatorHarness.awaitTrue(() -> patches.get() >= 2, Duration.ofSeconds(60), "the held renewal's write");
        assertNotLeadingOnceAnotherReplicaMayTakeTheLease(Duration.ofSeconds(3));
    }

    /**
     * A leader whose one renewal is refused (403: a role being replaced, an authorizer that failed) while the Lease
     * API otherwise works steps back before its cancelled round releases the Lease, and reads the Lease again after a
     * retry period: whichever replica takes the Lease then, the two never lead at once (in the single-replica
     * fallback it would lead without the Lease the other replica takes, until its next probe four lease durations
     * later).
     */
    @Test
    void aLeaderWhoseRenewalIsRefusedOnceStepsBackBeforeAnotherReplicaCanTakeTheLease() throws Exception {
        election = new LeaderElection(cluster.client, true, "playpen", "playpen-operator", "me", Duration.ofSeconds(6),
                Duration.ofSeconds(5), Duration.ofSeconds(1));
        election.start();
        OperatorHarness.awaitTrue(election::isLeader, Duration.ofSeconds(60), "elected");
        LeaderElection other = new LeaderElection(cluster.client, true, "playpen", "playpen-operator", "other",
                Duration.ofSeconds(6), Duration.ofSeconds(5), Duration.ofSeconds(1));
        List<String> bothLeading = new CopyOnWriteArrayList<>();
        election.addListener(leading -> {
            if (leading && other.isLeader()) {
                bothLeading.add("me took the lead while the other led");
            }
        });
        other.addListener(leading -> {
            if (leading && election.isLeader()) {
                bothLeading.add("the other took the lead while me led");
            }
        });
        try {
            other.start();
            // the next Lease write is this leader's renewal (the other replica only reads a Lease held by another)
            AtomicBoolean refuseOne = new AtomicBoolean(true);
            cluster.forbidden = k -> k.startsWith("PATCH " + LEASES) && refuseOne.compareAndSet(true, false);
            OperatorHarness.awaitTrue(() -> election.forbiddenAnswers() == 1, Duration.ofSeconds(60),
                    "the renewal refused");
            OperatorHarness.awaitTrue(() -> election.isLeader() != other.isLeader()
                    && !election.inFallback() && !other.inFallback()
                    && Objects.equals(lease().getSpec().getHolderIdentity(), election.isLeader() ? "me" : "other"),
                    Duration.ofSeconds(60), "one replica leading on the Lease again");
            assertThat(bothLeading).as("moments both replicas led").isEmpty();
        } finally {
            other.close();
        }
    }

    /**
     * Closing stops this replica leading at once, whatever its Lease requests are doing: a renewal that hangs (an API
     * server that takes the request and does not answer) holds fabric8's elector, and so the release that cancelling
     * its round runs; close() returns while that renewal is still held, and the release follows once it is answered.
     */
    @Test
    void closeStopsLeadingWhileALeaseRequestHangsAndReleasesTheLeaseOnceItIsAnswered() throws Exception {
        AtomicBoolean hang = new AtomicBoolean();
        List<String> releases = new CopyOnWriteArrayList<>();
        cluster.addRequestListener(new io.unboundedcloud.playpen.support.TestCluster.RequestListener() {
            @Override
            public void onRequest(String key) {
            }

            @Override
            public void onRequest(String key, java.util.function.Supplier<String> body) {
                // the release: a write of the Lease without a holder
                if (key.startsWith("PATCH " + LEASES) && !body.get().contains("holderIdentity")) {
                    releases.add(key);
                }
            }
        });
        try (io.unboundedcloud.playpen.support.HeldRequest renewal = new io.unboundedcloud.playpen.support.HeldRequest(
                r -> hang.get() && r.uri().getPath().contains("/leases"));
                io.fabric8.kubernetes.client.KubernetesClient client = renewal.client(cluster)) {
            election = new LeaderElection(client, true, "playpen", "playpen-operator", "me", Duration.ofSeconds(30),
                    Duration.ofSeconds(20), Duration.ofMillis(100), Duration.ofMinutes(5), Duration.ofMinutes(5));
            election.addListener(changes::add);
            election.start();
            OperatorHarness.awaitTrue(election::isLeader, Duration.ofSeconds(60), "elected");
            hang.set(true);
            assertThat(renewal.awaitHeld(60)).as("a Lease request held").isTrue();
            Thread closing = new Thread(election::close, "closing");
            closing.start();
            closing.join(Duration.ofSeconds(60).toMillis());
            assertThat(closing.isAlive()).as("close() still waiting on the held Lease request").isFalse();
            assertThat(election.isLeader()).isFalse();
            assertThat(changes).containsExactly(true, false);
            assertThat(releases).as("the Lease given up before the held request was answered").isEmpty();
            renewal.release();
            OperatorHarness.awaitTrue(() -> !releases.isEmpty(), Duration.ofSeconds(60),
                    "the Lease given up once the held request was answered");
        }
    }

    /**
     * Starts this replica's election through {@code relay} and waits until it leads; from then on its requests (its
     * renewals) are sent and never answered.
     */
    void leadThenGoSilent(Relay relay, Duration leaseDuration, Duration renewDeadline, Duration retryPeriod)
            throws InterruptedException {
        election = new LeaderElection(relay.client, true, "playpen", "playpen-operator", "me", leaseDuration,
                renewDeadline, retryPeriod, Duration.ofMinutes(5), Duration.ofMinutes(5));
        election.start();
        OperatorHarness.awaitTrue(election::isLeader, Duration.ofSeconds(60), "elected");
        relay.swallow = true;
    }

    /**
     * Waits until another replica may take the Lease as it stands (its renewTime plus {@code leaseDuration}, as
     * fabric8's elector judges a takeover) and checks that this replica no longer leads then.
     */
    void assertNotLeadingOnceAnotherReplicaMayTakeTheLease(Duration leaseDuration) throws InterruptedException {
        ZonedDateTime renewed = lease().getSpec().getRenewTime();
        OperatorHarness.awaitTrue(() -> !ZonedDateTime.now(ZoneOffset.UTC).isBefore(renewed.plus(leaseDuration)),
                Duration.ofSeconds(60), "the Lease's renewTime plus its duration");
        assertThat(election.isLeader()).as("leading when another replica may take the Lease (renewed at %s)", renewed)
                .isFalse();
    }

    /** A TCP relay to the mock API server that can swallow everything sent through it: requests then hang. */
    static final class Relay implements AutoCloseable {
        final java.net.ServerSocket server;
        final java.net.InetAddress host;
        final int upstreamPort;
        final List<java.net.Socket> sockets = new CopyOnWriteArrayList<>();
        /** A client like the one the relay was made for, whose requests go through the relay. */
        final io.fabric8.kubernetes.client.KubernetesClient client;
        volatile boolean swallow;

        Relay(io.fabric8.kubernetes.client.KubernetesClient direct) throws java.io.IOException {
            java.net.URI api = java.net.URI.create(direct.getMasterUrl().toString());
            this.host = java.net.InetAddress.getByName(api.getHost());
            this.upstreamPort = api.getPort();
            this.server = new java.net.ServerSocket(0, 50, host);
            Thread t = new Thread(this::accept, "relay-accept");
            t.setDaemon(true);
            t.start();
            this.client = KubeClients.create(new io.fabric8.kubernetes.client.ConfigBuilder(direct.getConfiguration())
                    .withMasterUrl(api.getScheme() + "://" + api.getHost() + ":" + server.getLocalPort() + "/").build());
        }

        private void accept() {
            while (!server.isClosed()) {
                try {
                    java.net.Socket in = server.accept();
                    java.net.Socket out = new java.net.Socket(host, upstreamPort);
                    sockets.add(in);
                    sockets.add(out);
                    pump(in, out);
                    pump(out, in);
                } catch (java.io.IOException e) {
                    return;
                }
            }
        }

        private void pump(java.net.Socket from, java.net.Socket to) {
            Thread t = new Thread(() -> {
                byte[] buf = new byte[16384];
                try {
                    java.io.InputStream i = from.getInputStream();
                    java.io.OutputStream o = to.getOutputStream();
                    for (int n; (n = i.read(buf)) >= 0;) {
                        if (!swallow) {
                            o.write(buf, 0, n);
                            o.flush();
                        }
                    }
                } catch (java.io.IOException e) {
                    // closed
                } finally {
                    closeQuietly(from);
                    closeQuietly(to);
                }
            }, "relay-pump");
            t.setDaemon(true);
            t.start();
        }

        private static void closeQuietly(java.io.Closeable c) {
            try {
                c.close();
            } catch (java.io.IOException e) {
                // closing anyway
            }
        }

        @Override
        public void close() {
            client.close();
            closeQuietly(server);
            sockets.forEach(Relay::closeQuietly);
        }
    }
}
