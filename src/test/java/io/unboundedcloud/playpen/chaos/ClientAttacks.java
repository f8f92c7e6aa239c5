package io.unboundedcloud.playpen.chaos;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;

import com.fasterxml.jackson.databind.JsonNode;

import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.HostileCorpus;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * The client-side scenarios of the chaos suite, aimed at one replica's own port (as an attacker inside the cluster
 * network would): the hostile-client corpus ({@link HostileCorpus}) and slow and idle clients (idle TLS connections,
 * slowloris heads, slow bodies) while normal clients allocate, compared with the same load without the attackers.
 */
final class ClientAttacks {
    static final String ALLOCS = HostileCorpus.V1 + "/allocs";
    static final String DEALLOCS = HostileCorpus.V1 + "/deallocs";
    /** The Deployment's memory limit (deploy/): a replica's RSS must stay below it under attack. */
    static final long MEMORY_LIMIT_BYTES = 768L << 20;

    private final ChaosSuite suite;
    private final Playground pg;
    private final HttpClient plain = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    ClientAttacks(ChaosSuite suite) {
        this.suite = suite;
        this.pg = suite.pg;
    }

    /** The dev playground's front-proxy CA (certificate and key), which issues the good and the bad client certificates. */
    Pki.Issued frontProxyCa() throws IOException {
        return new Pki.Issued(Pki.parseCertificates(Files.readString(pg.dir().resolve("front-proxy-ca.crt"))).get(0),
                Pki.parsePrivateKey(Files.readString(pg.dir().resolve("front-proxy-ca.key"))));
    }

    /** Pod lists that failed (each a violation of the scenario that read them: nothing was compared). */
    private final List<String> checkerFailures = new java.util.concurrent.CopyOnWriteArrayList<>();

