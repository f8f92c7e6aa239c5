package io.unboundedcloud.playpen.kube;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.Backoff;
import io.unboundedcloud.playpen.model.DemandBuffer;
import io.unboundedcloud.playpen.model.HostPortPlanner;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.model.PoolBackoff;
import io.unboundedcloud.playpen.model.PoolHealth;
import io.unboundedcloud.playpen.model.PoolPlan;
import io.unboundedcloud.playpen.model.PoolPlanner;
import io.unboundedcloud.playpen.model.PoolTally;
import io.unboundedcloud.playpen.model.PoolTarget;
import io.unboundedcloud.playpen.model.ResourceType;

/**
 * Keeps the pools healthy, current and full: one pass assesses the pools from the watch cache, plans
 * with {@link PoolPlanner} (unhealthy, stale and surplus idle pods to delete, pods to create), deletes, creates and
 * reports. The pool-reconcile route runs a pass step by step ({@link #assess}, {@link #plan}, {@link #delete},
 * {@link #create}, {@link #finish}) on the interval and, debounced, right after a pod changes in a way the pools
 * care about; {@link #reconcile} is the same pass in one call. Passes never overlap and run on the leader only.
 * Pods created but not yet seen by the watch are "expected" so a quick second pass never creates twice.
 */
public final class PoolReconciler implements PodCache.Listener, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PoolReconciler.class);
    private static final long EXPECTATION_TTL_NANOS = TimeUnit.SECONDS.toNanos(60);
    private static final int ALREADY_EXISTS_RETRIES = 16;

    /** What one pass did. */
    public record Result(int created, int alreadyExisted, List<PoolPlan.Exhaustion> exhausted, boolean skipped,
            int deleted) {
        public Result(int created, int alreadyExisted, List<PoolPlan.Exhaustion> exhausted, boolean skipped) {
            this(created, alreadyExisted, exhausted, skipped, 0);
        }
    }

    /**
     * A create's outcome: created (or already ours), AlreadyExists answers before it, whether the range ran out, and
     * whether the pod is new to this process's reports (counted and told to the observers by this attempt).
     */
    private record Attempt(boolean created, int alreadyExisted, boolean rangeFull, boolean counted) {
        Attempt(boolean created, int alreadyExisted, boolean rangeFull) {
            this(created, alreadyExisted, rangeFull, created);
        }
    }

    /** Told about pool outcomes (metrics, events); an observer implements what it needs. */
    public interface Observer {
        /** A pod the pass created. */
        default void created(Pod pod) {
        }

        /** A pool whose hostPort range ran out (once per pass). */
        default void exhausted(PoolPlan.Exhaustion exhaustion) {
        }

        /** A pass that ended, how long it took and whether it failed. */
        default void pass(Result result, long nanos, boolean failed) {
        }

        /** An idle pod the pass deleted, and why. */
        default void deleted(PoolPlan.Deletion deletion) {
        }

        /** An allocated pod found unhealthy (once per pod, problem and spell, per term as leader). */
        default void unhealthyAllocated(PoolPlan.Unhealthy report) {
        }

        /**
         * A create the API server refused (a 4xx other than 409) or failed (a 5xx, a 429, no answer; not there when
         * read back): the pool's creates pause.
         */
        default void createRefused(CreateRefusal refusal) {
        }

        /** A pool started or went on backing off, or recovered, as the pod watch told it while this replica leads. */
        default void backoffChanged(PoolSignals.BackoffChange change) {
        }
    }

    /** The first create pause after a refusal; each further refusal in a row doubles it, up to --reconcile-interval. */
    static final Duration REFUSAL_FIRST_PAUSE = Duration.ofSeconds(1);
    private static final int REFUSAL_MESSAGE_MAX = 200;

    /**
     * A create of {@code target} the API server refused with {@code code}: its creates pause for {@code pause}.
     * {@code serverMessage} is the message of the API server's Status, trimmed.
     */
    public record CreateRefusal(PoolTarget target, int code, String serverMessage, Duration pause) {
        public String message() {
            return "pool " + target.key() + ": the API server " + LeaseRefusals.answered(code, "a pod create") + " ("
                    + serverMessage + "); the pool creates no pod for " + (pause.toMillis() % 1000 == 0
                            ? pause.toMillis() / 1000 + " s" : pause.toMillis() + " ms") + "; "
                    + LeaseRefusals.whatToCheck(code, "the namespace");
        }
    }

    /** A pool's creates paused after refusals: until when, how many refusals in a row started it, the last one. */
    private record RefusalPause(Instant until, int refusals, CreateRefusal last) {
    }

    /**
     * One pass on its way through the route's steps. A step that fails records the failure here and the later
     * steps do nothing; {@link #finish} ends the pass and throws it.
     */
    public static final class Pass {
        private final long startNanos = System.nanoTime();
        private final Instant now;
        private PoolPlan plan;
        private final Map<ResourceType, Set<Integer>> used = new EnumMap<>(ResourceType.class);
        private final List<PoolPlan.Exhaustion> exhausted = new ArrayList<>();
        /** Pools an unhealthy pod of which this pass deleted: their back-off may have changed since the plan. */
        private final Set<PoolTarget> deletedUnhealthy = new HashSet<>();
        /** Names of the pods this pass deleted. */
        private final Set<String> deletedNames = new HashSet<>();
        /**
         * Per pool, its unallocated pods as the API server listed them for this pass's first stale or surplus delete
         * that counts on other ready idle pods staying (by name; empty when the read failed): one read per pool.
         */
        private final Map<PoolTarget, Map<String, Pod>> listedUnallocated = new java.util.HashMap<>();
        private int created;
        private int existed;
        private int deleted;
        private RuntimeException failure;
        /**
         * The first delete that failed this pass: the pass fails with it, but only after the create step ran (a pod
         * that cannot be deleted must not keep any pool from filling).
         */
        private RuntimeException deleteFailure;
        private boolean finished;

        Pass(Instant now) {
            this.now = now;
        }

        /** The plan (null before the plan step). */
        public PoolPlan plan() {
            return plan;
        }

        public Instant now() {
            return now;
        }

        public int created() {
            return created;
        }

        public int deleted() {
            return deleted;
        }

        @Override
        public String toString() {
            return "pool pass at " + now + (plan == null ? "" : ": " + plan.toDelete().size() + " to delete, "
                    + plan.toCreate().size() + " to create");
        }
    }

    private final KubernetesClient client;
    private final OperatorConfig config;
    private final PodCache pods;
    private final NodeCache nodes;
    private final PoolPlanner planner;
    private final PoolSignals signals;
    private final BooleanSupplier leader;
    private final ApiCallCounter calls;
    private final Clock clock;
    private final long debounceMillis;
    /**
     * Passes asked for by pod changes wait at least this many times the CPU the last plan took, so that planning
     * costs at most a tenth of a core however fast pods change: a plan judges every idle pod (health, template,
     * surplus), a few milliseconds with 10,000 of them but a good part of a second with 50,000, and under a steady
     * stream of claims a pass would otherwise follow every debounce. The interval timer's passes are not delayed.
     */
    static final int PLAN_CPU_SHARE_DIVISOR = 10;
    /**
     * A pass that finds the cache not yet synced (the Lease won before the first list is in) looks again this soon,
     * whatever the refill wait: with a shorter one (a debounce of 0) it would look again and again while the list it
     * waits for needs the CPU.
     */
    static final long SYNC_RECHECK_MILLIS = 100;
    private volatile java.util.function.LongSupplier threadCpuNanos = PoolReconciler::currentThreadCpuNanos;
    /** The clock of the expectations' lapse ({@link System#nanoTime}; tests move it by hand). */
    private volatile java.util.function.LongSupplier nanoTime = System::nanoTime;
    private volatile long lastPlanCpuNanos;
    private final LongAdder planCpuNanos = new LongAdder();
    private final Map<String, Long> expected = new ConcurrentHashMap<>();
    /**
     * hostPorts, by kind, whose pod name a create met taken by a pod that is not the pool's own (claimed,
     * terminating or someone else's) that the watch had not shown: when last met. Later plans count them used
     * until they lapse with the expectations, so a run of such ports longer than one pass's tries is walked across
     * passes instead of met again from its start.
     */
    private final Map<ResourceType, Map<Integer, Long>> heldElsewhere = new ConcurrentHashMap<>();
    /**
     * hostPorts, by kind, whose create got no clear answer (a 5xx, a 429, no answer) and was not there when read back
     * (the API server may still commit it): when. Until they lapse with the expectations no pod is planned on them,
     * so a create that lands late never shares its port; they do not count toward a full range (a webhook that
     * fails every create must not read as a range to widen).
     */
    private final Map<ResourceType, Map<Integer, Long>> inDoubt = new ConcurrentHashMap<>();
    /**
     * The pods as the watch reports them, counted for the pools (host ports held, each pool's idle pods and the
     * allocated ones a pass must judge): a pass plans from it without walking every pod.
     */
    private final PoolTally tally;
    /** Per managed pod, what the pools last saw of it: refills are triggered by transitions only. */
    private final Map<String, Integer> lastState = new ConcurrentHashMap<>();
    /**
     * uids of the pods this process reported created (counted, observers told): a create that meets one of them
     * (AlreadyExists, the watch not showing it yet) does not report it again. Bounded: it forgets the oldest.
     */
    private final Set<String> reportedCreated = java.util.Collections.synchronizedSet(java.util.Collections
            .newSetFromMap(new java.util.LinkedHashMap<String, Boolean>() {
                @Override
                protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
                    return size() > REPORTED_CREATED_MAX;
                }
            }));
    private static final int REPORTED_CREATED_MAX = 50_000;
    /**
     * uid + problem + its start of allocated pods already reported unhealthy in this term as leader: spares the API
     * server a create per pass; the Event's name, made from the same, keeps a new leader from recording it again
     * while the Event is there. Forgotten when a term begins ({@link #forgetTerm}): by a later term the API server may
     * have deleted the Event (after its --event-ttl, an hour by default), and that term records it again as a replica
     * that never led would.
     */
    private final Set<String> reported = ConcurrentHashMap.newKeySet();
    /**
     * uids of the failed replacements whose BackOff this term as leader has told (see {@link #reportBackoffs});
     * forgotten when a term begins, as {@link #reported}.
     */
    private final Set<String> reportedBackoffs = ConcurrentHashMap.newKeySet();
    private final java.util.concurrent.ScheduledThreadPoolExecutor refill =
            new java.util.concurrent.ScheduledThreadPoolExecutor(1, DaemonThreads.named("pool-refill"));
    private final AtomicBoolean refillScheduled = new AtomicBoolean();
    /**
     * A prompt pass is scheduled, not debounced: a new leader's first one, one dropped while this replica did not count
     * as leading ({@link #onLeadingAgain}), or a look again whether the cache has synced ({@link #SYNC_RECHECK_MILLIS}).
     */
    private final AtomicBoolean promptPassScheduled = new AtomicBoolean();
    /** A pass found this replica not counting as leading since it last did (see {@link #onLeadingAgain}). */
    private final AtomicBoolean passDropped = new AtomicBoolean();
    /** From {@link #onLeadership} to {@link #onLeadershipLost}: this replica's term as leader goes on. */
    private volatile boolean inTerm;
    /**
     * Per pool, the back-off changes the watch told while this leader did not count as leading, its term going on
     * ({@link #backoffSignalled}): the latest failure and the latest recovery, in the order they came.
     */
    private final Map<PoolTarget, List<PoolSignals.BackoffChange>> heldBackoffs = new ConcurrentHashMap<>();
    /**
     * Held while back-off changes are told, by the watch's thread and by the pass thread that tells the kept ones
     * ({@link #onLeadingAgain}): a change the watch shows while kept ones are being told waits for them, so a pool's
     * changes are told in the order they came.
     */
    private final ReentrantLock tellingBackoffs = new ReentrantLock();
    /**
     * When the wake-up after a pause that is scheduled asks for a pass (null: none is): a pass during the pause does
     * not schedule another for the same time or later, so wake-ups do not pile up while the pause lasts.
     */
    private final java.util.concurrent.atomic.AtomicReference<Instant> wakeAt =
            new java.util.concurrent.atomic.AtomicReference<>();
    /** Pools whose creates the API server refused, on this leader: no create until the pause ends. */
    private final Map<PoolTarget, RefusalPause> refused = new ConcurrentHashMap<>();
    /**
     * Written on every pod this process creates ({@link io.unboundedcloud.playpen.model.PlaypenKeys#CREATE_ID}): a
     * create met by a pod carrying it met this process's own earlier try, one met by a pod without it met a pod
     * another leader (or an earlier run) created, which that one counted and reported.
     */
    private final String createId = java.util.UUID.randomUUID().toString();
    private final ReentrantLock passLock = new ReentrantLock();
    /** The pass the holder of {@link #passLock} runs (null when none runs): what {@link #end} ends. */
    private volatile Pass running;
    private final LongAdder passes = new LongAdder();
    private final java.util.List<Observer> observers = new java.util.concurrent.CopyOnWriteArrayList<>();
    private volatile Runnable passRunner = this::reconcile;

    /** A reconciler without node checks, back-off or demand (the create path alone; tests). */
    public PoolReconciler(KubernetesClient client, OperatorConfig config, PodCache pods, PodTemplates templates,
            BooleanSupplier leader, ApiCallCounter calls) {
        this(client, config, pods, null, new PoolPlanner(config, templates), null, leader, calls, Clock.systemUTC());
    }

    /**
     * @param nodes   node cache for the node checks (null: none)
     * @param signals back-off, time-to-ready and demand learnt from the watch (null: none)
     */
    public PoolReconciler(KubernetesClient client, OperatorConfig config, PodCache pods, NodeCache nodes,
            PoolPlanner planner, PoolSignals signals, BooleanSupplier leader, ApiCallCounter calls, Clock clock) {
        this.client = client;
        this.config = config;
        this.pods = pods;
        this.nodes = nodes;
        this.planner = planner;
        this.tally = planner.newTally();
        // it learns of pods from the cache's events (it must be one of its listeners, added before the cache
        // starts); pods the cache holds already when it is made are counted now
        for (Pod pod : pods.pods()) {
            tally.put(pod);
        }
        this.signals = signals;
        this.leader = leader;
        if (signals != null) {
            // every replica learns the back-off from its watch; the leader, which acts on it, tells
            signals.addObserver(this::backoffSignalled);
        }
        this.calls = calls;
        this.clock = clock;
        this.debounceMillis = Math.max(0, config.refillDebounce().toMillis());
    }

    public void addObserver(Observer observer) {
        observers.add(observer);
    }

    /**
     * A pool's back-off changed (the watch told it, on every replica): told to the observers while this one leads.
     * One that comes while this leader does not count as leading, its term going on (past its renew deadline, its
     * next Lease write not landed yet), is kept and told once it counts again ({@link #onLeadingAgain}): no other
     * replica leads meanwhile, and a recovery (BackOffEnded) is told by nothing else later.
     */
    private void backoffSignalled(PoolSignals.BackoffChange change) {
        if (!leader.getAsBoolean()) {
            if (inTerm) {
                heldBackoffs.merge(change.target(), List.of(change), PoolReconciler::latestOfEachKind);
                if (leader.getAsBoolean()) {
                    tellHeldBackoffs(); // it counted as leading again before the change was kept
                }
            }
            return;
        }
        tellingBackoffs.lock();
        try {
            tellHeldBackoffs(); // any kept ones came first, also those being told now on the pass thread
            tellBackoff(change);
        } finally {
            tellingBackoffs.unlock();
        }
    }

    /** A failed replacement is told once per term (see {@link #reportBackoffs}); a recovery each time. */
    private void tellBackoff(PoolSignals.BackoffChange change) {
        if (change.recovered() || reportedBackoffs.add(change.pod().getMetadata().getUid())) {
            observers.forEach(o -> o.backoffChanged(change));
        }
    }

    private void tellHeldBackoffs() {
        tellingBackoffs.lock();
        try {
            for (PoolTarget target : List.copyOf(heldBackoffs.keySet())) {
                List<PoolSignals.BackoffChange> held = heldBackoffs.remove(target);
                if (held != null) {
                    held.forEach(this::tellBackoff);
                }
            }
        } finally {
            tellingBackoffs.unlock();
        }
    }

    /** {@code held} with {@code added} after it, replacing a kept change of its kind (failure or recovery). */
    private static List<PoolSignals.BackoffChange> latestOfEachKind(List<PoolSignals.BackoffChange> held,
            List<PoolSignals.BackoffChange> added) {
        List<PoolSignals.BackoffChange> out = new ArrayList<>();
        held.stream().filter(c -> c.recovered() != added.get(0).recovered()).forEach(out::add);
        out.addAll(added);
        return List.copyOf(out);
    }

    /**
     * A pool the plan finds backing off whose last failed replacement this term has not told yet is told now: a
     * replica that led when the failure happened told it then, but the API server deletes Events after its
     * --event-ttl, and a replica that followed then never told it. Its BackOff Event is named after the failed pod,
     * so the create itself tells whether the API server still has it (AlreadyExists: nothing more is written).
     */
    private void reportBackoffs(PoolPlan plan) {
        if (signals == null) {
            return;
        }
        Set<String> live = new HashSet<>();
        for (var s : plan.statuses().values()) {
            Optional<PoolSignals.BackoffChange> last = signals.lastFailure(s.target());
            if (last.isEmpty()) {
                continue;
            }
            String uid = last.get().pod().getMetadata().getUid();
            live.add(uid);
            if (s.backoff().backingOff() && reportedBackoffs.add(uid)) {
                LOG.info("pool={} outcome=backoff-told-again pod={} the pool is still backing off",
                        s.target().key(), ManagedPods.name(last.get().pod()));
                observers.forEach(o -> o.backoffChanged(last.get()));
            }
        }
        reportedBackoffs.retainAll(live);
    }

    /** How refills run a pass: through the pool-reconcile route once Camel runs (default: {@link #reconcile}). */
    public void runPassesWith(Runnable runner) {
        this.passRunner = runner == null ? this::reconcile : runner;
    }

    public PoolPlanner planner() {
        return planner;
    }

    /** One pass in one call: {@link #assess}, {@link #plan}, {@link #delete}, {@link #create}, {@link #finish}. */
    public Result reconcile() {
        Pass pass = assess();
        if (pass == null) {
            return new Result(0, 0, List.of(), true);
        }
        try {
            return finish(create(delete(plan(pass))));
        } finally {
            release(pass); // an Error out of a step: the pass lock is not left held
        }
    }

    /**
     * Starts a pass: null (nothing to do) on a replica that does not count as leading (a pass runs again when it
     * counts as leading again within its term: {@link #onLeadingAgain}), or while the cache is not synced or this
     * pool has not yet heard of every pod in it ({@link PodCache#listenersCaughtUp}). Holds the pass lock until
     * {@link #finish} (the route's {@link #end}, which runs whatever the steps between did), so passes never overlap.
     */
    public Pass assess() {
        if (!leader.getAsBoolean()) {
            // what this term holds stays (see forgetTerm): a leader past its renew deadline counts again, in the same
            // term, once its next Lease write lands; a replica that leads again after a change forgets it then
            droppedWhileNotLeading();
            return null;
        }
        if (!pods.listenersCaughtUp()) {
            // back as soon as the cache has synced and its listeners, this pool's tally among them, have heard of
            // every pod in it: after --refill-debounce, a long debounce would hold the first pass back until the
            // interval timer's next tick; not sooner than SYNC_RECHECK_MILLIS, however short the debounce
            schedulePass(promptPassScheduled, SYNC_RECHECK_MILLIS);
            return null;
        }
        passLock.lock();
        passes.increment();
        forgetStaleExpectations(nanoTime.getAsLong());
        Pass pass = new Pass(clock.instant());
        running = pass;
        return pass;
    }

    /**
     * The plan step: what to delete and create, from the pods as the watch reported them, the nodes, the back-off
     * and the demand.
     */
    public Pass plan(Pass pass) {
        return step(pass, () -> {
            // expectations first, then the tally: a pod whose watch event lands in between leaves the expectations
            // only after the tally has it, so it is in one of the two; the other order could miss it and create twice
            Set<String> expectedNow = Set.copyOf(expected.keySet());
            long cpu0 = threadCpuNanos.getAsLong();
            PoolPlanner.Context ctx = context(pass.now);
            if (ctx.nodesPending()) {
                LOG.info("outcome=nodes-not-synced the node cache has not synced yet: this pass deletes no stale or "
                        + "surplus pod (a pass after it has does)");
            }
            pass.plan = planner.plan(tally, expectedNow, heldElsewhereNow(), portsNow(inDoubt), ctx);
            lastPlanCpuNanos = Math.max(0, threadCpuNanos.getAsLong() - cpu0);
            planCpuNanos.add(lastPlanCpuNanos);
            pass.exhausted.addAll(pass.plan.exhausted());
        });
    }

    /** The back-off, time-to-ready and demand this reconciler plans with (null: none). */
    public PoolSignals signals() {
        return signals;
    }

    /** What a plan knows besides the pods: now, the nodes, the back-off and the demand-aware buffer's sizes. */
    public PoolPlanner.Context context(Instant now) {
        // a replica that has just started or won the Lease may plan before its node cache has synced (the nodes are
        // the whole cluster's, the pods one namespace's): the node checks wait, and so do the stale and surplus
        // deletes, which count on the ready pods (one on a node that is not Ready is not ready capacity)
        boolean nodesPending = nodes != null && !nodes.hasSynced();
        java.util.function.Function<String, Optional<io.fabric8.kubernetes.api.model.Node>> nodeLookup =
                nodes != null && !nodesPending ? nodes::node : null;
        if (signals == null) {
            return new PoolPlanner.Context(now, nodeLookup, Map.of(), Map.of(), Map.of(), Map.of(), nodesPending);
        }
        Map<PoolTarget, Integer> want = new java.util.HashMap<>();
        Map<PoolTarget, Double> rates = new java.util.HashMap<>();
        Map<PoolTarget, Duration> readyTimes = new java.util.HashMap<>();
        int maxIdle = config.pools().maxIdle();
        planner.desired().forEach((t, min) -> {
            DemandBuffer d = signals.demand(t);
            rates.put(t, d.rate(now));
            Duration ttr = d.timeToReady();
            if (ttr != null) {
                readyTimes.put(t, ttr);
            }
            if (config.pools().demandBuffer()) {
                // the wait before a refill is the debounce, or longer after a costly plan: the buffer covers it
                want.put(t, d.desired(now, min, Math.max(min, maxIdle), Duration.ofMillis(refillDelayMillis())));
            }
        });
        return new PoolPlanner.Context(now, nodeLookup, signals.backoffs(), want, rates, readyTimes, nodesPending);
    }

    /**
     * The delete step: unhealthy idle pods, stale ones a ready current pod has replaced, surplus ones. Each delete
     * carries the resourceVersion the plan judged as precondition, so a pod claimed (or otherwise changed) meanwhile
     * is never deleted; a stale or surplus one the plan let go because other ready idle pods stay goes only while
     * enough of them still do, in the cache ({@link #enoughReadyLeft}) and then in the API server
     * ({@link #enoughReadyLeftInApiServer}: one read per pool that deletes such a pod, none on a pass that does not).
     * A delete that fails (refused, or no answer) leaves that pool's other deletes for the next pass, and the other
     * pools' deletes and every pool's creates go on: the pass fails with the first such failure once the create step
     * has run ({@link #finish}). A pool's planned pods never wait on its deletes (the pod a delete leaves keeps its
     * port; the new one takes another).
     */
    public Pass delete(Pass pass) {
        return step(pass, () -> {
            Set<PoolTarget> failedPools = new HashSet<>();
            for (PoolPlan.Deletion d : pass.plan.toDelete()) {
                if (!leader.getAsBoolean()) {
                    droppedWhileNotLeading();
                    return;
                }
                if (failedPools.contains(d.target())) {
                    continue;
                }
                if (!enoughReadyLeft(d, pass.deletedNames) || !enoughReadyLeftInApiServer(d, pass)) {
                    continue;
                }
                boolean deleted;
                try {
                    deleted = deleteIdle(d);
                } catch (KubernetesClientException e) {
                    LOG.warn("pod={}/{} pool={} reason={} outcome=delete-failed code={} {}; the pool's other deletes "
                            + "wait for the next pass, its creates and the other pools' go on",
                            config.runnerNamespace(), ManagedPods.name(d.pod()), d.target().key(), d.reason(),
                            e.getCode(), e.getMessage());
                    failedPools.add(d.target());
                    if (pass.deleteFailure == null) {
                        pass.deleteFailure = e;
                    }
                    continue;
                }
                if (deleted) {
                    pass.deleted++;
                    pass.deletedNames.add(ManagedPods.name(d.pod()));
                    if (d.why() == PoolPlan.Why.UNHEALTHY && signals != null) {
                        signals.deletedUnhealthy(d.target(), d.pod(), d.problem());
                        pass.deletedUnhealthy.add(d.target());
                    }
                    observers.forEach(o -> o.deleted(d));
                }
            }
        });
    }

    /**
     * Whether a stale or surplus delete that counts on other ready idle pods staying still has enough of them: the
     * plan's ready pods that this pass has not deleted and the cache still shows idle and ready. One claimed since the
     * plan would otherwise leave the pool short of ready pods until a later pass (during a rollout, below what it
     * keeps); the next pass judges the pod anew. Stops counting at {@link PoolPlan.Deletion#keepReady}.
     */
    private boolean enoughReadyLeft(PoolPlan.Deletion d, Set<String> deletedThisPass) {
        if (d.keepReady() <= 0) {
            return true;
        }
        int left = 0;
        for (Pod other : d.ready()) {
            String name = ManagedPods.name(other);
            if (other == d.pod() || deletedThisPass.contains(name)) {
                continue;
            }
            Optional<Pod> fresh = pods.get(name);
            if (fresh.isPresent() && ManagedPods.isIdle(fresh.get()) && PoolHealth.ready(fresh.get())
                    && java.util.Objects.equals(fresh.get().getMetadata().getUid(), other.getMetadata().getUid())
                    && ++left >= d.keepReady()) {
                return true;
            }
        }
        LOG.info("pod={}/{} pool={} reason={} outcome=too-few-ready-left ready={} needed={}", config.runnerNamespace(),
                ManagedPods.name(d.pod()), d.target().key(), d.reason(), left, d.keepReady());
        return false;
    }

    /**
     * {@link #enoughReadyLeft} confirmed from the API server: the cache of this leader may not show yet that the
     * pods the delete counts on were claimed through another replica. The pool's unallocated pods are listed once
     * per pass (the first delete of the pool that counts on others; a pass that deletes no such pod reads nothing),
     * and the plan's ready pods are counted in that list: still there (same uid), idle and ready, and not deleted
     * by this pass. A read that fails keeps the pod; the next pass judges it again.
     */
    private boolean enoughReadyLeftInApiServer(PoolPlan.Deletion d, Pass pass) {
        if (d.keepReady() <= 0) {
            return true;
        }
        Map<String, Pod> listed = pass.listedUnallocated.computeIfAbsent(d.target(), t -> listUnallocated(d));
        int left = 0;
        for (Pod other : d.ready()) {
            String name = ManagedPods.name(other);
            if (other == d.pod() || pass.deletedNames.contains(name)) {
                continue;
            }
            Pod now = listed.get(name);
            if (now != null && ManagedPods.isIdle(now) && PoolHealth.ready(now)
                    && java.util.Objects.equals(now.getMetadata().getUid(), other.getMetadata().getUid())
                    && ++left >= d.keepReady()) {
                return true;
            }
        }
        LOG.info("pod={}/{} pool={} reason={} outcome=too-few-ready-left ready={} needed={} source=api-server",
                config.runnerNamespace(), ManagedPods.name(d.pod()), d.target().key(), d.reason(), left,
                d.keepReady());
        return false;
    }

    /**
     * The pods of the runner namespace that carry every label the plan's ready pods of {@code d} have in common
     * (their pool's labels) and no allocation label, from the API server, by name; empty when the read fails.
     */
    private Map<String, Pod> listUnallocated(PoolPlan.Deletion d) {
        Map<String, String> common = null;
        for (Pod p : d.ready()) {
            Map<String, String> labels = ManagedPods.labels(p);
            if (common == null) {
                common = new java.util.HashMap<>(labels);
            } else {
                common.entrySet().removeIf(e -> !java.util.Objects.equals(e.getValue(), labels.get(e.getKey())));
            }
        }
        try {
            calls.count(KubeApiCall.PODS_LIST);
            List<Pod> items = client.pods().inNamespace(config.runnerNamespace())
                    .withLabels(common == null ? Map.of() : common)
                    .withoutLabel(io.unboundedcloud.playpen.model.PlaypenKeys.ALLOCATED).list().getItems();
            Map<String, Pod> byName = new java.util.HashMap<>();
            for (Pod p : items) {
                byName.put(ManagedPods.name(p), p);
            }
            return byName;
        } catch (KubernetesClientException e) {
            LOG.warn("pool={} outcome=ready-count-unread the pool's pods could not be listed ({}); its stale and "
                    + "surplus pods stay this pass", d.target().key(), e.getMessage());
            return Map.of();
        }
    }

    /** Deletes one idle pod if it is still the version the plan saw; false when it changed or someone else won. */
    private boolean deleteIdle(PoolPlan.Deletion d) {
        Pod pod = d.pod();
        String name = ManagedPods.name(pod);
        // the freshest version this process knows: a claim made here a moment ago must never be deleted
        Optional<Pod> fresh = pods.get(name);
        if (fresh.isEmpty() || ManagedPods.isClaimed(fresh.get()) || ManagedPods.isTerminating(fresh.get())
                || !java.util.Objects.equals(fresh.get().getMetadata().getUid(), pod.getMetadata().getUid())) {
            return false;
        }
        Pod target = fresh.get();
        if (!java.util.Objects.equals(target.getMetadata().getResourceVersion(), pod.getMetadata().getResourceVersion())) {
            // changed since the plan judged it (ready now, say): not what the plan decided on; the next pass judges it
            LOG.info("pod={}/{} pool={} outcome=changed-before-delete", config.runnerNamespace(), name,
                    d.target().key());
            return false;
        }
        try {
            calls.count(KubeApiCall.PODS_DELETE);
            io.fabric8.kubernetes.client.dsl.Deletable op = client.pods().inNamespace(config.runnerNamespace())
                    .resource(target).lockResourceVersion(target.getMetadata().getResourceVersion());
            if (d.force() && op instanceof io.fabric8.kubernetes.client.dsl.DeletableWithOptions options) {
                // the lock stays: the grace period is added to the same operation
                op = (io.fabric8.kubernetes.client.dsl.Deletable) options.withGracePeriod(0);
            }
            var deleted = op.delete();
            pods.observeDeleted(name);
            if (deleted == null || deleted.isEmpty()) {
                // answered "not found": the pod went before this delete (its watch event has not come yet)
                alreadyGone(d, name);
                return false;
            }
            LOG.info("deleted pod={}/{} pool={} reason={} outcome=deleted{}", config.runnerNamespace(), name,
                    d.target().key(), d.reason(), d.force() ? " gracePeriod=0" : "");
            return true;
        } catch (KubernetesClientException e) {
            if (e.getCode() == 404) {
                pods.observeDeleted(name);
                alreadyGone(d, name);
                return false;
            }
            if (e.getCode() == 409) {
                // changed since the plan (claimed, most likely): it is not ours to delete any more
                LOG.info("pod={}/{} pool={} outcome=changed-before-delete", config.runnerNamespace(), name,
                        d.target().key());
                return false;
            }
            throw e;
        }
    }

    private void alreadyGone(PoolPlan.Deletion d, String name) {
        LOG.info("pod={}/{} pool={} reason={} outcome=already-gone", config.runnerNamespace(), name, d.target().key(),
                d.reason());
    }

    /**
     * The create step: the planned pods, on the lowest free hostPorts (AlreadyExists moves on to the next one). A
     * pool whose create fails tries no more this pass; the other pools go on, and the step ends with the first
     * failure. A create the API server refused (a 4xx other than 409), or failed without a clear answer (a 5xx, a
     * 429, none) and that is not there when read back, also pauses the pool's creates on this leader, 1 s doubling per refusal in a row up to --reconcile-interval, until a create succeeds or a pass
     * needs no new pod of the pool; while it lasts the pool's Degraded condition says so
     * ({@link #createRefusedCondition}).
     */
    public Pass create(Pass pass) {
        return step(pass, () -> {
            Set<io.unboundedcloud.playpen.model.PoolTarget> failedPools = new HashSet<>();
            KubernetesClientException firstFailure = null;
            for (PoolPlan.PlannedPod planned : pass.plan.toCreate()) {
                if (!leader.getAsBoolean()) {
                    // leadership lost in the middle of a pass: the new leader plans afresh, and so does this
                    // replica if it counts as leading again within its term
                    droppedWhileNotLeading();
                    break;
                }
                if (signals != null && signals.backoff(planned.target()).view().pausedAt(pass.now)) {
                    continue; // this pass's own deletes found a failed replacement: the pool pauses now
                }
                if (failedPools.contains(planned.target())) {
                    continue;
                }
                RefusalPause paused = refused.get(planned.target());
                if (paused != null && pass.now.isBefore(paused.until())) {
                    continue; // the API server refused this pool's last create: it waits out the pause
                }
                Attempt a;
                try {
                    a = create(planned, pass.used.computeIfAbsent(planned.target().type(), pass.plan::portsInUse));
                    if (a.created()) {
                        refused.remove(planned.target());
                    }
                } catch (KubernetesClientException e) {
                    if (isRefusal(e) || ClaimWriter.mayHaveLanded(e)) {
                        // refused, or failed without a clear answer (a webhook that cannot be reached answers 500
                        // on every create, an overloaded API server 429 or 5xx): the pool pauses either way
                        refusedCreate(planned.target(), e, pass.now);
                    }
                    // refused (an admission rule, a quota) or unknown: this pool's next pods would most likely
                    // meet the same, but another pool's need not, so one pool cannot keep the others empty
                    failedPools.add(planned.target());
                    if (firstFailure == null) {
                        firstFailure = e;
                    }
                    continue;
                }
                pass.existed += a.alreadyExisted();
                if (a.created()) {
                    if (a.counted()) {
                        pass.created++;
                    }
                } else if (a.rangeFull()) {
                    exhausted(pass, planned.target());
                } else {
                    // free ports are left, but the pass stopped trying: not a full range (no exhaustion Event,
                    // metric or condition, which say every port is used); the watch shows who holds those ports
                    LOG.warn("pool={} outcome=deferred {} hostPorts in a row answered AlreadyExists for pods this "
                            + "replica has not seen yet; the next pass creates the pod", planned.target().key(),
                            a.alreadyExisted());
                }
            }
            // a pool that needs no new pod now has no create being refused (its pause, if any, ends)
            refused.keySet().removeIf(t -> pass.plan.toCreate().stream().noneMatch(p -> p.target().equals(t)));
            if (firstFailure != null) {
                throw firstFailure;
            }
        });
    }

    /** Whether this replica leads (runs the passes). */
    public boolean leads() {
        return leader.getAsBoolean();
    }

    /**
     * Whether the API server refused {@code target}'s last pod create and none has succeeded since, while it needs
     * pods (false on a replica that does not lead: the refusals are the leader's own).
     */
    public boolean createsRefused(PoolTarget target) {
        return refused.containsKey(target) && leader.getAsBoolean();
    }

    /**
     * Why {@code target}'s pods cannot be created, for its {@code Degraded} condition: the API server refused its
     * last create and none has succeeded since, while it needs pods. Null when that is not so, and on a replica that
     * does not lead (the refusals are the leader's own).
     */
    public String createRefusedCondition(PoolTarget target, Instant now) {
        RefusalPause r = refused.get(target);
        if (r == null || !leader.getAsBoolean()) {
            return null;
        }
        return published(r).condition(io.unboundedcloud.playpen.model.PoolStatus.name(target), config.runnerNamespace(),
                now);
    }

    /**
     * The pools whose creates the API server refuses now, by pool name, as this replica's term as leader holds them:
     * what its Lease writes that go on with that term publish ({@link LeaseRefusals#annotations}). Not gated by
     * {@link #leads}: the write that ends a moment past the renew deadline publishes them, though this replica counts
     * as leading only once it lands.
     */
    public Map<String, LeaseRefusals.Refusal> publishedRefusals() {
        Map<String, LeaseRefusals.Refusal> out = new java.util.TreeMap<>();
        refused.forEach((t, r) -> out.put(io.unboundedcloud.playpen.model.PoolStatus.name(t), published(r)));
        return out;
    }

    private static LeaseRefusals.Refusal published(RefusalPause r) {
        return new LeaseRefusals.Refusal(r.refusals(), r.last().code(), r.last().serverMessage(), r.until());
    }

    /** A 4xx answer other than 409 (AlreadyExists, handled) and 429 (throttling, which the client retries). */
    private static boolean isRefusal(KubernetesClientException e) {
        int code = e.getCode();
        return code >= 400 && code < 500 && code != 409 && code != 429;
    }

    /**
     * A refused or failed create: the pool's creates pause (1 s, doubling per refusal or failure in a row, up to the
     * interval); told.
     */
    private void refusedCreate(PoolTarget target, KubernetesClientException e, Instant now) {
        // capped by the interval, but never below the first pause (unlike a TTL delete's retries)
        Duration max = config.reconcileInterval().compareTo(REFUSAL_FIRST_PAUSE) > 0 ? config.reconcileInterval()
                : REFUSAL_FIRST_PAUSE;
        RefusalPause was = refused.get(target);
        int refusals = was == null ? 1 : was.refusals() + 1;
        Duration pause = new Backoff(REFUSAL_FIRST_PAUSE, max).after(refusals);
        String text = e.getStatus() != null && e.getStatus().getMessage() != null ? e.getStatus().getMessage()
                : e.getCode() <= 0 && e.getMessage() != null ? e.getMessage() : "no message";
        text = text.replaceAll("\\s+", " ").strip();
        if (text.length() > REFUSAL_MESSAGE_MAX) {
            text = text.substring(0, REFUSAL_MESSAGE_MAX) + "...";
        }
        CreateRefusal refusal = new CreateRefusal(target, e.getCode(), text, pause);
        refused.put(target, new RefusalPause(now.plus(pause), refusals, refusal));
        LOG.warn("pool={} outcome=create-refused code={} {}", target.key(), e.getCode(), refusal.message());
        observers.forEach(o -> o.createRefused(refusal));
    }

    /**
     * A planned pod of {@code target} found its range full: one more pod not created in the pool's report of this
     * pass (one per pool and pass, however many of its planned pods met the full range).
     */
    private void exhausted(Pass pass, PoolTarget target) {
        for (int i = 0; i < pass.exhausted.size(); i++) {
            PoolPlan.Exhaustion x = pass.exhausted.get(i);
            if (x.target().equals(target)) {
                pass.exhausted.set(i, new PoolPlan.Exhaustion(target, x.range(), x.unplanned() + 1));
                return;
            }
        }
        pass.exhausted.add(new PoolPlan.Exhaustion(target, HostPortPlanner.forKind(config, target.type()).range(), 1));
    }

    /**
     * Ends a pass: reports a full hostPort range and allocated pods that are unhealthy, records the pass and
     * schedules the next one when a back-off pause ends. Throws what a step failed with.
     */
    public Result finish(Pass pass) {
        if (pass == null) {
            return new Result(0, 0, List.of(), true);
        }
        if (pass.failure == null && pass.deleteFailure != null) {
            pass.failure = pass.deleteFailure; // the creates ran; the pass still fails with the delete's error
        }
        try {
            if (pass.plan != null) {
                // what the plan found holds whatever a later step met: a create refused for one pool (a quota, say,
                // on every pass) must not silence the other pools' reports or their wake-up after a pause
                for (PoolPlan.Exhaustion x : pass.exhausted) {
                    LOG.warn("pool={} outcome=exhausted {}", x.target().key(), x.message());
                    observers.forEach(o -> o.exhausted(x));
                }
                reportUnhealthyAllocated(pass.plan);
                reportBackoffs(pass.plan);
                wakeAfterPause(pass);
            }
            if (pass.failure != null) {
                LOG.warn("pool pass failed: {}", pass.failure.toString());
            }
        } finally {
            Result r = new Result(pass.created, pass.existed, List.copyOf(pass.exhausted), false, pass.deleted);
            long nanos = System.nanoTime() - pass.startNanos;
            boolean failed = pass.failure != null;
            try {
                observers.forEach(o -> o.pass(r, nanos, failed));
            } finally {
                release(pass);
            }
        }
        if (pass.failure != null) {
            throw pass.failure;
        }
        return new Result(pass.created, pass.existed, List.copyOf(pass.exhausted), false, pass.deleted);
    }

    /** Marks {@code pass} finished and releases the pass lock it holds, once. */
    private void release(Pass pass) {
        if (!pass.finished) {
            pass.finished = true;
            if (passLock.isHeldByCurrentThread()) {
                running = null;
                passLock.unlock();
            }
        }
    }

    /**
     * The pool-pass route's last step (its doFinally, so it runs whatever the steps before it did): ends the pass
     * this thread runs as {@link #finish} does (nothing when it runs none: not leading, the cache not synced). A
     * failed pass is not thrown: {@link #finish} has told it (its WARN line, the pass metrics), and the route's
     * exchange failing for it too would have Camel's error handler log it again, at ERROR with a stack trace, on
     * every pass of a steady refusal (a quota).
     */
    public Result end() {
        Pass pass = passLock.isHeldByCurrentThread() ? running : null;
        if (pass == null) {
            return new Result(0, 0, List.of(), true);
        }
        try {
            return finish(pass);
        } catch (RuntimeException e) {
            if (e != pass.failure) {
                throw e;
            }
            return new Result(pass.created, pass.existed, List.copyOf(pass.exhausted), false, pass.deleted);
        }
    }

    private Pass step(Pass pass, Runnable body) {
        if (pass == null || pass.failure != null || pass.finished) {
            return pass;
        }
        try {
            body.run();
        } catch (RuntimeException e) {
            pass.failure = e;
        }
        return pass;
    }

    private void reportUnhealthyAllocated(PoolPlan plan) {
        Set<String> live = new HashSet<>();
        for (PoolPlan.Unhealthy u : plan.unhealthyAllocated()) {
            String key = u.key();
            live.add(key);
            if (reported.add(key)) {
                LOG.warn("pod={}/{} pool={} outcome=unhealthy-allocated reason={}", config.runnerNamespace(),
                        ManagedPods.name(u.pod()), u.target().key(), u.problem().reason());
                observers.forEach(o -> o.unhealthyAllocated(u));
            }
        }
        reported.retainAll(live);
    }

    /**
     * A pool that is pausing creates again when its pause ends, not at the next interval: also one whose pause this
     * pass's own deletes started (its plan was made before them), without waiting for a pass its pods' watch events ask
     * for.
     */
    private void wakeAfterPause(Pass pass) {
        Instant next = null;
        for (var s : pass.plan.statuses().values()) {
            PoolBackoff.View b = pass.deletedUnhealthy.contains(s.target()) ? signals.backoff(s.target()).view()
                    : s.backoff();
            if (b.pausedAt(pass.now) && (next == null || b.nextCreateAt().isBefore(next))) {
                next = b.nextCreateAt();
            }
        }
        for (RefusalPause r : refused.values()) {
            // a refused create leaves no pod event behind to ask for a pass when its pause ends
            if (r.until().isAfter(pass.now) && (next == null || r.until().isBefore(next))) {
                next = r.until();
            }
        }
        if (next != null) {
            Instant scheduled = wakeAt.get();
            if (scheduled != null && !scheduled.isAfter(next)) {
                return; // a wake-up comes by then already: its pass schedules the next one if a pause is still on
            }
            Instant at = next;
            wakeAt.set(at);
            long millis = Math.max(0, Duration.between(clock.instant(), at).toMillis()) + 50;
            try {
                refill.schedule(() -> {
                    wakeAt.compareAndSet(at, null);
                    requestRefill();
                }, millis, TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                wakeAt.compareAndSet(at, null); // closed
            }
        }
    }

    /**
     * Creates one planned pod; on AlreadyExists (another replica, another actor, or a pod the cache has not
     * seen yet holds the port) moves on to the next free port of the range, recording ports in {@code used}.
     *
     * @return whether the pod was created (or was already this pool's), how many AlreadyExists answers came first,
     *         and, when it was not, whether the range ran out (else the pass gave up after that many AlreadyExists in
     *         a row, with free ports left)
     */
    private Attempt create(PoolPlan.PlannedPod planned, Set<Integer> used) {
        HostPortPlanner ports = HostPortPlanner.forKind(config, planned.target().type());
        Pod pod = withCreateId(planned.pod());
        int port = planned.hostPort();
        for (int conflicts = 0; ; conflicts++) {
            String name = pod.getMetadata().getName();
            expected.put(name, nanoTime.getAsLong());
            try {
                calls.count(KubeApiCall.PODS_CREATE);
                Pod made = client.pods().inNamespace(config.runnerNamespace()).resource(pod).create();
                reportCreated(made, planned, port, "created");
                return new Attempt(true, conflicts, false);
            } catch (KubernetesClientException e) {
                if (e.getCode() != 409) {
                    boolean mayLand = ClaimWriter.mayHaveLanded(e);
                    Optional<Pod> landed = mayLand ? readAfterUnknownOutcome(name) : Optional.empty();
                    if (landed != null && landed.isPresent()) {
                        // it landed, its answer lost (the last try's: fabric8 sends a POST again after no answer or
                        // a 5xx): a pod created, as when the retry meets it (AlreadyExists, below)
                        return landedWithoutAnswer(landed.get(), planned, port, conflicts);
                    }
                    if (landed != null) {
                        expected.remove(name);
                        if (mayLand) {
                            // not there yet, but the API server runs a request on after it answered (504) or the
                            // connection broke, and may still commit it: until the expectations lapse its port
                            // is taken, so that no pod of another pool (another name) is created on it meanwhile
                            holdPort(inDoubt, planned.target().type(), port);
                        }
                    }
                    throw e;
                }
                Optional<Pod> pending = pendingPoolPod(name);
                if (pending == null || pending.isPresent()) {
                    // our own earlier create landed though its answer was lost (fabric8 retries a POST whose
                    // connection broke or that was answered 500, and the retry meets the pod the first try wrote):
                    // it is this pool's pod, not a port held by someone else. Moving on would create a second one;
                    // wait for the watch instead. When the read that would tell fails too, the name stays expected
                    // (it exists: AlreadyExists said so) and the watch settles it.
                    if (pending == null) {
                        LOG.info("pod={}/{} pool={} hostPort={} outcome=unknown-kept-expected",
                                config.runnerNamespace(), name, planned.target().key(), port);
                        throw e;
                    }
                    return landedWithoutAnswer(pending.get(), planned, port, conflicts);
                }
                expected.remove(name);
                holdPort(heldElsewhere, planned.target().type(), port);
            }
            used.add(port);
            OptionalInt next = ports.next(used, port);
            if (next.isEmpty() || conflicts >= ALREADY_EXISTS_RETRIES) {
                // ports in doubt (a create that may still land) do not make the range full: they lapse
                boolean full = next.isEmpty()
                        && inDoubt.getOrDefault(planned.target().type(), Map.of()).isEmpty();
                return new Attempt(false, conflicts + 1, full);
            }
            port = next.getAsInt();
            used.add(port);
            pod = withCreateId(planner.podFor(planned.target(), port));
        }
    }

    /** Counts {@code port} of {@code type} used by later plans until the expectations lapse (see heldElsewhere). */
    /** Records {@code port} of {@code type} in {@code held} ({@link #heldElsewhere} or {@link #inDoubt}) as of now. */
    private void holdPort(Map<ResourceType, Map<Integer, Long>> held, ResourceType type, int port) {
        held.computeIfAbsent(type, t -> new ConcurrentHashMap<>()).put(port, nanoTime.getAsLong());
    }

    /** Whether {@code pod} carries this process's create id (it was created by one of this process's creates). */
    private boolean createdHere(Pod pod) {
        Map<String, String> annotations = pod.getMetadata() == null ? null : pod.getMetadata().getAnnotations();
        return annotations != null
                && createId.equals(annotations.get(io.unboundedcloud.playpen.model.PlaypenKeys.CREATE_ID));
    }

    /** {@code pod} (a copy) carrying this process's create id. */
    private Pod withCreateId(Pod pod) {
        return new io.fabric8.kubernetes.api.model.PodBuilder(pod).editMetadata()
                .addToAnnotations(io.unboundedcloud.playpen.model.PlaypenKeys.CREATE_ID, createId).endMetadata().build();
    }

    /**
     * A pod this pass created (or met, its create's answer lost): counted and told to the observers once per pod,
     * whichever of them comes first. Returns false when it had been reported already.
     */
    private boolean reportCreated(Pod pod, PoolPlan.PlannedPod planned, int port, String outcome) {
        String uid = pod.getMetadata() == null ? null : pod.getMetadata().getUid();
        if (uid != null && !reportedCreated.add(uid)) {
            return false;
        }
        String name = ManagedPods.name(pod);
        if (signals != null) {
            signals.created(name);
        }
        LOG.info("created pod={}/{} pool={} hostPort={} outcome={}", config.runnerNamespace(), name,
                planned.target().key(), port, outcome);
        observers.forEach(o -> o.created(pod));
        return true;
    }

    /**
     * The pod behind an AlreadyExists when it is an unclaimed pool pod the cache has not shown yet: a managed pod,
     * not claimed, not terminating. Empty for a claimed, terminating or foreign pod (it really holds the port: move
     * on). Null when the read failed: nobody knows, so nothing may be created in its place.
     */
    private Optional<Pod> pendingPoolPod(String name) {
        try {
            calls.count(KubeApiCall.PODS_GET);
            Pod existing = client.pods().inNamespace(config.runnerNamespace()).withName(name).get();
            return existing != null && ManagedPods.isManaged(existing) && !ManagedPods.isClaimed(existing)
                    && !ManagedPods.isTerminating(existing) ? Optional.of(existing) : Optional.empty();
        } catch (RuntimeException e) {
            return null;
        }
    }

    /**
     * A pod of the planned name whose create this process never saw answered: it is there, so it stays expected until
     * the watch shows it (the next pass must not create it again under another hostPort). One this process created
     * is reported now, as any created pod is (counted, Created Event), unless it was already (the watch lags); one
     * another leader created (two leaders for a moment, neither watch showing the other's pod yet), or a run of this
     * operator before a restart, fills the planned place too, but the one that created it counted and reported it.
     */
    private Attempt landedWithoutAnswer(Pod pod, PoolPlan.PlannedPod planned, int port, int conflicts) {
        String name = ManagedPods.name(pod);
        if (!createdHere(pod)) {
            LOG.info("pod={}/{} pool={} hostPort={} outcome=created-elsewhere", config.runnerNamespace(), name,
                    planned.target().key(), port);
            return new Attempt(true, conflicts, false, false);
        }
        if (reportCreated(pod, planned, port, "created-answer-lost")) {
            return new Attempt(true, conflicts, false);
        }
        LOG.info("pod={}/{} pool={} hostPort={} outcome=already-created", config.runnerNamespace(), name,
                planned.target().key(), port);
        return new Attempt(true, conflicts, false, false);
    }

    /**
     * After an unknown outcome, one read settles it: the pod when it landed, empty when it is not there (it is
     * forgotten). Null when the read fails too: the expectation stays and lapses after its TTL.
     */
    private Optional<Pod> readAfterUnknownOutcome(String name) {
        try {
            calls.count(KubeApiCall.PODS_GET);
            return Optional.ofNullable(client.pods().inNamespace(config.runnerNamespace()).withName(name).get());
        } catch (RuntimeException e) {
            return null;
        }
    }

    /**
     * How long a pass asked for now waits: {@code --refill-debounce}, or longer when the last plan was costly
     * (see {@link #PLAN_CPU_SHARE_DIVISOR}).
     */
    long refillDelayMillis() {
        long budget = TimeUnit.NANOSECONDS.toMillis(lastPlanCpuNanos * (PLAN_CPU_SHARE_DIVISOR - 1));
        return Math.max(debounceMillis, budget);
    }

    /** The CPU time of the calling thread (its wall time where the JVM cannot tell). */
    private static long currentThreadCpuNanos() {
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        long cpu = threads.isCurrentThreadCpuTimeSupported() ? threads.getCurrentThreadCpuTime() : -1;
        return cpu >= 0 ? cpu : System.nanoTime();
    }

    /** Tests: the clock by which a pod created but never seen stops being expected. */
    void timeExpectationsWith(java.util.function.LongSupplier nanos) {
        this.nanoTime = nanos;
    }

    /** Tests: where the plan step's CPU time comes from. */
    void measurePlansWith(java.util.function.LongSupplier cpuNanos) {
        this.threadCpuNanos = cpuNanos;
    }

    /** Asks for a pass soon (debounced): bursts of events coalesce into one pass. */
    public void requestRefill() {
        schedulePass(refillScheduled, refillDelayMillis());
    }

    /**
     * A replica that has just won the Lease runs its first pass now, whatever {@code --refill-debounce} says. The
     * interval timer alone is not enough: Camel drops a timer tick that fires before the timer's consumer counts as
     * started, and the pool-reconcile route is started at the moment it would fire its first tick (delay 0); a lost
     * first tick would leave the pools unfilled for a whole {@code --reconcile-interval}. When that tick does run too,
     * the second pass waits for the first (passes never overlap) and finds the pods it created expected.
     */
    public void onLeadership() {
        inTerm = true;
        forgetTerm();
        schedulePromptPass();
    }

    /** This replica stopped leading: its term has ended (what it kept for that term is not told). */
    public void onLeadershipLost() {
        inTerm = false;
        heldBackoffs.clear();
    }

    /**
     * Forgets what is the leader's own and holds for one term only: a refusal pause (a replica that leads again
     * tries at once) and the allocated pods reported unhealthy (a replica that leads again reports those still
     * unhealthy again: their Events carry names of their own, so one still there is not recorded twice, and one the
     * API server has deleted since is recorded again), and the BackOff told of each pool still backing off (the same:
     * a later term tells it again under its name). The pods reported created are not forgotten: a pod is created
     * once, and a later term that meets one an earlier term created does not tell it as created again.
     * <p>
     * Only when a term begins ({@link #onLeadership}), not whenever a pass finds this replica not counting as leading:
     * a leader past its renew deadline whose next Lease write lands before the look that would step it back leads on
     * in the same term, and forgetting then would end a refusal pause early (the next create sent at once, its pause
     * back to 1 s) and take the refusal off the pool's condition and the Lease until the next create is refused. A
     * pool's condition shows what a term holds only while this replica counts as leading ({@link #createsRefused},
     * {@link #createRefusedCondition}); the Lease shows it on each write that goes on with the term
     * ({@link #publishedRefusals}, not gated: the Lease write decides, also the one that ends a moment past the renew
     * deadline).
     */
    private void forgetTerm() {
        refused.clear();
        reported.clear();
        reportedBackoffs.clear();
        heldBackoffs.clear();
        passDropped.set(false); // the new term's first pass is scheduled
    }

    /**
     * This replica counts as leading again within its term (LeaderElection.Listener#onLeadingAgain): a leader past
     * its renew deadline does not count as leading until its next Lease write lands, and when that lands before the
     * look that would step it back, no change of leadership is told (nor a new leader's pass scheduled,
     * {@link #onLeadership}). A pass dropped in that moment runs now: dropped, a refill asked for by a claim, or by
     * an alloc turned away, would wait for the interval timer or the next pod change, the pool short meanwhile. The
     * back-off changes kept meanwhile are told, off the caller's thread.
     */
    public void onLeadingAgain() {
        if (passDropped.getAndSet(false)) {
            schedulePromptPass();
        }
        if (!heldBackoffs.isEmpty()) {
            try {
                refill.execute(() -> {
                    if (leader.getAsBoolean()) {
                        tellHeldBackoffs();
                    }
                });
            } catch (java.util.concurrent.RejectedExecutionException e) {
                // closed
            }
        }
    }

    /** A pass not started, or stopped before its writes, on a replica that does not count as leading. */
    private void droppedWhileNotLeading() {
        passDropped.set(true);
        if (leader.getAsBoolean()) {
            onLeadingAgain(); // it counted as leading again before the pass was marked: told so already
        }
    }

    /** A new leader's first pass: in {@link #SYNC_RECHECK_MILLIS}, or after the refill wait if that is shorter. */
    private void schedulePromptPass() {
        schedulePass(promptPassScheduled, Math.min(SYNC_RECHECK_MILLIS, refillDelayMillis()));
    }

    /** One pass in {@code delayMillis}, unless one is already scheduled under {@code scheduled}. */
    private void schedulePass(AtomicBoolean scheduled, long delayMillis) {
        if (scheduled.compareAndSet(false, true)) {
            try {
                refill.schedule(() -> {
                    scheduled.set(false);
                    try {
                        passRunner.run();
                    } catch (RuntimeException e) {
                        LOG.debug("refill pass failed: {}", e.toString());
                    }
                }, delayMillis, TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                scheduled.set(false);
            }
        }
    }

    @Override
    public void onPodEvent(PodCache.Change change, Pod pod) {
        String name = ManagedPods.name(pod);
        if (change == PodCache.Change.DELETED) {
            tally.remove(name);
        } else {
            // the tally first, then the expectations (see plan)
            tally.put(pod);
            expected.remove(name);
        }
        if (change == PodCache.Change.DELETED || !ManagedPods.isManaged(pod)) {
            // a pod of the pools that is gone, or relabeled out of the operator's pods, leaves its pool one short
            Integer was = lastState.remove(name);
            if (was != null) {
                requestRefill();
            }
            return;
        }
        // what the pools act on: a pod that stops being idle (claimed, terminating) lowers the idle count, one that
        // becomes ready may retire a stale pod or end a back-off, one that ended is replaced. Other updates (say,
        // annotations of a claimed pod) need no pass.
        int state = state(pod);
        Integer was = lastState.put(name, state);
        if (was != null && was != state) {
            requestRefill();
        }
    }

    /** The facts about a pod whose change the pools act on, as bits: idle, ready, ended (Failed or Succeeded). */
    static int state(Pod pod) {
        String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
        boolean ended = "Failed".equals(phase) || "Succeeded".equals(phase);
        return (ManagedPods.isIdle(pod) ? 1 : 0) | (PoolHealth.ready(pod) ? 2 : 0) | (ended ? 4 : 0);
    }

    private void forgetStaleExpectations(long now) {
        expected.entrySet().removeIf(e -> now - e.getValue() > EXPECTATION_TTL_NANOS);
        heldElsewhere.values()
                .forEach(ports -> ports.entrySet().removeIf(e -> now - e.getValue() > EXPECTATION_TTL_NANOS));
        inDoubt.values()
                .forEach(ports -> ports.entrySet().removeIf(e -> now - e.getValue() > EXPECTATION_TTL_NANOS));
    }

    /** The ports held elsewhere now, for a plan: it treats them as used, so it neither plans nor counts them free. */
    private Map<ResourceType, Set<Integer>> heldElsewhereNow() {
        return portsNow(heldElsewhere);
    }

    private static Map<ResourceType, Set<Integer>> portsNow(Map<ResourceType, Map<Integer, Long>> held) {
        Map<ResourceType, Set<Integer>> now = new EnumMap<>(ResourceType.class);
        held.forEach((type, ports) -> now.put(type, Set.copyOf(ports.keySet())));
        return now;
    }

    /** Tests: the timers waiting to run (passes asked for, wake-ups after a pause). */
    int scheduledTasks() {
        return refill.getQueue().size();
    }

    public long passes() {
        return passes.sum();
    }

    /** The CPU time all plans of this replica took so far, in nanoseconds. */
    public long planCpuNanos() {
        return planCpuNanos.sum();
    }

    @Override
    public void close() {
        refill.shutdownNow();
    }
}
