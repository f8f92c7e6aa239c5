package io.unboundedcloud.playpen.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.fasterxml.jackson.databind.JsonNode;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * Bench scenario "burst of 4x the pool with waitSeconds" ({@code -Dbench.phases=burst}): a pool of
 * {@code bench.burstPool} (25) ready runners gets 4x as many allocs at once, each with waitSeconds; every served
 * client holds its pod {@code bench.burstHoldMs} (200 ms) and then its allocation ends (the claim is stripped, the
 * pod is idle again), which wakes the waiters. Reports the time to serve all and p50/p99 of the clients' waits.
 */
final class WaitBurst {
    private final Bench bench;
    final int pool = Integer.getInteger("bench.burstPool", 25);
    final long holdMs = Long.getLong("bench.burstHoldMs", 200);

    WaitBurst(Bench bench) {
        this.bench = bench;
    }

    Map<String, Object> run() throws Exception {
        int requests = pool * 4;
        Map<String, Object> m = new LinkedHashMap<>();
        ExecutorService clientThreads = Executors.newFixedThreadPool(4);
        ScheduledExecutorService releaser = Executors.newScheduledThreadPool(2);
        // one bench user sends the whole burst: the waiting caps are raised so that none of it is refused
        try (Bench.Env e = Bench.Env.open(bench, pool, "--max-wait=120", "--max-connections=4096",
                "--max-unauthenticated-connections=4096", "--request-header-timeout=60s",
                "--max-waiting-per-user=4000", "--max-waiting=4000")) {
            HttpClient http = HttpClient.newBuilder().sslContext(OperatorHarness.sslContext(e.cluster.frontProxyClient))
                    .version(HttpClient.Version.HTTP_1_1).executor(clientThreads).connectTimeout(Duration.ofSeconds(60))
                    .build();
            warm(http, e, requests);
            long[] nanos = new long[requests];
            AtomicInteger errors = new AtomicInteger();
            Map<String, Integer> failures = new java.util.concurrent.ConcurrentHashMap<>();
            List<CompletableFuture<Void>> done = new ArrayList<>();
            long t0 = System.nanoTime();
            for (int i = 0; i < requests; i++) {
                int index = i;
                String body = "{\"idempotencyKey\":\"burst-" + i + "\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(i % 997)
                        + "\",\"waitSeconds\":120}";
                HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(e.op.url(Bench.ALLOC_PATH)))
                        .timeout(Duration.ofSeconds(180)).POST(HttpRequest.BodyPublishers.ofString(body));
                long start = System.nanoTime();
                done.add(http.sendAsync(OperatorHarness.asUser(b, "bench", "playpen-users").build(),
                        HttpResponse.BodyHandlers.ofString()).thenAccept(r -> {
                            nanos[index] = System.nanoTime() - start;
                            if (r.statusCode() != 200) {
                                errors.incrementAndGet();
                                failures.merge(r.statusCode() + " " + r.body().substring(0, Math.min(120, r.body().length())),
                                        1, Integer::sum);
                                return;
                            }
                            String name = podName(r.body());
                            releaser.schedule(() -> release(e, name), holdMs, TimeUnit.MILLISECONDS);
                        }).exceptionally(x -> {
                            errors.incrementAndGet();
                            failures.merge(String.valueOf(x.getCause() == null ? x : x.getCause()), 1, Integer::sum);
                            return null;
                        }));
            }
            CompletableFuture.allOf(done.toArray(new CompletableFuture[0])).get(300, TimeUnit.SECONDS);
            long wall = System.nanoTime() - t0;
            Stats s = new Stats("burst-4x-wait", pool, requests, nanos, wall, errors.get());
            m.put("pool", pool);
            m.put("requests", requests);
            m.put("holdMs", holdMs);
            m.put("timeToServeAllMs", Stats.round(wall / 1e6));
            m.put("waitP50Ms", Stats.round(s.pMs(50)));
            m.put("waitP99Ms", Stats.round(s.pMs(99)));
            m.put("waitMaxMs", Stats.round(s.maxMs()));
            m.put("errors", errors.get());
            m.put("failures", failures);
            if (!failures.isEmpty()) {
                bench.log("  burst failures: %s", failures);
            }
            // the floor: 4 rounds of the pool, each held holdMs
            m.put("idealMs", 3 * holdMs);
            bench.log("  burst 4x pool (%d requests, pool %d, hold %d ms): all served in %.0f ms; wait p50 %.1f ms, p99 %.1f ms;"
                    + " errors %d", requests, pool, holdMs, wall / 1e6, s.pMs(50), s.pMs(99), errors.get());
        } finally {
            releaser.shutdownNow();
            clientThreads.shutdownNow();
        }
        return m;
    }

    /**
     * Opens the burst's connections before the timed window: {@code n} probes at once leave {@code n} kept-alive
     * connections in the client's pool, so the burst measures waiting, not {@code n} simultaneous TLS handshakes
     * (which on a loaded 2-core machine can exceed Netty's 10 s handshake timeout).
     */
    private void warm(HttpClient http, Bench.Env e, int n) throws Exception {
        for (int round = 0; round < 3; round++) {
            List<CompletableFuture<HttpResponse<Void>>> probes = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                probes.add(http.sendAsync(HttpRequest.newBuilder(URI.create(e.op.url("/healthz"))).build(),
                        HttpResponse.BodyHandlers.discarding()));
            }
            int ok = 0;
            for (CompletableFuture<HttpResponse<Void>> p : probes) {
                try {
                    p.get(60, TimeUnit.SECONDS);
                    ok++;
                } catch (Exception x) {
                    // a handshake lost to load: the next round opens another
                }
            }
            if (ok == n) {
                return;
            }
        }
    }

    private static String podName(String body) {
        try {
            JsonNode json = Json.MAPPER.readTree(body);
            return json.at("/pod/name").asText();
        } catch (Exception x) {
            return "";
        }
    }

    /** The allocation ends: its claim is stripped, so the pod is idle again for the next waiter. */
    private static void release(Bench.Env e, String name) {
        try {
            Pod p = e.client.pods().inNamespace(Bench.NS).withName(name).get();
            if (p == null) {
                return;
            }
            e.client.pods().inNamespace(Bench.NS).resource(new PodBuilder(p).editMetadata()
                    .removeFromAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH)
                    .removeFromAnnotations(PlaypenKeys.REQUEST_HASH)
                    .removeFromAnnotations(PlaypenKeys.CLIENT_WIREGUARD_PUBLIC_KEY)
                    .removeFromAnnotations(PlaypenKeys.CLAIMED_AT)
                    .removeFromAnnotations(PlaypenKeys.EXPIRES_AT)
                    .removeFromLabels(PlaypenKeys.ALLOCATED).endMetadata().build()).update();
        } catch (RuntimeException x) {
            // a failed release leaves a waiter to time out: it shows up as an error
        }
    }
}
