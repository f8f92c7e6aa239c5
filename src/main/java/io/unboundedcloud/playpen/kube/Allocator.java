package io.unboundedcloud.playpen.kube;

import java.time.Instant;
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
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.TtlPolicy;

/**
 * Hands out pods exactly once per idempotency key, across any number of replicas. Within this process, requests
 * with one key share one outcome (single flight) and two requests never write to one pod at once. Across
 * replicas, a new claim is one conditional write walking the kind's consistent-hash ring from the key, and it is
 * handed out only once this replica's watch has delivered it and the {@link ClaimLedger} has judged it from the
 * API server's order of commits: it stands if no other live pod carried the key (and the owner's quota held) when
 * it was committed; otherwise it is rolled back with a conditional write and the request answers with the claim
 * that stands. A key that already holds a claim is replayed from the pod as the API server has it now
 * ({@link ClaimResolver}). docs/architecture.md gives the argument in full.
 */
public final class Allocator {
    private static final Logger LOG = LoggerFactory.getLogger(Allocator.class);
    private static final int SAME_POD_RETRIES = 3;
    /** Fence writes tried on one pod before a claim whose outcome is unknown is answered 503 (see fenceLostClaim). */
    private static final int FENCE_ATTEMPTS = 3;
    private static final long RESERVATION_WAIT_SECONDS = 30;
    /** How long a request may wait for this replica's watch to judge the claims of its key. */
    static final long DECIDE_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(30);
    /** New claims one request may make and lose (to an earlier claim of its key) before it gives up with a 503. */
    private static final int MAX_CLAIMS_PER_REQUEST = 8;
    /** Probes (walks restarted after meeting another key's claim) before one walk tries every pod in turn. */
    private static final int MAX_PROBES = 64;
    /** The reference's words for a key sent again with another request. */
    private static final String CONFLICT_REFERENCE_WORDS = "idempotency key was already used with a different request";
    /** A 409's message: the reference's words, then what to do. */
    public static final String CONFLICT_MESSAGE = CONFLICT_REFERENCE_WORDS + ": it was first sent with another"
            + " resourceType, architecture, kubernetesVersion or wireGuardPublicKey; send that request again for its"
            + " answer, or use a new key for this one";

    /** A claimed pod (new or replayed) and the ExternalIP of its node. */
    public record Allocation(Pod pod, String externalIp, boolean replay) {
    }

    private final PodCache pods;
    private final NodeCache nodes;
    private final ClaimWriter writer;
    private final Candidates candidates;
    private final ClaimResolver resolver;
    private final int retryAfterSeconds;
    private final int maxPerOwner;
    private final ReplicaLanes lanes;
    private final TtlPolicy leases;
    private final java.time.Clock clock;
    /** Per-owner critical sections (striped) so one replica's count-then-claim never admits two at once. */
    private final Object[] ownerStripes = new Object[64];
    private final Map<String, CompletableFuture<Allocation>> inFlight = new ConcurrentHashMap<>();
    /** Pods a request of this replica is writing to now (see {@link #visit}). */
    private final Map<String, CompletableFuture<Void>> reserved = new ConcurrentHashMap<>();
    private final java.util.concurrent.atomic.LongAdder reservationWaits = new java.util.concurrent.atomic.LongAdder();
    private final java.util.concurrent.atomic.LongAdder rollbacks = new java.util.concurrent.atomic.LongAdder();

    public Allocator(PodCache pods, NodeCache nodes, ClaimWriter writer, Candidates candidates, int retryAfterSeconds) {
        this(pods, nodes, writer, candidates, retryAfterSeconds, 0);
    }

    /** {@code maxPerOwner}: allocations one owner may hold at once (--max-allocs-per-user); 0 = unlimited. */
    public Allocator(PodCache pods, NodeCache nodes, ClaimWriter writer, Candidates candidates, int retryAfterSeconds,
            int maxPerOwner) {
        this(pods, nodes, writer, candidates, retryAfterSeconds, maxPerOwner, ReplicaLanes.alone());
    }

    /** {@code lanes}: which pods this replica tries first (its writer records the same replica in its claims). */
    public Allocator(PodCache pods, NodeCache nodes, ClaimWriter writer, Candidates candidates, int retryAfterSeconds,
            int maxPerOwner, ReplicaLanes lanes) {
        this(pods, nodes, writer, candidates, retryAfterSeconds, maxPerOwner, lanes, null, java.time.Clock.systemUTC());
    }

    /**
     * {@code leases}: when claims expire, judged at {@code clock} (null: a claim is never taken for expired here, the
     * TTL's delete alone ends it).
     */
    public Allocator(PodCache pods, NodeCache nodes, ClaimWriter writer, Candidates candidates, int retryAfterSeconds,
            int maxPerOwner, ReplicaLanes lanes, TtlPolicy leases, java.time.Clock clock) {
        this.leases = leases;
        this.clock = clock;
        this.lanes = lanes;
        this.maxPerOwner = maxPerOwner;
        for (int i = 0; i < ownerStripes.length; i++) {
            ownerStripes[i] = new Object();
        }
        this.pods = pods;
        this.nodes = nodes;
        this.writer = writer;
        this.candidates = candidates;
        this.retryAfterSeconds = retryAfterSeconds;
        this.resolver = new ClaimResolver(pods, writer, retryAfterSeconds, maxPerOwner);
    }

    /** The Retry-After of this allocator's 503s (--retry-after-seconds). */
    public int retryAfterSeconds() {
        return retryAfterSeconds;
    }

