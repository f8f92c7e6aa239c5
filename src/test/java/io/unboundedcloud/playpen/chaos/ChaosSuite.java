package io.unboundedcloud.playpen.chaos;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import io.unboundedcloud.playpen.chaos.ChaosProxy.Fault;
import io.unboundedcloud.playpen.support.OperatorHarness;

/**
 * The chaos suite ({@code mvn -B -Pchaos verify}): one simulated cluster, N operator replicas of the
 * packaged jar (separate processes, their API traffic through a {@link ChaosProxy}), and the scenarios "hostile
 * clients", "slow and idle clients" ({@link ClientAttacks}), "replicas and duplicates", "crash mid-load", "API
 * faults" and "pool under churn" ({@link PoolChurnScenario}, last: it restarts the replicas with other flags). Every
 * loop is bounded in count and time. Writes
 * {@code target/chaos/report.json} and a table on stdout; exits 1 on any invariant violation.
 */
public final class ChaosSuite implements AutoCloseable {
    static final ObjectMapper M = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    static final Duration TTL = Duration.ofSeconds(15);
    static final Duration LEASE = Duration.ofSeconds(6);
    static final Map<String, Integer> TARGETS = Map.of("runner/amd64", 2, "runner/arm64", 2);

    /** One row of the report. */
    public record Result(String scenario, String load, String faults, int requests, Map<String, Integer> outcomes,
            List<String> violations, Map<String, Object> recovery, long seconds) {
    }

    final Playground pg;
    final ChaosProxy proxy;
    final ClusterHistory history;
    final long seed;
    final HttpClient anon;
    final HttpClient plain = HttpClient.newHttpClient();
    private int reportedHistoryViolations;
    /**
     * What went wrong while the replicas started: listed in the report, and each a violation of the "startup" row (a
     * cache whose first LIST fails keeps retrying, so every replica turns ready without a restart).
     */
    final List<String> startupNotes = new ArrayList<>();

    ChaosSuite(Playground pg, ChaosProxy proxy, ClusterHistory history, long seed) throws Exception {
        this.pg = pg;
        this.proxy = proxy;
        this.history = history;
        this.seed = seed;
        this.anon = OperatorHarness.client(null);
    }

    /** Starts the cluster, the proxy, the history watch and {@code replicas} operators; waits until all are ready. */
    public static ChaosSuite start(Path jar, Path dir, int replicas, long seed) throws Exception {
        // the simulated kubelet keeps pods of one image unready, for "pool under churn"
        Playground pg = Playground.startCluster(jar, dir, replicas, List.of(PoolChurnScenario.CLUSTER_FLAG));
        ChaosProxy proxy = null;
        ClusterHistory history = null;
        try {
            proxy = new ChaosProxy(pg.kubeApiUrl(), seed);
            history = new ClusterHistory(pg.kubeApiUrl(), "playpen", TARGETS, TTL);
            ChaosSuite suite = new ChaosSuite(pg, proxy, history, seed);
            Path kubeconfig = pg.kubeconfigFor(proxy.url(), "proxy-kubeconfig");
            for (int i = 0; i < replicas; i++) {
                pg.start(i, kubeconfig, operatorFlags());
            }
            try {
                suite.awaitAllReady(Duration.ofSeconds(150));
            } catch (AssertionError notReady) {
                // a replica that never became ready is a violation of the "startup" row (its caches retry a first
                // LIST that fails or times out, so it should not need one); one restart lets the scenarios run
                suite.startupNotes.add(notReady.getMessage().lines().findFirst().orElse("") + ": restarted once");
                for (int i = 0; i < replicas; i++) {
                    if (!pg.ready(i, suite.anon)) {
                        pg.kill(i);
                        pg.start(i, kubeconfig, operatorFlags());
                    }
                }
                suite.awaitAllReady(Duration.ofSeconds(150));
            }
            return suite;
        } catch (Exception | Error e) {
            if (history != null) {
                history.close();
            }
            if (proxy != null) {
                proxy.close();
            }
            pg.close();
            throw e;
        }
    }

