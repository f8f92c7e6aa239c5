package io.unboundedcloud.playpen.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * This JVM's CPU time, precise to the nanosecond, split into the JIT compiler's and the rest. The process CPU
 * clock Java offers counts in 10 ms ticks on Linux, which over a batch of a few milliseconds (the TLS floor at
 * c=64 answers 200 requests in 10 to 30 ms) reads nothing or a whole tick. On Linux each thread's run time comes
 * from {@code /proc/self/task/<tid>/schedstat} instead (GC and compiler threads included; the compiler's known by
 * its thread name). A thread that ends between two readings takes its time with it, so the bench's own workers
 * report theirs as they end ({@link Span#ended}); elsewhere the process clock and the compiler's time serve.
 */
final class CpuClock {
    private static final Path TASKS = Path.of("/proc/self/task");
    private static final boolean PER_THREAD = Files.isReadable(TASKS.resolve(String.valueOf(selfTidOr(-1)))
            .resolve("schedstat"));

    private CpuClock() {
    }

    /** A span measured from {@link #start()}: the threads' run times then, and what ending threads reported. */
    static final class Span {
        private final Map<Integer, Long> start;
        private final long processStart;
        private final long jitStart;
        private final int reader;
        private final Map<Integer, Long> ended = new java.util.concurrent.ConcurrentHashMap<>();

        private Span(Map<Integer, Long> start, long processStart, long jitStart, int reader) {
            this.start = start;
            this.processStart = processStart;
            this.jitStart = jitStart;
            this.reader = reader;
        }

        /** Called by a thread about to end within the span: its run time so far goes into the span. */
        void ended() {
            int tid = selfTidOr(-1);
            long run = tid < 0 ? -1 : runNanos(TASKS.resolve(String.valueOf(tid)));
            if (run >= 0) {
                ended.put(tid, run);
            }
        }

        /** {CPU besides the compiler's, the compiler's} since {@link #start()}, in nanoseconds; -1 if unreadable. */
        long[] stop() {
            if (start == null) {
                long process = processCpuNanos();
                long jit = Math.max(0, jitNanos() - jitStart);
                return process < 0 || processStart < 0 ? new long[] {-1, jit} : new long[] {process - processStart - jit, jit};
            }
            Map<Integer, Long> end = runTimes(reader);
            long cpu = 0;
            long jit = 0;
            for (Map.Entry<Integer, Long> e : end.entrySet()) {
                long delta = e.getValue() - start.getOrDefault(e.getKey(), 0L);
                if (delta == 0) {
                    continue; // idle all along: no need to know what it is
                }
                if (isCompilerThread(name(e.getKey()))) {
                    jit += delta;
                } else {
                    cpu += delta;
                }
            }
            for (Map.Entry<Integer, Long> e : ended.entrySet()) {
                if (!end.containsKey(e.getKey())) {
                    cpu += e.getValue() - start.getOrDefault(e.getKey(), 0L);
                }
            }
            return new long[] {cpu, jit};
        }
    }

    /** Whether the threads' own run times are read (Linux), rather than the process clock. */
    static boolean perThread() {
        return PER_THREAD;
    }

    /** Starts a span now. The calling thread is left out of it (it reads the clocks and waits). */
    static Span start() {
        if (!PER_THREAD) {
            return new Span(null, processCpuNanos(), jitNanos(), -1);
        }
        int reader = selfTidOr(-1);
        return new Span(runTimes(reader), -1, 0, reader);
    }

    /** Each thread's run time by its id, but for {@code leaveOut}. */
    private static Map<Integer, Long> runTimes(int leaveOut) {
        Map<Integer, Long> m = new HashMap<>();
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(TASKS)) {
            for (Path task : tasks) {
                int tid = Integer.parseInt(task.getFileName().toString());
                if (tid == leaveOut) {
                    continue;
                }
                long run = runNanos(task);
                if (run >= 0) {
                    m.put(tid, run);
                }
            }
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return m;
    }

    /** The first field of a task's schedstat: nanoseconds on a CPU; -1 once the thread has gone. */
    static long runNanos(Path task) {
        try {
            String s = Files.readString(task.resolve("schedstat"));
            int space = s.indexOf(' ');
            return Long.parseLong(space < 0 ? s.trim() : s.substring(0, space));
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
    }

    /** A thread's name as the kernel keeps it (its first 15 characters); empty once the thread has gone. */
    private static String name(int tid) {
        try {
            return Files.readString(TASKS.resolve(String.valueOf(tid)).resolve("comm")).trim();
        } catch (IOException e) {
            return "";
        }
    }

    /** A HotSpot JIT compiler thread ("C1 CompilerThread0", cut by the kernel to "C1 CompilerThre"). */
    static boolean isCompilerThread(String name) {
        return name.contains("CompilerThre");
    }

    /** The calling thread's id in the kernel, or {@code otherwise} where there is no {@code /proc/thread-self}. */
    static int selfTidOr(int otherwise) {
        try {
            return Integer.parseInt(Path.of("/proc/thread-self").toRealPath().getFileName().toString());
        } catch (IOException | RuntimeException e) {
            return otherwise;
        }
    }

    /** The JIT compiler's time so far in this JVM, in nanoseconds (0 where it is not measured). */
    static long jitNanos() {
        java.lang.management.CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() * 1_000_000L : 0;
    }

    /** This JVM's CPU time so far by the process clock, in nanoseconds, or -1 where the platform does not say. */
    static long processCpuNanos() {
        return ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os
                ? os.getProcessCpuTime() : -1;
    }
}
