package io.unboundedcloud.playpen.bench;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.unboundedcloud.playpen.support.OperatorHarness;

/**
 * The packaged jar as its own process against the mock API (through a kubeconfig), so its memory is the
 * operator's alone: startup to ready by polling /readyz, VmRSS from /proc, heap from {@code jcmd GC.heap_info}.
 */
final class OperatorProcess implements AutoCloseable {
    final Process process;
    final int port;
    final long startNanos;
    final Path log;

    private OperatorProcess(Process process, int port, long startNanos, Path log) {
        this.process = process;
        this.port = port;
        this.startNanos = startNanos;
        this.log = log;
    }

    /** Starts {@code java <jvmArgs> -jar jar <flags>} with a kubeconfig for {@code apiUrl}; output goes to {@code log}. */
    static OperatorProcess start(Path jar, String apiUrl, Path workDir, List<String> jvmArgs, List<String> flags, Path log)
            throws IOException {
        Path kubeconfig = workDir.resolve("mock-kubeconfig.yaml");
        Files.writeString(kubeconfig, """
                apiVersion: v1
                kind: Config
                clusters:
                - name: mock
                  cluster:
                    server: %s
                    insecure-skip-tls-verify: true
                contexts:
                - name: mock
                  context:
                    cluster: mock
                    user: bench
                    namespace: playpen
                current-context: mock
                users:
                - name: bench
                  user:
                    token: bench
                """.formatted(apiUrl.replaceAll("/$", "")));
        int port = OperatorHarness.freePort();
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(jvmArgs);
        cmd.add("-jar");
        cmd.add(jar.toString());
        cmd.add("--kubeconfig=" + kubeconfig);
        cmd.add("--listen-addr=127.0.0.1:" + port);
        cmd.add("--management-addr=");
        // leader election stays on, as the image runs it: with several replicas only the Lease holder runs the pool
        // passes, TTL expiry and certificate work (with it off, every replica would, and replicas would cost that
        // work once each)
        cmd.addAll(flags);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().remove("KUBECONFIG");
        long t0 = System.nanoTime();
        Process p = pb.start();
        return new OperatorProcess(p, port, t0, log);
    }