    static List<String> operatorFlags() {
        List<String> flags = new ArrayList<>(List.of("--runner-amd64-count=2", "--runner-arm64-count=2",
                "--control-plane-count=0", "--playpen-ttl=" + TTL.toSeconds() + "s", "--reconcile-interval=5s",
                "--log-format=text"));
        flags.addAll(Playground.FAST_LEASE);
        return flags;
    }

    void awaitAllReady(Duration timeout) throws Exception {
        for (int i = 0; i < pg.replicas().size(); i++) {
            int r = i;
            if (pg.replicas().get(i).alive()) {
                try {
                    OperatorHarness.awaitTrue(() -> pg.ready(r, anon), timeout, "replica " + r + " ready");
                } catch (AssertionError e) {
                    throw new AssertionError(e.getMessage() + "\n" + tail(pg.log(r)), e);
                }
            }
        }
    }

    static String tail(String log) {
        return log.length() > 4000 ? log.substring(log.length() - 4000) : log;
    }

    public Playground playground() {
        return pg;
    }

    /** Cluster-history violations found since the last call (they are cumulative over the suite). */
    List<String> newHistoryViolations() {
        List<String> all = history.violations();
        List<String> fresh = new ArrayList<>(all.subList(Math.min(reportedHistoryViolations, all.size()), all.size()));
        reportedHistoryViolations = all.size();
        return fresh;
    }

    /**
     * The cluster-history violations no scenario collected (a run narrowed to scenarios that do not, or events after
     * the last one's verdict): a row of their own, or empty when there are none.
     */
    java.util.Optional<Result> afterTheLastScenario() {
        List<String> left = newHistoryViolations();
        return left.isEmpty() ? java.util.Optional.empty()
                : java.util.Optional.of(new Result("after the last scenario", "-", "-", 0, Map.of(), left, Map.of(), 0));
    }

    /** A replica that was not ready at start (restarted once so that the scenarios run): a row of its own. */
    java.util.Optional<Result> startup() {
        return startupNotes.isEmpty() ? java.util.Optional.empty()
                : java.util.Optional.of(new Result("startup", pg == null ? "-" : pg.replicas().size() + " replicas",
                        "-", 0, Map.of(), List.copyOf(startupNotes), Map.of(), 0));
    }

    /** A fault the proxy never injected tested nothing. */
    static List<String> faultVerdict(Fault fault, long injected) {
        return injected > 0 ? List.of() : List.of("fault " + fault.name() + " was never injected: the run tested "
                + "nothing of it (no API request of the kind it hits, or the proxy did not inject)");
    }

    /** The items of a pod list the API server answered, for a checker. */
    static JsonNode podItems(int status, String body) throws java.io.IOException {
        if (status != 200) {
            // a Status has no items: read as a list, every check on it would pass
            throw new java.io.IOException("the API server answered " + status + " to the pod list: "
                    + (body.length() > 300 ? body.substring(0, 300) + "..." : body));
        }
        return M.readTree(body).path("items");
    }

    LoadRun load(String prefix) throws Exception {
        return new LoadRun(pg.dir(), URI.create(pg.endpoints().get("SHIM_URL")), seed ^ prefix.hashCode(), prefix);
    }

    /** Replicas and duplicates: concurrent clients, retried keys, different bodies, deallocs; a pool smaller than demand. */
    public Result replicasAndDuplicates(int requests, int clients) throws Exception {
        long t0 = System.nanoTime();
        LoadRun run = load("dup");
        run.run(new LoadRun.Mix(requests, clients, 0.20, 0.05, 0.10, 4, Duration.ofMinutes(4)));
        List<String> v = new ArrayList<>(run.violations(history));
        v.addAll(newHistoryViolations());
        return new Result("replicas and duplicates", pg.replicas().size() + " replicas, " + clients + " clients, "
                + requests + " requests (20% retried keys, 5% other body, 10% dealloc), pool 2+2", "none",
                run.attempts().size(), run.outcomes(), v, Map.of(), seconds(t0));
    }

