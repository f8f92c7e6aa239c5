package io.unboundedcloud.playpen.bench;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Pattern;

import one.profiler.AsyncProfiler;
import one.profiler.Counter;

/**
 * Bytes allocated per allocation request and per replay, by thread: a figure that does not depend on how busy the
 * machine is, unlike the bench's timings. The operator runs in process against the mock API server with
 * {@code allocBytes.requests} (200) ready runner pods ({@link Bench.Env}); after {@code allocBytes.warmRounds} (6)
 * rounds of that many new allocations and replays at c=1 over the HTTPS front door, each of
 * {@code allocBytes.rounds} (3) rounds measures them apart, summing
 * {@link com.sun.management.ThreadMXBean#getThreadAllocatedBytes} over every thread before and after (each window
 * starts and ends with the JVM idle, the new allocations' Events written). Per round it prints bytes per request:
 * all threads, the operator's own (everything but the Vert.x event loops, which the mock API server, the operator's
 * API client and the bench's client share, the bench's main thread and the mock's watch thread) without its pool
 * passes, the Vert.x event loops, and the pool passes per pass. With {@code allocBytes.profile=true},
 * async-profiler's allocation samples of the measured windows go to {@code allocBytes.out}
 * ({@code target/alloc-bytes}) as collapsed stacks with their bytes, {@code alloc.collapsed} and
 * {@code replay.collapsed}. docs/performance.md says how to run it.
 */
public final class AllocBytes {
    /** Threads not the operator's own: shared event loops, the bench's and the mock API server's. */
    private static final Pattern NOT_OPERATOR = Pattern.compile("vert\\.x-eventloop-thread-.*|vertx-.*|main|mock-.*");
    private static final Pattern VERTX = Pattern.compile("vert\\.x-eventloop-thread-.*");

    private AllocBytes() {
    }

    public static void main(String[] args) throws Exception {
        int n = Integer.getInteger("allocBytes.requests", 200);
        int warmRounds = Integer.getInteger("allocBytes.warmRounds", 6);
        int rounds = Integer.getInteger("allocBytes.rounds", 3);
        boolean profile = Boolean.getBoolean("allocBytes.profile");
        Path out = Path.of(System.getProperty("allocBytes.out", "target/alloc-bytes"));
        Bench bench = new Bench();
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        AsyncProfiler profiler = profile ? AsyncProfiler.getInstance() : null;
        Map<String, Long> allocStacks = new HashMap<>();
        Map<String, Long> replayStacks = new HashMap<>();
        try (Bench.Env e = Bench.Env.open(bench, n)) {
            e.https.connect(1, w -> e.op.port);
            int index = 0;
            for (int r = 0; r < warmRounds; r++) {
                allocate(e, index, n, true);
                allocate(e, index, n, false);
                index += n;
                bench.release(e);
            }
            for (int r = 0; r < rounds; r++) {
                Bench.quiet();
                long passes = e.op.app.poolReconciler().passes();
                Map<Long, Long> t0 = allocated(mx);
                start(profiler);
                allocate(e, index, n, true);
                Bench.quiet();
                stop(profiler, allocStacks);
                passes = e.op.app.poolReconciler().passes() - passes;
                Map<Long, Long> t1 = allocated(mx);
                start(profiler);
                allocate(e, index, n, false);
                Bench.quiet();
                stop(profiler, replayStacks);
                Map<Long, Long> t2 = allocated(mx);
                index += n;
                System.out.println("round " + r + " new allocations: " + perRequest(t0, t1, n, passes, mx));
                System.out.println("round " + r + " replays: " + perRequest(t1, t2, n, 0, mx));
                bench.release(e);
            }
        }
        if (profiler != null) {
            Files.createDirectories(out);
            write(out.resolve("alloc.collapsed"), allocStacks);
            write(out.resolve("replay.collapsed"), replayStacks);
            System.out.println("collapsed allocation stacks (bytes) in " + out);
        }
        System.exit(0);
    }

    /** Requests {@code first} to {@code first + n - 1} at c=1; new claims: until their Allocated events are written. */
    private static void allocate(Bench.Env e, int first, int n, boolean newClaims) throws Exception {
        long events = Bench.eventsSettled(e) + (newClaims ? n : 0);
        for (int i = 0; i < n; i++) {
            Bench.send(e, first + i, 0);
        }
        Bench.await(() -> Bench.eventsSettled(e) >= events, Duration.ofSeconds(30), "Allocated events written");
    }

    private static void start(AsyncProfiler profiler) throws Exception {
        if (profiler != null) {
            profiler.execute("start,event=alloc,alloc=16k,threads");
        }
    }

    private static void stop(AsyncProfiler profiler, Map<String, Long> stacks) throws Exception {
        if (profiler != null) {
            profiler.execute("stop");
            ScenarioProfile.add(profiler.dumpCollapsed(Counter.TOTAL), stacks);
        }
    }

    private static Map<Long, Long> allocated(com.sun.management.ThreadMXBean mx) {
        long[] ids = mx.getAllThreadIds();
        long[] bytes = mx.getThreadAllocatedBytes(ids);
        Map<Long, Long> m = new HashMap<>();
        for (int i = 0; i < ids.length; i++) {
            m.put(ids[i], bytes[i]);
        }
        return m;
    }

    /** Bytes per request between two readings, by part (threads alive at both; a thread started between counts whole). */
    private static String perRequest(Map<Long, Long> before, Map<Long, Long> after, int n, long passes,
            com.sun.management.ThreadMXBean mx) {
        Map<String, Long> byThread = new java.util.TreeMap<>();
        long all = 0;
        long operator = 0;
        long vertx = 0;
        long pool = 0;
        for (Map.Entry<Long, Long> t : after.entrySet()) {
            long bytes = t.getValue() - before.getOrDefault(t.getKey(), 0L);
            var info = mx.getThreadInfo(t.getKey());
            if (bytes <= 0 || info == null) {
                continue;
            }
            String name = info.getThreadName();
            byThread.merge(name.replaceAll("\\d+", "#"), bytes, Long::sum);
            all += bytes;
            if (name.equals("pool-refill")) {
                pool += bytes;
            } else if (VERTX.matcher(name).matches()) {
                vertx += bytes;
            } else if (!NOT_OPERATOR.matcher(name).matches()) {
                operator += bytes;
            }
        }
        StringBuilder threads = new StringBuilder();
        byThread.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed())
                .filter(t -> t.getValue() >= n).forEach(t -> threads.append("\n    ").append(t.getValue() / n)
                        .append(" B ").append(t.getKey()));
        return "all threads " + all / n + " B, the operator's " + operator / n + " B, Vert.x event loops " + vertx / n
                + " B" + (passes > 0 ? "; pool passes " + passes + ", " + pool / passes + " B each" : "") + threads;
    }

    private static void write(Path file, Map<String, Long> stacks) throws Exception {
        StringBuilder sb = new StringBuilder();
        stacks.forEach((stack, bytes) -> sb.append(stack).append(' ').append(bytes).append('\n'));
        Files.writeString(file, sb);
    }
}
