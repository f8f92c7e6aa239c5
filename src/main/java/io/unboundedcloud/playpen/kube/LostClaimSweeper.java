package io.unboundedcloud.playpen.kube;

import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.Hashes;

/**
 * Takes back claims that lost but are still on their pods well after their writer should have rolled them back
 * (it died between its claim and the rollback). A lost claim was never handed out, so the pod goes back to the
 * pool; the rollback is conditional and yields to a write that settled the claim meanwhile. Run by every replica,
 * not only the leader: only a replica whose watch delivered a claim's commit judged it lost, and a replica that
 * first listed it (a leader started since) holds it undecided, unable to tell it from the claim that stood.
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
            String id = c.pod() + "@" + c.claimRv();
            current.add(id);
            long seen = firstSeen.computeIfAbsent(id, k -> now);
            if (now - seen < graceNanos) {
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
        firstSeen.keySet().retainAll(current);
        return released;
    }
}
