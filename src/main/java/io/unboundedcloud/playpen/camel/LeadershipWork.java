package io.unboundedcloud.playpen.camel;

import io.unboundedcloud.playpen.kube.DaemonThreads;
import io.unboundedcloud.playpen.kube.LeaderElection;

/**
 * What the background work does as this replica's leadership changes ({@link LeaderElection.Listener}): a new leader
 * schedules its claims' expiries, runs a pool pass and publishes the caBundle; a leader that stops leading ends its
 * pools' term; a leader that counts as leading again within its term runs what it dropped meanwhile.
 */
final class LeadershipWork implements LeaderElection.Listener {
    /** The claims' expiry timers (TtlExpirer). */
    record Expiries(Runnable scheduleAll, Runnable onLeadingAgain) {
    }

    /** The pools (PoolReconciler). */
    record Pools(Runnable onLeadership, Runnable onLeadershipLost, Runnable onLeadingAgain) {
    }

    private final Expiries ttl;
    private final Pools pool;
    private final Runnable publishCaBundle;

    /** {@code publishCaBundle}: run on a thread of its own, off the election's. */
    LeadershipWork(Expiries ttl, Pools pool, Runnable publishCaBundle) {
        this.ttl = ttl;
        this.pool = pool;
        this.publishCaBundle = publishCaBundle;
    }

    @Override
    public void leadershipChanged(boolean isLeader) {
        if (isLeader) {
            // the leader routes' timers cannot be relied on for the first run: Camel drops a tick that fires before
            // its consumer counts as started, and the route policy starts them just as their first tick (delay 0)
            // fires. So a new leader schedules its claims' expiries, runs a pool pass (see
            // PoolReconciler.onLeadership) and publishes the caBundle (a lost tick once left the aggregated API
            // answering 503 for a whole --reconcile-interval) itself; the routes repeat them
            ttl.scheduleAll().run();
            pool.onLeadership().run();
            DaemonThreads.named("ca-bundle-on-leadership").newThread(publishCaBundle).start();
        } else {
            pool.onLeadershipLost().run();
        }
    }

    @Override
    public void onLeadingAgain() {
        // past its renew deadline, this leader dropped what it may not write; its term goes on, and what it dropped
        // runs now: expired claims' deletes and a pool pass
        ttl.onLeadingAgain().run();
        pool.onLeadingAgain().run();
    }
}
