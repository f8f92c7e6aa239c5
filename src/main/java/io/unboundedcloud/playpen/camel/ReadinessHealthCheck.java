package io.unboundedcloud.playpen.camel;

import java.util.Map;
import java.util.function.BooleanSupplier;

import org.apache.camel.health.HealthCheckResultBuilder;
import org.apache.camel.impl.health.AbstractHealthCheck;

/**
 * The operator's readiness (caches synced and watching, a valid front-proxy trust bundle) as a check in Camel's
 * health-check registry, beside Camel's own context check: {@code /observe/health} and {@code /observe/health/ready}
 * answer from that registry, and Hawtio/JMX show it with Camel's checks. Readiness only: a replica that lost its
 * trust bundle is alive (it must not be restarted for it), just not serving.
 */
final class ReadinessHealthCheck extends AbstractHealthCheck {
    private final BooleanSupplier ready;

    ReadinessHealthCheck(BooleanSupplier ready) {
        super("playpen", "playpen-ready");
        this.ready = ready;
    }

    @Override
    public boolean isLiveness() {
        return false;
    }

    @Override
    protected void doCall(HealthCheckResultBuilder builder, Map<String, Object> options) {
        if (ready.getAsBoolean()) {
            builder.up();
        } else {
            builder.message("not ready: caches not synced, or no front-proxy trust bundle with a CA valid now").down();
        }
    }
}
