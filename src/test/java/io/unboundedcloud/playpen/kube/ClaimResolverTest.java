package io.unboundedcloud.playpen.kube;

import static io.unboundedcloud.playpen.kube.ScriptedReplica.PODS;
import static io.unboundedcloud.playpen.kube.ScriptedReplica.cmd;
import static io.unboundedcloud.playpen.kube.ScriptedReplica.podPath;
import static io.unboundedcloud.playpen.kube.ScriptedReplica.runner;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.kube.ClaimLedger.Standing;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.OwnerHashes;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * Finding a key's standing claim as the API server has it now: the pod is read before it is named; claims this
 * replica's watch has not delivered are asked of the API server only when the caller says so; undecided claims are
 * settled with a conditional write only when the API server shows one live carrier within its quota; and a wait
 * for the watch ends at the deadline with a 503 that says nothing was handed out.
 */
class ClaimResolverTest {
    /** Far enough for any answer; a broken rule fails at this deadline (503) rather than at a test timeout. */
    private static final long FAR = TimeUnit.SECONDS.toNanos(5);
    private ScriptedReplica r;

    @AfterEach
    void stop() {
        if (r != null) {
            r.close();
        }
    }

    private ClaimResolver resolver() {
        return new ClaimResolver(r.pods, r.writer, 7);
    }

    private static long deadline(long nanos) {
        return System.nanoTime() + nanos;
    }

    private long calls(KubeApiCall c) {
        return r.calls.get(c);
    }

    @Test
    void aKeyThisReplicaKnowsNoClaimOfIsAskedOfTheApiServerOnlyWhenTheCallerSaysSo() throws Exception {
        r = new ScriptedReplica(4, 0);
        ClaimResolver resolver = resolver();
        assertThat(resolver.standing(cmd("none").keyHash(), false, deadline(FAR))).isEmpty();
        assertThat(calls(KubeApiCall.PODS_LIST) + calls(KubeApiCall.PODS_GET)).isZero();
        assertThat(resolver.standing(cmd("none").keyHash(), true, deadline(FAR))).isEmpty();
        assertThat(calls(KubeApiCall.PODS_LIST)).isEqualTo(1);
    }

