package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.kube.ClaimLedger.Claim;
import io.unboundedcloud.playpen.kube.ClaimLedger.Reason;
import io.unboundedcloud.playpen.kube.ClaimLedger.Standing;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.TestCluster;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.Size;

/**
 * The ledger against the rule as docs/architecture.md states it, for any history of pod versions: a new claim
 * applied in commit order stands if and only if, in the state at its commit, no other live pod carried its key and
 * its owner's live claims (this one included) carried no more distinct keys than the quota it records, or it is
 * settled; a claim seen
 * outside commit order is undecided unless settled; a later version of the same claim (same pod uid, key and
 * claim-id) keeps its commit, claim-id and standing, in or outside commit order, except that a settle makes it stand
 * and a claim without a claim-id seen outside commit order becomes undecided unless settled (nothing tells it from
 * one made again with the same key); a version with another claim-id is a new claim. The reference below recomputes
 * everything from the current claims on every step (no indexes), and every query of the ledger is compared with it
 * after every step.
 */
class ClaimLedgerRulesTest {
    private static final List<String> PODS = List.of("p0", "p1", "p2", "p3");
    private static final List<String> KEYS = List.of("", "k1".repeat(32), "k2".repeat(32), "k3".repeat(32));
    private static final List<String> OWNERS = List.of("", "o1".repeat(32), "o2".repeat(32));

