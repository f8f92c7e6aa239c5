package io.unboundedcloud.playpen.bench;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/** Latency samples of one measured run (nanoseconds) with its wall time: nearest-rank percentiles and throughput. */
final class Stats {
    final String scenario;
    final int pods;
    final int concurrency;
    final long[] sortedNanos;
    final long wallNanos;
    final int errors;

    Stats(String scenario, int pods, int concurrency, long[] nanos, long wallNanos, int errors) {
        this.scenario = scenario;
        this.pods = pods;
        this.concurrency = concurrency;
        this.sortedNanos = nanos.clone();
        Arrays.sort(this.sortedNanos);
        this.wallNanos = wallNanos;
        this.errors = errors;
    }

    int count() {
        return sortedNanos.length;
    }

    /** Nearest-rank percentile in milliseconds (q in 0..100). */
    double pMs(double q) {
        if (sortedNanos.length == 0) {
            return Double.NaN;
        }
        int rank = (int) Math.ceil(q / 100.0 * sortedNanos.length);
        return sortedNanos[Math.max(0, Math.min(sortedNanos.length - 1, rank - 1))] / 1e6;
    }

    double maxMs() {
        return sortedNanos.length == 0 ? Double.NaN : sortedNanos[sortedNanos.length - 1] / 1e6;
    }

    double meanMs() {
        return sortedNanos.length == 0 ? Double.NaN : Arrays.stream(sortedNanos).average().orElse(0) / 1e6;
    }

    /** Completed operations per second of measured wall time (batches only, never the release between them). */
    double throughput() {
        return wallNanos <= 0 ? Double.NaN : sortedNanos.length / (wallNanos / 1e9);
    }

    Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("scenario", scenario);
        m.put("pods", pods);
        m.put("concurrency", concurrency);
        m.put("count", count());
        m.put("errors", errors);
        m.put("p50Ms", round(pMs(50)));
        m.put("p90Ms", round(pMs(90)));
        m.put("p99Ms", round(pMs(99)));
        m.put("maxMs", round(maxMs()));
        m.put("meanMs", round(meanMs()));
        m.put("throughputPerSec", round(throughput()));
        m.put("wallSeconds", round(wallNanos / 1e9));
        return m;
    }

    /** Three decimals; null for NaN or infinity (JSON has no such numbers). */
    static Double round(double v) {
        if (Double.isNaN(v) || Double.isInfinite(v)) {
            return null;
        }
        return Math.round(v * 1000.0) / 1000.0;
    }
}
