package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** Events forbidden by RBAC (the Go operator's RBAC grants none): counted apart, warned once, not hammered. */
class EventRecorderForbiddenTest {
    static final String PLAYPEN_EVENTS = "POST /api/v1/namespaces/playpen/events";

    TestCluster cluster;
    EventRecorder events;
    @RegisterExtension
    final CapturedLogs logs = CapturedLogs.of(EventRecorder.class);

    @BeforeEach
    void up() {
        cluster = TestCluster.start();
        cluster.client.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName("other").endMetadata().build())
                .create();
        events = new EventRecorder(cluster.client, Clock.systemUTC(), new ApiCallCounter(), 100, Duration.ofSeconds(1));
    }

    @AfterEach
    void down() {
        events.close();
        cluster.close();
    }

    static Pod pod(String ns, String name) {
        return new PodBuilder().withNewMetadata().withNamespace(ns).withName(name).withUid("u-" + name).endMetadata().build();
    }

    int posts(String key) {
        return cluster.requestCount(key::equals);
    }

    long warnings() {
        return logs.lines().stream().filter(e -> e.getLevel() == Level.WARN && e.getFormattedMessage().contains("forbidden"))
                .count();
    }

    @Test
    void forbiddenEventsAreCountedApartWarnedOnceAndNotSentAfterAFewRefusals() throws Exception {
        cluster.forbidden = PLAYPEN_EVENTS::equals;
        for (int i = 0; i < 10; i++) {
            events.normal(pod("playpen", "p" + i), "Allocated", "claimed");
        }
        events.normal(pod("other", "q"), "Allocated", "claimed"); // another namespace is not affected
        OperatorHarness.awaitTrue(() -> events.forbidden() == 10 && events.written() == 1, Duration.ofSeconds(60),
                "all events handled");
        assertThat(posts(PLAYPEN_EVENTS)).isEqualTo(EventRecorder.FORBIDDEN_BEFORE_SUSPEND);
        assertThat(events.failed()).isZero();
        assertThat(events.dropped()).isZero();
        assertThat(warnings()).isEqualTo(1);
        // the warning quotes the API server's own words and says what to grant
        assertThat(logs.lines()).filteredOn(e -> e.getFormattedMessage().contains("forbidden")).singleElement()
                .extracting(ILoggingEvent::getFormattedMessage).asString()
                .contains("(forbidden by the test's RBAC: " + PLAYPEN_EVENTS + ")")
                .contains("grant create on events in playpen");
        assertThat(cluster.client.v1().events().inNamespace("other").list().getItems()).hasSize(1);

        // still refused at the probe: one more request, then quiet again; no second warning
        Thread.sleep(1100);
        events.normal(pod("playpen", "late"), "Expired", "expired");
        events.normal(pod("playpen", "later"), "Expired", "expired");
        OperatorHarness.awaitTrue(() -> events.forbidden() == 12, Duration.ofSeconds(60), "probe refused");
        assertThat(posts(PLAYPEN_EVENTS)).isEqualTo(EventRecorder.FORBIDDEN_BEFORE_SUSPEND + 1);
        assertThat(warnings()).isEqualTo(1);
    }

    @Test
    void anRbacFixIsNoticedAtTheNextProbe() throws Exception {
        cluster.forbidden = PLAYPEN_EVENTS::equals;
        for (int i = 0; i < 5; i++) {
            events.normal(pod("playpen", "p" + i), "Allocated", "claimed");
        }
        OperatorHarness.awaitTrue(() -> events.forbidden() == 5, Duration.ofSeconds(60), "refused");
        cluster.forbidden = k -> false; // RBAC for events applied
        Thread.sleep(1100);
        events.normal(pod("playpen", "a"), "Allocated", "claimed");
        events.normal(pod("playpen", "b"), "Allocated", "claimed");
        OperatorHarness.awaitTrue(() -> events.written() == 2, Duration.ofSeconds(60), "written again");
        assertThat(events.forbidden()).isEqualTo(5);
        assertThat(cluster.client.v1().events().inNamespace("playpen").list().getItems()).hasSize(2);
        assertThat(logs.lines()).anyMatch(e -> e.getFormattedMessage().contains("accepted again"));
    }

    @Test
    void otherRefusalsStayFailuresAndAreNotSuspended() throws Exception {
        cluster.server.expect().post().withPath("/api/v1/namespaces/playpen/events")
                .andReturn(500, "{\"kind\":\"Status\",\"code\":500}").always();
        for (int i = 0; i < 5; i++) {
            events.normal(pod("playpen", "p" + i), "Allocated", "claimed");
        }
        OperatorHarness.awaitTrue(() -> events.failed() == 5, Duration.ofSeconds(20), "failed");
        assertThat(events.forbidden()).isZero();
        assertThat(warnings()).isZero();
    }
}
