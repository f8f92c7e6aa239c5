package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The barrier hammer: 64 pre-connected HTTPS clients release one fresh key at the same instant, round after
 * round, against one replica and against three replicas sharing the API, with one body and with two bodies racing.
 * After every round the invariants are checked on the API server's pods, not on any operator's cache.
 */
class BarrierHammerRouteTest {
    private static final Logger LOG = LoggerFactory.getLogger(BarrierHammerRouteTest.class);
    private static final ObjectMapper M = new ObjectMapper();
    private static final int ROUNDS = Integer.getInteger("hammer.rounds", 200);
    private static final int CLIENTS = 64;
    /** Pool size; claimed pods are replaced in one batch once fewer than {@link #REFILL_BELOW} are idle. */
    private static final int POOL = 12;
    private static final int REFILL_BELOW = 4;
    private static final String ALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs";
    private static final String BODY_A = TestCluster.wgKey(1);
    private static final String BODY_B = TestCluster.wgKey(2);

    static TestCluster cluster;
    static final List<OperatorHarness> replicas = new ArrayList<>();
    static final List<HttpClient> clients = new ArrayList<>();
    static ExecutorService threads;
    /** Pods claimed in earlier rounds and still in the pool, with their key hash: a later round must not move them. */
    static final Map<String, String> earlierClaims = new java.util.HashMap<>();
    static long requestNanos;
    static long checkNanos;
    static long refillNanos;

