package io.unboundedcloud.playpen.camel;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.LongTaskTimer;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.NamedNode;
import org.apache.camel.Route;
import org.apache.camel.component.micrometer.MicrometerConstants;
import org.apache.camel.component.micrometer.routepolicy.MicrometerRoutePolicy;
import org.apache.camel.component.micrometer.routepolicy.MicrometerRoutePolicyConfiguration;
import org.apache.camel.component.micrometer.routepolicy.MicrometerRoutePolicyFactory;
import org.apache.camel.component.micrometer.routepolicy.MicrometerRoutePolicyNamingStrategy;
import org.apache.camel.spi.ManagementAgent;
import org.apache.camel.spi.RoutePolicy;
import org.apache.camel.spi.UnitOfWork;
import org.apache.camel.support.ExchangeHelper;
import org.apache.camel.support.PatternHelper;

/**
 * camel-micrometer's route policy with the same meters (each route's {@code camel_route_policy_seconds} and
 * {@code camel_exchanges_*}, and the context's for each exchange a consumer started; names, tags and descriptions
 * from its naming strategy and configuration), kept the same way: the exchange carries each route's timer sample in
 * a property {@code camel.route.policy-<route id>-<exchange id>}. camel-micrometer names that property with
 * {@code String.format} twice per route on every exchange, three times when it ends, about a tenth of the bytes the
 * operator's threads allocate per new allocation; here the route's part of the name is made once per route.
 * Registering with the registry and the JMX and dump service stay camel-micrometer's ({@link MicrometerRoutePolicy}).
 */
final class RouteExchangeMeters extends MicrometerRoutePolicyFactory {
    private Meters context;

    @Override
    public RoutePolicy createRoutePolicy(CamelContext camelContext, String routeId, NamedNode routeDefinition) {
        Policy policy = new Policy(this);
        policy.setMeterRegistry(getMeterRegistry());
        policy.setPrettyPrint(isPrettyPrint());
        policy.setSkipCamelInfo(isSkipCamelInfo());
        policy.setDurationUnit(getDurationUnit());
        policy.setNamingStrategy(getNamingStrategy());
        policy.setConfiguration(getPolicyConfiguration());
        return policy;
    }

    /** The context's meters, shared by every route's policy (made by the first route that starts). */
    private synchronized Meters context(Policy policy, CamelContext camelContext) {
        if (context == null) {
            context = new Meters(policy.getMeterRegistry(), camelContext, null, policy.getNamingStrategy(),
                    policy.getConfiguration());
        }
        return context;
    }

    @Override
    protected void doShutdown() throws Exception {
        super.doShutdown();
        synchronized (this) {
            if (context != null) {
                context.remove();
                context = null;
            }
        }
    }

    /** One route's policy: camel-micrometer's set-up, this class's meters. */
    static final class Policy extends MicrometerRoutePolicy {
        private final RouteExchangeMeters factory;
        private final Map<Route, Meters> routes = new ConcurrentHashMap<>();
        private volatile Meters context;
        private boolean kamelets;
        private boolean templates = true;

        Policy(RouteExchangeMeters factory) {
            // no factory for camel-micrometer's part: the context's meters are this class's too
            this.factory = factory;
        }

        @Override
        public void onInit(Route route) {
            super.onInit(route);
            var strategy = route.getCamelContext().getManagementStrategy();
            ManagementAgent agent = strategy != null ? strategy.getManagementAgent() : null;
            if (agent != null) {
                kamelets = agent.getRegisterRoutesCreateByKamelet();
                templates = agent.getRegisterRoutesCreateByTemplate();
            }
            if (getConfiguration().isContextEnabled() && context == null) {
                context = factory.context(this, route.getCamelContext());
            }
        }

        @Override
        public void onStart(Route route) {
            if (!routes.containsKey(route) && measured(route)) {
                routes.computeIfAbsent(route, r -> new Meters(getMeterRegistry(), r.getCamelContext(), r,
                        getNamingStrategy(), getConfiguration()));
            }
        }

        private boolean measured(Route route) {
            MicrometerRoutePolicyConfiguration configuration = getConfiguration();
            if (!configuration.isRouteEnabled() || route.isCreatedByKamelet() && !kamelets
                    || route.isCreatedByRouteTemplate() && !templates) {
                return false;
            }
            String exclude = configuration.getExcludePattern();
            return exclude == null || !PatternHelper.matchPatterns(route.getRouteId(), exclude.split(","));
        }

        @Override
        public void onRemove(Route route) {
            Meters meters = routes.remove(route);
            if (meters != null) {
                meters.remove();
            }
        }

        @Override
        public void onExchangeBegin(Route route, Exchange exchange) {
            measure(route, exchange, true);
        }

        @Override
        public void onExchangeDone(Route route, Exchange exchange) {
            measure(route, exchange, false);
        }

        private void measure(Route route, Exchange exchange, boolean begins) {
            Meters c = context;
            if (c != null && startedHere(exchange)) {
                c.measure(exchange, begins);
            }
            Meters meters = routes.get(route);
            if (meters != null) {
                meters.measure(exchange, begins);
            }
        }

        /** The context counts an exchange in the route its consumer started it in, not in the routes it calls. */
        private boolean startedHere(Exchange exchange) {
            UnitOfWork uow = exchange.getUnitOfWork();
            return uow == null || uow.routeStackLevel(templates, kamelets) <= 1;
        }
    }