    /** How this allocator finds a key's standing claim (shared with renewals and reads). */
    public ClaimResolver resolver() {
        return resolver;
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
    /**
     * Whether this replica's watch shows a claim of the key that stands and is not being deleted: a cheap look at
     * the cache, before a {@link #replay} that answers at once. A claim still undecided, or only lost ones, would
     * have the replay wait for them; their change is a pod event of its own.
     */
    public boolean knowsStandingClaim(String keyHash) {
        return pods.claimsOf(keyHash).stream().anyMatch(c -> c.stands() && !c.terminating());
    }

    /**
     * The key's standing claim, replayed (409 when the request differs), as the API server has its pod now; empty
     * when this replica knows of no claim of the key (a new claim will reveal any it does not know of yet).
     */
    public Optional<Allocation> replay(AllocCommand cmd) {
        requireSynced();
        long deadline = System.nanoTime() + DECIDE_TIMEOUT_NANOS;
        while (true) {
            Instant asOf = clock.instant();
            Optional<ClaimResolver.Standing> standing = resolver.standing(cmd.keyHash(), false, deadline,
                    pod -> refuseOtherOrExpired(pod, cmd, asOf));
            if (standing.isEmpty()) {
                return Optional.empty();
            }
            Optional<Allocation> a = handOutAgain(standing.get(), cmd, asOf);
            if (a.isPresent()) {
                return a;
            }
        }
    }

    /**
     * A standing claim answered to a request other than the one that wrote it: 409 when the request differs, 410 when
     * it had expired by {@code asOf} (read before its pod was), else the claim pinned first (see
     * {@link ClaimResolver#pin}); empty when it changed meanwhile.
     */
    private Optional<Allocation> handOutAgain(ClaimResolver.Standing standing, AllocCommand cmd, Instant asOf) {
        refuseOtherOrExpired(standing.pod(), cmd, asOf);
        return resolver.pin(standing.pod()).map(p -> replayOrConflict(p, cmd));
    }

    /**
     * Takes back a claim this replica has just written for a request whose client is gone before it got the answer
     * (a conditional write; nothing happens when the claim was handed out to another request meanwhile, which pins
     * it, or changed). A replay is never taken back. Returns whether the pod went back to the pool. A take-back the
     * API server refused, or did not answer, does not fail: the pod read back tells whether the claim is still on it
     * (kept under its key until its TTL or a dealloc of the key, as when it could not be unread) or went back.
     */
    public boolean release(Allocation allocation, AllocCommand cmd) {
        return release(allocation, cmd, "client-gone");
    }

    /**
     * {@link #release(Allocation, AllocCommand)} of a claim whose request was not handed it for another reason,
     * {@code why} (the log line's outcome).
     */
    public boolean release(Allocation allocation, AllocCommand cmd, String why) {
        if (allocation.replay()) {
            return false;
        }
        Pod claimed = allocation.pod();
        ClaimWriter.Rollback r;
        try {
            r = undo(claimed, cmd.keyHash());
        } catch (RuntimeException e) {
            boolean back = noLongerCarried(claimed);
            LOG.warn("release failed pod={}/{} key={} outcome={} result={} error={}",
                    claimed.getMetadata().getNamespace(), ManagedPods.name(claimed), cmd.keyHashPrefix(), why,
                    back ? "rolled_back" : "kept-until-ttl", e.getMessage());
            return back;
        }
        // gone: the claim is off the pod, which may be the take-back itself, landed with its answer lost (the client
        // sent it again, and that met the changed pod); the pod read back tells
        boolean back = r == ClaimWriter.Rollback.ROLLED_BACK
                || r == ClaimWriter.Rollback.GONE && noLongerCarried(claimed);
        LOG.info("released pod={}/{} key={} outcome={} result={}", claimed.getMetadata().getNamespace(),
                ManagedPods.name(claimed), cmd.keyHashPrefix(), why,
                back ? "rolled_back" : r.name().toLowerCase(java.util.Locale.ROOT));
        return back;
    }

    /** Whether the pod, read back, is there without this claim on it (false also when it cannot be read). */
    private boolean noLongerCarried(Pod claimed) {
        Pod now;
        try {
            now = writer.read(claimed.getMetadata().getNamespace(), ManagedPods.name(claimed));
        } catch (RuntimeException e) {
            return false;
        }
        return now != null && ClaimLedger.uid(now).equals(ClaimLedger.uid(claimed))
                && !ClaimLedger.claimId(claimed).equals(ClaimLedger.claimId(now));
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
            if (e.getCause() instanceof ApiException api
                    && (api.code() == 409 || api.code() == 410 || api == NO_CAPACITY)) {
                // the owner's request conflicted with the existing claim; ours may be the matching one (or the
                // owner asked without explaining a 503 that this caller must explain, or its replay met the claim
                // expired: ours, if it is another request, is a 409 as it would be alone)
                return doAllocate(cmd, ownerHash, explain);
            }
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw e;
        }
        // the shared outcome is ours only if the request matches; otherwise it is the same key reused. Handed to
        // this second request, it is pinned like any replay, so the first one's writer cannot take it back
        replayOrConflict(first.pod(), cmd);
        Optional<Pod> pinned = resolver.pin(first.pod());
        return pinned.isPresent() ? replayOrConflict(pinned.get(), cmd) : doAllocate(cmd, ownerHash, explain);
    }

