package io.unboundedcloud.playpen.camel;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One thread for work that may wait a few milliseconds but must never hold up its caller: the audit line's
 * {@code wireTap} (bean {@code auditWriter}). A thread pool wakes one of its threads for every task, and at one
 * request at a time that wake-up (the caller's signal, the thread's scheduling and its sleep again) costs more CPU
 * than writing the line. Here a task is queued without waking anyone while the thread is busy or about to look
 * again: it runs the queue every {@code interval} while work comes, and sleeps until the next task only after
 * {@code quiet} without any. So
 * <ul>
 * <li>a task after a quiet spell wakes the thread at once (a lone allocation's audit line is written right away);</li>
 * <li>under load the thread wakes once per {@code interval} and runs everything queued by then, in order;</li>
 * <li>{@code wakeAt} queued tasks wake it at once (a burst never waits a whole interval);</li>
 * <li>at {@code maxQueued} the caller runs the task itself, as it does once the executor is shut down: nothing is
 * dropped;</li>
 * <li>{@link #prompt()} makes every task wake the thread, for the operator's shutdown: the lines of the last
 * requests are written while the routes they go through still run.</li>
 * </ul>
 * Tasks run one after the other in the order they came; one that throws is logged and the next runs.
 */
public final class BatchingExecutor extends AbstractExecutorService implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(BatchingExecutor.class);

    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final AtomicInteger queued = new AtomicInteger();
    private final long intervalNanos;
    private final long quietNanos;
    private final int wakeAt;
    private final int maxQueued;
    private final Thread worker;
    /** The worker sleeps until the next task (not just until the next interval): a task must wake it. */
    private volatile boolean sleeping;
    private volatile boolean prompt;
    private volatile boolean shutdown;
    /** The worker has run its last queue: a task added from now on runs on its caller. */
    private volatile boolean exited;

    public BatchingExecutor(String threadName, long intervalMillis, long quietMillis, int wakeAt, int maxQueued) {
        if (intervalMillis <= 0 || quietMillis < 0 || wakeAt < 1 || maxQueued < wakeAt) {
            throw new IllegalArgumentException("interval > 0, quiet >= 0 and 1 <= wakeAt <= maxQueued, not "
                    + intervalMillis + ", " + quietMillis + ", " + wakeAt + ", " + maxQueued);
        }
        this.intervalNanos = TimeUnit.MILLISECONDS.toNanos(intervalMillis);
        this.quietNanos = TimeUnit.MILLISECONDS.toNanos(quietMillis);
        this.wakeAt = wakeAt;
        this.maxQueued = maxQueued;
        this.worker = new Thread(this::work, threadName);
        worker.setDaemon(true);
        worker.start();
    }

    @Override
    public void execute(Runnable task) {
        if (task == null) {
            throw new NullPointerException("task");
        }
        if (shutdown || queued.get() >= maxQueued) {
            runQuietly(task);
            return;
        }
        tasks.add(task);
        int n = queued.incrementAndGet();
        // the queue's add above and the worker's own write of sleeping are both volatile: either this sees it
        // sleeping, or the worker sees the task when it looks once more before it sleeps
        if (sleeping || prompt || n >= wakeAt || shutdown) {
            LockSupport.unpark(worker);
        }
        if (exited) {
            runQueued(); // shut down while this task was being added: the worker may never see it
        }
    }

    /** From now on every task wakes the thread at once (the operator is shutting down). */
    public void prompt() {
        prompt = true;
        LockSupport.unpark(worker);
    }

    private void work() {
        long lastTask = System.nanoTime() - quietNanos; // no task yet: the first one wakes it
        while (true) {
            if (runQueued() > 0) {
                lastTask = System.nanoTime();
            }
            if (shutdown && tasks.isEmpty()) {
                // a task added after the check above is run by this last look or by its caller (execute)
                exited = true;
                runQueued();
                return;
            }
            if (prompt || System.nanoTime() - lastTask < quietNanos) {
                LockSupport.parkNanos(this, intervalNanos);
                continue;
            }
            sleeping = true;
            if (tasks.isEmpty() && !shutdown) {
                LockSupport.park(this);
            }
            sleeping = false;
            lastTask = System.nanoTime();
        }
    }

    private int runQueued() {
        int ran = 0;
        for (Runnable task = tasks.poll(); task != null; task = tasks.poll()) {
            queued.decrementAndGet();
            runQuietly(task);
            ran++;
        }
        return ran;
    }

    private static void runQuietly(Runnable task) {
        try {
            task.run();
        } catch (RuntimeException | Error e) {
            LOG.warn("background task failed: {}", e.toString());
        }
    }

    /** Runs what is queued, then ends the thread; later tasks run on their caller. */
    @Override
    public void shutdown() {
        shutdown = true;
        LockSupport.unpark(worker);
    }

    /** Ends the thread after the task it runs; what was still queued is returned, not run. */
    @Override
    public List<Runnable> shutdownNow() {
        List<Runnable> left = new ArrayList<>();
        for (Runnable task = tasks.poll(); task != null; task = tasks.poll()) {
            queued.decrementAndGet();
            left.add(task);
        }
        shutdown();
        return left;
    }

    /** {@link #shutdown()}, then waits up to five seconds for what is queued to run. */
    @Override
    public void close() {
        shutdown();
        try {
            awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public boolean isShutdown() {
        return shutdown;
    }

    @Override
    public boolean isTerminated() {
        return shutdown && !worker.isAlive();
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
        worker.join(Math.max(1, unit.toMillis(timeout)));
        return !worker.isAlive();
    }
}
