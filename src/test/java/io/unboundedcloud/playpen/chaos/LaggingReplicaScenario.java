package io.unboundedcloud.playpen.chaos;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.fasterxml.jackson.databind.JsonNode;

import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.support.LagProxy;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * The chaos scenario "lagging replica": one replica's API traffic (its watches included) goes through a proxy that
 * holds every chunk for 100 ms to 2 s, in order, and replicas are killed and restarted during the run while the
 * pool deletes, creates and readies pods. Each round sends one new key in one of three patterns, straight to the
 * replicas (as the aggregator would route them): to every replica at once; to one replica and at once again to
 * another (a retry that lands elsewhere, the lagging one half the time); or an alloc to one replica followed at
 * once by a dealloc through another. Judged only from the answers and the API server's own pod list:
 * <ul>
 * <li>every 200 for a key names the same pod, unless one of two pods named was deleted (an expiry, with the
 * suite's 15 s TTL) before the other answer came;</li>
 * <li>after a dealloc answered 204, no pod carries the key;</li>
 * <li>once a round's answers are in, at most one pod carries its key (a claim that lost is rolled back within
 * moments; one that outlives {@link #SETTLE} is counted as a violation).</li>
 * </ul>
 */
final class LaggingReplicaScenario {
    static final Duration SETTLE = Duration.ofSeconds(10);
    private static final String ALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs";
    private static final String DEALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/deallocs";

    private final ChaosSuite suite;
    private final Playground pg;
    private final List<String> violations = Collections.synchronizedList(new ArrayList<>());
    private final Map<String, Integer> outcomes = Collections.synchronizedMap(new TreeMap<>());
    private final AtomicInteger doubleSeen = new AtomicInteger();
    private final AtomicInteger restarts = new AtomicInteger();
    /** When each restart killed its replica (nanoTime) and which one: a violation names those during its round. */
    private final List<long[]> kills = Collections.synchronizedList(new ArrayList<>());

    LaggingReplicaScenario(ChaosSuite suite) {
        this.suite = suite;
        this.pg = suite.pg;
    }

    private enum Pattern { AT_ONCE, RETRY_ELSEWHERE, DEALLOC_ELSEWHERE }

    ChaosSuite.Result run(int rounds, int workers, Duration restartEvery, long seed) throws Exception {
        long t0 = System.nanoTime();
        int lagging = pg.replicas().size() - 1;
        Path normal = pg.kubeconfigFor(suite.proxy.url(), "proxy-kubeconfig");
        try (LagProxy lag = new LagProxy(pg.kubeApiUrl())) {
            lag.delay(Duration.ofMillis(100), Duration.ofSeconds(2));
            Path lagged = pg.kubeconfigFor(lag.url(), "lagging-kubeconfig");
            pg.kill(lagging);
            pg.start(lagging, lagged, ChaosSuite.operatorFlags());
            suite.awaitAllReady(Duration.ofSeconds(150));

            HttpClient http = frontProxyClient();
            ExecutorService pool = Executors.newFixedThreadPool(workers * 4);
            AtomicInteger next = new AtomicInteger();
            Random seeds = new Random(seed);
            List<CompletableFuture<Void>> running = new ArrayList<>();
            volatileRunning = true;
            Thread restarter = restarter(restartEvery, lagging, normal, lagged, new Random(seeds.nextLong()));
            for (int w = 0; w < workers; w++) {
                Random r = new Random(seeds.nextLong());
                running.add(CompletableFuture.runAsync(() -> {
                    int i;
                    while ((i = next.getAndIncrement()) < rounds) {
                        round(http, pool, r, i, lagging);
                    }
                }, pool));
            }
            for (CompletableFuture<Void> f : running) {
                f.get(60, TimeUnit.MINUTES);
            }
            volatileRunning = false;
            restarter.interrupt();
            restarter.join(180_000);
            pool.shutdownNow();
            suite.awaitAllReady(Duration.ofSeconds(150));
            // put the lagging replica back as it was for the scenarios that follow
            pg.kill(lagging);
            pg.start(lagging, normal, ChaosSuite.operatorFlags());
            suite.awaitAllReady(Duration.ofSeconds(150));
        }
        Map<String, Object> recovery = new LinkedHashMap<>();
        recovery.put("rounds", rounds);
        recovery.put("replicaRestarts", restarts.get());
        recovery.put("keysSeenOnTwoPodsMomentarily", doubleSeen.get());
        return new ChaosSuite.Result("lagging replica", pg.replicas().size() + " replicas, replica " + lagging
                + " behind a proxy holding bytes 100 ms-2 s; " + workers + " concurrent rounds (at once, retry "
                + "elsewhere, dealloc elsewhere)", "replica kill -9 and restart every " + restartEvery.toSeconds() + " s",
                outcomes.values().stream().mapToInt(Integer::intValue).sum(), new TreeMap<>(outcomes),
                verdict(), recovery, ChaosSuite.seconds(t0));
    }

    /** The scenario's own violations and the cluster history's since the scenario before. */
    List<String> verdict() {
        List<String> out = new ArrayList<>(violations);
        out.addAll(suite.newHistoryViolations());
        return out;
    }

    private volatile boolean volatileRunning;

    /** Kills a random replica every period and starts it again (the lagging one behind its proxy again). */
    private Thread restarter(Duration every, int lagging, Path normal, Path lagged, Random r) {
        Thread t = new Thread(() -> {
            while (volatileRunning) {
                try {
                    Thread.sleep(every.toMillis());
                    int victim = r.nextInt(pg.replicas().size());
                    kills.add(new long[] {System.nanoTime(), victim});
                    pg.kill(victim);
                    pg.start(victim, victim == lagging ? lagged : normal, ChaosSuite.operatorFlags());
                    restarts.incrementAndGet();
                    suite.awaitAllReady(Duration.ofSeconds(150));
                } catch (InterruptedException e) {
                    return;
                } catch (Exception e) {
                    violations.add("restarting a replica failed: " + e);
                    return;
                }
            }
        }, "chaos-lag-restarter");
        t.setDaemon(true);
        t.start();
        return t;
    }

    private HttpClient frontProxyClient() throws Exception {
        Pki.Issued ca = new Pki.Issued(
                Pki.parseCertificates(Files.readString(pg.dir().resolve("front-proxy-ca.crt"))).get(0),
                Pki.parsePrivateKey(Files.readString(pg.dir().resolve("front-proxy-ca.key"))));
        Instant now = Instant.now();
        Pki.Issued fp = Pki.issue(ca, Pki.Subject.cn("front-proxy-client"), Pki.Usage.CLIENT, now.minusSeconds(60),
                Duration.ofDays(1));
        return OperatorHarness.client(fp);
    }

    /** One answer: status (-1 = no answer), the pod a 200 names, when its request was sent and answered. */
    private record Answer(int replica, int code, String pod, long sentNanos, long answeredNanos) {
    }

    private void round(HttpClient http, ExecutorService pool, Random r, int i, int lagging) {
        Pattern pattern = Pattern.values()[i % Pattern.values().length];
        String key = "lag-" + i + "-" + Long.toHexString(r.nextLong());
        String keyHash = Hashes.keyHash(key);
        int n = pg.replicas().size();
        int first = r.nextInt(n);
        int second = r.nextBoolean() ? lagging : (first + 1 + r.nextInt(n - 1)) % n;
        if (second == first) {
            second = (first + 1) % n;
        }
        List<Answer> answers = new ArrayList<>();
        boolean released = false;
        long started = System.nanoTime();
        switch (pattern) {
            case AT_ONCE -> {
                List<CompletableFuture<Answer>> all = new ArrayList<>();
                for (int rep = 0; rep < n; rep++) {
                    int target = rep;
                    all.add(CompletableFuture.supplyAsync(() -> alloc(http, target, key), pool));
                }
                all.forEach(f -> answers.add(f.join()));
            }
            case RETRY_ELSEWHERE -> {
                answers.add(alloc(http, first, key));
                answers.add(alloc(http, second, key));
            }
            case DEALLOC_ELSEWHERE -> {
                answers.add(alloc(http, first, key));
                released = dealloc(http, second, key, answers);
            }
        }
        List<Answer> ok = answers.stream().filter(a -> a.code() == 200)
                .sorted(java.util.Comparator.comparingLong(Answer::sentNanos)).toList();
        for (int a = 0; a < ok.size(); a++) {
            for (int b = a + 1; b < ok.size(); b++) {
                Answer earlier = ok.get(a);
                Answer later = ok.get(b);
                // two pods are fine only if one of them was gone (expired, deleted) before the other's answer came
                if (!earlier.pod().equals(later.pod())
                        && !suite.history.deletedBefore(earlier.pod(), keyHash, later.answeredNanos())
                        && !suite.history.deletedBefore(later.pod(), keyHash, earlier.answeredNanos())) {
                    violations.add("round " + i + " (" + pattern + "): 200 answers named " + earlier.pod() + " and "
                            + later.pod() + " for one key, each pod holding it until the other answer came");
                }
            }
        }
        List<String> named = ok.stream().map(Answer::pod).distinct().toList();
        if (!released) {
            boolean answersDone = answers.stream().allMatch(a -> a.code() != -1);
            checkSettles(i, pattern, keyHash, named, started);
            // give it back through a random replica, then nothing may carry it
            released = dealloc(http, r.nextInt(n), key, answersDone ? answers : null);
        }
    }

    /** Once a round's answers are in, at most one pod carries its key (and it is the one the answers named). */
    private void checkSettles(int i, Pattern pattern, String keyHash, List<String> named, long started) {
        long deadline = System.nanoTime() + SETTLE.toNanos();
        List<String> carriers = carriers(keyHash);
        if (carriers.size() > 1) {
            doubleSeen.incrementAndGet();
        }
        while (carriers.size() > 1 && System.nanoTime() < deadline) {
            sleep(100);
            carriers = carriers(keyHash);
        }
        if (carriers.size() > 1) {
            violations.add("round " + i + " (" + pattern + "): key still on two pods after " + SETTLE.toSeconds()
                    + " s: " + carriers + killedSince(started));
        } else if (carriers.size() == 1 && !named.isEmpty() && !named.contains(carriers.get(0))
                && !named.stream().allMatch(p -> suite.history.deletedBefore(p, keyHash, System.nanoTime()))) {
            violations.add("round " + i + " (" + pattern + "): the key is on " + carriers + " but the answers named "
                    + named);
        }
    }

    /** The replicas killed since {@code started}, for a violation's message ("" when none). */
    private String killedSince(long started) {
        StringBuilder out = new StringBuilder();
        synchronized (kills) {
            for (long[] k : kills) {
                if (k[0] >= started) {
                    out.append(out.length() == 0 ? "; killed during the round: " : ", ").append("replica ").append(k[1])
                            .append(" at +").append(TimeUnit.NANOSECONDS.toMillis(k[0] - started)).append(" ms");
                }
            }
        }
        return out.toString();
    }

    private Answer alloc(HttpClient http, int replica, String key) {
        byte[] wg = new byte[32];
        new Random(key.hashCode()).nextBytes(wg);
        String body = "{\"idempotencyKey\":\"" + key + "\",\"resourceType\":\"runner\",\"architecture\":\""
                + ((key.hashCode() & 1) == 0 ? "amd64" : "arm64") + "\",\"wireGuardPublicKey\":\""
                + java.util.Base64.getEncoder().encodeToString(wg) + "\",\"waitSeconds\":30}";
        long sent = System.nanoTime();
        HttpResponse<String> res = post(http, replica, ALLOCS, body);
        int code = res == null ? -1 : res.statusCode();
        outcomes.merge("alloc " + (code == -1 ? "io" : String.valueOf(code)), 1, Integer::sum);
        String pod = null;
        if (code == 200) {
            try {
                JsonNode j = ChaosSuite.M.readTree(res.body());
                pod = j.at("/pod/name").asText();
            } catch (IOException e) {
                violations.add("an alloc answer was not JSON: " + res.body());
            }
        }
        return new Answer(replica, code, pod, sent, System.nanoTime());
    }

    /**
     * Deallocates through one replica; on 204 (and when every alloc of the round was answered, so none can still
     * be writing) checks that no pod carries the key. Returns whether the key was released.
     */
    private boolean dealloc(HttpClient http, int replica, String key, List<Answer> answersOrNull) {
        for (int attempt = 0; attempt < 5; attempt++) {
            int target = (replica + attempt) % pg.replicas().size();
            HttpResponse<String> res = post(http, target, DEALLOCS, "{\"idempotencyKey\":\"" + key + "\"}");
            int code = res == null ? -1 : res.statusCode();
            outcomes.merge("dealloc " + (code == -1 ? "io" : String.valueOf(code)), 1, Integer::sum);
            if (code / 100 == 2) {
                boolean allAnswered = answersOrNull != null && answersOrNull.stream().allMatch(a -> a.code() != -1);
                if (allAnswered) {
                    List<String> left = carriers(Hashes.keyHash(key));
                    if (!left.isEmpty()) {
                        violations.add("dealloc through replica " + target + " answered " + code + " but " + left
                                + " still carried the key");
                    }
                }
                return true;
            }
            sleep(500);
        }
        return false;
    }

    private HttpResponse<String> post(HttpClient http, int replica, String path, String body) {
        Playground.Replica r = pg.replicas().get(replica);
        try {
            return http.send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + r.port() + path))
                    .timeout(Duration.ofSeconds(90)).header("Content-Type", "application/json")
                    .header("X-Remote-User", "chaos-lag").header("X-Remote-Group", "playpen-users")
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    /** The non-terminating pods that carry the key, read from the API server itself. */
    private List<String> carriers(String keyHash) {
        try {
            HttpResponse<String> res = suite.plain.send(HttpRequest.newBuilder(
                    pg.kubeApiUrl().resolve("/api/v1/namespaces/playpen/pods")).build(),
                    HttpResponse.BodyHandlers.ofString());
            List<String> out = new ArrayList<>();
            for (JsonNode p : ChaosSuite.podItems(res.statusCode(), res.body())) {
                String hash = p.at("/metadata/annotations/playpen.unbounded-cloud.io~1idempotency-key-hash").asText("");
                if (keyHash.equals(hash) && p.at("/metadata/deletionTimestamp").asText("").isEmpty()) {
                    out.add(p.at("/metadata/name").asText());
                }
            }
            return out;
        } catch (IOException e) {
            violations.add("checker: listing pods failed: " + e);
            return List.of();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return List.of();
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
