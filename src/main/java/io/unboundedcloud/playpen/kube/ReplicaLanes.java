package io.unboundedcloud.playpen.kube;

import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * Which pods this replica tries first for a new claim, so that replicas allocating at once do not write to the same
 * idle pods. Each claim records the replica that wrote it (annotation {@code claimed-by}: a hash of the replica's
 * identity, see {@link ClaimWriter}); from the claims its watch delivers, every replica knows which replicas are
 * allocating now (those seen in the last {@link #MEMBER_TTL_NANOS}, and itself). Rendezvous hashing of each pod's
 * name over those replicas gives every pod one lane; a replica walks its own lane first, and the whole ring only
 * when its lane has nothing to claim. Two replicas that agree on who is allocating never pick the same idle pod;
 * while their views differ (one just started, or just stopped), they may, and the conditional write sorts it out as
 * before (409).
 * <p>
 * Nothing about which claim stands depends on this (the claim ledger decides that from the order of commits): a
 * request for a key another replica is claiming at the same moment writes a claim in its own lane, the later of the
 * two loses, is rolled back, and its request answers with the claim that stands, as a replay.
 */
public final class ReplicaLanes implements PodCache.Listener {
    /** A replica not seen claiming for this long is no longer counted (a stopped one, or one with no work). */
    static final long MEMBER_TTL_NANOS = TimeUnit.SECONDS.toNanos(30);

    private final String self;
    private final long selfSeed;
    private final LongSupplier nanoTime;
    private final Map<String, Long> lastSeen = new ConcurrentHashMap<>();
    /** The seeds of the replicas counted now, this one included, sorted; length 1: only this one (no lanes). */
    private volatile long[] members;
    private volatile long nextExpiry;

    /** Lanes of a replica with this identity (its leader-election identity: unique per process). */
    public ReplicaLanes(String identity) {
        this(identity, System::nanoTime);
    }

    ReplicaLanes(String identity, LongSupplier nanoTime) {
        this.self = idOf(identity);
        this.selfSeed = Hashes.seed(self);
        this.nanoTime = nanoTime;
        this.members = new long[] {selfSeed};
        this.nextExpiry = nanoTime.getAsLong() + MEMBER_TTL_NANOS * 1000;
    }

    /** One replica alone: every pod is its own (tests, and callers that do not split the ring). */
    public static ReplicaLanes alone() {
        return new ReplicaLanes("alone");
    }

    /** The value this replica's claims carry in {@code claimed-by}: 16 hex characters of a hash of its identity. */
    public String self() {
        return self;
    }

    static String idOf(String identity) {
        return Hashes.sha256Hex(identity).substring(0, 16);
    }

    /** Whether the pod is in this replica's lane (always, while no other replica is seen claiming). */
    public boolean mine(String podName) {
        long[] m = current();
        if (m.length == 1) {
            return true;
        }
        long best = Long.MIN_VALUE;
        long owner = 0;
        for (long seed : m) {
            long score = Hashes.rendezvous(seed, podName);
            if (score > best || score == best && seed < owner) {
                best = score;
                owner = seed;
            }
        }
        return owner == selfSeed;
    }

    /** How many replicas share the ring now, this one included. */
    public int replicas() {
        return current().length;
    }

    private long[] current() {
        if (nanoTime.getAsLong() - nextExpiry >= 0) {
            expire();
        }
        return members;
    }

    @Override
    public void onPodEvent(PodCache.Change change, Pod pod) {
        if (change == PodCache.Change.DELETED || !ManagedPods.isClaimed(pod)) {
            return;
        }
        String by = ManagedPods.annotations(pod).get(PlaypenKeys.CLAIMED_BY);
        if (by == null || by.length() != 16 || by.equals(self) || !by.chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
            return;
        }
        seen(by);
    }

    /** Another replica was seen claiming now. */
    void seen(String replica) {
        long now = nanoTime.getAsLong();
        if (lastSeen.put(replica, now) == null) {
            rebuild(now);
        }
    }

    private synchronized void expire() {
        long now = nanoTime.getAsLong();
        if (now - nextExpiry < 0) {
            return;
        }
        lastSeen.values().removeIf(t -> now - t >= MEMBER_TTL_NANOS);
        rebuild(now);
    }

    private synchronized void rebuild(long now) {
        long[] m = new long[lastSeen.size() + 1];
        int i = 0;
        long oldest = Long.MAX_VALUE;
        for (Map.Entry<String, Long> e : lastSeen.entrySet()) {
            if (i < m.length - 1) {
                m[i++] = Hashes.seed(e.getKey());
                oldest = Math.min(oldest, e.getValue());
            }
        }
        m[i++] = selfSeed;
        long[] sorted = Arrays.copyOf(m, i);
        Arrays.sort(sorted);
        members = sorted;
        // the next time a member may have lapsed: the oldest sighting's expiry (checked again then)
        nextExpiry = oldest == Long.MAX_VALUE ? now + MEMBER_TTL_NANOS * 1000 : oldest + MEMBER_TTL_NANOS;
    }
}
