package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import ch.qos.logback.classic.spi.ILoggingEvent;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.api.model.ObjectReferenceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.MutableClock;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** What an Event holds as written (the fields kubectl describe and get events show), and what a full queue drops. */
class EventRecorderWritesTest {
    static final Instant T0 = Instant.parse("2026-01-02T03:04:05Z");

    TestCluster cluster;
    final MutableClock clock = new MutableClock(T0);
    final ApiCallCounter calls = new ApiCallCounter();
    @RegisterExtension
    final CapturedLogs logs = CapturedLogs.of(EventRecorder.class);

    @BeforeEach
    void up() {
        cluster = TestCluster.start();
    }

    @AfterEach
    void down() {
        cluster.close();
    }

    static Pod pod(String name) {
        return new PodBuilder().withApiVersion("v1").withKind("Pod").withNewMetadata().withNamespace(TestCluster.NS)
                .withName(name).withUid("uid-" + name).withResourceVersion("42").endMetadata().build();
    }

    List<Event> written() {
        return cluster.client.v1().events().inNamespace(TestCluster.NS).list().getItems().stream()
                .sorted(Comparator.comparing(Event::getReason)).toList();
    }

    @Test
    void eachEventNamesItsObjectTypeReasonTimeAndSource() throws Exception {
        ObjectReference apiService = new ObjectReferenceBuilder().withApiVersion("apiregistration.k8s.io/v1")
                .withKind("APIService").withName("v1alpha1.playpen.unbounded-cloud.io").build();
        try (EventRecorder events = new EventRecorder(cluster.client, clock, calls, 100, 0, Duration.ofSeconds(1))) {
            events.normal(pod("runner-a"), "Allocated", "claimed by key 1");
            events.warning(pod("runner-b"), "Unhealthy", "not ready for 5m");
            events.warning(apiService, TestCluster.NS, "CaBundleStale", "caBundle differs");
            OperatorHarness.awaitTrue(() -> events.written() == 3, Duration.ofSeconds(60), "three events written");
            assertThat(calls.get(KubeApiCall.EVENTS_CREATE)).isEqualTo(3);
            assertThat(events.dropped()).isZero();
            assertThat(events.aggregated()).isZero();
        }
        List<Event> all = written();
        assertThat(all).extracting(Event::getReason).containsExactly("Allocated", "CaBundleStale", "Unhealthy");
        assertThat(all).extracting(Event::getType).containsExactly("Normal", "Warning", "Warning");
        assertThat(all).extracting(Event::getMessage)
                .containsExactly("claimed by key 1", "caBundle differs", "not ready for 5m");
        for (Event e : all) {
            assertThat(e.getCount()).isEqualTo(1);
            assertThat(e.getFirstTimestamp()).isEqualTo(T0.toString());
            assertThat(e.getLastTimestamp()).isEqualTo(T0.toString());
            assertThat(e.getSource().getComponent()).isEqualTo("playpen-operator");
            assertThat(e.getReportingComponent()).isEqualTo("playpen-operator");
            assertThat(e.getMetadata().getName()).startsWith(e.getInvolvedObject().getName() + ".");
        }
        ObjectReference runner = all.get(0).getInvolvedObject();
        assertThat(runner.getKind()).isEqualTo("Pod");
        assertThat(runner.getApiVersion()).isEqualTo("v1");
        assertThat(runner.getNamespace()).isEqualTo(TestCluster.NS);
        assertThat(runner.getName()).isEqualTo("runner-a");
        assertThat(runner.getUid()).isEqualTo("uid-runner-a");
        assertThat(runner.getResourceVersion()).isEqualTo("42");
        assertThat(all.get(1).getInvolvedObject()).isEqualTo(apiService);
        // nothing was refused, so nothing is announced as accepted again
        assertThat(logs.lines()).noneMatch(e -> e.getFormattedMessage().contains("accepted again"));
    }

