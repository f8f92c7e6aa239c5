package io.unboundedcloud.playpen.kube;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * The claimed pods a read of allocations covers, listed from the API server itself rather than from this replica's
 * watch cache: {@code kubectl get allocs} right after an alloc answered by another replica shows it, and a
 * deallocated one is gone, however far this replica's watch lags. Claims written before the owner label existed
 * carry only the owner annotation; those are taken from the cache. Claims that lost (and are being rolled back)
 * are never shown: nobody was handed them. That verdict is this replica's ledger's, and only about the very claim
 * it judged (the same claim-id): a pod listed with another claim of the key than the lost one the watch holds (made
 * on the pod again after the lost one was taken back, or taken back since the LIST) is shown, like a claim this
 * replica has not judged. A pod listed with the lost claim's own claim-id, unsettled, is left out at once, at any
 * later version; one whose claim has no claim-id is judged once the watch has reached the version listed (a later
 * claim of the same key, indistinguishable, may stand there).
 */
public final class ClaimReads {
    private final PodCache pods;
    private final ClaimWriter api;
    private final long watchWaitMillis;

    public ClaimReads(PodCache pods, ClaimWriter api) {
        this(pods, api, WATCH_WAIT_MILLIS);
    }

    /** With its own wait for the watch ({@code watchWaitMillis}; 0: judge only what the watch has delivered). */
    ClaimReads(PodCache pods, ClaimWriter api, long watchWaitMillis) {
        this.pods = pods;
        this.api = api;
        this.watchWaitMillis = watchWaitMillis;
    }

    /**
     * The claimed managed pods of one owner ({@code ownerHash}; null: everyone's), or the one allocation
     * {@code allocationId} when it is not null.
     */
    public List<Pod> claimed(String ownerHash, String allocationId) {
        return claimedAt(ownerHash, allocationId).pods();
    }

    /** Claimed pods as the API server listed them, and the list's resourceVersion ("" when it gave none). */
    public record Listed(List<Pod> pods, String resourceVersion) {
    }

    /**
     * The label and its values that select the claimed pods of a read: any value when {@code values} is empty, else
     * one of them ({@code label in (...)} when there are several).
     */
    public record Selector(String label, List<String> values) {
        public Selector {
            values = List.copyOf(values);
        }
    }

    /**
     * What selects the claimed pods of one owner ({@code ownerHash}; null: everyone's), or of the one allocation
     * {@code allocationId} when it is not null, on the API server.
     */
    public static Selector selector(String ownerHash, String allocationId) {
        if (allocationId != null) {
            return new Selector(PlaypenKeys.ALLOCATED, List.of(allocationId));
        }
        return ownerHash != null ? new Selector(PlaypenKeys.OWNER_HASH_LABEL, List.of(ClaimWriter.labelValue(ownerHash)))
                : new Selector(PlaypenKeys.ALLOCATED, List.of());
    }

    /**
     * What selects the claimed pods of {@code owner} in both its hashes (null: everyone's), or of the one allocation
     * {@code allocationId} when it is not null: one selector ({@code owner-hash in (keyed, legacy)}), so that one
     * watch of it sees a claim's changes in the order they were made, its move from the legacy hash to the keyed
     * one as a change (two watches, one per hash, could deliver that move's two halves in either order).
     */
    public static Selector selector(io.unboundedcloud.playpen.model.OwnerHashes.Owner owner, String allocationId) {
        if (allocationId != null || owner == null) {
            return selector((String) null, allocationId);
        }
        return new Selector(PlaypenKeys.OWNER_HASH_LABEL, java.util.stream.Stream.of(owner.current(), owner.legacy())
                .filter(java.util.Objects::nonNull).map(ClaimWriter::labelValue).distinct().toList());
    }

    /** {@link #claimed}, with the resourceVersion of the API server's list. */
    public Listed claimedAt(String ownerHash, String allocationId) {
        Selector selector = selector(ownerHash, allocationId);
        String label = selector.label();
        io.fabric8.kubernetes.api.model.PodList listed = api.listPods(pods.namespace(), label, selector.values());
        Map<String, Pod> out = new LinkedHashMap<>();
        for (Pod p : listed.getItems()) {
            if (shown(p)) {
                out.put(ManagedPods.name(p), p);
            }
        }
        Collection<Pod> cached = ownerHash != null ? pods.byOwnerHash(ownerHash) : List.of();
        for (Pod p : cached) {
            if (!ManagedPods.labels(p).containsKey(label) && shown(p) && !out.containsKey(ManagedPods.name(p))) {
                out.put(ManagedPods.name(p), p);
            }
        }
        String version = listed.getMetadata() == null || listed.getMetadata().getResourceVersion() == null ? ""
                : listed.getMetadata().getResourceVersion();
        return new Listed(new ArrayList<>(out.values()), version);
    }

    private boolean shown(Pod p) {
        return shown(p, watchWaitMillis);
    }

    /**
     * Whether a read shows the claimed managed pod {@code p}: not when this replica's watch judged this very claim
     * lost (see the class comment). {@code waitMillis} bounds the wait for the watch to reach the pod's version; 0
     * judges by what it has delivered (a claim it has not judged is shown).
     */
    public boolean shown(Pod p, long waitMillis) {
        if (!ManagedPods.isManaged(p) || !ManagedPods.isClaimed(p)) {
            return false;
        }
        String name = ManagedPods.name(p);
        java.util.Optional<ClaimLedger.Claim> held = pods.claimOn(name);
        if (!lostOfKey(held, p)) {
            return true;
        }
        if (!ClaimLedger.claimId(p).isEmpty() && lost(held, p) && !ClaimLedger.isSettled(p)) {
            // the very claim the watch saw lose (its claim-id), at whatever later version it is listed, unless a
            // write has settled it since (it stands then: another replica found it its key's only claim)
            return false;
        }
        // this watch judged a claim of the key on this pod lost; the pod as listed may carry another claim of the
        // key (the lost one rolled back, the key claimed there again: another claim-id, or none, for a claim written
        // without one cannot be told from one made again), later than the watch has
        // delivered or earlier: judge the listed one once the watch is at its version (at once when it is there
        // already). Hidden only when the claim the watch holds then is the listed one and lost; a verdict on
        // another claim of the key says nothing of the listed one
        try {
            return !lost(pods.awaitClaim(name, ClaimLedger.resourceVersion(p)).get(waitMillis,
                    TimeUnit.MILLISECONDS), p);
        } catch (TimeoutException | ExecutionException e) {
            return true; // undecided here, shown like a claim seen in a relist
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw io.unboundedcloud.playpen.api.ApiException.interrupted(1);
        }
    }

    /** How long a read waits for this replica's watch to reach a pod's listed version. */
    private static final long WATCH_WAIT_MILLIS = 10_000;

    /** The claim, a lost one, is this very claim of the pod as listed: the same uid, key and claim-id. */
    private static boolean lost(java.util.Optional<ClaimLedger.Claim> claim, Pod p) {
        return lostOfKey(claim, p) && claim.get().claimId().equals(ClaimLedger.claimId(p));
    }

    /** The claim, a lost one, is of the same pod (uid) and key as the pod as listed, whatever its claim-id. */
    private static boolean lostOfKey(java.util.Optional<ClaimLedger.Claim> claim, Pod p) {
        return claim.filter(c -> c.standing() == ClaimLedger.Standing.LOST && c.uid().equals(ClaimLedger.uid(p))
                && c.keyHash().equals(ManagedPods.keyHash(p))).isPresent();
    }
}
