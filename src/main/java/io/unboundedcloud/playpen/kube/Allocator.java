package io.unboundedcloud.playpen.kube;

import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.ManagedPods;

/**
 * Hands out pods exactly once (DESIGN §2): single-flight per key hash in this process, replay from the
 * watch-fed cache, and otherwise a walk over the kind's consistent-hash ring from the key, one conditional patch per
 * try, each pod reserved within this replica while a request writes to it.
 */
public final class Allocator {
    private static final Logger LOG = LoggerFactory.getLogger(Allocator.class);
    private static final int SAME_POD_RETRIES = 3;
    private static final long RESERVATION_WAIT_SECONDS = 30;
    /** Probes (walks restarted after meeting another key's claim) before one walk tries every pod in turn. */
    private static final int MAX_PROBES = 64;
    private static final java.util.Comparator<Pod> CLAIM_ORDER = java.util.Comparator
            .comparing((Pod p) -> ManagedPods.annotations(p).getOrDefault(PlaypenKeys.CLAIMED_AT, ""))
            .thenComparing(ManagedPods::name);
    public static final String CONFLICT_MESSAGE = "idempotency key was already used with a different request";

    /** A claimed pod (new or replayed) and the ExternalIP of its node. */
    public record Allocation(Pod pod, String externalIp, boolean replay) {
    }

    private final PodCache pods;
    private final NodeCache nodes;
    private final ClaimWriter writer;
    private final Candidates candidates;
    private final int retryAfterSeconds;
    private final int maxPerOwner;
    /** Per-owner critical sections (striped) so one replica's count-then-claim never admits two at once. */
    private final Object[] ownerStripes = new Object[64];
    private final Map<String, CompletableFuture<Allocation>> inFlight = new ConcurrentHashMap<>();
    /** Pods a request of this replica is writing to now (see {@link #visit}). */
    private final Map<String, CompletableFuture<Void>> reserved = new ConcurrentHashMap<>();
    private final java.util.concurrent.atomic.LongAdder reservationWaits = new java.util.concurrent.atomic.LongAdder();

    public Allocator(PodCache pods, NodeCache nodes, ClaimWriter writer, Candidates candidates, int retryAfterSeconds) {
        this(pods, nodes, writer, candidates, retryAfterSeconds, 0);
    }

    /** {@code maxPerOwner}: allocations one owner may hold at once (--max-allocs-per-user); 0 = unlimited. */
    public Allocator(PodCache pods, NodeCache nodes, ClaimWriter writer, Candidates candidates, int retryAfterSeconds,
            int maxPerOwner) {
        this.maxPerOwner = maxPerOwner;
        for (int i = 0; i < ownerStripes.length; i++) {
            ownerStripes[i] = new Object();
        }
        this.pods = pods;
        this.nodes = nodes;
        this.writer = writer;
        this.candidates = candidates;
        this.retryAfterSeconds = retryAfterSeconds;
    }

    /** Thrown (never seen by clients) by {@link #tryAllocate} when nothing is claimable: no 503 text is built. */
    private static final ApiException NO_CAPACITY = new ApiException(503, "ServiceUnavailable", "no capacity");

    /** Allocates for a validated command; concurrent calls with one key share one outcome. */
    public Allocation allocate(AllocCommand cmd) {
        return allocate(cmd, null);
    }

    /**
     * Allocates for {@code ownerHash} (null: no owner recorded, no quota): the claim carries the owner annotation,
     * and a new claim beyond {@code maxPerOwner} is 429 (a replay of an existing claim never counts).
     */
    public Allocation allocate(AllocCommand cmd, String ownerHash) {
        return allocate(cmd, ownerHash, true);
    }

