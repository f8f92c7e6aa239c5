package io.unboundedcloud.playpen.bench;

import java.io.IOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

import one.profiler.AsyncProfiler;
import one.profiler.Counter;

/**
 * Where one scenario's CPU goes: async-profiler (its library ships in the bench jar) samples the bench JVM while
 * that scenario's measured requests run, and only then (the warm-up and the release of claimed pods between batches
 * are left out). Per pool size, scenario and concurrency:
 * <ul>
 * <li>a file of collapsed stacks ({@code profile-n200-c1-alloc-https.collapsed}; one line per stack with its thread
 * first, flame graph tools read it), summed over every batch and round;</li>
 * <li>CPU microseconds per measured request by side ({@link #side}): the operator, the simulated API server, the
 * bench's clients, fabric8's client, the JVM (JIT, GC), and what no frame attributes (socket I/O on shared event
 * loops);</li>
 * <li>the same by thread, numbers in thread names folded (a pool is one line).</li>
 * </ul>
 * This JVM holds all three sides, so its CPU per request is what one request costs on this machine, all in.
 *
 * <p>{@code bench.profile} names the event: {@code cpu} (CPU time; perf events) or {@code itimer} where perf events
 * are not allowed; one sample per millisecond of CPU. {@code bench.profileConcurrency} (default 1) picks the
 * concurrencies. A profiled run is slower: its figures show where the CPU goes, not the targets. At c=1 the samples
 * add up to the process's CPU time; at high concurrency on a virtual machine (software clock events only) they
 * fall short of it, so read the shares there, not the microseconds.
 */
final class ScenarioProfile {
    /** The sampling interval of CPU time, in nanoseconds: one sample per millisecond of CPU perturbs little. */
    static final long INTERVAL_NANOS = 1_000_000;

    private final String event;
    private final Path out;
    private AsyncProfiler profiler;

    ScenarioProfile(String event, Path out) {
        this.event = event;
        this.out = out;
    }

    /** Whether the requests of this concurrency are profiled. */
    static boolean wanted(String event, int[] concurrencies, int c) {
        return event != null && !event.isBlank() && java.util.Arrays.stream(concurrencies).anyMatch(x -> x == c);
    }

    /** Starts sampling afresh (the last batch's samples were taken by {@link #stop}). */
    void start() throws IOException {
        if (profiler == null) {
            profiler = AsyncProfiler.getInstance();
        }
        profiler.execute("start,event=" + event + ",interval=" + INTERVAL_NANOS + ",threads");
    }

    /** Stops sampling and adds this batch's samples to {@code stacks} (collapsed stack to samples). */
    void stop(Map<String, Long> stacks) throws IOException {
        profiler.execute("stop");
        add(profiler.dumpCollapsed(Counter.SAMPLES), stacks);
    }

    /** Writes the scenario's stacks, collapsed, to its file under the bench's output directory. */
    Path write(String scenario, int pods, int c, Map<String, Long> stacks) throws IOException {
        Path file = out.resolve("profile-n" + pods + "-c" + c + "-" + scenario + ".collapsed");
        try (Writer w = Files.newBufferedWriter(file)) {
            for (Map.Entry<String, Long> e : stacks.entrySet()) {
                w.write(e.getKey() + " " + e.getValue() + "\n");
            }
        }
        return file;
    }

    /** Adds async-profiler's collapsed output (a stack, a space, its samples, per line) to {@code into}. */
    static void add(String collapsed, Map<String, Long> into) {
        for (String line : collapsed.split("\n")) {
            int space = line.lastIndexOf(' ');
            if (space <= 0) {
                continue;
            }
            into.merge(line.substring(0, space), Long.parseLong(line.substring(space + 1).trim()), Long::sum);
        }
    }

    /** The thread of a collapsed stack (its first frame, {@code [name tid=N]}), numbers folded: a pool is one name. */
    static String thread(String stack) {
        int semi = stack.indexOf(';');
        String first = semi < 0 ? stack : stack.substring(0, semi);
        if (first.startsWith("[") && first.endsWith("]")) {
            first = first.substring(1, first.length() - 1).replaceFirst(" tid=\\d+$", "");
        }
        return first.replaceAll("\\d+", "#");
    }

    /**
     * Which side of the measurement a stack's CPU belongs to, by its frames first (event loops and pools are shared
     * by the three sides), then by its thread: {@code operator}, {@code api-server} (the simulated one),
     * {@code clients} (the bench's), {@code kubernetes-client} (fabric8's client outside the operator's own frames:
     * the operator's on alloc and replay, the bench's on the bare PATCH and GET), {@code jvm} (JIT compilers, GC, VM
     * threads) or {@code unattributed}.
     */
    static String side(String stack) {
        if (stack.contains("io/fabric8/mockwebserver/") || stack.contains("io/fabric8/kubernetes/client/server/mock/")) {
            return "api-server";
        }
        if (stack.contains("io/unboundedcloud/playpen/bench/")) {
            return "clients";
        }
        if (stack.contains("io/unboundedcloud/playpen/") || stack.contains("org/apache/camel/")) {
            return "operator";
        }
        if (stack.contains("io/fabric8/kubernetes/client/")) {
            return "kubernetes-client";
        }
        String t = thread(stack);
        if (t.startsWith("Camel") || t.equals("pod-cache-events") || t.equals("pool-refill") || t.equals("event-recorder")) {
            return "operator";
        }
        if (t.contains("Compiler") || t.startsWith("GC ") || t.startsWith("G# ") || t.startsWith("VM ")
                || t.equals("Sweeper thread")) {
            return "jvm";
        }
        return "unattributed";
    }

    /**
     * CPU microseconds per request: all of it first, then by side ({@link #side}), then by thread, each the largest
     * first.
     */
    static Map<String, Object> perRequest(Map<String, Long> stacks, long requests) {
        Map<String, Long> bySide = new HashMap<>();
        Map<String, Long> byThread = new HashMap<>();
        long total = 0;
        for (Map.Entry<String, Long> e : stacks.entrySet()) {
            total += e.getValue();
            bySide.merge(side(e.getKey()), e.getValue(), Long::sum);
            byThread.merge(thread(e.getKey()), e.getValue(), Long::sum);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("all", micros(total, requests));
        out.put("bySide", largestFirst(bySide, requests));
        out.put("byThread", largestFirst(byThread, requests));
        return out;
    }

    private static Map<String, Double> largestFirst(Map<String, Long> samples, long requests) {
        Map<String, Double> out = new LinkedHashMap<>();
        samples.entrySet().stream()
                .sorted(Map.Entry.<String, Long>comparingByValue().reversed())
                .forEach(e -> out.put(e.getKey(), micros(e.getValue(), requests)));
        return out;
    }

    private static Double micros(long samples, long requests) {
        return Stats.round(samples * (INTERVAL_NANOS / 1000.0) / Math.max(1, requests));
    }
}
