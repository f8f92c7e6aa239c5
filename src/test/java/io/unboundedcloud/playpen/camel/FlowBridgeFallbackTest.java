package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.kube.ApiCallCounter;
import io.unboundedcloud.playpen.kube.EventRecorder;
import io.unboundedcloud.playpen.kube.PoolSignals;
import io.unboundedcloud.playpen.model.PoolBackoff;
import io.unboundedcloud.playpen.model.PoolHealth;
import io.unboundedcloud.playpen.model.PoolPlan;
import io.unboundedcloud.playpen.model.PoolTarget;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * While Camel is not running (startup, shutdown) the pools' and the TTL's happenings still become Events: each
 * goes straight to the recorder, with the type, reason and object the routes would give it, and an expiry's audit
 * line straight to the audit log. The trust bundle's refusal is a Warning on the operator.
 */
class FlowBridgeFallbackTest {
    @org.junit.jupiter.api.extension.RegisterExtension
    final io.unboundedcloud.playpen.support.CapturedLogs audit =
            io.unboundedcloud.playpen.support.CapturedLogs.named("playpen.audit");

    static Pod pod(String name) {
        return new PodBuilder().withApiVersion("v1").withKind("Pod").withNewMetadata().withNamespace(TestCluster.NS)
                .withName(name).withUid("uid-" + name).withResourceVersion("7").endMetadata().build();
    }

    @Test
    void withoutCamelEveryHappeningIsRecordedDirectly() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                EventRecorder recorder = new EventRecorder(cluster.client, Clock.systemUTC(), new ApiCallCounter(), 100,
                        100, Duration.ofSeconds(1))) {
            OperatorConfig config = OperatorConfig.parse("--namespace=" + TestCluster.NS);
            ObservedEvents observed = new ObservedEvents(recorder, config, Map.of());
            FlowBridge bridge = new FlowBridge(observed, new AuditLog(Clock.systemUTC()));
            PoolTarget amd64 = PoolTarget.runner("amd64");

            bridge.created(pod("created"));
            bridge.deleted(new PoolPlan.Deletion(amd64, pod("stale"), PoolPlan.Why.STALE, null));
            bridge.deleted(new PoolPlan.Deletion(amd64, pod("gone"), PoolPlan.Why.UNHEALTHY, PoolHealth.Problem.NODE_GONE));
            bridge.unhealthyAllocated(new PoolPlan.Unhealthy(amd64, pod("sick"), PoolHealth.Problem.EVICTED));
            bridge.expired(pod("expired"), Duration.ofSeconds(1));
            bridge.exhausted(new PoolPlan.Exhaustion(amd64, new OperatorConfig.PortRange(51820, 51820), 2));
            bridge.backoffChanged(new PoolSignals.BackoffChange(amd64, new PoolBackoff.View(2, Duration.ofSeconds(20),
                    Instant.now()), PoolHealth.Problem.NOT_READY_IN_TIME, pod("slow")));
            bridge.backoffChanged(new PoolSignals.BackoffChange(amd64, PoolBackoff.View.NONE, null, pod("ready")));
            observed.trustBundleInvalid("no certificate in the bundle");

            OperatorHarness.awaitTrue(() -> recorder.written() == 9, Duration.ofSeconds(60), "nine events written");
            // the APIService is cluster-scoped: its Events are in "default", the pods' in theirs
            List<String> written = cluster.client.v1().events().inAnyNamespace().list().getItems().stream()
                    .map(FlowBridgeFallbackTest::describe).sorted().toList();
            assertThat(written).containsExactly(
                    "APIService/v1alpha1.playpen.unbounded-cloud.io Warning BackOff",
                    "APIService/v1alpha1.playpen.unbounded-cloud.io Warning HostPortRangeExhausted",
                    "APIService/v1alpha1.playpen.unbounded-cloud.io Warning TrustBundleInvalid",
                    "Pod/created Normal Created",
                    "Pod/expired Normal Expired",
                    "Pod/gone Warning NodeGone",
                    "Pod/ready Normal BackOffEnded",
                    "Pod/sick Warning UnhealthyEvicted",
                    "Pod/stale Normal Stale");
            Event trust = cluster.client.v1().events().inNamespace("default").list().getItems().stream()
                    .filter(e -> e.getReason().equals("TrustBundleInvalid")).findFirst().orElseThrow();
            assertThat(trust.getMessage()).isEqualTo("front-proxy trust bundle is invalid: no certificate in the bundle; "
                    + "/apis requests are refused");
            // the expiry's audit line too, straight to the audit log
            assertThat(audit.lines()).extracting(l -> l.getFormattedMessage()).singleElement().asString()
                    .contains("\"user\":\"system:playpen-operator\",\"verb\":\"expire\",\"allocation\":\"expired\"")
                    .contains("\"outcome\":\"expired\"");
        }
    }

    static String describe(Event e) {
        return e.getInvolvedObject().getKind() + "/" + e.getInvolvedObject().getName() + " " + e.getType() + " "
                + e.getReason();
    }
}
