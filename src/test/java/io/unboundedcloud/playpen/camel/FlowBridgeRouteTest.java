package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.kube.ApiCallCounter;
import io.unboundedcloud.playpen.kube.EventRecorder;
import io.unboundedcloud.playpen.kube.PoolReconciler;
import io.unboundedcloud.playpen.model.PoolTarget;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * While Camel runs, a pod create the API server refused goes to its route ({@code direct:pool-create-refused}), so
 * its Event is a step an operator can see and re-wire; nothing is recorded beside the route.
 */
class FlowBridgeRouteTest {
    @Test
    void aRefusedCreateGoesToItsRouteNotStraightToTheRecorder() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                EventRecorder recorder = new EventRecorder(cluster.client, Clock.systemUTC(), new ApiCallCounter(), 100,
                        100, Duration.ofSeconds(1));
                DefaultCamelContext camel = new DefaultCamelContext()) {
            List<Object> routed = new CopyOnWriteArrayList<>();
            camel.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    from("direct:" + FlowBridge.POOL_CREATE_REFUSED).routeId(FlowBridge.POOL_CREATE_REFUSED)
                            .process(e -> routed.add(e.getMessage().getBody()));
                }
            });
            camel.start();
            ObservedEvents observed = new ObservedEvents(recorder,
                    OperatorConfig.parse("--namespace=" + TestCluster.NS), Map.of());
            FlowBridge bridge = new FlowBridge(observed, new AuditLog(Clock.systemUTC()));
            bridge.start(camel);
            PoolReconciler.CreateRefusal refusal = new PoolReconciler.CreateRefusal(PoolTarget.runner("amd64"), 403,
                    "exceeded quota: pods", Duration.ofSeconds(2));

            bridge.createRefused(refusal);

            OperatorHarness.awaitTrue(() -> routed.size() == 1, Duration.ofSeconds(60), "the refusal routed");
            assertThat(routed).containsExactly(refusal);
            assertThat(refusal.message()).contains("the pool creates no pod for 2 s;");
            assertThat(recorder.written()).as("nothing recorded beside the route").isZero();
        }
    }

    /**
     * An expiry while ttl-expired is not running (a reload of ttl-expiry.camel.yaml replacing it) gets its Expired
     * Event from the fallback and its audit line through the audit route, as ttl-expired would have written it.
     */
    @Test
    void anExpiryWhileItsRouteIsReplacedIsAuditedThroughTheAuditRoute() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                EventRecorder recorder = new EventRecorder(cluster.client, Clock.systemUTC(), new ApiCallCounter(), 100,
                        100, Duration.ofSeconds(1));
                DefaultCamelContext camel = new DefaultCamelContext()) {
            List<Map<String, Object>> audited = new CopyOnWriteArrayList<>();
            camel.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    from("direct:audit").routeId("audit").process(e -> audited.add(Map.copyOf(e.getProperties())));
                }
            });
            camel.start();
            FlowBridge bridge = new FlowBridge(new ObservedEvents(recorder,
                    OperatorConfig.parse("--namespace=" + TestCluster.NS), Map.of()), new AuditLog(Clock.systemUTC()));
            bridge.start(camel);

            bridge.expired(FlowBridgeFallbackTest.pod("expired"), Duration.ofSeconds(1));

            OperatorHarness.awaitTrue(() -> recorder.written() == 1, Duration.ofSeconds(60), "the Expired Event");
            assertThat(audited).as("the expiry's audit line sent to the audit route").singleElement()
                    .satisfies(p -> assertThat(p).containsEntry(AuditLog.VERB, "expire")
                            .containsEntry(AuditLog.OUTCOME, "expired")
                            .containsEntry(AuditLog.ALLOCATION_ID, "expired"));
        }
    }
}
