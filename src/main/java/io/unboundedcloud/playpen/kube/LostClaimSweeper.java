package io.unboundedcloud.playpen.kube;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * Takes back claims that lost but are still on their pods after their writer should have rolled them back (it died
 * between its claim and the rollback, or lags far behind). A lost claim was never handed out, so the pod goes back
 * to the pool; the rollback is conditional, only while the pod still carries this very claim, and yields to a write
 * that settled the claim meanwhile. Any replica that saw the claim lose may take it back: every replica that watched
 * its commit judged it the same way, and its writer, finding it gone, judges its key again as it would after its
 * own rollback. Run by every replica, not only the leader: only a replica whose watch delivered a claim's commit
 * judged it lost ({@link #sweep}, every second: it costs only the lost claims found), and a replica that first
 * listed it (a leader started since) holds it undecided, unable to tell it from the claim that stood unless that
 * one is settled ({@link #sweepListed}, every {@code --reconcile-interval}: it lists each such key from the API
 * server).
 */
public final class LostClaimSweeper {
    private static final Logger LOG = LoggerFactory.getLogger(LostClaimSweeper.class);
    /**
     * How long a lost claim is left to its writer, which normally takes it back within milliseconds of its commit
     * (a lagging one within seconds): only a second rollback of the same claim, refused by the API server, is saved.
     */
    static final long GRACE_NANOS = TimeUnit.SECONDS.toNanos(5);

    private final PodCache pods;
    private final ClaimWriter writer;
    private final long graceNanos;
    private final LongSupplier nanoTime;
    /** When this replica first saw each lost claim (pod name and its commit), one map per sweep. */
    private final Map<String, Long> firstSeenLost = new ConcurrentHashMap<>();
    private final Map<String, Long> firstSeenListed = new ConcurrentHashMap<>();

    public LostClaimSweeper(PodCache pods, ClaimWriter writer) {
        this(pods, writer, GRACE_NANOS);
    }

    LostClaimSweeper(PodCache pods, ClaimWriter writer, long graceNanos) {
        this(pods, writer, graceNanos, System::nanoTime);
    }

    LostClaimSweeper(PodCache pods, ClaimWriter writer, long graceNanos, LongSupplier nanoTime) {
        this.pods = pods;
        this.writer = writer;
        this.graceNanos = graceNanos;
        this.nanoTime = nanoTime;
    }

    /**
     * One pass over the claims this replica's watch saw lose: rolls back those seen for longer than the grace, each
     * on the version of its pod the verdict was made on; returns how many went back.
     */
    public int sweep() {
        long now = nanoTime.getAsLong();
        Set<String> current = new HashSet<>();
        int released = 0;
        for (PodCache.LostClaim lost : pods.lostClaims()) {
            ClaimLedger.Claim c = lost.claim();
            if (!pastGrace(firstSeenLost, c, now, current)) {
                continue;
            }
            ClaimWriter.Rollback r = writer.rollback(lost.pod(), c.keyHash());
            LOG.info("swept pod={}/{} key={} outcome=lost-claim-left-behind result={}", pods.namespace(), c.pod(),
                    Hashes.keyHashPrefix(c.keyHash()), r.name().toLowerCase(java.util.Locale.ROOT));
            if (r == ClaimWriter.Rollback.ROLLED_BACK) {
                released++;
            }
        }
        firstSeenLost.keySet().retainAll(current);
        return released;
    }

    /**
     * One pass over the claims this replica first saw in a LIST beside a standing claim of their key, or beside
     * standing claims that fill their owner's quota: see {@link #sweepBesideSettled} and
     * {@link #sweepOverOwnersQuota}. Returns how many went back.
     */
    public int sweepListed() {
        long now = nanoTime.getAsLong();
        Set<String> current = new HashSet<>();
        int released = sweepBesideSettled(now, current) + sweepOverOwnersQuota(now, current);
        firstSeenListed.keySet().retainAll(current);
        return released;
    }

    /** Whether this replica first saw the claim (pod and commit) longer than the grace ago; notes it as current. */
    private boolean pastGrace(Map<String, Long> firstSeen, ClaimLedger.Claim c, long now, Set<String> current) {
        String id = c.pod() + "@" + c.claimRv();
        current.add(id);
        return now - firstSeen.computeIfAbsent(id, k -> now) >= graceNanos;
    }

    /**
     * Claims this replica first saw in a LIST (it did not watch their commit, so its ledger cannot judge them) that
     * a LIST from the API server shows live beside a settled claim of their key: they lost. A settled claim stands
     * and is never rolled back, and a settle is written only while no other live pod carries the key (or onto a
     * claim judged standing at its commit), so a claim of the key live beside it was committed after it, while it
     * carried the key. Without a settled claim the LIST cannot tell which claim was committed first (a pod's
     * resourceVersion is its latest write's, not its claim's), and the one that stood may have been answered: both
     * stay until deallocated or expired.
     */
    private int sweepBesideSettled(long now, Set<String> current) {
        Map<String, List<ClaimLedger.Claim>> due = new HashMap<>();
        // a settled claim is standing in the ledger: a key without one is neither timed nor worth a LIST (after a
        // restart every unsettled claim is undecided here, and most keys have no other claim), and the ledger hands
        // out only the undecided claims of keys with one
        for (ClaimLedger.Claim c : pods.undecidedClaimsBesideStanding()) {
            if (pastGrace(firstSeenListed, c, now, current)) {
                due.computeIfAbsent(c.keyHash(), k -> new ArrayList<>()).add(c);
            }
        }
        int released = 0;
        for (Map.Entry<String, List<ClaimLedger.Claim>> e : due.entrySet()) {
            String key = e.getKey();
            List<Pod> carriers = writer.listByLabel(pods.namespace(), PlaypenKeys.KEY_HASH_LABEL,
                    ClaimWriter.labelValue(key)).stream()
                    .filter(p -> key.equals(ManagedPods.keyHash(p)) && ManagedPods.isManaged(p)
                            && !ManagedPods.isTerminating(p))
                    .toList();
            if (carriers.stream().noneMatch(ClaimLedger::isSettled)) {
                continue;
            }
            for (Pod p : carriers) {
                // the very claim held undecided here (its claim-id): the pod may carry another claim of the key,
                // made since, which is its writer's to judge (or this sweep's once the watch has judged it)
                boolean undecidedHere = e.getValue().stream().anyMatch(
                        c -> c.pod().equals(ManagedPods.name(p)) && c.uid().equals(ClaimLedger.uid(p))
                                && c.claimId().equals(ClaimLedger.claimId(p)));
                if (ClaimLedger.isSettled(p) || !undecidedHere) {
                    continue;
                }
                // on the version listed only: a later one may carry another claim of the key
                ClaimWriter.Rollback r = writer.rollbackAsOf(p, key);
                LOG.info("swept pod={}/{} key={} outcome=lost-beside-settled-claim result={}", pods.namespace(),
                        ManagedPods.name(p), Hashes.keyHashPrefix(key), r.name().toLowerCase(java.util.Locale.ROOT));
                if (r == ClaimWriter.Rollback.ROLLED_BACK) {
                    released++;
                }
            }
        }
        return released;
    }

    /**
     * Claims this replica first saw in a LIST (undecided here) that a LIST of their owner's live claims from the API
     * server shows beside standing claims of other keys that fill the quota the undecided claim records: they lost.
     * A claim stands if it is settled, or if this replica's watch judged that very claim (its claim-id) standing at
     * its commit; a standing claim is never rolled back. Of the owner's claims that stand at one moment, the one
     * committed last records a quota of at least their number (see ClaimLedger), so with q standing claims of other
     * keys that record at most q, a claim recording q cannot stand beside them. Unsettled claims of other keys are
     * not counted: the LIST cannot tell which of them was committed last, and they may have been answered; when
     * they fill the quota nothing is taken back (a request for one of those keys settles nothing either, until the
     * owner deallocates one). Claims that predate the owner label (which the LIST cannot find) are counted from the
     * cache, as the settle of a claim does. The cache is asked first: no LIST unless the standing claims it knows
     * fill the quota.
     * <p>
     * A claim moved from the legacy owner hash ({@link ClaimLedger#ownerHashMoved}) is left out on both sides: never
     * taken back here, and never counted among the standing claims that fill a quota. The argument needs every
     * earlier one of the standing claims to have been counted under this owner hash when the later one was judged
     * (at its commit, or by the LIST of its settle). A moved claim was judged by a writer of a version before the
     * keyed hash, which counted the owner's legacy claims only, and the claims judged under the keyed hash before it
     * moved did not count it: a keyed claim and a moved one may both have stood, each within the quota, and both
     * have been answered (the quota of a rolling upgrade, which counts each hash apart until the move).
     */
    private int sweepOverOwnersQuota(long now, Set<String> current) {
        Map<String, List<ClaimLedger.Claim>> due = new HashMap<>();
        for (ClaimLedger.Claim c : pods.undecidedClaimsBesideOwnersStanding()) {
            if (pastGrace(firstSeenListed, c, now, current)) {
                int quota = pods.get(c.pod()).filter(p -> !ClaimLedger.ownerHashMoved(p))
                        .map(ClaimLedger::ownerQuota).orElse(0);
                if (quota > 0 && standingKeys(pods.byOwnerHash(c.ownerHash()), c, quota).size() >= quota) {
                    due.computeIfAbsent(c.ownerHash(), k -> new ArrayList<>()).add(c);
                }
            }
        }
        int released = 0;
        for (Map.Entry<String, List<ClaimLedger.Claim>> e : due.entrySet()) {
            String owner = e.getKey();
            List<Pod> live = ClaimResolver.ownersLiveClaims(writer, pods, owner);
            for (ClaimLedger.Claim c : e.getValue()) {
                // the very claim held undecided here, unsettled, on the version listed
                Pod p = live.stream().filter(x -> c.pod().equals(ManagedPods.name(x))
                        && c.uid().equals(ClaimLedger.uid(x)) && c.keyHash().equals(ManagedPods.keyHash(x))
                        && c.claimId().equals(ClaimLedger.claimId(x)) && ManagedPods.isManaged(x)
                        && !ManagedPods.isTerminating(x)).findFirst()
                        .orElse(null);
                int quota = p == null ? 0 : ClaimLedger.ownerQuota(p);
                if (p == null || quota <= 0 || ClaimLedger.isSettled(p) || ClaimLedger.ownerHashMoved(p)
                        || standingKeys(live, c, quota).size() < quota) {
                    continue;
                }
                ClaimWriter.Rollback r = writer.rollbackAsOf(p, c.keyHash());
                LOG.info("swept pod={}/{} key={} outcome=lost-to-owner-quota result={}", pods.namespace(), c.pod(),
                        Hashes.keyHashPrefix(c.keyHash()), r.name().toLowerCase(java.util.Locale.ROOT));
                if (r == ClaimWriter.Rollback.ROLLED_BACK) {
                    released++;
                }
            }
        }
        return released;
    }

    /**
     * The keys other than {@code c}'s of the live claims among {@code owned} that stand (settled, or judged standing
     * here at their commit: that very claim), record a quota from 1 to {@code quota} and were not moved from the
     * legacy owner hash (judged without counting {@code c}'s hash).
     */
    private Set<String> standingKeys(List<Pod> owned, ClaimLedger.Claim c, int quota) {
        Set<String> keys = new HashSet<>();
        for (Pod p : owned) {
            String key = ManagedPods.keyHash(p);
            int q = ClaimLedger.ownerQuota(p);
            if (key.isEmpty() || key.equals(c.keyHash()) || !ManagedPods.isManaged(p) || !ManagedPods.isClaimed(p)
                    || ManagedPods.isTerminating(p) || !c.ownerHash().equals(ManagedPods.ownerHash(p)) || q <= 0
                    || q > quota || ClaimLedger.ownerHashMoved(p)) {
                continue;
            }
            if (ClaimLedger.isSettled(p) || judgedStanding(p)) {
                keys.add(key);
            }
        }
        return keys;
    }

    /** This replica's watch judged the claim the pod carries (the very claim: its claim-id) standing at its commit. */
    private boolean judgedStanding(Pod p) {
        String claimId = ClaimLedger.claimId(p);
        return !claimId.isEmpty() && pods.claimOn(ManagedPods.name(p)).filter(k -> k.stands()
                && k.uid().equals(ClaimLedger.uid(p)) && k.claimId().equals(claimId)
                && k.keyHash().equals(ManagedPods.keyHash(p))).isPresent();
    }
}