    private Allocation doAllocate(AllocCommand cmd, String ownerHash, boolean explain) {
        long deadline = System.nanoTime() + DECIDE_TIMEOUT_NANOS;
        for (int claims = 0; claims < MAX_CLAIMS_PER_REQUEST; claims++) {
            Instant asOf = clock.instant();
            Optional<ClaimResolver.Standing> standing = resolver.standing(cmd.keyHash(), false, deadline,
                    pod -> refuseOtherOrExpired(pod, cmd, asOf));
            if (standing.isPresent()) {
                Optional<Allocation> again = handOutAgain(standing.get(), cmd, asOf);
                if (again.isPresent()) {
                    return again.get();
                }
                continue;
            }
            Claimed mine = claimNew(cmd, ownerHash, explain);
            if (mine.pod() == null) {
                // the walk met a claim of this very key that the ledger has not judged yet: let the watch get there
                resolver.await(pods.awaitClaim(mine.metPod(), mine.metRv()), deadline);
                continue;
            }
            Optional<Allocation> decided = decide(mine, cmd, deadline);
            if (decided.isPresent()) {
                return decided.get();
            }
        }
        throw resolver.behind();
    }

    /**
     * A claim this request has just written (not yet judged), with the ExternalIP it would hand out; or (pod null)
     * the pod and version at which the walk met a claim of this very key instead.
     */
    private record Claimed(Pod pod, String externalIp, String metPod, long metRv) {
        static Claimed met(Pod carrier) {
            return new Claimed(null, null, ManagedPods.name(carrier), ClaimLedger.resourceVersion(carrier));
        }
    }

    /** Checks the quota and walks the ring: the new claim, or where the walk met a claim of this very key. */
    private Claimed claimNew(AllocCommand cmd, String ownerHash, boolean explain) {
        if (maxPerOwner > 0 && ownerHash != null) {
            // count and claim under the owner's lock: this replica's own claims are in the cache's overlay at once,
            // so its next count includes them (a quick refusal without a write); across replicas the ledger's
            // judgement of each claim against the quota it records is what makes the quota exact
            synchronized (ownerStripes[Math.floorMod(ownerHash.hashCode(), ownerStripes.length)]) {
                long held = ownedBy(ownerHash);
                if (held >= maxPerOwner) {
                    // the cache may still hold claims released through another replica (a dealloc answers only
                    // once the API server has none left): refuse only on the API server's own count
                    OwnedNow now = ownedNow(ownerHash, cmd.keyHash());
                    if (now.carrier() != null) {
                        // one of them is this very key's, which this replica's watch has not delivered yet: a
                        // replay, never refused by the quota. Wait for the watch, then judge the key again
                        return Claimed.met(now.carrier());
                    }
                    if (now.held() >= maxPerOwner) {
                        throw quotaExceeded(cmd, now.held());
                    }
                }
                return ringWalk(cmd, ownerHash, explain);
            }
        }
        return ringWalk(cmd, ownerHash, explain);
    }

    /**
     * The 429 a new claim of this owner would meet now, without claiming: a request that would wait for capacity
     * is refused at once, not kept in line until its turn (or its time) comes. Counted on the API server's count
     * alone, never first on this replica's: a claim of the owner made through another replica a moment ago, which
     * this replica's watch has not delivered yet, fills the quota all the same (a new claim has the ledger's verdict
     * at its commit for that; a request that waits has no claim until a pod comes).
     */
    public void requireQuota(AllocCommand cmd, String ownerHash) {
        if (maxPerOwner > 0 && ownerHash != null) {
            OwnedNow now = ownedNow(ownerHash, cmd.keyHash());
            // a claim of this very key among them: a replay, which the quota never refuses
            if (now.carrier() == null && now.held() >= maxPerOwner) {
                throw quotaExceeded(cmd, now.held());
            }
        }
    }

    private ApiException quotaExceeded(AllocCommand cmd, long held) {
        LOG.info("refused key={} outcome=quota-exceeded held={} max={}", cmd.keyHashPrefix(), held, maxPerOwner);
        return new ApiException(429, "TooManyRequests", "allocation quota exceeded: you hold " + held
                + " of at most " + maxPerOwner + " allocations (--max-allocs-per-user); deallocate one first",
                Map.of("Retry-After", String.valueOf(retryAfterSeconds)));
    }

    /**
     * Waits until this replica's watch has delivered the claim and the ledger has judged it: the allocation when
     * it stands; otherwise it is rolled back (empty: judge the key again, the claim that stands is replayed), or
     * the 429 when it was over its owner's quota.
     */
    private Optional<Allocation> decide(Claimed mine, AllocCommand cmd, long deadline) {
        String name = ManagedPods.name(mine.pod());
        long rv = ClaimLedger.resourceVersion(mine.pod());
        ClaimLedger.Claim verdict;
        try {
            verdict = awaitVerdict(name, cmd.keyHash(), rv, ClaimLedger.claimId(mine.pod()), deadline);
        } catch (ApiException e) {
            rollBack(mine.pod(), cmd, "undecided");
            throw e;
        }
        if (verdict == null) {
            // no longer on the pod when the watch got there (deleted by a dealloc, say): judge the key again
            return Optional.empty();
        }
        boolean overLegacy = verdict.stands() && overQuotaWithLegacyClaims(mine.pod(), verdict);
        if (verdict.stands() && !overLegacy) {
            LOG.info("claimed pod={}/{} key={} outcome=allocated", mine.pod().getMetadata().getNamespace(), name,
                    cmd.keyHashPrefix());
            return Optional.of(new Allocation(mine.pod(), mine.externalIp(), false));
        }
        ClaimWriter.Rollback undone = rollBack(mine.pod(), cmd, overLegacy ? "over-quota-with-legacy-claims"
                : verdict.standing() == ClaimLedger.Standing.LOST
                ? verdict.reason().name().toLowerCase(java.util.Locale.ROOT).replace('_', '-') : "undecided");
        if (undone == ClaimWriter.Rollback.SETTLED) {
            return Optional.empty(); // another replica settled it first: it stands, and is replayed
        }
        if (verdict.reason() == ClaimLedger.Reason.QUOTA || overLegacy) {
            // taken back (or gone): not one the owner holds, though this replica's watch may not show it yet
            throw quotaExceeded(cmd, ownedBy(ownerHashOf(mine.pod()), mine.pod()));
        }
        return Optional.empty();
    }

