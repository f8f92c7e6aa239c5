package io.unboundedcloud.playpen.kube;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.Backoff;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.TtlPolicy;

/**
 * Deletes claimed pods when their TTL ends: each claim seen by the watch gets a timer at its
 * expiry instant; {@link #sweep()} (the ttl-expiry route) is the backstop. Only the leader deletes.
 */
public final class TtlExpirer implements PodCache.Listener, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(TtlExpirer.class);

    /** Told about each expiry (metrics, events). */
    public interface Observer {
        void expired(Pod pod, Duration lateness);
    }

    /**
     * A timer and the expiry instant it was set for: a renewal moves the instant, and the timer with it. It is
     * recorded in {@link #timers} before it is handed to the scheduler, so that a timer due at once, which may run
     * before the scheduling call returns, finds its own record (and a retry it stores is never overwritten by it).
     * While it is recorded, it has not started: a timer takes its record out before it does anything.
     */
    private static final class Scheduled {
        private final Instant at;
        private ScheduledFuture<?> future;
        private boolean cancelled;

        Scheduled(Instant at) {
            this.at = at;
        }

        Instant at() {
            return at;
        }

        synchronized void started(ScheduledFuture<?> f) {
            future = f;
            if (cancelled) {
                f.cancel(false);
            }
        }

        synchronized void cancel() {
            cancelled = true;
            if (future != null) {
                future.cancel(false);
            }
        }
    }

    private final PodCache pods;
    private final ClaimWriter writer;
    private final TtlPolicy policy;
    private final Clock clock;
    private final BooleanSupplier leader;
    private final Map<String, Scheduled> timers = new ConcurrentHashMap<>();
    /** Failed deletes in a row of each claim whose delete failed (its next try waits twice as long, up to the cap). */
    private final Map<String, Integer> backOffs = new ConcurrentHashMap<>();
    private final Backoff backOff;
    /**
     * Claims whose timer found this replica not counting as leading (see {@link #onLeadingAgain}): until it counts
     * again, becomes leader, or the claim ends.
     */
    private final java.util.Set<String> notLeading = ConcurrentHashMap.newKeySet();
    private final ScheduledExecutorService scheduler;
    private final java.util.List<Observer> observers = new java.util.concurrent.CopyOnWriteArrayList<>();

    public TtlExpirer(PodCache pods, ClaimWriter writer, TtlPolicy policy, Clock clock, BooleanSupplier leader) {
        this(pods, writer, policy, clock, leader, Duration.ofSeconds(30));
    }

    /**
     * {@code maxBackOff}: the longest wait before a claim whose delete failed is tried again (--reconcile-interval,
     * the sweep's period: waiting longer would leave it to the sweep anyway).
     */
    public TtlExpirer(PodCache pods, ClaimWriter writer, TtlPolicy policy, Clock clock, BooleanSupplier leader,
            Duration maxBackOff) {
        this(pods, writer, policy, clock, leader, maxBackOff,
                Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("ttl-expiry")));
    }

    /** {@code scheduler}: runs the timers (tests: one that runs a timer due now before its scheduling returns). */
    TtlExpirer(PodCache pods, ClaimWriter writer, TtlPolicy policy, Clock clock, BooleanSupplier leader,
            Duration maxBackOff, ScheduledExecutorService scheduler) {
        this.scheduler = scheduler;
        this.backOff = retryBackOff(maxBackOff);
        this.pods = pods;
        this.writer = writer;
        this.policy = policy;
        this.clock = clock;
        this.leader = leader;
    }

    public void addObserver(Observer observer) {
        observers.add(observer);
    }

    @Override
    public void onPodEvent(PodCache.Change change, Pod pod) {
        String name = ManagedPods.name(pod);
        // no global "ttl disabled" shortcut: a claim may carry its own expires-at
        if (change == PodCache.Change.DELETED || !ManagedPods.isManaged(pod) || !ManagedPods.isClaimed(pod)) {
            cancel(name);
            return;
        }
        schedule(pod);
    }

    private void schedule(Pod pod) {
        String name = ManagedPods.name(pod);
        Optional<Instant> at = policy.expiresAt(pod);
        if (at.isEmpty()) {
            cancel(name);
            return;
        }
        Scheduled existing = timers.get(name);
        if (existing != null && existing.at().equals(at.get())) {
            return; // recorded, so not started yet: it stands
        }
        if (existing != null) {
            backOffs.remove(name); // renewed: a failure of the earlier expiry says nothing about this one
        }
        // round up: a timer that fires a hair before the instant would find the claim not yet expired
        long delayMs = Math.max(0, ceilMillis(Duration.between(clock.instant(), at.get())));
        Scheduled timer = new Scheduled(at.get());
        Scheduled prev = timers.put(name, timer);
        if (prev != null) {
            prev.cancel();
        }
        start(name, timer, delayMs);
    }

    /** Hands a recorded timer to the scheduler (after it was recorded: it may run before this returns). */
    private void start(String name, Scheduled timer, long delayMs) {
        try {
            timer.started(scheduler.schedule(() -> expire(name, timer), delayMs, TimeUnit.MILLISECONDS));
        } catch (RejectedExecutionException e) {
            // closed: no timer runs any more
            timers.remove(name, timer);
        }
    }

    /** Timers recorded and not started yet (tests). */
    int timersPending() {
        return timers.size();
    }

    /** Claims with a count of failed deletes kept (tests). */
    int failedTriesKept() {
        return backOffs.size();
    }

    private void cancel(String name) {
        notLeading.remove(name);
        backOffs.remove(name);
        Scheduled s = timers.remove(name);
        if (s != null) {
            s.cancel();
        }
    }

    private void expire(String name, Scheduled timer) {
        if (!timers.remove(name, timer)) {
            return; // replaced (a renewal: the new timer decides) or cancelled (deleted, no longer claimed) meanwhile
        }
        Optional<Pod> current = pods.get(name);
        if (current.isEmpty() || !ManagedPods.isClaimed(current.get())) {
            // gone or released (its DELETED event may have come while a failed delete of it ran, which then counted
            // a failed try after the event dropped the count): a later claim of a pod of that name starts afresh
            backOffs.remove(name);
            return;
        }
        Pod pod = current.get();
        // judge against one reading of the clock: reading it twice could see "not yet" and then "already"
        // (or the reverse after a clock step), and the timer would be dropped with the claim left to the sweep
        Instant now = clock.instant();
        if (policy.isExpired(pod, now)) {
            Outcome outcome = deleteIfExpired(pod, now);
            if (outcome == Outcome.NOT_LEADING) {
                untilLeading(name);
            } else if (outcome == Outcome.FAILED) {
                retry(pod);
            } else {
                backOffs.remove(name);
            }
        } else {
            // fired before the expiry instant by the clock (timer granularity, clock adjustments): try again
            backOffs.remove(name);
            schedule(pod);
        }
    }

    /**
     * A claim whose timer found this replica not counting as leading is kept until it does: a leader past its renew
     * deadline does not count as leading until its next Lease write lands, and when that lands before the look
     * that would step it back, no change of leadership is told (nor are the timers scheduled again, as on becoming
     * leader), but {@link #onLeadingAgain} is. Dropped, the claim would wait for the sweep. Becoming leader, and any
     * watch event of the pod, schedule its timer again too. Asked again after it is kept: a replica that counted as
     * leading again in between was told so before the claim was kept.
     */
    private void untilLeading(String name) {
        notLeading.add(name);
        if (leader.getAsBoolean()) {
            onLeadingAgain();
        }
    }

    /**
     * This replica counts as leading again within its term (LeaderElection.Listener#onLeadingAgain): each claim
     * whose timer found it not counting as leading gets its timer again, due at once when it has expired.
     */
    public void onLeadingAgain() {
        for (String name : java.util.List.copyOf(notLeading)) {
            if (notLeading.remove(name)) {
                pods.get(name).ifPresent(p -> onPodEvent(PodCache.Change.UPDATED, p));
            }
        }
    }

    /**
     * The delete failed (an API server error, or the pod kept changing): the claim is tried again after a back-off
     * of its own ({@link #retryBackOff}), so neither the sweep's period nor a failing API server
     * decides how late it ends. A watch event of the pod that keeps its expiry keeps this timer; one that moves the
     * expiry (a renewal) replaces it.
     */
    private void retry(Pod pod) {
        String name = ManagedPods.name(pod);
        Optional<Instant> at = policy.expiresAt(pod);
        if (at.isEmpty()) {
            return;
        }
        Duration wait = backOff.after(backOffs.merge(name, 1, Integer::sum));
        Scheduled timer = new Scheduled(at.get());
        if (timers.putIfAbsent(name, timer) != null) {
            return; // a watch event scheduled the claim meanwhile: that timer stands
        }
        start(name, timer, wait.toMillis());
    }

    /**
     * The waits before the next try of a claim whose delete failed: 1 s, doubling per failed try, at most {@code max}
     * (even when that is below 1 s); they start again from 1 s once the claim is deleted, renewed or gone.
     */
    static Backoff retryBackOff(Duration max) {
        return new Backoff(Duration.ofSeconds(1), max);
    }

    private static long ceilMillis(Duration d) {
        long ms = d.toMillis();
        return d.minusMillis(ms).isZero() || d.isNegative() ? ms : ms + 1;
    }

    /** Backstop: deletes every expired claim in the cache; returns how many. */
    public int sweep() {
        int n = 0;
        Instant now = clock.instant();
        for (Pod p : policy.expired(pods.pods(), now)) {
            if (ManagedPods.isManaged(p) && deleteIfExpired(p, now) == Outcome.DELETED) {
                n++;
            }
        }
        return n;
    }

    /** Schedules timers for every claim in the cache (on becoming leader). */
    public void scheduleAll() {
        notLeading.clear();
        for (Pod p : pods.pods()) {
            onPodEvent(PodCache.Change.UPDATED, p);
        }
    }

    /** What one try to delete an expired claim came to. */
    private enum Outcome {
        /** Deleted by this try. */
        DELETED,
        /** Nothing to do: not (or no longer) an expired claim, or gone already. */
        NOTHING,
        /** An expired claim this replica may not delete now: it does not count as leading. */
        NOT_LEADING,
        /** Not deleted although it may still be due: an API server error, or the pod kept changing. */
        FAILED
    }

    private Outcome deleteIfExpired(Pod pod, Instant now) {
        if (!ManagedPods.isClaimed(pod) || ManagedPods.isTerminating(pod) || !policy.isExpired(pod, now)) {
            return Outcome.NOTHING;
        }
        if (!leader.getAsBoolean()) {
            return Outcome.NOT_LEADING;
        }
        String ns = pod.getMetadata().getNamespace();
        String name = pod.getMetadata().getName();
        String keyHash = ManagedPods.keyHash(pod);
        ClaimWriter.Deletion outcome;
        try {
            outcome = writer.delete(pod, keyHash, fresh -> policy.isExpired(fresh, now));
        } catch (RuntimeException e) {
            LOG.warn("ttl delete failed pod={}/{}: {}", ns, name, e.toString());
            return Outcome.FAILED;
        }
        if (outcome == ClaimWriter.Deletion.NOT_OURS) {
            // renewed, claimed again, or kept changing (three conflicts): the next try reads the cache again, and
            // a renewal's watch event replaces its timer anyway
            return Outcome.FAILED;
        }
        pods.observeDeleted(name);
        if (outcome == ClaimWriter.Deletion.GONE) {
            // the timer and the sweep can both reach one expired pod: only the delete that landed counts
            return Outcome.NOTHING;
        }
        // lateness against the expiry instant; a claim without a usable claimed-at has none, so it is never late
        Instant deletedAt = clock.instant();
        Instant due = policy.expiresAt(pod).filter(at -> !at.equals(TtlPolicy.ALREADY_EXPIRED)).orElse(deletedAt);
        Duration late = Duration.between(due, deletedAt);
        LOG.info("deleted pod={}/{} key={} outcome=expired lateMs={}", ns, name,
                Hashes.keyHashPrefix(keyHash), late.toMillis());
        for (Observer o : observers) {
            o.expired(pod, late);
        }
        return Outcome.DELETED;
    }

    @Override
    public void close() {
        scheduler.shutdownNow();
    }
}
