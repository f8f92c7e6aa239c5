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
    private volatile Snapshot last;

    private record Snapshot(long atNanos, Map<PoolTarget, PoolStatus> statuses) {
    }

    public PoolStatuses(PodCache pods, PoolReconciler reconciler, Clock clock) {
        this.pods = pods;
        this.reconciler = reconciler;
        this.clock = clock;
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

    /** The pools as the cache shows them this moment (the pools resource: a read after an alloc shows it). */
    public Map<PoolTarget, PoolStatus> fresh() {
        long now = System.nanoTime();
        Instant at = clock.instant();
        Map<PoolTarget, PoolStatus> statuses = reconciler.planner().plan(pods.pods(), Set.of(), reconciler.context(at))
                .statuses();
        last = new Snapshot(now, statuses);
        return statuses;
    }

    /** Whether the pod cache can answer (readiness of the pools resource). */
    public boolean synced() {
        return pods.hasSynced();
    }
}
