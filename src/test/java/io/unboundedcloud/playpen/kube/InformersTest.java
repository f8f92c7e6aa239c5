package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import ch.qos.logback.classic.spi.ILoggingEvent;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.informers.ExceptionHandler;
import io.unboundedcloud.playpen.support.CapturedLogs;

/**
 * The watch caches' failure handler: every failure is retried (fabric8's default gives up on a failed first LIST),
 * the first is logged with what failed, and a long outage writes one line a minute, not one per retry.
 */
class InformersTest {
    @RegisterExtension
    final CapturedLogs logs = CapturedLogs.of(Informers.class);

    final AtomicLong nanos = new AtomicLong(-5_000_000_000L); // any origin: System.nanoTime may be negative
    final ExceptionHandler handler = Informers.handler("nodes", nanos::get);

    @Test
    void everyFailureIsRetriedAndALongOutageLogsOneLineAMinute() {
        KubernetesClientException refused = new KubernetesClientException("nodes is forbidden", 403, null);

        assertThat(handler.retryAfterException(false, refused)).isTrue();
        assertThat(messages()).containsExactly("nodes initial list failed, retrying: " + refused);

        for (int i = 0; i < 100; i++) {
            nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(500));
            assertThat(handler.retryAfterException(i % 2 == 0, refused)).as("retry %d", i).isTrue();
        }
        assertThat(messages()).as("within the minute after the first line: no more").hasSize(1);

        nanos.addAndGet(TimeUnit.SECONDS.toNanos(10) - 1); // 59.999999999 s after the first line
        assertThat(handler.retryAfterException(true, refused)).isTrue();
        assertThat(messages()).hasSize(1);
        nanos.incrementAndGet(); // a minute
        assertThat(handler.retryAfterException(true, refused)).isTrue();
        assertThat(messages()).hasSize(2).last().isEqualTo("nodes watch failed, retrying: " + refused);

        nanos.addAndGet(TimeUnit.SECONDS.toNanos(30));
        assertThat(handler.retryAfterException(true, refused)).isTrue();
        assertThat(messages()).as("the minute counts from the last line written").hasSize(2);
        assertThat(logs.lines()).allSatisfy(l -> assertThat(l.getLevel().toString()).isEqualTo("WARN"));
    }

    @Test
    void anObjectThatCannotBeReadIsSaidSoAndRetried() {
        KubernetesClientException unreadable = new KubernetesClientException("cannot decode",
                new com.fasterxml.jackson.core.JsonParseException(null, "Unexpected character"));
        assertThat(ExceptionHandler.isDeserializationException(unreadable)).as("the test's premise").isTrue();

        assertThat(handler.retryAfterException(true, unreadable)).isTrue();
        assertThat(messages()).containsExactly("nodes watch: an object could not be read, retrying: " + unreadable);
    }

    @Test
    void eachCacheHasItsOwnMinute() {
        ExceptionHandler pods = Informers.handler("pods", nanos::get);
        KubernetesClientException down = new KubernetesClientException("connection refused");
        handler.retryAfterException(false, down);
        pods.retryAfterException(false, down);
        assertThat(messages()).containsExactly("nodes initial list failed, retrying: " + down,
                "pods initial list failed, retrying: " + down);
    }

    private java.util.List<String> messages() {
        return logs.lines().stream().map(ILoggingEvent::getFormattedMessage).toList();
    }
}
