package io.unboundedcloud.playpen.model;

import java.time.Duration;
import java.util.Objects;

/**
 * A pause that starts at {@code first} and doubles with each failure in a row, never above {@code max} (a
 * {@code max} below {@code first} caps the first pause too). Who counts the failures, and what resets them, is the
 * user's: a pool's failed replacements ({@link PoolBackoff}), refused pod creates, failed deletes of an expired claim.
 */
public record Backoff(Duration first, Duration max) {
    public Backoff {
        Objects.requireNonNull(first, "first");
        Objects.requireNonNull(max, "max");
    }

    /** The pause after {@code failures} failures in a row: first x 2^(failures-1), at most max; zero for none. */
    public Duration after(int failures) {
        if (failures <= 0) {
            return Duration.ZERO;
        }
        Duration d = first;
        for (int i = 1; i < failures && d.compareTo(max) < 0; i++) {
            d = d.multipliedBy(2);
        }
        return d.compareTo(max) > 0 ? max : d;
    }
}
