package io.unboundedcloud.playpen.chaos;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * Concurrent kubectl-like clients through the aggregator stand-in: fresh keys, retried keys (same body), reused keys
 * with a different body, and deallocs; a client retries 429/5xx/transport failures with the same key and body (the
 * stand-in then picks a replica round-robin, so a retry usually lands on another one). Every attempt is recorded,
 * then checked against the cluster's history.
 */
public final class LoadRun {
    static final String ALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs";
    static final String DEALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/deallocs";

    /** One answered (or failed) attempt; code -1 = transport failure. */
    public record Attempt(String op, String key, int bodyVariant, int code, String body, long startNanos, long endNanos) {
    }

    /** What the load was: total logical requests, clients, shares of retried and different-body keys. */
    public record Mix(int requests, int clients, double retried, double differentBody, double deallocs,
            int maxAttempts, Duration deadline) {
    }

    private final HttpClient http;
    private final URI shim;
    private final Random seedSource;
    private final List<Attempt> attempts = Collections.synchronizedList(new ArrayList<>());
    /** key -> body variants sent (0 = the original). */
    private final Map<String, java.util.Set<Integer>> variants = new ConcurrentHashMap<>();
    private final List<String> keys = Collections.synchronizedList(new ArrayList<>());
    private final java.util.Set<String> deallocated = ConcurrentHashMap.newKeySet();
    private final String prefix;
    private volatile Duration pause = Duration.ZERO;
    private volatile boolean stopped;

    public LoadRun(Path devDir, URI shim, long seed, String prefix) throws Exception {
        this.http = OperatorHarness.client(userCredentials(devDir));
        this.shim = shim;
        this.seedSource = new Random(seed);
        this.prefix = prefix;
    }

    /** dev-user's client certificate and key from the dev kubeconfig. */
    static Pki.Issued userCredentials(Path devDir) throws IOException {
        String kubeconfig = Files.readString(devDir.resolve("kubeconfig"));
        return new Pki.Issued(Pki.parseCertificates(field(kubeconfig, "client-certificate-data")).get(0),
                Pki.parsePrivateKey(field(kubeconfig, "client-key-data")));
    }

    private static String field(String yaml, String name) {
        Matcher m = Pattern.compile(name + ": (\\S+)").matcher(yaml);
        if (!m.find()) {
            throw new IllegalStateException(name + " not in the dev kubeconfig");
        }
        return new String(Base64.getDecoder().decode(m.group(1)), StandardCharsets.US_ASCII);
    }

    static String body(String key, int variant) {
        byte[] wg = new byte[32];
        new Random(key.hashCode() * 31L + variant).nextBytes(wg);
        String arch = (key.hashCode() & 1) == 0 ? "amd64" : "arm64";
        return "{\"idempotencyKey\":\"" + key + "\",\"resourceType\":\"runner\",\"architecture\":\"" + arch
                + "\",\"wireGuardPublicKey\":\"" + Base64.getEncoder().encodeToString(wg) + "\"}";
    }

    /** Each client waits this long between its logical requests (paced load; default none). */
    public LoadRun pace(Duration between) {
        this.pause = between;
        return this;
    }

    /** Ends a running mix after the requests in flight (a scenario that decides its own length). */
    public void stop() {
        stopped = true;
    }