    /**
     * Like {@link #allocate} but empty instead of the 503 when nothing is claimable right now (the waiting queue
     * asks this on every wake-up, so the 503's reasons, a walk over every pod, are not built).
     */
    public Optional<Allocation> tryAllocate(AllocCommand cmd, String ownerHash) {
        try {
            return Optional.of(allocate(cmd, ownerHash, false));
        } catch (ApiException e) {
            if (e == NO_CAPACITY) {
                return Optional.empty();
            }
            throw e;
        }
    }
    /** The existing claim of this key, replayed (409 when the request differs); empty when the key holds none. */
    public Optional<Allocation> replay(AllocCommand cmd) {
        requireSynced();
        List<Pod> claimed = pods.byKeyHash(cmd.keyHash());
        if (claimed.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(replayOrConflict(claimed.stream().min(CLAIM_ORDER).orElseThrow(), cmd));
    }

    /** Today's 503 for a command that found nothing claimable, with the reference's reasons. */
    public ApiException unavailable(AllocCommand cmd) {
        return ApiException.unavailable(Candidates.unavailableMessage(cmd,
                candidates.select(cmd, pods.pods(), nodes::externalIp)), retryAfterSeconds);
    }

    private Allocation allocate(AllocCommand cmd, String ownerHash, boolean explain) {
        requireSynced();
        CompletableFuture<Allocation> mine = new CompletableFuture<>();
        CompletableFuture<Allocation> running = inFlight.putIfAbsent(cmd.keyHash(), mine);
        if (running != null) {
            return join(running, cmd, ownerHash, explain);
        }
        try {
            Allocation a = doAllocate(cmd, ownerHash, explain);
            mine.complete(a);
            return a;
        } catch (RuntimeException e) {
            mine.completeExceptionally(e);
            throw e;
        } finally {
            inFlight.remove(cmd.keyHash(), mine);
        }
    }

    private Allocation join(CompletableFuture<Allocation> running, AllocCommand cmd, String ownerHash, boolean explain) {
        Allocation first;
        try {
            first = running.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof ApiException api && (api.code() == 409 || api == NO_CAPACITY)) {
                // the owner's request conflicted with the existing claim; ours may be the matching one (or the
                // owner asked without explaining a 503 that this caller must explain)
                return doAllocate(cmd, ownerHash, explain);
            }
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw e;
        }
        // the shared outcome is ours only if the request matches; otherwise it is the same key reused
        return replayOrConflict(first.pod(), cmd);
    }

    private Allocation doAllocate(AllocCommand cmd, String ownerHash, boolean explain) {
        List<Pod> claimed = pods.byKeyHash(cmd.keyHash());
        if (!claimed.isEmpty()) {
            // normally one pod; should replicas with diverging caches ever have claimed two, every replica
            // replays the same one: the earliest claim, then the lowest name
            return replayOrConflict(claimed.stream().min(CLAIM_ORDER).orElseThrow(), cmd);
        }
        if (maxPerOwner > 0 && ownerHash != null) {
            // count and claim under the owner's lock: this replica's own claims are in the cache's overlay at once,
            // so its next count includes them; other replicas' claims count once their watch delivers them
            synchronized (ownerStripes[Math.floorMod(ownerHash.hashCode(), ownerStripes.length)]) {
                long held = ownedBy(ownerHash);
                if (held >= maxPerOwner) {
                    LOG.info("refused key={} outcome=quota-exceeded held={} max={}", cmd.keyHashPrefix(), held,
                            maxPerOwner);
                    throw new ApiException(429, "TooManyRequests", "allocation quota exceeded: you hold " + held
                            + " of at most " + maxPerOwner + " allocations (--max-allocs-per-user); deallocate one"
                            + " first", Map.of("Retry-After", String.valueOf(retryAfterSeconds)));
                }
                return ringWalk(cmd, ownerHash, explain);
            }
        }
        return ringWalk(cmd, ownerHash, explain);
    }

    /** Live claims (not being deleted) recorded with this owner hash, as this process sees the cluster now. */
    public long ownedBy(String ownerHash) {
        return pods.byOwnerHash(ownerHash).stream()
                .filter(p -> ManagedPods.isClaimed(p) && !ManagedPods.isTerminating(p))
                .count();
    }

    /** The ring walk of a command (quota already checked): the claim or a replay, else the 503. */
    private Allocation ringWalk(AllocCommand cmd, String ownerHash, boolean explain) {
        // walk the kind's consistent-hash ring from the key: replicas share the order, so a same-key race ends in a
        // 409 on the winner's pod and a replay. Each pod is judged by its freshest version when the walk reaches it,
        // and claimed pods keep their place on the ring, so a claim made for this key since the read above (by
        // another replica) is met and replayed rather than passed by. Reaching a pod claimed by another key (found
        // so, or lost to it just now: the rule must not depend on which, or replicas would part ways) sends the walk
        // to the key's next probe (Hashes.probeStart), the same sequence on every replica; pods that cannot serve
        // (not ready, gone) are passed clockwise. After MAX_PROBES probes one last walk tries every pod. What
        // replicas do not always share is the ring itself: a pod that became idle within one replica's watch lag
        // can be on one ring only.
        String kind = Candidates.idleKindKey(cmd);
        long seed = Hashes.seed(cmd.keyHash());
        for (int k = 0; k <= MAX_PROBES; k++) {
            Visit v = walk(kind, Hashes.probeStart(seed, k), cmd, ownerHash, k == MAX_PROBES);
            if (v.allocation() != null) {
                return v.allocation();
            }
            if (!v.claimedByOther()) {
                break; // round the whole ring without a usable pod: more probes would find none either
            }
        }
        // nothing usable, or every usable candidate was taken by someone else while we walked: explain why
        if (!explain) {
            throw NO_CAPACITY;
        }
        throw unavailable(cmd);
    }

