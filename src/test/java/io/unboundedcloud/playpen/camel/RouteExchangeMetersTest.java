package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.LongTaskTimer;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.micrometer.routepolicy.MicrometerRoutePolicyConfiguration;
import org.apache.camel.component.micrometer.routepolicy.MicrometerRoutePolicyFactory;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

/**
 * {@link RouteExchangeMeters} keeps the meters camel-micrometer's route policy keeps: the same names, types, tags and
 * descriptions, the same counts (exchanges total, succeeded, failed, failures handled; timers per route and for the
 * context), the same exchange properties carrying the samples, and the same meters removed with a route.
 */
class RouteExchangeMetersTest {

    @Test
    void sameMetersCountsAndPropertiesAsCamelMicrometersRoutePolicy() throws Exception {
        Run stock = run(new MicrometerRoutePolicyFactory(), MicrometerRoutePolicyConfiguration.DEFAULT);
        Run ours = run(new RouteExchangeMeters(), MicrometerRoutePolicyConfiguration.DEFAULT);

        assertThat(stock.meters).as("the stock policy measured both routes and the context")
                .anySatisfy((id, count) -> assertThat(id + " " + count).contains("camel.exchanges.failures.handled")
                        .contains("routeId=inner").endsWith(" 4.0"))
                .anySatisfy((id, count) -> assertThat(id + " " + count).contains("camel.exchanges.failed")
                        .contains("routeId=outer").endsWith(" 1.0"))
                .anySatisfy((id, count) -> assertThat(id + " " + count).startsWith("camel.route.policy TIMER CamelContext")
                        .endsWith(" 7"));
        assertThat(ours.meters).isEqualTo(stock.meters);
        assertThat(ours.inFlight).as("properties carrying the samples while the exchange runs")
                .isEqualTo(stock.inFlight).contains("camel.route.policy-outer-ID", "camel.route.policy-inner-ID",
                        "camel.route.policy-context:route-meters-test-ID");
        assertThat(ours.left).as("properties left once the exchange is done").isEqualTo(stock.left);
        assertThat(ours.afterRemoval).as("meters left once the route inner is removed").isEqualTo(stock.afterRemoval)
                .noneSatisfy((id, value) -> assertThat(id).contains("routeId=inner"));
    }

    @Test
    void aLongTaskTimerAsCamelMicrometersWhenConfigured() throws Exception {
        MicrometerRoutePolicyConfiguration longTask = new MicrometerRoutePolicyConfiguration();
        longTask.setLongTask(true);
        Run stock = run(new MicrometerRoutePolicyFactory(), longTask);
        Run ours = run(new RouteExchangeMeters(), longTask);
        assertThat(stock.meters).anySatisfy((id, value) -> assertThat(id).startsWith("camel.route.policy.long.task"));
        assertThat(ours.meters).isEqualTo(stock.meters);
        assertThat(ours.inFlight).isEqualTo(stock.inFlight).contains("camel.route.policy-inner-ID_long_task");
        assertThat(ours.left).isEqualTo(stock.left);
    }

    /** What one policy factory measured of seven exchanges through two routes. */
    private record Run(Map<String, String> meters, List<String> inFlight, List<String> left,
            Map<String, String> afterRemoval) {
    }

    /**
     * Seven exchanges into {@code outer}, which calls {@code inner}: even bodies fail in inner and are handled there,
     * body 3 fails in outer unhandled.
     */
    private static Run run(MicrometerRoutePolicyFactory factory, MicrometerRoutePolicyConfiguration configuration)
            throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        factory.setMeterRegistry(registry);
        factory.setPolicyConfiguration(configuration);
        List<String> inFlight = new ArrayList<>();
        List<String> left = new ArrayList<>();
        try (CamelContext context = new DefaultCamelContext()) {
            context.getCamelContextExtension().setName("route-meters-test");
            context.addRoutePolicyFactory(factory);
            context.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    from("direct:outer").routeId("outer")
                            .to("direct:inner")
                            .process(exchange -> {
                                if (exchange.getMessage().getBody(Integer.class) == 3) {
                                    throw new IllegalArgumentException("three");
                                }
                            });
                    from("direct:inner").routeId("inner")
                            .onException(IllegalStateException.class).handled(true).end()
                            .process(exchange -> {
                                if (inFlight.isEmpty()) {
                                    inFlight.addAll(samples(exchange));
                                }
                                if (exchange.getMessage().getBody(Integer.class) % 2 == 0) {
                                    throw new IllegalStateException("even");
                                }
                            });
                }
            });
            context.start();
            for (int i = 0; i < 7; i++) {
                int body = i;
                left.addAll(samples(context.createProducerTemplate().send("direct:outer",
                        e -> e.getMessage().setBody(body))));
            }
            Map<String, String> meters = measured(registry);
            context.getRouteController().stopRoute("inner");
            context.removeRoute("inner");
            return new Run(meters, inFlight, left, measured(registry));
        }
    }

    /** The exchange's route policy properties, its id replaced by ID. */
    private static List<String> samples(Exchange exchange) {
        return exchange.getProperties().keySet().stream().filter(k -> k.startsWith("camel.route.policy"))
                .map(k -> k.replace(exchange.getExchangeId(), "ID")).sorted().collect(Collectors.toList());
    }

    /** Each meter (name, type, description, sorted tags) and its count. */
    private static Map<String, String> measured(MeterRegistry registry) {
        Map<String, String> all = new TreeMap<>();
        for (Meter m : registry.getMeters()) {
            Meter.Id id = m.getId();
            List<String> tags = id.getTags().stream().map(t -> t.getKey() + "=" + t.getValue()).sorted().toList();
            String value = m instanceof Counter c ? String.valueOf(c.count())
                    : m instanceof Timer t ? String.valueOf(t.count())
                    : m instanceof LongTaskTimer l ? String.valueOf(l.activeTasks()) : "";
            all.put(id.getName() + " " + id.getType() + " " + id.getDescription() + " " + tags, value);
        }
        return all;
    }
}
