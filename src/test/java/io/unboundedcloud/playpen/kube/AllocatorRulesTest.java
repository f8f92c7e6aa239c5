package io.unboundedcloud.playpen.kube;

import static io.unboundedcloud.playpen.kube.ScriptedReplica.KIND;
import static io.unboundedcloud.playpen.kube.ScriptedReplica.NODE;
import static io.unboundedcloud.playpen.kube.ScriptedReplica.cmd;
import static io.unboundedcloud.playpen.kube.ScriptedReplica.otherRequest;
import static io.unboundedcloud.playpen.kube.ScriptedReplica.podPath;
import static io.unboundedcloud.playpen.kube.ScriptedReplica.runner;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.function.Predicate;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.ScriptedWatch;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The allocator's rules, each at the exact point of a request where it matters (the replica's watch is scripted,
 * see {@link ScriptedReplica}): where the walk goes, what a claim costs, when a claim is handed out, rolled back or
 * replayed, the owner quota, and what a dealloc leaves.
 */
class AllocatorRulesTest {
    private ScriptedReplica r;
    private ListAppender<ILoggingEvent> log;

    @AfterEach
    void stop() {
        if (log != null) {
            ((Logger) LoggerFactory.getLogger(Allocator.class)).detachAppender(log);
        }
        if (r != null) {
            r.close();
        }
    }

    private List<String> logged() {
        return CapturedLogs.snapshot(log).stream().map(ILoggingEvent::getFormattedMessage).toList();
    }

    private void captureLog() {
        log = new ListAppender<>();
        log.start();
        ((Logger) LoggerFactory.getLogger(Allocator.class)).addAppender(log);
    }

    private long calls(KubeApiCall c) {
        return r.calls.get(c);
    }

    private static String name(Allocator.Allocation a) {
        return a.pod().getMetadata().getName();
    }

    private List<String> ring(long start) {
        List<String> out = new ArrayList<>();
        Iterator<String> it = r.pods.ring(KIND, start);
        it.forEachRemaining(out::add);
        return out;
    }

    private String first(AllocCommand c) {
        return ring(Hashes.seed(c.keyHash())).get(0);
    }

    /** The first key ("prefix-0", "prefix-1", ...) for which the condition holds. */
    private static AllocCommand keyWhere(String prefix, Predicate<AllocCommand> condition) {
        for (int k = 0; k < 10_000; k++) {
            AllocCommand c = cmd(prefix + "-" + k);
            if (condition.test(c)) {
                return c;
            }
        }
        throw new AssertionError("no key found for " + prefix);
    }

    private static boolean isClaimOf(ScriptedWatch.Event e, AllocCommand key, String pod) {
        return ManagedPods.name(e.pod()).equals(pod) && key.keyHash().equals(ManagedPods.keyHash(e.pod()));
    }

    private void notReady(String pod) {
        r.edit(pod, b -> b.editStatus().editFirstContainerStatus().withReady(false).endContainerStatus().endStatus());
    }

    // ---- a new claim

    @Test
    void anIdlePoolGivesTheKeyThePodAtItsPlaceOnTheRingForOneWrite() throws Exception {
        r = new ScriptedReplica(6, 0);
        AllocCommand key = cmd("first");
        String expected = first(key);
        assertThat(r.allocator.firstCandidate(key).map(u -> ManagedPods.name(u.pod()))).contains(expected);
        Allocator.Allocation a = r.allocator.allocate(key);
        assertThat(name(a)).isEqualTo(expected);
        assertThat(a.replay()).isFalse();
        assertThat(a.externalIp()).isEqualTo(ScriptedReplica.EXTERNAL_IP);
        assertThat(ManagedPods.annotations(r.inApi(expected))).containsEntry(PlaypenKeys.IDEMPOTENCY_KEY_HASH,
                key.keyHash()).containsEntry(PlaypenKeys.REQUEST_HASH, key.requestHash())
                .doesNotContainKey(PlaypenKeys.OWNER_HASH).doesNotContainKey(PlaypenKeys.CLAIM_SETTLED);
        assertThat(calls(KubeApiCall.PODS_PATCH)).isEqualTo(1);
        assertThat(calls(KubeApiCall.PODS_GET) + calls(KubeApiCall.PODS_LIST)).isZero();
        assertThat(r.allocator.rollbacks()).isZero();
        assertThat(r.allocator.reservationWaits()).isZero();
        assertThat(r.carriers(key.keyHash())).containsExactly(expected);
        // the next key's first candidate leaves the claimed pod out
        assertThat(r.allocator.firstCandidate(key).map(u -> ManagedPods.name(u.pod()))).isPresent()
                .get().isNotEqualTo(expected);
    }

    @Test
    void theSameRequestAgainIsAReplaySettledOnceAndADifferentOneIs409() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("again");
        Allocator.Allocation a = r.allocator.allocate(key);
        Allocator.Allocation b = r.allocator.allocate(key);
        assertThat(b.replay()).isTrue();
        assertThat(name(b)).isEqualTo(name(a));
        assertThat(b.externalIp()).isEqualTo(ScriptedReplica.EXTERNAL_IP);
        assertThat(ClaimLedger.isSettled(b.pod())).isTrue();
        assertThat(ClaimLedger.isSettled(r.inApi(name(a)))).isTrue();
        assertThat(calls(KubeApiCall.PODS_PATCH)).as("the claim and one settle").isEqualTo(2);
        assertThat(calls(KubeApiCall.PODS_GET)).as("read before it is named").isEqualTo(1);
        Allocator.Allocation c = r.allocator.replay(key).orElseThrow();
        assertThat(name(c)).isEqualTo(name(a));
        assertThat(c.replay()).isTrue();
        assertThat(calls(KubeApiCall.PODS_PATCH)).as("settled already").isEqualTo(2);
        assertThat(calls(KubeApiCall.PODS_GET)).isEqualTo(2);

