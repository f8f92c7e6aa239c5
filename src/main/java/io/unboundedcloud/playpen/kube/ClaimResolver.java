package io.unboundedcloud.playpen.kube;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * Finds the pod that holds a key's standing claim, as the API server has it now, whichever replica made the claim
 * and however far this replica's watch lags: the claim's standing comes from the {@link ClaimLedger} (the order of
 * commits), and the pod itself is read from the API server before it is handed out again, so a request never sees
 * less than an answer given before it (by any replica) did. Claims the ledger cannot judge (made before this
 * replica's watch started) are settled with a conditional write when they are their key's only claim; claims that
 * lost are waited out while their writers roll them back.
 */
public final class ClaimResolver {
    private static final Logger LOG = LoggerFactory.getLogger(ClaimResolver.class);
    /** How long one wait for the watch lasts before the key is judged again. */
    private static final long WAIT_SLICE_MILLIS = 1_000;

    /** A standing claim, and the pod that carries it as just read from the API server. */
    public record Standing(ClaimLedger.Claim claim, Pod pod) {
    }

    private final PodCache pods;
    private final ClaimWriter writer;
    private final int retryAfterSeconds;
    private final int quotaInForce;
    private final java.util.Map<String, CompletableFuture<Void>> settling = new java.util.concurrent.ConcurrentHashMap<>();

    public ClaimResolver(PodCache pods, ClaimWriter writer, int retryAfterSeconds) {
        this(pods, writer, retryAfterSeconds, -1);
    }

    /**
     * {@code quotaInForce}: the allocations one owner may hold at once now (--max-allocs-per-user, 0 unlimited), or
     * -1 when this caller does not know it (a settle then judges by the quota each claim records).
     */
    public ClaimResolver(PodCache pods, ClaimWriter writer, int retryAfterSeconds, int quotaInForce) {
        this.pods = pods;
        this.writer = writer;
        this.retryAfterSeconds = retryAfterSeconds;
        this.quotaInForce = quotaInForce;
    }

    /**
     * The key's standing claim now. When this replica's watch has delivered no claim of the key, {@code askApi}
     * decides whether to ask the API server (a consistent read: a dealloc, renewal or read must see a claim another
     * replica answered a moment ago) or to answer empty at once (an alloc: its own claim's commit reveals any
     * earlier one). Waits while the key's claims are being decided, until {@code deadlineNanos} (then 503).
     */
    public Optional<Standing> standing(String keyHash, boolean askApi, long deadlineNanos) {
        return standing(keyHash, askApi, deadlineNanos, pod -> { });
    }

    /**
     * As {@link #standing(String, boolean, long)}, and {@code beforeSettle} sees an undecided claim's pod (as just
     * read from the API server) before it is settled: it may throw to refuse the request with nothing written (a
     * renewal of a claim that has expired).
     */
    public Optional<Standing> standing(String keyHash, boolean askApi, long deadlineNanos,
            java.util.function.Consumer<Pod> beforeSettle) {
        boolean asked = false;
        while (true) {
            List<ClaimLedger.Claim> live = live(pods.claimsOf(keyHash));
            if (live.isEmpty()) {
                if (!askApi || asked) {
                    return Optional.empty();
                }
                asked = true;
                List<Pod> carriers = liveCarriers(writer.claimedWith(pods.namespace(), keyHash, List.of()));
                if (carriers.isEmpty()) {
                    return Optional.empty();
                }
                // claimed, but this replica's watch is behind: let it deliver those claims, then judge them. The
                // API server is asked once, so this waits until the watch is there (or the deadline's 503), not
                // one slice: a watch more than a slice behind would answer a claim just made as no claim
                for (Pod p : carriers) {
                    CompletableFuture<Optional<ClaimLedger.Claim>> seen = pods.awaitClaim(ManagedPods.name(p),
                            ClaimLedger.resourceVersion(p));
                    while (!seen.isDone()) {
                        await(seen, deadlineNanos);
                    }
                }
                continue;
            }
            Optional<ClaimLedger.Claim> won = live.stream().filter(ClaimLedger.Claim::stands).findFirst();
            if (won.isPresent()) {
                ClaimLedger.Claim c = won.get();
                Pod fresh = writer.read(pods.namespace(), c.pod());
                if (fresh != null && carries(fresh, c)) {
                    pods.observe(fresh);
                    // the pod as read carries the judged claim (its claim-id), and the watch has applied the version
                    // read and still holds that claim standing: unseen, it may have been taken back by its writer
                    // (its client left) and the pod claimed again for the key by a claim that lost
                    CompletableFuture<Optional<ClaimLedger.Claim>> seen = pods.awaitClaim(c.pod(),
                            ClaimLedger.resourceVersion(fresh));
                    if (seen.isDone() && seen.join().filter(now -> now.stands() && now.claimRv() == c.claimRv()
                            && now.uid().equals(c.uid()) && now.claimId().equals(c.claimId())).isPresent()) {
                        return Optional.of(new Standing(c, fresh));
                    }
                    await(seen, deadlineNanos);
                    continue;
                }
                // gone since (deallocated, expired, or taken back and the key claimed on the pod again: another
                // claim-id): wait for the watch to say so, then judge again. Gone, it is past the version the watch
                // holds now, which may be later than the claim's (a renewal, a settle)
                if (fresh == null) {
                    pods.observeDeleted(c.pod());
                    await(pods.awaitChange(c.pod()), deadlineNanos);
                } else {
                    pods.observe(fresh);
                    await(pods.awaitClaim(c.pod(), Math.max(c.claimRv() + 1, ClaimLedger.resourceVersion(fresh))),
                            deadlineNanos);
                }
                continue;
            }
            if (live.stream().anyMatch(c -> c.standing() == ClaimLedger.Standing.UNKNOWN)) {
                settle(keyHash, live, deadlineNanos, beforeSettle);
                continue;
            }
            // only claims that lost: their writers are taking them back
            await(pods.awaitChange(live.get(0).pod()), deadlineNanos);
        }
    }

    /**
     * Settles an undecided claim when the API server shows it as its key's only live claim and within the quota
     * it was made under: a conditional write marks it standing (it wins against a concurrent rollback by its own
     * writer, or loses to it, never both). Otherwise waits for the key's claims to change.
     */
    private void settle(String keyHash, List<ClaimLedger.Claim> known, long deadlineNanos,
            java.util.function.Consumer<Pod> beforeSettle) {
        // one settling per key at a time in this replica (a burst of replays after a restart settles once)
        CompletableFuture<Void> mine = new CompletableFuture<>();
        CompletableFuture<Void> running = settling.putIfAbsent(keyHash, mine);
        if (running != null) {
            await(running, deadlineNanos);
            return;
        }
        try {
            settleOnce(keyHash, known, deadlineNanos, beforeSettle);
        } finally {
            settling.remove(keyHash, mine);
            mine.complete(null);
        }
    }

    private void settleOnce(String keyHash, List<ClaimLedger.Claim> known, long deadlineNanos,
            java.util.function.Consumer<Pod> beforeSettle) {
        List<String> names = known.stream().map(ClaimLedger.Claim::pod).toList();
        List<Pod> carriers = liveCarriers(writer.claimedWith(pods.namespace(), keyHash, names));
        if (carriers.size() == 1 && withinQuota(carriers.get(0))) {
            Pod sole = carriers.get(0);
            beforeSettle.accept(sole);
            try {
                Pod settled = writer.settle(sole);
                pods.observe(settled);
                LOG.info("settled pod={}/{} key={} outcome=claim-settled", sole.getMetadata().getNamespace(),
                        ManagedPods.name(sole), Hashes.keyHashPrefix(keyHash));
                await(pods.awaitClaim(ManagedPods.name(settled), ClaimLedger.resourceVersion(settled)), deadlineNanos);
                return;
            } catch (KubernetesClientException e) {
                if (e.getCode() != 409 && e.getCode() != 404) {
                    throw e;
                }
                // changed meanwhile (rolled back, renewed, deleted): judge again
            }
        }
        if (carriers.isEmpty()) {
            // gone (or no longer claimed): past the version the watch holds now, which may be later than the claim's
            for (ClaimLedger.Claim c : known) {
                await(pods.awaitChange(c.pod()), deadlineNanos);
            }
            return;
        }
        await(pods.awaitChange(carriers.get(0).getMetadata().getName()), deadlineNanos);
    }

    /**
     * Makes a standing claim safe to hand out by a request other than the one that wrote it: settles it (one
     * conditional write, once per claim) unless it is settled already. Its writer may still take back an unsettled
     * claim whose client vanished before the answer; after this write it cannot, so the answer given here holds.
     * Empty when the pod changed meanwhile (judge the key again).
     */
    public Optional<Pod> pin(Pod pod) {
        if (ClaimLedger.isSettled(pod)) {
            return Optional.of(pod);
        }
        return settle(pod, () -> { });
    }

    /**
     * Settles the claim on this version of its pod (one conditional write) and puts the settled pod in the cache.
     * Empty when the pod changed meanwhile (409); when it is gone (404), {@code onGone} runs first, and may throw.
     */
    Optional<Pod> settle(Pod pod, Runnable onGone) {
        try {
            Pod settled = writer.settle(pod);
            pods.observe(settled);
            return Optional.of(settled);
        } catch (KubernetesClientException e) {
            if (e.getCode() == 404) {
                onGone.run();
            } else if (e.getCode() != 409) {
                throw e;
            }
            return Optional.empty();
        }
    }

    /**
     * The owner's live claims, read from the API server (a consistent LIST, after this claim's commit), carry no
     * more distinct keys than the quota this claim was made under: what the ledger counts at a commit (see
     * {@link ClaimLedger}), so a claim settled here keeps at most that many of the owner's claims standing. The
     * ledger counts claims by their owner annotation, so claims that predate the owner label (which the LIST cannot
     * find) are counted too, from the cache, as the allocator's count before a 429 does. So are the owner's claims
     * that still carry the legacy (unkeyed) owner hash, listed from the API server by that hash's label, when this
     * process knows it (the owner asked it for an allocation: only the request links the two hashes).
     * <p>
     * A claim moved from the legacy hash ({@link ClaimLedger#ownerHashMoved}) is counted as its writer, of a version
     * before the keyed hash, judged it: against the owner's claims that were under the legacy hash (moved since, or
     * not yet), not against those made under the keyed hash, which were never counted with it. Counting them would
     * keep an answered claim from its replays on this replica (503) as long as the owner's keyed claims fill the
     * quota; not counting the legacy ones would settle a claim its writer judged over the quota.
     * <p>
     * A quota in force now that is higher than the recorded one (or unlimited) counts instead: raised since the claim
     * was made, it let the owner make further claims, and the recorded quota would keep the older claim from ever
     * being settled (each replay and renewal a 503 until it expired). A lower one does not: the claim stood under its
     * own.
     */
    private boolean withinQuota(Pod claim) {
        int recorded = ClaimLedger.ownerQuota(claim);
        String owner = ManagedPods.ownerHash(claim);
        if (recorded <= 0 || quotaInForce == 0 || owner.isEmpty()) {
            return true;
        }
        int quota = Math.max(recorded, quotaInForce);
        List<Pod> live = new ArrayList<>(ownersLiveClaims(writer, pods, owner));
        if (ClaimLedger.ownerHashMoved(claim)) {
            live.removeIf(p -> !ClaimLedger.ownerHashMoved(p));
        }
        pods.legacyOwnerHashOf(owner).ifPresent(legacy -> live.addAll(writer.liveClaimsOf(pods.namespace(), legacy)));
        return live.stream().map(ManagedPods::keyHash).distinct().count() <= quota;
    }

    /**
     * An owner's live claims as the quota counts them: a consistent LIST from the API server by the owner label,
     * and, from the cache, the owner's live claims that predate that label (the LIST cannot find them).
     */
    static java.util.List<Pod> ownersLiveClaims(ClaimWriter writer, PodCache pods, String owner) {
        java.util.List<Pod> live = new java.util.ArrayList<>(writer.liveClaimsOf(pods.namespace(), owner));
        for (Pod p : pods.byOwnerHash(owner)) {
            if (!ManagedPods.labels(p).containsKey(PlaypenKeys.OWNER_HASH_LABEL) && ManagedPods.isManaged(p)
                    && ManagedPods.isClaimed(p) && !ManagedPods.isTerminating(p)) {
                live.add(p);
            }
        }
        return live;
    }

    /** The pod carries this very claim (uid, key and claim-id), live. */
    private static boolean carries(Pod pod, ClaimLedger.Claim c) {
        return c.uid().equals(ClaimLedger.uid(pod)) && c.keyHash().equals(ManagedPods.keyHash(pod))
                && c.claimId().equals(ClaimLedger.claimId(pod)) && !ManagedPods.isTerminating(pod);
    }

    private static List<ClaimLedger.Claim> live(List<ClaimLedger.Claim> claims) {
        List<ClaimLedger.Claim> out = new ArrayList<>(claims.size());
        for (ClaimLedger.Claim c : claims) {
            if (!c.terminating()) {
                out.add(c);
            }
        }
        return out;
    }

    private static List<Pod> liveCarriers(List<Pod> pods) {
        return pods.stream().filter(p -> !ManagedPods.isTerminating(p)).toList();
    }

    /** Waits for the watch (a slice at a time, never past the deadline: then 503, nothing was handed out). */
    <T> Optional<T> await(CompletableFuture<T> f, long deadlineNanos) {
        long left = deadlineNanos - System.nanoTime();
        if (left <= 0) {
            throw behind();
        }
        try {
            return Optional.ofNullable(f.get(Math.min(TimeUnit.NANOSECONDS.toMillis(left) + 1, WAIT_SLICE_MILLIS),
                    TimeUnit.MILLISECONDS));
        } catch (TimeoutException e) {
            if (System.nanoTime() - deadlineNanos >= 0) {
                throw behind();
            }
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw ApiException.interrupted(retryAfterSeconds);
        } catch (ExecutionException e) {
            return Optional.empty();
        }
    }

    ApiException behind() {
        return ApiException.unavailable("this operator replica's view of the pods is behind the API server, so the "
                + "claims of this idempotency key could not be confirmed in time; nothing was handed out, try again",
                retryAfterSeconds);
    }
}
