package io.unboundedcloud.playpen.kube;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.ResourceType;

/**
 * Alloc requests waiting for capacity ({@code waitSeconds}): one FIFO queue per kind (architecture or
 * Kubernetes version), answered as soon as a pod is claimed for them, or with today's 503 when their wait ends. A
 * waiter is a future, not a thread: the pod cache's watch events (a pod turning idle, the pool's new pods) and the
 * node cache's (a node turning Ready or getting its ExternalIP, see {@link NodeCache#addListener}) wake each
 * kind's dispatcher thread, which claims for its queue's heads in order (a claim that fails for a passing reason is
 * tried again on a later wake-up; any other error ends that wait). Kinds never share a pod, so one thread per kind
 * races nobody, and a claim of one kind that waits long (its key's claims being decided, the API server slow to
 * answer) never holds another kind's line. A retried key joins its waiting twin; a waiter whose key another request
 * claims meanwhile is answered that claim; a waiter whose every client left is dropped without claiming (a claim
 * being written for it then is given back on a thread of the queue's own, so a slow give-back holds up no line).
 * Every waiting request holds a connection, so their number is capped per user and in total ({@link Limits}): one
 * more is a 429 with Retry-After, before it waits.
 */
public final class CapacityQueue implements PodCache.Listener, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(CapacityQueue.class);
    /** The backstop wake-up, should a watch event ever be missed (claims that lost a race free nothing). */
    private static final Duration SWEEP = Duration.ofSeconds(1);

    /** Told how each wait ended: served, timeout, left, failed or shutdown (metrics). */
    public interface Observer {
        void waited(AllocCommand cmd, Duration waited, String outcome);
    }

    /** A client's way out of its wait before its answer. */
    public interface Subscription {
        /** The client left (its connection closed): it is dropped from the wait. */
        void leave();

        /**
         * The client is answered {@code answer} now, as a client that left is dropped from the wait: no claim is
         * made for a wait this client was the last of (one being written is given back), and one that has come
         * already is its answer instead. {@code outcome} is the wait's end as the observers are told it.
         */
        void end(ApiException answer, String outcome);

        /** The subscription of a request that did not wait. */
        Subscription NONE = new Subscription() {
            @Override
            public void leave() {
            }

            @Override
            public void end(ApiException answer, String outcome) {
            }
        };
    }

    private final class Waiter {
        final AllocCommand cmd;
        /** The caller's owner hash (null: none): the claim records it and counts it against the quota. */
        final String ownerHash;
        final String kind;
        final long since = System.nanoTime();
        final CompletableFuture<Allocator.Allocation> result = new CompletableFuture<>();
        final AtomicInteger clients = new AtomicInteger();
        /** Each client's "has left" flag, in arrival order; guarded by this waiter. */
        private final List<AtomicBoolean> arrivals = new java.util.ArrayList<>();
        /** The client answered the claim as new, chosen when the claim comes; guarded by this waiter. */
        private AtomicBoolean claimant;
        /**
         * The last passing failure of a claim for this wait (null: none): a wait in vain after one is told why, not
         * that no pod became idle.
         */
        volatile RuntimeException unclaimed;
        /**
         * Set while the dispatcher claims for this wait (null: it does not), completed when that attempt is over,
         * its claim handed out or given back; guarded by the queue.
         */
        CompletableFuture<Void> attempt;
        /**
         * The give-back of the claim written for this wait once every client had left it (null: none), completed
         * when that give-back is over; the dispatcher's.
         */
        CompletableFuture<Void> givenBack;

        Waiter(AllocCommand cmd, String ownerHash, String kind) {
            this.cmd = cmd;
            this.ownerHash = ownerHash;
            this.kind = kind;
        }

        synchronized void arrived(AtomicBoolean left) {
            arrivals.add(left);
        }

        /**
         * Whether the client with this flag is answered the claim as new: the only client still there when it
         * comes (the first of those still to be answered if every one has left: one whose time was up has its 503
         * already, so it could not give the claim back). Every other client gets it as a replay, which is never
         * taken back: a client gone by then must not hand back a pod another client of the wait is answered. With
         * two or more still there, each is answered the pod, so none gets it as new: the claim is kept even if
         * one of them turns out to be gone (until its TTL, or a dealloc of the key).
         */
        synchronized boolean claimant(AtomicBoolean left) {
            if (claimant == null) {
                List<AtomicBoolean> there = arrivals.stream().filter(l -> !l.get()).toList();
                claimant = there.isEmpty() ? arrivals.get(0) : there.size() == 1 ? there.get(0) : new AtomicBoolean();
            }
            return claimant == left;
        }

        /**
         * The client with this flag is answered its 503 (its time is up while another client still waits), so it is
         * never chosen to be answered the claim as new; false when it was chosen already (the claim has come, and is
         * its answer).
         */
        synchronized boolean answeredInVain(AtomicBoolean left) {
            if (claimant == left) {
                return false;
            }
            arrivals.remove(left);
            return true;
        }
    }

    /** What {@link #await} hands back: the outcome and the hook to call when this client goes away. */
    public record Ticket(CompletableFuture<Allocator.Allocation> result, Subscription subscription) {
    }

    /**
     * Caps on waiting requests (each a client that waits, retries of one key included): per owner and in total;
     * {@code retryAfterSeconds} goes into the 429's Retry-After.
     */
    public record Limits(int perOwner, int total, int retryAfterSeconds) {
        public static final Limits NONE = new Limits(Integer.MAX_VALUE, Integer.MAX_VALUE, 1);
    }

    private final Limits limits;
    /** Waiting requests per owner hash ("" for none) and in total; guarded by this. */
    private final Map<String, Integer> waitingByOwner = new HashMap<>();
    private int waitingRequests;

    private final Allocator allocator;
    /** {@link Allocator#knowsStandingClaim}, looked up for the waiters' keys a drain checks. */
    private final java.util.function.Predicate<String> standingClaim;
    private final Map<String, ArrayDeque<Waiter>> queues = new HashMap<>();
    /**
     * {@code !queues.isEmpty()}: written under this lock each time {@link #queues} gains its first kind or loses its
     * last, read without it by {@link #requestDrain} (every pod and node event) to skip the lock when nobody waits.
     */
    private volatile boolean anyWaiting;
    private final Map<String, Waiter> byKey = new HashMap<>();
    /**
     * Per kind, the keys of its waiters to look up in the claim ledger on its next drain: a pod event showed a claim
     * of the key (the only change that can make a claim of it stand), or the waiter has just joined (a claim made
     * between its first try and its joining), or the backstop sweep came. Guarded by this.
     */
    private final Map<String, java.util.Set<String>> claimsToCheck = new HashMap<>();
    private final Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();
    /**
     * Per kind, the pods claimed so far for requests of its line (replays aside): a client that waits in vain is told
     * how many went to requests ahead of it while it waited.
     */
    private final Map<String, java.util.concurrent.atomic.AtomicLong> handedOut = new ConcurrentHashMap<>();
    private final List<Observer> observers = new CopyOnWriteArrayList<>();
    private volatile java.util.function.Function<AllocCommand, String> afterWait = cmd -> POOLS_ADVICE;
    private volatile java.util.function.ToIntFunction<AllocCommand> afterWaitRetryAfter = cmd -> 0;
    /** Each kind's dispatcher, made when the kind first has a waiter; guarded by this. */
    private final Map<String, Dispatcher> dispatchers = new HashMap<>();

    /** The thread that claims for one kind's queue, and whether a drain of it is queued behind the one running. */
    private static final class Dispatcher {
        final AtomicBoolean pending = new AtomicBoolean();
        final ExecutorService thread = Executors.newSingleThreadExecutor(DaemonThreads.named("capacity-dispatch"));
    }
    /** The 503 of a request that would wait, or still waits, while this replica shuts down. */
    public static final String SHUTTING_DOWN = "the operator is shutting down; send the request again: another replica"
            + " answers it";
    private final ScheduledExecutorService timers;
    /**
     * Runs the give-backs of claims written for waits every client left, off the dispatchers: each is an API call or
     * a few, and one slow to be answered would hold up every hand-out of its kind's line. One thread for every kind
     * (made at the first give-back): a slow give-back holds up only those queued behind it, and the deallocs that
     * wait for them.
     */
    private final ExecutorService givingBack = Executors.newSingleThreadExecutor(
            DaemonThreads.named("capacity-give-back"));

    /** The clients' timers; a timer cancelled (its client answered first) is dropped at once, not kept until due. */
    private static ScheduledThreadPoolExecutor timers() {
        ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1,
                DaemonThreads.named("capacity-timeouts"));
        t.setRemoveOnCancelPolicy(true);
        return t;
    }

    /** Client timers not yet run nor dropped (tests: an answered client's timer is not kept). */
    int pendingTimers() {
        return ((ScheduledThreadPoolExecutor) timers).getQueue().size();
    }

    /**
     * How long a dealloc waits for the dispatcher's claim for its key's wait to end, its give-back included (a few
     * bounded API calls, the give-back maybe behind another).
     */
    private static final long ATTEMPT_WAIT_SECONDS = 60;
    private final AtomicInteger cancelsAwaitingAClaim = new AtomicInteger();
    private volatile java.util.function.Consumer<AllocCommand> beforeClaim = cmd -> { };

    /** Set by {@link #close}: a request that would wait is answered 503 at once. Guarded by this. */
    private boolean closed;

    public CapacityQueue(Allocator allocator) {
        this(allocator, Limits.NONE);
    }

    public CapacityQueue(Allocator allocator, Limits limits) {
        this(allocator, limits, SWEEP);
    }

    /** {@code sweep}: how often the queue wakes itself besides the pod events (a test turns it down to see those). */
    CapacityQueue(Allocator allocator, Limits limits, Duration sweep) {
        this(allocator, limits, sweep, allocator::knowsStandingClaim);
    }

    /** {@code standingClaim}: whether this replica knows of a standing claim of a key (a test makes it fail). */
    CapacityQueue(Allocator allocator, Limits limits, Duration sweep,
            java.util.function.Predicate<String> standingClaim) {
        this(allocator, limits, sweep, standingClaim, timers());
    }

    /** {@code timers}: runs the clients' timers and the sweep (a test runs a client's timer when it chooses). */
    CapacityQueue(Allocator allocator, Limits limits, Duration sweep,
            java.util.function.Predicate<String> standingClaim, ScheduledThreadPoolExecutor timers) {
        this.timers = timers;
        this.allocator = allocator;
        this.limits = limits;
        this.standingClaim = standingClaim;
        timers.scheduleWithFixedDelay(this::sweep, sweep.toMillis(), sweep.toMillis(), TimeUnit.MILLISECONDS);
    }

    public void addObserver(Observer o) {
        observers.add(o);
    }

    /**
     * Allocates for {@code cmd}, waiting up to {@code cmd.waitSeconds()} for capacity: queued behind the waiters of
     * its kind, and served by the dispatcher as soon as it is at the head and a pod is claimable (at once when
     * one is). A key that already holds a claim is answered by the first try (replay or 409).
     */
    public Ticket await(AllocCommand cmd, String ownerHash) {
        String kind = Candidates.idleKindKey(cmd);
        Waiter w;
        Ticket ticket;
        // every request that may wait goes through the queue, even when a pod is claimable now: its kind's one
        // dispatcher then claims for them in arrival order without racing itself (a burst of N requests for fewer
        // pods would otherwise walk the same candidates at once and spend its time in conflicting claim writes);
        // a key that already holds a claim is replayed (or refused) at once, from the cache, never queued behind
        // other keys' waits
        Optional<Allocator.Allocation> replay = allocator.replay(cmd);
        if (replay.isPresent()) {
            return new Ticket(CompletableFuture.completedFuture(replay.get()), Subscription.NONE);
        }
        // a user at the quota would be refused when their turn came, or end with a 503 if it never came. A retry
        // that joins its key's wait is counted anew too: the user may have claimed more since the wait's first
        // request was counted (through another replica too, which this replica's watch may not show yet)
        allocator.requireQuota(cmd, ownerHash);
        synchronized (this) {
            if (closed) {
                throw ApiException.unavailable(SHUTTING_DOWN, limits.retryAfterSeconds());
            }
            Waiter twin = byKey.get(cmd.keyHash());
            if (twin != null) {
                if (!twin.cmd.requestHash().equals(cmd.requestHash())) {
                    throw ApiException.conflict(Allocator.CONFLICT_MESSAGE);
                }
                admit(ownerHash, cmd);
                return subscribe(twin, cmd, ownerHash);
            }
            admit(ownerHash, cmd);
            w = new Waiter(cmd, ownerHash, kind);
            queues.computeIfAbsent(kind, k -> new ArrayDeque<>()).addLast(w);
            anyWaiting = true;
            byKey.put(cmd.keyHash(), w);
            // a claim of the key made since the first try above showed none, whose pod event found no waiter
            toCheck(w);
            counter(cmd).incrementAndGet();
            ticket = subscribe(w, cmd, ownerHash);
        }
        LOG.debug("queued key={} kind={} waitSeconds={}", cmd.keyHashPrefix(), kind, cmd.waitSeconds());
        requestDrain();
        return ticket;
    }

    /** Counts one more waiting request for the owner, or refuses it (429) past a cap. Called holding this. */
    private void admit(String ownerHash, AllocCommand cmd) {
        String owner = ownerHash == null ? "" : ownerHash;
        int mine = waitingByOwner.getOrDefault(owner, 0);
        if (waitingRequests >= limits.total()) {
            LOG.info("refused key={} outcome=too-many-waiting waiting={} max={}", cmd.keyHashPrefix(), waitingRequests,
                    limits.total());
            throw tooMany("too many alloc requests are waiting for capacity (" + waitingRequests + ", --max-waiting);"
                    + " retry later, or ask without waitSeconds for an answer now");
        }
        if (mine >= limits.perOwner()) {
            LOG.info("refused key={} outcome=too-many-waiting-for-owner waiting={} max={}", cmd.keyHashPrefix(), mine,
                    limits.perOwner());
            throw tooMany("you have " + mine + " alloc requests waiting for capacity, the most one user may have"
                    + " (--max-waiting-per-user); wait for one of them to be answered, or ask without waitSeconds");
        }
        waitingByOwner.put(owner, mine + 1);
        waitingRequests++;
    }

    private ApiException tooMany(String message) {
        return new ApiException(429, "TooManyRequests", message,
                Map.of("Retry-After", String.valueOf(limits.retryAfterSeconds())));
    }

    private synchronized void release(String ownerHash) {
        String owner = ownerHash == null ? "" : ownerHash;
        int mine = waitingByOwner.getOrDefault(owner, 0) - 1;
        if (mine <= 0) {
            waitingByOwner.remove(owner);
        } else {
            waitingByOwner.put(owner, mine);
        }
        waitingRequests--;
    }

    /** Requests waiting now (each client of a shared wait counts). */
    public synchronized int waitingRequests() {
        return waitingRequests;
    }

    /** Requests of this owner waiting now. */
    public synchronized int waitingRequests(String ownerHash) {
        return waitingByOwner.getOrDefault(ownerHash == null ? "" : ownerHash, 0);
    }

    /** A client of the wait {@code w} with its own request {@code cmd} (its waitSeconds). Called holding this. */
    private Ticket subscribe(Waiter w, AllocCommand cmd, String ownerHash) {
        w.clients.incrementAndGet();
        AtomicBoolean left = new AtomicBoolean();
        // set when this client leaves (its connection closed) before its time is up
        AtomicBoolean gone = new AtomicBoolean();
        w.arrived(left);
        long handedOutBefore = handedOut(w.kind).get();
        AtomicBoolean released = new AtomicBoolean();
        Runnable releaseSlot = () -> {
            if (released.compareAndSet(false, true)) {
                release(ownerHash);
            }
        };
        // at most one client is answered the claim as new (the one a client gone before its answer takes back, see
        // ApiFlows#allocate), and only when no other client is answered it; the others get it as a replay. A client
        // that left is answered 499 when the wait ends without a pod: the wait's 503 "no idle" would count it as
        // demand for the pool (ApiFlows), and it waits for nothing any more.
        CompletableFuture<Allocator.Allocation> result = w.result.handle((a, e) -> {
            if (e == null) {
                return a.replay() || w.claimant(left) ? a : new Allocator.Allocation(a.pod(), a.externalIp(), true);
            }
            throw gone.get() ? new CompletionException(new ApiException(499, "ClientClosedRequest", "client left"))
                    : e instanceof CompletionException c ? c : new CompletionException(e);
        });
        // each client waits as long as it asked: a retry of the key need not ask for the first request's time
        ScheduledFuture<?> timer = timers.schedule(() -> timeUp(w, cmd, left, result, handedOutBefore),
                cmd.waitSeconds(), TimeUnit.SECONDS);
        // the slot is free again once this client has its answer or has gone, whichever comes first
        result.whenComplete((a, e) -> {
            timer.cancel(false);
            releaseSlot.run();
        });
        return new Ticket(result, new Subscription() {
            @Override
            public void leave() {
                depart(w, left, gone, releaseSlot, result, null, "left");
            }

            @Override
            public void end(ApiException answer, String outcome) {
                depart(w, left, gone, releaseSlot, result, answer, outcome);
            }
        });
    }

    /**
     * A client of {@code w} leaves before its answer: gone ({@code answer} null: it is answered 499 should the wait
     * end without a pod), or answered {@code answer} now. The last one ends the wait itself, without a claim.
     */
    private void depart(Waiter w, AtomicBoolean left, AtomicBoolean gone, Runnable releaseSlot,
            CompletableFuture<Allocator.Allocation> result, ApiException answer, String outcome) {
        // counted out and (the last client) the wait ended in one step under this lock, which a retry of the key
        // joins under (await), as when a client's time is up: one that joins meanwhile keeps the wait, and is not
        // answered this client's answer
        boolean counted;
        boolean last = false;
        boolean ended = false;
        synchronized (this) {
            releaseSlot.run();
            boolean leaving = left.compareAndSet(false, true);
            counted = leaving && (answer != null || gone.compareAndSet(false, true)) && !w.result.isDone();
            if (counted) {
                last = w.clients.decrementAndGet() == 0;
                ended = last && remove(w);
            }
            if (leaving && answer != null && (counted ? last && !ended : w.result.isDone())) {
                // too late to answer it otherwise: the claim is on its way (or here) and is this client's answer.
                // It is still there to be handed it, so it stays a client the claim may go to as new: else a client
                // of the key that is gone could be handed it as new, and its caller would give back the pod this
                // one is answered
                left.set(false);
            }
        }
        if (ended) {
            LOG.info("left queue key={} kind={} outcome={}", w.cmd.keyHashPrefix(), w.kind,
                    answer == null ? "client-gone" : outcome);
            finish(w, outcome);
            w.result.completeExceptionally(
                    answer == null ? new ApiException(499, "ClientClosedRequest", "client left") : answer);
        } else if (counted && !last && answer != null && w.answeredInVain(left)) {
            // other clients of the key still wait: this one alone is answered, and is never handed the claim
            result.completeExceptionally(answer);
        }
        // the last client whose wait could not be ended: its claim is on its way, and is its answer
    }

    /**
     * A dealloc of a key that is still waiting: the wait ends with 410 and nothing is claimed for it (the client
     * released what it had not got yet). Returns whether a waiter was dropped.
     */
    public boolean cancel(String keyHash) {
        Waiter w;
        CompletableFuture<Void> claiming;
        // looked up and removed in one step under this lock: a wait of the key that ends and another that starts
        // between the two would leave the new wait in line, the dealloc having ended nothing
        synchronized (this) {
            w = byKey.get(keyHash);
            if (w == null || !remove(w)) {
                return false;
            }
            claiming = w.attempt;
        }
        finish(w, "deallocated");
        LOG.info("left queue key={} kind={} outcome=deallocated", w.cmd.keyHashPrefix(), w.kind);
        w.result.completeExceptionally(new ApiException(410, "Gone",
                "the allocation was deallocated while it waited for capacity: nothing was allocated for this request;"
                        + " send it again should you still need an allocation"));
        if (claiming != null) {
            // the dispatcher is claiming for this very wait: the claim it may be writing is given back, as for a wait
            // every client left. The dealloc that follows must come after that, or it could answer "released" with
            // nothing to delete yet and the claim landing a moment later
            awaitAttempt(claiming, w);
        }
        return true;
    }

    private void awaitAttempt(CompletableFuture<Void> claiming, Waiter w) {
        cancelsAwaitingAClaim.incrementAndGet();
        try {
            claiming.get(ATTEMPT_WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            // a claim or its give-back still not over by now (its API calls slow, or the give-back behind others on
            // the give-back thread) goes on; the dealloc below reads the pods as the API server has them and deletes
            // whatever of the key landed before that read, and a give-back after it finds nothing left to take back
            LOG.warn("dealloc went on before the claim for its wait and its give-back ended key={} kind={}",
                    w.cmd.keyHashPrefix(), w.kind);
        } finally {
            cancelsAwaitingAClaim.decrementAndGet();
        }
    }

    /** Deallocs waiting now for the dispatcher's claim for their key's wait to end (tests). */
    int cancelsAwaitingAClaim() {
        return cancelsAwaitingAClaim.get();
    }

    /** Runs on the dispatcher with each wait's command right before the claim for it (tests; default nothing). */
    void beforeClaim(java.util.function.Consumer<AllocCommand> hook) {
        beforeClaim = hook;
    }

    /** Requests waiting now for this kind of pod (resource type and architecture or Kubernetes version). */
    public int waiting(ResourceType type, String variant) {
        AtomicInteger n = counts.get(type.wire() + "|" + variant);
        return n == null ? 0 : n.get();
    }

    /**
     * Clients waiting now for this kind of pod: each request, a retry of a key that joined its wait included, as
     * the {@link Limits} count them ({@link #waiting(ResourceType, String)} counts each key once).
     */
    public synchronized int waitingClients(ResourceType type, String variant) {
        int n = 0;
        for (Waiter w : byKey.values()) {
            if (w.cmd.resourceType() == type && variant(w.cmd).equals(variant)) {
                n += w.clients.get();
            }
        }
        return n;
    }

    /** Every request waiting now. */
    public synchronized int waiting() {
        return byKey.size();
    }

    private AtomicInteger counter(AllocCommand cmd) {
        return counts.computeIfAbsent(cmd.resourceType().wire() + "|" + variant(cmd), k -> new AtomicInteger());
    }

    /** The metric's variant label: the architecture of a runner, the Kubernetes version of a control plane. */
    public static String variant(AllocCommand cmd) {
        return cmd.resourceType() == ResourceType.CONTROL_PLANE ? cmd.kubernetesVersion() : cmd.architecture();
    }

    private synchronized boolean remove(Waiter w) {
        ArrayDeque<Waiter> q = queues.get(w.kind);
        boolean removed = q != null && q.remove(w);
        if (removed) {
            byKey.remove(w.cmd.keyHash(), w);
            counter(w.cmd).decrementAndGet();
            java.util.Set<String> keys = claimsToCheck.get(w.kind);
            if (keys != null) {
                keys.remove(w.cmd.keyHash());
            }
            if (q.isEmpty()) {
                queues.remove(w.kind);
                claimsToCheck.remove(w.kind);
                anyWaiting = !queues.isEmpty();
            }
        }
        return removed;
    }

    /**
     * The waitSeconds of one client of {@code w} are up: it leaves the wait with the 503 while other clients of
     * the key still wait; the last one's time ends the wait itself (unless the claim for it is being written,
     * which is then its answer).
     */
    private void timeUp(Waiter w, AllocCommand cmd, AtomicBoolean left, CompletableFuture<Allocator.Allocation> result,
            long handedOutBefore) {
        if (result.isDone() || !left.compareAndSet(false, true)) {
            return;
        }
        // counted out and (the last client) the wait ended in one step under this lock, which a retry of the key
        // joins under (await): one that joins meanwhile keeps the wait, and is not answered this client's 503
        boolean last;
        boolean removed = false;
        synchronized (this) {
            last = w.clients.decrementAndGet() == 0;
            if (last) {
                removed = remove(w);
            }
        }
        if (!last) {
            ApiException inVain = waitedInVain(w, cmd, handedOutBefore);
            if (w.answeredInVain(left)) {
                result.completeExceptionally(inVain);
            }
            return;
        }
        if (!removed) {
            // the claim is on its way: this client is still there to be answered it
            left.set(false);
            return;
        }
        finish(w, "timeout");
        LOG.info("wait ended key={} kind={} outcome=timeout", w.cmd.keyHashPrefix(), w.kind);
        w.result.completeExceptionally(waitedInVain(w, cmd, handedOutBefore));
    }

    /**
     * The 503 of a request (its own {@code cmd}) that waited its waitSeconds in vain: after a claim for the wait
     * failed for a passing reason, that a pod could not be claimed and why (not that no pod was free for it, which may
     * be untrue, nor the "no idle" words a wait for lack of a pod is counted by); else the Go operator's words and
     * that no pod was free for it, or how many pods went to requests ahead of it in line since the client came
     * ({@code handedOutBefore}: the kind's count of pods claimed for its line then).
     */
    private ApiException waitedInVain(Waiter w, AllocCommand cmd, long handedOutBefore) {
        RuntimeException failed = w.unclaimed;
        if (failed != null) {
            return ApiException.unavailable(unclaimedMessage(cmd, failed), allocator.retryAfterSeconds());
        }
        ApiException unavailable;
        try {
            unavailable = allocator.unavailable(cmd);
        } catch (RuntimeException e) {
            unavailable = ApiException.unavailable("no idle playpen pods are available", allocator.retryAfterSeconds());
        }
        long ahead = handedOut(w.kind).get() - handedOutBefore;
        unavailable = unavailable.withAdvice(waitedAdvice(cmd.waitSeconds(), ahead) + afterWaitAdvice(cmd));
        int retryAfter = afterWaitRetryAfter(cmd);
        return retryAfter > 0 ? unavailable.withRetryAfter(retryAfter) : unavailable;
    }

    /**
     * {@link #afterWait}'s advice for {@code cmd}; {@link #POOLS_ADVICE} if it fails (logged): this runs on the
     * timer thread, which would swallow the error and leave the client unanswered.
     */
    private String afterWaitAdvice(AllocCommand cmd) {
        try {
            return afterWait.apply(cmd);
        } catch (RuntimeException e) {
            LOG.warn("after-wait advice failed key={} outcome=default-advice error={}", cmd.keyHashPrefix(), describe(e));
            return POOLS_ADVICE;
        }
    }

    /** {@link #afterWaitRetryAfter} for {@code cmd}; 0 (the default Retry-After) if it fails (logged). */
    private int afterWaitRetryAfter(AllocCommand cmd) {
        try {
            return afterWaitRetryAfter.applyAsInt(cmd);
        } catch (RuntimeException e) {
            LOG.warn("after-wait Retry-After failed key={} outcome=default-retry-after error={}", cmd.keyHashPrefix(),
                    describe(e));
            return 0;
        }
    }

    /** What a request whose claims failed for a passing reason is told when its time is up. */
    static String unclaimedMessage(AllocCommand cmd, RuntimeException failed) {
        String kind = cmd.resourceType() == ResourceType.CONTROL_PLANE
                ? cmd.kubernetesVersion() + " playpen control-plane" : cmd.architecture() + " playpen runner";
        int s = cmd.waitSeconds();
        return "no " + kind + " pod could be claimed in the " + s + (s == 1 ? " second" : " seconds")
                + " this request waited: a claim failed because " + why(failed) + "; try again";
    }

    /** A passing failure in a few words for the client (never a request's secrets). */
    private static String why(RuntimeException e) {
        if (e instanceof ApiException api) {
            String m = api.getMessage() == null ? "" : api.getMessage();
            if (m.startsWith("this operator replica's view of the pods is behind")) {
                return "this operator replica's view of the pods lagged behind the API server";
            }
            return m.isEmpty() ? "the operator was not ready" : m.replaceFirst(";? ?try again$", "");
        }
        int code = e instanceof io.fabric8.kubernetes.client.KubernetesClientException k ? k.getCode() : 0;
        if (code <= 0) {
            return "the Kubernetes API server did not answer";
        }
        if (code == 409) {
            return "the pods kept changing while they were claimed";
        }
        if (code == 429) {
            return "the Kubernetes API server was throttling requests (429)";
        }
        return "the Kubernetes API server answered " + code;
    }

    /** What a request that waited in vain is told after the Go operator's words, before {@link #afterWait}. */
    static String waitedAdvice(int waitSeconds) {
        return waitedAdvice(waitSeconds, 0);
    }

    /**
     * {@link #waitedAdvice(int)} for a request while whose wait {@code ahead} pods were claimed for requests ahead of
     * it in its line: that they went to those (a pod did come), not only that none was free for it.
     */
    static String waitedAdvice(int waitSeconds, long ahead) {
        String waited = waitSeconds + (waitSeconds == 1 ? " second" : " seconds") + " this request waited";
        if (ahead <= 0) {
            // not "none became idle": pods may have, and gone to requests without a wait or to other replicas'
            return "; no pod was free for it in the " + waited;
        }
        return "; in the " + waited + ", " + ahead + (ahead == 1 ? " pod went to a request" : " pods went to requests")
                + " ahead of it in line and none was left for it";
    }

    private java.util.concurrent.atomic.AtomicLong handedOut(String kind) {
        return handedOut.computeIfAbsent(kind, k -> new java.util.concurrent.atomic.AtomicLong());
    }

    /** Where to look after a wait in vain, unless {@link #afterWait} is told otherwise. */
    public static final String POOLS_ADVICE = "; kubectl get pools shows which pools have idle pods";

    /**
     * What a request that waited in vain is told last, by its kind (the operator tells a kind no pool keeps that
     * waiting will not bring one); {@link #POOLS_ADVICE} until set.
     */
    public void afterWait(java.util.function.Function<AllocCommand, String> advice) {
        afterWait(advice, cmd -> 0);
    }

    /**
     * As {@link #afterWait(java.util.function.Function)}, with the Retry-After such a request gets instead of the
     * default, by its kind (0: the default), such as the pause left of a pool that is backing off.
     */
    public void afterWait(java.util.function.Function<AllocCommand, String> advice,
            java.util.function.ToIntFunction<AllocCommand> retryAfter) {
        this.afterWait = advice;
        this.afterWaitRetryAfter = retryAfter;
    }

    /** Tells the observers how a wait ended; one that fails is logged, and never keeps the waiter from its answer. */
    private void finish(Waiter w, String outcome) {
        Duration waited = Duration.ofNanos(System.nanoTime() - w.since);
        for (Observer o : observers) {
            try {
                o.waited(w.cmd, waited, outcome);
            } catch (RuntimeException e) {
                LOG.warn("wait observer failed key={} kind={} outcome={} error={}", w.cmd.keyHashPrefix(), w.kind,
                        outcome, describe(e));
            }
        }
    }

    @Override
    public void onPodEvent(PodCache.Change change, Pod pod) {
        // any change can make a pod claimable (Running, Ready, key published, node with an ExternalIP)
        if (change == PodCache.Change.DELETED) {
            return;
        }
        // a claim of a waiter's key that may stand now: the ledger judges a claim only as its own pod's version is
        // stored, which the cache does before it tells its listeners, so this event is the one to look for it
        String key = pod == null || !anyWaiting ? "" : ManagedPods.keyHash(pod);
        if (!key.isEmpty()) {
            synchronized (this) {
                Waiter w = byKey.get(key);
                if (w != null) {
                    toCheck(w);
                }
            }
        }
        requestDrain();
    }

    /** The waiter's key is looked up in the claim ledger on its kind's next drain. Called holding this. */
    private void toCheck(Waiter w) {
        claimsToCheck.computeIfAbsent(w.kind, k -> new java.util.LinkedHashSet<>()).add(w.cmd.keyHash());
    }

    /**
     * The backstop wake-up: every waiter's key is looked up once more, and every kind drained, should a watch event
     * ever be missed.
     */
    private void sweep() {
        if (!anyWaiting) {
            return;
        }
        synchronized (this) {
            byKey.values().forEach(this::toCheck);
        }
        requestDrain();
    }

    /** Wakes the dispatcher of each kind that has waiters; coalesced: at most one drain queued behind the one running. */
    public void requestDrain() {
        // Nobody waiting (the usual case): nothing to wake, and no lock taken. No wake-up is lost to a waiter
        // joining meanwhile: it sets the flag under the lock as it joins its queue and then wakes its own kind's
        // dispatcher (await), whose drain reads the pod and node caches after that. A change that read the flag
        // unset had been written to its cache before (the caches store a change before telling their listeners),
        // and a volatile read that misses a write comes before it in the one order all volatile and lock actions
        // share, so that drain sees the change; a change that reads the flag set wakes the dispatchers as before.
        // Taking the lock gave no more: a change that took it before the waiter joined found no queue either.
        if (!anyWaiting) {
            return;
        }
        Map<String, Dispatcher> due = new HashMap<>();
        synchronized (this) {
            if (closed) {
                return;
            }
            for (String kind : queues.keySet()) {
                due.put(kind, dispatchers.computeIfAbsent(kind, k -> new Dispatcher()));
            }
        }
        due.forEach((kind, d) -> {
            if (d.pending.compareAndSet(false, true)) {
                try {
                    d.thread.execute(() -> {
                        d.pending.set(false);
                        drain(kind);
                    });
                } catch (java.util.concurrent.RejectedExecutionException e) {
                    d.pending.set(false);
                }
            }
        });
    }

    /** Serves every kind's queue heads on the calling thread (tests; the dispatchers drain their own kind). */
    void drain() {
        List<String> kinds;
        synchronized (this) {
            kinds = List.copyOf(queues.keySet());
        }
        kinds.forEach(this::drain);
    }

    /**
     * Serves one kind's queue heads, first come first served, until nothing is claimable for its head; then the
     * waiters whose key another request claimed meanwhile.
     */
    private void drain(String kind) {
        serveHeads(kind);
        replayClaimedMeanwhile(kind);
    }

    /** Serves one kind's queue heads, first come first served, until nothing is claimable for its head. */
    private void serveHeads(String kind) {
        while (true) {
            Waiter head;
            CompletableFuture<Void> attempt = new CompletableFuture<>();
            synchronized (this) {
                ArrayDeque<Waiter> q = queues.get(kind);
                head = q == null ? null : q.peekFirst();
                if (head != null) {
                    // a dealloc of the key from now on waits for this attempt's end (cancel)
                    head.attempt = attempt;
                }
            }
            if (head == null) {
                break;
            }
            try {
                if (!serveHead(head, kind)) {
                    break;
                }
            } finally {
                synchronized (this) {
                    head.attempt = null;
                }
                // over once its claim is handed out, or given back: a dealloc of the key that ended this wait
                // answers only after that (cancel), also when the give-back is slow
                CompletableFuture<Void> givenBack = head.givenBack;
                if (givenBack == null) {
                    attempt.complete(null);
                } else {
                    givenBack.whenComplete((done, e) -> attempt.complete(null));
                }
            }
        }
    }

    /** One claim for the head of a kind's queue; false: the pass over this kind ends. */
    private boolean serveHead(Waiter head, String kind) {
        Optional<Allocator.Allocation> a;
        try {
            beforeClaim.accept(head.cmd);
            a = allocator.tryAllocate(head.cmd, head.ownerHash);
        } catch (RuntimeException e) {
            if (isClosed()) {
                // the operator is stopping (and interrupted this claim): close() answers the waiter
                return false;
            }
            if (passing(e)) {
                // this replica's watch lagging, the API server overloaded or an answer lost: the waiter
                // keeps its place until its own time is up, and is tried again on the next wake-up
                LOG.info("claim not made key={} kind={} outcome=retry-later error={}", head.cmd.keyHashPrefix(),
                        kind, describe(e));
                head.unclaimed = e;
                return false;
            }
            if (remove(head)) {
                finish(head, "failed");
                head.result.completeExceptionally(e);
            }
            return true;
        }
        if (a.isEmpty()) {
            return false;
        }
        if (!remove(head)) {
            // every client of this wait left (or a dealloc of its key ended it) while its claim was being written:
            // nobody will get the answer, so the claim goes back (unless another request was handed it meanwhile)
            head.givenBack = giveBack(a.get(), head);
            return true;
        }
        finish(head, "served");
        if (!a.get().replay()) {
            handedOut(kind).incrementAndGet();
        }
        LOG.debug("served from queue key={} kind={}", head.cmd.keyHashPrefix(), kind);
        head.result.complete(a.get());
        return true;
    }

    /**
     * The waiters of one kind whose key is claimed by now by another request (on another replica, or one that did
     * not wait): answered that claim as a replay, as the first try of a request of a key that holds one is, instead
     * of waiting behind a head no pod comes for until their time is up. Only the keys a pod event (or the waiter's
     * joining, or the sweep) named since the last drain are looked up, not every waiter's. A passing failure leaves
     * the waiter in line, its key looked up again on a later wake-up; any other (the 409 of a claim made for another
     * request) ends its wait with it. A look-up in the ledger that fails ends the pass, its key and those not looked
     * up yet named again for the next drain.
     */
    private void replayClaimedMeanwhile(String kind) {
        List<Waiter> waiters = new java.util.ArrayList<>();
        synchronized (this) {
            java.util.Set<String> keys = claimsToCheck.remove(kind);
            if (keys == null) {
                return;
            }
            for (String key : keys) {
                Waiter w = byKey.get(key);
                if (w != null && w.kind.equals(kind)) {
                    waiters.add(w);
                }
            }
        }
        for (int i = 0; i < waiters.size(); i++) {
            Waiter w = waiters.get(i);
            boolean standing;
            try {
                standing = standingClaim.test(w.cmd.keyHash());
            } catch (RuntimeException e) {
                // this key and those not looked at yet stay named: the next drain looks them up, not only the
                // next backstop sweep
                LOG.warn("claim look-up failed key={} kind={} outcome=retry-later error={}", w.cmd.keyHashPrefix(),
                        kind, describe(e));
                synchronized (this) {
                    for (Waiter left : waiters.subList(i, waiters.size())) {
                        if (byKey.get(left.cmd.keyHash()) == left) {
                            toCheck(left);
                        }
                    }
                }
                return;
            }
            if (!standing) {
                continue;
            }
            Optional<Allocator.Allocation> a;
            try {
                a = allocator.replay(w.cmd);
            } catch (RuntimeException e) {
                if (isClosed()) {
                    return;
                }
                if (passing(e)) {
                    synchronized (this) {
                        if (byKey.get(w.cmd.keyHash()) == w) {
                            toCheck(w);
                        }
                    }
                } else if (remove(w)) {
                    finish(w, "failed");
                    w.result.completeExceptionally(e);
                }
                continue;
            }
            if (a.isPresent() && remove(w)) {
                finish(w, "served");
                LOG.debug("served from queue key={} kind={} outcome=replayed", w.cmd.keyHashPrefix(), kind);
                w.result.complete(a.get());
            }
        }
    }

    private synchronized boolean isClosed() {
        return closed;
    }

    /**
     * Gives back the claim written for a wait every client left, on {@link #givingBack}: the pass goes on serving the
     * waiters behind meanwhile. Returns the give-back, completed when it is over. A give-back that fails leaves the
     * claim on its pod (until its TTL, or a dealloc of the key; {@link Allocator#release} logs it). A request of the
     * key that comes meanwhile is never handed the claim and then has it given back: the give-back, conditional on
     * the version claimed, leaves a claim settled by its hand-out, and a hand-out that comes after the give-back
     * finds its settle refused. Once the queue is closed a give-back runs on the caller.
     */
    private CompletableFuture<Void> giveBack(Allocator.Allocation a, Waiter w) {
        return CompletableFuture.runAsync(() -> allocator.release(a, w.cmd), task -> {
            try {
                givingBack.execute(task);
            } catch (java.util.concurrent.RejectedExecutionException closed) {
                task.run();
            }
        });
    }

    /**
     * A failure that trying again later may not meet: a 503 of this operator (its view of the pods behind the API
     * server's), or the API server's conflict, throttling (429), 5xx or an answer that never came. A 4xx of this
     * operator (the quota's 429, the key's 409) or of the API server (403: RBAC) ends the wait with it.
     */
    static boolean passing(RuntimeException e) {
        if (e instanceof ApiException api) {
            return api.code() == 503;
        }
        if (e instanceof io.fabric8.kubernetes.client.KubernetesClientException k) {
            int code = k.getCode();
            return code <= 0 || code == 409 || code == 429 || code >= 500;
        }
        return false;
    }

    /** An error for the log: its type, code and message (an API server's message, never a request's secrets). */
    private static String describe(RuntimeException e) {
        int code = e instanceof ApiException api ? api.code()
                : e instanceof io.fabric8.kubernetes.client.KubernetesClientException k ? k.getCode() : 0;
        return e.getClass().getSimpleName() + " code=" + code + " message=" + e.getMessage();
    }

    @Override
    public void close() {
        List<Dispatcher> running;
        synchronized (this) {
            // no dispatcher is made once closed (requestDrain)
            closed = true;
            running = List.copyOf(dispatchers.values());
        }
        running.forEach(d -> d.thread.shutdownNow());
        // a give-back under way or queued goes on, not cut short (its claim would stay on its pod until its TTL);
        // one that the process's exit cuts short leaves it so, as one the API server refuses does
        givingBack.shutdown();
        timers.shutdownNow();
        List<Waiter> ended = new java.util.ArrayList<>();
        synchronized (this) {
            for (ArrayDeque<Waiter> q : queues.values()) {
                for (Iterator<Waiter> it = q.iterator(); it.hasNext();) {
                    Waiter w = it.next();
                    counter(w.cmd).decrementAndGet();
                    ended.add(w);
                }
            }
            queues.clear();
            anyWaiting = false;
            byKey.clear();
            claimsToCheck.clear();
        }
        // answered once the lock is let go: the observers and the callbacks on the answers run on this thread, and
        // one that needs this lock from another thread would otherwise wait for this one forever
        for (Waiter w : ended) {
            finish(w, "shutdown");
            w.result.completeExceptionally(ApiException.unavailable(SHUTTING_DOWN, limits.retryAfterSeconds()));
        }
    }
}
