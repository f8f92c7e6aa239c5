package io.unboundedcloud.playpen.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The TTL phase for renewed allocations: claims with --playpen-ttl=2s, each renewed at once to 4s; the
 * delete must not come at the first expiry and must meet the renewed one. Reports lateness against the renewed
 * expires-at and how many deletes came before it (must be 0).
 */
final class RenewedTtl {
    static final String RENEWALS = "/apis/" + PlaypenKeys.GROUP + "/" + PlaypenKeys.VERSION + "/renewals";
    private final Bench bench;

    RenewedTtl(Bench bench) {
        this.bench = bench;
    }

    Map<String, Object> run() throws Exception {
        int samples = bench.ttlSamples;
        bench.log("ttl renewed: --playpen-ttl=2s, %d claims each renewed at once to 4s, time the deletes", samples);
        TestCluster cluster = TestCluster.start();
        Bench.Timestamps ts = new Bench.Timestamps("DELETE /api/v1/namespaces/playpen/pods/");
        cluster.addRequestListener(ts);
        cluster.addNode("node-0", "amd64", "203.0.113.10");
        List<Double> lateness = new ArrayList<>();
        int early = 0;
        OperatorHarness op = null;
        try {
            for (int i = 0; i < samples; i++) {
                cluster.create(TestCluster.readyRunner("amd64", Bench.FIRST_PORT + i, "node-0"));
            }
            op = new OperatorHarness(cluster, "--playpen-ttl=2s", "--reconcile-interval=10m");
            OperatorHarness harness = op;
            Bench.await(() -> Bench.idle(harness.app.podCache().pods()) == samples, Duration.ofSeconds(10), "pods in cache");
            HttpClient http = OperatorHarness.client(cluster.frontProxyClient);
            List<String> keys = new ArrayList<>();
            for (int i = 0; i < samples; i++) {
                int index = bench.keySeq.getAndIncrement();
                HttpResponse<String> r = http.send(Bench.allocRequest(op, index), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() != 200) {
                    throw new IllegalStateException("claim answered " + r.statusCode() + ": " + r.body());
                }
                HttpRequest renew = OperatorHarness.asUser(HttpRequest.newBuilder(URI.create(op.url(RENEWALS)))
                        .POST(HttpRequest.BodyPublishers.ofString("{\"idempotencyKey\":\"bench-" + index
                                + "\",\"ttl\":\"4s\"}")), "bench-user", "playpen-users").build();
                HttpResponse<String> rr = http.send(renew, HttpResponse.BodyHandlers.ofString());
                if (rr.statusCode() != 200) {
                    throw new IllegalStateException("renewal answered " + rr.statusCode() + ": " + rr.body());
                }
                keys.add("bench-" + index);
                Thread.sleep(1000 / Math.max(1, samples) + 37);
            }
            Map<String, Instant> renewedAt = new LinkedHashMap<>();
            for (Pod p : cluster.pods()) {
                String at = ManagedPods.annotations(p).get(PlaypenKeys.EXPIRES_AT);
                if (at != null && ManagedPods.isClaimed(p)) {
                    renewedAt.put(p.getMetadata().getName(), Instant.parse(at));
                }
            }
            Bench.await(() -> ts.hits.size() >= renewedAt.size(), Duration.ofSeconds(20), "TTL deletes");
            for (Map.Entry<String, Instant> e : renewedAt.entrySet()) {
                Bench.Timestamps.Hit del = ts.hits.stream()
                        .filter(h -> h.key().equals("DELETE /api/v1/namespaces/playpen/pods/" + e.getKey()))
                        .findFirst().orElseThrow();
                double late = del.epochMillis() - e.getValue().toEpochMilli();
                if (late < 0) {
                    early++;
                }
                lateness.add(late);
            }
        } finally {
            if (op != null) {
                op.close();
            }
            cluster.close();
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("samples", lateness.size());
        m.put("latenessVsRenewedExpiresAtMs", Bench.summary(lateness));
        m.put("deletesBeforeRenewedExpiry", early);
        bench.log("  renewed: lateness vs renewed expires-at: %s ms; deletes before it: %d", Bench.summary(lateness), early);
        return m;
    }
}