        ApiException conflict = catchThrowableOfType(ApiException.class,
                () -> r.allocator.allocate(otherRequest(key)));
        assertThat(conflict.code()).isEqualTo(409);
        assertThat(conflict.getMessage()).isEqualTo(Allocator.CONFLICT_MESSAGE);
        assertThat(catchThrowableOfType(ApiException.class, () -> r.allocator.replay(otherRequest(key))).code())
                .isEqualTo(409);
        assertThat(calls(KubeApiCall.PODS_PATCH)).isEqualTo(2);
        assertThat(r.carriers(key.keyHash())).containsExactly(name(a));
    }

    @Test
    void aReplayOfAKeyWithoutAClaimIsEmptyAndAsksNothing() throws Exception {
        r = new ScriptedReplica(2, 0);
        assertThat(r.allocator.replay(cmd("never"))).isEmpty();
        assertThat(calls(KubeApiCall.PODS_GET) + calls(KubeApiCall.PODS_LIST) + calls(KubeApiCall.PODS_PATCH))
                .isZero();
    }

    @Test
    void aPodClaimedByAnotherKeySendsTheWalkToTheKeysNextStartingPoint() throws Exception {
        r = new ScriptedReplica(8, 0);
        // a key whose next starting point is another pod than the one right after its first (so they differ)
        AllocCommand key = keyWhere("probe", c -> {
            List<String> fromFirst = ring(Hashes.seed(c.keyHash()));
            String next = ring(Hashes.probeStart(Hashes.seed(c.keyHash()), 1)).get(0);
            return !next.equals(fromFirst.get(0)) && !next.equals(fromFirst.get(1));
        });
        String taken = first(key);
        String expected = ring(Hashes.probeStart(Hashes.seed(key.keyHash()), 1)).get(0);
        r.claimElsewhere(taken, cmd("someone else"), null);
        assertThat(r.allocator.firstCandidate(key).map(u -> ManagedPods.name(u.pod()))).contains(expected);
        assertThat(name(r.allocator.allocate(key))).isEqualTo(expected);
        assertThat(calls(KubeApiCall.PODS_PATCH)).isEqualTo(1);
    }

    @Test
    void aPodThatCannotServeIsPassedClockwise() throws Exception {
        r = new ScriptedReplica(8, 0);
        AllocCommand key = keyWhere("unready", c -> {
            List<String> fromFirst = ring(Hashes.seed(c.keyHash()));
            String next = ring(Hashes.probeStart(Hashes.seed(c.keyHash()), 1)).get(0);
            return !next.equals(fromFirst.get(0)) && !next.equals(fromFirst.get(1));
        });
        List<String> order = ring(Hashes.seed(key.keyHash()));
        notReady(order.get(0));
        assertThat(r.allocator.firstCandidate(key).map(u -> ManagedPods.name(u.pod()))).contains(order.get(1));
        assertThat(name(r.allocator.allocate(key))).isEqualTo(order.get(1));
    }

    @Test
    void whenEveryStartingPointMeetsAnotherKeysClaimTheLastWalkTriesEveryPod() throws Exception {
        r = new ScriptedReplica(0, 0);
        int pods = 16;
        for (int i = 0; i < pods; i++) {
            r.cluster.create(TestCluster.readyRunner("amd64", 51820 + i, NODE));
        }
        String free = runner(0);
        for (int i = 1; i < pods; i++) {
            r.claimElsewhere(runner(i), cmd("taken-" + i), null);
        }
        AllocCommand key = keyWhere("crowded", c -> {
            for (int k = 0; k < 64; k++) {
                if (ring(Hashes.probeStart(Hashes.seed(c.keyHash()), k)).get(0).equals(free)) {
                    return false;
                }
            }
            return true;
        });
        assertThat(r.allocator.firstCandidate(key)).as("the quick look gives up").isEmpty();
        assertThat(name(r.allocator.allocate(key))).isEqualTo(free);
    }

    @Test
    void nothingUsableIsA503ThatSaysWhyOrEmptyForTheWaitingQueue() throws Exception {
        r = new ScriptedReplica(3, 0);
        for (int i = 0; i < 3; i++) {
            r.claimElsewhere(runner(i), cmd("full-" + i), null);
        }
        AllocCommand key = cmd("late");
        assertThat(r.allocator.tryAllocate(key, null)).isEmpty();
        ApiException e = catchThrowableOfType(ApiException.class, () -> r.allocator.allocate(key));
        assertThat(e.code()).isEqualTo(503);
        assertThat(e.getMessage()).isEqualTo(r.allocator.unavailable(key).getMessage());
        assertThat(e.getMessage()).isNotEqualTo("no capacity");
        assertThat(e.headers()).containsEntry("Retry-After", "1");
        assertThat(calls(KubeApiCall.PODS_PATCH)).isZero();
        // a kind without any pod: the same
        AllocCommand arm = new AllocCommand(Hashes.keyHash("arm"), io.unboundedcloud.playpen.model.ResourceType.RUNNER,
                "", TestCluster.wgKey(3), "arm64");
        assertThat(r.allocator.tryAllocate(arm, null)).isEmpty();
        assertThat(catchThrowableOfType(ApiException.class, () -> r.allocator.allocate(arm)).code()).isEqualTo(503);
        assertThat(r.allocator.firstCandidate(arm)).isEmpty();
    }

    @Test
    void tryAllocateHandsOutLikeAllocateAndPassesOtherErrorsOn() throws Exception {
        r = new ScriptedReplica(2, 0);
        AllocCommand key = cmd("queued");
        Allocator.Allocation a = r.allocator.tryAllocate(key, null).orElseThrow();
        assertThat(r.carriers(key.keyHash())).containsExactly(name(a));
        assertThat(catchThrowableOfType(ApiException.class, () -> r.allocator.tryAllocate(otherRequest(key), null))
                .code()).isEqualTo(409);
    }

    // ---- the walk's writes meet other writers

    @Test
    void aClaimOfThisKeyThatAnotherReplicaWroteOnThePodFirstIsReplayed() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("same-pod-race");
        String pod = first(key);
        r.watch.hold();
        r.claimElsewhere(pod, key, null);
        r.releaseOnAnswer("GET", podPath(pod));
        Allocator.Allocation a = r.allocator.allocate(key);
        assertThat(name(a)).isEqualTo(pod);
        assertThat(a.replay()).isTrue();
        assertThat(calls(KubeApiCall.PODS_PATCH)).as("a claim that met the other one, and a settle").isEqualTo(2);
        assertThat(r.carriers(key.keyHash())).containsExactly(pod);
        assertThat(r.allocator.rollbacks()).isZero();
    }

    @Test
    void aPodClaimedByAnotherKeyMeanwhileSendsTheWalkOn() throws Exception {
        r = new ScriptedReplica(8, 0);
        AllocCommand key = keyWhere("raced", c -> {
            List<String> fromFirst = ring(Hashes.seed(c.keyHash()));
            String next = ring(Hashes.probeStart(Hashes.seed(c.keyHash()), 1)).get(0);
            return !next.equals(fromFirst.get(0)) && !next.equals(fromFirst.get(1));
        });
        String taken = first(key);
        r.watch.hold();
        r.claimElsewhere(taken, cmd("faster"), null);
        r.releaseOnAnswer("GET", podPath(taken));
        assertThat(name(r.allocator.allocate(key))).isEqualTo(ring(Hashes.probeStart(Hashes.seed(key.keyHash()), 1))
                .get(0));
        assertThat(calls(KubeApiCall.PODS_PATCH)).isEqualTo(2);
        assertThat(calls(KubeApiCall.PODS_GET)).isEqualTo(1);
    }

    @Test
    void aPodThatChangedButIsStillUsableIsClaimedOnItsNewVersion() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("changed");
        String pod = first(key);
        r.watch.hold();
        r.edit(pod, b -> b.editMetadata().addToLabels("touched", "yes").endMetadata());
        r.releaseOnAnswer("GET", podPath(pod));
        assertThat(name(r.allocator.allocate(key))).isEqualTo(pod);
        assertThat(r.inApi(pod).getMetadata().getLabels()).containsEntry("touched", "yes");
        assertThat(calls(KubeApiCall.PODS_PATCH)).isEqualTo(2);
        assertThat(calls(KubeApiCall.PODS_GET)).isEqualTo(1);
    }

    @Test
    void aPodThatCanNoLongerServeOrIsGoneIsPassedClockwise() throws Exception {
        r = new ScriptedReplica(6, 0);
        AllocCommand key = cmd("unusable-now");
        List<String> order = ring(Hashes.seed(key.keyHash()));
        r.watch.hold();
        notReady(order.get(0));
        r.releaseOnAnswer("GET", podPath(order.get(0)));
        assertThat(name(r.allocator.allocate(key))).isEqualTo(order.get(1));

        AllocCommand gone = cmd("deleted-now");
        List<String> next = ring(Hashes.seed(gone.keyHash())).stream()
                .filter(p -> ManagedPods.isIdle(r.pods.get(p).orElseThrow()) && !p.equals(order.get(0))).toList();
        r.watch.hold();
        r.cluster.client.pods().inNamespace(TestCluster.NS).withName(next.get(0)).delete();
        r.releaseOnAnswer("PATCH", podPath(next.get(0)));
        assertThat(name(r.allocator.allocate(gone))).isEqualTo(next.get(1));
    }

    @Test
    void aPodFoundGoneAfterAConflictIsPassedClockwise() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("gone-after-conflict");
        List<String> order = ring(Hashes.seed(key.keyHash()));
        r.cluster.server.expect().patch().withPath(podPath(order.get(0))).andReturn(409,
                "{\"kind\":\"Status\",\"code\":409}").once();
        r.cluster.server.expect().get().withPath(podPath(order.get(0))).andReturn(404,
                "{\"kind\":\"Status\",\"code\":404}").once();
        assertThat(name(r.allocator.allocate(key))).isEqualTo(order.get(1));
        assertThat(r.pods.get(order.get(0))).as("known gone until the watch says otherwise").isEmpty();
    }

    @Test
    void threeConflictsOnOnePodSendTheWalkOn() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("contended");
        List<String> order = ring(Hashes.seed(key.keyHash()));
        r.cluster.server.expect().patch().withPath(podPath(order.get(0))).andReturn(409,
                "{\"kind\":\"Status\",\"code\":409}").times(3);
        assertThat(name(r.allocator.allocate(key))).isEqualTo(order.get(1));
        assertThat(calls(KubeApiCall.PODS_PATCH)).isEqualTo(4);
        assertThat(calls(KubeApiCall.PODS_GET)).isEqualTo(3);
        assertThat(ManagedPods.isClaimed(r.inApi(order.get(0)))).isFalse();
    }

    @Test
    void aClaimTheApiServerRefusesIsAnError() throws Exception {
        r = new ScriptedReplica(2, 0);
        r.cluster.forbidden = k -> k.startsWith("PATCH ");
        KubernetesClientException e = catchThrowableOfType(KubernetesClientException.class,
                () -> r.allocator.allocate(cmd("forbidden")));
        assertThat(e.getCode()).isEqualTo(403);
        assertThat(calls(KubeApiCall.PODS_GET)).isZero();
    }

    // ---- the verdict on a new claim

    @Test
    void aClaimThatLostToAnEarlierClaimOfItsKeyIsRolledBackAndTheEarlierOneReplayed() throws Exception {
        r = new ScriptedReplica(6, 0);
        captureLog();
        AllocCommand key = cmd("lagging-retry");
        List<String> order = ring(Hashes.seed(key.keyHash()));
        String earlier = order.get(3);
        r.watch.hold();
        r.claimElsewhere(earlier, key, null);
        r.watch.whenRelayed(e -> isClaimOf(e, key, order.get(0)), e -> r.watch.release());
        Allocator.Allocation a = r.allocator.allocate(key);
        assertThat(name(a)).isEqualTo(earlier);
        assertThat(a.replay()).isTrue();
        assertThat(r.carriers(key.keyHash())).containsExactly(earlier);
        assertThat(ManagedPods.isClaimed(r.inApi(order.get(0)))).isFalse();
        assertThat(ClaimLedger.isSettled(r.inApi(earlier))).isTrue();
        assertThat(r.allocator.rollbacks()).isEqualTo(1);
        assertThat(logged()).anyMatch(l -> l.contains("pod=playpen/" + order.get(0)) && l.contains(
                "outcome=claim-earlier-claim result=rolled_back"));
    }

    @Test
    void aClaimThatLostToAnEarlierClaimOfADifferentRequestIs409() throws Exception {
        r = new ScriptedReplica(6, 0);
        AllocCommand key = cmd("lagging-conflict");
        List<String> order = ring(Hashes.seed(key.keyHash()));
        r.watch.hold();
        r.claimElsewhere(order.get(2), otherRequest(key), null);
        r.watch.whenRelayed(e -> isClaimOf(e, key, order.get(0)), e -> r.watch.release());
        assertThat(catchThrowableOfType(ApiException.class, () -> r.allocator.allocate(key)).code()).isEqualTo(409);
        assertThat(r.carriers(key.keyHash())).containsExactly(order.get(2));
        assertThat(ClaimLedger.isSettled(r.inApi(order.get(2)))).isFalse();
    }

    @Test
    void aClaimOverTheOwnersQuotaAtItsCommitIsRolledBackAnd429() throws Exception {
        r = new ScriptedReplica(6, 1);
        captureLog();
        String owner = Hashes.ownerHash("quota-owner");
        AllocCommand key = cmd("second-of-one");
        List<String> order = ring(Hashes.seed(key.keyHash()));
        r.watch.hold();
        // the owner's other allocation, made through another replica a moment before
        r.claimElsewhere(order.get(2), cmd("first-of-one"), owner);
        r.watch.whenRelayed(e -> isClaimOf(e, key, order.get(0)), e -> r.watch.release());
        ApiException e = catchThrowableOfType(ApiException.class, () -> r.allocator.allocate(key, owner));
        assertThat(e.code()).isEqualTo(429);
        assertThat(e.getMessage()).isEqualTo("allocation quota exceeded: you hold 1 of at most 1 allocations "
                + "(--max-allocs-per-user); deallocate one first");
        assertThat(e.headers()).containsEntry("Retry-After", "1");
        assertThat(r.carriers(key.keyHash())).isEmpty();
        assertThat(r.allocator.rollbacks()).isEqualTo(1);
        assertThat(logged()).anyMatch(l -> l.contains("outcome=claim-quota result=rolled_back"));
    }

    @Test
    void the429OfAClaimOverTheQuotaDoesNotCountThatClaimBeforeTheWatchDeliversItsRollback() throws Exception {
        r = new ScriptedReplica(6, 1);
        String owner = Hashes.ownerHash("quota-owner-lagging");
        AllocCommand key = cmd("second-of-one-lagging");
        List<String> order = ring(Hashes.seed(key.keyHash()));
        r.watch.hold();
        r.claimElsewhere(order.get(2), cmd("first-of-one-lagging"), owner);
        // the watch delivers the claim's commit, then falls behind: the rollback's event comes later
        r.watch.whenRelayed(e -> isClaimOf(e, key, order.get(0)), e -> {
            r.watch.release();
            r.watch.hold();
        });
        ApiException e = catchThrowableOfType(ApiException.class, () -> r.allocator.allocate(key, owner));
        assertThat(e.code()).isEqualTo(429);
        assertThat(r.carriers(key.keyHash())).isEmpty();
        assertThat(e.getMessage()).isEqualTo("allocation quota exceeded: you hold 1 of at most 1 allocations "
                + "(--max-allocs-per-user); deallocate one first");
    }

    @Test
    void aLostDuplicateOfAKeyTheOwnerHoldsCountsAsNoSecondAllocation() throws Exception {
        r = new ScriptedReplica(6, 2);
        String owner = Hashes.ownerHash("duplicate-owner");
        AllocCommand held = cmd("held-once");
        // the owner's allocation, and a second claim of the same key committed after it (lost, about to be rolled
        // back), both made through other replicas
        r.claimElsewhere(runner(0), held, owner);
        r.claimElsewhere(runner(1), held, owner);
        io.unboundedcloud.playpen.support.OperatorHarness.awaitTrue(
                () -> r.pods.claimsOf(held.keyHash()).size() == 2, java.time.Duration.ofSeconds(60),
                "the watch delivered both claims");
        assertThat(r.pods.claimsOf(held.keyHash())).extracting(ClaimLedger.Claim::standing)
                .containsExactly(ClaimLedger.Standing.WON, ClaimLedger.Standing.LOST);
        assertThat(r.allocator.ownedBy(owner)).as("allocations held").isEqualTo(1);
        r.allocator.requireQuota(cmd("second-key"), owner);
        Allocator.Allocation second = r.allocator.allocate(cmd("second-key"), owner);
        assertThat(second.replay()).isFalse();
        // two allocations now, still three claims: the 429 says two
        ApiException e = catchThrowableOfType(ApiException.class,
                () -> r.allocator.allocate(cmd("third-key"), owner));
        assertThat(e.code()).isEqualTo(429);
        assertThat(e.getMessage()).isEqualTo("allocation quota exceeded: you hold 2 of at most 2 allocations "
                + "(--max-allocs-per-user); deallocate one first");
    }

    @Test
    void aClaimTheWatchFirstShowsInARelistIsRolledBackAndClaimedAgain() throws Exception {
        r = new ScriptedReplica(4, 0);
        captureLog();
        AllocCommand key = cmd("relisted-mine");
        String pod = first(key);
        r.watch.hold();
        r.watch.whenRelayed(e -> isClaimOf(e, key, pod), e -> {
            r.watch.forget();
            try {
                r.watch.gone();
            } catch (Exception ex) {
                throw new IllegalStateException(ex);
            }
            r.watch.release();
        });
        Allocator.Allocation a = r.allocator.allocate(key);
        assertThat(name(a)).isEqualTo(pod);
        assertThat(a.replay()).isFalse();
        assertThat(r.allocator.rollbacks()).isEqualTo(1);
        assertThat(r.carriers(key.keyHash())).containsExactly(pod);
        assertThat(r.pods.claimOn(pod).orElseThrow().stands()).isTrue();
        assertThat(calls(KubeApiCall.PODS_PATCH)).as("claim, rollback, claim").isEqualTo(3);
        assertThat(logged()).anyMatch(l -> l.contains("outcome=claim-undecided result=rolled_back"));
    }

    @Test
    void aClaimSettledByAnotherReplicaBeforeItsRollbackStandsAndIsReplayed() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("settled-first");
        String pod = first(key);
        r.watch.hold();
        r.watch.whenRelayed(e -> isClaimOf(e, key, pod), e -> {
            r.watch.forget();
            try {
                r.watch.gone();
            } catch (Exception ex) {
                throw new IllegalStateException(ex);
            }
            r.watch.release();
            // the rollback meets a settle another replica wrote (as its read shows)
            Pod settled = new PodBuilder(e.pod()).editMetadata().addToAnnotations(PlaypenKeys.CLAIM_SETTLED, "true")
                    .withResourceVersion(String.valueOf(ClaimLedger.resourceVersion(e.pod()) + 50)).endMetadata()
                    .build();
            r.cluster.server.expect().patch().withPath(podPath(pod)).andReturn(409, "{\"kind\":\"Status\",\"code\":409}")
                    .once();
            r.cluster.server.expect().get().withPath(podPath(pod)).andReturn(200, settled).once();
        });
        Allocator.Allocation a = r.allocator.allocate(key);
        assertThat(name(a)).isEqualTo(pod);
        assertThat(a.replay()).isTrue();
        assertThat(r.allocator.rollbacks()).isZero();
        assertThat(r.carriers(key.keyHash())).containsExactly(pod);
        assertThat(ClaimLedger.isSettled(r.inApi(pod))).isTrue();
    }

    @Test
    void aClaimNoLongerOnItsPodWhenTheWatchGetsThereIsNotHandedOutAndTheKeyIsJudgedAgain() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("deleted-unseen");
        String pod = first(key);
        r.watch.hold();
        java.util.concurrent.CompletableFuture<Allocator.Allocation> a = ScriptedReplica.waitingForTheWatch(
                () -> r.allocator.allocate(key));
        // deallocated through another replica, and this replica's watch expired before delivering either change:
        // its relist no longer has the pod
        r.cluster.client.pods().inNamespace(TestCluster.NS).withName(pod).delete();
        r.watch.forget();
        r.watch.gone();
        r.watch.release();
        Allocator.Allocation second = a.get(20, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(name(second)).isNotEqualTo(pod);
        assertThat(second.replay()).isFalse();
        assertThat(r.carriers(key.keyHash())).containsExactly(name(second));
        assertThat(r.allocator.rollbacks()).isZero();
        assertThat(calls(KubeApiCall.PODS_PATCH)).as("two claims, no rollback").isEqualTo(2);
    }

    @Test
    void aClaimReplacedOnItsPodBeforeTheWatchGotThereIsNotHandedOut() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("replaced-unseen");
        String pod = first(key);
        r.watch.hold();
        java.util.concurrent.CompletableFuture<Allocator.Allocation> a = ScriptedReplica.waitingForTheWatch(
                () -> r.allocator.allocate(key));
        // taken back and claimed by another key meanwhile; this replica's watch relists past both
        r.writer.rollback(r.inApi(pod), key.keyHash());
        r.claimElsewhere(pod, cmd("next-owner"), null);
        r.watch.forget();
        r.watch.gone();
        r.watch.release();
        Allocator.Allocation second = a.get(20, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(name(second)).isNotEqualTo(pod);
        assertThat(r.carriers(key.keyHash())).containsExactly(name(second));
        assertThat(r.allocator.rollbacks()).isZero();
    }

    @Test
    void aReplayWhosePinMeetsAChangeIsJudgedAgain() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("pin-again");
        String pod = name(r.allocator.allocate(key));
        r.cluster.server.expect().patch().withPath(podPath(pod)).andReturn(409, "{\"kind\":\"Status\",\"code\":409}")
                .once();
        Allocator.Allocation again = r.allocator.allocate(key);
        assertThat(again.replay()).isTrue();
        assertThat(name(again)).isEqualTo(pod);
        assertThat(calls(KubeApiCall.PODS_PATCH)).as("claim, refused settle, settle").isEqualTo(3);
        assertThat(calls(KubeApiCall.PODS_GET)).as("read again after the refusal").isEqualTo(2);

        AllocCommand other = cmd("pin-again-replay");
        String second = name(r.allocator.allocate(other));
        r.cluster.server.expect().patch().withPath(podPath(second)).andReturn(409, "{\"kind\":\"Status\",\"code\":409}")
                .once();
        Allocator.Allocation replayed = r.allocator.replay(other).orElseThrow();
        assertThat(name(replayed)).isEqualTo(second);
        assertThat(ClaimLedger.isSettled(r.inApi(second))).isTrue();
    }

    @Test
    void aReplayOnANodeWithoutAnExternalIpAnswersWithoutOne() throws Exception {
        r = new ScriptedReplica(0, 0);
        r.cluster.addNode("node-b", "amd64", null);
        Pod pod = r.cluster.create(TestCluster.readyRunner("amd64", 51830, "node-b"));
        AllocCommand key = cmd("no-external-ip");
        r.claimElsewhere(ManagedPods.name(pod), key, null);
        Allocator.Allocation a = r.allocator.allocate(key);
        assertThat(a.replay()).isTrue();
        assertThat(a.externalIp()).isEmpty();
    }

    /**
     * The node watch can change a node between the walk's judgement of a pod and the claim: the claim is made with
     * the ExternalIP the pod was judged usable with, never a NoSuchElementException (a 500) for the client.
     */
    @Test
    void aNodeThatLosesItsExternalIpWhileItsPodIsJudgedDoesNotFailTheRequest() throws Exception {
        r = new ScriptedReplica(1, 0);
        java.util.concurrent.atomic.AtomicBoolean changed = new java.util.concurrent.atomic.AtomicBoolean();
        io.unboundedcloud.playpen.model.Candidates racing = new io.unboundedcloud.playpen.model.Candidates(
                io.unboundedcloud.playpen.model.LabelSelector.equality(java.util.Map.of()), (kind, pod, ips) -> {
                    if (changed.compareAndSet(false, true)) {
                        // the node's ExternalIP goes away just after the pod was judged to have one
                        r.cluster.client.nodes().withName(NODE).edit(n -> {
                            n.getStatus().getAddresses().removeIf(a -> "ExternalIP".equals(a.getType()));
                            return n;
                        });
                        try {
                            io.unboundedcloud.playpen.support.OperatorHarness.awaitTrue(
                                    () -> r.nodes.externalIp(NODE).isEmpty(), java.time.Duration.ofSeconds(20),
                                    "the node cache saw the change");
                        } catch (InterruptedException e) {
                            throw new AssertionError(e);
                        }
                    }
                    return null;
                });
        Allocator allocator = new Allocator(r.pods, r.nodes, r.writer, racing, 1, 0);
        Allocator.Allocation a = allocator.allocate(cmd("node-changes"));
        assertThat(changed).isTrue();
        assertThat(name(a)).isEqualTo(runner(0));
        assertThat(a.externalIp()).isEqualTo(ScriptedReplica.EXTERNAL_IP);
    }

    @Test
    void aPodThisReplicaKnowsIsGoneIsPassed() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("known-gone");
        List<String> order = ring(Hashes.seed(key.keyHash()));
        r.pods.observeDeleted(order.get(0));
        assertThat(r.allocator.firstCandidate(key).map(u -> ManagedPods.name(u.pod()))).contains(order.get(1));
        assertThat(name(r.allocator.allocate(key))).isEqualTo(order.get(1));
    }

    /**
     * A key sent again while the pod of its released (or expired) allocation is still being deleted allocates anew
     * on another pod: the terminating pod, though still the key's first candidate and still carrying its claim, is
     * no longer the key's allocation, and the new claim stands beside it.
     */
    @Test
    void aReleasedKeyWhosePodIsStillTerminatingIsAllocatedAnewOnAnotherPod() throws Exception {
        r = new ScriptedReplica(0, 0);
        Pod held = r.cluster.create(TestCluster.readyRunner("amd64", 51820, NODE).editMetadata()
                .addToFinalizers("test/hold").endMetadata());
        for (int i = 1; i < 4; i++) {
            r.cluster.create(TestCluster.readyRunner("amd64", 51820 + i, NODE));
        }
        AllocCommand key = keyWhere("terminating", c -> first(c).equals(ManagedPods.name(held)));
        r.claimElsewhere(ManagedPods.name(held), key, null);
        r.cluster.client.pods().inNamespace(TestCluster.NS).withName(ManagedPods.name(held)).delete();
        assertThat(ManagedPods.isTerminating(r.pods.get(ManagedPods.name(held)).orElseThrow())).isTrue();
        long patches = calls(KubeApiCall.PODS_PATCH);
        Allocator.Allocation a = r.allocator.allocate(key);
        assertThat(a.replay()).isFalse();
        assertThat(name(a)).isNotEqualTo(ManagedPods.name(held));
        assertThat(calls(KubeApiCall.PODS_PATCH)).isEqualTo(patches + 1);
        assertThat(r.carriers(key.keyHash())).containsExactlyInAnyOrder(ManagedPods.name(held), name(a));
        // and a replay of it answers the new allocation, not the pod being deleted
        assertThat(name(r.allocator.allocate(key))).isEqualTo(name(a));
    }

    /**
     * A request that keeps meeting a claim of its key that no verdict will ever hand out (here: this replica read
     * the claim from the API server, but its watch, held, never delivers it to the claim ledger, while the walk
     * meets it first every time) gives up after a bounded number of rounds with a 503 and writes nothing.
     */
    @Test
    void aRequestThatKeepsMeetingItsKeysClaimWithoutAVerdictGivesUpWithA503AndWritesNothing() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("unjudged");
        String pod = first(key);
        r.watch.hold();
        r.claimElsewhere(pod, key, null);
        r.pods.observe(r.inApi(pod));
        assertThat(r.pods.claimsOf(key.keyHash())).as("the ledger has not seen the claim").isEmpty();
        long patches = calls(KubeApiCall.PODS_PATCH);
        ApiException e = catchThrowableOfType(ApiException.class, () -> r.allocator.allocate(key));
        assertThat(e.code()).isEqualTo(503);
        assertThat(e.headers()).containsEntry("Retry-After", "1");
        assertThat(calls(KubeApiCall.PODS_PATCH)).isEqualTo(patches);
        assertThat(r.carriers(key.keyHash())).containsExactly(pod);
        r.watch.release();
    }

    // ---- the owner quota

    @Test
    void anOwnerAtTheQuotaIsRefusedBeforeAnyWriteAndAReplayStillAnswers() throws Exception {
        r = new ScriptedReplica(5, 2);
        String owner = Hashes.ownerHash("ola");
        AllocCommand one = cmd("ola-1");
        Allocator.Allocation a = r.allocator.allocate(one, owner);
        assertThat(ManagedPods.annotations(r.inApi(name(a)))).containsEntry(PlaypenKeys.OWNER_HASH, owner)
                .containsEntry(PlaypenKeys.OWNER_QUOTA, "2");
        assertThat(r.allocator.ownedBy(owner)).isEqualTo(1);
        r.allocator.allocate(cmd("ola-2"), owner);
        assertThat(r.allocator.ownedBy(owner)).isEqualTo(2);
        long patches = calls(KubeApiCall.PODS_PATCH);
        ApiException e = catchThrowableOfType(ApiException.class, () -> r.allocator.allocate(cmd("ola-3"), owner));
        assertThat(e.code()).isEqualTo(429);
        assertThat(e.reason()).isEqualTo("TooManyRequests");
        assertThat(e.getMessage()).isEqualTo("allocation quota exceeded: you hold 2 of at most 2 allocations "
                + "(--max-allocs-per-user); deallocate one first");
        assertThat(calls(KubeApiCall.PODS_PATCH)).isEqualTo(patches);
        // a replay is no new allocation
        assertThat(r.allocator.allocate(one, owner).replay()).isTrue();
        // without an owner there is no quota, and nothing is recorded
        Allocator.Allocation anonymous = r.allocator.allocate(cmd("nobody"), null);
        assertThat(ManagedPods.annotations(r.inApi(name(anonymous)))).doesNotContainKey(PlaypenKeys.OWNER_HASH)
                .doesNotContainKey(PlaypenKeys.OWNER_QUOTA);
        // a released claim frees a place
        r.allocator.deallocate(one.keyHash());
        assertThat(r.allocator.ownedBy(owner)).isEqualTo(1);
        Allocator.Allocation third = r.allocator.allocate(cmd("ola-3"), owner);
        assertThat(third.replay()).isFalse();
    }

    @Test
    void withoutAQuotaTheOwnerIsRecordedButNotLimited() throws Exception {
        r = new ScriptedReplica(3, 0);
        String owner = Hashes.ownerHash("pia");
        for (int i = 0; i < 3; i++) {
            Allocator.Allocation a = r.allocator.allocate(cmd("pia-" + i), owner);
            assertThat(ManagedPods.annotations(r.inApi(name(a)))).containsEntry(PlaypenKeys.OWNER_HASH, owner)
                    .doesNotContainKey(PlaypenKeys.OWNER_QUOTA);
        }
        assertThat(r.allocator.ownedBy(owner)).isEqualTo(3);
    }

    @Test
    void theQuotaCountsLiveClaimsOnlyAndAdmitsUpToIt() throws Exception {
        r = new ScriptedReplica(5, 2);
        String owner = Hashes.ownerHash("quinn");
        // a claim of the owner on a pod being deleted (a finalizer holds it) no longer counts
        Pod held = r.cluster.create(TestCluster.readyRunner("amd64", 51900, NODE).editMetadata()
                .addToFinalizers("test/hold").endMetadata());
        r.claimElsewhere(ManagedPods.name(held), cmd("quinn-old"), owner);
        r.cluster.client.pods().inNamespace(TestCluster.NS).withName(ManagedPods.name(held)).delete();
        assertThat(ManagedPods.isTerminating(r.pods.get(ManagedPods.name(held)).orElseThrow())).isTrue();
        // a pod with the owner's annotation and no claim is not one either
        r.edit(runner(4), b -> b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_HASH, owner).endMetadata());
        assertThat(r.allocator.ownedBy(owner)).isZero();
        r.allocator.allocate(cmd("quinn-1"), owner);
        assertThat(r.allocator.allocate(cmd("quinn-2"), owner).replay()).as("one below the quota: admitted").isFalse();
        assertThat(catchThrowableOfType(ApiException.class, () -> r.allocator.allocate(cmd("quinn-3"), owner)).code())
                .isEqualTo(429);
    }

    @Test
    void theCheckBeforeWaitingRefusesANewKeyAtTheQuotaOnlyAndNeverAReplay() throws Exception {
        r = new ScriptedReplica(4, 2);
        String owner = Hashes.ownerHash("rhea");
        AllocCommand one = cmd("rhea-1");
        r.allocator.allocate(one, owner);
        // one below the quota: a new key may wait
        r.allocator.requireQuota(cmd("rhea-new"), owner);
        r.allocator.allocate(cmd("rhea-2"), owner);
        long patches = calls(KubeApiCall.PODS_PATCH);
        ApiException e = catchThrowableOfType(ApiException.class,
                () -> r.allocator.requireQuota(cmd("rhea-new"), owner));
        assertThat(e.code()).isEqualTo(429);
        assertThat(e.getMessage()).isEqualTo("allocation quota exceeded: you hold 2 of at most 2 allocations "
                + "(--max-allocs-per-user); deallocate one first");
        // a key the owner holds is a replay, which the quota never refuses
        r.allocator.requireQuota(one, owner);
        // no owner: no quota
        r.allocator.requireQuota(cmd("rhea-new"), null);
        assertThat(calls(KubeApiCall.PODS_PATCH)).as("the check writes nothing").isEqualTo(patches);
        assertThat(r.carriers(cmd("rhea-new").keyHash())).isEmpty();
    }

    @Test
    void withoutAQuotaTheCheckBeforeWaitingRefusesNobody() throws Exception {
        r = new ScriptedReplica(3, 0);
        String owner = Hashes.ownerHash("sol");
        r.allocator.allocate(cmd("sol-1"), owner);
        r.allocator.allocate(cmd("sol-2"), owner);
        long lists = calls(KubeApiCall.PODS_LIST);
        r.allocator.requireQuota(cmd("sol-3"), owner);
        assertThat(calls(KubeApiCall.PODS_LIST)).as("nothing to count").isEqualTo(lists);
    }

    @Test
    void theWaitingQueueKnowsAStandingClaimOnlyWhenItStandsAndIsNotBeingDeleted() throws Exception {
        r = new ScriptedReplica(2, 0);
        AllocCommand key = cmd("standing");
        assertThat(r.allocator.knowsStandingClaim(key.keyHash())).as("no claim yet").isFalse();
        Pod held = r.cluster.create(TestCluster.readyRunner("amd64", 51901, NODE).editMetadata()
                .addToFinalizers("test/hold").endMetadata());
        r.claimElsewhere(ManagedPods.name(held), key, null);
        assertThat(r.allocator.knowsStandingClaim(key.keyHash())).isTrue();
        // a later claim of the key on another pod is lost; the first still stands
        r.claimElsewhere(runner(0), key, null);
        assertThat(r.pods.claimOn(runner(0)).orElseThrow().standing()).isEqualTo(ClaimLedger.Standing.LOST);
        assertThat(r.allocator.knowsStandingClaim(key.keyHash())).isTrue();
        // the standing claim's pod is being deleted (a finalizer holds it): what is left is a lost claim
        r.cluster.client.pods().inNamespace(TestCluster.NS).withName(ManagedPods.name(held)).delete();
        assertThat(ManagedPods.isTerminating(r.pods.get(ManagedPods.name(held)).orElseThrow())).isTrue();
        assertThat(r.pods.claimOn(ManagedPods.name(held)).orElseThrow().stands()).isTrue();
        assertThat(r.allocator.knowsStandingClaim(key.keyHash())).isFalse();
    }

    // ---- release and dealloc

    @Test
    void aClaimWhoseClientVanishedGoesBackUnlessItWasHandedOutAgain() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand gone = cmd("client-gone");
        Allocator.Allocation a = r.allocator.allocate(gone);
        assertThat(r.allocator.release(a, gone)).isTrue();
        assertThat(r.carriers(gone.keyHash())).isEmpty();

        AllocCommand kept = cmd("handed-out-again");
        Allocator.Allocation first = r.allocator.allocate(kept);
        Allocator.Allocation replay = r.allocator.allocate(kept);
        long patches = calls(KubeApiCall.PODS_PATCH);
        assertThat(r.allocator.release(replay, kept)).as("a replay is never taken back").isFalse();
        assertThat(calls(KubeApiCall.PODS_PATCH)).isEqualTo(patches);
        assertThat(r.allocator.release(first, kept)).as("settled by the replay").isFalse();
        assertThat(r.carriers(kept.keyHash())).containsExactly(name(first));
    }

    @Test
    void aDeallocDeletesEveryPodTheApiServerShowsWithTheKey() throws Exception {
        r = new ScriptedReplica(5, 0);
        AllocCommand key = cmd("dealloc");
        Allocator.Allocation a = r.allocator.allocate(key);
        // a second carrier this replica's watch has not delivered (a writer that died before its rollback)
        r.watch.hold();
        r.claimElsewhere(runner(4).equals(name(a)) ? runner(3) : runner(4), key, null);
        List<Pod> deleted = r.allocator.deallocate(key.keyHash());
        assertThat(deleted).hasSize(2);
        assertThat(r.carriers(key.keyHash())).isEmpty();
        assertThat(r.pods.get(name(a))).isEmpty();
        assertThat(calls(KubeApiCall.PODS_DELETE)).isEqualTo(2);
        assertThat(calls(KubeApiCall.PODS_LIST)).as("listed until none is left").isEqualTo(2);
        r.watch.release();
        assertThat(r.allocator.deallocate(key.keyHash())).isEmpty();
        assertThat(calls(KubeApiCall.PODS_LIST)).isEqualTo(3);
        assertThat(calls(KubeApiCall.PODS_DELETE)).isEqualTo(2);
    }

    @Test
    void aDeallocLeavesAPodAlreadyBeingDeletedToThatDelete() throws Exception {
        r = new ScriptedReplica(3, 0);
        AllocCommand key = cmd("terminating-carrier");
        Pod held = r.cluster.create(TestCluster.readyRunner("amd64", 51900, NODE).editMetadata()
                .addToFinalizers("test/hold").endMetadata());
        r.claimElsewhere(ManagedPods.name(held), key, null);
        r.cluster.client.pods().inNamespace(TestCluster.NS).withName(ManagedPods.name(held)).delete();
        assertThat(r.allocator.deallocate(key.keyHash())).isEmpty();
        assertThat(calls(KubeApiCall.PODS_DELETE)).isZero();
    }

    @Test
    void aDeallocCountsOnlyThePodsItDeleted() throws Exception {
        r = new ScriptedReplica(3, 0);
        AllocCommand key = cmd("deleted-by-someone-else");
        Allocator.Allocation a = r.allocator.allocate(key);
        // the first delete finds the pod gone (another delete got there first, as far as this call can tell); the
        // next LIST still shows it, and the second delete is this call's
        r.cluster.server.expect().delete().withPath(podPath(name(a))).andReturn(404, "{\"kind\":\"Status\",\"code\":404}")
                .once();
        assertThat(r.allocator.deallocate(key.keyHash())).extracting(ManagedPods::name).containsExactly(name(a));
        assertThat(calls(KubeApiCall.PODS_DELETE)).isEqualTo(2);
        assertThat(r.carriers(key.keyHash())).isEmpty();
    }

    @Test
    void aDeallocWhosePodsKeepChangingGivesUpWith503() throws Exception {
        r = new ScriptedReplica(3, 0);
        AllocCommand key = cmd("restless");
        Allocator.Allocation a = r.allocator.allocate(key);
        r.cluster.server.expect().delete().withPath(podPath(name(a))).andReturn(404, "{\"kind\":\"Status\",\"code\":404}")
                .times(5);
        ApiException e = catchThrowableOfType(ApiException.class, () -> r.allocator.deallocate(key.keyHash()));
        assertThat(e.code()).isEqualTo(503);
        assertThat(e.getMessage()).isEqualTo("the pods of this idempotency key kept changing while they were deleted; "
                + "try again");
        assertThat(e.headers()).containsEntry("Retry-After", "1");
        assertThat(calls(KubeApiCall.PODS_DELETE)).isEqualTo(5);
        assertThat(calls(KubeApiCall.PODS_LIST)).isEqualTo(5);
    }

    @Test
    void aDeallocSkipsAPodThatTurnsOutToBeAnotherKeys() throws Exception {
        r = new ScriptedReplica(3, 0);
        AllocCommand key = cmd("skipped");
        Allocator.Allocation a = r.allocator.allocate(key);
        Pod others = new PodBuilder(a.pod()).editMetadata().addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH,
                cmd("someone").keyHash()).endMetadata().build();
        r.cluster.server.expect().delete().withPath(podPath(name(a))).andReturn(409, "{\"kind\":\"Status\",\"code\":409}")
                .once();
        r.cluster.server.expect().get().withPath(podPath(name(a))).andReturn(200, others).once();
        List<Pod> deleted = r.allocator.deallocate(key.keyHash());
        // skipped once, then (it is in fact still the key's) deleted on the next round
        assertThat(deleted).extracting(ManagedPods::name).containsExactly(name(a));
        assertThat(calls(KubeApiCall.PODS_DELETE)).isEqualTo(2);
    }

    @Test
    void aGuardedDeallocLeavesThePodsTheGuardRejects() throws Exception {
        r = new ScriptedReplica(5, 0);
        AllocCommand key = cmd("guarded");
        Allocator.Allocation a = r.allocator.allocate(key);
        String other = runner(4).equals(name(a)) ? runner(3) : runner(4);
        r.claimElsewhere(other, key, null);
        List<Pod> deleted = r.allocator.deallocate(key.keyHash(), p -> !name(a).equals(ManagedPods.name(p)));
        assertThat(deleted).extracting(ManagedPods::name).containsExactly(other);
        assertThat(r.carriers(key.keyHash())).containsExactly(name(a));
        assertThat(calls(KubeApiCall.PODS_DELETE)).isEqualTo(1);
    }

    @Test
    void aGuardedDeallocTestsTheGuardAgainOnThePodItFindsChanged() throws Exception {
        r = new ScriptedReplica(3, 0);
        AllocCommand key = cmd("guard-again");
        Allocator.Allocation a = r.allocator.allocate(key);
        // the conditional delete finds the pod changed; the fresh read shows it claimed again (another uid)
        Pod reclaimed = new PodBuilder(a.pod()).editMetadata().withUid("another-uid").endMetadata().build();
        r.cluster.server.expect().delete().withPath(podPath(name(a))).andReturn(409, "{\"kind\":\"Status\",\"code\":409}")
                .once();
        r.cluster.server.expect().get().withPath(podPath(name(a))).andReturn(200, reclaimed).once();
        String readUid = a.pod().getMetadata().getUid();
        java.util.function.Predicate<Pod> sameUid = p -> {
            if (!readUid.equals(p.getMetadata().getUid())) {
                throw ApiException.conflict("not the one read");
            }
            return true;
        };
        ApiException e = catchThrowableOfType(ApiException.class,
                () -> r.allocator.deallocate(key.keyHash(), sameUid));
        assertThat(e.code()).isEqualTo(409);
        assertThat(calls(KubeApiCall.PODS_DELETE)).isEqualTo(1);
        assertThat(r.carriers(key.keyHash())).containsExactly(name(a));
    }

    // ---- not synced

    @Test
    void nothingIsHandedOutOrDeletedBeforeBothCachesHaveSynced() throws Exception {
        r = new ScriptedReplica(2, 0);
        ScriptedWatch idle = new ScriptedWatch(TestCluster.NS);
        PodCache unsynced = new PodCache(idle.client(), TestCluster.NS, r.candidates::kindKey);
        NodeCache unstarted = new NodeCache(r.cluster.client);
        Allocator podsBehind = new Allocator(unsynced, r.nodes, r.writer, r.candidates, 4);
        Allocator nodesBehind = new Allocator(r.pods, unstarted, r.writer, r.candidates, 4);
        for (Allocator a : List.of(podsBehind, nodesBehind)) {
            for (Runnable call : List.<Runnable>of(() -> a.allocate(cmd("early")), () -> a.replay(cmd("early")),
                    () -> a.tryAllocate(cmd("early"), null))) {
                ApiException e = catchThrowableOfType(ApiException.class, call::run);
                assertThat(e.code()).isEqualTo(503);
                assertThat(e.getMessage()).isEqualTo("the operator's pod and node caches are not synced yet; nothing"
                        + " was done, try again");
                assertThat(e.headers()).containsEntry("Retry-After", "4");
            }
        }
        // a dealloc needs the pods alone
        ApiException e = catchThrowableOfType(ApiException.class, () -> podsBehind.deallocate(cmd("early").keyHash()));
        assertThat(e.code()).isEqualTo(503);
        assertThat(e.getMessage()).isEqualTo("the operator's pod cache is not synced yet; nothing was released, try"
                + " again");
        assertThat(e.headers()).containsEntry("Retry-After", "4");
        assertThat(calls(KubeApiCall.PODS_PATCH) + calls(KubeApiCall.PODS_LIST)).isZero();
        assertThat(nodesBehind.deallocate(cmd("early").keyHash())).as("nothing held, nothing deleted").isEmpty();
        assertThat(r.allocator.resolver().standing(cmd("early").keyHash(), true, System.nanoTime() + 1_000_000_000L))
                .isEmpty();
    }
}
