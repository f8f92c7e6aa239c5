package io.unboundedcloud.playpen.camel;

import org.apache.camel.main.Main;

import io.micrometer.core.instrument.MeterRegistry;

/**
 * Per-route and per-step metrics from camel-micrometer, into the same registry as the playpen_* metrics (so
 * {@code /observe/metrics} serves both): the route policy gives each route's exchanges (total, failed, in flight)
 * and processing time ({@code camel_exchanges_*}, {@code camel_route_policy_seconds}, tag {@code routeId}; its
 * exchange properties named once per route, {@link RouteExchangeMeters}); the
 * message history gives each step's time ({@code camel_route_node_*}/{@code camel_message_history_seconds}, tags
 * {@code routeId} and {@code nodeId}: the step ids of the YAML routes, e.g. alloc's
 * {@code alloc-replay-or-claim}; timers found once per step, {@link StepTimers}).
 */
final class RouteMetrics {
    private RouteMetrics() {
    }

    static void bind(Main main, MeterRegistry registry) {
        RouteExchangeMeters routes = new RouteExchangeMeters();
        routes.setMeterRegistry(registry);
        StepTimers steps = new StepTimers();
        steps.setMeterRegistry(registry);
        main.bind("metricsRegistry", registry);
        main.bind("micrometerRoutePolicyFactory", routes);
        main.bind("micrometerMessageHistoryFactory", steps);
        main.configure().setMessageHistory(true);
    }
}
