package io.unboundedcloud.playpen.kube;

import static io.unboundedcloud.playpen.kube.ScriptedReplica.cmd;
import static io.unboundedcloud.playpen.kube.ScriptedReplica.runner;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.OwnerHashes;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The leader's sweep of lost claims left behind (only after their grace, only while they still lost, never a
 * settled one), and the reads of allocations, listed from the API server and never showing a claim that lost.
 */
class LostClaimsAndReadsTest {
    private ScriptedReplica r;

    @AfterEach
    void stop() {
        if (r != null) {
            r.close();
        }
    }

    /** Two claims of {@code key}: the first stands, the second lost (its writer died before rolling it back). */
    private void standingAndLost(AllocCommand key, int standing, int lost) {
        r.claimElsewhere(runner(standing), key, null);
        r.claimElsewhere(runner(lost), key, null);
    }

    // ---- the sweep

    @Test
    void aLostClaimIsRolledBackOnceItsGraceHasPassedAndTheStandingOneStays() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("left-behind");
        standingAndLost(key, 0, 1);
        assertThat(new LostClaimSweeper(r.pods, r.writer, 0).sweep()).isEqualTo(1);
        assertThat(r.carriers(key.keyHash())).containsExactly(runner(0));
        Pod idle = r.inApi(runner(1));
        assertThat(ManagedPods.isClaimed(idle)).isFalse();
        assertThat(idle.getMetadata().getLabels()).doesNotContainKey(PlaypenKeys.KEY_HASH_LABEL);
        assertThat(r.pods.lostClaims()).isEmpty();
        assertThat(new LostClaimSweeper(r.pods, r.writer, 0).sweep()).isZero();
    }

    @Test
    void aLostClaimIsLeftToItsWriterForAFewSecondsOnly() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("writer-alive");
        standingAndLost(key, 0, 1);
        long[] now = {1_000};
        LostClaimSweeper sweeper = new LostClaimSweeper(r.pods, r.writer, LostClaimSweeper.GRACE_NANOS,
                () -> now[0]);
        assertThat(sweeper.sweep()).isZero();
        // the grace runs from the first sweep that saw the claim
        now[0] += TimeUnit.SECONDS.toNanos(5) - 1;
        assertThat(sweeper.sweep()).isZero();
        assertThat(r.carriers(key.keyHash())).containsExactly(runner(0), runner(1));
        assertThat(r.calls.get(KubeApiCall.PODS_PATCH)).isZero();
        // its writer died (or lags far behind): five seconds after the sweep first saw it, the pod is back
        now[0] += 1;
        assertThat(sweeper.sweep()).isEqualTo(1);
        assertThat(r.carriers(key.keyHash())).containsExactly(runner(0));
        assertThat(ManagedPods.isClaimed(r.inApi(runner(1)))).isFalse();
    }

    @Test
    void theSweepOfListedClaimsLeavesTheClaimsThisReplicaSawLose() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("watched-lose");
        standingAndLost(key, 0, 1);
        LostClaimSweeper sweeper = new LostClaimSweeper(r.pods, r.writer, 0);
        assertThat(sweeper.sweepListed()).isZero();
        assertThat(r.calls.get(KubeApiCall.PODS_PATCH)).isZero();
        assertThat(sweeper.sweep()).isEqualTo(1);
    }

    @Test
    void aSweepCountsOnlyTheClaimsItRolledBack() throws Exception {
        r = new ScriptedReplica(6, 0);
        AllocCommand settledKey = cmd("settled-meanwhile");
        standingAndLost(settledKey, 0, 1);
        AllocCommand goneKey = cmd("gone-meanwhile");
        standingAndLost(goneKey, 2, 3);
        AllocCommand plainKey = cmd("plain");
        standingAndLost(plainKey, 4, 5);
        assertThat(r.pods.lostClaims()).hasSize(3);
        r.watch.hold();
        // a settle reached the API server first (the watch has not delivered it): it stands, and stays
        r.writer.settle(r.inApi(runner(1)));
        // another one is already deleted
        r.cluster.client.pods().inNamespace(TestCluster.NS).withName(runner(3)).delete();
        assertThat(new LostClaimSweeper(r.pods, r.writer, 0).sweep()).isEqualTo(1);
        assertThat(r.carriers(settledKey.keyHash())).containsExactly(runner(0), runner(1));
        assertThat(r.carriers(plainKey.keyHash())).containsExactly(runner(4));
        r.watch.release();
    }

    @Test
    void aLostClaimWhosePodThisReplicaDeletedIsNotSwept() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("deleting");
        standingAndLost(key, 0, 1);
        r.pods.observeDeleted(runner(1));
        assertThat(new LostClaimSweeper(r.pods, r.writer, 0).sweep()).isZero();
        assertThat(r.calls.get(KubeApiCall.PODS_PATCH)).isZero();
    }

    /**
     * The lost claim was taken back and its key claimed on the pod again (another claim-id), and this process has
     * read the pod since (its watch has not delivered it yet): that is another claim, not the one that lost, so the
     * sweep leaves it to the watch's judgement and writes nothing.
     */
    @Test
    void aLostClaimWhosePodThisReplicaSawClaimedAgainIsNotSwept() throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd("claimed-again");
        standingAndLost(key, 0, 1);
        assertThat(r.pods.lostClaims()).extracting(l -> l.claim().pod()).containsExactly(runner(1));
        r.watch.hold();
        r.edit(runner(1), b -> b.editMetadata().removeFromAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH)
                .removeFromLabels(PlaypenKeys.KEY_HASH_LABEL).endMetadata());
        Pod again = r.edit(runner(1), b -> b.editMetadata().addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH,
                key.keyHash()).addToAnnotations(PlaypenKeys.CLAIM_ID, "0123abcd").endMetadata());
        r.pods.observe(again);
        assertThat(r.pods.lostClaims()).as("the lost claim is not on the pod as this process knows it").isEmpty();
        assertThat(new LostClaimSweeper(r.pods, r.writer, 0).sweep()).isZero();
        assertThat(r.calls.get(KubeApiCall.PODS_PATCH)).isZero();
        r.watch.release();
    }

    /**
     * {@code name}'s claim on runner 0, settled, and another claim of it on runner 1, undecided here after a relist
     * (its writer died before taking it back); the settled one stands.
     */
    private AllocCommand listedBesideSettled(String name) throws Exception {
        r = new ScriptedReplica(4, 0);
        AllocCommand key = cmd(name);
        r.claimElsewhere(runner(0), key, null);
        r.writer.settle(r.inApi(runner(0)));
        r.claimElsewhere(runner(1), key, null);
        relisted(1);
        assertThat(r.pods.claimOn(runner(0)).orElseThrow().stands()).as("the settled claim stands").isTrue();
        return key;
    }

    /**
     * A claim this replica first listed (undecided here) beside a settled claim of its key: a settle is written only
     * while no other live pod carries the key, so this claim was committed after it and lost. The listed sweep takes
     * it back after one LIST of the key's carriers, counts it, and leaves the settled claim on its pod.
     */
    @Test
    void anUndecidedClaimListedBesideASettledClaimOfItsKeyIsTakenBack() throws Exception {
        AllocCommand key = listedBesideSettled("listed-beside-settled");
        long lists = r.calls.get(KubeApiCall.PODS_LIST);
        assertThat(new LostClaimSweeper(r.pods, r.writer, 0).sweepListed()).isEqualTo(1);
        assertThat(r.calls.get(KubeApiCall.PODS_LIST)).as("one LIST of the key's carriers").isEqualTo(lists + 1);
        assertThat(ManagedPods.isClaimed(r.inApi(runner(1)))).isFalse();
        assertThat(r.carriers(key.keyHash())).containsExactly(runner(0));
        assertThat(ClaimLedger.isSettled(r.inApi(runner(0)))).isTrue();
    }

    /**
     * A claim this replica first listed (undecided here) beside a settled claim of its key lost, and the listed sweep
     * takes it back; but once its pod carries another claim of the key (taken back and made again: another
     * claim-id), the undecided claim is gone and the new one is its writer's, or the watched sweep's after its grace:
     * the listed sweep leaves it.
     */
    @Test
    void theListedSweepLeavesAPodClaimedAgainSinceItListedIt() throws Exception {
        AllocCommand key = listedBesideSettled("listed-then-claimed-again");
        r.watch.hold();
        r.edit(runner(1), b -> b.editMetadata().removeFromAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH)
                .removeFromLabels(PlaypenKeys.KEY_HASH_LABEL).endMetadata());
        r.claimElsewhere(runner(1), key, null);
        r.edit(runner(1), b -> b.editMetadata().addToAnnotations(PlaypenKeys.CLAIM_ID, "0123abcd").endMetadata());
        assertListedSweepTakesNothingBack();
        assertThat(ClaimLedger.claimId(r.inApi(runner(1)))).isEqualTo("0123abcd");
        r.watch.release();
    }

    /** {@code pod} claimed for {@code key} by {@code owner} under a quota of {@code quota}, as another replica would. */
    private void claimUnderQuota(int pod, AllocCommand key, String owner, int quota) {
        r.claimElsewhere(runner(pod), key, owner);
        r.edit(runner(pod), b -> b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_QUOTA, String.valueOf(quota))
                .endMetadata());
    }

    /** The watch relists: every unsettled claim is undecided here, as after a restart. */
    private void relisted(int... undecided) throws Exception {
        r.watch.gone();
        OperatorHarness.awaitTrue(() -> java.util.Arrays.stream(undecided).allMatch(n -> r.pods.claimOn(runner(n))
                .map(c -> c.standing() == ClaimLedger.Standing.UNKNOWN).orElse(false)),
                java.time.Duration.ofSeconds(60), "the relist: the unsettled claims are undecided");
    }

    /**
     * A claim that lost to its owner's quota, left behind by a writer that died, and undecided on this replica (it
     * relisted, as after a restart): the owner's settled claims already fill the quota it records, and a settled
     * claim stands, so it cannot have stood; the listed sweep takes it back, and leaves the settled one.
     */
    @Test
    void anUndecidedClaimBesideSettledClaimsThatFillItsOwnersQuotaIsTakenBack() throws Exception {
        r = new ScriptedReplica(4, 0);
        String owner = Hashes.ownerHash("hana");
        AllocCommand held = cmd("hana-1");
        AllocCommand over = cmd("hana-2");
        claimUnderQuota(0, held, owner, 1);
        r.writer.settle(r.inApi(runner(0)));
        claimUnderQuota(1, over, owner, 1);
        relisted(1);
        assertThat(r.pods.claimOn(runner(0)).orElseThrow().stands()).isTrue();
        long lists = r.calls.get(KubeApiCall.PODS_LIST);
        assertThat(new LostClaimSweeper(r.pods, r.writer, 0).sweepListed()).isEqualTo(1);
        assertThat(r.calls.get(KubeApiCall.PODS_LIST)).as("one LIST of the owner's claims").isEqualTo(lists + 1);
        assertThat(ManagedPods.isClaimed(r.inApi(runner(1)))).isFalse();
        assertThat(r.carriers(over.keyHash())).isEmpty();
        assertThat(r.carriers(held.keyHash())).containsExactly(runner(0));
    }

    /**
     * The owner's quota of 1 is filled by a claim this replica's watch judged standing at its commit (unsettled, but
     * that very claim: its claim-id); a claim of another key over that quota, whose commit this replica never
     * watched (it first listed it), cannot have stood beside it: the listed sweep takes it back, and leaves the one
     * that stood.
     */
    @Test
    void anUndecidedClaimBesideAClaimJudgedStandingHereThatFillsItsOwnersQuotaIsTakenBack() throws Exception {
        r = new ScriptedReplica(4, 0);
        String owner = Hashes.ownerHash("lea");
        AllocCommand held = cmd("lea-1");
        AllocCommand over = cmd("lea-2");
        Pod idle = r.inApi(runner(0));
        r.writer.claim(idle, idle.getMetadata().getResourceVersion(), held, owner, 1);
        assertThat(r.pods.claimOn(runner(0)).orElseThrow().stands()).as("judged standing at its commit").isTrue();
        r.watch.hold();
        Pod other = r.inApi(runner(1));
        r.writer.claim(other, other.getMetadata().getResourceVersion(), over, owner, 1);
        r.watch.forget();
        relisted(1);
        assertThat(r.pods.claimOn(runner(0)).orElseThrow().stands()).as("its verdict kept across the relist").isTrue();
        assertThat(ClaimLedger.isSettled(r.inApi(runner(0)))).isFalse();
        assertThat(new LostClaimSweeper(r.pods, r.writer, 0).sweepListed()).isEqualTo(1);
        assertThat(ManagedPods.isClaimed(r.inApi(runner(1)))).isFalse();
        assertThat(r.carriers(held.keyHash())).containsExactly(runner(0));
    }

    /** The listed sweep takes no claim back and writes nothing. */
    private void assertListedSweepTakesNothingBack() {
        long patches = r.calls.get(KubeApiCall.PODS_PATCH);
        assertThat(new LostClaimSweeper(r.pods, r.writer, 0).sweepListed()).as("claims taken back").isZero();
        assertThat(r.calls.get(KubeApiCall.PODS_PATCH)).isEqualTo(patches);
    }

    /**
     * A settled claim that records a larger quota than the undecided one may have been committed after it, under
     * the larger quota, while the undecided one stood: both may stand, so nothing is taken back.
     */
    @Test
    void aSettledClaimUnderALargerQuotaDoesNotProveTheUndecidedOneLost() throws Exception {
        assertLeftBesideSettled("kai", (key, owner) -> claimUnderQuota(1, key, owner, 2));
    }

    /**
     * {@code user}'s claim on runner 0 under a quota of 1, undecided here (relisted), beside their claim of another key
     * on runner 1 that {@code claimOther} makes and that is then settled: the listed sweep leaves the undecided one.
     */
    private void assertLeftBesideSettled(String user, java.util.function.BiConsumer<AllocCommand, String> claimOther)
            throws Exception {
        r = new ScriptedReplica(4, 0);
        String owner = Hashes.ownerHash(user);
        claimUnderQuota(0, cmd(user + "-1"), owner, 1);
        claimOther.accept(cmd(user + "-2"), owner);
        r.writer.settle(r.inApi(runner(1)));
        relisted(0);
        assertListedSweepTakesNothingBack();
        assertThat(r.carriers(cmd(user + "-1").keyHash())).containsExactly(runner(0));
    }

    /**
     * Under a quota of 2: one settled claim, and two claims of other keys undecided here. The settled one and either
     * undecided one fill the quota, but an undecided claim is no standing one: the LIST cannot tell which of the two
     * was committed last, and the other may have been answered, so neither is taken back.
     */
    @Test
    void anUndecidedClaimIsNotCountedAsStandingAgainstAnotherOne() throws Exception {
        r = new ScriptedReplica(4, 0);
        String owner = Hashes.ownerHash("nia");
        claimUnderQuota(0, cmd("nia-1"), owner, 2);
        r.writer.settle(r.inApi(runner(0)));
        // made by writers this replica's watch never saw (each with its claim-id), then listed here
        r.watch.hold();
        for (int n : new int[] {1, 2}) {
            claimUnderQuota(n, cmd("nia-" + (n + 1)), owner, 2);
            r.edit(runner(n), p -> p.editMetadata().addToAnnotations(PlaypenKeys.CLAIM_ID, "c" + n).endMetadata());
        }
        r.watch.forget();
        relisted(1, 2);
        assertListedSweepTakesNothingBack();
        assertThat(r.carriers(cmd("nia-2").keyHash())).containsExactly(runner(1));
        assertThat(r.carriers(cmd("nia-3").keyHash())).containsExactly(runner(2));
    }

    /**
     * A settled claim that records no quota (made while no quota applied) was judged against none, so it may have
     * been committed after the undecided one, while that one stood: nothing is taken back.
     */
    @Test
    void aSettledClaimThatRecordsNoQuotaDoesNotProveTheUndecidedOneLost() throws Exception {
        assertLeftBesideSettled("max", (key, owner) -> r.claimElsewhere(runner(1), key, owner));
    }

    /**
     * Over the quota, but the owner's other claims are unsettled and undecided too: the LIST cannot tell which one
     * was committed last (the one that lost), and the others may have been answered, so none is taken back. Nor is
     * a claim whose owner's settled claims leave room under its quota, and a sweep with nothing undecided to judge
     * asks the API server nothing.
     */
    @Test
    void undecidedClaimsOfAnOwnerAreLeftWhenTheSettledOnesDoNotProveWhichLost() throws Exception {
        r = new ScriptedReplica(6, 0);
        String ivy = Hashes.ownerHash("ivy");
        claimUnderQuota(0, cmd("ivy-1"), ivy, 1);
        claimUnderQuota(1, cmd("ivy-2"), ivy, 1);
        String jo = Hashes.ownerHash("jo");
        claimUnderQuota(2, cmd("jo-1"), jo, 2);
        r.writer.settle(r.inApi(runner(2)));
        claimUnderQuota(3, cmd("jo-2"), jo, 2);
        LostClaimSweeper sweeper = new LostClaimSweeper(r.pods, r.writer, 0);
        long lists = r.calls.get(KubeApiCall.PODS_LIST);
        long patches = r.calls.get(KubeApiCall.PODS_PATCH);
        assertThat(sweeper.sweepListed()).as("nothing undecided here yet").isZero();
        assertThat(r.calls.get(KubeApiCall.PODS_LIST)).isEqualTo(lists);
        relisted(0, 1, 3);
        assertThat(sweeper.sweepListed()).isZero();
        assertThat(r.calls.get(KubeApiCall.PODS_PATCH)).isEqualTo(patches);
        assertThat(r.calls.get(KubeApiCall.PODS_LIST)).as("the cache shows no quota filled by standing claims")
                .isEqualTo(lists);
        assertThat(r.carriers(cmd("ivy-1").keyHash())).containsExactly(runner(0));
        assertThat(r.carriers(cmd("ivy-2").keyHash())).containsExactly(runner(1));
        assertThat(r.carriers(cmd("jo-2").keyHash())).containsExactly(runner(3));
    }

    /**
     * --max-allocs-per-user=1 in a rolling upgrade: alice's claim under the keyed owner hash is committed first, then
     * a replica of the previous version claims another key for her under the legacy hash, counting that hash only.
     * Both stood at their commit (the ledger counts each hash apart) and both were answered. Her next request moves
     * the legacy claim to the keyed hash; her keyed claim is handed out again (settled). A replica that first saw the
     * legacy claim in a LIST (it restarted) holds it undecided beside a settled claim that fills the quota it
     * records, but the settled one was never counted against it: it stood, so the sweep must leave it on its pod.
     */
    @Test
    void aLegacyClaimMovedToTheKeyedHashIsNotTakenBackBesideASettledClaimItWasNeverCountedAgainst() throws Exception {
        keyedAndLegacyBothStanding();
        r.writer.settle(r.inApi(runner(0)));
        relisted(1);
        moved();

        assertNothingTakenBack();
    }

    /**
     * The mirror: alice's keyed claim, answered by its writer, is undecided on a replica that relisted; her legacy
     * claim, moved to the keyed hash, is settled since (renewed, or replayed on a replica that watched it stand). The
     * settled claim fills the quota the keyed one records, but was judged under the legacy hash, not counting the
     * keyed claim: the keyed claim stood and was answered, so the sweep must leave it on its pod.
     */
    @Test
    void aKeyedClaimIsNotTakenBackBesideALegacyClaimMovedAndSettledSince() throws Exception {
        keyedAndLegacyBothStanding();
        relisted(0, 1);
        moved();
        r.writer.settle(r.inApi(runner(1)));
        OperatorHarness.awaitTrue(() -> r.pods.claimOn(runner(1)).map(ClaimLedger.Claim::stands).orElse(false),
                java.time.Duration.ofSeconds(60), "the moved claim settled");
        assertThat(r.pods.claimOn(runner(0)).orElseThrow().standing()).isEqualTo(ClaimLedger.Standing.UNKNOWN);

        assertNothingTakenBack();
    }

    private static final OwnerHashes.Owner ALICE = LegacyOwnerClaimsTest.ALICE;
    private static final AllocCommand ALICE_KEYED = cmd("alice-keyed");
    private static final AllocCommand ALICE_PREVIOUS = cmd("alice-by-the-previous-version");

    /**
     * Under a quota of 1, alice's claim of {@link #ALICE_KEYED} under the keyed hash on runner 0, then her claim of
     * {@link #ALICE_PREVIOUS} under the legacy hash on runner 1, as a replica of the previous version writes it: this
     * replica's watch judged both standing, each counted under its own hash.
     */
    private void keyedAndLegacyBothStanding() throws Exception {
        r = new ScriptedReplica(4, 0);
        claimUnderQuota(0, ALICE_KEYED, ALICE.current(), 1);
        claimUnderQuota(1, ALICE_PREVIOUS, ALICE.legacy(), 1);
        assertThat(r.pods.claimOn(runner(0)).orElseThrow().stands()).as("the keyed claim stood").isTrue();
        assertThat(r.pods.claimOn(runner(1)).orElseThrow().stands()).as("the legacy claim stood").isTrue();
    }

    /** Alice's next request moves her legacy claim on runner 1 to the keyed hash. */
    private void moved() throws Exception {
        assertThat(new LegacyOwnerClaims(r.cluster.client, r.pods, r.calls).adopt(ALICE)).isEqualTo(1);
        OperatorHarness.awaitTrue(() -> r.pods.claimOn(runner(1)).map(c -> ALICE.current().equals(c.ownerHash()))
                .orElse(false), java.time.Duration.ofSeconds(60), "the legacy claim moved to the keyed hash");
    }

    /**
     * The listed sweep takes neither of alice's claims back: each stays on its pod, nothing is written, and the API
     * server is asked nothing (the cache shows no quota filled by claims that count against the undecided one).
     */
    private void assertNothingTakenBack() {
        long lists = r.calls.get(KubeApiCall.PODS_LIST);
        assertListedSweepTakesNothingBack();
        assertThat(r.calls.get(KubeApiCall.PODS_LIST)).as("LISTs of the owner's claims").isEqualTo(lists);
        assertThat(r.carriers(ALICE_PREVIOUS.keyHash())).containsExactly(runner(1));
        assertThat(r.carriers(ALICE_KEYED.keyHash())).containsExactly(runner(0));
    }

    // ---- reads

    private ClaimReads reads() {
        return new ClaimReads(r.pods, r.writer);
    }

    @Test
    void anOwnersAllocationsAreListedFromTheApiServerWithoutTheClaimsThatLost() throws Exception {
        r = new ScriptedReplica(6, 0);
        String owner = Hashes.ownerHash("dana");
        AllocCommand key = cmd("dana-1");
        r.claimElsewhere(runner(0), key, owner);
        r.claimElsewhere(runner(1), key, owner); // lost
        r.claimElsewhere(runner(2), cmd("dana-2"), owner);
        r.claimElsewhere(runner(3), cmd("erin-1"), Hashes.ownerHash("erin"));
        assertThat(names(reads().claimed(owner, null))).containsExactly(runner(0), runner(2));
        assertThat(names(reads().claimed(null, null))).containsExactly(runner(0), runner(2), runner(3));
        assertThat(names(reads().claimed(owner, Hashes.allocationId(TestCluster.NS, runner(2)))))
                .containsExactly(runner(2));
        assertThat(reads().claimed(owner, Hashes.allocationId(TestCluster.NS, runner(1)))).as("it lost").isEmpty();
        assertThat(reads().claimed(null, "0000000000000000")).isEmpty();
        assertThat(r.calls.get(KubeApiCall.PODS_LIST)).isEqualTo(5);
    }

    @Test
    void aClaimMadeOnAnotherReplicaIsListedBeforeThisReplicasWatchHasIt() throws Exception {
        r = new ScriptedReplica(4, 0);
        String owner = Hashes.ownerHash("fay");
        r.watch.hold();
        r.claimElsewhere(runner(1), cmd("fay-1"), owner);
        assertThat(names(reads().claimed(owner, null))).containsExactly(runner(1));
        assertThat(names(reads().claimed(null, null))).containsExactly(runner(1));
    }

    @Test
    void claimsMadeBeforeTheOwnerLabelExistedComeFromTheCache() throws Exception {
        r = new ScriptedReplica(5, 0);
        String owner = Hashes.ownerHash("gus");
        // the owner annotation only, as older claims carry it
        for (int n : new int[] {0, 1, 2}) {
            AllocCommand key = cmd(n == 2 ? "gus-0" : "gus-" + n);
            r.edit(runner(n), b -> b.editMetadata().addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, key.keyHash())
                    .addToAnnotations(PlaypenKeys.OWNER_HASH, owner)
                    .addToLabels(PlaypenKeys.ALLOCATED, Hashes.allocationId(TestCluster.NS, runner(n))).endMetadata());
        }
        // runner 2 carries gus-0 after runner 0 did: it lost
        r.claimElsewhere(runner(3), cmd("gus-3"), owner);
        // an unmanaged pod with the owner annotation is not an allocation
        r.cluster.create(new PodBuilder().withNewMetadata().withName("stranger").addToAnnotations(
                PlaypenKeys.IDEMPOTENCY_KEY_HASH, cmd("s").keyHash()).addToAnnotations(PlaypenKeys.OWNER_HASH, owner)
                .endMetadata());
        assertThat(names(reads().claimed(owner, null))).containsExactly(runner(0), runner(1), runner(3));
        // by allocation id: listed by that label, which the old claims carry
        assertThat(names(reads().claimed(owner, Hashes.allocationId(TestCluster.NS, runner(1)))))
                .containsExactly(runner(1));
    }

    @Test
    void aClaimDeallocatedThroughAnotherReplicaIsNotListedThoughThisReplicasWatchStillShowsIt() throws Exception {
        r = new ScriptedReplica(4, 0);
        String owner = Hashes.ownerHash("ida");
        r.claimElsewhere(runner(0), cmd("ida-1"), owner);
        r.claimElsewhere(runner(1), cmd("ida-2"), owner);
        r.watch.hold();
        r.cluster.client.pods().inNamespace(TestCluster.NS).withName(runner(1)).delete();
        assertThat(names(r.pods.byOwnerHash(owner))).containsExactly(runner(0), runner(1));
        assertThat(names(reads().claimed(owner, null))).containsExactly(runner(0));
        assertThat(reads().claimed(owner, Hashes.allocationId(TestCluster.NS, runner(1)))).isEmpty();
        r.watch.release();
    }

    @Test
    void aPodThatLostUnderAnotherUidOrKeyIsShownAsItIsNow() throws Exception {
        r = new ScriptedReplica(4, 0);
        String owner = Hashes.ownerHash("hal");
        AllocCommand key = cmd("hal-1");
        r.claimElsewhere(runner(0), key, owner);
        r.claimElsewhere(runner(1), key, owner); // lost
        r.watch.hold();
        // the API server already has a newer claim on runner 1 (another key) and a new pod named runner 2 ...
        r.claimElsewhere(runner(1), cmd("hal-2"), owner);
        assertThat(names(reads().claimed(owner, null))).containsExactly(runner(0), runner(1));
        // ... or the same name made again, claimed with the same key
        Pod old = r.inApi(runner(1));
        r.cluster.client.pods().inNamespace(TestCluster.NS).withName(runner(1)).delete();
        r.cluster.create(new PodBuilder(old).editMetadata().withUid(null).withResourceVersion(null)
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, key.keyHash()).endMetadata());
        assertThat(names(reads().claimed(owner, null))).containsExactly(runner(0), runner(1));
        r.watch.release();
    }

    /**
     * The pod as listed carries a claim of the key that stands (claim-id "y"); after the LIST answered, that claim
     * was taken back, the key claimed on another pod, and this pod claimed again for the key by a lagging replica
     * (claim-id "z"), which lost, and this replica's watch has delivered all of it. The lost claim on the pod is not
     * the listed one: the listed claim is shown as it was listed (undecided here, like a claim first seen in a
     * relist), not hidden for another claim's verdict.
     */
    @Test
    void aListedClaimIsNotHiddenForTheVerdictOfAnotherClaimOfItsKeyOnThePod() throws Exception {
        r = new ScriptedReplica(4, 0);
        String owner = Hashes.ownerHash("jo");
        AllocCommand key = cmd("jo-1");
        Pod idle0 = r.inApi(runner(0));
        Pod idle1 = r.inApi(runner(1));
        r.claimElsewhere(runner(1), key, owner);
        Pod listed = r.edit(runner(1), b -> b.editMetadata().addToAnnotations(PlaypenKeys.CLAIM_ID, "y").endMetadata());
        assertThat(r.pods.claimOn(runner(1)).orElseThrow().stands()).isTrue();
        // what was committed after the LIST's answer, delivered straight to the watch before the answer reaches
        // the read (the test's API server has already answered the LIST)
        long rv = r.cluster.currentResourceVersion();
        java.util.concurrent.atomic.AtomicBoolean once = new java.util.concurrent.atomic.AtomicBoolean();
        r.cluster.addAnswerListener((method, path, answer) -> {
            if (method.equals("GET") && path.startsWith(ScriptedReplica.PODS + "?")
                    && once.compareAndSet(false, true)) {
                r.watch.modified(version(idle1, rv + 1, null, null, null));
                r.watch.modified(version(idle0, rv + 2, key, owner, "p"));
                r.watch.modified(version(idle1, rv + 3, key, owner, "z"));
            }
        });
        assertThat(names(reads().claimed(owner, null))).containsExactly(runner(1));
        assertThat(r.pods.claimOn(runner(1)).orElseThrow().standing()).as("the watch judged the later claim")
                .isEqualTo(ClaimLedger.Standing.LOST);
        assertThat(r.pods.claimOn(runner(1)).orElseThrow().uid()).isEqualTo(listed.getMetadata().getUid());
    }

    /**
     * The pod is listed at a version this replica's watch has not delivered yet (the kubelet wrote its status, say),
     * still carrying the claim the watch saw lose, the same claim-id: that very claim lost, whatever changed on the
     * pod since, so it is not shown, however far the watch lags.
     */
    @Test
    void aLostClaimListedAtALaterVersionOfItsPodIsNotShownWhileTheWatchLags() throws Exception {
        r = new ScriptedReplica(4, 0);
        String owner = Hashes.ownerHash("kit");
        AllocCommand key = cmd("kit-1");
        for (int n : new int[] {0, 1}) {
            r.claimElsewhere(runner(n), key, owner);
            r.edit(runner(n), b -> b.editMetadata().addToAnnotations(PlaypenKeys.CLAIM_ID, "c" + n).endMetadata());
        }
        assertThat(r.pods.claimOn(runner(1)).orElseThrow().standing()).isEqualTo(ClaimLedger.Standing.LOST);
        r.watch.hold();
        r.edit(runner(1), b -> b.editMetadata().addToLabels("example.com/touched", "yes").endMetadata());
        assertThat(names(reads().claimed(owner, null))).containsExactly(runner(0));
        assertThat(reads().claimed(owner, Hashes.allocationId(TestCluster.NS, runner(1)))).as("it lost").isEmpty();
        // ... unless the later version is settled: the claim that stood was deallocated and another replica, which
        // never judged this one, found it the key's only claim and settled it; it stands now
        r.cluster.client.pods().inNamespace(TestCluster.NS).withName(runner(0)).delete();
        r.writer.settle(r.inApi(runner(1)));
        // the held watch has not reached the settled version: the read does not wait for it (a wait of 0; the
        // operator's reads wait up to ten seconds) and shows the claim as undecided, like one seen in a relist
        assertThat(names(new ClaimReads(r.pods, r.writer, 0).claimed(owner, null))).containsExactly(runner(1));
        r.watch.release();
        // once the watch has it, the settled claim is judged standing there too
        assertThat(names(reads().claimed(owner, null))).containsExactly(runner(1));
    }

    /** {@code pod} at resourceVersion {@code rv}, claimed for {@code key} with that claim-id (null key: idle). */
    private static Pod version(Pod pod, long rv, AllocCommand key, String owner, String claimId) {
        PodBuilder b = new PodBuilder(pod).editMetadata().withResourceVersion(String.valueOf(rv)).endMetadata();
        if (key != null) {
            b.editMetadata().addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, key.keyHash())
                    .addToAnnotations(PlaypenKeys.REQUEST_HASH, key.requestHash())
                    .addToAnnotations(PlaypenKeys.CLAIM_ID, claimId).addToAnnotations(PlaypenKeys.OWNER_HASH, owner)
                    .addToLabels(PlaypenKeys.KEY_HASH_LABEL, ClaimWriter.labelValue(key.keyHash()))
                    .addToLabels(PlaypenKeys.OWNER_HASH_LABEL, ClaimWriter.labelValue(owner)).endMetadata();
        }
        return b.build();
    }

    private static List<String> names(List<Pod> pods) {
        return pods.stream().map(ManagedPods::name).sorted().toList();
    }
}