    /** Runs the mix to completion (or its deadline); blocks. */
    public void run(Mix mix) throws InterruptedException {
        AtomicInteger next = new AtomicInteger();
        long deadline = System.nanoTime() + mix.deadline().toNanos();
        CountDownLatch done = new CountDownLatch(mix.clients());
        for (int c = 0; c < mix.clients(); c++) {
            Random r = new Random(seedSource.nextLong());
            Thread t = new Thread(() -> {
                try {
                    int i;
                    while (!stopped && (i = next.getAndIncrement()) < mix.requests() && System.nanoTime() < deadline) {
                        one(r, i, mix, deadline);
                        if (!pause.isZero()) {
                            Thread.sleep(pause.toMillis());
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    done.countDown();
                }
            }, "chaos-client-" + c);
            t.setDaemon(true);
            t.start();
        }
        done.await();
    }

    private void one(Random r, int i, Mix mix, long deadline) {
        double p = r.nextDouble();
        List<String> known;
        synchronized (keys) {
            known = keys.isEmpty() ? List.of() : new ArrayList<>(keys.subList(Math.max(0, keys.size() - 200), keys.size()));
        }
        known = known.stream().filter(k -> !deallocated.contains(k)).toList();
        if (!known.isEmpty() && p < mix.deallocs()) {
            String key = known.get(r.nextInt(known.size()));
            deallocated.add(key);
            send("dealloc", key, 0, "{\"idempotencyKey\":\"" + key + "\"}", DEALLOCS, mix, deadline);
            return;
        }
        if (!known.isEmpty() && p < mix.deallocs() + mix.differentBody()) {
            String key = known.get(r.nextInt(known.size()));
            int v = 1 + r.nextInt(3);
            variants.computeIfAbsent(key, k -> ConcurrentHashMap.newKeySet()).add(v);
            send("alloc", key, v, body(key, v), ALLOCS, mix, deadline);
            return;
        }
        if (!known.isEmpty() && p < mix.deallocs() + mix.differentBody() + mix.retried()) {
            String key = known.get(r.nextInt(known.size()));
            send("alloc", key, 0, body(key, 0), ALLOCS, mix, deadline);
            return;
        }
        String key = prefix + "-" + i + "-" + Long.toHexString(r.nextLong());
        variants.computeIfAbsent(key, k -> ConcurrentHashMap.newKeySet()).add(0);
        keys.add(key);
        send("alloc", key, 0, body(key, 0), ALLOCS, mix, deadline);
    }

    /** One logical request: retried with the same key and body on 429/5xx/transport failure, a bounded number of times. */
    private void send(String op, String key, int variant, String json, String path, Mix mix, long deadline) {
        for (int attempt = 0; attempt < mix.maxAttempts() && System.nanoTime() < deadline; attempt++) {
            long t0 = System.nanoTime();
            int code;
            String body;
            long retryAfterMs = 200;
            try {
                HttpResponse<String> res = http.send(HttpRequest.newBuilder(shim.resolve(path))
                        .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(json)).build(), HttpResponse.BodyHandlers.ofString());
                code = res.statusCode();
                body = res.body();
                retryAfterMs = res.headers().firstValue("Retry-After").map(s -> {
                    try {
                        return Math.min(1000L, Long.parseLong(s.trim()) * 1000L);
                    } catch (NumberFormatException e) {
                        return 200L;
                    }
                }).orElse(200L);
            } catch (IOException e) {
                code = -1;
                body = e.toString();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            attempts.add(new Attempt(op, key, variant, code, body, t0, System.nanoTime()));
            if (code != 429 && code < 500 && code != -1) {
                return;
            }
            try {
                Thread.sleep(Math.max(50, retryAfterMs));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    public List<Attempt> attempts() {
        synchronized (attempts) {
            return new ArrayList<>(attempts);
        }
    }

    /** Attempts by status code ("io" for transport failures). */
    public Map<String, Integer> outcomes() {
        Map<String, Integer> out = new TreeMap<>();
        for (Attempt a : attempts()) {
            out.merge(a.code() == -1 ? "io" : String.valueOf(a.code()), 1, Integer::sum);
        }
        return out;
    }

    /**
     * Checks every answer against the cluster's history: a 200 names a pod that carried that key, and whose claim of
     * it was not taken back afterwards; answers for one key that name the same pod are byte-identical; an answer
     * naming another pod than one received before its request was sent comes only once that pod is gone; a 409
     * only for a key that was sent with more than one body; and at least one alloc answered 200.
     */
    public List<String> violations(ClusterHistory history) {
        return violations(attempts(), variants, history);
    }

    /**
     * The same check over recorded attempts. Requests that overlap in time have no order a client could observe:
     * one sent first may be served last (held up in a slow replica while another request for its key is answered
     * and the key deallocated), so only answers received before another request was sent order the pods they name.
     * A key on two pods at once is the history's own check, whatever the answers.
     */
    static List<String> violations(List<Attempt> attempts, Map<String, java.util.Set<Integer>> variants,
            ClusterHistory history) {
        List<String> out = new ArrayList<>();
        if (attempts.stream().noneMatch(a -> a.op().equals("alloc") && a.code() == 200)) {
            // every check below is of a 200 or a 409: a run without one (replicas never ready, the stand-in
            // pointing nowhere, no pod ever free) would pass having checked nothing
            Map<String, Integer> codes = new TreeMap<>();
            attempts.forEach(a -> codes.merge(a.op() + " " + (a.code() == -1 ? "io" : a.code()), 1, Integer::sum));
            out.add("no alloc was answered 200, so no answer was checked: " + codes);
        }
        Map<String, List<Attempt>> byKey = new TreeMap<>();
        for (Attempt a : attempts) {
            byKey.computeIfAbsent(a.key(), k -> new ArrayList<>()).add(a);
        }
        com.fasterxml.jackson.databind.ObjectMapper m = new com.fasterxml.jackson.databind.ObjectMapper();
        byKey.forEach((key, list) -> {
            String hash = Hashes.keyHash(key);
            String label = "key #" + hash.substring(0, 12);
            java.util.Set<String> carried = history.podsThatCarried(hash);
            Map<String, String> bodyByPodAndVariant = new java.util.HashMap<>();
            list.sort(java.util.Comparator.comparingLong(Attempt::startNanos));
            List<Answered> answered = new ArrayList<>();
            for (Attempt a : list) {
                if (a.op().equals("alloc") && a.code() == 200) {
                    String pod;
                    try {
                        pod = m.readTree(a.body()).at("/pod/name").asText();
                    } catch (IOException e) {
                        out.add(label + ": 200 with an unreadable body");
                        continue;
                    }
                    if (!carried.contains(pod)) {
                        out.add(label + ": 200 names pod " + pod + " which never carried the key (carried by " + carried + ")");
                    }
                    // a claim taken back off its pod (it lost to an earlier claim of its key) is never answered
                    if (history.takenBackAfter(pod, hash, a.startNanos())) {
                        out.add(label + ": 200 names pod " + pod + " whose claim of the key was then taken back");
                    }
                    // pod names come from hostPorts and recur: a pod of the same name deleted in between (dealloc or
                    // expiry of this key) makes a new claim with a new answer legitimate
                    String prev = bodyByPodAndVariant.put(pod + "#" + a.bodyVariant(), a.body());
                    if (prev != null && !prev.equals(a.body())
                            && !history.deletedBefore(pod, hash, a.endNanos() + 2_000_000_000L)) {
                        out.add(label + ": two different 200 answers naming pod " + pod);
                    }
                    // an answer received before this request was sent that named another pod: that pod must be gone
                    // by the time this answer came (a retry in flight while the key was deallocated or expired may
                    // claim anew); 2 s for this checker's own watch to hear of it
                    for (Answered before : answered) {
                        if (before.endNanos() < a.startNanos() && !before.pod().equals(pod)
                                && !history.deletedBefore(before.pod(), hash, a.endNanos() + 2_000_000_000L)) {
                            out.add(label + ": answered with pod " + pod + " while pod " + before.pod()
                                    + ", answered before this request was sent, still held it");
                            break;
                        }
                    }
                    answered.add(new Answered(pod, a.endNanos()));
                }
                if (a.code() == 409 && variants.getOrDefault(key, java.util.Set.of()).size() < 2) {
                    out.add(label + ": 409 although the key was only ever sent with one body: " + abbreviate(a.body()));
                }
            }
        });
        return out;
    }

    /** A 200 of an earlier attempt for the key: the pod it named and when it came. */
    private record Answered(String pod, long endNanos) {
    }

    private static String abbreviate(String s) {
        return s == null ? "" : s.length() > 200 ? s.substring(0, 200) + "..." : s;
    }
}
