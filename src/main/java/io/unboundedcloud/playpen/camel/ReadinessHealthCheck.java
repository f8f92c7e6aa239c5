package io.unboundedcloud.playpen.camel;

import java.util.Map;
import java.util.function.Supplier;

import org.apache.camel.health.HealthCheckResultBuilder;
import org.apache.camel.impl.health.AbstractHealthCheck;

/**
 * The operator's readiness (caches synced and watching, a valid front-proxy trust bundle) as a check in Camel's
 * health-check registry, beside Camel's own context check: {@code /observe/health} and {@code /observe/health/ready}
 * answer from that registry, and Hawtio/JMX show it with Camel's checks. Readiness only: a replica that lost its
 * trust bundle is alive (it must not be restarted for it), just not serving.
 */
final class ReadinessHealthCheck extends AbstractHealthCheck {
    /** Why the replica is not ready, or null while it is. */
    private final Supplier<String> notReady;

    ReadinessHealthCheck(Supplier<String> notReady) {
        super("playpen", "playpen-ready");
        this.notReady = notReady;
    }

    @Override
    public boolean isLiveness() {
        return false;
    }

    @Override
    protected void doCall(HealthCheckResultBuilder builder, Map<String, Object> options) {
        String why = notReady.get();
        if (why == null) {
            builder.up();
        } else {
            builder.message(why).down();
        }
    }
}
