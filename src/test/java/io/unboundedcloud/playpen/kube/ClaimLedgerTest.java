package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.kube.ClaimLedger.Reason;
import io.unboundedcloud.playpen.kube.ClaimLedger.Standing;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.TestCluster;

/** The ledger's judgement of each claim from the state at its commit. */
class ClaimLedgerTest {
    private static final String K = "aa".repeat(32);
    private static final String OTHER = "bb".repeat(32);
    private static final String OWNER = "cc".repeat(32);

    private static Pod idle(int n, long rv) {
        return TestCluster.readyRunner("amd64", 51820 + n, "node-a").editMetadata().withUid("uid-" + n)
                .withResourceVersion(String.valueOf(rv)).endMetadata().build();
    }

    private static Pod claimed(int n, long rv, String key) {
        return claimed(n, rv, key, null, 0);
    }

    private static Pod claimed(int n, long rv, String key, String owner, int quota) {
        PodBuilder b = new PodBuilder(idle(n, rv)).editMetadata()
                .addToAnnotations(Map.of(PlaypenKeys.IDEMPOTENCY_KEY_HASH, key)).endMetadata();
        if (owner != null) {
            b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_HASH, owner).endMetadata();
        }
        if (quota > 0) {
            b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_QUOTA, String.valueOf(quota)).endMetadata();
        }
        return b.build();
    }

    private static Pod with(Pod p, String annotation, String value) {
        return new PodBuilder(p).editMetadata().addToAnnotations(annotation, value).endMetadata().build();
    }

    @Test
    void theFirstClaimOfAKeyStandsAndALaterOneWhileItLivesLoses() {
        ClaimLedger l = new ClaimLedger();
        l.put(idle(0, 1), true);
        l.put(idle(1, 2), true);
        assertThat(l.size()).isZero();
        ClaimLedger.Claim first = l.put(claimed(0, 3, K), true);
        ClaimLedger.Claim second = l.put(claimed(1, 4, K), true);
        assertThat(first.standing()).isEqualTo(Standing.WON);
        assertThat(first.claimRv()).isEqualTo(3);
        assertThat(second.standing()).isEqualTo(Standing.LOST);
        assertThat(second.reason()).isEqualTo(Reason.EARLIER_CLAIM);
        assertThat(l.ofKey(K)).extracting(ClaimLedger.Claim::pod)
                .containsExactly("playpen-runner-amd64-51820", "playpen-runner-amd64-51821");
        assertThat(l.lost()).extracting(ClaimLedger.Claim::pod).containsExactly("playpen-runner-amd64-51821");
        // another key is judged on its own
        assertThat(l.put(claimed(2, 5, OTHER), true).standing()).isEqualTo(Standing.WON);
    }

    @Test
    void aRivalThatIsBeingDeletedOrHasBeenRolledBackDoesNotCount() {
        ClaimLedger l = new ClaimLedger();
        Pod first = claimed(0, 3, K);
        l.put(first, true);
        l.put(new PodBuilder(first).editMetadata().withDeletionTimestamp("2026-01-01T00:00:00Z")
                .withResourceVersion("4").endMetadata().build(), true);
        assertThat(l.put(claimed(1, 5, K), true).standing()).isEqualTo(Standing.WON);

        ClaimLedger m = new ClaimLedger();
        m.put(claimed(0, 3, K), true);
        m.put(idle(0, 4), true); // rolled back
        assertThat(m.on("playpen-runner-amd64-51820")).isEmpty();
        assertThat(m.put(claimed(1, 5, K), true).standing()).isEqualTo(Standing.WON);
        m.remove("playpen-runner-amd64-51821");
        assertThat(m.ofKey(K)).isEmpty();
    }

    @Test
    void aClaimOverTheQuotaItRecordsLosesCountingTheOwnersLiveClaimsAtItsCommit() {
        ClaimLedger l = new ClaimLedger();
        assertThat(l.put(claimed(0, 3, K, OWNER, 2), true).standing()).isEqualTo(Standing.WON);
        assertThat(l.put(claimed(1, 4, OTHER, OWNER, 2), true).standing()).isEqualTo(Standing.WON);
        ClaimLedger.Claim third = l.put(claimed(2, 5, "dd".repeat(32), OWNER, 2), true);
        assertThat(third.standing()).isEqualTo(Standing.LOST);
        assertThat(third.reason()).isEqualTo(Reason.QUOTA);
        // the quota is the one each claim records: a claim made under a larger one stands
        assertThat(l.put(claimed(3, 6, "ee".repeat(32), OWNER, 5), true).standing()).isEqualTo(Standing.WON);
        // without a recorded quota, no limit
        assertThat(l.put(claimed(4, 7, "ff".repeat(32), OWNER, 0), true).standing()).isEqualTo(Standing.WON);
        assertThat(l.ofOwner(OWNER)).hasSize(5);
    }

    @Test
    void aLostDuplicateOfAKeyTheOwnerHoldsIsNotASecondAllocationForTheQuota() {
        ClaimLedger l = new ClaimLedger();
        assertThat(l.put(claimed(0, 3, K, OWNER, 2), true).standing()).isEqualTo(Standing.WON);
        // a second claim of the same key, committed after the first: it loses and is about to be rolled back
        ClaimLedger.Claim duplicate = l.put(claimed(1, 4, K, OWNER, 2), true);
        assertThat(duplicate.reason()).isEqualTo(Reason.EARLIER_CLAIM);
        // the owner holds one allocation (one key): a claim of a second key is within a quota of two
        ClaimLedger.Claim second = l.put(claimed(2, 5, OTHER, OWNER, 2), true);
        assertThat(second.reason()).as("%s", second).isEqualTo(Reason.NONE);
        assertThat(second.standing()).isEqualTo(Standing.WON);
        // two keys held now: a third key is over the quota, however many claims carry the two
        ClaimLedger.Claim third = l.put(claimed(3, 6, "dd".repeat(32), OWNER, 2), true);
        assertThat(third.reason()).isEqualTo(Reason.QUOTA);
    }

    @Test
    void aClaimSeenInAListIsUndecidedUnlessSettled() {
        ClaimLedger l = new ClaimLedger();
        assertThat(l.put(claimed(0, 3, K), false).standing()).isEqualTo(Standing.UNKNOWN);
        assertThat(l.put(with(claimed(1, 4, OTHER), PlaypenKeys.CLAIM_SETTLED, "true"), false).standing())
                .isEqualTo(Standing.WON);
        // settled later: it stands from then on
        assertThat(l.put(with(claimed(0, 9, K), PlaypenKeys.CLAIM_SETTLED, "true"), true).standing())
                .isEqualTo(Standing.WON);

        ClaimLedger m = new ClaimLedger();
        m.put(claimed(0, 3, K), true);
        m.put(claimed(1, 4, K), true);
        // a relist: either claim may have been rolled back and claimed again unseen (an unsettled standing claim
        // too, when its client left before the answer), so neither is known any more; a settled one still stands
        assertThat(m.put(claimed(0, 20, K), false).standing()).isEqualTo(Standing.UNKNOWN);
        assertThat(m.put(claimed(1, 21, K), false).standing()).isEqualTo(Standing.UNKNOWN);
        assertThat(m.put(with(claimed(0, 22, K), PlaypenKeys.CLAIM_SETTLED, "true"), false).standing())
                .isEqualTo(Standing.WON);
    }

    @Test
    void aClaimJudgedAtItsCommitKeepsItsVerdictAcrossARelistWhenItCarriesTheSameClaimId() {
        ClaimLedger l = new ClaimLedger();
        ClaimLedger.Claim won = l.put(with(claimed(0, 3, K), PlaypenKeys.CLAIM_ID, "a1"), true);
        ClaimLedger.Claim lost = l.put(with(claimed(1, 4, K), PlaypenKeys.CLAIM_ID, "b2"), true);
        assertThat(won.standing()).isEqualTo(Standing.WON);
        assertThat(lost.standing()).isEqualTo(Standing.LOST);
        // a relist shows both pods again, each still carrying the very claim judged (its claim-id): the verdicts
        // are facts about their commits, so they hold, with their commits
        ClaimLedger.Claim wonAgain = l.put(with(claimed(0, 20, K), PlaypenKeys.CLAIM_ID, "a1"), false);
        ClaimLedger.Claim lostAgain = l.put(with(claimed(1, 21, K), PlaypenKeys.CLAIM_ID, "b2"), false);
        assertThat(wonAgain.standing()).isEqualTo(Standing.WON);
        assertThat(wonAgain.claimRv()).isEqualTo(3);
        assertThat(lostAgain.standing()).isEqualTo(Standing.LOST);
        assertThat(lostAgain.reason()).isEqualTo(Reason.EARLIER_CLAIM);
        assertThat(lostAgain.claimRv()).isEqualTo(4);
        assertThat(l.lost()).extracting(ClaimLedger.Claim::pod).containsExactly("playpen-runner-amd64-51821");
        assertThat(l.undecidedBesideStanding()).isEmpty();
        // another claim-id on the pod is another claim (taken back and made again unseen): undecided
        assertThat(l.put(with(claimed(1, 22, K), PlaypenKeys.CLAIM_ID, "c3"), false).standing())
                .isEqualTo(Standing.UNKNOWN);
        // a claim written without a claim-id (the Go operator's, an older one) cannot be told from one made again
        // with the same key: undecided after a relist, whatever it was
        ClaimLedger m = new ClaimLedger();
        assertThat(m.put(claimed(0, 3, K), true).standing()).isEqualTo(Standing.WON);
        assertThat(m.put(claimed(0, 20, K), false).standing()).isEqualTo(Standing.UNKNOWN);
        // and an undecided claim stays undecided in commit order, claim-id or not, until settled
        ClaimLedger n = new ClaimLedger();
        assertThat(n.put(with(claimed(0, 3, K), PlaypenKeys.CLAIM_ID, "a1"), false).standing())
                .isEqualTo(Standing.UNKNOWN);
        assertThat(n.put(with(claimed(0, 4, K), PlaypenKeys.CLAIM_ID, "a1"), true).standing())
                .isEqualTo(Standing.UNKNOWN);
    }

    @Test
    void aLaterVersionOfTheSameClaimKeepsItsStandingAndCommit() {
        ClaimLedger l = new ClaimLedger();
        l.put(claimed(0, 3, K), true);
        ClaimLedger.Claim renewed = l.put(with(claimed(0, 8, K), PlaypenKeys.EXPIRES_AT, "2026-01-01T02:00:00Z"), true);
        assertThat(renewed.standing()).isEqualTo(Standing.WON);
        assertThat(renewed.claimRv()).isEqualTo(3);
        // a new pod with the old name (another uid) is another claim
        Pod reborn = new PodBuilder(claimed(0, 12, K)).editMetadata().withUid("uid-new").endMetadata().build();
        l.put(claimed(1, 10, K), true);
        ClaimLedger.Claim again = l.put(reborn, true);
        assertThat(again.claimRv()).isEqualTo(12);
        assertThat(again.standing()).isEqualTo(Standing.LOST);
    }
}
