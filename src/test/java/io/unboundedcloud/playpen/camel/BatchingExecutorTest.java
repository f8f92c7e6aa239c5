package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The audit writer's executor: one thread, tasks in order, a task after a quiet spell runs at once, tasks under
 * load wait for the next look, a burst wakes it, and nothing is dropped (a full queue or a shut down executor runs
 * the task on its caller). Intervals here are ten minutes, so "at once" cannot be the interval passing.
 */
class BatchingExecutorTest {
    private static final long TEN_MINUTES = TimeUnit.MINUTES.toMillis(10);
    private final List<BatchingExecutor> writers = new CopyOnWriteArrayList<>();

    private BatchingExecutor writer(String thread, long intervalMillis, long quietMillis, int wakeAt, int maxQueued) {
        BatchingExecutor x = new BatchingExecutor(thread, intervalMillis, quietMillis, wakeAt, maxQueued);
        writers.add(x);
        return x;
    }

    @AfterEach
    void stopTheWriters() {
        writers.forEach(BatchingExecutor::shutdownNow);
    }

    @Test
    void aTaskAfterAQuietSpellRunsAtOnceOnTheWritersThread() throws Exception {
        BatchingExecutor x = writer("writer-under-test", TEN_MINUTES, 0, 100, 1000);
        for (int i = 0; i < 3; i++) {
            CountDownLatch ran = new CountDownLatch(1);
            List<String> threads = new CopyOnWriteArrayList<>();
            x.execute(() -> {
                threads.add(Thread.currentThread().getName());
                ran.countDown();
            });
            assertThat(ran.await(30, TimeUnit.SECONDS)).as("task %d", i).isTrue();
            assertThat(threads).containsExactly("writer-under-test");
        }
    }

