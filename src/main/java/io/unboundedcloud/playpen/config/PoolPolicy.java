package io.unboundedcloud.playpen.config;

import java.time.Duration;

/**
 * How the pools heal, roll, back off and size themselves (the {@code --pool-*} flags).
 *
 * @param readyTimeout        an idle pod not Ready this long after it was created (or last became unready) is
 *                            replaced; zero disables the check
 * @param nodeNotReadyGrace   an idle pod on a node that has been NotReady this long is replaced
 * @param maxSurge            pods a rollout may create beyond the desired count: a number, or a percentage of the
 *                            desired count rounded up ("25%"); 0 turns rolling replacement off
 * @param backoffBase         the first pause after a replacement failed; doubled per further failure
 * @param backoffMax          the longest pause
 * @param maxIdle             the demand-aware buffer's upper bound per pool; 0 keeps the count flags fixed
 */
public record PoolPolicy(Duration readyTimeout, Duration nodeNotReadyGrace, String maxSurge, Duration backoffBase,
        Duration backoffMax, int maxIdle) {

    public static final PoolPolicy DEFAULTS = new PoolPolicy(Duration.ofMinutes(10), Duration.ofMinutes(2), "25%",
            Duration.ofSeconds(10), Duration.ofMinutes(5), 0);

    /** Whether {@code s} is a valid --pool-max-surge value: a non-negative integer or a percentage 0-1000%. */
    public static boolean validSurge(String s) {
        return s != null && s.trim().matches("\\d{1,6}%?") && (!s.trim().endsWith("%")
                || Integer.parseInt(s.trim().substring(0, s.trim().length() - 1)) <= 1000);
    }

    /** The surge for a pool of {@code desired} pods: the number, or the percentage of it rounded up (Deployment style). */
    public int surge(int desired) {
        String s = maxSurge.trim();
        if (s.endsWith("%")) {
            long percent = Long.parseLong(s.substring(0, s.length() - 1));
            return (int) ((percent * Math.max(0, desired) + 99) / 100);
        }
        return Integer.parseInt(s);
    }

    /** Whether the demand-aware buffer is on. */
    public boolean demandBuffer() {
        return maxIdle > 0;
    }
}
