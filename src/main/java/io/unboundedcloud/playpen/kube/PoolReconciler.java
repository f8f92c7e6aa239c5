package io.unboundedcloud.playpen.kube;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.HostPortPlanner;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.model.PoolPlan;
import io.unboundedcloud.playpen.model.PoolPlanner;
import io.unboundedcloud.playpen.model.PoolTally;
import io.unboundedcloud.playpen.model.ResourceType;

/**
 * Keeps the pools full (SPEC A8, B6): plans from the watch cache with {@link PoolPlanner} and creates the
 * missing pods. Runs on the interval (pool-reconcile route) and, debounced, right after a claim or deletion.
 * Pods created but not yet seen by the watch are "expected" so a quick second pass never creates twice.
 */
public final class PoolReconciler implements PodCache.Listener, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PoolReconciler.class);
    private static final long EXPECTATION_TTL_NANOS = TimeUnit.SECONDS.toNanos(60);
    private static final int ALREADY_EXISTS_RETRIES = 16;

    /** What one pass did. */
    public record Result(int created, int alreadyExisted, List<PoolPlan.Exhaustion> exhausted, boolean skipped) {
    }

    private record Attempt(boolean created, int alreadyExisted) {
    }

    /** Told about pool outcomes (metrics, events). */
    public interface Observer {
        void created(Pod pod);

        void exhausted(PoolPlan.Exhaustion exhaustion);

        void pass(Result result, long nanos, boolean failed);
    }

    private final KubernetesClient client;
    private final OperatorConfig config;
    private final PodCache pods;
    private final PoolPlanner planner;
    private final PodTemplates templates;
    private final BooleanSupplier leader;
    private final ApiCallCounter calls;
    private final long debounceMillis;
    private final Map<String, Long> expected = new ConcurrentHashMap<>();
    /**
     * The pods as the watch reports them, counted for the pool (idle per pool, host ports held): a pass plans from
     * it in time independent of the number of pods. It also knows whether each pod was idle: refills are triggered
     * by transitions only.
     */
    private final PoolTally tally;
    private final ScheduledExecutorService refill = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("pool-refill"));
    private final AtomicBoolean refillScheduled = new AtomicBoolean();
    private final LongAdder passes = new LongAdder();
    private final java.util.List<Observer> observers = new java.util.concurrent.CopyOnWriteArrayList<>();

    public PoolReconciler(KubernetesClient client, OperatorConfig config, PodCache pods, PodTemplates templates,
            BooleanSupplier leader, ApiCallCounter calls) {
        this.client = client;
        this.config = config;
        this.pods = pods;
        this.templates = templates;
        this.planner = new PoolPlanner(config, templates);
        this.tally = planner.newTally();
        // it learns of pods from the cache's events (it must be one of its listeners, added before the cache
        // starts); pods the cache holds already when it is made are counted now
        for (Pod pod : pods.pods()) {
            tally.put(pod);
        }
        this.leader = leader;
        this.calls = calls;
        this.debounceMillis = Math.max(0, config.refillDebounce().toMillis());
    }

    public void addObserver(Observer observer) {
        observers.add(observer);
    }

    /** One pass: plan from the cache, create what is missing. Passes never overlap. */
    public synchronized Result reconcile() {
        if (!leader.getAsBoolean()) {
            return new Result(0, 0, List.of(), true);
        }
        if (!pods.hasSynced()) {
            requestRefill();
            return new Result(0, 0, List.of(), true);
        }
        long start = System.nanoTime();
        passes.increment();
        forgetStaleExpectations(start);
        // expectations first, then the tally: a pod whose watch event lands in between leaves the expectations
        // only after the tally has it, so it is in one of the two; the other order could miss it and create twice
        Set<String> expectedNow = Set.copyOf(expected.keySet());
        PoolPlan plan = planner.plan(tally, expectedNow);
        Map<ResourceType, Set<Integer>> used = new EnumMap<>(ResourceType.class);
        List<PoolPlan.Exhaustion> exhausted = new ArrayList<>(plan.exhausted());
        int created = 0;
        int existed = 0;
        boolean failed = true;
        try {
            for (PoolPlan.PlannedPod planned : plan.toCreate()) {
                Attempt a = create(planned, used.computeIfAbsent(planned.target().type(), plan::portsInUse));
                existed += a.alreadyExisted();
                if (a.created()) {
                    created++;
                } else {
                    exhausted.add(new PoolPlan.Exhaustion(planned.target(),
                            HostPortPlanner.forKind(config, planned.target().type()).range(), 1));
                }
            }
            for (PoolPlan.Exhaustion x : exhausted) {
                LOG.warn("pool={} outcome=exhausted {}", x.target().key(), x.message());
                observers.forEach(o -> o.exhausted(x));
            }
            failed = false;
        } catch (RuntimeException e) {
            LOG.warn("pool pass failed: {}", e.toString());
            throw e;
        } finally {
            Result r = new Result(created, existed, exhausted, false);
            long nanos = System.nanoTime() - start;
            boolean f = failed;
            observers.forEach(o -> o.pass(r, nanos, f));
        }
        return new Result(created, existed, exhausted, false);
    }

    /**
     * Creates one planned pod; on AlreadyExists (another replica, another actor, or a pod the cache has not
     * seen yet holds the port) moves on to the next free port of the range, recording ports in {@code used}.
     *
     * @return whether the pod was created (false: the range ran out) and how many AlreadyExists answers came first
     */
    private Attempt create(PoolPlan.PlannedPod planned, Set<Integer> used) {
        HostPortPlanner ports = HostPortPlanner.forKind(config, planned.target().type());
        Pod pod = planned.pod();
        int port = planned.hostPort();
        for (int conflicts = 0; ; conflicts++) {
            String name = pod.getMetadata().getName();
            expected.put(name, System.nanoTime());
            try {
                calls.count(KubeApiCall.PODS_CREATE);
                Pod made = client.pods().inNamespace(config.runnerNamespace()).resource(pod).create();
                LOG.info("created pod={}/{} pool={} hostPort={} outcome=created", config.runnerNamespace(), name,
                        planned.target().key(), port);
                observers.forEach(o -> o.created(made));
                return new Attempt(true, conflicts);
            } catch (KubernetesClientException e) {
                if (e.getCode() != 409) {
                    if (!mayHaveLanded(e) || !existsAfterUnknownOutcome(name)) {
                        expected.remove(name);
                    }
                    throw e;
                }
                if (isPendingPoolPod(name)) {
                    // our own earlier create landed though its answer was lost (fabric8 retries a POST answered
                    // 500, and the retry meets the pod the first try wrote): it is this pool's pod, not a port
                    // held by someone else. Moving on would create a second one; wait for the watch instead.
                    LOG.info("pod={}/{} pool={} hostPort={} outcome=already-created", config.runnerNamespace(), name,
                            planned.target().key(), port);
                    return new Attempt(true, conflicts);
                }
                expected.remove(name);
            }
            used.add(port);
            OptionalInt next = ports.next(used, port);
            if (next.isEmpty() || conflicts >= ALREADY_EXISTS_RETRIES) {
                return new Attempt(false, conflicts + 1);
            }
            port = next.getAsInt();
            used.add(port);
            pod = templates.forTarget(planned.target(), port);
        }
    }


    /**
     * Whether the pod behind an AlreadyExists is an unclaimed pool pod the cache has not shown yet: a managed pod,
     * not claimed, not terminating. A claimed, terminating or foreign pod really holds the port: move on.
     */
    private boolean isPendingPoolPod(String name) {
        try {
            calls.count(KubeApiCall.PODS_GET);
            Pod existing = client.pods().inNamespace(config.runnerNamespace()).withName(name).get();
            return existing != null && ManagedPods.isManaged(existing) && !ManagedPods.isClaimed(existing)
                    && !ManagedPods.isTerminating(existing);
        } catch (RuntimeException e) {
            return false;
        }
    }

    /**
     * A create that failed without a clear refusal (connection reset, timeout, 500/504) may have landed: the
     * API server wrote the pod and the answer was lost. 4xx answers and 429/503 (API Priority and Fairness,
     * overload) are refusals before the write.
     */
    private static boolean mayHaveLanded(KubernetesClientException e) {
        int code = e.getCode();
        return code <= 0 || code == 500 || code == 504;
    }

    /**
     * After an unknown outcome, one read settles it: a pod that exists stays expected until the watch shows it
     * (the next pass must not create it again under another hostPort), one that does not is forgotten. When the
     * read fails too, the expectation stays and lapses after its TTL.
     */
    private boolean existsAfterUnknownOutcome(String name) {
        try {
            calls.count(KubeApiCall.PODS_GET);
            return client.pods().inNamespace(config.runnerNamespace()).withName(name).get() != null;
        } catch (RuntimeException e) {
            return true;
        }
    }

    /** Asks for a pass soon (debounced): bursts of events coalesce into one pass. */
    public void requestRefill() {
        if (refillScheduled.compareAndSet(false, true)) {
            refill.schedule(() -> {
                refillScheduled.set(false);
                try {
                    reconcile();
                } catch (RuntimeException e) {
                    LOG.debug("refill pass failed: {}", e.toString());
                }
            }, debounceMillis, TimeUnit.MILLISECONDS);
        }
    }

    @Override
    public void onPodEvent(PodCache.Change change, Pod pod) {
        String name = ManagedPods.name(pod);
        if (change == PodCache.Change.DELETED) {
            Boolean was = tally.remove(name);
            if (was != null && ManagedPods.isManaged(pod)) {
                requestRefill();
            }
            return;
        }
        // the tally first, then the expectations (see reconcile)
        Boolean was = tally.put(pod);
        expected.remove(name);
        // a pod that stops being idle (claimed, terminating) lowers the idle count: refill now rather than at
        // the next interval. Other updates (status changes of claimed pods, say) need no pass.
        if (was != null && was && !ManagedPods.isIdle(pod)) {
            requestRefill();
        }
    }

    private void forgetStaleExpectations(long now) {
        expected.entrySet().removeIf(e -> now - e.getValue() > EXPECTATION_TTL_NANOS);
    }

    public long passes() {
        return passes.sum();
    }

    @Override
    public void close() {
        refill.shutdownNow();
    }
}
