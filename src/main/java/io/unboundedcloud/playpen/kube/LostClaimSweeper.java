package io.unboundedcloud.playpen.kube;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * Takes back claims that lost but are still on their pods well after their writer should have rolled them back
 * (it died between its claim and the rollback). A lost claim was never handed out, so the pod goes back to the
 * pool; the rollback is conditional and yields to a write that settled the claim meanwhile. Run by every replica,
 * not only the leader: only a replica whose watch delivered a claim's commit judged it lost, and a replica that
 * first listed it (a leader started since) holds it undecided, unable to tell it from the claim that stood unless
 * that one is settled (see {@link #sweepBesideSettled}).
 */
public final class LostClaimSweeper {
    private static final Logger LOG = LoggerFactory.getLogger(LostClaimSweeper.class);
    /** Far longer than a writer needs to judge and roll back its own claim (see Allocator). */
    static final long GRACE_NANOS = 2 * Allocator.DECIDE_TIMEOUT_NANOS;

    private final PodCache pods;
    private final ClaimWriter writer;
    private final long graceNanos;
    /** When this replica first saw each lost claim (pod name and its commit). */
    private final Map<String, Long> firstSeen = new ConcurrentHashMap<>();

    public LostClaimSweeper(PodCache pods, ClaimWriter writer) {
        this(pods, writer, GRACE_NANOS);
    }

    LostClaimSweeper(PodCache pods, ClaimWriter writer, long graceNanos) {
        this.pods = pods;
        this.writer = writer;
        this.graceNanos = graceNanos;
    }

    /** One pass: rolls back the lost claims seen for longer than the grace; returns how many went back. */
    public int sweep() {
        long now = System.nanoTime();
        Set<String> current = new HashSet<>();
        int released = 0;
        for (ClaimLedger.Claim c : pods.lostClaims()) {
            if (!pastGrace(c, now, current)) {
                continue;
            }
            Pod pod = pods.get(c.pod()).orElse(null);
            if (pod == null) {
                continue;
            }
            ClaimWriter.Rollback r = writer.rollback(pod, c.keyHash());
            LOG.info("swept pod={}/{} key={} outcome=lost-claim-left-behind result={}", pods.namespace(), c.pod(),
                    Hashes.keyHashPrefix(c.keyHash()), r.name().toLowerCase(java.util.Locale.ROOT));
            if (r == ClaimWriter.Rollback.ROLLED_BACK) {
                released++;
            }
        }
        released += sweepBesideSettled(now, current);
        firstSeen.keySet().retainAll(current);
        return released;
    }

    /** Whether this replica first saw the claim (pod and commit) longer than the grace ago; notes it as current. */
    private boolean pastGrace(ClaimLedger.Claim c, long now, Set<String> current) {
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
            if (pastGrace(c, now, current)) {
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
                boolean undecidedHere = e.getValue().stream().anyMatch(
                        c -> c.pod().equals(ManagedPods.name(p)) && c.uid().equals(ClaimLedger.uid(p)));
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