    /** What a walk or a visit came to: an allocation, or whether it met a pod claimed by another key. */
    private record Visit(Allocation allocation, boolean claimedByOther) {
    }

    private static final Visit PASS = new Visit(null, false);
    private static final Visit CLAIMED_BY_OTHER = new Visit(null, true);

    /**
     * Clockwise from {@code start}, once round. Returns at the first pod claimed by another key (the caller moves
     * to the next probe) unless {@code tryAll}, which passes those too.
     */
    private Visit walk(String kind, long start, AllocCommand cmd, String ownerHash, boolean tryAll) {
        Iterator<String> ring = pods.ring(kind, start);
        boolean metClaimed = false;
        while (ring.hasNext()) {
            Visit v = visit(ring.next(), cmd, ownerHash);
            if (v.allocation() != null) {
                return v;
            }
            if (v.claimedByOther()) {
                if (!tryAll) {
                    return CLAIMED_BY_OTHER;
                }
                metClaimed = true;
            }
        }
        return metClaimed ? CLAIMED_BY_OTHER : PASS;
    }

    /**
     * One pod of the walk, under this replica's reservation of it: two requests of this replica never write to
     * one pod at once (no self-inflicted 409s). A request that finds the pod reserved waits for the holder's
     * attempt to end and then judges the pod again from the cache, which the holder has updated; it does not skip
     * ahead unseen, since the shared order is what turns a cross-replica same-key race into a replay (DESIGN §2).
     */
    private Visit visit(String name, AllocCommand cmd, String ownerHash) {
        while (true) {
            CompletableFuture<Void> mine = new CompletableFuture<>();
            CompletableFuture<Void> held = reserved.putIfAbsent(name, mine);
            if (held != null) {
                reservationWaits.increment();
                awaitQuietly(held);
                continue;
            }
            try {
                Pod fresh = pods.get(name).orElse(null);
                if (fresh == null) {
                    return PASS;
                }
                Candidates.Verdict verdict = candidates.classify(cmd, fresh, nodes::externalIp);
                if (verdict == Candidates.Verdict.CLAIMED_BY_THIS_KEY) {
                    return new Visit(replayOrConflict(fresh, cmd), false);
                }
                if (verdict == Candidates.Verdict.USABLE) {
                    Optional<Allocation> a = tryClaim(candidates.usable(cmd, fresh, nodes::externalIp), cmd, ownerHash);
                    if (a.isPresent()) {
                        return new Visit(a.get(), false);
                    }
                    // lost it (tryClaim recorded what it learnt in the cache): judge it as found now
                    fresh = pods.get(name).orElse(null);
                }
                return fresh != null && ManagedPods.isClaimed(fresh) && !cmd.keyHash().equals(ManagedPods.keyHash(fresh))
                        ? CLAIMED_BY_OTHER : PASS;
            } finally {
                reserved.remove(name, mine);
                mine.complete(null);
            }
        }
    }