    /**
     * Whether this replica's own claim, which the ledger judged standing at its commit, was over the quota it records
     * once the owner's claims that carry the legacy (unkeyed) owner hash are counted too. The ledger cannot count
     * them: nothing on a pod links the two hashes of one user, only the request does (recorded by
     * {@link LegacyOwnerClaims#adopt}, which also moved the legacy claims this cache held before the claim). Legacy
     * claims the cache had not delivered then, written by a replica of the previous version, are in it now: the
     * watch has delivered this claim's commit, so every claim committed before it. Counted as the ledger counts at
     * the commit: the keys of the owner's live claims (either hash) whose claim the watch holds from a version
     * before this claim's (live now and then, so live at its commit), this one's included. The writer then takes
     * its claim back as it does one whose client left before the answer (a conditional write that fails once
     * another request was handed the claim), so only a claim nobody was answered with goes.
     */
    private boolean overQuotaWithLegacyClaims(Pod claim, ClaimLedger.Claim verdict) {
        int quota = ClaimLedger.ownerQuota(claim);
        String owner = ManagedPods.ownerHash(claim);
        Optional<String> legacy = pods.legacyOwnerHashOf(owner);
        if (quota <= 0 || owner.isEmpty() || legacy.isEmpty()) {
            return false;
        }
        java.util.Set<String> keys = new java.util.HashSet<>();
        keys.add(verdict.keyHash());
        for (String hash : List.of(owner, legacy.get())) {
            for (ClaimLedger.Claim c : pods.claimsOfOwner(hash)) {
                if (!c.terminating() && c.claimRv() < verdict.claimRv()) {
                    keys.add(c.keyHash());
                }
            }
        }
        return keys.size() > quota;
    }

    /**
     * The ledger's judgement of this very claim once the watch has it (null: the pod no longer carries it then).
     * A claim the watch first saw in a relist, not at its commit, comes back undecided. The claim the ledger holds
     * on the pod is this one only if it carries this claim's claim-id (as the ledger judged it): the same key may
     * have been claimed again on the pod by another writer once this claim was taken back.
     */
    private ClaimLedger.Claim awaitVerdict(String pod, String keyHash, long claimRv, String claimId, long deadline) {
        while (true) {
            Optional<Optional<ClaimLedger.Claim>> got = resolver.await(pods.awaitClaim(pod, claimRv), deadline);
            if (got.isEmpty()) {
                continue;
            }
            ClaimLedger.Claim c = got.get().orElse(null);
            if (c == null || !c.keyHash().equals(keyHash)) {
                return null;
            }
            boolean ours = claimId.isEmpty() ? c.claimRv() == claimRv : claimId.equals(c.claimId());
            return ours ? c : null; // not ours: a later claim of the key on this pod, ours is gone
        }
    }