    @BeforeAll
    static void up() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        for (int i = 0; i < POOL; i++) {
            cluster.create(TestCluster.readyRunner("amd64", 51820 + i, "node-a"));
        }
        // connections kept alive for the whole class: a test that sends to one replica leaves the clients'
        // connections to the other two idle, and with the default --idle-timeout (60 s) a slow run would see them
        // closed, so the next three-replica round would open 128 connections at once (or send a POST on one the
        // replica is closing at that moment)
        for (int i = 0; i < 3; i++) {
            replicas.add(new OperatorHarness(cluster, "--idle-timeout=1h"));
        }
        threads = Executors.newFixedThreadPool(CLIENTS);
        // one client per thread, each with a kept-alive connection to every replica before the first round; a few
        // at a time, as 192 simultaneous TLS handshakes on a loaded machine outlast the clients' connect timeout
        ExecutorService connecting = Executors.newFixedThreadPool(4);
        try {
            List<Future<HttpClient>> fs = new ArrayList<>();
            for (int c = 0; c < CLIENTS; c++) {
                fs.add(connecting.submit(BarrierHammerRouteTest::connectedClient));
            }
            for (Future<HttpClient> f : fs) {
                clients.add(f.get());
            }
        } finally {
            connecting.shutdownNow();
        }
        awaitCachesIdle();
    }

    private static HttpClient connectedClient() throws Exception {
        HttpClient http = OperatorHarness.client(cluster.frontProxyClient);
        for (OperatorHarness r : replicas) {
            HttpRequest discovery = HttpRequest.newBuilder(URI.create(r.url("/apis/playpen.unbounded-cloud.io/v1alpha1"))).build();
            for (int attempt = 1; ; attempt++) {
                try {
                    assertThat(http.send(discovery, HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200);
                    break;
                } catch (java.net.http.HttpConnectTimeoutException e) {
                    if (attempt == 5) {
                        throw e;
                    }
                }
            }
        }
        return http;
    }

    @AfterAll
    static void down() {
        if (threads != null) {
            threads.shutdownNow();
        }
        replicas.forEach(OperatorHarness::close);
        replicas.clear();
        clients.clear();
        cluster.close();
    }

    @Test
    void oneReplicaOneBody() throws Exception {
        hammer("r1b1", 1, false);
    }

    @Test
    void oneReplicaTwoBodies() throws Exception {
        hammer("r1b2", 1, true);
    }

    @Test
    void threeReplicasOneBody() throws Exception {
        hammer("r3b1", 3, false);
    }

    @Test
    void threeReplicasTwoBodies() throws Exception {
        hammer("r3b2", 3, true);
    }

    private void hammer(String variant, int replicaCount, boolean twoBodies) throws Exception {
        List<String> violations = new ArrayList<>();
        int violatedRounds = 0;
        long start = System.nanoTime();
        requestNanos = 0;
        checkNanos = 0;
        refillNanos = 0;
        for (int round = 0; round < ROUNDS; round++) {
            String key = "hammer-" + variant + "-" + round;
            List<String> found = round(key, replicaCount, twoBodies);
            if (!found.isEmpty()) {
                violatedRounds++;
                found.forEach(v -> violations.add("round " + key + ": " + v));
            }
        }
        LOG.info("hammer {}: {} rounds x {} clients, {} rounds violated, {} ms (requests {} ms, checks {} ms, "
                + "refills {} ms)", variant, ROUNDS, CLIENTS, violatedRounds, ms(System.nanoTime() - start),
                ms(requestNanos), ms(checkNanos), ms(refillNanos));
        assertThat(violations).as("%d of %d rounds violated exactly-once", violatedRounds, ROUNDS).isEmpty();
    }

    private static long ms(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(nanos);
    }

    /** One barrier round; returns the invariant violations it found (and refills the pool when it runs low). */
    private List<String> round(String key, int replicaCount, boolean twoBodies) throws Exception {
        long t0 = System.nanoTime();
        CyclicBarrier barrier = new CyclicBarrier(CLIENTS);
        List<Future<HttpResponse<String>>> fs = new ArrayList<>();
        List<String> sent = new ArrayList<>();
        for (int c = 0; c < CLIENTS; c++) {
            HttpClient http = clients.get(c);
            OperatorHarness target = replicas.get(c % replicaCount);
            String wg = twoBodies && (c / replicaCount) % 2 == 1 ? BODY_B : BODY_A;
            sent.add(wg);
            String body = "{\"idempotencyKey\":\"" + key + "\",\"wireGuardPublicKey\":\"" + wg + "\"}";
            HttpRequest req = OperatorHarness.asUser(HttpRequest.newBuilder(URI.create(target.url(ALLOCS)))
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)),
                    "alice", "playpen-users").build();
            fs.add(threads.submit(() -> {
                barrier.await(60, TimeUnit.SECONDS);
                return http.send(req, HttpResponse.BodyHandlers.ofString());
            }));
        }
        List<HttpResponse<String>> rs = new ArrayList<>();
        for (Future<HttpResponse<String>> f : fs) {
            rs.add(f.get(120, TimeUnit.SECONDS));
        }
        long t1 = System.nanoTime();
        List<Pod> pods = cluster.pods();
        List<String> violations = check(key, pods, rs, sent);
        long t2 = System.nanoTime();
        if (pods.size() - earlierClaims.size() < REFILL_BELOW) {
            refillPool();
        }
        requestNanos += t1 - t0;
        checkNanos += t2 - t1;
        refillNanos += System.nanoTime() - t2;
        return violations;
    }

    /** {@code sent[i]} is the WireGuard key client i sent: with two bodies, the holder's one is the winner. */
    private static List<String> check(String key, List<Pod> pods, List<HttpResponse<String>> rs, List<String> sent)
            throws Exception {
        List<String> v = new ArrayList<>();
        String keyHash = Hashes.keyHash(key);
        List<Pod> holders = new ArrayList<>();
        for (Pod p : pods) {
            Map<String, String> ann = p.getMetadata().getAnnotations();
            String h = ann == null ? null : ann.get(PlaypenKeys.IDEMPOTENCY_KEY_HASH);
            String allocated = p.getMetadata().getLabels().get(PlaypenKeys.ALLOCATED);
            if (h == null) {
                if (allocated != null) {
                    v.add(p.getMetadata().getName() + " has an allocated label but no key");
                }
                continue;
            }
            String earlier = earlierClaims.get(p.getMetadata().getName());
            if (earlier != null) {
                if (!earlier.equals(h)) {
                    v.add(p.getMetadata().getName() + " claimed for " + earlier.substring(0, 8) + " now carries "
                            + h.substring(0, 8));
                }
                continue;
            }
            if (!h.equals(keyHash)) {
                v.add(p.getMetadata().getName() + " carries an unexpected key hash " + h.substring(0, 8));
            }
            if (!Hashes.allocationId(TestCluster.NS, p.getMetadata().getName()).equals(allocated)) {
                v.add(p.getMetadata().getName() + " claimed without its allocation label");
            }
            holders.add(p);
        }
        if (holders.size() != 1) {
            v.add("key on " + holders.size() + " pods: " + holders.stream().map(p -> p.getMetadata().getName()).toList());
        }
        String holder = holders.isEmpty() ? "" : holders.get(0).getMetadata().getName();
        String winnerWg = holders.isEmpty() ? ""
                : holders.get(0).getMetadata().getAnnotations().get(PlaypenKeys.CLIENT_WIREGUARD_PUBLIC_KEY);
        Set<String> okBodies = new HashSet<>();
        for (int i = 0; i < rs.size(); i++) {
            HttpResponse<String> r = rs.get(i);
            if (sent.get(i).equals(winnerWg)) {
                if (r.statusCode() != 200) {
                    v.add("a winner-body client got " + r.statusCode() + " " + r.body());
                    continue;
                }
                okBodies.add(r.body());
                String named = M.readTree(r.body()).at("/pod/name").asText();
                if (!named.equals(holder)) {
                    v.add("a 200 names " + named + " but the key is on " + holder);
                }
            } else if (r.statusCode() != 409) {
                v.add("a loser-body client got " + r.statusCode() + " (pod "
                        + (r.statusCode() == 200 ? M.readTree(r.body()).at("/pod/name").asText() : "-") + ")");
            }
        }
        if (okBodies.size() > 1) {
            v.add(okBodies.size() + " different 200 answers");
        }
        for (Pod p : holders) {
            earlierClaims.put(p.getMetadata().getName(), keyHash);
        }
        // one line per kind of violation, with how many answers showed it
        Map<String, Long> counted = v.stream().collect(java.util.stream.Collectors.groupingBy(x -> x,
                java.util.LinkedHashMap::new, java.util.stream.Collectors.counting()));
        return counted.entrySet().stream().map(e -> e.getValue() == 1 ? e.getKey() : e.getKey() + " (x" + e.getValue() + ")")
                .toList();
    }

    /**
     * Deletes the claimed pods and creates fresh idle ones under the same names (as dealloc and the pool would), then
     * waits until every replica's cache shows the whole pool idle.
     */
    private static void refillPool() throws Exception {
        for (Pod p : cluster.pods()) {
            if (p.getMetadata().getAnnotations() != null
                    && p.getMetadata().getAnnotations().containsKey(PlaypenKeys.IDEMPOTENCY_KEY_HASH)) {
                cluster.client.pods().inNamespace(TestCluster.NS).withName(p.getMetadata().getName()).delete();
                int port = Integer.parseInt(p.getMetadata().getLabels().get(PlaypenKeys.HOST_PORT));
                cluster.create(TestCluster.readyRunner("amd64", port, "node-a"));
            }
        }
        earlierClaims.clear();
        awaitCachesIdle();
    }

    /** Every replica's cache shows the whole pool idle: rounds start from one shared, settled view. */
    private static void awaitCachesIdle() throws InterruptedException {
        for (OperatorHarness r : replicas) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (r.app.podCache().idleOfKind("runner/amd64").size() != POOL) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("replica cache did not settle: " + r.app.podCache().pods().size() + " pods");
                }
                Thread.sleep(1);
            }
        }
    }
}
