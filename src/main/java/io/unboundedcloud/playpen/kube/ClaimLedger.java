package io.unboundedcloud.playpen.kube;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * Which claims stand, decided from the order in which the API server committed them.
 * <p>
 * A claim is a conditional write that puts an idempotency key on a pod. The API server orders all writes (the
 * resourceVersion), and a watch delivers a namespace's changes in that order, so a cache that has applied every
 * event up to a claim's own holds exactly the state at the moment the claim was committed. The claim <b>stands</b>
 * ({@link Standing#WON}) when, at that moment, no other live pod carried the same key and (when the claim recorded an
 * owner quota) its owner's live claims carried no more distinct keys than the quota allows, this one's included.
 * Otherwise it <b>lost</b>: its
 * writer rolls it back and never hands it out. Every replica that watched the commit continuously reaches the same
 * verdict, whatever its lag, because the verdict depends only on the committed history.
 * <p>
 * A claim first seen in a LIST (at start, or when the watch had to relist) has no such moment here: it is
 * {@link Standing#UNKNOWN} until a write settles it (see {@code ClaimWriter#settle}). A claim is one write: the same
 * pod (uid), the same key and the same {@code claim-id} (a random value each claim write puts on the pod); a version
 * of the pod with another claim-id is another claim, judged as a new one, and each {@link Claim} carries the
 * claim-id of the version judged. So a claim this ledger judged at its commit keeps its verdict when a LIST shows it
 * again with the same claim-id: it is still that write, and the verdict is a fact about its commit. A claim written
 * without a claim-id (by the Go operator, or before claim-ids existed) does not: an unsettled claim, even one that
 * stood, can be taken back by its writer (its client left before the answer) and the pod claimed again with the same
 * key by a claim that lost, unseen, so the same key on the same pod is not known to be the same claim; after a LIST
 * it is undecided.
 * <p>
 * The quota counts allocations (keys), not claims: a lost second claim of a key the owner holds, still on its pod
 * until its writer (or the lost-claim sweep) takes it back, is not a second allocation. Why at most q claims of an
 * owner stand at any time: at most one claim of a key stands, and a claim stands either by its verdict at its commit
 * or by a settle ({@code ClaimWriter#settle}). Take the standing claims of an owner at some moment and, among them,
 * the one committed last, X. The others were committed before X and are live until now, so they were live at X's
 * commit and again at any moment between. If X stood at its commit, the keys counted then include theirs and X's,
 * all distinct (one standing claim per key): at most q. If X stood by a settle, the settle was written only after a
 * consistent LIST of the owner's live claims, taken after X's commit, counted at most q keys (ClaimResolver); the
 * others, live then, are in it with distinct keys: at most q again. Renewals and replays settle only claims that
 * stand already. The rule reads only which live pods carry which key and owner at the commit, not their standing:
 * not counting claims that lost instead would not do, as a replica that relisted does not know they lost (they are
 * undecided there), and a claim that lost can still be settled by a settle whose LIST was taken before a later claim
 * of the owner committed without counting it.
 * <p>
 * Not thread-safe: the pod cache calls it under its watch store's lock, in the order the store applies changes.
 */
public final class ClaimLedger {
    /** Whether a claim may be handed out. */
    public enum Standing {
        /** Committed while it was its key's only live claim (and within its owner's quota): it is the allocation. */
        WON,
        /** Committed while another live pod carried its key (or over its owner's quota): to be rolled back. */
        LOST,
        /**
         * Seen in a LIST, not at its commit (or, written without a claim-id, seen in one since): undecided here
         * until settled.
         */
        UNKNOWN
    }

    /** Why a claim lost. */
    public enum Reason {
        NONE,
        /** Another live pod carried the same key when this claim was committed. */
        EARLIER_CLAIM,
        /** The owner already held as many claims as the quota recorded on this one allows. */
        QUOTA
    }

    /**
     * A pod that carries a claim now, as this cache knows it. {@code claimId} is the claim-id the claim was written
     * with (empty for a claim written without one): with the pod's uid and the key, what tells this claim from
     * another claim of the same key on the same pod, made once this one was taken back.
     */
    public record Claim(String pod, String uid, String keyHash, String claimId, String ownerHash, long claimRv,
            Standing standing, Reason reason, boolean terminating) {
        public boolean stands() {
            return standing == Standing.WON;
        }
    }

    private final Map<String, Claim> byPod = new HashMap<>();
    private final Map<String, Set<String>> byKey = new HashMap<>();
    private final Map<String, Set<String>> byOwner = new HashMap<>();
    /**
     * Keys with a live undecided claim beside a live standing one, kept on every change of their claims: the only
     * undecided claims a LIST can judge (see {@link #undecidedBesideStanding}), found without a walk of every claim.
     */
    private final Set<String> undecidedBesideStandingKeys = new HashSet<>();
    /**
     * Pods whose claim lost and is live (not being deleted), kept on every change of a claim: what {@link #lost()}
     * returns, found without a walk of every claim.
     */
    private final Set<String> lostPods = new HashSet<>();

    /**
     * A pod's new version. {@code exact} is true only when this is a watch event applied in commit order to a
     * store that held exactly the committed state just before it. A version that is not exact judges no new claim,
     * and keeps the verdict of a claim judged before only when it carries that claim's (non-empty) claim-id.
     */
    public Claim put(Pod pod, boolean exact) {
        String name = ManagedPods.name(pod);
        String key = ManagedPods.isManaged(pod) && ManagedPods.isClaimed(pod) ? ManagedPods.keyHash(pod) : "";
        Claim old = byPod.get(name);
        if (key.isEmpty()) {
            if (old != null) {
                drop(old);
            }
            return null;
        }
        String uid = uid(pod);
        String claimId = claimId(pod);
        boolean terminating = ManagedPods.isTerminating(pod);
        boolean settled = isSettled(pod);
        if (old != null && old.keyHash().equals(key) && old.uid().equals(uid) && old.claimId().equals(claimId)) {
            // the same claim (pod uid, key and claim-id), a later version of its pod (status, renewal, settle, delete
            // under way)
            Standing s = old.standing();
            Reason r = old.reason();
            if (settled) {
                s = Standing.WON;
                r = Reason.NONE;
            } else if (!exact && claimId.isEmpty()) {
                // unseen changes, and nothing tells this claim from another one of the key made on the pod since
                // (written without a claim-id: it may have been rolled back and claimed again unseen): undecided,
                // like every claim seen outside commit order. With the same claim-id it is the very write judged,
                // and its verdict, a fact about its commit, holds
                s = Standing.UNKNOWN;
                r = Reason.NONE;
            }
            Claim c = new Claim(name, uid, key, claimId, ManagedPods.ownerHash(pod), old.claimRv(), s, r, terminating);
            replace(old, c);
            return c;
        }
        if (old != null) {
            drop(old);
        }
        Standing s;
        Reason r = Reason.NONE;
        if (settled) {
            s = Standing.WON;
        } else if (!exact) {
            s = Standing.UNKNOWN;
        } else if (hasLiveClaim(key)) {
            s = Standing.LOST;
            r = Reason.EARLIER_CLAIM;
        } else if (overQuota(pod, key)) {
            s = Standing.LOST;
            r = Reason.QUOTA;
        } else {
            s = Standing.WON;
        }
        Claim c = new Claim(name, uid, key, claimId, ManagedPods.ownerHash(pod), resourceVersion(pod), s, r,
                terminating);
        add(c);
        return c;
    }

    /** The pod is gone. */
    public void remove(String podName) {
        Claim old = byPod.get(podName);
        if (old != null) {
            drop(old);
        }
    }

    private boolean hasLiveClaim(String key) {
        for (String p : byKey.getOrDefault(key, Set.of())) {
            if (!byPod.get(p).terminating()) {
                return true;
            }
        }
        return false;
    }

    /**
     * The quota recorded on the claim, counted against the keys of the owner's live claims at this moment, this
     * claim's key included: allocations, not claims (a lost second claim of a key the owner holds is not a second
     * allocation). Only the state at the commit counts (never a standing, which a replica that relisted does not
     * know), so every replica reaches the same verdict.
     */
    private boolean overQuota(Pod pod, String key) {
        int quota = ownerQuota(pod);
        String owner = ManagedPods.ownerHash(pod);
        if (quota <= 0 || owner.isEmpty()) {
            return false;
        }
        Set<String> keys = new HashSet<>();
        keys.add(key);
        for (String p : byOwner.getOrDefault(owner, Set.of())) {
            Claim c = byPod.get(p);
            if (!c.terminating()) {
                keys.add(c.keyHash());
            }
        }
        return keys.size() > quota;
    }

    public Optional<Claim> on(String podName) {
        return Optional.ofNullable(byPod.get(podName));
    }

    /** The pods carrying this key now, earliest claim first. */
    public List<Claim> ofKey(String keyHash) {
        return collect(byKey.get(keyHash));
    }

    public List<Claim> ofOwner(String ownerHash) {
        return collect(byOwner.get(ownerHash));
    }

    /**
     * Claims that lost and are still on their pods (their writer normally rolls them back within moments). From an
     * index kept on every change, so this costs the few claims returned, not all of them.
     */
    public List<Claim> lost() {
        List<Claim> out = new ArrayList<>(lostPods.size());
        for (String p : lostPods) {
            out.add(byPod.get(p));
        }
        return out;
    }

    /**
     * Claims seen in a LIST and not settled since, still live (undecided here), of the keys that also have a live
     * claim that stands. From an index kept on every change: after a restart every unsettled claim is undecided, and
     * most keys have no other claim, so this costs the few claims returned, not all of them.
     */
    public List<Claim> undecidedBesideStanding() {
        List<Claim> out = new ArrayList<>();
        for (String key : undecidedBesideStandingKeys) {
            for (String p : byKey.get(key)) {
                Claim c = byPod.get(p);
                if (c.standing() == Standing.UNKNOWN && !c.terminating()) {
                    out.add(c);
                }
            }
        }
        return out;
    }

    /**
     * Claims seen in a LIST and not settled since, still live (undecided here), of owners that also have a live
     * standing claim of another key: the only undecided claims a LIST can show lost to their owner's quota (see
     * LostClaimSweeper). Walks the owners' claims.
     */
    public List<Claim> undecidedBesideOwnersStanding() {
        List<Claim> out = new ArrayList<>();
        for (Set<String> owned : byOwner.values()) {
            Set<String> standingKeys = new HashSet<>();
            List<Claim> undecided = new ArrayList<>();
            for (String p : owned) {
                Claim c = byPod.get(p);
                if (c.terminating()) {
                    continue;
                }
                if (c.standing() == Standing.WON) {
                    standingKeys.add(c.keyHash());
                } else if (c.standing() == Standing.UNKNOWN) {
                    undecided.add(c);
                }
            }
            for (Claim c : undecided) {
                if (standingKeys.stream().anyMatch(k -> !k.equals(c.keyHash()))) {
                    out.add(c);
                }
            }
        }
        return out;
    }

    public int size() {
        return byPod.size();
    }

    private List<Claim> collect(Set<String> pods) {
        if (pods == null) {
            return List.of();
        }
        List<Claim> out = new ArrayList<>(pods.size());
        for (String p : pods) {
            out.add(byPod.get(p));
        }
        out.sort((a, b) -> a.claimRv() != b.claimRv() ? Long.compare(a.claimRv(), b.claimRv())
                : a.pod().compareTo(b.pod()));
        return out;
    }

    private void add(Claim c) {
        byPod.put(c.pod(), c);
        byKey.computeIfAbsent(c.keyHash(), k -> new LinkedHashSet<>()).add(c.pod());
        if (!c.ownerHash().isEmpty()) {
            byOwner.computeIfAbsent(c.ownerHash(), k -> new LinkedHashSet<>()).add(c.pod());
        }
        indexLost(c);
        reindex(c.keyHash());
    }

    private void replace(Claim old, Claim c) {
        if (!old.ownerHash().equals(c.ownerHash())) {
            drop(old);
            add(c);
        } else {
            byPod.put(c.pod(), c);
            indexLost(c);
            reindex(c.keyHash());
        }
    }

    private void drop(Claim c) {
        byPod.remove(c.pod());
        unindex(byKey, c.keyHash(), c.pod());
        if (!c.ownerHash().isEmpty()) {
            unindex(byOwner, c.ownerHash(), c.pod());
        }
        lostPods.remove(c.pod());
        reindex(c.keyHash());
    }

    /** Whether the pod's claim, now {@code c}, is a live lost one. */
    private void indexLost(Claim c) {
        if (c.standing() == Standing.LOST && !c.terminating()) {
            lostPods.add(c.pod());
        } else {
            lostPods.remove(c.pod());
        }
    }

    /** Whether the key has a live undecided claim beside a live standing one now, from its own claims (few). */
    private void reindex(String key) {
        boolean undecided = false;
        boolean standing = false;
        for (String p : byKey.getOrDefault(key, Set.of())) {
            Claim c = byPod.get(p);
            if (!c.terminating()) {
                undecided |= c.standing() == Standing.UNKNOWN;
                standing |= c.standing() == Standing.WON;
            }
        }
        if (undecided && standing) {
            undecidedBesideStandingKeys.add(key);
        } else {
            undecidedBesideStandingKeys.remove(key);
        }
    }

    private static void unindex(Map<String, Set<String>> index, String value, String pod) {
        Set<String> s = index.get(value);
        if (s != null) {
            s.remove(pod);
            if (s.isEmpty()) {
                index.remove(value);
            }
        }
    }

    static String uid(Pod pod) {
        String uid = pod.getMetadata().getUid();
        return uid == null ? "" : uid;
    }

    /** The claim-id the pod's claim was written with (empty: none). */
    public static String claimId(Pod pod) {
        String id = ManagedPods.annotations(pod).get(PlaypenKeys.CLAIM_ID);
        return id == null ? "" : id;
    }

    /** The pod's resourceVersion as a number (etcd revisions are), 0 when it is not one. */
    public static long resourceVersion(Pod pod) {
        String rv = pod.getMetadata().getResourceVersion();
        if (rv == null) {
            return 0;
        }
        try {
            return Long.parseLong(rv);
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    /** A write has settled this claim (see ClaimWriter#settle): it stands, whatever was known of its commit. */
    public static boolean isSettled(Pod pod) {
        return "true".equals(ManagedPods.annotations(pod).get(PlaypenKeys.CLAIM_SETTLED));
    }

    /**
     * The claim's owner hash was moved from the legacy form ({@code LegacyOwnerClaims}): its writer judged it against
     * the owner's claims under the legacy hash only.
     */
    public static boolean ownerHashMoved(Pod pod) {
        return "true".equals(ManagedPods.annotations(pod).get(PlaypenKeys.OWNER_HASH_MOVED));
    }

    /** The owner quota the claim was made under (0: none). */
    public static int ownerQuota(Pod pod) {
        String q = ManagedPods.annotations(pod).get(PlaypenKeys.OWNER_QUOTA);
        if (q == null) {
            return 0;
        }
        try {
            return Math.max(0, Integer.parseInt(q.trim()));
        } catch (NumberFormatException e) {
            return 0;
        }
    }
}