    @Test
    void aClaimThisReplicasWatchHasNotDeliveredIsFoundThroughTheApiServerAndJudgedOnceDelivered() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("made-elsewhere");
        r.watch.hold();
        r.claimElsewhere(runner(2), key, null);
        assertThat(resolver().standing(key.keyHash(), false, deadline(FAR))).as("an alloc does not ask").isEmpty();
        // the watch catches up as the API server answers the LIST
        r.releaseOnAnswer("GET", PODS + "?");
        Optional<ClaimResolver.Standing> found = resolver().standing(key.keyHash(), true, deadline(FAR));
        assertThat(found).isPresent();
        assertThat(found.get().claim().pod()).isEqualTo(runner(2));
        assertThat(found.get().claim().standing()).isEqualTo(Standing.WON);
        assertThat(found.get().pod().getMetadata().getResourceVersion())
                .isEqualTo(r.inApi(runner(2)).getMetadata().getResourceVersion());
        assertThat(calls(KubeApiCall.PODS_LIST)).isEqualTo(1);
        assertThat(calls(KubeApiCall.PODS_GET)).isEqualTo(1);
    }

    /** {@code key}'s claim on runner 1, renewed to {@code expiresAt} while this replica's watch is held. */
    private Pod renewedWhileTheWatchIsHeld(AllocCommand key, String expiresAt) throws Exception {
        r = new ScriptedReplica(4, 0);
        r.claimElsewhere(runner(1), key, null);
        r.watch.hold();
        return r.edit(runner(1), b -> b.editMetadata().addToAnnotations(PlaypenKeys.EXPIRES_AT, expiresAt)
                .endMetadata());
    }

    @Test
    void aStandingClaimIsNamedAsTheApiServerHasItNow() throws Exception {
        AllocCommand key = cmd("renewed");
        Pod renewed = renewedWhileTheWatchIsHeld(key, "2026-01-01T05:00:00Z");
        // the version read is trusted to be the same claim once this replica's watch has applied it too
        r.releaseOnAnswer("GET", podPath(runner(1)));
        ClaimResolver.Standing s = resolver().standing(key.keyHash(), false, deadline(FAR)).orElseThrow();
        assertThat(s.pod().getMetadata().getResourceVersion()).isEqualTo(renewed.getMetadata().getResourceVersion());
        assertThat(ManagedPods.annotations(s.pod())).containsEntry(PlaypenKeys.EXPIRES_AT, "2026-01-01T05:00:00Z");
        // and this replica's cache knows that version from then on
        assertThat(r.pods.get(runner(1))).contains(s.pod());
    }

    @Test
    void theVersionReadIsInThisReplicasCacheWhileTheClaimWaitsForALaggingWatch() throws Exception {
        AllocCommand key = cmd("renewed-while-lagging");
        Pod renewed = renewedWhileTheWatchIsHeld(key, "2026-01-01T06:00:00Z");
        // the claim is judged once the watch has applied the version read; meanwhile the other requests of this
        // replica already see that version, not the older one the watch last delivered
        java.util.concurrent.CompletableFuture<Optional<ClaimResolver.Standing>> standing =
                ScriptedReplica.waitingForTheWatch(() -> resolver().standing(key.keyHash(), false, deadline(FAR)));
        assertThat(r.pods.get(runner(1)).orElseThrow().getMetadata().getResourceVersion())
                .isEqualTo(renewed.getMetadata().getResourceVersion());
        r.watch.release();
        ClaimResolver.Standing s = standing.get(FAR, TimeUnit.NANOSECONDS).orElseThrow();
        assertThat(s.pod().getMetadata().getResourceVersion()).isEqualTo(renewed.getMetadata().getResourceVersion());
    }

    @Test
    void aStandingClaimWhosePodIsGoneIsNotNamed() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("deallocated-elsewhere");
        r.claimElsewhere(runner(1), key, null);
        r.watch.hold();
        r.cluster.client.pods().inNamespace(TestCluster.NS).withName(runner(1)).delete();
        r.releaseOnAnswer("GET", podPath(runner(1)));
        assertThat(resolver().standing(key.keyHash(), false, deadline(FAR))).isEmpty();
        assertThat(r.pods.get(runner(1))).isEmpty();
        assertThat(calls(KubeApiCall.PODS_GET)).isEqualTo(1);
    }

    @Test
    void aStandingClaimReplacedOnItsPodIsNotNamed() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("replaced");
        r.claimElsewhere(runner(1), key, null);
        r.watch.hold();
        // rolled back and claimed by another key meanwhile
        r.claimElsewhere(runner(1), cmd("another"), null);
        r.releaseOnAnswer("GET", podPath(runner(1)));
        assertThat(resolver().standing(key.keyHash(), false, deadline(FAR))).isEmpty();
        assertThat(ManagedPods.keyHash(r.pods.get(runner(1)).orElseThrow())).isEqualTo(cmd("another").keyHash());
    }

    @Test
    void aStandingClaimWhosePodIsBeingDeletedIsNotNamed() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("terminating");
        Pod claimed = r.claimElsewhere(runner(1), key, null);
        Pod terminating = new io.fabric8.kubernetes.api.model.PodBuilder(claimed).editMetadata()
                .withDeletionTimestamp("2026-01-01T00:00:00Z").withResourceVersion(String.valueOf(
                        ClaimLedger.resourceVersion(claimed) + 100)).endMetadata().build();
        r.cluster.server.expect().get().withPath(podPath(runner(1))).andReturn(200, terminating).once();
        // the watch then delivers that version: the claim is no longer live, so the key has none
        r.cluster.addAnswerListener((m, path, answer) -> {
            if (m.equals("GET") && path.equals(podPath(runner(1)))) {
                r.watch.modified(terminating);
            }
        });
        assertThat(resolver().standing(key.keyHash(), false, deadline(FAR))).isEmpty();
    }

    @Test
    void anUndecidedClaimThatIsItsKeysOnlyCarrierIsSettledAndThenStands() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("relisted");
        r.watch.hold();
        r.claimElsewhere(runner(3), key, null);
        r.watch.forget();
        r.watch.gone();
        assertThat(r.pods.claimsOf(key.keyHash())).extracting(ClaimLedger.Claim::standing)
                .containsExactly(Standing.UNKNOWN);
        r.watch.release();
        ClaimResolver.Standing s = resolver().standing(key.keyHash(), false, deadline(FAR)).orElseThrow();
        assertThat(s.claim().standing()).isEqualTo(Standing.WON);
        assertThat(ClaimLedger.isSettled(s.pod())).isTrue();
        assertThat(ClaimLedger.isSettled(r.inApi(runner(3)))).isTrue();
        assertThat(calls(KubeApiCall.PODS_PATCH)).isEqualTo(1);
        assertThat(calls(KubeApiCall.PODS_LIST)).isEqualTo(1);
    }

    private void relistedClaims(AllocCommand key, String ownerHash, int... runners) throws Exception {
        r.watch.hold();
        for (int n : runners) {
            r.claimElsewhere(runner(n), key, ownerHash);
        }
        r.watch.forget();
        r.watch.gone();
        r.watch.release();
    }

    @Test
    void twoUndecidedCarriersAreLeftToTheirWritersUntilTheDeadline() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("doubled");
        relistedClaims(key, null, 0, 1);
        ApiException e = catchThrowableOfType(ApiException.class,
                () -> resolver().standing(key.keyHash(), false, deadline(TimeUnit.MILLISECONDS.toNanos(300))));
        assertThat(e.code()).isEqualTo(503);
        assertThat(e.getMessage()).isEqualTo("this operator replica's view of the pods is behind the API server, so "
                + "the claims of this idempotency key could not be confirmed in time; nothing was handed out, try again");
        assertThat(e.headers()).containsEntry("Retry-After", "7");
        assertThat(calls(KubeApiCall.PODS_PATCH)).as("neither is settled").isZero();
        assertThat(ClaimLedger.isSettled(r.inApi(runner(0)))).isFalse();
    }

    @Test
    void anUndecidedClaimOverItsOwnersQuotaIsNotSettled() throws Exception {
        r = new ScriptedReplica(4, 0);
        // two owners whose hashes share the 63 characters a label keeps: only the claim's own owner counts
        String owner = "ab".repeat(31) + "a0";
        String twin = "ab".repeat(31) + "a1";
        AllocCommand key = cmd("over-quota");
        relistedClaims(key, owner, 0);
        r.edit(runner(0), b -> b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_QUOTA, "1").endMetadata());
        r.claimElsewhere(runner(2), cmd("twin's"), twin);
        // within the quota of 1: the twin's claim does not count
        ClaimResolver.Standing s = resolver().standing(key.keyHash(), false, deadline(FAR)).orElseThrow();
        assertThat(ClaimLedger.isSettled(s.pod())).isTrue();

        AllocCommand second = cmd("over-quota-2");
        relistedClaims(second, owner, 1);
        r.edit(runner(1), b -> b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_QUOTA, "1").endMetadata());
        long patches = calls(KubeApiCall.PODS_PATCH);
        ApiException e = catchThrowableOfType(ApiException.class,
                () -> resolver().standing(second.keyHash(), false, deadline(TimeUnit.MILLISECONDS.toNanos(300))));
        assertThat(e.code()).isEqualTo(503);
        assertThat(calls(KubeApiCall.PODS_PATCH)).isEqualTo(patches);
        assertThat(ClaimLedger.isSettled(r.inApi(runner(1)))).isFalse();
    }

    @Test
    void anUndecidedClaimIsNotSettledOverAQuotaFilledByAClaimThatPredatesTheOwnerLabel() throws Exception {
        r = new ScriptedReplica(4, 0);
        String owner = Hashes.ownerHash("dave");
        // an allocation the owner holds from before claims carried the owner label: the annotation alone
        r.claimElsewhere(runner(2), cmd("dave-old"), owner);
        r.edit(runner(2), b -> b.editMetadata().removeFromLabels(PlaypenKeys.OWNER_HASH_LABEL).endMetadata());
        AllocCommand key = cmd("dave-new");
        relistedClaims(key, owner, 0);
        r.edit(runner(0), b -> b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_QUOTA, "1").endMetadata());
        assertUndecidedAndUnsettled(key);
    }

    /**
     * The owner holds a claim written with the legacy (unkeyed) owner hash by a replica of the previous version, not
     * moved to the keyed hash (its move met a change three times); the owner asked this replica, so it knows the
     * owner's two hashes. An undecided claim of the owner made after it, under a quota of 1, is not settled: the
     * settle's count from the API server lists the legacy hash too.
     */
    @Test
    void anUndecidedClaimIsNotSettledOverAQuotaFilledByAClaimUnderTheLegacyOwnerHash() throws Exception {
        r = new ScriptedReplica(4, 0);
        OwnerHashes.Owner erin = LegacyOwnerClaimsTest.OWNERS.of("erin");
        r.claimElsewhere(runner(2), cmd("erin-old"), erin.legacy());
        AllocCommand key = cmd("erin-new");
        relistedClaims(key, erin.current(), 0);
        r.edit(runner(0), b -> b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_QUOTA, "1").endMetadata());
        r.pods.recordLegacyOwnerHash(erin.current(), erin.legacy());
        assertUndecidedAndUnsettled(key);
    }

    /**
     * Under a quota of 1, alice's claim under the keyed hash stands (runner 2); a replica of the previous version
     * claimed another key for her under the legacy hash, counting that hash only, and answered it (runner 0). Her
     * next request moved it to the keyed hash. A replay of it through a replica that first saw it in a LIST settles
     * it and answers: its writer judged it beside the owner's legacy claims, and the keyed claim was never counted
     * against it. Before, the settle counted the keyed claim and the replay waited until its 503, again and again.
     */
    @Test
    void anUndecidedClaimMovedFromTheLegacyOwnerHashIsSettledBesideAKeyedClaimItWasNeverCountedAgainst()
            throws Exception {
        AllocCommand previous = cmd("alice-by-the-previous-version");
        alicesClaimThenAListedLegacyOneMoved(true, previous);

        ClaimResolver.Standing s = resolver().standing(previous.keyHash(), false, deadline(FAR)).orElseThrow();
        assertThat(s.pod().getMetadata().getName()).isEqualTo(runner(0));
        assertThat(ClaimLedger.isSettled(s.pod())).isTrue();
        assertThat(ClaimLedger.isSettled(r.inApi(runner(0)))).isTrue();
    }

    /**
     * Two legacy claims of alice under a quota of 1, both moved to the keyed hash: the previous version's writer
     * judged the later one over the quota (it counted the earlier one, under the legacy hash), so it was never
     * answered. Undecided here, it is not settled: the settle of a moved claim counts the owner's claims that were
     * under the legacy hash, as its writer did.
     */
    @Test
    void anUndecidedMovedClaimIsNotSettledOverAQuotaFilledByAnotherMovedClaim() throws Exception {
        AllocCommand key = cmd("alice-second");
        alicesClaimThenAListedLegacyOneMoved(false, key);
        assertUndecidedAndUnsettled(key);
    }

    /**
     * Under a quota of 1: alice's claim on runner 2, under the keyed hash when {@code keyed}, else under the legacy
     * one, which this replica's watch judges; then her claim of {@code key} on runner 0 under the legacy hash, which
     * this replica first sees in a LIST (undecided here); then her next request moves her legacy claims to the keyed
     * hash.
     */
    private void alicesClaimThenAListedLegacyOneMoved(boolean keyed, AllocCommand key) throws Exception {
        r = new ScriptedReplica(4, 0);
        OwnerHashes.Owner alice = LegacyOwnerClaimsTest.ALICE;
        r.claimElsewhere(runner(2), cmd("alice-first"), keyed ? alice.current() : alice.legacy());
        r.edit(runner(2), b -> b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_QUOTA, "1").endMetadata());
        relistedClaims(key, alice.legacy(), 0);
        r.edit(runner(0), b -> b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_QUOTA, "1").endMetadata());
        assertThat(new LegacyOwnerClaims(r.cluster.client, r.pods, r.calls).adopt(alice)).isEqualTo(keyed ? 1 : 2);
        OperatorHarness.awaitTrue(() -> r.pods.byOwnerHash(alice.legacy()).isEmpty(), java.time.Duration.ofSeconds(60),
                "the legacy claims moved");
    }

    /**
     * The key's undecided claim on runner 0, under a quota of 1 its owner's other claim fills, is not settled: the
     * key's look waits and ends in a 503, and nothing is written.
     */
    private void assertUndecidedAndUnsettled(AllocCommand key) throws Exception {
        long patches = calls(KubeApiCall.PODS_PATCH);
        ApiException e = catchThrowableOfType(ApiException.class,
                () -> resolver().standing(key.keyHash(), false, deadline(TimeUnit.MILLISECONDS.toNanos(300))));
        assertThat(ClaimLedger.isSettled(r.inApi(runner(0))))
                .as("two allocations of an owner whose quota is 1 would stand").isFalse();
        assertThat(e).isNotNull();
        assertThat(e.code()).isEqualTo(503);
        assertThat(calls(KubeApiCall.PODS_PATCH)).isEqualTo(patches);
    }

    /**
     * The owner's quota was raised since the claim was made (1 then, 3 now) and the owner holds a second allocation
     * made under the new one: the older claim, first seen in a LIST, is within the quota in force and is settled
     * (its replays and renewals would otherwise end in a 503 until it expired). A replica that does not know the
     * quota in force judges by the recorded one.
     */
    @Test
    void anUndecidedClaimWithinAQuotaRaisedSinceItWasMadeIsSettled() throws Exception {
        r = new ScriptedReplica(4, 0);
        String owner = Hashes.ownerHash("erin");
        AllocCommand key = cmd("erin-old");
        relistedClaims(key, owner, 0);
        r.edit(runner(0), b -> b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_QUOTA, "1").endMetadata());
        r.claimElsewhere(runner(1), cmd("erin-new"), owner);
        r.edit(runner(1), b -> b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_QUOTA, "3").endMetadata());

        assertUndecidedAndUnsettled(key);

        ClaimResolver.Standing s = new ClaimResolver(r.pods, r.writer, 7, 3).standing(key.keyHash(), false,
                deadline(FAR)).orElseThrow();
        assertThat(ClaimLedger.isSettled(s.pod())).isTrue();
        assertThat(s.pod().getMetadata().getName()).isEqualTo(runner(0));
    }

    /** A quota lowered since the claim was made (3 then, 1 now) keeps the claim it let stand. */
    @Test
    void anUndecidedClaimWithinTheQuotaItWasMadeUnderIsSettledAfterTheQuotaWasLowered() throws Exception {
        r = new ScriptedReplica(4, 0);
        String owner = Hashes.ownerHash("frank");
        AllocCommand key = cmd("frank-old");
        relistedClaims(key, owner, 0);
        r.edit(runner(0), b -> b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_QUOTA, "3").endMetadata());
        r.claimElsewhere(runner(1), cmd("frank-other"), owner);

        ClaimResolver.Standing s = new ClaimResolver(r.pods, r.writer, 7, 1).standing(key.keyHash(), false,
                deadline(FAR)).orElseThrow();
        assertThat(ClaimLedger.isSettled(s.pod())).isTrue();
    }

    @Test
    void theQuotaCountsOnlyTheOwnersLiveClaims() throws Exception {
        r = new ScriptedReplica(5, 0);
        String owner = Hashes.ownerHash("carol");
        AllocCommand key = cmd("quota-two");
        relistedClaims(key, owner, 0);
        r.edit(runner(0), b -> b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_QUOTA, "2").endMetadata());
        // a second claim of the owner: two of two, within the quota
        r.claimElsewhere(runner(1), cmd("carol-2"), owner);
        // a pod labelled for the owner whose claim was taken off: not a claim
        r.edit(runner(2), b -> b.editMetadata().addToLabels(PlaypenKeys.OWNER_HASH_LABEL, ClaimWriter.labelValue(owner))
                .addToAnnotations(PlaypenKeys.OWNER_HASH, owner).endMetadata());
        ClaimResolver.Standing s = resolver().standing(key.keyHash(), false, deadline(FAR)).orElseThrow();
        assertThat(ClaimLedger.isSettled(s.pod())).isTrue();
        assertThat(s.pod().getMetadata().getName()).isEqualTo(runner(0));
    }

    @Test
    void anUndecidedClaimTheApiServerNoLongerShowsIsWaitedOutUntilTheWatchSaysSo() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("rolled-back");
        relistedClaims(key, null, 2);
        r.watch.hold();
        // rolled back by its writer; this replica's watch has not delivered it yet
        r.writer.rollback(r.inApi(runner(2)), key.keyHash());
        r.releaseOnAnswer("GET", PODS + "?");
        assertThat(resolver().standing(key.keyHash(), false, deadline(FAR))).isEmpty();
        assertThat(r.pods.claimsOf(key.keyHash())).isEmpty();
        assertThat(calls(KubeApiCall.PODS_PATCH)).as("the rollback only").isEqualTo(1);
    }

    @Test
    void aSettleThatMeetsAChangeJudgesAgain() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("settle-conflict");
        relistedClaims(key, null, 1);
        r.cluster.server.expect().patch().withPath(podPath(runner(1))).andReturn(409,
                "{\"kind\":\"Status\",\"code\":409,\"message\":\"modified\"}").once();
        ClaimResolver.Standing s = resolver().standing(key.keyHash(), false, deadline(FAR)).orElseThrow();
        assertThat(ClaimLedger.isSettled(s.pod())).isTrue();
        assertThat(calls(KubeApiCall.PODS_PATCH)).isEqualTo(2);
        assertThat(calls(KubeApiCall.PODS_LIST)).isEqualTo(2);

        AllocCommand gone = cmd("settle-gone");
        relistedClaims(gone, null, 2);
        r.cluster.server.expect().patch().withPath(podPath(runner(2))).andReturn(404,
                "{\"kind\":\"Status\",\"code\":404,\"message\":\"not found\"}").once();
        assertThat(resolver().standing(gone.keyHash(), false, deadline(FAR))).isPresent();
    }

    @Test
    void aSettleTheApiServerRefusesIsAnError() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("settle-forbidden");
        relistedClaims(key, null, 1);
        r.cluster.forbidden = k -> k.equals("PATCH " + podPath(runner(1)));
        KubernetesClientException e = catchThrowableOfType(KubernetesClientException.class,
                () -> resolver().standing(key.keyHash(), false, deadline(FAR)));
        assertThat(e.getCode()).isEqualTo(403);
    }

    @Test
    void aKeyWhoseOnlyClaimsLostWaitsForTheirWritersUntilTheDeadline() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("lost-only");
        r.claimElsewhere(runner(0), key, null);
        r.claimElsewhere(runner(1), key, null);
        // the standing one is deleted: only the lost one is left
        r.cluster.client.pods().inNamespace(TestCluster.NS).withName(runner(0)).delete();
        assertThat(r.pods.claimsOf(key.keyHash())).extracting(ClaimLedger.Claim::standing)
                .containsExactly(Standing.LOST);
        ApiException e = catchThrowableOfType(ApiException.class,
                () -> resolver().standing(key.keyHash(), true, deadline(TimeUnit.MILLISECONDS.toNanos(300))));
        assertThat(e.code()).isEqualTo(503);
        assertThat(calls(KubeApiCall.PODS_GET) + calls(KubeApiCall.PODS_LIST) + calls(KubeApiCall.PODS_PATCH)).isZero();
    }

    @Test
    void aKeyWhoseLostClaimIsRolledBackHasNone() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("lost-then-rolled-back");
        r.claimElsewhere(runner(0), key, null);
        r.claimElsewhere(runner(1), key, null);
        r.cluster.client.pods().inNamespace(TestCluster.NS).withName(runner(0)).delete();
        Pod lost = r.inApi(runner(1));
        CompletableFuture<Optional<ClaimResolver.Standing>> waiting = ScriptedReplica.waitingForTheWatch(
                () -> resolver().standing(key.keyHash(), false, deadline(FAR)));
        r.writer.rollback(lost, key.keyHash());
        assertThat(waiting.get(20, TimeUnit.SECONDS)).isEmpty();
    }

    // ---- pin

    @Test
    void pinSettlesAClaimOnceAndOnlyOnTheVersionItRead() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("pinned");
        Pod claimed = r.claimElsewhere(runner(0), key, null);
        ClaimResolver resolver = resolver();
        Pod pinned = resolver.pin(claimed).orElseThrow();
        assertThat(ClaimLedger.isSettled(pinned)).isTrue();
        assertThat(r.pods.get(runner(0))).contains(pinned);
        assertThat(resolver.pin(pinned)).contains(pinned);
        assertThat(calls(KubeApiCall.PODS_PATCH)).as("settled once").isEqualTo(1);
        // a version that is not the current one: 409, judge again
        assertThat(resolver.pin(claimed)).isEmpty();
        // a pod that is gone: 404, judge again
        r.cluster.client.pods().inNamespace(TestCluster.NS).withName(runner(0)).delete();
        assertThat(resolver.pin(claimed)).isEmpty();
        assertThat(calls(KubeApiCall.PODS_PATCH)).isEqualTo(3);
        // refused: an error
        Pod other = r.claimElsewhere(runner(1), cmd("refused"), null);
        r.cluster.forbidden = k -> k.startsWith("PATCH ");
        assertThat(catchThrowableOfType(KubernetesClientException.class, () -> resolver.pin(other)).getCode())
                .isEqualTo(403);
    }

    // ---- the wait itself

    @Test
    void aWaitPastTheDeadlineIsA503AtOnce() {
        ClaimResolver resolver = new ClaimResolver(null, null, 3);
        ApiException e = catchThrowableOfType(ApiException.class,
                () -> resolver.await(new CompletableFuture<String>(), System.nanoTime() - 1));
        assertThat(e.code()).isEqualTo(503);
        assertThat(e.headers()).containsEntry("Retry-After", "3");
        assertThat(resolver.await(CompletableFuture.completedFuture("done"), System.nanoTime() + FAR)).contains("done");
        assertThat(resolver.await(CompletableFuture.completedFuture(null), System.nanoTime() + FAR)).isEmpty();
        assertThat(resolver.await(CompletableFuture.failedFuture(new IllegalStateException("cancelled")),
                System.nanoTime() + FAR)).isEmpty();
    }

    @Test
    void aWaitReturnsEmptyAfterOneSliceSoTheCallerJudgesAgainAndThrowsOnlyAtTheDeadline() {
        ClaimResolver resolver = new ClaimResolver(null, null, 3);
        // a minute left: back after a slice with nothing (not a 503 at the deadline)
        assertThat(resolver.await(new CompletableFuture<String>(), System.nanoTime() + TimeUnit.SECONDS.toNanos(60)))
                .isEmpty();
        long shortDeadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(50);
        assertThat(catchThrowableOfType(ApiException.class,
                () -> resolver.await(new CompletableFuture<String>(), shortDeadline)).code()).isEqualTo(503);
        assertThat(System.nanoTime() - shortDeadline).as("not before the deadline").isGreaterThanOrEqualTo(0);
    }

    @Test
    void anInterruptedWaitIsA503AndKeepsTheInterrupt() {
        ClaimResolver resolver = new ClaimResolver(null, null, 3);
        Thread.currentThread().interrupt();
        try {
            ApiException e = catchThrowableOfType(ApiException.class,
                    () -> resolver.await(new CompletableFuture<String>(), System.nanoTime() + FAR));
            assertThat(e.code()).isEqualTo(503);
            // what to do: the replica is stopping, and sending the request again is safe
            assertThat(e.getMessage()).isEqualTo("interrupted: this operator replica is stopping; send the same request"
                    + " again, which is safe: another replica answers it");
            assertThat(e.headers()).containsEntry("Retry-After", "3");
            assertThat(Thread.currentThread().isInterrupted()).isTrue();
        } finally {
            Thread.interrupted();
        }
    }
}
