package io.unboundedcloud.playpen.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The threads' own run times, read where the kernel lists them (Linux); elsewhere the process clock serves. */
class CpuClockTest {
    @BeforeEach
    void linuxOnly() {
        Assumptions.assumeTrue(CpuClock.perThread(), "no /proc/self/task here");
    }

    /** Spins until this thread has used {@code nanos} of CPU (its own clock); returns what it used. */
    private static long spin(long nanos) {
        var threads = ManagementFactory.getThreadMXBean();
        long t0 = threads.getCurrentThreadCpuTime();
        long x = 0;
        while (threads.getCurrentThreadCpuTime() - t0 < nanos) {
            x += System.nanoTime() % 3;
        }
        assertThat(x).isNotNegative();
        return threads.getCurrentThreadCpuTime() - t0;
    }

    @Test
    void aThreadThatEndsWithinTheSpanCountsWhatItReported() throws Exception {
        CpuClock.Span span = CpuClock.start();
        long[] used = new long[1];
        Thread t = new Thread(() -> {
            used[0] = spin(80_000_000L);
            span.ended();
        });
        t.start();
        t.join();

        long counted = span.stop()[0];

        // the thread has gone: only what it reported as it ended can say what it used
        assertThat(counted).isGreaterThanOrEqualTo(used[0] * 9 / 10);
    }

    @Test
    void theThreadReadingTheClockIsLeftOut() {
        var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long process0 = os.getProcessCpuTime();
        CpuClock.Span span = CpuClock.start();
        long own = spin(150_000_000L);

        long[] spanCpu = span.stop();
        long counted = spanCpu[0];
        long others = os.getProcessCpuTime() - process0 - own - spanCpu[1];

        // the calling thread's 150 ms are not the span's: besides the compiler's, it counts at most what the JVM's
        // other threads used around it (the collector, threads earlier tests left), which the process clock measures
        // less the compiler's, and far less than it would with the caller's 150 ms in it
        assertThat(counted).isLessThan(Math.max(others, 0) + own / 2);
    }

    @Test
    void aBusyThreadAliveAtBothEndsIsCounted() throws Exception {
        java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch spun = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch end = new java.util.concurrent.CountDownLatch(1);
        long[] used = new long[1];
        Thread t = new Thread(() -> {
            try {
                go.await();
                used[0] = spin(80_000_000L);
                spun.countDown();
                end.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        t.start();
        CpuClock.Span span = CpuClock.start();
        go.countDown();
        spun.await();

        long counted = span.stop()[0];
        end.countDown();
        t.join();

        assertThat(counted).isGreaterThanOrEqualTo(used[0] * 9 / 10);
    }
}
