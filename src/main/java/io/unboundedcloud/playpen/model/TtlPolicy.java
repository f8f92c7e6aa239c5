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
 * Decides when a claimed pod's allocation expires: at its expires-at, else at claimed-at + ttl, never past
 * claimed-at + the lifetime cap, inclusive. A claimed pod whose claimed-at is missing or unparsable is already
 * expired. A zero ttl disables expiry of the claims without an expires-at of their own, unless a cap is set.
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
    private final Duration maxLifetime;

    /** Judges at instants the caller reads from its clock once per decision (never twice: see TtlExpirer). */
    public TtlPolicy(Duration ttl) {
        this(ttl, Duration.ZERO);
    }

    /** With {@code maxLifetime} (zero = none): no expiry is ever set past claimed-at + maxLifetime. */
    public TtlPolicy(Duration ttl, Duration maxLifetime) {
        this.ttl = Objects.requireNonNull(ttl, "ttl");
        this.maxLifetime = Objects.requireNonNull(maxLifetime, "maxLifetime");
        if (ttl.isNegative() || maxLifetime.isNegative()) {
            throw new IllegalArgumentException("ttl and maxLifetime must not be negative");
        }
    }

    /**
     * False when the default ttl is zero: claims without an expires-at annotation never expire, unless a lifetime
     * cap is set.
     */
    public boolean enabled() {
        return !ttl.isZero();
    }

    /** The default ttl (--playpen-ttl); zero when disabled. */
    public Duration ttl() {
        return ttl;
    }

    /**
     * When the pod's allocation expires: its expires-at annotation when it carries a valid one (written by this
     * operator's claim or a renewal); else claimed-at + ttl, as the reference judges, but never past claimed-at +
     * maxLifetime (claimed-at + maxLifetime when the default ttl is disabled and a cap is set; empty when neither is
     * set, as the reference keeps such a claim; {@link #ALREADY_EXPIRED} when claimed-at is missing or not RFC 3339).
     * Empty for pods that are not claimed managed pods.
     */
    public Optional<Instant> expiresAt(Pod pod) {
        if (!ManagedPods.isManaged(pod) || !ManagedPods.isClaimed(pod)) {
            return Optional.empty();
        }
        Optional<Instant> written = parse(ManagedPods.annotation(pod, PlaypenKeys.EXPIRES_AT));
        if (written.isPresent()) {
            return written;
        }
        if (!enabled() && maxLifetime.isZero()) {
            return Optional.empty();
        }
        return Optional.of(claimedAt(pod).map(at -> enabled() ? cap(at, at.plus(ttl)) : at.plus(maxLifetime))
                .orElse(ALREADY_EXPIRED));
    }

    /**
     * The expiry a claim made at {@code claimedAt} writes: claimed-at + the requested ttl (null: the default ttl),
     * capped at claimed-at + maxLifetime; with no ttl asked and the default disabled, claimed-at + maxLifetime (an
     * allocation that never expired would outlive the cap), or empty without a cap.
     */
    public Optional<Instant> claimExpiry(Instant claimedAt, Duration requested) {
        Instant at = claimedAt.truncatedTo(ChronoUnit.SECONDS);
        Duration d = requested != null ? requested : ttl;
        if (d.isZero()) {
            return maxLifetime.isZero() ? Optional.empty() : Optional.of(at.plus(maxLifetime));
        }
        return Optional.of(cap(at, at.plus(d)));
    }

    /**
     * The latest expiry the allocation can reach: claimed-at + maxLifetime, or its current expiry when that is later
     * (written before the cap was set or lowered: the cap applies to renewals from then on, and a renewal never
     * shortens an expiry, so that one stays); empty without a cap. A claim whose claimed-at is missing or unusable
     * (edited by hand) has no lifetime to measure: its current expiry is its latest, so renewing it again and again
     * cannot keep it past the cap.
     */
    public Optional<Instant> maxExpiresAt(Pod pod) {
        if (maxLifetime.isZero()) {
            return Optional.empty();
        }
        Optional<Instant> current = expiresAt(pod).filter(at -> !at.equals(ALREADY_EXPIRED));
        Optional<Instant> claimed = claimedAt(pod);
        if (claimed.isPresent()) {
            Instant cap = claimed.get().plus(maxLifetime);
            return Optional.of(current.filter(at -> at.isAfter(cap)).orElse(cap));
        }
        return current;
    }

    /**
     * The expiry after renewing at {@code now} for {@code ttl}: now + ttl capped at {@link #maxExpiresAt}, and
     * never earlier than the current expiry. Renewals only extend, so two racing renewals commute: whichever
     * order their writes land in, the later expiry stays.
     */
    public Instant renewedExpiry(Pod pod, Instant now, Duration ttl) {
        Instant wanted = now.truncatedTo(ChronoUnit.SECONDS).plus(ttl);
        Optional<Instant> max = maxExpiresAt(pod);
        if (max.isPresent() && wanted.isAfter(max.get())) {
            wanted = max.get();
        }
        Optional<Instant> current = expiresAt(pod).filter(at -> !at.equals(ALREADY_EXPIRED));
        return current.isPresent() && current.get().isAfter(wanted) ? current.get() : wanted;
    }

    private Instant cap(Instant claimedAt, Instant wanted) {
        if (maxLifetime.isZero()) {
            return wanted;
        }
        Instant max = claimedAt.plus(maxLifetime);
        return wanted.isAfter(max) ? max : wanted;
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
        return parse(ManagedPods.annotation(pod, PlaypenKeys.CLAIMED_AT));
    }

    /** An RFC 3339 timestamp as Go's time.RFC3339 parser reads it; empty when missing or invalid. */
    public static Optional<Instant> parse(String raw) {
        Instant utc = parseWholeSecondsUtc(raw);
        if (utc != null) {
            return Optional.of(utc);
        }
        return parseGeneral(raw);
    }

    /** {@link #parse} without its fast path: the regular expression, then java.time's ISO parser. */
    static Optional<Instant> parseGeneral(String raw) {
        if (raw == null || !RFC3339.matcher(raw).matches()) {
            return Optional.empty();
        }
        try {
            return Optional.of(OffsetDateTime.parse(raw).toInstant());
        } catch (DateTimeParseException e) {
            return Optional.empty();
        }
    }

    /**
     * The form this operator writes (and the reference's Go time.RFC3339 in UTC): {@code yyyy-MM-ddTHH:mm:ssZ},
     * read without a regular expression or a DateTimeFormatter, which cost ~5% of the CPU of an alloc answer (it
     * shows the expiry). Null for anything else, including an impossible date or second 60, which {@link #parse}
     * then judges the general way: so both ways give the same answer for every input.
     */
    static Instant parseWholeSecondsUtc(String raw) {
        if (raw == null || raw.length() != 20 || raw.charAt(4) != '-' || raw.charAt(7) != '-' || raw.charAt(10) != 'T'
                || raw.charAt(13) != ':' || raw.charAt(16) != ':' || raw.charAt(19) != 'Z') {
            return null;
        }
        int year = digits(raw, 0, 4);
        int month = digits(raw, 5, 7);
        int day = digits(raw, 8, 10);
        int hour = digits(raw, 11, 13);
        int minute = digits(raw, 14, 16);
        int second = digits(raw, 17, 19);
        if (year < 0 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 || minute < 0
                || minute > 59 || second < 0 || second > 59 || day > java.time.YearMonth.of(year, month).lengthOfMonth()) {
            return null;
        }
        return java.time.LocalDateTime.of(year, month, day, hour, minute, second).toInstant(java.time.ZoneOffset.UTC);
    }

    /** The ASCII digits raw[from, to) as a number; -1 when one is not a digit. */
    private static int digits(String raw, int from, int to) {
        int n = 0;
        for (int i = from; i < to; i++) {
            char c = raw.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
            n = n * 10 + (c - '0');
        }
        return n;
    }

    /** The claimed-at value the claim writes: RFC 3339, UTC, whole seconds (2026-01-02T03:04:05Z). */
    public static String formatClaimedAt(Instant at) {
        return DateTimeFormatter.ISO_INSTANT.format(at.truncatedTo(ChronoUnit.SECONDS));
    }
}
