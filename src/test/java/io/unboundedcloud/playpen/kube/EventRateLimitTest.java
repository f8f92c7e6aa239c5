package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Event;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** Events are rate-limited per reason and aggregated like client-go's EventCorrelator does. */
class EventRateLimitTest {

    @Test
    void aBurstIsWrittenTheRestIsCombinedIntoOneEventAndCounted() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                EventRecorder events = new EventRecorder(cluster.client, Clock.systemUTC(), new ApiCallCounter(), 1000, 3,
                        Duration.ofMillis(700))) {
            // tokens come back when this test says: the three writes of the burst may take longer than an interval
            // on a loaded machine, and a token back meanwhile would let a fourth event out on its own
            AtomicLong nanos = new AtomicLong();
            events.refillTokensWith(nanos::get);
            for (int i = 0; i < 20; i++) {
                events.normal(EventRecorderWritesTest.pod("p-" + i), "Allocated", "allocated to key " + i);
            }
            // the burst of 3 goes out one by one; the other 17 are aggregated
            OperatorHarness.awaitTrue(() -> events.written() + events.aggregated() == 20, Duration.ofSeconds(60),
                    "every event admitted");
            assertThat(events.aggregated()).isEqualTo(17);
            assertThat(events.written()).isEqualTo(3);
            // once a token is back, the aggregate is one Event standing for all 17
            nanos.addAndGet(Duration.ofMillis(700).toNanos());
            OperatorHarness.awaitTrue(() -> events.written() == 4, Duration.ofSeconds(60), "combined event written");
            List<Event> written = cluster.client.v1().events().inNamespace(TestCluster.NS).list().getItems();
            assertThat(written).hasSize(4);
            Event combined = written.stream().filter(e -> e.getCount() > 1).findFirst().orElseThrow();
            assertThat(combined.getCount()).isEqualTo(17);
            assertThat(combined.getMessage()).isEqualTo("(combined from similar events): allocated to key 19");
            assertThat(combined.getInvolvedObject().getName()).isEqualTo("p-19");
            assertThat(written.stream().filter(e -> e.getCount() == 1).map(Event::getMessage))
                    .containsExactlyInAnyOrder("allocated to key 0", "allocated to key 1", "allocated to key 2");
            // another reason has its own budget
            events.normal(EventRecorderWritesTest.pod("p-x"), "Deallocated", "deallocated");
            OperatorHarness.awaitTrue(() -> events.written() == 5, Duration.ofSeconds(60), "other reason written");
        }
    }

    /**
     * A Warning recorded once that waited for its rate and went out combined keeps its name: the next leader, which
     * finds the same pods unhealthy, creates neither again.
     */
    @Test
    void aWarningRecordedOnceThatWasCombinedIsNotRecordedAgainByTheNextLeader() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            try (EventRecorder first = new EventRecorder(cluster.client, Clock.systemUTC(), new ApiCallCounter(), 1000,
                    1, Duration.ofMillis(700))) {
                AtomicLong nanos = new AtomicLong();
                first.refillTokensWith(nanos::get);
                first.warningOnce(EventRecorderWritesTest.pod("sick-a"), "UnhealthyFailed", "a failed", "uid-sick-a/F");
                first.warningOnce(EventRecorderWritesTest.pod("sick-b"), "UnhealthyFailed", "b failed", "uid-sick-b/F");
                OperatorHarness.awaitTrue(() -> first.written() == 1 && first.aggregated() == 1,
                        Duration.ofSeconds(60), "one written, one held back");
                nanos.addAndGet(Duration.ofMillis(700).toNanos());
                OperatorHarness.awaitTrue(() -> first.written() == 2, Duration.ofSeconds(60), "the held one written");
            }
            try (EventRecorder next = new EventRecorder(cluster.client, Clock.systemUTC(), new ApiCallCounter(), 1000,
                    100, Duration.ofMillis(700))) {
                next.warningOnce(EventRecorderWritesTest.pod("sick-a"), "UnhealthyFailed", "a failed", "uid-sick-a/F");
                next.warningOnce(EventRecorderWritesTest.pod("sick-b"), "UnhealthyFailed", "b failed", "uid-sick-b/F");
                OperatorHarness.awaitTrue(() -> next.recordedElsewhere() + next.written() + next.failed() == 2,
                        Duration.ofSeconds(60), "both answered");
                assertThat(next.recordedElsewhere()).isEqualTo(2);
                assertThat(next.written()).isZero();
                assertThat(next.failed()).isZero();
            }
            List<Event> written = cluster.client.v1().events().inNamespace(TestCluster.NS).list().getItems();
            assertThat(written).extracting(Event::getMessage)
                    .containsExactlyInAnyOrder("a failed", "(combined from similar events): b failed");
            assertThat(written).allSatisfy(e -> assertThat(e.getMetadata().getName())
                    .matches(e.getInvolvedObject().getName().replace(".", "\\.") + "\\.[0-9a-f]{16}"));
        }
    }

    /**
     * A new leader's Warning recorded once that the leader before recorded already (its create meets 409) stands for
     * itself only: the Warnings folded into it while it waited for its rate still get their Event, combined.
     */
    @Test
    void warningsFoldedIntoOneAnotherLeaderRecordedAreNotLost() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            try (EventRecorder first = new EventRecorder(cluster.client, Clock.systemUTC(), new ApiCallCounter(), 1000,
                    100, Duration.ofMillis(700))) {
                first.warningOnce(EventRecorderWritesTest.pod("sick-a"), "UnhealthyFailed", "a failed", "uid-sick-a/F");
                OperatorHarness.awaitTrue(() -> first.written() == 1, Duration.ofSeconds(60), "a recorded");
            }
            try (EventRecorder next = new EventRecorder(cluster.client, Clock.systemUTC(), new ApiCallCounter(), 1000,
                    1, Duration.ofMillis(700))) {
                AtomicLong nanos = new AtomicLong();
                next.refillTokensWith(nanos::get);
                next.warningOnce(EventRecorderWritesTest.pod("sick-x"), "UnhealthyFailed", "x failed", "uid-sick-x/F");
                next.warningOnce(EventRecorderWritesTest.pod("sick-y"), "UnhealthyFailed", "y failed", "uid-sick-y/F");
                next.warningOnce(EventRecorderWritesTest.pod("sick-a"), "UnhealthyFailed", "a failed", "uid-sick-a/F");
                OperatorHarness.awaitTrue(() -> next.written() == 1 && next.aggregated() == 2,
                        Duration.ofSeconds(60), "x written, y and a held back");
                nanos.addAndGet(Duration.ofMillis(700).toNanos());
                OperatorHarness.awaitTrue(() -> next.written() + next.recordedElsewhere() + next.failed() >= 2,
                        Duration.ofSeconds(60), "the held ones answered");
                assertThat(next.failed()).isZero();
            }
            List<Event> written = cluster.client.v1().events().inNamespace(TestCluster.NS).list().getItems();
            assertThat(written).as("Events: x, a (by the leader before), and y's among the combined ones")
                    .extracting(Event::getCount).containsExactlyInAnyOrder(1, 1, 2);
        }
    }

    @Test
    void lowRateEventsAreEachWrittenOnTheirOwn() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                EventRecorder events = new EventRecorder(cluster.client, Clock.systemUTC(), new ApiCallCounter(), 1000, 1,
                        Duration.ofMillis(150))) {
            for (int i = 0; i < 4; i++) {
                events.normal(EventRecorderWritesTest.pod("slow-" + i), "Allocated", "allocated " + i);
                int n = i + 1;
                OperatorHarness.awaitTrue(() -> events.written() == n, Duration.ofSeconds(60), "event " + n);
                Thread.sleep(200); // slower than one per interval
            }
            assertThat(events.aggregated()).isZero();
            assertThat(cluster.client.v1().events().inNamespace(TestCluster.NS).list().getItems())
                    .extracting(Event::getCount).containsOnly(1);
        }
    }

    @Test
    void anIdleWriterSleepsUntilTheNextEventAndStillWritesIt() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                EventRecorder events = new EventRecorder(cluster.client, Clock.systemUTC(), new ApiCallCounter(), 1000, 2,
                        Duration.ofMillis(100))) {
            // tokens come back when this test says, not while a loaded machine is still admitting the five
            AtomicLong nanos = new AtomicLong();
            events.refillTokensWith(nanos::get);
            for (int i = 0; i < 5; i++) {
                events.normal(EventRecorderWritesTest.pod("idle-" + i), "Allocated", "allocated " + i);
            }
            OperatorHarness.awaitTrue(() -> events.written() == 2 && events.aggregated() == 3, Duration.ofSeconds(60),
                    "the burst written, the rest held back");
            // the burst, then the combined rest once a token is back; then the bucket fills up and is dropped
            nanos.addAndGet(Duration.ofMillis(100).toNanos());
            OperatorHarness.awaitTrue(() -> events.written() == 3, Duration.ofSeconds(60), "burst and combined event");
            nanos.addAndGet(Duration.ofSeconds(1).toNanos());
            // nothing left to flush: the writer waits for the next event with no timer to wake it
            OperatorHarness.awaitTrue(() -> events.writerState() == Thread.State.WAITING, Duration.ofSeconds(60),
                    "writer waiting without a timeout");
            events.warning(EventRecorderWritesTest.pod("idle-x"), "Deferred", "woken by this one");
            OperatorHarness.awaitTrue(() -> events.written() == 4, Duration.ofSeconds(60), "event after the idle wait");
            assertThat(cluster.client.v1().events().inNamespace(TestCluster.NS).list().getItems())
                    .extracting(Event::getMessage).contains("woken by this one");
        }
    }
}
