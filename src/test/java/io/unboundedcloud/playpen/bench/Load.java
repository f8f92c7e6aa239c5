package io.unboundedcloud.playpen.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Closed-loop load: {@code concurrency} worker threads take request indexes from a shared counter until
 * {@code count} are done; each request is timed on its own thread. Workers are numbered so a scenario can
 * give each its own keep-alive connection.
 */
final class Load {
    private Load() {
    }

    /** One request; returns normally on success and throws on failure. */
    @FunctionalInterface
    interface Op {
        void run(int index, int worker) throws Exception;
    }

    /**
     * Samples of the successful requests, the wall time of the whole batch, failures and the first failure;
     * {@code cpuNanos}: this JVM's CPU over the same span as {@code wallNanos}, the JIT compiler's excepted
     * ({@code jitNanos}, the compiler threads' over that span); -1 where it cannot be read ({@link CpuClock}).
     */
    record Batch(long[] nanos, long wallNanos, long cpuNanos, long jitNanos, int errors, Throwable firstError) {
    }

    static Batch run(int count, int concurrency, int firstIndex, Op op) throws InterruptedException {
        long[] samples = new long[count];
        boolean[] ok = new boolean[count];
        AtomicInteger next = new AtomicInteger();
        AtomicInteger errors = new AtomicInteger();
        AtomicReference<Throwable> first = new AtomicReference<>();
        CountDownLatch ready = new CountDownLatch(concurrency);
        CountDownLatch go = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(concurrency);
        AtomicReference<CpuClock.Span> cpu = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < concurrency; w++) {
            int worker = w;
            Thread t = new Thread(() -> {
                ready.countDown();
                try {
                    go.await();
                    for (int i = next.getAndIncrement(); i < count; i = next.getAndIncrement()) {
                        long t0 = System.nanoTime();
                        try {
                            op.run(firstIndex + i, worker);
                            samples[i] = System.nanoTime() - t0;
                            ok[i] = true;
                        } catch (Exception | AssertionError e) {
                            errors.incrementAndGet();
                            first.compareAndSet(null, e);
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    CpuClock.Span span = cpu.get();
                    if (span != null) {
                        span.ended();
                    }
                    done.countDown();
                }
            }, "bench-worker-" + w);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        ready.await();
        cpu.set(CpuClock.start());
        long start = System.nanoTime();
        go.countDown();
        done.await();
        long wall = System.nanoTime() - start;
        long[] used = cpu.get().stop();
        int good = 0;
        for (boolean b : ok) {
            if (b) {
                good++;
            }
        }
        long[] out = new long[good];
        int j = 0;
        for (int i = 0; i < count; i++) {
            if (ok[i]) {
                out[j++] = samples[i];
            }
        }
        return new Batch(out, wall, used[0], used[1], errors.get(), first.get());
    }
}
