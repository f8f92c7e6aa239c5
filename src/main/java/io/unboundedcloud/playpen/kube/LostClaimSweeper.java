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
     * One pass over the claims this replica first saw in a LIST beside a standing claim of their key: see
     * {@link #sweepBesideSettled}. Returns how many went back.
     */
    public int sweepListed() {
        long now = nanoTime.getAsLong();
        Set<String> current = new HashSet<>();
        int released = sweepBesideSettled(now, current);
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
}