    @Test
    void eventsOverTheRateAreCombinedFromTheFirstOnesTimeToTheWritersTime() throws Exception {
        try (EventRecorder events = new EventRecorder(cluster.client, clock, calls, 100, 1, Duration.ofSeconds(2))) {
            // the token comes back when this test says: each step below may take longer than the interval on a
            // loaded machine, and a token back too early would write an event this test expects held back
            java.util.concurrent.atomic.AtomicLong nanos = new java.util.concurrent.atomic.AtomicLong();
            events.refillTokensWith(nanos::get);
            events.normal(pod("runner-a"), "Allocated", "first");
            OperatorHarness.awaitTrue(() -> events.written() == 1, Duration.ofSeconds(60), "first written");
            clock.now = T0.plusSeconds(10);
            events.normal(pod("runner-b"), "Allocated", "second");
            OperatorHarness.awaitTrue(() -> events.aggregated() == 1, Duration.ofSeconds(60), "second held back");
            clock.now = T0.plusSeconds(20);
            events.normal(pod("runner-c"), "Allocated", "third");
            OperatorHarness.awaitTrue(() -> events.aggregated() == 2, Duration.ofSeconds(60), "third held back");
            clock.now = T0.plusSeconds(30);
            // a token is back after the interval: the two held back become one Event about the latest
            nanos.addAndGet(Duration.ofSeconds(2).toNanos());
            OperatorHarness.awaitTrue(() -> events.written() == 2, Duration.ofSeconds(60), "combined event written");
            // the combined Event spent the token: the next one waits for the interval again
            events.normal(pod("runner-d"), "Allocated", "fourth");
            OperatorHarness.awaitTrue(() -> events.aggregated() == 3, Duration.ofSeconds(60), "fourth held back");
            assertThat(events.written()).isEqualTo(2);
        }
        Event combined = cluster.client.v1().events().inNamespace(TestCluster.NS).list().getItems().stream()
                .filter(e -> e.getCount() > 1).findFirst().orElseThrow();
        assertThat(combined.getCount()).isEqualTo(2);
        assertThat(combined.getMessage()).isEqualTo("(combined from similar events): third");
        assertThat(combined.getInvolvedObject().getName()).isEqualTo("runner-c");
        assertThat(combined.getFirstTimestamp()).isEqualTo(T0.plusSeconds(10).toString());
        assertThat(combined.getLastTimestamp()).isEqualTo(T0.plusSeconds(30).toString());
    }

    @Test
    void aFullQueueDropsAndCountsWhatItCannotHoldWithoutBlockingTheCaller() throws Exception {
        int sent = 200;
        try (EventRecorder events = new EventRecorder(cluster.client, clock, calls, 1, 0, Duration.ofSeconds(1))) {
            for (int i = 0; i < sent; i++) {
                events.normal(pod("runner-" + i), "Allocated", "claimed " + i);
            }
            // the writer waits 20 ms before it writes what it took, so a queue of one cannot hold a burst of 200
            OperatorHarness.awaitTrue(() -> events.written() + events.dropped() == sent, Duration.ofSeconds(20),
                    "every event written or dropped");
            assertThat(events.dropped()).isPositive();
            assertThat(events.failed()).isZero();
            assertThat(written()).hasSize((int) events.written());
        }
    }

    @Test
    void eventsStillQueuedOrAggregatedWhenItClosesAreCountedAsLost() throws Exception {
        java.util.concurrent.CountDownLatch writing = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        // the API server holds the write of the Event reasoned Blocker until this test lets it go
        cluster.addRequestListener(new TestCluster.RequestListener() {
            @Override
            public void onRequest(String key) {
            }

            @Override
            public void onRequest(String key, java.util.function.Supplier<String> body) {
                if (key.startsWith("POST ") && key.contains("/events") && body.get() != null
                        && body.get().contains("\"Blocker\"")) {
                    writing.countDown();
                    try {
                        release.await(60, java.util.concurrent.TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            }
        });
        EventRecorder events = new EventRecorder(cluster.client, clock, calls, 100, 1, Duration.ofSeconds(2));
        try {
            java.util.concurrent.atomic.AtomicLong nanos = new java.util.concurrent.atomic.AtomicLong();
            events.refillTokensWith(nanos::get);
            events.normal(pod("runner-a"), "Allocated", "first");
            OperatorHarness.awaitTrue(() -> events.written() == 1, Duration.ofSeconds(60), "first written");
            events.normal(pod("runner-b"), "Allocated", "second");
            OperatorHarness.awaitTrue(() -> events.aggregated() == 1, Duration.ofSeconds(60), "second held back");
            events.normal(pod("runner-c"), "Blocker", "holds the writer");
            assertThat(writing.await(60, java.util.concurrent.TimeUnit.SECONDS)).as("the writer is writing").isTrue();
            for (int i = 0; i < 3; i++) {
                events.normal(pod("runner-q" + i), "Queued", "queued " + i);
            }
            events.close();
        } finally {
            release.countDown();
        }
        // the one held back for its rate and the three queued behind the write
        OperatorHarness.awaitTrue(() -> events.lostAtClose() == 4, Duration.ofSeconds(60), "lost events counted");
        events.normal(pod("runner-z"), "Allocated", "after the close");
        assertThat(events.lostAtClose()).as("an event recorded after the close").isEqualTo(5);
        OperatorHarness.awaitTrue(() -> events.written() + events.failed() == 2, Duration.ofSeconds(60),
                "the held write ended");
        assertThat(events.dropped()).isZero();
    }
}