    private static void awaitQuietly(CompletableFuture<Void> held) {
        try {
            // the holder's attempt is a few bounded API calls; past this, write anyway (the precondition guards it)
            held.get(RESERVATION_WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw ApiException.unavailable("interrupted", 1);
        } catch (ExecutionException | TimeoutException e) {
            // judge the pod afresh
        }
    }

    /** How often a request of this replica waited for another one's attempt on the same pod (metrics, bench). */
    public long reservationWaits() {
        return reservationWaits.sum();
    }

    /** The hot path's selection alone (bench): the first candidate this key would try now, without claiming it. */
    public Optional<Candidates.Usable> firstCandidate(AllocCommand cmd) {
        String kind = Candidates.idleKindKey(cmd);
        long seed = Hashes.seed(cmd.keyHash());
        for (int k = 0; k < MAX_PROBES; k++) {
            Iterator<String> ring = pods.ring(kind, Hashes.probeStart(seed, k));
            boolean claimedByOther = false;
            while (ring.hasNext() && !claimedByOther) {
                Pod fresh = pods.get(ring.next()).orElse(null);
                if (fresh == null) {
                    continue;
                }
                if (candidates.classify(cmd, fresh, nodes::externalIp) == Candidates.Verdict.USABLE) {
                    return Optional.of(candidates.usable(cmd, fresh, nodes::externalIp));
                }
                claimedByOther = ManagedPods.isClaimed(fresh);
            }
            if (!claimedByOther) {
                break;
            }
        }
        return Optional.empty();
    }

    private Optional<Allocation> tryClaim(Candidates.Usable u, AllocCommand cmd, String ownerHash) {
        String ns = u.pod().getMetadata().getNamespace();
        String name = u.pod().getMetadata().getName();
        Pod current = u.pod();
        String rv = current.getMetadata().getResourceVersion();
        for (int attempt = 0; attempt < SAME_POD_RETRIES; attempt++) {
            try {
                Pod claimed = writer.claim(current, rv, cmd, ownerHash);
                pods.observe(claimed);
                LOG.info("claimed pod={}/{} key={} outcome=allocated", ns, name, cmd.keyHashPrefix());
                return Optional.of(new Allocation(claimed, u.externalIp(), false));
            } catch (KubernetesClientException e) {
                if (e.getCode() == 404) {
                    pods.observeDeleted(name);
                    return Optional.empty();
                }
                if (e.getCode() != 409) {
                    throw e;
                }
                LOG.debug("claim conflict pod={}/{} rv={}: {}", ns, name, rv, e.getMessage());
            }
            Pod fresh = writer.read(ns, name);
            if (fresh == null) {
                pods.observeDeleted(name);
                return Optional.empty();
            }
            pods.observe(fresh);
            if (ManagedPods.isClaimed(fresh)) {
                if (cmd.keyHash().equals(ManagedPods.keyHash(fresh))) {
                    // another replica (or request) claimed it for this very key: replay its claim
                    return Optional.of(replayOrConflict(fresh, cmd));
                }
                return Optional.empty();
            }
            if (candidates.classify(cmd, fresh, nodes::externalIp) != Candidates.Verdict.USABLE) {
                return Optional.empty();
            }
            current = fresh;
            rv = fresh.getMetadata().getResourceVersion();
        }
        return Optional.empty();
    }

    private Allocation replayOrConflict(Pod pod, AllocCommand cmd) {
        String reqHash = ManagedPods.annotations(pod).getOrDefault(PlaypenKeys.REQUEST_HASH, "");
        if (!reqHash.equals(cmd.requestHash())) {
            throw ApiException.conflict(CONFLICT_MESSAGE);
        }
        String node = pod.getSpec() == null ? null : pod.getSpec().getNodeName();
        return new Allocation(pod, nodes.externalIp(node).orElse(""), true);
    }

    /** Deletes the managed pods claimed with this key hash; returns the pods this call deleted (or found gone). */
    public List<Pod> deallocate(String keyHash) {
        requireSynced();
        CompletableFuture<Allocation> running = inFlight.get(keyHash);
        if (running != null) {
            running.handle((a, e) -> null).join();
        }
        List<Pod> deleted = new java.util.ArrayList<>();
        for (Pod pod : pods.byKeyHash(keyHash)) {
            if (!writer.deleteIfClaimedBy(pod, keyHash)) {
                LOG.info("skipped pod={}/{} key={} outcome=claimed-by-another-key", pod.getMetadata().getNamespace(),
                        pod.getMetadata().getName(), Hashes.keyHashPrefix(keyHash));
                continue;
            }
            pods.observeDeleted(pod.getMetadata().getName());
            LOG.info("deleted pod={}/{} key={} outcome=deallocated", pod.getMetadata().getNamespace(),
                    pod.getMetadata().getName(), Hashes.keyHashPrefix(keyHash));
            deleted.add(pod);
        }
        return deleted;
    }

    private void requireSynced() {
        if (!pods.hasSynced() || !nodes.hasSynced()) {
            throw ApiException.unavailable("the operator's pod and node caches are not synced yet", retryAfterSeconds);
        }
    }
}
