package io.unboundedcloud.playpen.kube;

import java.time.Duration;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderCallbacks;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderElectionConfigBuilder;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaderElectionRecord;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaseLock;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.Lock;

/**
 * Leader election on a coordination.k8s.io Lease (fabric8 LeaderElector). Background work runs on the
 * leader only; with election disabled this process is always the leader. When the Lease API answers 403
 * Forbidden (the Go operator's RBAC grants no Lease access) this replica falls back to single-replica mode:
 * it acts as leader, warns loudly, and asks the Lease API again every few lease durations until access works.
 */
public final class LeaderElection implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LeaderElection.class);
    /** A fallback that lasts this long is announced again (once per interval, not once per probe). */
    static final Duration FALLBACK_WARN_INTERVAL = Duration.ofMinutes(5);
    /** Probe pace in fallback, in lease durations: slow enough not to load the API server, quick after an RBAC fix. */
    static final int PROBE_LEASE_DURATIONS = 4;
    /** How long {@link #close} waits for the Lease to be given up. */
    static final Duration RELEASE_WAIT = Duration.ofSeconds(2);

    /** Told when this process gains or loses leadership, and when it counts as leading again within its term. */
    public interface Listener {
        void leadershipChanged(boolean leader);

        /**
         * {@link #isLeader} turned from false to true without a change of leadership: a leader past its renew
         * deadline (which counts as not leading) whose next renewal of the Lease landed before the look that would
         * step it back (not the write that gives the Lease up, and never once this replica is closed). Work dropped
         * in that moment because this replica did not count as leading may run now. Called on the elector's thread
         * right after that write, before its next one: hand anything slow to another thread.
         */
        default void onLeadingAgain() {
        }
    }

    /** What this replica writes on the Lease with each of its writes as holder ({@link #annotateLeaseWith}). */
    public interface LeaseAnnotations {
        /**
         * The annotations of one Lease write. {@code inTerm}: the write goes on with this replica's term as leader
         * (a renewal, also one that lands past the renew deadline, or the Lease taken by a replica that leads in the
         * single-replica fallback); false for a write that begins a term (the Lease taken) or gives the Lease up.
         */
        java.util.Map<String, String> of(boolean inTerm);
    }

    private final KubernetesClient client;
    private final boolean enabled;
    private final String namespace;
    private final String leaseName;
    private final String identity;
    private final Duration leaseDuration;
    private final Duration renewDeadline;
    private final Duration retryPeriod;
    private final Duration probeInterval;
    private final Duration warnInterval;
    private final ObservedLock lock;
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();
    private final Object leadershipLock = new Object();
    private final AtomicLong forbiddenAnswers = new AtomicLong();
    private volatile boolean leader;
    /**
     * fabric8's elector told this replica it leads as soon as a read of the Lease showed it as holder, before a Lease
     * write of its own landed within the renew deadline: it counts as leading, and its listeners are told so, once
     * such a write lands ({@link #renewed}), not before, when the work they start would find it not leading.
     * Guarded by {@link #leadershipLock}.
     */
    private boolean leadingOnceItsWriteLands;
    private volatile boolean closed;
    /** The thread that gives the Lease up on {@link #stepDown} (null until then, or when no round ran). */
    private volatile Thread release;
    private volatile boolean fallback;
    private volatile String fallbackReason = "";
    private long fallbackSinceNanos;
    private long lastWarnNanos;
    /** The fallback's next read of the Lease comes after a retry period, not a probe interval (a leader stepped back). */
    private boolean probeSoon;
    private CompletableFuture<?> running;
    private final ScheduledExecutorService restarter =
            Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("leader-election"));
    /** Its own thread: the restarter's tasks (a GET of the Lease, a cancelled round's release) may hang on the API. */
    private final ScheduledExecutorService renewalWatch =
            Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("leader-renewal-watch"));
    private volatile LeaseAnnotations leaseAnnotations = inTerm -> java.util.Map.of();
    /** The clock of the renew deadline ({@link System#nanoTime}; tests move it by hand). */
    private volatile java.util.function.LongSupplier nanoTime = System::nanoTime;
    /** How often {@link #checkRenewal} looks (the retry period; tests: so seldom it never does). */
    private Duration renewalCheckPeriod;
    /**
     * When the last Lease write of this replica that succeeded began (System.nanoTime): when its read of the Lease
     * was sent. fabric8's elector takes the time it writes as renewTime before that read, and another replica counts
     * the lease duration from there, however late the read was answered.
     */
    private volatile long renewalSentNanos;
    /** When this replica's latest read of the Lease was sent (System.nanoTime): the start of the write that follows. */
    private volatile long readSentNanos;

    public LeaderElection(KubernetesClient client, boolean enabled, String namespace, String leaseName, String identity,
            Duration leaseDuration, Duration renewDeadline, Duration retryPeriod) {
        this(client, enabled, namespace, leaseName, identity, leaseDuration, renewDeadline, retryPeriod,
                leaseDuration.multipliedBy(PROBE_LEASE_DURATIONS), FALLBACK_WARN_INTERVAL);
    }

    /** With explicit fallback probe and warning intervals (tests). */
    LeaderElection(KubernetesClient client, boolean enabled, String namespace, String leaseName, String identity,
            Duration leaseDuration, Duration renewDeadline, Duration retryPeriod, Duration probeInterval,
            Duration warnInterval) {
        this.client = client;
        this.enabled = enabled;
        this.namespace = namespace;
        this.leaseName = leaseName;
        this.identity = identity;
        this.leaseDuration = leaseDuration;
        this.renewDeadline = renewDeadline;
        this.retryPeriod = retryPeriod;
        this.probeInterval = probeInterval;
        this.warnInterval = warnInterval;
        this.renewalCheckPeriod = retryPeriod;
        this.lock = new ObservedLock(new AnnotatedLeaseLock(namespace, leaseName, identity));
    }

    /**
     * Annotations this replica writes on the Lease with each of its writes as holder (taking it, every renewal), so
     * that they are there exactly while it leads and cost no write of their own; what a replica that does not lead
     * may read there (see {@link LeaseRefusals}). Asked on the elector's thread at each write, told whether the write
     * goes on with this replica's term: the write that ends a moment past the renew deadline does, although this
     * replica does not count as leading ({@link #isLeader}) until it lands.
     */
    public void annotateLeaseWith(LeaseAnnotations annotations) {
        this.leaseAnnotations = annotations;
    }

    public void addListener(Listener l) {
        listeners.add(l);
    }

    /**
     * Leading, and, with a Lease, within the renew deadline of the last successful Lease write: the background work
     * asks before each write, so a leader past that deadline makes none, also before {@link #checkRenewal} next
     * looks and steps it back (up to a retry period later, which may be past the moment another replica may take
     * the Lease). A Lease write that lands before that look makes it count again in the same term: the listeners
     * are told so ({@link Listener#onLeadingAgain}), not a change of leadership.
     */
    public boolean isLeader() {
        return leader && (fallback || !enabled || withinRenewDeadline());
    }

    private boolean withinRenewDeadline() {
        return nanoTime.getAsLong() - renewalSentNanos <= renewDeadline.toNanos();
    }

    /** Tests: the clock the renew deadline is judged by (before {@link #start}). */
    void timeRenewalsWith(java.util.function.LongSupplier nanos) {
        this.nanoTime = nanos;
    }

    /** Tests: how often the renewal watch looks whether the renew deadline has passed (before {@link #start}). */
    synchronized void checkRenewalsEvery(Duration period) {
        this.renewalCheckPeriod = period;
    }

    public String identity() {
        return identity;
    }

    /** True while the Lease API refuses this replica (403) and it runs the background work as the only replica. */
    public boolean inFallback() {
        return fallback;
    }

    /** Why the fallback started (the refused verb and the API server's message); empty when not in fallback. */
    public String fallbackReason() {
        return fallback ? fallbackReason : "";
    }

    /** 403 answers the Lease API gave this replica so far. */
    public long forbiddenAnswers() {
        return forbiddenAnswers.get();
    }

    public synchronized void start() {
        if (!enabled) {
            set(true);
            return;
        }
        // off the caller's thread: the first step is a GET of the Lease
        schedule(this::elect, Duration.ZERO);
        try {
            renewalWatch.scheduleWithFixedDelay(this::checkRenewal, renewalCheckPeriod.toMillis(),
                    renewalCheckPeriod.toMillis(), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            // closed meanwhile
        }
        LOG.info("leader election started identity={} lease={}/{}", identity, namespace, leaseName);
    }

    /**
     * One round: a GET of the Lease first (a 403 there means the fallback, without starting fabric8's elector,
     * which would log an error with a stack trace every retry period), then one round of fabric8's elector: it
     * acquires, renews until it cannot, then completes for good. A replica that lost the Lease (API server blip
     * past the renew deadline) must compete again, so every completed round schedules the next one until close().
     */
    private void elect() {
        if (closed) {
            return;
        }
        try {
            lock.get(client);
        } catch (KubernetesClientException e) {
            if (e.getCode() == 403) {
                schedule(this::elect, probeInterval); // the lock reported it: fallback, probe again later
                return;
            }
            // any other failure: the elector's own loop retries it, and this replica leads only once it holds the Lease
        }
        synchronized (this) {
            if (closed) {
                return;
            }
            CompletableFuture<?> round = client.leaderElector().withConfig(new LeaderElectionConfigBuilder()
                    .withName(leaseName)
                    .withLock(lock)
                    .withLeaseDuration(leaseDuration)
                    .withRenewDeadline(renewDeadline)
                    .withRetryPeriod(retryPeriod)
                    .withReleaseOnCancel(true)
                    .withLeaderCallbacks(new LeaderCallbacks(this::acquired, this::stoppedLeading,
                            newLeader -> LOG.info("leader is {} (lease {}/{})", newLeader, namespace, leaseName)))
                    .build()).build().start();
            running = round;
            round.whenComplete((r, e) -> roundEnded(round));
        }
    }

    private void roundEnded(CompletableFuture<?> round) {
        synchronized (this) {
            if (running == round) {
                running = null;
            }
        }
        if (closed) {
            return;
        }
        if (fallback) {
            boolean soon;
            synchronized (this) {
                soon = probeSoon;
                probeSoon = false;
            }
            schedule(this::elect, soon ? retryPeriod : probeInterval);
        } else {
            set(false);
            schedule(this::elect, retryPeriod);
        }
    }

    /**
     * fabric8's elector gives up only between two attempts: a renewal that hangs (an API server that takes the
     * request and never answers) keeps it leading for the client's whole request timeout and its retry, past the
     * renew deadline and past the Lease itself, while another replica takes the expired Lease. So a leader whose
     * last successful Lease write was sent more than the renew deadline ago steps back here, whatever its round is
     * doing, and the round is cancelled; the next round competes again once it has ended.
     */
    private void checkRenewal() {
        if (closed || !leader || fallback || withinRenewDeadline()) {
            return;
        }
        CompletableFuture<?> round;
        synchronized (this) {
            if (closed || fallback) {
                return;
            }
            round = running;
        }
        LOG.warn("leader Lease {}/{} not renewed within the renew deadline ({} s): stepping back", namespace, leaseName,
                renewDeadline.toMillis() / 1000.0);
        set(false);
        if (round != null) {
            // cancelling releases the Lease, a write that may hang as the renewals did: not on this thread
            DaemonThreads.named("leader-step-back").newThread(() -> round.cancel(true)).start();
        }
    }

    private void acquired() {
        leaveFallback("this replica acquired the Lease");
        synchronized (leadershipLock) {
            if (enabled && !fallback && !closed && !withinRenewDeadline()) {
                leadingOnceItsWriteLands = true;
                return;
            }
        }
        set(true);
    }

    private void stoppedLeading() {
        // in the fallback this replica keeps the background work although no Lease is held
        if (!fallback) {
            set(false);
        }
    }

    /**
     * The Lease API refused a call: enter (or stay in) the fallback and stop fabric8's round, which would retry it.
     * A leader refused a renewal (a role being replaced, an authorizer that failed once) may still hold the Lease,
     * which cancelling its round releases to the other replicas: it steps back first, before the release, and reads
     * the Lease again after a retry period, leading in the fallback only if the Lease API still refuses it and no
     * other replica holds the Lease by then.
     */
    private void forbidden(String verb, KubernetesClientException e) {
        forbiddenAnswers.incrementAndGet();
        boolean entered;
        boolean steppingBack;
        CompletableFuture<?> round;
        long now = System.nanoTime();
        synchronized (this) {
            if (closed) {
                return;
            }
            entered = !fallback;
            steppingBack = entered && enabled && leader;
            probeSoon |= steppingBack;
            if (entered) {
                fallback = true;
                fallbackSinceNanos = now;
                fallbackReason = verb + " leases.coordination.k8s.io " + namespace + "/" + leaseName + " forbidden: "
                        + (e.getStatus() != null && e.getStatus().getMessage() != null ? e.getStatus().getMessage()
                                : e.getMessage());
            }
            round = running;
            running = null;
            if (entered || now - lastWarnNanos >= warnInterval.toNanos()) {
                lastWarnNanos = now;
                if (steppingBack) {
                    LOG.warn("LEADER ELECTION DISABLED: the API server refused this leader's Lease write ({}). This "
                            + "replica stops the pool, TTL and caBundle work and reads the Lease again in {} s: it "
                            + "falls back to single-replica mode then, unless another replica holds the Lease. Run "
                            + "ONE replica until the operator's ServiceAccount may get, create and patch "
                            + "leases.coordination.k8s.io in {} (deploy/030-operator-rbac.yaml)",
                            fallbackReason, retryPeriod.toMillis() / 1000.0, namespace);
                } else if (entered) {
                    LOG.warn("LEADER ELECTION DISABLED: the API server refuses the Lease ({}). Falling back to "
                            + "single-replica mode: this replica runs pool, TTL and caBundle work as if it were the "
                            + "leader. Run ONE replica until the operator's ServiceAccount may get, create and patch "
                            + "leases.coordination.k8s.io in {} (deploy/030-operator-rbac.yaml); the Lease API is asked "
                            + "again every {} s and election resumes by itself once it answers",
                            fallbackReason, namespace, probeInterval.toSeconds());
                } else {
                    LOG.warn("LEADER ELECTION STILL DISABLED for {} s: the Lease API keeps answering 403 ({}); "
                            + "single-replica mode continues, run one replica",
                            TimeUnit.NANOSECONDS.toSeconds(now - fallbackSinceNanos), fallbackReason);
                }
            }
        }
        if (steppingBack) {
            set(false);
        }
        if (round != null) {
            // fabric8's elector calls this lock from inside its own synchronized step: cancel from another thread;
            // the round's end schedules the next read of the Lease
            schedule(() -> round.cancel(true), Duration.ZERO);
        } else if (steppingBack) {
            schedule(this::elect, retryPeriod);
        }
        if (!steppingBack) {
            set(true);
        }
    }

    /** A successful GET of the Lease: when another replica validly holds it, this one must not act as leader. */
    private void observed(LeaderElectionRecord record) {
        if (!fallback || record == null || record.getHolderIdentity() == null || record.getHolderIdentity().isEmpty()
                || Objects.equals(record.getHolderIdentity(), identity) || record.getRenewTime() == null) {
            return;
        }
        if (record.getRenewTime().plus(leaseDuration).isAfter(ZonedDateTime.now(ZoneOffset.UTC))) {
            leaveFallback("the Lease is held by " + record.getHolderIdentity());
            set(false);
        }
    }

    private void leaveFallback(String why) {
        long since;
        synchronized (this) {
            if (!fallback) {
                return;
            }
            fallback = false;
            since = fallbackSinceNanos;
        }
        LOG.warn("leader election re-enabled: {}; single-replica fallback ended after {} s", why,
                TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - since));
    }

    private void schedule(Runnable task, Duration delay) {
        try {
            restarter.schedule(task, delay.toMillis(), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            // closed meanwhile
        }
    }

    private void set(boolean now) {
        synchronized (leadershipLock) {
            if (!now) {
                leadingOnceItsWriteLands = false;
            }
            if (closed && now) {
                return;
            }
            if (leader == now) {
                return;
            }
            leader = now;
            LOG.info("leadership {} identity={}{}", now ? "acquired" : "lost", identity,
                    now && fallback ? " (single-replica fallback, no Lease)" : "");
            for (Listener l : listeners) {
                try {
                    l.leadershipChanged(now);
                } catch (RuntimeException e) {
                    LOG.warn("leadership listener failed: {}", e.toString());
                }
            }
        }
    }

    /**
     * A Lease write of this replica landed, its read sent at {@code sentNanos}, {@code written} the record it wrote:
     * when that record names this replica as holder, the renew deadline counts from there. When that makes a leader
     * past its deadline count as leading again (no change of leadership: the renewal watch had not yet looked), the
     * listeners are told. A write whose read was sent before the deadline passed does not (its renewTime is as old),
     * nor the write that takes the Lease (a change of leadership, told as such: when fabric8's elector told it before
     * that write landed, its read of the Lease already showing this replica as holder, it is told now). The write
     * that gives the Lease up (no holder: the release once fabric8's elector gives up or on close, before it tells
     * so) is no renewal at all, and nothing counts once this replica is closed.
     */
    private void renewed(long sentNanos, LeaderElectionRecord written) {
        if (closed || written == null || !identity.equals(written.getHolderIdentity())) {
            return;
        }
        synchronized (leadershipLock) {
            if (closed) {
                return;
            }
            boolean was = isLeader();
            renewalSentNanos = sentNanos;
            if (leadingOnceItsWriteLands) {
                if (withinRenewDeadline()) {
                    leadingOnceItsWriteLands = false;
                    set(true); // the write that completes the change of leadership: told as one
                }
                return;
            }
            if (was || !isLeader()) {
                return;
            }
            LOG.info("leading again identity={}: a Lease write landed after the renew deadline, before this replica "
                    + "stepped back", identity);
            for (Listener l : listeners) {
                try {
                    l.onLeadingAgain();
                } catch (RuntimeException e) {
                    LOG.warn("leadership listener failed: {}", e.toString());
                }
            }
        }
    }

    /**
     * Stops leading at once, with no API call: the listeners are told, and every leader-only write, which asks
     * {@link #isLeader} first, stops here. The Lease is then given up (fabric8's elector reads it and writes it
     * without a holder, so another replica takes it on its next try) on a thread of its own: that release waits for
     * a Lease request of the elector still in flight, and both may hang on an API server that does not answer, for
     * the client's request timeout and its retry. {@link #close} waits for it, bounded. Calling it again does nothing.
     */
    public void stepDown() {
        CompletableFuture<?> round;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            restarter.shutdownNow();
            renewalWatch.shutdownNow();
            round = running;
            running = null;
        }
        set(false);
        if (round != null) {
            // outside this object's monitor: cancelling runs fabric8's stopLeading, which calls back into the lock
            Thread t = DaemonThreads.named("leader-release").newThread(() -> round.cancel(true));
            release = t;
            t.start();
        }
    }

    /**
     * {@link #stepDown}, then waits at most {@link #RELEASE_WAIT} for the Lease to be given up: past that the release
     * goes on alone (it ends with the process), and the other replicas take the Lease once it expires.
     */
    @Override
    public void close() {
        stepDown();
        Thread t = release;
        if (t == null) {
            return;
        }
        try {
            t.join(RELEASE_WAIT.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (t.isAlive()) {
            LOG.warn("Lease {}/{} not released within {} s (the API server does not answer): the other replicas take "
                    + "it once it expires", namespace, leaseName, RELEASE_WAIT.toSeconds());
        }
    }

    /** fabric8's Lease lock whose writes (a create, a takeover, a renewal) carry {@link #annotateLeaseWith}'s annotations. */
    private final class AnnotatedLeaseLock extends LeaseLock {
        AnnotatedLeaseLock(String namespace, String name, String identity) {
            super(namespace, name, identity);
        }

        @Override
        protected io.fabric8.kubernetes.api.model.coordination.v1.Lease toResource(LeaderElectionRecord record,
                io.fabric8.kubernetes.api.model.ObjectMetaBuilder meta) {
            java.util.Map<String, String> annotations;
            try {
                annotations = leaseAnnotations.of(leader && identity.equals(record.getHolderIdentity()));
            } catch (RuntimeException e) {
                // never at the cost of the write itself: the Lease is renewed without them
                LOG.warn("Lease {}/{} written without its annotations: {}", namespace, leaseName, e.toString());
                annotations = java.util.Map.of();
            }
            if (!annotations.isEmpty()) {
                meta.addToAnnotations(annotations);
            }
            return super.toResource(record, meta);
        }
    }

    /** The Lease lock as fabric8 uses it, reporting 403 answers and what each successful GET shows. */
    private final class ObservedLock implements Lock {
        private final LeaseLock delegate;

        ObservedLock(LeaseLock delegate) {
            this.delegate = delegate;
        }

        @Override
        public LeaderElectionRecord get(KubernetesClient c) {
            readSentNanos = nanoTime.getAsLong();
            LeaderElectionRecord record;
            try {
                record = delegate.get(c);
            } catch (KubernetesClientException e) {
                refused("get", e);
                throw e;
            }
            observed(record);
            return record;
        }

        @Override
        public void create(KubernetesClient c, LeaderElectionRecord record) {
            long sent = readSentNanos;
            try {
                delegate.create(c, record);
            } catch (KubernetesClientException e) {
                refused("create", e);
                throw e;
            }
            renewed(sent, record);
        }

        @Override
        public void update(KubernetesClient c, LeaderElectionRecord record) {
            long sent = readSentNanos;
            try {
                delegate.update(c, record);
            } catch (KubernetesClientException e) {
                refused("patch", e); // fabric8 writes the Lease record with a JSON merge patch
                throw e;
            }
            renewed(sent, record);
        }

        private void refused(String verb, KubernetesClientException e) {
            if (e.getCode() == 403) {
                forbidden(verb, e);
            }
        }

        @Override
        public String identity() {
            return delegate.identity();
        }

        @Override
        public String describe() {
            return delegate.describe();
        }
    }
}
