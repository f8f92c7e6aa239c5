package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.Test;

/**
 * The HTTPS listener's idle closer (--idle-timeout) on an embedded channel: a connection with no reads or writes
 * for the timeout is closed, and a connection whose request is still being answered (the guard's mark: waiting for the
 * API server, for capacity, or a watch between events) is quiet, not idle: it stays open however many timeouts the
 * answer takes, and is closed once idle again after it. Netty's idle
 * handler reads the JVM's clock, so the timeouts here are short and real; only "closed in the end" waits, with a
 * deadline far beyond them.
 */
class IdleCloserTest {
    private static final long DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(20);

    private static EmbeddedChannel connection(Duration timeout) {
        return new EmbeddedChannel(new NettyTls.IdleCloser(timeout).newChannelHandler());
    }

    /** Runs the channel's timers for the given time, or until it is closed. */
    private static void runFor(EmbeddedChannel ch, long millis) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (ch.isOpen() && System.nanoTime() < end) {
            Thread.sleep(5);
            ch.runPendingTasks();
            ch.runScheduledPendingTasks();
        }
    }

    private static void awaitClosed(EmbeddedChannel ch) throws InterruptedException {
        runFor(ch, TimeUnit.NANOSECONDS.toMillis(DEADLINE_NANOS));
        assertThat(ch.isOpen()).as("closed once idle").isFalse();
    }

    @Test
    void aConnectionIdleForTheTimeoutIsClosed() throws Exception {
        EmbeddedChannel ch = connection(Duration.ofMillis(50));
        ch.writeInbound("request");
        ch.writeOutbound("answer");
        assertThat(ch.isOpen()).isTrue();
        awaitClosed(ch);
    }

    @Test
    void aConnectionWhoseAnswerIsDueStaysOpenUntilItIsWritten() throws Exception {
        EmbeddedChannel ch = connection(Duration.ofMillis(50));
        ch.writeInbound("alloc with waitSeconds");
        ch.attr(NettyTls.ANSWER_DUE).set(true);
        runFor(ch, 600);
        assertThat(ch.isOpen()).as("open through twelve timeouts of waiting").isTrue();

        ch.attr(NettyTls.ANSWER_DUE).set(null);
        ch.writeOutbound("answer");
        awaitClosed(ch);
    }

    @Test
    void zeroIsNoIdleTimeout() {
        EmbeddedChannel ch = connection(Duration.ZERO);
        ch.writeInbound("request");
        ch.writeOutbound("answer");
        ch.runPendingTasks();
        // nothing is scheduled that could close it: an idle check would be
        assertThat(ch.runScheduledPendingTasks()).as("delay of the next scheduled task, -1 for none").isEqualTo(-1);
        assertThat(ch.isOpen()).isTrue();
    }
}