    /** Claimed pods (name -> key hash) as the simulated API server has them. */
    Map<String, String> claims() {
        try {
            HttpResponse<String> res = plain.send(HttpRequest.newBuilder(pg.kubeApiUrl().resolve(
                    "/api/v1/namespaces/playpen/pods")).timeout(Duration.ofSeconds(20)).build(),
                    HttpResponse.BodyHandlers.ofString());
            Map<String, String> out = new TreeMap<>();
            for (JsonNode p : ChaosSuite.podItems(res.statusCode(), res.body())) {
                JsonNode hash = p.path("metadata").path("annotations").path(PlaypenKeys.IDEMPOTENCY_KEY_HASH);
                if (!hash.isMissingNode()) {
                    out.put(p.path("metadata").path("name").asText(), hash.asText());
                }
            }
            return out;
        } catch (IOException e) {
            checkerFailures.add("checker: listing pods failed: " + e.getMessage());
            return Map.of("error", e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Map.of("error", "interrupted");
        }
    }

    /**
     * Every corpus case on its own connection to replica 0, one after the other: its answer, no class names, no new
     * claim anywhere in the cluster, replica 0 still ready. Outcomes count the first answer's status (or "close").
     */
    ChaosSuite.Result hostileClients() throws Exception {
        long t0 = System.nanoTime();
        Playground.Replica r0 = pg.replicas().get(0);
        // the replicas run with the default deadlines (10 s head, 30 s body): a stalled case is closed by them
        HostileCorpus.Target target = new HostileCorpus.Target("127.0.0.1", r0.port(), frontProxyCa(),
                "front-proxy-client").readBudget(Duration.ofSeconds(35));
        List<HostileCorpus.Case> cases = HostileCorpus.load();
        Map<String, Integer> outcomes = new TreeMap<>();
        List<String> violations = new ArrayList<>();
        Map<String, String> before = claims();
        long rssBefore = rssBytes(r0.pid());
        long rssPeak = rssBefore;
        for (HostileCorpus.Case c : cases) {
            HostileCorpus.Outcome o = HostileCorpus.run(c, target, this::claims, () -> HostileCorpus.ready(target));
            outcomes.merge(o.observed(), 1, Integer::sum);
            if (!o.problems().isEmpty()) {
                violations.add(c.id() + ": " + String.join("; ", o.problems()));
            }
            rssPeak = Math.max(rssPeak, rssBytes(r0.pid()));
        }
        Map<String, String> after = claims();
        if (!before.equals(after)) {
            violations.add("claims changed over the corpus: before " + before + " after " + after);
        }
        if (!suite.allLiveReady()) {
            violations.add("a replica is not ready after the corpus");
        }
        violations.addAll(checkerFailures);
        violations.addAll(suite.newHistoryViolations());
        Map<String, Object> recovery = new LinkedHashMap<>();
        recovery.put("cases", cases.size());
        recovery.put("casesFailed", violations.size());
        recovery.put("rssBeforeMiB", rssBefore >> 20);
        recovery.put("rssPeakMiB", rssPeak >> 20);
        recovery.put("threadsAfter", threads(r0.pid()));
        return new ChaosSuite.Result("hostile clients", cases.size() + " corpus cases (src/test/resources/hostile) on "
                + "their own connections to replica-0", "hostile requests", cases.size(), outcomes, violations, recovery,
                ChaosSuite.seconds(t0));
    }

    /** Latencies and statuses of one measured phase of the normal clients. */
    record Phase(List<Long> nanos, Map<String, Integer> statuses) {
        long p(double q) {
            List<Long> sorted = new ArrayList<>(nanos);
            Collections.sort(sorted);
            if (sorted.isEmpty()) {
                return -1;
            }
            int rank = (int) Math.ceil(q / 100.0 * sorted.size());
            return sorted.get(Math.max(0, Math.min(sorted.size() - 1, rank - 1))) / 1_000_000;
        }
    }

    /**
     * Slow and idle clients: {@code normal} clients allocate (fresh key, then dealloc on 200) on replica 0, first
     * alone, then while {@code idle} TLS connections sit open, {@code slowloris} senders trickle request heads and
     * {@code slowBodies} trusted senders trickle bodies. The normal p99 under attack must stay within 2x of the run
     * without attackers (plus 50 ms, one scheduling hiccup on a shared 2-core machine); RSS must stay below the
     * Deployment's limit. Threads and RSS are reported.
     */
    ChaosSuite.Result slowAndIdleClients(int idle, int slowloris, int slowBodies, int normal, int opsPerClient)
            throws Exception {
        long t0 = System.nanoTime();
        Playground.Replica r0 = pg.replicas().get(0);
        Pki.Issued ca = frontProxyCa();
        Instant now = Instant.now();
        Pki.Issued fp = Pki.issue(ca, Pki.Subject.cn("front-proxy-client"), Pki.Usage.CLIENT, now.minusSeconds(60),
                Duration.ofDays(1));
        SSLContext trusted = OperatorHarness.sslContext(fp);
        SSLContext anonymous = OperatorHarness.sslContext(null);
        Map<String, Object> recovery = new LinkedHashMap<>();
        List<String> violations = new ArrayList<>();
        long rssStart = rssBytes(r0.pid());
        int threadsStart = threads(r0.pid());
        recovery.put("rssStartMiB", rssStart >> 20);
        recovery.put("threadsStart", threadsStart);

        // warm-up (not measured): the client's connections, the replica's JIT and its SubjectAccessReview path
        normalLoad(trusted, r0.port(), normal, Math.max(1, opsPerClient / 4), "warmup");
        Phase baseline = normalLoad(trusted, r0.port(), normal, opsPerClient, "calm");
        recovery.put("p50CalmMs", baseline.p(50));
        recovery.put("p99CalmMs", baseline.p(99));

        AtomicBoolean stop = new AtomicBoolean();
        List<SSLSocket> idleSockets = new CopyOnWriteArrayList<>();
        AtomicInteger idleFailed = new AtomicInteger();
        AtomicLong slowlorisConnections = new AtomicLong();
        AtomicLong slowBodyConnections = new AtomicLong();
        ExecutorService attackers = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(null, r, "chaos-attacker", 256 * 1024);
            t.setDaemon(true);
            return t;
        });
        AtomicLong rssPeak = new AtomicLong(rssStart);
        AtomicInteger threadsPeak = new AtomicInteger(threadsStart);
        Thread sampler = new Thread(() -> {
            while (!stop.get()) {
                rssPeak.accumulateAndGet(rssBytes(r0.pid()), Math::max);
                threadsPeak.accumulateAndGet(threads(r0.pid()), Math::max);
                try {
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "chaos-rss");
        sampler.setDaemon(true);
        Phase attacked;
        try {
            sampler.start();
            // idle connections: handshaken, then silent; opened by 8 threads
            long idleStart = System.nanoTime();
            List<java.util.concurrent.Future<?>> openers = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                int share = idle / 8 + (t < idle % 8 ? 1 : 0);
                openers.add(attackers.submit(() -> {
                    for (int i = 0; i < share && !stop.get(); i++) {
                        try {
                            SSLSocket s = (SSLSocket) anonymous.getSocketFactory().createSocket();
                            s.connect(new InetSocketAddress("127.0.0.1", r0.port()), 5000);
                            s.setSoTimeout(5000);
                            s.startHandshake();
                            idleSockets.add(s);
                        } catch (IOException e) {
                            idleFailed.incrementAndGet();
                        }
                    }
                }));
            }
            for (int i = 0; i < slowloris; i++) {
                attackers.submit(() -> trickle(anonymous, r0.port(), stop, slowlorisConnections, false));
            }
            for (int i = 0; i < slowBodies; i++) {
                attackers.submit(() -> trickle(trusted, r0.port(), stop, slowBodyConnections, true));
            }
            for (java.util.concurrent.Future<?> f : openers) {
                f.get(3, TimeUnit.MINUTES);
            }
            recovery.put("idleOpened", idleSockets.size());
            recovery.put("idleRefused", idleFailed.get());
            recovery.put("idleOpenMs", (System.nanoTime() - idleStart) / 1_000_000);
            attacked = normalLoad(trusted, r0.port(), normal, opsPerClient, "attacked");
        } finally {
            stop.set(true);
            attackers.shutdownNow();
            sampler.interrupt();
        }
        int stillOpen = 0;
        for (SSLSocket s : idleSockets) {
            if (open(s)) {
                stillOpen++;
            }
            s.close();
        }
        attackers.awaitTermination(30, TimeUnit.SECONDS);
        recovery.put("idleStillOpenAtEnd", stillOpen);
        recovery.put("slowlorisConnections", slowlorisConnections.get());
        recovery.put("slowBodyConnections", slowBodyConnections.get());
        recovery.put("p50AttackedMs", attacked.p(50));
        recovery.put("p99AttackedMs", attacked.p(99));
        recovery.put("rssPeakMiB", rssPeak.get() >> 20);
        recovery.put("threadsPeak", threadsPeak.get());
        Thread.sleep(2000);
        recovery.put("rssAfterMiB", rssBytes(r0.pid()) >> 20);
        recovery.put("threadsAfter", threads(r0.pid()));
        long bound = 2 * baseline.p(99) + 50;
        if (attacked.p(99) > bound) {
            violations.add("normal p99 under attack " + attacked.p(99) + " ms > 2 x " + baseline.p(99) + " ms + 50 ms");
        }
        if (rssPeak.get() > MEMORY_LIMIT_BYTES) {
            violations.add("replica-0 RSS peaked at " + (rssPeak.get() >> 20) + " MiB, over the 768 MiB limit");
        }
        if (attacked.statuses().getOrDefault("io", 0) > 0) {
            violations.add("normal clients lost " + attacked.statuses().get("io") + " requests to transport errors");
        }
        if (!suite.allLiveReady()) {
            violations.add("a replica is not ready after the attack");
        }
        violations.addAll(suite.newHistoryViolations());
        Map<String, Integer> outcomes = new TreeMap<>();
        baseline.statuses().forEach((k, v) -> outcomes.merge("calm " + k, v, Integer::sum));
        attacked.statuses().forEach((k, v) -> outcomes.merge("attacked " + k, v, Integer::sum));
        return new ChaosSuite.Result("slow and idle clients", normal + " clients x " + opsPerClient
                + " allocs on replica-0, calm then with " + idle + " idle TLS connections, " + slowloris
                + " slowloris heads, " + slowBodies + " slow bodies", "attackers", baseline.nanos().size()
                + attacked.nanos().size(), outcomes, violations, recovery, ChaosSuite.seconds(t0));
    }

    /**
     * {@code clients} threads, each {@code ops} allocs with a fresh key, 20 ms apart (a 200 is given back at once, not
     * timed).
     */
    Phase normalLoad(SSLContext trusted, int port, int clients, int ops, String phase) throws Exception {
        HttpClient http = HttpClient.newBuilder().sslContext(trusted).version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10)).build();
        List<Long> nanos = Collections.synchronizedList(new ArrayList<>());
        Map<String, Integer> statuses = new ConcurrentHashMap<>();
        ExecutorService pool = Executors.newFixedThreadPool(clients);
        try {
            List<java.util.concurrent.Future<?>> fs = new ArrayList<>();
            for (int c = 0; c < clients; c++) {
                int client = c;
                fs.add(pool.submit(() -> {
                    for (int i = 0; i < ops; i++) {
                        String key = "slow-" + phase + "-" + suite.seed + "-" + client + "-" + i;
                        String body = "{\"idempotencyKey\":\"" + key + "\",\"wireGuardPublicKey\":\""
                                + "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\",\"architecture\":\""
                                + (i % 2 == 0 ? "amd64" : "arm64") + "\"}";
                        long start = System.nanoTime();
                        int code = post(http, port, ALLOCS, body);
                        nanos.add(System.nanoTime() - start);
                        statuses.merge(code < 0 ? "io" : String.valueOf(code), 1, Integer::sum);
                        if (code == 200) {
                            post(http, port, DEALLOCS, "{\"idempotencyKey\":\"" + key + "\"}");
                        }
                        // think time: a phase lasts several seconds, so the attackers' deadlines cycle during it
                        sleepQuietly(20);
                    }
                }));
            }
            for (java.util.concurrent.Future<?> f : fs) {
                f.get(5, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
        return new Phase(new ArrayList<>(nanos), new TreeMap<>(statuses));
    }

    static int post(HttpClient http, int port, String path, String body) {
        try {
            HttpRequest req = HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + port + path))
                    .timeout(Duration.ofSeconds(30)).header("X-Remote-User", "chaos-normal")
                    .header("X-Remote-Group", "playpen-users").POST(HttpRequest.BodyPublishers.ofString(body)).build();
            return http.send(req, HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    /**
     * One slow sender until {@code stop}: a request head one header line per second (slowloris, no certificate), or
     * a full head and then a 60 KB body at 20 bytes a second (trusted certificate); reconnects when the server
     * closes the connection.
     */
    static void trickle(SSLContext ctx, int port, AtomicBoolean stop, AtomicLong connections, boolean body) {
        while (!stop.get()) {
            try (SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 5000);
                s.startHandshake();
                connections.incrementAndGet();
                OutputStream out = s.getOutputStream();
                String head = "POST " + ALLOCS + " HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Remote-User: slow\r\n"
                        + "X-Remote-Group: playpen-users\r\n";
                if (body) {
                    out.write((head + "Content-Length: 60000\r\n\r\n{\"idempotencyKey\":\"").getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                    while (!stop.get()) {
                        out.write("kkkkkkkkkkkkkkkkkkkk".getBytes(StandardCharsets.US_ASCII));
                        out.flush();
                        Thread.sleep(1000);
                    }
                } else {
                    out.write(head.getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                    for (int i = 0; !stop.get(); i++) {
                        out.write(("X-Slow-" + i + ": 1\r\n").getBytes(StandardCharsets.US_ASCII));
                        out.flush();
                        Thread.sleep(1000);
                    }
                }
            } catch (IOException e) {
                // closed by the server's deadline (or refused): reconnect after a breath
                sleepQuietly(200);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Whether the server still holds the connection open (a 1 ms read times out rather than ending). */
    static boolean open(SSLSocket s) {
        try {
            s.setSoTimeout(1);
            return s.getInputStream().read() >= 0;
        } catch (java.net.SocketTimeoutException e) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** VmRSS of a process in bytes (Linux /proc), or 0. */
    static long rssBytes(long pid) {
        return procStatus(pid, "VmRSS:") * 1024;
    }

    static int threads(long pid) {
        return (int) procStatus(pid, "Threads:");
    }

    private static long procStatus(long pid, String field) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
                if (line.startsWith(field)) {
                    return Long.parseLong(line.substring(field.length()).trim().split("\\s+")[0]);
                }
            }
        } catch (IOException | RuntimeException e) {
            // the process is gone
        }
        return 0;
    }
}
