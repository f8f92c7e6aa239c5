package io.unboundedcloud.playpen.model;

import java.time.Duration;
import java.time.Instant;

/**
 * One pool's back-off: each replacement that fails (deleted as unhealthy, its node not lost, without ever having been ready,
 * or crash-looping after it was) doubles
 * the pause before the pool creates again, from {@code base} up to {@code max}; a pod of the pool's current
 * template that becomes ready (a new one, or one ready again after it was not) ends it. While a pool is backing off it creates nothing; once the pause is over it
 * creates one pod at a time until one becomes ready, so a broken image or a node that rejects every pod costs a bounded number of
 * creates per minute instead of a hot loop. A pool that needs no new pod, every idle pod it keeps ready, shows no
 * back-off ({@link PoolPlanner}); its failures are kept until a pod becomes ready. Thread-safe.
 */
public final class PoolBackoff {
    private final Backoff pause;
    private int failures;
    private Instant lastFailure;

    public PoolBackoff(Duration base, Duration max) {
        this.pause = new Backoff(base, max);
    }

    /** What a pass, the API and the metrics read. {@code nextCreateAt} is null when the pool is not backing off. */
    public record View(int failures, Duration delay, Instant nextCreateAt) {
        public static final View NONE = new View(0, Duration.ZERO, null);

        /** Failing replacements: the pool creates one pod at a time. */
        public boolean backingOff() {
            return failures > 0;
        }

        /** Whether the pause is still running at {@code now}. */
        public boolean pausedAt(Instant now) {
            return nextCreateAt != null && now != null && now.isBefore(nextCreateAt);
        }

        /** Seconds left of the pause at {@code now} (0 when none). */
        public long remainingSeconds(Instant now) {
            return pausedAt(now) ? Math.max(1, Duration.between(now, nextCreateAt).toSeconds()) : 0;
        }
    }

    /** A replacement failed at {@code at}; returns the view after it. The pause runs from the latest failure. */
    public synchronized View failed(Instant at) {
        failures++;
        if (lastFailure == null || at.isAfter(lastFailure)) {
            lastFailure = at;
        }
        return view();
    }

    /**
     * A replacement failed at {@code at} after a ready of it had ended a back-off of {@code ended} failures: the
     * back-off goes on from there (that ready proved nothing), so a template whose pods get ready and then crash-loop
     * doubles the pause as one whose pods never get ready does.
     */
    public synchronized View failedAfter(int ended, Instant at) {
        failures = Math.max(failures, ended);
        return failed(at);
    }

    /** A pod of the pool became ready: the back-off ends. Returns whether there was one. */
    public synchronized boolean succeeded() {
        return ended() > 0;
    }

    /** A pod of the pool became ready: the back-off ends. Returns how many failures it had (0: none). */
    public synchronized int ended() {
        int was = failures;
        failures = 0;
        lastFailure = null;
        return was;
    }

    public synchronized View view() {
        if (failures == 0) {
            return View.NONE;
        }
        Duration delay = pause.after(failures);
        return new View(failures, delay, lastFailure.plus(delay));
    }
}
