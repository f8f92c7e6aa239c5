package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.camel.CamelContext;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.micrometer.messagehistory.MicrometerMessageHistoryFactory;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.spi.MessageHistoryFactory;
import org.junit.jupiter.api.Test;

/** {@link StepTimers} records the meters camel-micrometer's own message history records, once per step run. */
class StepTimersTest {

    @Test
    void sameMetersAsCamelMicrometersMessageHistoryWithOneRecordingPerStepRun() throws Exception {
        SimpleMeterRegistry stock = new SimpleMeterRegistry();
        MicrometerMessageHistoryFactory camels = new MicrometerMessageHistoryFactory();
        camels.setMeterRegistry(stock);
        SimpleMeterRegistry ours = new SimpleMeterRegistry();
        StepTimers steps = new StepTimers();
        steps.setMeterRegistry(ours);

        run(camels, 7);
        run(steps, 7);

        Set<String> expected = describe(stock);
        assertThat(expected).as("the stock factory recorded the route's steps").hasSizeGreaterThanOrEqualTo(3)
                .anyMatch(id -> id.contains("nodeId=step-two"));
        assertThat(describe(ours)).isEqualTo(expected);
        for (Meter m : ours.getMeters()) {
            if (!(m instanceof Timer)) {
                continue;
            }
            String node = m.getId().getTag("nodeId");
            long runs = "step-odd".equals(node) ? 3 : 7; // bodies 0..6: 1, 3 and 5 pass the filter
            assertThat(((Timer) m).count()).as(m.getId().toString()).isEqualTo(runs);
            assertThat(((Timer) m).totalTime(java.util.concurrent.TimeUnit.NANOSECONDS)).as("elapsed time recorded")
                    .isPositive();
            assertThat(((Timer) m).count()).as("as many as the stock factory recorded for " + node)
                    .isEqualTo(stock.get(m.getId().getName()).tags(m.getId().getTags()).timer().count());
        }
    }

    @Test
    void aStepRecordsTheTimeBetweenItsStartAndItsEnd() throws Exception {
        io.micrometer.core.instrument.MockClock clock = new io.micrometer.core.instrument.MockClock();
        SimpleMeterRegistry ours = new SimpleMeterRegistry(io.micrometer.core.instrument.simple.SimpleConfig.DEFAULT,
                clock);
        StepTimers steps = new StepTimers();
        steps.setMeterRegistry(ours);
        withHistory(steps, new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:slow").routeId("slow")
                        .process(exchange -> clock.add(java.time.Duration.ofMillis(5))).id("step-slow");
            }
        }, producer -> producer.sendBody("direct:slow", 1));
        Timer slow = ours.getMeters().stream().filter(m -> m instanceof Timer && "step-slow".equals(m.getId()
                .getTag("nodeId"))).map(Timer.class::cast).findFirst().orElseThrow();
        assertThat(slow.count()).isEqualTo(1);
        assertThat(slow.totalTime(java.util.concurrent.TimeUnit.MILLISECONDS)).isEqualTo(5.0);
    }

    @Test
    void aNodePatternFallsBackToCamelMicrometersOwnHistory() throws Exception {
        // only the steps whose kind the pattern names are timed, as camel-micrometer does it
        SimpleMeterRegistry stock = new SimpleMeterRegistry();
        MicrometerMessageHistoryFactory camels = new MicrometerMessageHistoryFactory();
        camels.setMeterRegistry(stock);
        camels.setNodePattern("transform");
        SimpleMeterRegistry ours = new SimpleMeterRegistry();
        StepTimers steps = new StepTimers();
        steps.setMeterRegistry(ours);
        steps.setNodePattern("transform");
        run(camels, 3);
        run(steps, 3);
        assertThat(describe(ours)).isEqualTo(describe(stock)).filteredOn(d -> d.contains("nodeId"))
                .singleElement().asString().contains("nodeId=step-two");
    }

    private static void run(MessageHistoryFactory factory, int exchanges) throws Exception {
        withHistory(factory, new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:steps").routeId("steps")
                        .setHeader("n", simple("${body}")).id("step-one")
                        .filter(exchange -> exchange.getMessage().getBody(Integer.class) % 2 == 1).id("step-filter")
                            .setHeader("odd", constant(true)).id("step-odd")
                        .end()
                        .transform(simple("${body}")).id("step-two");
            }
        }, producer -> {
            for (int i = 0; i < exchanges; i++) {
                producer.sendBody("direct:steps", i);
            }
        });
    }

    /** Runs {@code routes} in a context whose message history {@code factory} makes, and sends what {@code send} does. */
    private static void withHistory(MessageHistoryFactory factory, RouteBuilder routes,
            java.util.function.Consumer<ProducerTemplate> send) throws Exception {
        try (CamelContext context = new DefaultCamelContext()) {
            context.getCamelContextExtension().setName("steps-test");
            context.setMessageHistory(true);
            context.setMessageHistoryFactory(factory);
            context.addRoutes(routes);
            context.start();
            send.accept(context.createProducerTemplate());
        }
    }

    /** Each meter as its name, type, description and sorted tags. */
    private static Set<String> describe(MeterRegistry registry) {
        return registry.getMeters().stream().map(m -> {
            Meter.Id id = m.getId();
            List<String> tags = id.getTags().stream().map(t -> t.getKey() + "=" + t.getValue()).sorted().toList();
            return id.getName() + " " + id.getType() + " " + id.getDescription() + " " + tags;
        }).collect(Collectors.toSet());
    }
}