    /** Polls /readyz until 204; returns the time from process start in milliseconds. */
    double awaitReadyMs(HttpClient http, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        HttpRequest req = HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + port + "/readyz"))
                .timeout(Duration.ofSeconds(2)).GET().build();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("operator process exited with " + process.exitValue() + "; see " + log);
            }
            try {
                HttpResponse<String> r = http.send(req, HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 204) {
                    return (System.nanoTime() - startNanos) / 1e6;
                }
            } catch (IOException e) {
                // not listening yet
            }
            Thread.sleep(10);
        }
        throw new IllegalStateException("operator process not ready within " + timeout + "; see " + log);
    }

    /** Whether this process holds the leader Lease now, from the last leadership line of its log. */
    boolean leads() {
        try {
            return leadsIn(Files.readString(log));
        } catch (IOException e) {
            return false;
        }
    }

    /** Whether an operator log says that it holds the Lease: its last leadership line says acquired. */
    static boolean leadsIn(String log) {
        int acquired = log.lastIndexOf("leadership acquired");
        return acquired >= 0 && acquired > log.lastIndexOf("leadership lost");
    }

    /**
     * Waits until one of {@code procs} holds the leader Lease (a Lease left by an earlier process that did not
     * release it runs out within its duration) and returns its index.
     */
    static int awaitLeader(List<OperatorProcess> procs, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            for (int i = 0; i < procs.size(); i++) {
                if (procs.get(i).leads()) {
                    return i;
                }
            }
            Thread.sleep(50);
        }
        throw new IllegalStateException("no replica acquired the leader Lease within " + timeout + "; see "
                + procs.get(0).log);
    }

    /** A /proc/<pid>/status field in KiB (VmRSS, VmHWM), -1 when unavailable. */
    long statusKb(String field) {
        return procStatusKb(Path.of("/proc", String.valueOf(process.pid()), "status"), field);
    }

    static long procStatusKb(Path status, String field) {
        try {
            for (String line : Files.readAllLines(status)) {
                if (line.startsWith(field + ":")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
        return -1;
    }

    /** Heap used and committed in KiB from {@code jcmd <pid> GC.heap_info}, or nulls when jcmd is unavailable. */
    long[] heapKb() {
        String out = jcmd("GC.heap_info");
        // G1 prints one "garbage-first heap total …K, used …K" line; Serial and Parallel one per generation
        Matcher m = Pattern.compile("total (\\d+)K, used (\\d+)K").matcher(out);
        long used = 0;
        long total = 0;
        boolean found = false;
        while (m.find()) {
            found = true;
            total += Long.parseLong(m.group(1));
            used += Long.parseLong(m.group(2));
        }
        return found ? new long[] {used, total} : null;
    }

    /**
     * The live heap in KiB from the output of {@code jcmd <pid> GC.class_histogram} (its {@code Total} line; -1 when
     * there is none, as when jcmd is unavailable): the histogram collects the whole heap first and then counts only
     * what is still reachable, in the same safepoint. The heap read after a separate {@code GC.run} also holds
     * whatever the process allocated between the two commands (half a second, in which a busy operator can allocate
     * tens of MiB).
     */
    static long histogramTotalKb(String histogram) {
        Matcher m = Pattern.compile("(?m)^Total\\s+\\d+\\s+(\\d+)\\s*$").matcher(histogram);
        return m.find() ? Long.parseLong(m.group(1)) / 1024 : -1;
    }

    /**
     * Class histograms in a row ({@link #leastHistogram}): the serial collector's full collection leaves up to 5% of
     * the old generation's dead objects where they lie, filled in as int arrays that a class histogram counts like
     * live ones, except every fourth collection ({@code -XX:MarkSweepAlwaysCompactCount}, 4), which compacts all.
     */
    static final int HISTOGRAMS = 4;

    /**
     * Of {@link #HISTOGRAMS} class histograms taken in a row (each after its own full collection), the one with the
     * least total: the live set without the dead objects a collection may leave in place, and without what the
     * process allocated between two of them. Empty when jcmd could read none.
     */
    String leastHistogram() {
        List<String> histograms = new ArrayList<>();
        for (int i = 0; i < HISTOGRAMS; i++) {
            histograms.add(jcmd("GC.class_histogram"));
        }
        return least(histograms);
    }

    /** Of {@code histograms}, the one whose total is least (empty when none has a total). */
    static String least(List<String> histograms) {
        String least = "";
        long leastKb = Long.MAX_VALUE;
        for (String h : histograms) {
            long kb = histogramTotalKb(h); // each total read once: a histogram is hundreds of KiB of text
            if (kb >= 0 && kb < leastKb) {
                least = h;
                leastKb = kb;
            }
        }
        return least;
    }

    String jcmd(String command) {
        Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
        try {
            Process p = new ProcessBuilder(jcmd.toString(), String.valueOf(process.pid()), command)
                    .redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes());
            p.waitFor(20, TimeUnit.SECONDS);
            return out;
        } catch (IOException e) {
            return "";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "";
        }
    }

    @Override
    public void close() {
        stop(Duration.ofSeconds(10));
    }

    /**
     * SIGTERM, then SIGKILL when the process has not exited within {@code grace}. A training run writes its AppCDS
     * archive as it exits, after the operator's shutdown: with 100,000 pods that takes longer than the usual grace,
     * and a killed run leaves no archive.
     */
    void stop(Duration grace) {
        process.destroy();
        try {
            if (!process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    /**
     * CPU time of this process so far split by thread (Linux /proc/PID/task/TID/stat, utime + stime in clock ticks
     * of 10 ms): the JIT compiler threads ("C1/C2 CompilerThre"), the JVM's own (GC, VM thread, sweeper) and the
     * rest, which is the operator's work. Empty where /proc is not there.
     */
    java.util.Optional<CpuSplit> cpuSplit() {
        Path tasks = Path.of("/proc", String.valueOf(process.pid()), "task");
        if (!Files.isDirectory(tasks)) {
            return java.util.Optional.empty();
        }
        long jit = 0;
        long jvm = 0;
        long work = 0;
        try (var dirs = Files.list(tasks)) {
            for (Path t : (Iterable<Path>) dirs::iterator) {
                String stat;
                try {
                    stat = Files.readString(t.resolve("stat"));
                } catch (IOException gone) {
                    continue; // the thread ended meanwhile
                }
                String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
                String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]);
                if (CpuClock.isCompilerThread(name)) {
                    jit += ticks;
                } else if (name.startsWith("GC Thread") || name.equals("VM Thread") || name.startsWith("Sweeper")
                        || name.startsWith("VM Periodic")) {
                    jvm += ticks;
                } else {
                    work += ticks;
                }
            }
        } catch (IOException | RuntimeException e) {
            return java.util.Optional.empty();
        }
        // USER_HZ is 100 on Linux
        return java.util.Optional.of(new CpuSplit(jit * 10_000_000L, jvm * 10_000_000L, work * 10_000_000L));
    }

    /** CPU nanoseconds by kind of thread (see {@link #cpuSplit}); threads that ended before a reading are missed. */
    record CpuSplit(long jitNanos, long jvmNanos, long workNanos) {
        CpuSplit minus(CpuSplit o) {
            return new CpuSplit(jitNanos - o.jitNanos, jvmNanos - o.jvmNanos, workNanos - o.workNanos);
        }

        CpuSplit plus(CpuSplit o) {
            return new CpuSplit(jitNanos + o.jitNanos, jvmNanos + o.jvmNanos, workNanos + o.workNanos);
        }
    }
}