    /** Crash mid-load: kill -9 a follower, then the leader, during the load; then restart both. */
    public Result crashMidLoad(int requests, int clients) throws Exception {
        long t0 = System.nanoTime();
        LoadRun run = load("crash");
        LoadRun.Mix mix = new LoadRun.Mix(requests, clients, 0.20, 0.05, 0.0, 6, Duration.ofMinutes(4));
        Thread loader = new Thread(() -> {
            try {
                run.run(mix);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "chaos-crash-load");
        loader.start();
        Map<String, Object> recovery = new LinkedHashMap<>();
        List<String> v = new ArrayList<>();
        awaitAttempts(run, requests / 4, loader);
        int leader = leaderIndex();
        int follower = leader == 0 ? 1 : 0;
        pg.kill(follower);
        recovery.put("killedFollower", "replica-" + follower);
        awaitAttempts(run, requests / 2, loader);
        leader = leaderIndex();
        if (leader < 0) {
            v.add("no replica held the Lease before the leader kill");
        } else {
            long wallKill = System.currentTimeMillis();
            long kill = System.nanoTime();
            pg.kill(leader);
            recovery.put("killedLeader", "replica-" + leader);
            int killed = leader;
            long newLeader = awaitNanos(() -> {
                int l = leaderIndex();
                return l >= 0 && l != killed;
            }, Duration.ofSeconds(60));
            recovery.put("newLeaderMs", newLeader < 0 ? "none within 60 s" : (newLeader - kill) / 1_000_000);
            // refill resumed: the first pod created once the new leader holds the Lease (the load keeps the pool drained)
            long since = newLeader < 0 ? kill : newLeader;
            long refill = awaitNanos(() -> history.firstAddedAfter(since) > 0, Duration.ofSeconds(60));
            long refillMs = refill < 0 ? -1 : (history.firstAddedAfter(since) - kill) / 1_000_000;
            recovery.put("refillResumedMs", refill < 0 ? "none within 60 s" : refillMs);
            long budgetMs = LEASE.toMillis() + 2000;
            recovery.put("budgetMs", budgetMs);
            if (refill < 0 || refillMs > budgetMs) {
                v.add("refill resumed after " + refillMs + " ms, budget lease + 2 s = " + budgetMs + " ms");
            }
            loader.join(Duration.ofMinutes(5).toMillis());
            long[] exp = history.expiriesSince(wallKill);
            recovery.put("expiriesAfterKill", exp[0]);
            recovery.put("worstExpiryLatenessMs", exp[1]);
            if (exp[0] > 0 && exp[1] > budgetMs + 1000) {
                v.add("a TTL expiry after the leader kill came " + exp[1] + " ms late, budget " + budgetMs + " ms");
            }
        }
        loader.join(Duration.ofMinutes(5).toMillis());
        // restarted replicas rejoin: ready once their caches sync, then served by the stand-in
        long restart = System.nanoTime();
        Path kubeconfig = pg.dir().resolve("proxy-kubeconfig");
        for (int i = 0; i < pg.replicas().size(); i++) {
            if (!pg.replicas().get(i).alive()) {
                pg.start(i, kubeconfig, operatorFlags());
            }
        }
        awaitAllReady(Duration.ofSeconds(180));
        recovery.put("restartedReadyMs", (System.nanoTime() - restart) / 1_000_000);
        int rejoined = leader < 0 ? follower : leader;
        double before = Playground.sum(pg.metrics(rejoined, plain), "playpen_alloc_requests");
        LoadRun probe = load("rejoin");
        long served = awaitNanos(() -> {
            try {
                probe.run(new LoadRun.Mix(4, 2, 0, 0, 0, 1, Duration.ofSeconds(20)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return Playground.sum(pg.metrics(rejoined, plain), "playpen_alloc_requests") > before;
        }, Duration.ofSeconds(60));
        recovery.put("restartedServes", served > 0);
        if (served < 0) {
            v.add("restarted replica-" + rejoined + " answered no alloc through the stand-in within 60 s");
        }
        v.addAll(run.violations(history));
        v.addAll(probe.violations(history));
        v.addAll(newHistoryViolations());
        List<String> overdue = history.overdue(LEASE.plusSeconds(10));
        if (!overdue.isEmpty()) {
            v.add("claimed pods alive > ttl + lease + 10 s: " + overdue);
        }
        return new Result("crash mid-load", pg.replicas().size() + " replicas, " + clients + " clients, " + requests
                + " requests (20% retried, 5% other body); kill -9 follower at 25%, leader at 50%", "kill -9",
                run.attempts().size() + probe.attempts().size(), merge(run.outcomes(), probe.outcomes()), v, recovery,
                seconds(t0));
    }

    /** One fault at one rate during load; readiness of every replica is sampled throughout. */
    public Result apiFault(Fault fault, double rate, int requests, int clients) throws Exception {
        long t0 = System.nanoTime();
        LoadRun run = load("fault-" + fault.name().toLowerCase() + "-" + (int) (rate * 100));
        long faultsBefore = proxy.injected().get(fault);
        long apiBefore = proxy.requests();
        Map<String, Object> recovery = new LinkedHashMap<>();
        ReadinessSampler sampler = new ReadinessSampler();
        sampler.start();
        proxy.clear().rate(fault, rate);
        if (fault == Fault.WATCH_GONE || fault == Fault.WATCH_CLOSED_EARLY) {
            // informers hold their watches for minutes: cut them so the new ones meet the fault
            recovery.put("watchesCut", proxy.closeWatches());
        }
        try {
            run.run(new LoadRun.Mix(requests, clients, 0.20, 0.05, 0.10, 4, Duration.ofSeconds(90)));
        } finally {
            proxy.clear();
        }
        long cleared = System.nanoTime();
        long allReady = awaitNanos(this::allLiveReady, Duration.ofSeconds(60));
        sampler.stop();
        recovery.put("notReadyMs", sampler.notReadyMs.get());
        recovery.put("readyAgainMs", allReady < 0 ? "not within 60 s" : Math.max(0, (allReady - cleared) / 1_000_000));
        long injected = proxy.injected().get(fault) - faultsBefore;
        recovery.put("faultsInjected", injected);
        recovery.put("apiRequests", proxy.requests() - apiBefore);
        List<String> v = new ArrayList<>(run.violations(history));
        v.addAll(newHistoryViolations());
        v.addAll(faultVerdict(fault, injected));
        if (allReady < 0) {
            v.add("a replica stayed not ready 60 s after the faults stopped");
        }
        return new Result("API faults", pg.replicas().size() + " replicas, " + clients + " clients, " + requests
                + " requests", fault.name() + " " + (int) (rate * 100) + "%", run.attempts().size(), run.outcomes(), v,
                recovery, seconds(t0));
    }

    /** Samples /readyz of every live replica every 250 ms and adds up replica-milliseconds not ready. */
    final class ReadinessSampler {
        final AtomicLong notReadyMs = new AtomicLong();
        private volatile boolean running = true;
        private Thread thread;

        void start() {
            thread = new Thread(() -> {
                while (running) {
                    for (int i = 0; i < pg.replicas().size(); i++) {
                        if (pg.replicas().get(i).alive() && !pg.ready(i, anon)) {
                            notReadyMs.addAndGet(250);
                        }
                    }
                    try {
                        Thread.sleep(250);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "chaos-readiness");
            thread.setDaemon(true);
            thread.start();
        }

        void stop() throws InterruptedException {
            running = false;
            thread.interrupt();
            thread.join(10_000);
        }
    }

    boolean allLiveReady() {
        for (int i = 0; i < pg.replicas().size(); i++) {
            if (pg.replicas().get(i).alive() && !pg.ready(i, anon)) {
                return false;
            }
        }
        return true;
    }

    /** The replica whose POD_NAME prefixes the Lease's holderIdentity, or -1. */
    int leaderIndex() {
        try {
            HttpResponse<String> res = plain.send(HttpRequest.newBuilder(pg.kubeApiUrl().resolve(
                    "/apis/coordination.k8s.io/v1/namespaces/playpen/leases/playpen-operator")).build(),
                    HttpResponse.BodyHandlers.ofString());
            if (res.statusCode() != 200) {
                return -1;
            }
            JsonNode lease = M.readTree(res.body());
            String holder = lease.at("/spec/holderIdentity").asText("");
            for (int i = 0; i < pg.replicas().size(); i++) {
                if (holder.startsWith("replica-" + i + "-") && pg.replicas().get(i).alive()) {
                    return i;
                }
            }
            return -1;
        } catch (Exception e) {
            return -1;
        }
    }

    private static void awaitAttempts(LoadRun run, int n, Thread loader) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofMinutes(3).toNanos();
        while (run.attempts().size() < n && loader.isAlive() && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
    }

    /** nanoTime when the condition first held (polled every 50 ms), or -1 at the timeout. */
    static long awaitNanos(java.util.function.BooleanSupplier condition, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (condition.getAsBoolean()) {
                return System.nanoTime();
            }
            Thread.sleep(50);
        }
        return -1;
    }

    static Map<String, Integer> merge(Map<String, Integer> a, Map<String, Integer> b) {
        Map<String, Integer> out = new java.util.TreeMap<>(a);
        b.forEach((k, n) -> out.merge(k, n, Integer::sum));
        return out;
    }

    static long seconds(long t0) {
        return (System.nanoTime() - t0) / 1_000_000_000L;
    }

    /** The run as a Markdown table on stdout (docs/reliability.md is made from report.json). */
    public static String table(List<Result> results) {
        StringBuilder sb = new StringBuilder();
        sb.append("| scenario | load | faults | requests | outcomes (attempts by status) | violations | recovery | s |\n");
        sb.append("|---|---|---|---:|---|---:|---|---:|\n");
        for (Result r : results) {
            sb.append("| ").append(r.scenario()).append(" | ").append(r.load()).append(" | ").append(r.faults())
                    .append(" | ").append(r.requests()).append(" | ")
                    .append(r.outcomes().toString().replaceAll("[{}]", "").replace("=", ": ")).append(" | ")
                    .append(r.violations().size()).append(" | ")
                    .append(r.recovery().isEmpty() ? "-" : r.recovery().toString().replaceAll("[{}]", "")
                            .replace("=", ": "))
                    .append(" | ").append(r.seconds()).append(" |\n");
        }
        return sb.toString();
    }

    static void write(Path out, long seed, List<Result> results, List<String> startup, long totalSeconds)
            throws Exception {
        Files.createDirectories(out.getParent());
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("seed", seed);
        doc.put("totalSeconds", totalSeconds);
        doc.put("violations", results.stream().mapToInt(r -> r.violations().size()).sum());
        doc.put("startupNotes", startup);
        doc.put("scenarios", results);
        Files.writeString(out, M.writeValueAsString(doc));
    }

    @Override
    public void close() {
        history.close();
        proxy.close();
        pg.close();
    }

    /**
     * {@code -Dchaos.jar}, {@code -Dchaos.out} (report directory), {@code -Dchaos.seed}, {@code -Dchaos.requests}
     * (replicas and duplicates), {@code -Dchaos.crashRequests}, {@code -Dchaos.faultRequests} (per fault and rate),
     * {@code -Dchaos.clients}, {@code -Dchaos.faults} (comma-separated Fault names, default all),
     * {@code -Dchaos.rates} (default 0.1,0.3), {@code -Dchaos.scenarios} (default
     * hostile,slow,duplicates,crash,rotation,lagging,faults,churn), {@code -Dchaos.lagRounds}, {@code -Dchaos.lagWorkers},
     * {@code -Dchaos.lagRestartSeconds} (lagging replica), {@code -Dchaos.churnSeconds} (pool under churn, default
     * 300), {@code -Dchaos.idle}, {@code -Dchaos.slowloris},
     * {@code -Dchaos.slowBodies}, {@code -Dchaos.normalClients}, {@code -Dchaos.normalOps} (slow and idle clients).
     */
    public static void main(String[] args) throws Exception {
        Path jar = Path.of(System.getProperty("chaos.jar", "target/playpen-operator.jar"));
        Path out = Path.of(System.getProperty("chaos.out", "target/chaos"));
        long seed = Long.getLong("chaos.seed", 20261123L);
        int clients = Integer.getInteger("chaos.clients", 64);
        int requests = Integer.getInteger("chaos.requests", 2000);
        int crashRequests = Integer.getInteger("chaos.crashRequests", 1500);
        int faultRequests = Integer.getInteger("chaos.faultRequests", 120);
        int faultClients = Integer.getInteger("chaos.faultClients", 16);
        List<Fault> faults = new ArrayList<>();
        for (String f : System.getProperty("chaos.faults", "").split(",")) {
            if (!f.isBlank()) {
                faults.add(Fault.valueOf(f.trim()));
            }
        }
        if (faults.isEmpty()) {
            faults.addAll(List.of(Fault.values()));
        }
        List<String> scenarios = List.of(System.getProperty("chaos.scenarios",
                "hostile,slow,duplicates,crash,rotation,lagging,faults,churn").split(","));
        List<Double> rates = new ArrayList<>();
        for (String r : System.getProperty("chaos.rates", "0.1,0.3").split(",")) {
            rates.add(Double.parseDouble(r.trim()));
        }
        long t0 = System.nanoTime();
        List<Result> results = new ArrayList<>();
        List<String> startup = new ArrayList<>();
        Files.createDirectories(out);
        Path dir = Files.createTempDirectory(out, "run-");
        int status = 0;
        try (ChaosSuite suite = ChaosSuite.start(jar, dir, 3, seed)) {
            System.out.println("chaos: 3 replicas ready after " + seconds(t0) + " s (seed " + seed + ", files in " + dir + ")");
            startup.addAll(suite.startupNotes);
            suite.startup().ifPresent(results::add);
            suite.startupNotes.forEach(n -> System.out.println("chaos: startup: " + n));
            // client-side scenarios first, while the cluster is calm (the corpus checks that no claim appears)
            ClientAttacks attacks = new ClientAttacks(suite);
            if (scenarios.contains("hostile")) {
                results.add(attacks.hostileClients());
                System.out.println(table(results.subList(results.size() - 1, results.size())));
            }
            if (scenarios.contains("slow")) {
                results.add(attacks.slowAndIdleClients(Integer.getInteger("chaos.idle", 1000),
                        Integer.getInteger("chaos.slowloris", 50), Integer.getInteger("chaos.slowBodies", 10),
                        Integer.getInteger("chaos.normalClients", 8), Integer.getInteger("chaos.normalOps", 60)));
                System.out.println(table(results.subList(results.size() - 1, results.size())));
            }
            if (scenarios.contains("duplicates")) {
                results.add(suite.replicasAndDuplicates(requests, clients));
                System.out.println(table(results.subList(results.size() - 1, results.size())));
            }
            if (scenarios.contains("crash")) {
                results.add(suite.crashMidLoad(crashRequests, clients));
                System.out.println(table(results.subList(results.size() - 1, results.size())));
            }
            if (scenarios.contains("rotation")) {
                results.add(CertRotationScenario.run(suite));
                System.out.println(table(results.subList(results.size() - 1, results.size())));
            }
            if (scenarios.contains("lagging")) {
                results.add(new LaggingReplicaScenario(suite).run(Integer.getInteger("chaos.lagRounds", 1000),
                        Integer.getInteger("chaos.lagWorkers", 8),
                        Duration.ofSeconds(Integer.getInteger("chaos.lagRestartSeconds", 45)), seed));
                System.out.println(table(results.subList(results.size() - 1, results.size())));
            }
            for (Fault f : scenarios.contains("faults") ? faults : List.<Fault>of()) {
                for (double r : rates) {
                    results.add(suite.apiFault(f, r, faultRequests, faultClients));
                    System.out.println(table(results.subList(results.size() - 1, results.size())));
                }
            }
            if (scenarios.contains("churn")) {
                // last: it restarts the replicas with other pool flags and images
                results.add(PoolChurnScenario.run(suite, Duration.ofSeconds(Long.getLong("chaos.churnSeconds", 300))));
                System.out.println(table(results.subList(results.size() - 1, results.size())));
            }
            suite.afterTheLastScenario().ifPresent(results::add);
        } catch (Exception | Error e) {
            e.printStackTrace();
            status = 2;
        }
        write(out.resolve("report.json"), seed, results, startup, seconds(t0));
        System.out.println("\nchaos report (" + seconds(t0) + " s, seed " + seed + "): " + out.resolve("report.json"));
        System.out.println(table(results));
        for (Result r : results) {
            for (String v : r.violations()) {
                System.out.println("VIOLATION [" + r.scenario() + " / " + r.faults() + "] " + v);
            }
        }
        if (status == 0 && results.stream().anyMatch(r -> !r.violations().isEmpty())) {
            status = 1;
        }
        System.exit(status);
    }
}