    /**
     * Undoes a claim nobody will be answered, also on a thread told to stop (the waiting queue's dispatcher when the
     * operator shuts down): the interrupt is set aside for the rollback's few bounded calls and restored after, or
     * the claim would stay on its pod until its TTL.
     */
    private ClaimWriter.Rollback undo(Pod claimed, String keyHash) {
        boolean interrupted = Thread.interrupted();
        try {
            return writer.rollback(claimed, keyHash);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private ClaimWriter.Rollback rollBack(Pod claimed, AllocCommand cmd, String why) {
        ClaimWriter.Rollback r = undo(claimed, cmd.keyHash());
        LOG.info("rolled back pod={}/{} key={} outcome=claim-{} result={}", claimed.getMetadata().getNamespace(),
                ManagedPods.name(claimed), cmd.keyHashPrefix(), why, r.name().toLowerCase(java.util.Locale.ROOT));
        if (r == ClaimWriter.Rollback.ROLLED_BACK) {
            rollbacks.increment();
        }
        return r;
    }

    private static String ownerHashOf(Pod pod) {
        return ManagedPods.ownerHash(pod);
    }

    /**
     * Allocations (distinct keys of live claims, not being deleted) recorded with this owner hash, as this process
     * sees the cluster now: a lost second claim of a key, about to be taken back, is not a second allocation.
     */
    public long ownedBy(String ownerHash) {
        return ownedBy(ownerHash, null);
    }

    /**
     * {@link #ownedBy(String)} without the claim {@code except} (its pod carrying its claim-id; null: none left out),
     * not another claim made on that pod since.
     */
    private long ownedBy(String ownerHash, Pod except) {
        java.util.stream.Stream<Pod> owned = pods.byOwnerHash(ownerHash).stream();
        // and the owner's claims still under the legacy owner hash, when this process knows it
        Optional<String> legacy = pods.legacyOwnerHashOf(ownerHash);
        if (legacy.isPresent()) {
            owned = java.util.stream.Stream.concat(owned, pods.byOwnerHash(legacy.get()).stream());
        }
        return owned.filter(p -> ManagedPods.isClaimed(p) && !ManagedPods.isTerminating(p) && !sameClaim(p, except))
                .map(ManagedPods::keyHash).distinct().count();
    }

    private static boolean sameClaim(Pod p, Pod claim) {
        return claim != null && ManagedPods.name(p).equals(ManagedPods.name(claim))
                && ClaimLedger.uid(p).equals(ClaimLedger.uid(claim))
                && ClaimLedger.claimId(p).equals(ClaimLedger.claimId(claim));
    }

    /** An owner's allocations (distinct keys) as counted now, and the pod carrying the key asked for (null: none). */
    private record OwnedNow(long held, Pod carrier) {
    }

    /**
     * Allocations of this owner (the distinct keys of its live claims) as the API server has them now (a
     * consistent LIST by the owner label), plus claims the cache knows that predate the label; and a claim among
     * them that carries {@code keyHash}, if any. When this process knows the owner's legacy (unkeyed) owner hash,
     * the claims that still carry it count too, found the same way (a second LIST, by that hash's label), as the
     * cache's count ({@link #ownedBy}) counts them.
     */
    private OwnedNow ownedNow(String ownerHash, String keyHash) {
        List<String> hashes = new java.util.ArrayList<>(2);
        hashes.add(ownerHash);
        pods.legacyOwnerHashOf(ownerHash).ifPresent(hashes::add);
        java.util.Set<String> live = new java.util.HashSet<>();
        Pod carrier = null;
        for (String hash : hashes) {
            for (Pod p : ClaimResolver.ownersLiveClaims(writer, pods, hash)) {
                boolean listed = ManagedPods.labels(p).containsKey(PlaypenKeys.OWNER_HASH_LABEL);
                if (listed && !ManagedPods.isManaged(p)) {
                    continue;
                }
                live.add(ManagedPods.keyHash(p));
                if (keyHash.equals(ManagedPods.keyHash(p)) && (listed || carrier == null)) {
                    // the API server's copy wins over a cached claim that predates the owner label
                    carrier = p;
                }
            }
        }
        return new OwnedNow(live.size(), carrier);
    }

    /** The ring walk of a command (quota already checked): a new claim, or a claim of this key it met, else the 503. */
    private Claimed ringWalk(AllocCommand cmd, String ownerHash, boolean explain) {
        // walk the kind's consistent-hash ring from the key: replicas that agree on the ring share the order, so a
        // same-key race usually ends in a 409 on the first claim's pod and a replay, without a second claim.
        // Reaching a pod claimed by another key (found so, or lost to it just now: the rule must not depend on
        // which, or replicas would part ways) sends the walk to the key's next probe (Hashes.probeStart), the same
        // sequence on every replica; pods that cannot serve (not ready, gone) are passed clockwise. After
        // MAX_PROBES probes one last walk tries every pod. Rings can differ while watches lag, and then two
        // claims of one key can be written: correctness does not rest on the walk but on the ledger's judgement
        // of each claim (decide), which every replica reaches alike.
        // With other replicas allocating too, the same walk first over this replica's lane only (ReplicaLanes), so
        // that replicas do not write to the same idle pods; the whole ring when the lane has nothing to claim.
        String kind = Candidates.idleKindKey(cmd);
        long seed = Hashes.seed(cmd.keyHash());
        Claimed found = lanes.replicas() > 1 ? probes(kind, seed, cmd, ownerHash, true) : null;
        if (found == null) {
            found = probes(kind, seed, cmd, ownerHash, false);
        }
        if (found != null) {
            return found;
        }
        // nothing usable, or every usable candidate was taken by someone else while we walked: explain why
        if (!explain) {
            throw NO_CAPACITY;
        }
        throw unavailable(cmd);
    }

    /** The key's probes (over this replica's lane only, or the whole ring): a claim, or null when none was usable. */
    private Claimed probes(String kind, long seed, AllocCommand cmd, String ownerHash, boolean ownLane) {
        for (int k = 0; k <= MAX_PROBES; k++) {
            Visit v = walk(kind, Hashes.probeStart(seed, k), cmd, ownerHash, k == MAX_PROBES, ownLane);
            if (v.claimed() != null) {
                return v.claimed();
            }
            if (!v.claimedByOther()) {
                return null; // round the whole ring without a usable pod: more probes would find none either
            }
        }
        return null;
    }

    /** What a walk or a visit came to: a claim (new, or of this key), or whether it met a pod claimed by another key. */
    private record Visit(Claimed claimed, boolean claimedByOther) {
    }

    private static final Visit PASS = new Visit(null, false);
    private static final Visit CLAIMED_BY_OTHER = new Visit(null, true);

    /**
     * Clockwise from {@code start}, once round. Returns at the first pod claimed by another key (the caller moves
     * to the next probe) unless {@code tryAll}, which passes those too. With {@code ownLane}, pods of other replicas'
     * lanes are passed (only a claim of this very key on one of them is met).
     */
    private Visit walk(String kind, long start, AllocCommand cmd, String ownerHash, boolean tryAll, boolean ownLane) {
        Iterator<String> ring = pods.ring(kind, start);
        boolean metClaimed = false;
        while (ring.hasNext()) {
            String name = ring.next();
            if (ownLane && !lanes.mine(name)) {
                Pod other = pods.get(name).orElse(null);
                if (other != null && cmd.keyHash().equals(ManagedPods.keyHash(other))
                        && candidates.classify(cmd, other, nodes::externalIp) == Candidates.Verdict.CLAIMED_BY_THIS_KEY) {
                    return new Visit(Claimed.met(other), false);
                }
                continue;
            }
            Visit v = visit(name, cmd, ownerHash);
            if (v.claimed() != null) {
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
     * ahead unseen, since the shared order is what usually turns a cross-replica same-key race into a replay.
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
                // the node as judged is the node claimed with, however the node watch changes it meanwhile
                java.util.function.Function<String, Optional<String>> ips = Candidates.readOnce(nodes::externalIp);
                Candidates.Verdict verdict = candidates.classify(cmd, fresh, ips);
                if (verdict == Candidates.Verdict.CLAIMED_BY_THIS_KEY) {
                    return new Visit(Claimed.met(fresh), false);
                }
                if (verdict == Candidates.Verdict.USABLE) {
                    Claimed c = tryClaim(candidates.usable(cmd, fresh, ips), cmd, ownerHash);
                    if (c != null) {
                        return new Visit(c, false);
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
            throw ApiException.interrupted(1);
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
                java.util.function.Function<String, Optional<String>> ips = Candidates.readOnce(nodes::externalIp);
                if (candidates.classify(cmd, fresh, ips) == Candidates.Verdict.USABLE) {
                    return Optional.of(candidates.usable(cmd, fresh, ips));
                }
                claimedByOther = ManagedPods.isClaimed(fresh);
            }
            if (!claimedByOther) {
                break;
            }
        }
        return Optional.empty();
    }

    /** One usable pod: the new claim, a claim of this key found on it, or null when another key has it now. */
    private Claimed tryClaim(Candidates.Usable u, AllocCommand cmd, String ownerHash) {
        String ns = u.pod().getMetadata().getNamespace();
        String name = u.pod().getMetadata().getName();
        Pod current = u.pod();
        String rv = current.getMetadata().getResourceVersion();
        for (int attempt = 0; attempt < SAME_POD_RETRIES; attempt++) {
            KubernetesClientException unknown = null;
            String claimId = ClaimWriter.newClaimId();
            try {
                Pod claimed = writer.claim(current, rv, cmd, ownerHash, ownerHash == null ? 0 : maxPerOwner, claimId);
                pods.observe(claimed);
                LOG.debug("claim written pod={}/{} key={} rv={}", ns, name, cmd.keyHashPrefix(),
                        claimed.getMetadata().getResourceVersion());
                return new Claimed(claimed, u.externalIp(), null, 0);
            } catch (KubernetesClientException e) {
                if (e.getCode() == 404) {
                    pods.observeDeleted(name);
                    return null;
                }
                if (e.getCode() != 409 && !ClaimWriter.mayHaveLanded(e)) {
                    throw e;
                }
                // changed meanwhile, or an answer lost after the write may have landed: the pod as it is now tells
                // (a claim of this key on it is judged and replayed)
                unknown = e.getCode() == 409 ? null : e;
                LOG.debug("claim conflict or unknown outcome pod={}/{} rv={}: {}", ns, name, rv, e.getMessage());
            }
            // a write cut short by an interrupt (the waiting queue's dispatcher when the operator shuts down) may have
            // landed too: it is judged with the interrupt set aside, as a rollback is (a claim of this key found is
            // then rolled back by the caller, on a thread still interrupted), or it would stay on its pod until its TTL
            boolean interrupted = unknown != null && Thread.interrupted();
            try {
                Pod fresh = writer.read(ns, name);
                if (fresh == null) {
                    pods.observeDeleted(name);
                    return null;
                }
                pods.observe(fresh);
                if (ManagedPods.isClaimed(fresh)) {
                    return foundClaimed(fresh, claimId, u.externalIp(), cmd);
                }
                if (unknown != null) {
                    // the write has not landed yet; but the API server may still commit it after this read (it runs
                    // a request on after answering 504, or after the client gave up): fence it off before answering
                    return fenceLostClaim(fresh, rv, claimId, u.externalIp(), cmd, unknown);
                }
                if (candidates.classify(cmd, fresh, nodes::externalIp) != Candidates.Verdict.USABLE) {
                    return null;
                }
                current = fresh;
                rv = fresh.getMetadata().getResourceVersion();
            } finally {
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
            }
        }
        return null;
    }

    /**
     * A claim written on {@code rv} whose answer was lost, with the pod read back idle ({@code fresh}): the failure
     * is answered only once that claim can never commit. At another version than {@code rv} it cannot (it was
     * conditional on {@code rv}); at {@code rv} a fence write on that version ({@link ClaimWriter#fence}) makes sure
     * of it. A fence that meets a change, or whose outcome is unknown too, reads the pod again: the late claim of
     * this key is judged and replayed like any claim of it met on a pod; a pod claimed by another key is lost like
     * any other (null); an idle pod past {@code rv} means the claim can no longer land. Still undecided after a few
     * rounds: 503, send the same request again (the same key replays whatever was allocated).
     */
    private Claimed fenceLostClaim(Pod fresh, String rv, String claimId, String externalIp, AllocCommand cmd,
            KubernetesClientException unknown) {
        String ns = fresh.getMetadata().getNamespace();
        String name = fresh.getMetadata().getName();
        Pod current = fresh;
        for (int attempt = 0; attempt < FENCE_ATTEMPTS; attempt++) {
            if (!rv.equals(current.getMetadata().getResourceVersion())) {
                throw unknown; // the claim was conditional on rv: it can never commit now
            }
            Pod fenced = null;
            try {
                fenced = writer.fence(current, rv, claimId);
            } catch (KubernetesClientException e) {
                LOG.info("fence of a claim with unknown outcome not confirmed pod={}/{} key={}: {}", ns, name,
                        cmd.keyHashPrefix(), e.getMessage());
            }
            if (fenced != null) {
                pods.observe(fenced);
                // a write that changed nothing would leave the version as it was, and hold nothing off: read again
                if (!rv.equals(fenced.getMetadata().getResourceVersion())) {
                    LOG.info("claim outcome unknown, pod fenced so that the claim cannot land later pod={}/{} key={}",
                            ns, name, cmd.keyHashPrefix());
                    throw unknown;
                }
            }
            current = writer.read(ns, name);
            if (current == null) {
                pods.observeDeleted(name);
                throw unknown; // gone: the claim cannot land on it
            }
            pods.observe(current);
            if (ManagedPods.isClaimed(current)) {
                // the late claim landed, or another claim of this key, or another key's claim did (ours cannot)
                return foundClaimed(current, claimId, externalIp, cmd);
            }
        }
        throw ApiException.unavailable("the Kubernetes API server gave no clear answer to the claim of pod " + name
                + (unknown.getCode() > 0 ? " (it answered " + unknown.getCode() + ")" : "")
                + ", and whether it was made could not be learnt: nothing may have been allocated, and the same"
                + " request sent again with the same idempotency key answers with the allocation if there is one;"
                + " try again", retryAfterSeconds);
    }

    /**
     * A pod read back claimed after this request wrote a claim ({@code claimId}) to it: that very claim, landed though
     * its answer was lost, is the request's own new claim, judged like one answered ({@link #decide}: allocated when
     * it stands, not replayed); another claim of this key is judged and replayed; another key's claim loses the pod
     * (null).
     */
    private static Claimed foundClaimed(Pod read, String claimId, String externalIp, AllocCommand cmd) {
        if (!cmd.keyHash().equals(ManagedPods.keyHash(read))) {
            return null;
        }
        return claimId.equals(ClaimLedger.claimId(read)) ? new Claimed(read, externalIp, null, 0) : Claimed.met(read);
    }

    /**
     * After a 409's words, when the request is a control plane whose kubernetesVersion was left out and the key holds
     * one of the same architecture at another version: "left out" meant that version when the key was first sent
     * (the newest --control-plane-versions then offered), and sending it replays the allocation. "" otherwise.
     */
    static String versionMoved(Pod pod, AllocCommand cmd) {
        if (cmd.resourceType() != ResourceType.CONTROL_PLANE || !cmd.versionDefaulted()) {
            return "";
        }
        Map<String, String> labels = pod.getMetadata() == null || pod.getMetadata().getLabels() == null ? Map.of()
                : pod.getMetadata().getLabels();
        String held = labels.getOrDefault(PlaypenKeys.KUBERNETES_VERSION, "");
        if (held.isEmpty() || held.equals(cmd.kubernetesVersion())
                || !ResourceType.CONTROL_PLANE.equals(ManagedPods.resourceType(pod).orElse(null))
                || !cmd.architecture().equals(ManagedPods.architecture(pod))) {
            return "";
        }
        return "; this key holds a " + held + " control plane, and kubernetesVersion was left out, which now means "
                + cmd.kubernetesVersion() + ": send \"kubernetesVersion\":\"" + held + "\" for its answer";
    }

    private Allocation replayOrConflict(Pod pod, AllocCommand cmd) {
        String reqHash = ManagedPods.annotations(pod).getOrDefault(PlaypenKeys.REQUEST_HASH, "");
        if (!reqHash.equals(cmd.requestHash())) {
            throw ApiException.conflict(CONFLICT_MESSAGE + versionMoved(pod, cmd));
        }
        String node = pod.getSpec() == null ? null : pod.getSpec().getNodeName();
        return new Allocation(pod, nodes.externalIp(node).orElse(""), true);
    }

    /**
     * A claim past its expiry whose pod the TTL has not deleted yet (at once while a replica leads; later while none
     * does, or its delete fails) is not answered again: its pod is about to go, and the endpoint with it. 410, with
     * nothing written (before a settle would be). Judged on the pod as read from the API server at {@code asOf}, the
     * clock read before that read: the version read was then the pod's and had expired. A renewal that landed before
     * the read is in the version read; one that lands after it moves the expiry from then on, and the next replay
     * answers it (the settle of an unsettled claim, conditional on the version read, meets it and reads again).
     * A request other than the one that made the claim is 409 first, expired or not.
     * <p>
     * Checked of a claim before it is settled or pinned for this request (a standing claim in {@link #handOutAgain},
     * an undecided one before {@link ClaimResolver} settles it): one settled or pinned for a request then refused
     * would keep its writer from taking it back.
     */
    private void refuseOtherOrExpired(Pod pod, AllocCommand cmd, Instant asOf) {
        replayOrConflict(pod, cmd);
        if (leases == null) {
            return;
        }
        Instant at = leases.expiresAt(pod).orElse(null);
        if (at == null || at.isAfter(asOf)) {
            return;
        }
        String when = at.equals(TtlPolicy.ALREADY_EXPIRED) ? "" : " at " + TtlPolicy.formatClaimedAt(at);
        throw new ApiException(410, "Gone", EXPIRED_PREFIX + when + " and its pod is being deleted, so it is not"
                + " answered again; send the request with a new idempotency key for a new allocation (this key"
                + " allocates anew once that pod is deleted)");
    }

    /** How the 410 of a replay of an expired allocation begins. */
    public static final String EXPIRED_PREFIX = "the allocation held with this idempotency key has expired";

    /**
     * Deletes every managed pod that carries this key hash, as the API server has them (not as this replica's watch
     * has delivered them), reading again until none is left: when this returns, no pod holds the key. Returns the
     * pods this call deleted (pods already being deleted by someone else are not counted).
     */
    public List<Pod> deallocate(String keyHash) {
        return deallocate(keyHash, p -> true);
    }

    /**
     * {@link #deallocate(String)} deleting a pod of the key only while {@code still} holds for it as the API server
     * has it: tested on the pod as just read, and on a fresh read whenever the delete (conditional on the version
     * tested) finds it changed; a pod it rejects is left alone. {@code still} may instead throw, which ends the
     * dealloc with that error (a delete whose preconditions fail is refused, not partly done). A failure after some
     * pods were deleted is a {@link PartlyReleased} that carries them.
     */
    public List<Pod> deallocate(String keyHash, java.util.function.Predicate<Pod> still) {
        requirePodsSynced();
        CompletableFuture<Allocation> running = inFlight.get(keyHash);
        if (running != null) {
            running.handle((a, e) -> null).join();
        }
        List<Pod> deleted = new java.util.ArrayList<>();
        try {
            return deallocate(keyHash, still, deleted);
        } catch (RuntimeException e) {
            if (deleted.isEmpty()) {
                throw e;
            }
            // pods are released already: the caller must learn which, so they are recorded, not lost with the error
            throw new PartlyReleased(deleted, e, retryAfterSeconds);
        }
    }

    /**
     * A dealloc that deleted some of its key's pods and then failed (an API server error, or pods that kept
     * changing): a {@code 503} that names how many pods it released and says to send the dealloc again, which is
     * safe and releases what the key still holds. {@link #released} are the pods this call deleted.
     */
    public static final class PartlyReleased extends ApiException {
        private static final long serialVersionUID = 1L;
        private final transient List<Pod> released;

        PartlyReleased(List<Pod> released, RuntimeException cause, int retryAfterSeconds) {
            super(503, "ServiceUnavailable", released.size() + (released.size() == 1 ? " pod" : " pods")
                    + " of this idempotency key " + (released.size() == 1 ? "was" : "were") + " released, but the rest"
                    + " could not be: " + why(cause) + "; send the dealloc again: it is safe and releases what the key"
                    + " still holds", Map.of("Retry-After", String.valueOf(retryAfterSeconds)));
            this.released = List.copyOf(released);
        }

        private static String why(RuntimeException cause) {
            return cause instanceof ApiException api ? api.getMessage().replaceFirst("; try again$", "")
                    : "the Kubernetes API server could not complete the request";
        }

        public List<Pod> released() {
            return released;
        }

        @Override
        public String result() {
            return "partly-deallocated";
        }
    }

    private List<Pod> deallocate(String keyHash, java.util.function.Predicate<Pod> still, List<Pod> deleted) {
        for (int round = 0; round < SAME_POD_RETRIES + 2; round++) {
            List<String> known = pods.byKeyHash(keyHash).stream().map(ManagedPods::name).toList();
            List<Pod> carriers = writer.claimedWith(pods.namespace(), keyHash, known).stream()
                    .filter(p -> !ManagedPods.isTerminating(p)).filter(still).toList();
            if (carriers.isEmpty()) {
                return deleted;
            }
            for (Pod pod : carriers) {
                ClaimWriter.Deletion d = writer.delete(pod, keyHash, still);
                if (d == ClaimWriter.Deletion.NOT_OURS) {
                    LOG.info("skipped pod={}/{} key={} outcome=claimed-by-another-key", pod.getMetadata().getNamespace(),
                            pod.getMetadata().getName(), Hashes.keyHashPrefix(keyHash));
                    continue;
                }
                pods.observeDeleted(pod.getMetadata().getName());
                if (d == ClaimWriter.Deletion.DELETED) {
                    LOG.info("deleted pod={}/{} key={} outcome=deallocated", pod.getMetadata().getNamespace(),
                            pod.getMetadata().getName(), Hashes.keyHashPrefix(keyHash));
                    deleted.add(pod);
                }
            }
        }
        throw ApiException.unavailable("the pods of this idempotency key kept changing while they were deleted; try "
                + "again", retryAfterSeconds);
    }

    /** How many claims this replica has rolled back (they lost, or could not be confirmed). */
    public long rollbacks() {
        return rollbacks.sum();
    }

    private void requireSynced() {
        if (!pods.hasSynced() || !nodes.hasSynced()) {
            throw ApiException.unavailable("the operator's pod and node caches are not synced yet; nothing was done,"
                    + " try again", retryAfterSeconds);
        }
    }

    /**
     * A dealloc needs the pods alone (nodes only shape an allocation's answer): a 503 saying to try again while the
     * pod cache has not synced. Checked before a dealloc changes anything, such as ending a wait of its key.
     */
    public void requirePodsSynced() {
        if (!pods.hasSynced()) {
            throw ApiException.unavailable("the operator's pod cache is not synced yet; nothing was released, try"
                    + " again", retryAfterSeconds);
        }
    }
}
