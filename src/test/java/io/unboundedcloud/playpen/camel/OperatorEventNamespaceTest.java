package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Event;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.kube.ApiCallCounter;
import io.unboundedcloud.playpen.kube.EventRecorder;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * Events about the operator itself go where the API server accepts them. Its validation of a core/v1 Event
 * (legacyValidateEvent) wants the Event's namespace to be the involved object's, and for an object without one
 * (the cluster-scoped APIService, used when POD_NAME is not set) "default" or none: anywhere else the create is
 * refused as invalid. The mock API server does not validate, so this checks the rule on what was written.
 */
class OperatorEventNamespaceTest {
    static final OperatorConfig CONFIG = OperatorConfig.parse("--namespace=" + TestCluster.NS);

    static EventRecorder recorder(TestCluster cluster) {
        return new EventRecorder(cluster.client, Clock.systemUTC(), new ApiCallCounter(), 100, 100,
                Duration.ofSeconds(1));
    }

    @Test
    void anEventAboutTheApiServiceIsWrittenWhereTheApiServerTakesIt() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                EventRecorder recorder = recorder(cluster)) {
            ObservedEvents observed = new ObservedEvents(recorder, CONFIG, Map.of("POD_NAMESPACE", "playpen-system"));

            observed.trustBundleInvalid("no certificate in the bundle");

            OperatorHarness.awaitTrue(() -> recorder.written() == 1, Duration.ofSeconds(60), "event written");
            List<Event> all = cluster.client.v1().events().inAnyNamespace().list().getItems();
            assertThat(all).hasSize(1);
            Event e = all.get(0);
            assertThat(e.getInvolvedObject().getKind()).isEqualTo("APIService");
            assertThat(e.getInvolvedObject().getNamespace()).isNull();
            assertThat(e.getMetadata().getNamespace()).as("namespace of an Event about a cluster-scoped object")
                    .isIn("default", "");
        }
    }

    /**
     * An Event on the operator's pod names it by its uid too: {@code kubectl describe pod} selects the Events it shows
     * by involvedObject.uid, and one without it never matches.
     */
    @Test
    void anEventOnTheOperatorsPodCarriesItsUid() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                EventRecorder recorder = recorder(cluster)) {
            ObservedEvents observed = new ObservedEvents(recorder, CONFIG, Map.of("POD_NAME", "playpen-0",
                    "POD_NAMESPACE", TestCluster.NS, "POD_UID", "5f0c3a7e-1b2d-4c8e-9a6f-0d1e2f3a4b5c"));

            observed.trustBundleInvalid("no certificate in the bundle");

            OperatorHarness.awaitTrue(() -> recorder.written() == 1, Duration.ofSeconds(60), "event written");
            assertThat(cluster.client.v1().events().inAnyNamespace().list().getItems()).singleElement()
                    .satisfies(e -> {
                        assertThat(e.getInvolvedObject().getKind()).isEqualTo("Pod");
                        assertThat(e.getInvolvedObject().getName()).isEqualTo("playpen-0");
                        assertThat(e.getInvolvedObject().getNamespace()).isEqualTo(TestCluster.NS);
                        assertThat(e.getInvolvedObject().getUid()).as("involvedObject.uid")
                                .isEqualTo("5f0c3a7e-1b2d-4c8e-9a6f-0d1e2f3a4b5c");
                    });
        }
    }

    /** A refused pod create is told as a Warning CreateRefused on the operator's pod, saying what to check. */
    @Test
    void aRefusedCreateIsAWarningOnTheOperator() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                EventRecorder recorder = recorder(cluster)) {
            ObservedEvents observed = new ObservedEvents(recorder, CONFIG,
                    Map.of("POD_NAME", "playpen-0", "POD_NAMESPACE", TestCluster.NS));

            observed.createRefused(new io.unboundedcloud.playpen.kube.PoolReconciler.CreateRefusal(
                    io.unboundedcloud.playpen.model.PoolTarget.runner("amd64"), 403, "exceeded quota: pods",
                    Duration.ofSeconds(1)));

            OperatorHarness.awaitTrue(() -> recorder.written() == 1, Duration.ofSeconds(60), "event written");
            List<Event> all = cluster.client.v1().events().inAnyNamespace().list().getItems();
            assertThat(all).singleElement().satisfies(e -> {
                assertThat(e.getType()).isEqualTo("Warning");
                assertThat(e.getReason()).isEqualTo("CreateRefused");
                assertThat(e.getInvolvedObject().getName()).isEqualTo("playpen-0");
                assertThat(e.getMessage()).contains("runner/amd64").contains("HTTP 403").contains("exceeded quota")
                        .contains("check ResourceQuota and admission webhooks in the namespace, and the pod template flags");
            });
        }
    }
}