    @Test
    void underLoadTasksWaitForTheNextLookAndRunInOrder() throws Exception {
        // quiet spell of ten minutes: after the first task the writer looks again only every ten minutes
        BatchingExecutor x = writer("writer-under-load", TEN_MINUTES, TEN_MINUTES, 100, 1000);
        firstTaskRunsAtOnce(x, "writer-under-load");
        List<Integer> order = new CopyOnWriteArrayList<>();
        CountDownLatch rest = new CountDownLatch(50);
        for (int i = 1; i <= 50; i++) {
            int n = i;
            x.execute(() -> {
                order.add(n);
                rest.countDown();
            });
        }
        assertThat(rest.await(300, TimeUnit.MILLISECONDS)).as("no wake-up per task").isFalse();
        assertThat(order).isEmpty();
        // prompt (the operator's shutdown) wakes the writer for what is queued and every later task
        x.prompt();
        assertThat(rest.await(30, TimeUnit.SECONDS)).isTrue();
        CountDownLatch later = new CountDownLatch(1);
        x.execute(later::countDown);
        assertThat(later.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(order).hasSize(50).isSorted();
    }

    @Test
    void aBurstWakesTheWriterWithoutWaitingForTheInterval() throws Exception {
        BatchingExecutor x = writer("writer-in-a-burst", TEN_MINUTES, TEN_MINUTES, 10, 1000);
        firstTaskRunsAtOnce(x, "writer-in-a-burst");
        CountDownLatch burst = new CountDownLatch(10);
        for (int i = 0; i < 9; i++) {
            x.execute(burst::countDown);
        }
        assertThat(burst.await(300, TimeUnit.MILLISECONDS)).isFalse();
        x.execute(burst::countDown); // the tenth queued task
        assertThat(burst.await(30, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void aFullQueueRunsTheTaskOnItsCaller() throws Exception {
        BatchingExecutor x = writer("writer-full", TEN_MINUTES, TEN_MINUTES, 5, 5);
        firstTaskRunsAtOnce(x, "writer-full");
        // keep the writer busy so that the queue stays full
        x.prompt();
        CountDownLatch hold = occupy(x);
        List<String> threads = new CopyOnWriteArrayList<>();
        for (int i = 0; i < 6; i++) {
            x.execute(() -> threads.add(Thread.currentThread().getName()));
        }
        // five queued behind the busy writer, the sixth ran here
        assertThat(threads).containsExactly(Thread.currentThread().getName());
        hold.countDown();
        x.shutdown();
        assertThat(x.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
        assertThat(threads).hasSize(6).containsOnly(Thread.currentThread().getName(), "writer-full");
    }

    @Test
    void shutdownRunsWhatIsQueuedThenLaterTasksRunOnTheirCaller() throws Exception {
        BatchingExecutor x = writer("writer-shut-down", TEN_MINUTES, TEN_MINUTES, 100, 1000);
        firstTaskRunsAtOnce(x, "writer-shut-down");
        List<Integer> ran = new CopyOnWriteArrayList<>();
        for (int i = 0; i < 20; i++) {
            int n = i;
            x.execute(() -> ran.add(n));
        }
        assertThat(x.isShutdown()).isFalse();
        x.shutdown();
        assertThat(x.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
        assertThat(x.isTerminated()).isTrue();
        assertThat(ran).hasSize(20).isSorted();
        assertThat(x.isShutdown()).isTrue();
        List<String> after = new CopyOnWriteArrayList<>();
        x.execute(() -> after.add(Thread.currentThread().getName()));
        assertThat(after).containsExactly(Thread.currentThread().getName());
    }

    @Test
    void shutdownNowReturnsWhatWasQueuedAndAFailingTaskDoesNotStopTheWriter() throws Exception {
        BatchingExecutor x = writer("writer-under-test", TEN_MINUTES, TEN_MINUTES, 100, 1000);
        CountDownLatch first = new CountDownLatch(2);
        x.execute(() -> {
            first.countDown();
            throw new IllegalStateException("a task that fails");
        });
        assertThat(first.await(200, TimeUnit.MILLISECONDS)).isFalse();
        x.execute(first::countDown);
        x.prompt();
        assertThat(first.await(30, TimeUnit.SECONDS)).as("the task after the failing one ran").isTrue();
        CountDownLatch hold = occupy(x);
        Runnable queued = () -> { };
        x.execute(queued);
        assertThat(x.shutdownNow()).containsExactly(queued);
        // shut down, but the task it runs is not done: not terminated, and a wait for it times out
        assertThat(x.isShutdown()).isTrue();
        assertThat(x.isTerminated()).isFalse();
        assertThat(x.awaitTermination(50, TimeUnit.MILLISECONDS)).isFalse();
        hold.countDown();
        assertThat(x.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
        assertThat(x.isTerminated()).isTrue();
    }

    @Test
    void settingsOutOfRangeAreRefused() {
        assertThatThrownBy(() -> new BatchingExecutor("w", 0, 0, 1, 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new BatchingExecutor("w", 1, -1, 1, 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new BatchingExecutor("w", 1, 0, 0, 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new BatchingExecutor("w", 1, 0, 2, 1)).isInstanceOf(IllegalArgumentException.class);
        BatchingExecutor ok = writer("w", 1, 0, 1, 1);
        assertThatThrownBy(() -> ok.execute(null)).isInstanceOf(NullPointerException.class);
    }

    /** A task after the quiet spell runs at once; then the writer waits for its next look. */
    private static void firstTaskRunsAtOnce(BatchingExecutor x, String thread) throws InterruptedException {
        CountDownLatch first = new CountDownLatch(1);
        AtomicBoolean daemon = new AtomicBoolean();
        x.execute(() -> {
            daemon.set(Thread.currentThread().isDaemon());
            first.countDown();
        });
        assertThat(first.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(daemon).as("the writer never keeps the JVM from exiting").isTrue();
        awaitWaitingForItsNextLook(thread);
    }

    /** Keeps the writer busy with a task until the latch returned is counted down (the executor must be prompt). */
    private static CountDownLatch occupy(BatchingExecutor x) throws InterruptedException {
        CountDownLatch hold = new CountDownLatch(1);
        CountDownLatch holding = new CountDownLatch(1);
        x.execute(() -> {
            holding.countDown();
            awaitQuietly(hold);
        });
        assertThat(holding.await(30, TimeUnit.SECONDS)).isTrue();
        return hold;
    }

    /** Until the writer's thread waits with a timeout: it has run what it had and waits for its next look. */
    private static void awaitWaitingForItsNextLook(String thread) throws InterruptedException {
        for (int i = 0; i < 30_000; i++) {
            for (Thread t : Thread.getAllStackTraces().keySet()) {
                if (t.getName().equals(thread) && t.getState() == Thread.State.TIMED_WAITING) {
                    return;
                }
            }
            Thread.sleep(1);
        }
        throw new AssertionError(thread + " never waited for its next look");
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
