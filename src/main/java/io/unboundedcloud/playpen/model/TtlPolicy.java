package io.unboundedcloud.playpen.model;

import io.fabric8.kubernetes.api.model.Pod;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Decides when a claimed pod's allocation expires (SPEC A8): at claimed-at + ttl, inclusive. A claimed pod whose
 * claimed-at is missing or unparsable is already expired. A zero ttl disables expiry.
 */
public final class TtlPolicy {
    /** RFC 3339 as Go's time.RFC3339 parser accepts it: seconds required, optional fraction, Z or ±hh:mm. */
    private static final Pattern RFC3339 =
            Pattern.compile("\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2})");

    /**
     * What {@link #expiresAt} answers for a claimed pod without a usable claimed-at: a fixed instant long past,
     * so it sorts first and a scheduler computing "delay until expiry" gets a negative delay without overflow.
     */
    public static final Instant ALREADY_EXPIRED = Instant.EPOCH;

    private final Duration ttl;

    /** Judges at instants the caller reads from its clock once per decision (never twice: see TtlExpirer). */
    public TtlPolicy(Duration ttl) {
        this.ttl = Objects.requireNonNull(ttl, "ttl");
        if (ttl.isNegative()) {
            throw new IllegalArgumentException("ttl must not be negative");
        }
    }

    /** False when the ttl is zero: nothing ever expires. */
    public boolean enabled() {
        return !ttl.isZero();
    }

    /**
     * When the pod's allocation expires: empty when expiry is disabled or the pod is not a claimed managed pod;
     * {@link #ALREADY_EXPIRED} when its claimed-at annotation is missing or not RFC 3339.
     */
    public Optional<Instant> expiresAt(Pod pod) {
        if (!enabled() || !ManagedPods.isManaged(pod) || !ManagedPods.isClaimed(pod)) {
            return Optional.empty();
        }
        return Optional.of(claimedAt(pod).map(at -> at.plus(ttl)).orElse(ALREADY_EXPIRED));
    }

    /** True when the pod is claimed and claimed-at + ttl &lt;= now (or claimed-at is unusable). */
    public boolean isExpired(Pod pod, Instant now) {
        return expiresAt(pod).map(at -> !at.isAfter(now)).orElse(false);
    }

    /** The expired pods among {@code pods}, in their given order, judged at {@code now}. */
    public List<Pod> expired(Collection<Pod> pods, Instant now) {
        List<Pod> out = new ArrayList<>();
        for (Pod pod : pods) {
            if (isExpired(pod, now)) {
                out.add(pod);
            }
        }
        return out;
    }

    /** The claimed-at annotation as an instant; empty when missing or not RFC 3339. */
    public static Optional<Instant> claimedAt(Pod pod) {
        String raw = ManagedPods.annotation(pod, PlaypenKeys.CLAIMED_AT);
        if (raw == null || !RFC3339.matcher(raw).matches()) {
            return Optional.empty();
        }
        try {
            return Optional.of(OffsetDateTime.parse(raw).toInstant());
        } catch (DateTimeParseException e) {
            return Optional.empty();
        }
    }

    /** The claimed-at value the claim writes: RFC 3339, UTC, whole seconds (2026-01-02T03:04:05Z). */
    public static String formatClaimedAt(Instant at) {
        return DateTimeFormatter.ISO_INSTANT.format(at.truncatedTo(ChronoUnit.SECONDS));
    }
}