    /** One pod version as the watch or a LIST applies it ({@code exact}: in commit order), or the pod's delete. */
    record Step(boolean remove, String pod, String uid, String key, String claimId, String owner, int quota,
            boolean settled, boolean terminating, boolean managed, long rv, boolean exact) {
        Pod toPod() {
            PodBuilder b = new PodBuilder().withNewMetadata().withName(pod).withNamespace(TestCluster.NS).withUid(uid)
                    .withResourceVersion(String.valueOf(rv)).endMetadata();
            if (managed) {
                b.editMetadata().addToLabels(PlaypenKeys.RESOURCE_TYPE, "runner").endMetadata();
            }
            if (!key.isEmpty()) {
                b.editMetadata().addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, key).endMetadata();
            }
            if (!claimId.isEmpty()) {
                b.editMetadata().addToAnnotations(PlaypenKeys.CLAIM_ID, claimId).endMetadata();
            }
            if (!owner.isEmpty()) {
                b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_HASH, owner).endMetadata();
            }
            if (quota > 0) {
                b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_QUOTA, String.valueOf(quota)).endMetadata();
            }
            if (settled) {
                b.editMetadata().addToAnnotations(PlaypenKeys.CLAIM_SETTLED, "true").endMetadata();
            }
            if (terminating) {
                b.editMetadata().withDeletionTimestamp("2026-01-01T00:00:00Z").endMetadata();
            }
            return b.build();
        }
    }

    @Provide
    Arbitrary<Step> steps() {
        Arbitrary<Step> put = Combinators.combine(Arbitraries.of(PODS), Arbitraries.of("u0", "u1"),
                Arbitraries.of(KEYS), Arbitraries.of(OWNERS), Arbitraries.integers().between(0, 3),
                Arbitraries.of(true, false, false, false), Arbitraries.of(true, false, false, false, false),
                Arbitraries.of(true, true, true, true, true, true, true, false))
                .as((pod, uid, key, owner, quota, settled, terminating, managed) -> new Step(false, pod, uid, key, "",
                        owner, quota, settled, terminating, managed, 0, true));
        // resourceVersions from a small range, so that claims share one now and then (the order then is the name's)
        // claim-ids: mostly one, so that versions of one claim follow each other; another one, or none (a claim
        // written without one)
        Arbitrary<Step> withOrder = Combinators.combine(put, Arbitraries.longs().between(1, 12),
                Arbitraries.of(true, true, true, false), Arbitraries.of("c1", "c1", "c1", "c2", ""))
                .as((s, rv, exact, claimId) -> new Step(false, s.pod(), s.uid(), s.key(), claimId, s.owner(),
                        s.quota(), s.settled(), s.terminating(), s.managed(), rv, exact));
        Arbitrary<Step> remove = Arbitraries.of(PODS)
                .map(p -> new Step(true, p, "", "", "", "", 0, false, false, false, 0, true));
        return Arbitraries.frequencyOf(net.jqwik.api.Tuple.of(9, withOrder), net.jqwik.api.Tuple.of(1, remove));
    }

    @Property(tries = 400)
    void everyVerdictFollowsTheRuleFromTheStateAtItsCommit(@ForAll @Size(max = 40) List<@net.jqwik.api.From("steps") Step> history) {
        ClaimLedger ledger = new ClaimLedger();
        Map<String, Claim> model = new HashMap<>();
        for (Step s : history) {
            if (s.remove()) {
                ledger.remove(s.pod());
                model.remove(s.pod());
            } else {
                Claim expected = judge(model, s);
                assertThat(ledger.put(s.toPod(), s.exact())).as("put %s", s).isEqualTo(expected);
            }
            compare(ledger, model, s);
        }
    }

    /**
     * Whatever the history in commit order (no settles, one quota), at most that many of an owner's live claims
     * stand at any time, though lost second claims of a key the owner holds are not counted as allocations. A pod
     * being deleted stays so (as the API server has it).
     */
    @Property(tries = 400)
    void atMostTheQuotaOfAnOwnersClaimsStand(@ForAll @Size(max = 40) List<@net.jqwik.api.From("steps") Step> history) {
        int quota = 2;
        ClaimLedger ledger = new ClaimLedger();
        for (Step s : history) {
            if (s.remove()) {
                ledger.remove(s.pod());
            } else {
                boolean deleting = s.terminating() || ledger.on(s.pod()).filter(c -> c.terminating()
                        && c.uid().equals(s.uid())).isPresent();
                // a later version of the same claim (pod, uid, key and claim-id) keeps the owner its writer recorded:
                // nobody else changes it (moving an owner's older hash form to the current one is another matter,
                // judged by the claim's writer when it was made, and not covered here). That holds for a claim
                // written without a claim-id too: in commit order a claim of the key made again on the pod comes
                // after a version without the key, and no write gives an owner to a claim written without one
                String owner = ledger.on(s.pod())
                        .filter(c -> c.uid().equals(s.uid()) && c.keyHash().equals(s.key())
                                && c.claimId().equals(s.claimId()))
                        .map(ClaimLedger.Claim::ownerHash).orElse(s.owner());
                ledger.put(new Step(false, s.pod(), s.uid(), s.key(), s.claimId(), owner, quota, false, deleting,
                        s.managed(), s.rv(), true).toPod(), true);
            }
            for (String o : OWNERS) {
                if (!o.isEmpty()) {
                    assertThat(ledger.ofOwner(o).stream().filter(c -> c.stands() && !c.terminating()).count())
                            .as("standing claims of %s after %s", o, s).isLessThanOrEqualTo(quota);
                }
            }
        }
    }

    /** The rule, from the claims on the pods just before this step. */
    private static Claim judge(Map<String, Claim> claims, Step s) {
        String key = s.managed() ? s.key() : "";
        Claim old = claims.get(s.pod());
        if (key.isEmpty()) {
            claims.remove(s.pod());
            return null;
        }
        Claim c;
        if (old != null && old.keyHash().equals(key) && old.uid().equals(s.uid())
                && old.claimId().equals(s.claimId())) {
            Standing st = old.standing();
            Reason r = old.reason();
            if (s.settled()) {
                st = Standing.WON;
                r = Reason.NONE;
            } else if (!s.exact() && s.claimId().isEmpty()) {
                st = Standing.UNKNOWN;
                r = Reason.NONE;
            }
            c = new Claim(s.pod(), s.uid(), key, old.claimId(), s.owner(), old.claimRv(), st, r, s.terminating());
        } else {
            claims.remove(s.pod());
            boolean otherCarrier = claims.values().stream().anyMatch(o -> o.keyHash().equals(key) && !o.terminating());
            // allocations: the distinct keys of the owner's live claims, this one's included
            long ownerKeys = java.util.stream.Stream.concat(java.util.stream.Stream.of(key), claims.values().stream()
                    .filter(o -> !s.owner().isEmpty() && o.ownerHash().equals(s.owner()) && !o.terminating())
                    .map(Claim::keyHash)).distinct().count();
            boolean overQuota = s.quota() > 0 && !s.owner().isEmpty() && ownerKeys > s.quota();
            Standing st;
            Reason r = Reason.NONE;
            if (s.settled()) {
                st = Standing.WON;
            } else if (!s.exact()) {
                st = Standing.UNKNOWN;
            } else if (otherCarrier) {
                st = Standing.LOST;
                r = Reason.EARLIER_CLAIM;
            } else if (overQuota) {
                st = Standing.LOST;
                r = Reason.QUOTA;
            } else {
                st = Standing.WON;
            }
            c = new Claim(s.pod(), s.uid(), key, s.claimId(), s.owner(), s.rv(), st, r, s.terminating());
        }
        claims.put(s.pod(), c);
        return c;
    }

    private static void compare(ClaimLedger ledger, Map<String, Claim> model, Step after) {
        Comparator<Claim> byCommit = Comparator.comparingLong(Claim::claimRv).thenComparing(Claim::pod);
        assertThat(ledger.size()).as("size after %s", after).isEqualTo(model.size());
        for (String p : PODS) {
            assertThat(ledger.on(p)).as("on %s after %s", p, after).isEqualTo(java.util.Optional.ofNullable(model.get(p)));
        }
        for (String k : KEYS) {
            List<Claim> expected = new ArrayList<>(model.values().stream().filter(c -> c.keyHash().equals(k)).toList());
            expected.sort(byCommit);
            assertThat(ledger.ofKey(k)).as("key %s after %s", k, after).containsExactlyElementsOf(expected);
        }
        for (String o : OWNERS) {
            List<Claim> expected = new ArrayList<>(model.values().stream()
                    .filter(c -> !o.isEmpty() && c.ownerHash().equals(o)).toList());
            expected.sort(byCommit);
            assertThat(ledger.ofOwner(o)).as("owner %s after %s", o, after).containsExactlyElementsOf(expected);
        }
        for (Claim c : model.values()) {
            assertThat(ledger.on(c.pod()).orElseThrow().stands()).as("stands %s", c).isEqualTo(c.standing() == Standing.WON);
        }
        assertThat(ledger.lost()).as("lost after %s", after).containsExactlyInAnyOrderElementsOf(model.values().stream()
                .filter(c -> c.standing() == Standing.LOST && !c.terminating()).toList());
        assertThat(ledger.undecidedBesideStanding()).as("undecided beside standing after %s", after)
                .containsExactlyInAnyOrderElementsOf(model.values().stream()
                        .filter(c -> c.standing() == Standing.UNKNOWN && !c.terminating())
                        .filter(c -> model.values().stream().anyMatch(o -> o.keyHash().equals(c.keyHash())
                                && o.standing() == Standing.WON && !o.terminating()))
                        .toList());
    }

    @Test
    void theQuotaCountsTheClaimItselfSoAQuotaOfOneAdmitsExactlyOne() {
        ClaimLedger l = new ClaimLedger();
        Step first = new Step(false, "p0", "u0", KEYS.get(1), "", OWNERS.get(1), 1, false, false, true, 3, true);
        Step second = new Step(false, "p1", "u0", KEYS.get(2), "", OWNERS.get(1), 1, false, false, true, 4, true);
        assertThat(l.put(first.toPod(), true).standing()).isEqualTo(Standing.WON);
        Claim over = l.put(second.toPod(), true);
        assertThat(over.standing()).isEqualTo(Standing.LOST);
        assertThat(over.reason()).isEqualTo(Reason.QUOTA);
        // a lost claim still on its pod is a live claim of the owner: while it is there, the next one loses too
        Step third = new Step(false, "p2", "u0", KEYS.get(3), "", OWNERS.get(1), 1, false, false, true, 6, true);
        l.put(new Step(false, "p0", "u0", KEYS.get(1), "", OWNERS.get(1), 1, false, true, true, 5, true).toPod(), true);
        assertThat(l.put(third.toPod(), true).reason()).isEqualTo(Reason.QUOTA);
        // the first claim being deleted and the lost ones rolled back free the owner's place
        l.put(new Step(false, "p1", "u0", "", "", "", 0, false, false, true, 7, true).toPod(), true);
        l.put(new Step(false, "p2", "u0", "", "", "", 0, false, false, true, 8, true).toPod(), true);
        Step fourth = new Step(false, "p3", "u0", KEYS.get(3), "", OWNERS.get(1), 1, false, false, true, 9, true);
        assertThat(l.put(fourth.toPod(), true).standing()).isEqualTo(Standing.WON);
    }

    @Test
    void theOwnerQuotaAnnotationIsReadLeniently() {
        assertThat(ClaimLedger.ownerQuota(withQuota(null))).isZero();
        assertThat(ClaimLedger.ownerQuota(withQuota("3"))).isEqualTo(3);
        assertThat(ClaimLedger.ownerQuota(withQuota(" 2 "))).isEqualTo(2);
        assertThat(ClaimLedger.ownerQuota(withQuota("-4"))).as("negative: no quota").isZero();
        assertThat(ClaimLedger.ownerQuota(withQuota("1.5"))).as("not a number: no quota").isZero();
        assertThat(ClaimLedger.ownerQuota(withQuota("0"))).isZero();
    }

    @Test
    void resourceVersionsUidsAndSettledMarksAreReadLeniently() {
        Pod bare = new PodBuilder().withNewMetadata().withName("p").endMetadata().build();
        assertThat(ClaimLedger.resourceVersion(bare)).isZero();
        assertThat(ClaimLedger.uid(bare)).isEmpty();
        assertThat(ClaimLedger.isSettled(bare)).isFalse();
        Pod odd = new PodBuilder(bare).editMetadata().withResourceVersion("v7").withUid("u-1")
                .addToAnnotations(PlaypenKeys.CLAIM_SETTLED, "True").endMetadata().build();
        assertThat(ClaimLedger.resourceVersion(odd)).as("not a number").isZero();
        assertThat(ClaimLedger.uid(odd)).isEqualTo("u-1");
        assertThat(ClaimLedger.isSettled(odd)).as("only the exact value the settle writes").isFalse();
        Pod settled = new PodBuilder(bare).editMetadata().withResourceVersion("9223372036854775807")
                .addToAnnotations(PlaypenKeys.CLAIM_SETTLED, "true").endMetadata().build();
        assertThat(ClaimLedger.resourceVersion(settled)).isEqualTo(Long.MAX_VALUE);
        assertThat(ClaimLedger.isSettled(settled)).isTrue();
    }

    private static Pod withQuota(String q) {
        PodBuilder b = new PodBuilder().withNewMetadata().withName("p").endMetadata();
        if (q != null) {
            b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_QUOTA, q).endMetadata();
        }
        return b.build();
    }
}
