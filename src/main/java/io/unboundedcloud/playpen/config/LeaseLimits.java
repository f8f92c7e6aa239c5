package io.unboundedcloud.playpen.config;

import java.time.Duration;

/**
 * The bounds of leases and waiting: the longest ttl an alloc or renewal may ask for, the cap on an
 * allocation's whole life (zero = none) and the longest wait for capacity, in seconds (zero = no waiting).
 */
public record LeaseLimits(Duration maxTtl, Duration maxLifetime, int maxWaitSeconds) {
    public static final LeaseLimits DEFAULTS = new LeaseLimits(Duration.ofHours(24), Duration.ZERO, 120);
}
