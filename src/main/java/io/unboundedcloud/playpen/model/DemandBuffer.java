package io.unboundedcloud.playpen.model;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * The demand-aware buffer of one pool (--pool-max-idle): how many idle pods cover the allocations that arrive while a
 * new pod starts, i.e. recent allocation rate x time-to-ready, rounded up and kept between the count flag (the
 * minimum) and the maximum. The rate is the highest of the last 2, 10 and 60 seconds (quick to rise on a step,
 * slow to fall, so the buffer does not flap); the time-to-ready is the slowest of the pool's last five pods, from
 * the create to ready. Without a measured time-to-ready the pool keeps its minimum, or one pod for a pool whose minimum
 * is 0 while allocations ask for it (that pod's time-to-ready is the first). Thread-safe.
 */
public final class DemandBuffer {
    static final Duration[] WINDOWS = {Duration.ofSeconds(2), Duration.ofSeconds(10), Duration.ofSeconds(60)};
    static final int SAMPLES = 5;
    private static final int MAX_CLAIMS = 100_000;

    private final Deque<Instant> claims = new ArrayDeque<>();
    private final Deque<Duration> readyTimes = new ArrayDeque<>();

    /** A pod of the pool was claimed at {@code at}. */
    public synchronized void claimed(Instant at) {
        claims.addLast(at);
        while (claims.size() > MAX_CLAIMS) {
            claims.removeFirst();
        }
    }

    /** A pod of the pool became ready {@code after} its create. */
    public synchronized void readyAfter(Duration after) {
        if (after.isNegative()) {
            return;
        }
        readyTimes.addLast(after);
        while (readyTimes.size() > SAMPLES) {
            readyTimes.removeFirst();
        }
    }

    /** Allocations per second: the highest rate of the windows, at {@code now}. */
    public synchronized double rate(Instant now) {
        Instant oldest = now.minus(WINDOWS[WINDOWS.length - 1]);
        while (!claims.isEmpty() && claims.peekFirst().isBefore(oldest)) {
            claims.removeFirst();
        }
        double best = 0;
        for (Duration w : WINDOWS) {
            Instant from = now.minus(w);
            long n = claims.stream().filter(t -> t.isAfter(from) && !t.isAfter(now)).count();
            best = Math.max(best, n / (w.toMillis() / 1000.0));
        }
        return best;
    }

    /** The slowest recent time-to-ready, or null when no pod of the pool was seen becoming ready yet. */
    public synchronized Duration timeToReady() {
        return readyTimes.stream().max(Duration::compareTo).orElse(null);
    }

    /** The desired idle count at {@code now}: ceil(rate x (time-to-ready + reaction)) within [min, max]. */
    public int desired(Instant now, int min, int max, Duration reaction) {
        return desired(rate(now), timeToReady(), min, max, reaction);
    }

    /** The rule itself, for the documentation's table and the tests. */
    public static int desired(double rate, Duration timeToReady, int min, int max, Duration reaction) {
        if (max <= min) {
            return min;
        }
        if (timeToReady == null) {
            // only the pool's own pods tell its time-to-ready: a pool whose count is 0 makes one while allocations
            // ask for it, or it would never learn it and never grow
            return min == 0 && rate > 0 ? 1 : min;
        }
        double seconds = (timeToReady.toMillis() + reaction.toMillis()) / 1000.0;
        long want = (long) Math.ceil(rate * seconds - 1e-9);
        return (int) Math.max(min, Math.min(max, want));
    }
}
