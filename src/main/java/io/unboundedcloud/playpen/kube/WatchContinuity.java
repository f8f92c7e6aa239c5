package io.unboundedcloud.playpen.kube;

import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * Whether the watches count as connected for readiness. fabric8's informers end every watch themselves after
 * 5 to 10 minutes and open the next one at once (client-go does the same); between the two the informer reports
 * "not watching" for as long as the new watch takes to open, about a second on a loaded machine. Reporting that
 * gap as "not ready" made a replica drop out of its Service (and out of the dev playground's stand-in) every few
 * minutes although its cache was intact. So a gap counts only once it has lasted {@link #GRACE}: an API server
 * that stays unreachable still makes the replica not ready, ten seconds later.
 */
public final class WatchContinuity {
    /** How long the watches may be reopening before the replica reports not ready. */
    public static final Duration GRACE = Duration.ofSeconds(10);

    private final LongSupplier nanoTime;
    private final long graceNanos;
    /** Whether the watches have been seen not connected since they last were. */
    private boolean lost;
    /**
     * When that was first seen (a {@link System#nanoTime} reading: any long, negative ones included, so whether
     * there is a gap is kept apart).
     */
    private long lostAt;

    public WatchContinuity() {
        this(System::nanoTime, GRACE);
    }

    public WatchContinuity(LongSupplier nanoTime, Duration grace) {
        this.nanoTime = nanoTime;
        this.graceNanos = grace.toNanos();
    }

    /**
     * Given whether every watch is connected now: true while they are, and during a gap shorter than the grace
     * (measured from the first call that saw it).
     */
    public synchronized boolean connected(boolean watchingNow) {
        if (watchingNow) {
            lost = false;
            return true;
        }
        long now = nanoTime.getAsLong();
        if (!lost) {
            lost = true;
            lostAt = now;
        }
        return now - lostAt < graceNanos;
    }
}
