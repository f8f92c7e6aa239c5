package io.unboundedcloud.playpen.kube;

import java.time.Clock;
import java.time.Instant;
import java.util.Map;
import java.util.Set;

import io.unboundedcloud.playpen.model.PoolStatus;
import io.unboundedcloud.playpen.model.PoolTarget;

/**
 * Every pool as this replica sees it now (the pools resource, the metrics): the plan of a pass over the cache;
 * for the metrics computed at most once a second however often a scrape reads it. Any replica answers it, the leader or not: the cache,
 * the nodes and the signals are the same everywhere.
 */
public final class PoolStatuses {
    private static final long MAX_AGE_NANOS = 1_000_000_000L;

    private final PodCache pods;
    private final PoolReconciler reconciler;
    private final Clock clock;
    private final LeaseRefusals leaseRefusals;
    private volatile Snapshot last;
    private final java.util.concurrent.atomic.LongAdder plans = new java.util.concurrent.atomic.LongAdder();

    /** {@code changes}: the pod cache's change count the plan began at. */
    private record Snapshot(long atNanos, long changes, Map<PoolTarget, PoolStatus> statuses) {
    }

    public PoolStatuses(PodCache pods, PoolReconciler reconciler, Clock clock) {
        this(pods, reconciler, clock, null);
    }

    /** {@code leaseRefusals}: where a replica that does not lead reads the leader's refused creates (null: nowhere). */
    public PoolStatuses(PodCache pods, PoolReconciler reconciler, Clock clock, LeaseRefusals leaseRefusals) {
        this.pods = pods;
        this.reconciler = reconciler;
        this.clock = clock;
        this.leaseRefusals = leaseRefusals;
    }

    /**
     * Configured pools first (flag order), then pools that are draining; at most a second old (the metrics read it
     * once per gauge of a scrape).
     */
    public Map<PoolTarget, PoolStatus> current() {
        Snapshot s = last;
        long now = System.nanoTime();
        if (s != null && now - s.atNanos() < MAX_AGE_NANOS) {
            return s.statuses();
        }
        return fresh();
    }

    /**
     * The pools as the cache shows them this moment (the pools resource: a read after an alloc shows it). A plan
     * walks every pod of the cache, so reads while no pod changed share the last one for up to a second (the
     * nodes, the back-off and the time judged by are that current).
     */
    public Map<PoolTarget, PoolStatus> fresh() {
        long now = System.nanoTime();
        // read before the pods: a plan kept under this count shows every change up to it (see PodCache.changes)
        long changes = pods.changes();
        Snapshot s = last;
        if (s != null && s.changes() == changes && now - s.atNanos() < MAX_AGE_NANOS) {
            return s.statuses();
        }
        Instant at = clock.instant();
        plans.increment();
        Map<PoolTarget, PoolStatus> statuses = reconciler.planner().plan(pods.pods(), Set.of(), reconciler.context(at))
                .statuses();
        last = new Snapshot(now, changes, statuses);
        return statuses;
    }

    /**
     * For one read of the pools, the message of each pool's {@code Degraded} condition {@code CreateRefused} (null:
     * its creates are not refused): the leader's own refusals on the leader; on a replica that does not lead, what the
     * leader publishes on its Lease, read now (one GET per read: {@link LeaseRefusals}).
     */
    public java.util.function.Function<PoolTarget, String> createRefusals() {
        Instant now = clock.instant();
        if (leaseRefusals == null || reconciler.leads()) {
            return t -> reconciler.createRefusedCondition(t, now);
        }
        LeaseRefusals.Published published = leaseRefusals.read(now);
        return t -> leaseRefusals.condition(published, io.unboundedcloud.playpen.model.PoolStatus.name(t), now);
    }

    /** How many times the pools were planned for a read (each plan walks every pod of the cache). */
    public long plans() {
        return plans.sum();
    }

    /** Whether the pod cache can answer (readiness of the pools resource). */
    public boolean synced() {
        return pods.hasSynced();
    }
}