    /** The meters of one route, or of the context ({@code route} null). */
    static final class Meters {
        private static final String LONG_TASK = "_long_task";
        private final MeterRegistry registry;
        private final Route route;
        private final CamelContext camelContext;
        private final MicrometerRoutePolicyNamingStrategy naming;
        private final MicrometerRoutePolicyConfiguration configuration;
        /** The exchange property's name without the exchange id. */
        private final String sampleName;
        private final Counter succeeded;
        private final Counter failed;
        private final Counter total;
        private final Counter externalRedeliveries;
        private final Counter failuresHandled;
        private final LongTaskTimer longTaskTimer;
        private volatile Timer timer;

        Meters(MeterRegistry registry, CamelContext camelContext, Route route,
                MicrometerRoutePolicyNamingStrategy naming, MicrometerRoutePolicyConfiguration configuration) {
            this.registry = registry;
            this.route = route;
            this.camelContext = camelContext;
            this.naming = naming;
            this.configuration = configuration;
            String id = route != null ? route.getId() : "context:" + camelContext.getName();
            this.sampleName = MicrometerConstants.DEFAULT_CAMEL_ROUTE_POLICY_METER_NAME + "-" + id + "-";
            boolean counters = configuration.isAdditionalCounters();
            succeeded = counters && configuration.isExchangesSucceeded()
                    ? counter(naming.getExchangesSucceededName(route), "Number of successfully completed exchanges")
                    : null;
            failed = counters && configuration.isExchangesFailed()
                    ? counter(naming.getExchangesFailedName(route), "Number of failed exchanges") : null;
            total = counters && configuration.isExchangesTotal()
                    ? counter(naming.getExchangesTotalName(route), "Total number of processed exchanges") : null;
            externalRedeliveries = counters && configuration.isExternalRedeliveries()
                    ? counter(naming.getExternalRedeliveriesName(route),
                            "Number of external initiated redeliveries (such as from JMS broker)")
                    : null;
            failuresHandled = counters && configuration.isFailuresHandled()
                    ? counter(naming.getFailuresHandledName(route), "Number of failures handled") : null;
            if (counters && configuration.isLongTask()) {
                LongTaskTimer.Builder builder = LongTaskTimer.builder(naming.getLongTaskName(route)).tags(tags())
                        .description(route != null ? "Route long task metric" : "CamelContext long task metric");
                if (configuration.getLongTaskInitiator() != null) {
                    configuration.getLongTaskInitiator().accept(builder);
                }
                longTaskTimer = builder.register(registry);
            } else {
                longTaskTimer = null;
            }
        }

        private Tags tags() {
            return route != null ? naming.getTags(route) : naming.getTags(camelContext);
        }

        private Counter counter(String name, String description) {
            return Counter.builder(name)
                    .tags(route != null ? naming.getExchangeStatusTags(route) : naming.getExchangeStatusTags(camelContext))
                    .description(description)
                    .register(registry);
        }

        void measure(Exchange exchange, boolean begins) {
            if (begins) {
                begin(exchange);
            } else {
                done(exchange);
            }
        }

        private void begin(Exchange exchange) {
            String name = sampleName + exchange.getExchangeId();
            exchange.setProperty(name, Timer.start(registry));
            if (longTaskTimer != null) {
                exchange.setProperty(name + LONG_TASK, longTaskTimer.start());
            }
        }

        private void done(Exchange exchange) {
            String name = sampleName + exchange.getExchangeId();
            Timer.Sample sample = (Timer.Sample) exchange.removeProperty(name);
            if (sample != null) {
                sample.stop(timer());
            }
            if (longTaskTimer != null) {
                LongTaskTimer.Sample running = (LongTaskTimer.Sample) exchange.removeProperty(name + LONG_TASK);
                if (running != null) {
                    running.stop();
                }
            }
            if (configuration.isAdditionalCounters()) {
                count(exchange);
            }
        }

        /** Registered as the first exchange ends, as camel-micrometer does. */
        private Timer timer() {
            Timer t = timer;
            if (t == null) {
                Timer.Builder builder = Timer.builder(naming.getName(route)).tags(tags())
                        .description(route != null ? "Route performance metrics" : "CamelContext performance metrics");
                if (configuration.getTimerInitiator() != null) {
                    configuration.getTimerInitiator().accept(builder);
                }
                t = builder.register(registry);
                timer = t;
            }
            return t;
        }

        private void count(Exchange exchange) {
            if (total != null) {
                total.increment();
            }
            if (exchange.isFailed()) {
                if (failed != null) {
                    failed.increment();
                }
                return;
            }
            if (succeeded != null) {
                succeeded.increment();
            }
            if (failuresHandled != null && ExchangeHelper.isFailureHandled(exchange)) {
                failuresHandled.increment();
            }
            if (externalRedeliveries != null && exchange.isExternalRedelivered()) {
                externalRedeliveries.increment();
            }
        }

        void remove() {
            for (var meter : new io.micrometer.core.instrument.Meter[] {succeeded, failed, total, externalRedeliveries,
                    failuresHandled, timer, longTaskTimer}) {
                if (meter != null) {
                    registry.remove(meter);
                }
            }
        }
    }
}
