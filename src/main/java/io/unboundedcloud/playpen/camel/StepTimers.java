package io.unboundedcloud.playpen.camel;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.Clock;
import io.micrometer.core.instrument.Timer;
import org.apache.camel.Exchange;
import org.apache.camel.MessageHistory;
import org.apache.camel.NamedNode;
import org.apache.camel.Route;
import org.apache.camel.component.micrometer.messagehistory.MicrometerMessageHistoryFactory;
import org.apache.camel.component.micrometer.messagehistory.MicrometerMessageHistoryNamingStrategy;
import org.apache.camel.support.DefaultMessageHistory;

/**
 * camel-micrometer's per-step timers, the same meters (name, tags {@code routeId}/{@code nodeId}/..., description)
 * found once per step instead of at the end of every step: its {@code MicrometerMessageHistory} builds a
 * {@code Timer.Builder}, the step's {@code Tags} (sorted) and a registry lookup each time a step ends, which is
 * several per cent of a request's CPU on the allocation path. The timers are cached by step (route reloads make
 * new steps, so a reloaded route gets its own entries; the meters behind them are the registry's, by name and tags).
 * A node pattern or message copies, which this operator does not configure, fall back to camel-micrometer's own.
 */
final class StepTimers extends MicrometerMessageHistoryFactory {
    private final Map<NamedNode, Timer> timers = new ConcurrentHashMap<>();

    @Override
    public MessageHistory newMessageHistory(String routeId, NamedNode node, Exchange exchange) {
        if (getNodePattern() != null || isCopyMessage()) {
            return super.newMessageHistory(routeId, node, exchange);
        }
        Timer timer = timers.get(node);
        if (timer == null) {
            Route route = getCamelContext().getRoute(routeId);
            if (route == null) {
                return null;
            }
            timer = timers.computeIfAbsent(node, n -> timer(route, n));
        }
        return new Step(routeId, node, timer, getMeterRegistry().config().clock());
    }

    private Timer timer(Route route, NamedNode node) {
        MicrometerMessageHistoryNamingStrategy naming = getNamingStrategy();
        return Timer.builder(naming.getName(route, node))
                .tags(naming.getTags(route, node))
                .description("Node performance metrics")
                .register(getMeterRegistry());
    }

    /** One step's history entry: Camel's own (elapsed time for the route's message history) plus its timer. */
    static final class Step extends DefaultMessageHistory {
        private final Timer timer;
        private final Clock clock;
        private final long start;

        Step(String routeId, NamedNode node, Timer timer, Clock clock) {
            super(routeId, node, null);
            this.timer = timer;
            this.clock = clock;
            this.start = clock.monotonicTime();
        }

        @Override
        public void nodeProcessingDone() {
            super.nodeProcessingDone();
            timer.record(clock.monotonicTime() - start, TimeUnit.NANOSECONDS);
        }
    }
}
