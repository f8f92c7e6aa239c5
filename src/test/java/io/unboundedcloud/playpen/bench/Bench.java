package io.unboundedcloud.playpen.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.unboundedcloud.playpen.kube.ApiCallCounter;
import io.unboundedcloud.playpen.kube.ClaimWriter;
import io.unboundedcloud.playpen.kube.KubeClients;
import io.unboundedcloud.playpen.kube.PoolReconciler;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The benchmark ({@code mvn -B -Pbench verify}): on loopback, against the fabric8 mock API holding
 * ready runner pods and nodes, it compares the bare claim PATCH (the physical limit here), the reference
 * operator's request pattern and our allocations through the HTTPS front door, then measures refill, TTL
 * lateness, an idle reconcile pass over 5000 pods, startup to ready and memory. Writes
 * {@code target/bench/results.json}, {@code target/bench/latency.html} and a table on stdout.
 *
 * <p>System properties: {@code bench.pods} (200), {@code bench.requests} (200 per scenario and concurrency),
 * {@code bench.warmup} (50 per scenario and concurrency, after {@code bench.jitWarmup} (1500) requests of each
 * scenario at c=8 once per pod count), {@code bench.concurrency} (1,8,32), {@code bench.scale} (1000; more pod counts for
 * the comparison, e.g. 1000,5000; empty skips), {@code bench.large} (5000), {@code bench.refillSamples} (10),
 * {@code bench.ttlSamples} (6), {@code bench.jar} (target/playpen-operator.jar; empty skips the separate process),
 * {@code bench.jarJvmArgs}, {@code bench.out} (target/bench), {@code bench.largeClaimed} (0; of the large pool, how
 * many pods are created already claimed), {@code bench.cpuAllocs} (400), {@code bench.cpuConcurrency} (32) and
 * {@code bench.cpuReplicas} (1,2,3,1): allocations against the packaged jar as 1, 2 and 3 separate replicas, with the
 * operator's CPU time per allocation from the processes' CPU accounting, first in the fresh JVM and then, after
 * {@code bench.cpuWarmAllocs} (2000) more allocations, in steady state; a count listed again is measured again in
 * fresh processes (keys ending in {@code _again}), and the replicas' target divides by the mean of one replica's
 * runs (one replica before and after the others: this machine's drift between them cancels); {@code bench.routes}
 * (routes).
 * {@code bench.client} (vertx; or jdk): the HTTPS client of the alloc and replay requests ({@link BenchHttps}).
 * {@code bench.profile} (none; {@code cpu} or {@code itimer}) and {@code bench.profileConcurrency} (1): a CPU profile of
 * each scenario's measured requests ({@link ScenarioProfile}); a profiled run's figures are not the targets'.
 * {@code bench.operatorFlags} (none): more flags, space-separated, for every operator the bench starts, in process and
 * as the jar (e.g. {@code --tls-provider=jdk} to compare the two TLS implementations back to back).
 * {@code bench.histogram} (false): each jar process's class histogram after its full collection, in
 * {@code operator-jar-<pods>-histogram.txt} beside the results (what the live heap per cached pod is made of).
 * {@code bench.jitSettleRounds} (60): at most this many warm-up rounds after {@code bench.jitWarmup} until the JIT
 * is quiet ({@link #settleJit}); {@code bench.rounds} (4): every concurrency in interleaved rounds ({@link #interleaved}).
 * Beside the bare PATCH, the reference pattern, our allocations and replays, each comparison measures the floor of
 * any HTTPS front door here ({@link TlsFloor}), the floor of one built on Camel's netty-http ({@link CamelFloor}) and,
 * at c=1, what an exactly-once answer cannot cost less than: the
 * bare PATCH answered once a watch has delivered it, and a bare GET ({@link LimitScenarios}). The jar replicas run
 * with leader election on, as the image does, and are measured once one of them leads.
 * {@code target/playpen-bench.jar} ({@link BenchJar}) runs the same without Maven.
 */
public final class Bench {
    static final String NS = TestCluster.NS;
    static final String ALLOC_PATH = "/apis/" + PlaypenKeys.GROUP + "/" + PlaypenKeys.VERSION + "/allocs";
    static final int NODES = 10;
    static final int FIRST_PORT = 20000;
    static final String BASELINE = "baseline-patch";
    static final String REFERENCE = "reference-pattern";
    static final String OURS = "alloc-https";
    static final String REPLAY = "replay-https";
    static final String FLOOR = "floor-https";
    static final String CAMEL_FLOOR = "camel-floor-https";
    static final String DOOR = "door-https";
    /** A measured run's CPU of this whole JVM per request, in microseconds ({@link Measured}). */
    static final String CPU_PER_REQUEST = "cpuMicrosPerRequest";
    static final int CORES = Runtime.getRuntime().availableProcessors();

    final int pods = intProp("bench.pods", 200);
    final int requests = intProp("bench.requests", 200);
    final int warmup = intProp("bench.warmup", 50);
    int[] concurrencies = ints(System.getProperty("bench.concurrency", "1,8,32"));
    final int[] scale = ints(System.getProperty("bench.scale", "1000"));
    final int large = intProp("bench.large", 5000);
    /** Of the {@code large} pods, how many are created already claimed (the rest idle). */
    final int largeClaimed = intProp("bench.largeClaimed", 0);
    /** Pods of the {@code huge} phase ({@link HugePool}; 0 skips it), how many of them claimed, over how many nodes. */
    final int huge = intProp("bench.huge", 100_000);
    final int hugeClaimed = intProp("bench.hugeClaimed", 50_000);
    final int hugeNodes = intProp("bench.hugeNodes", 2_000);
    final int refillSamples = intProp("bench.refillSamples", 10);
    final int ttlSamples = intProp("bench.ttlSamples", 6);
    final String jar = System.getProperty("bench.jar", "target/playpen-operator.jar");
    final boolean cds = Boolean.parseBoolean(System.getProperty("bench.cds", "true"));
    boolean cdsTrained;
    final List<String> operatorFlags = words(System.getProperty("bench.operatorFlags", ""));
    final String jarJvmArgs = System.getProperty("bench.jarJvmArgs",
            "-XX:MaxRAM=768m -XX:MaxRAMPercentage=75 -XX:+ExitOnOutOfMemoryError -Dfile.encoding=UTF-8");
    /**
     * The jar's JVM flags in the {@code huge} phase: {@code bench.jarJvmArgs} with a 1.5 GiB memory limit (the
     * Deployment's 768Mi holds about 40,000 pods; see docs/performance.md).
     */
    final String hugeJarJvmArgs = System.getProperty("bench.hugeJarJvmArgs", withMaxRam(jarJvmArgs, "1536m"));
    final Path out = Path.of(System.getProperty("bench.out", "target/bench"));
    final List<String> phases = List.of(System.getProperty("bench.phases", "compare,refill,ttl,large,huge,burst").split(","));

    final int cpuAllocs = intProp("bench.cpuAllocs", 400);
    final int[] cpuConcurrency = ints(System.getProperty("bench.cpuConcurrency", "32"));
    /** After the fresh-JVM CPU measurement, this many more allocations, then the same measurement in steady state. */
    final int cpuWarmAllocs = intProp("bench.cpuWarmAllocs", 2000);
    /** Unmeasured requests of each scenario (at c=8) before an environment's comparison. */
    final int jitWarmup = intProp("bench.jitWarmup", 1500);
    /**
     * After the JIT warm-up, at most this many more rounds (a fifth of {@code jitWarmup} of each scenario at c=8)
     * until the JIT compiles for less than {@link #JIT_SETTLED_PERCENT}% of the wall time of
     * {@link #JIT_QUIET_ROUNDS} rounds in a row.
     */
    final int jitSettleRounds = intProp("bench.jitSettleRounds", 60);
    /** Each concurrency is measured in this many interleaved rounds ({@link #interleaved}); 1: one block each. */
    final int rounds = intProp("bench.rounds", 4);
    static final int ROUND_WARMUP = 20;
    static final double JIT_SETTLED_PERCENT = 10;
    /**
     * Rounds in a row the JIT must stay under {@link #JIT_SETTLED_PERCENT}%: over 100,000 pods one quiet round came
     * between busy ones (5% after 60 to 130%, then 30 to 60% again), and the measured allocations still carried 370
     * to 440 us of compilation each.
     */
    static final int JIT_QUIET_ROUNDS = 3;
    final Map<Integer, Object> jitSettle = new LinkedHashMap<>();
    static final int JIT_WARMUP_CONCURRENCY = 8;
    final int[] cpuReplicas = ints(System.getProperty("bench.cpuReplicas", "1,2,3,1"));
    /**
     * Empty: no profile. Otherwise async-profiler's event ({@code cpu}, {@code itimer}) sampled while each scenario's
     * measured requests run at the concurrencies of {@code bench.profileConcurrency} ({@link ScenarioProfile}).
     */
    final String profileEvent = System.getProperty("bench.profile", "");
    final int[] profileConcurrency = ints(System.getProperty("bench.profileConcurrency", "1"));
    /** The profiler of {@code bench.profile} (null: none), writing under {@link #out}. */
    private final ScenarioProfile profile = profileEvent.isBlank() ? null : new ScenarioProfile(profileEvent, out);

    final Map<String, Object> results = new LinkedHashMap<>();
    final List<Run> runs = new ArrayList<>();
    final Map<Integer, Object> selection = new LinkedHashMap<>();
    final AtomicInteger keySeq = new AtomicInteger();
    final long benchStart = System.nanoTime();

    /** One measured scenario at one pod count and concurrency. */
    record Run(Stats stats, ApiCounts api, Map<String, Object> extra) {
    }

    public static void main(String[] args) throws Exception {
        int code = 0;
        try {
            new Bench().run();
        } catch (Throwable t) {
            t.printStackTrace();
            code = 1;
        }
        // the mock server and informers leave non-daemon threads behind
        System.exit(code);
    }

    void run() throws Exception {
        Files.createDirectories(out);
        results.put("config", config());
        log("playpen-operator bench: pods=%d requests=%d warmup=%d concurrency=%s scale=%s large=%d", pods, requests,
                warmup, Arrays.toString(concurrencies), Arrays.toString(scale), large);

        Map<Integer, Map<String, Object>> startups = new LinkedHashMap<>();
        if (phases.contains("compare")) {
            try (Env env = Env.open(this, pods)) {
                startups.put(pods, env.startup());
                comparison(env);
                results.put("memoryInProcessAfterAllocWarmup", inProcessMemory());
                Map<String, Object> jarAtN = jarProcess(env.cluster, pods,
                        List.of("--runner-amd64-count=0", "--runner-arm64-count=0"), 0);
                if (jarAtN != null) {
                    startups.get(pods).put("jarProcess", jarAtN);
                    if (cpuAllocs > 0) {
                        results.put("operatorProcessAllocs", operatorProcessAllocs(env,
                                List.of("--runner-amd64-count=0", "--runner-arm64-count=0")));
                    }
                }
            }
            for (int n : scale) {
                if (n <= 0 || n == pods) {
                    continue;
                }
                try (Env env = Env.open(this, n)) {
                    startups.put(n, env.startup());
                    comparison(env);
                }
            }
            results.put("startup", startups);
            results.put("candidateSelection", selection);
            results.put("jitSettle", jitSettle);
        }
        if (phases.contains("refill")) {
            results.put("refill", refill());
        }
        if (phases.contains("ttl")) {
            results.put("ttl", ttl());
            // the timer follows renewed expiries (RenewedTtl)
            results.put("ttlRenewed", new RenewedTtl(this).run());
        }
        if (phases.contains("large")) {
            results.put("large", largePhase());
        }
        if (phases.contains("huge") && huge > 0) {
            results.put("huge", new HugePool(this).run());
        }
        if (phases.contains("burst")) {
            // a burst of 4x the pool with waitSeconds (WaitBurst)
            results.put("burstWithWait", new WaitBurst(this).run());
        }
        if (!phases.containsAll(List.of("compare", "refill", "ttl", "large"))) {
            // some phases only (bench.phases): the report has the targets those phases measure, and says so
            log("partial run, phases %s: %s", phases, results.keySet());
            results.put("partialPhases", phases);
        }
        results.put("runs", runs.stream().map(this::runMap).toList());
        results.put("targets", targets());
        results.put("benchSeconds", Stats.round((System.nanoTime() - benchStart) / 1e9));

        String table = table();
        System.out.println(table);
        ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        Files.writeString(out.resolve("results.json"), json.writeValueAsString(results));
        Files.writeString(out.resolve("latency.html"), LatencyChart.html("playpen-operator allocation latency",
                panels(), table));
        System.out.println("wrote " + out.resolve("results.json") + " and " + out.resolve("latency.html"));
    }

    // ------------------------------------------------------------------ environment

    /** A mock API with N ready runner pods over {@link #NODES} nodes and the operator running in-process. */
    static final class Env implements AutoCloseable {
        final Bench bench;
        final int pods;
        final TestCluster cluster;
        final KubernetesClient client;
        OperatorHarness op;
        BenchHttps https;
        ClaimWriter baselineWriter;
        ReferencePattern reference;
        double startupMs;
        double createPodsMs;

        private Env(Bench bench, int pods) {
            this.bench = bench;
            this.pods = pods;
            this.cluster = TestCluster.start();
            this.client = benchClient(cluster);
        }

        static Env open(Bench bench, int pods, String... flags) throws Exception {
            return open(bench, pods, 0, flags);
        }

        /** {@code pods} idle runners plus {@code claimed} runners created already claimed. */
        static Env open(Bench bench, int pods, int claimed, String... flags) throws Exception {
            return open(bench, pods, claimed, 0, flags);
        }

        /**
         * {@code pods} idle runners plus {@code claimed} already claimed, over {@code nodes} nodes; with
         * {@code nodes} 0, over {@link #NODES} nodes with a host port of their own each (as the operator's pool
         * makes them), else as a large cluster has them: each host port on several nodes ({@link #createPool}).
         */
        static Env open(Bench bench, int pods, int claimed, int nodes, String... flags) throws Exception {
            Env e = new Env(bench, pods);
            try {
                for (int i = 0; i < Math.max(NODES, nodes); i++) {
                    e.cluster.addNode("node-" + i, "amd64", "203.0." + (113 + i / 240) + "." + (10 + i % 240));
                }
                long t0 = System.nanoTime();
                if (nodes > 0) {
                    createPool(e.cluster, pods, claimed, nodes);
                } else {
                    createReadyRunners(e.cluster, pods);
                    createClaimedRunners(e.cluster, pods, claimed);
                }
                e.createPodsMs = (System.nanoTime() - t0) / 1e6;
                long s0 = System.nanoTime();
                List<String> all = new ArrayList<>(List.of(flags));
                all.addAll(bench.operatorFlags);
                e.op = new OperatorHarness(e.cluster, all.toArray(new String[0]));
                e.startupMs = (System.nanoTime() - s0) / 1e6;
                e.awaitIdle(pods);
                // the JIT warm-up runs at its own concurrency, whatever -Dbench.concurrency lists
                e.https = BenchHttps.open(e.cluster.frontProxyClient, Math.max(JIT_WARMUP_CONCURRENCY,
                        Arrays.stream(bench.concurrencies).max().orElse(1)));
                e.baselineWriter = new ClaimWriter(e.client, Clock.systemUTC(), new ApiCallCounter());
                e.reference = new ReferencePattern(e.client, NS);
                bench.log("  env: %d ready runner pods created in %.0f ms; operator ready in %.0f ms (in-process)", pods,
                        e.createPodsMs, e.startupMs);
                return e;
            } catch (Exception | Error x) {
                e.close();
                throw x;
            }
        }

        Map<String, Object> startup() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("pods", pods);
            m.put("inProcessStartupToReadyMs", Stats.round(startupMs));
            m.put("note", "in-process: OperatorApp.start() until ready() (caches synced, trust bundle loaded); "
                    + "the first environment also pays JVM class loading");
            return m;
        }

        void awaitIdle(int n) throws InterruptedException {
            try {
                await(() -> idle(op.app.podCache().pods()) == n, Duration.ofSeconds(60), "operator cache shows " + n + " idle pods");
            } catch (IllegalStateException x) {
                Collection<Pod> seen = op.app.podCache().pods();
                throw new IllegalStateException(x.getMessage() + "; it shows " + idle(seen) + " idle of " + seen.size()
                        + ", the API " + cluster.pods().stream().filter(ManagedPods::isIdle).count() + " idle of "
                        + cluster.pods().size(), x);
            }
        }

        @Override
        public void close() {
            if (https != null) {
                https.close();
            }
            if (op != null) {
                op.close();
            }
            client.close();
            cluster.close();
        }
    }

    static KubernetesClient benchClient(TestCluster cluster) {
        return KubeClients.create(new ConfigBuilder().withMasterUrl(cluster.server.url("/")).withNamespace(NS)
                .withTrustCerts(true).build());
    }

    /** Runs {@code tasks} on {@code threads} threads and returns their results in order (outside any measurement). */
    static <T> List<T> inParallel(int threads, List<Callable<T>> tasks) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<T>> fs = new ArrayList<>();
            for (Callable<T> t : tasks) {
                fs.add(pool.submit(t));
            }
            List<T> out = new ArrayList<>(fs.size());
            for (Future<T> f : fs) {
                out.add(f.get());
            }
            return out;
        } finally {
            pool.shutdown();
        }
    }

    static void createReadyRunners(TestCluster cluster, int n) throws Exception {
        List<Callable<Pod>> creates = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            int port = FIRST_PORT + i;
            String node = "node-" + (i % NODES);
            creates.add(() -> cluster.create(TestCluster.readyRunner("amd64", port, node)));
        }
        inParallel(4, creates);
    }

    /** Host ports a {@link #createPool} pool cycles through (each on several nodes), from {@link #FIRST_PORT}. */
    static final int POOL_PORTS = 40_000;

    /**
     * {@code idle} ready runners and {@code claimed} claimed ones over {@code nodes} nodes, as a large cluster has
     * them: host ports cycle through {@link #POOL_PORTS} from {@link #FIRST_PORT} (pod i on node i mod nodes, so
     * no node has a port twice while nodes &gt;= pods / POOL_PORTS), names carry the pod's index.
     */
    static void createPool(TestCluster cluster, int idle, int claimed, int nodes) throws Exception {
        String claimedAt = io.unboundedcloud.playpen.model.TtlPolicy.formatClaimedAt(Instant.now());
        List<Callable<Pod>> creates = new ArrayList<>();
        for (int i = 0; i < idle + claimed; i++) {
            int n = i;
            creates.add(() -> {
                String name = "playpen-runner-amd64-n" + n;
                PodBuilder b = TestCluster.readyRunner("amd64", FIRST_PORT + n % POOL_PORTS, "node-" + (n % nodes))
                        .editMetadata().withName(name).endMetadata();
                if (n >= idle) {
                    AllocCommand cmd = command(2_000_000 + n);
                    b.editMetadata().addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, cmd.keyHash())
                            .addToAnnotations(PlaypenKeys.REQUEST_HASH, cmd.requestHash())
                            .addToAnnotations(PlaypenKeys.CLIENT_WIREGUARD_PUBLIC_KEY, cmd.wireGuardPublicKey())
                            .addToAnnotations(PlaypenKeys.CLAIMED_AT, claimedAt)
                            .addToLabels(PlaypenKeys.ALLOCATED, Hashes.allocationId(NS, name)).endMetadata();
                }
                return cluster.create(b);
            });
        }
        inParallel(8, creates);
    }

    /** {@code n} ready runners already claimed (ports after the idle ones'), as a pool in steady use has. */
    static void createClaimedRunners(TestCluster cluster, int after, int n) throws Exception {
        if (n <= 0) {
            return;
        }
        List<Callable<Pod>> creates = new ArrayList<>();
        String claimedAt = io.unboundedcloud.playpen.model.TtlPolicy.formatClaimedAt(Instant.now());
        for (int i = 0; i < n; i++) {
            int port = FIRST_PORT + after + i;
            String node = "node-" + (i % NODES);
            AllocCommand cmd = command(1_000_000 + i);
            creates.add(() -> {
                PodBuilder b = TestCluster.readyRunner("amd64", port, node);
                String name = b.buildMetadata().getName();
                return cluster.create(b.editMetadata()
                        .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, cmd.keyHash())
                        .addToAnnotations(PlaypenKeys.REQUEST_HASH, cmd.requestHash())
                        .addToAnnotations(PlaypenKeys.CLIENT_WIREGUARD_PUBLIC_KEY, cmd.wireGuardPublicKey())
                        .addToAnnotations(PlaypenKeys.CLAIMED_AT, claimedAt)
                        .addToLabels(PlaypenKeys.ALLOCATED, Hashes.allocationId(NS, name)).endMetadata());
            });
        }
        inParallel(4, creates);
    }

    static int idle(Collection<Pod> pods) {
        int n = 0;
        for (Pod p : pods) {
            if (ManagedPods.isIdle(p)) {
                n++;
            }
        }
        return n;
    }

    /** Strips every claim (outside any measured window) and waits until the operator sees all pods idle again. */
    void release(Env e) throws Exception {
        List<Pod> claimed = e.client.pods().inNamespace(NS).list().getItems().stream().filter(ManagedPods::isClaimed).toList();
        List<Callable<Pod>> updates = new ArrayList<>();
        for (Pod p : claimed) {
            updates.add(() -> {
                Pod released = new PodBuilder(p).editMetadata()
                        .removeFromAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH)
                        .removeFromAnnotations(PlaypenKeys.REQUEST_HASH)
                        .removeFromAnnotations(PlaypenKeys.CLIENT_WIREGUARD_PUBLIC_KEY)
                        .removeFromAnnotations(PlaypenKeys.CLAIMED_AT)
                        .removeFromLabels(PlaypenKeys.ALLOCATED).endMetadata().build();
                return e.client.pods().inNamespace(NS).resource(released).update();
            });
        }
        inParallel(8, updates);
        // Allocated events pile up in the mock's store and would slow every later request there
        if (!e.client.v1().events().inNamespace(NS).list().getItems().isEmpty()) {
            e.client.v1().events().inNamespace(NS).delete();
        }
        e.awaitIdle(e.pods);
    }

    // ------------------------------------------------------------------ the three-way comparison

    /** What differs between the compared request patterns; everything else (load, counting) is shared. */
    interface Scenario {
        String name();

        /** Outside the timed window, before a batch of {@code count} requests starting at key index {@code first}. */
        default void prepare(Env e, int first, int count) throws Exception {
        }

        void run(Env e, int index, int worker) throws Exception;

        /** Outside the timed window, after a batch: lets asynchronous API calls caused by it land. */
        default void settle(Env e, int succeeded) throws Exception {
        }

        /** The HTTPS port its requests go to (the in-process operator's unless it says otherwise). */
        default int port(Env e) {
            return e.op.port;
        }

        /** Whether the scenario is measured at this concurrency (the JIT warm-up runs every scenario). */
        default boolean at(int concurrency) {
            return true;
        }

        /** Whether the scenario claims pods (then batches stay within half the pool and are released between). */
        default boolean claims() {
            return true;
        }
    }

    /** CPU cost of choosing candidates over this many pods (the allocator's only O(N) step), per call. */
    Map<String, Object> selectionCost(Env e) {
        io.unboundedcloud.playpen.model.Candidates cand = new io.unboundedcloud.playpen.model.Candidates(
                Map.of(PlaypenKeys.APP_NAME, PlaypenKeys.RUNNER_APP_NAME));
        Collection<Pod> cached = e.op.app.podCache().pods();
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        int sink = 0;
        // the full selection is O(N) (the 503 explanation path): fewer calls at large N keep the phase short
        int calls = Math.max(20, Math.min(300, 300_000 / Math.max(1, cached.size())));
        for (int i = 0; i < calls; i++) {
            sink += cand.select(command(i), cached, node -> java.util.Optional.of("203.0.113.10")).ordered().size();
        }
        long c0 = threads.getCurrentThreadCpuTime();
        long w0 = System.nanoTime();
        for (int i = 0; i < calls; i++) {
            sink += cand.select(command(i), cached, node -> java.util.Optional.of("203.0.113.10")).ordered().size();
        }
        long w1 = System.nanoTime();
        long c1 = threads.getCurrentThreadCpuTime();
        // what a request pays: one consistent read of the cache and the walk to its first usable candidate
        var allocator = e.op.app.allocator();
        for (int i = 0; i < 2000; i++) {
            sink += firstCandidate(allocator, command(i));
        }
        int hotCalls = 5000;
        long h0 = threads.getCurrentThreadCpuTime();
        long hw0 = System.nanoTime();
        for (int i = 0; i < hotCalls; i++) {
            sink += firstCandidate(allocator, command(i));
        }
        long hw1 = System.nanoTime();
        long h1 = threads.getCurrentThreadCpuTime();
        return map("pods", cached.size(), "cpuMicrosPerSelect", Stats.round((c1 - c0) / 1e3 / calls),
                "wallMicrosPerSelect", Stats.round((w1 - w0) / 1e3 / calls), "selectCalls", calls, "usable", sink == 42 ? -1 : 0,
                "hotPathCpuMicrosPerCall", Stats.round((h1 - h0) / 1e3 / hotCalls),
                "hotPathWallMicrosPerCall", Stats.round((hw1 - hw0) / 1e3 / hotCalls),
                "note", "cpuMicrosPerSelect: Candidates.select over every cached pod (full usability, the 503 "
                        + "explanation path); hotPath: Allocator.firstCandidate (the claimed-by-key "
                        + "lookup, then the ring walk to the first usable candidate), what an allocation pays before its "
                        + "claim write; before the ring this line measured PodCache.claimView + Candidates.walk");
    }

    /** The allocation hot path's selection: one cache read, then the first usable candidate of the walk. */
    static int firstCandidate(io.unboundedcloud.playpen.kube.Allocator allocator, AllocCommand cmd) {
        return allocator.firstCandidate(cmd).map(u -> u.hostPort()).orElse(0);
    }

    void comparison(Env e) throws Exception {
        Map<String, Object> sel = selectionCost(e);
        selection.put(e.pods, sel);
        log("  Candidates.select over %d cached pods: %s us CPU per call; hot path (cache read + walk to the first "
                + "candidate): %s us CPU per call", e.pods, sel.get("cpuMicrosPerSelect"), sel.get("hotPathCpuMicrosPerCall"));
        Scenario baseline = new BaselineScenario();
        Scenario reference = new ReferenceScenario();
        OursScenario ours = new OursScenario();
        // a first allocation's answer: the floor server's fixed answer (TlsFloor), of the size the front door sends
        String answer = e.https.alloc(0, e.op.port, allocBody(keySeq.getAndIncrement()));
        release(e);
        try (TlsFloor floor = TlsFloor.start(e.cluster.frontProxyCa, answer.getBytes(StandardCharsets.UTF_8));
                CamelFloor camelFloor = CamelFloor.start(e.cluster.frontProxyCa, answer.getBytes(StandardCharsets.UTF_8));
                LimitScenarios.WatchedPatch watched = new LimitScenarios.WatchedPatch(new BaselineScenario())) {
            // replays of the keys of the last alloc batch, which is still claimed, so they follow ours; the limits
            // of an exactly-once answer (LimitScenarios) at c=1 only
            comparison(e, List.of(baseline, reference, ours, new ReplayScenario(ours), new FloorScenario(floor.port()),
                    new FloorScenario(camelFloor.port(), CAMEL_FLOOR), new DoorScenario(), watched,
                    new LimitScenarios.BareGet()));
        }
    }

    private void comparison(Env e, List<Scenario> lineup) throws Exception {
        if (jitWarmup > 0) {
            // every scenario's code through the JIT before anything is measured, so no figure is a young JVM's
            // (the operator is a long-running server; the bare PATCH and the reference pattern get the same)
            long t0 = System.nanoTime();
            warmUp(e, lineup, jitWarmup);
            log("  JIT warm-up: %d requests of each scenario at c=%d in %.1f s", jitWarmup, JIT_WARMUP_CONCURRENCY,
                    (System.nanoTime() - t0) / 1e9);
            jitSettle.put(e.pods, settleJit(e, lineup));
        }
        for (int c : concurrencies) {
            log("  N=%d c=%d", e.pods, c);
            interleaved(e, lineup, c);
        }
        release(e);
    }

    /**
     * {@code n} unmeasured requests of each scenario in turn at c=8, then the claimed pods back when a scenario's
     * pods are released between batches ({@link Scenario#claims}).
     */
    void warmUp(Env e, List<Scenario> lineup, int n) throws Exception {
        for (Scenario sc : lineup) {
            measure(e, sc, JIT_WARMUP_CONCURRENCY, n);
        }
        if (lineup.stream().anyMatch(Scenario::claims)) {
            release(e);
        }
    }

    /**
     * More warm-up rounds until the JIT is quiet. This JVM holds the mock API server, the operator and the clients:
     * after the first warm-up C2 still compiled for ~100% of a round's wall time (one of the two cores), and came
     * down to 10-20% only after 16-20 more rounds at 200 pods, 30 to 60 rounds at 100,000; figures measured before
     * that are a compiling JVM's.
     */
    Map<String, Object> settleJit(Env e, List<Scenario> lineup) throws Exception {
        return settleJit(e, lineup, jitSettleRounds);
    }

    /** {@link #settleJit(Env, List)} in at most {@code maxRounds} rounds. */
    Map<String, Object> settleJit(Env e, List<Scenario> lineup, int maxRounds) throws Exception {
        java.lang.management.CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        int per = jitSettleRoundRequests();
        long t0 = System.nanoTime();
        List<Double> percents = new ArrayList<>();
        boolean settled = false;
        int done = 0;
        while (!settled && done < maxRounds && jit != null && jit.isCompilationTimeMonitoringSupported()) {
            long j0 = jit.getTotalCompilationTime();
            long w0 = System.nanoTime();
            warmUp(e, lineup, per);
            double percent = 100.0 * (jit.getTotalCompilationTime() - j0) / Math.max(1, (System.nanoTime() - w0) / 1_000_000);
            percents.add(Stats.round(percent));
            done++;
            settled = jitQuiet(percents);
        }
        log("  JIT settling: %d rounds of %d requests of each scenario in %.1f s, JIT time per round's wall time %s%% "
                + "(settled below %.0f%% for %d rounds in a row: %s)", done, per, (System.nanoTime() - t0) / 1e9,
                percents, JIT_SETTLED_PERCENT, JIT_QUIET_ROUNDS, settled);
        return map("rounds", done, "requestsPerScenarioAndRound", per, "jitPercentOfWallPerRound", percents,
                "settled", settled, "limitPercent", JIT_SETTLED_PERCENT, "quietRoundsInARow", JIT_QUIET_ROUNDS);
    }

    /** Requests of each scenario in one settling round. */
    int jitSettleRoundRequests() {
        return Math.max(50, jitWarmup / 5);
    }

    /** Whether the last {@link #JIT_QUIET_ROUNDS} rounds' JIT shares (percent of wall time) were all under the limit. */
    static boolean jitQuiet(List<Double> percents) {
        if (percents.size() < JIT_QUIET_ROUNDS) {
            return false;
        }
        return percents.subList(percents.size() - JIT_QUIET_ROUNDS, percents.size()).stream()
                .allMatch(p -> p < JIT_SETTLED_PERCENT);
    }

    /**
     * Concurrency {@code c} in {@code rounds} rounds, each scenario in turn in every round ({@code requests / rounds}
     * each, after a short warm-up): this machine's speed drifts by 20-30% over tens of seconds, and the ratios
     * against the bare PATCH (latency at c=1, throughput at c=32) are targets, so both sides of them are measured in
     * the same stretches of time. In single blocks the bare PATCH's throughput at c=32 read 1,966 to 3,803 /s in
     * four runs of one day. One round: each scenario in one block, after {@code bench.warmup} unmeasured requests.
     */
    private void interleaved(Env e, List<Scenario> lineup, int c) throws Exception {
        List<Scenario> here = lineup.stream().filter(sc -> sc.at(c)).toList();
        List<Measured> measured = here.stream().map(sc -> new Measured(sc, c)).toList();
        int per = Math.max(1, requests / rounds);
        int warm = rounds == 1 ? warmup : Math.min(warmup, Math.max(ROUND_WARMUP, c));
        for (int round = 0; round < rounds; round++) {
            int n = round == rounds - 1 ? requests - per * (rounds - 1) : per;
            for (int i = 0; i < here.size(); i++) {
                measureInto(e, measured.get(i), here.get(i), n, warm);
            }
        }
        for (Measured m : measured) {
            record(m.run(e));
        }
    }

    private void record(Run r) {
        runs.add(r);
        Stats s = r.stats();
        log("    %-18s p50 %8.2f  p90 %8.2f  p99 %8.2f  max %8.2f ms  %8.1f/s  err %d  api/op %s  cpu us/op %s (busy %s)",
                s.scenario, s.pMs(50), s.pMs(90), s.pMs(99), s.maxMs(), s.throughput(), s.errors,
                r.api().perOperation(s.count()).get("byVerbPerOp"), r.extra().get(CPU_PER_REQUEST),
                r.extra().get("cpuBusyShare"));
        if (r.extra().containsKey("breakdownAtC1")) {
            log("      c=1 breakdown: %s", r.extra().get("breakdownAtC1"));
        }
        if (r.extra().containsKey("profileCpuMicrosPerRequest")) {
            log("      profiled, CPU us per request: %s", r.extra().get("profileCpuMicrosPerRequest"));
        }
    }

    Run measure(Env e, Scenario sc, int c, int total) throws Exception {
        Measured m = new Measured(sc, c);
        m.quietFirst = false;
        measureInto(e, m, sc, total, warmup);
        return m.run(e);
    }

    /** What {@link #measureInto} gathers for one scenario at one concurrency, over one call or interleaved rounds. */
    final class Measured {
        final String name;
        final boolean claims;
        final int c;
        final List<long[]> parts = new ArrayList<>();
        long wall;
        /**
         * This JVM's CPU (mock API server, operator, clients) over the measured batches, the JIT compiler's excepted
         * ({@code jitNanos}); -1: not readable.
         */
        long cpuNanos;
        long jitNanos;
        /** Each batch waits for this JVM to be idle first ({@link #quiet}); warm-ups do not. */
        boolean quietFirst = true;
        int errors;
        Throwable firstError;
        final Map<String, Integer> apiBefore = new HashMap<>();
        final Map<String, Integer> apiAfter = new HashMap<>();
        // at concurrency 1, where the claim's write reaches the API server splits each request in two
        final Timestamps writes = new Timestamps("PATCH /api/v1/namespaces/playpen/pods/", "PUT /api/v1/namespaces/playpen/pods/");
        final List<long[]> windows = java.util.Collections.synchronizedList(new ArrayList<>());
        /** Profiled runs: samples by collapsed stack over the measured requests ({@link ScenarioProfile}). */
        final Map<String, Long> profiled = new HashMap<>();

        Measured(Scenario sc, int c) {
            this.name = sc.name();
            this.claims = sc.claims();
            this.c = c;
        }

        Run run(Env e) {
            long[] all = parts.stream().flatMapToLong(Arrays::stream).toArray();
            Stats s = new Stats(name, e.pods, c, all, wall, errors);
            Map<String, Object> x = new LinkedHashMap<>();
            if (c == 1 && claims) {
                x.put("breakdownAtC1", breakdown(windows, writes));
            }
            if (cpuNanos >= 0 && all.length > 0) {
                x.put(CPU_PER_REQUEST, Stats.round(cpuNanos / 1e3 / all.length));
                x.put("jitMicrosPerRequest", Stats.round(jitNanos / 1e3 / all.length));
                x.put("cpuBusyShare", Stats.round(cpuNanos / (double) Math.max(1, wall) / CORES));
            }
            if (!profiled.isEmpty()) {
                x.put("profileCpuMicrosPerRequest", ScenarioProfile.perRequest(profiled, all.length));
                try {
                    x.put("profileStacks", String.valueOf(profile.write(name, e.pods, c, profiled).getFileName()));
                } catch (java.io.IOException ex) {
                    throw new java.io.UncheckedIOException(ex);
                }
            }
            if (firstError != null) {
                x.put("firstError", String.valueOf(firstError));
                log("    %s: %d errors, first: %s", name, errors, firstError);
            }
            return new Run(s, ApiCounts.between(apiBefore, apiAfter), x);
        }
    }

    /** {@code total} measured requests of {@code sc} at {@code m.c}, after {@code warm} unmeasured ones, added to {@code m}. */
    void measureInto(Env e, Measured m, Scenario sc, int total, int warm) throws Exception {
        int c = m.c;
        int batch = sc.claims() ? Math.max(1, e.pods / 2) : total;
        if (sc.claims()) {
            release(e);
        }
        // every worker's keep-alive connection is open before anything is measured (BenchHttps.connect)
        e.https.connect(c, worker -> sc.port(e));
        int w = Math.min(warm, batch);
        if (w > 0) {
            int first = keySeq.getAndAdd(w);
            sc.prepare(e, first, w);
            Load.Batch b = Load.run(w, c, first, (i, worker) -> sc.run(e, i, worker));
            sc.settle(e, b.nanos().length);
            if (sc.claims()) {
                release(e);
            }
        }
        int done = 0;
        if (c == 1) {
            e.cluster.addRequestListener(m.writes);
        }
        while (done < total) {
            int n = Math.min(batch, total - done);
            int first = keySeq.getAndAdd(n);
            sc.prepare(e, first, n);
            if (m.quietFirst) {
                quiet();
            }
            Map<String, Integer> before = e.cluster.requestSnapshot();
            ScenarioProfile prof = profileAt(c);
            if (prof != null) {
                prof.start();
            }
            Load.Batch b = Load.run(n, c, first, (i, worker) -> {
                long t0 = System.nanoTime();
                sc.run(e, i, worker);
                if (c == 1) {
                    m.windows.add(new long[] {t0, System.nanoTime()});
                }
            });
            m.cpuNanos = b.cpuNanos() < 0 || m.cpuNanos < 0 ? -1 : m.cpuNanos + b.cpuNanos();
            m.jitNanos += Math.max(0, b.jitNanos());
            if (prof != null) {
                prof.stop(m.profiled);
            }
            sc.settle(e, b.nanos().length);
            Map<String, Integer> after = e.cluster.requestSnapshot();
            accumulate(m.apiBefore, m.apiAfter, before, after);
            m.parts.add(b.nanos());
            m.wall += b.wallNanos();
            m.errors += b.errors();
            if (m.firstError == null) {
                m.firstError = b.firstError();
            }
            done += n;
            if (sc.claims() && done < total) {
                release(e);
            }
        }
        e.cluster.removeRequestListener(m.writes);
    }

    /**
     * Waits (at most 2 s) until this JVM is next to idle: what the scenario before left running (the pools refilling
     * after released claims, a collection) would otherwise count in the CPU of the next one measured. Idle: at most
     * 5 ms of CPU in 50 ms besides the JIT compiler's (which the CPU figures leave out, and which may run on for
     * minutes in this JVM).
     */
    static void quiet() throws InterruptedException {
        for (int i = 0; i < 40; i++) {
            CpuClock.Span span = CpuClock.start();
            Thread.sleep(50);
            long used = span.stop()[0];
            if (used >= 0 && used <= 5_000_000L) {
                return;
            }
        }
    }

    /** The profile of this concurrency's measured requests, or null (not asked for). */
    private ScenarioProfile profileAt(int c) {
        return ScenarioProfile.wanted(profileEvent, profileConcurrency, c) ? profile : null;
    }

    /**
     * For sequential requests: time from the request's start to its (last) claim write arriving at the mock API,
     * and from there to the answer. Tells client-side and operator overhead from the API server's share.
     */
    static Map<String, Object> breakdown(List<long[]> windows, Timestamps writes) {
        List<Long> hits = writes.hits.stream().map(Timestamps.Hit::nanos).sorted().toList();
        List<Double> before = new ArrayList<>();
        List<Double> after = new ArrayList<>();
        for (long[] w : windows) {
            long last = -1;
            for (long h : hits) {
                if (h >= w[0] && h <= w[1]) {
                    last = h;
                }
            }
            if (last > 0) {
                before.add((last - w[0]) / 1e6);
                after.add((w[1] - last) / 1e6);
            }
        }
        return map("requestStartToClaimWriteAtApiMs", summary(before), "claimWriteAtApiToAnswerMs", summary(after));
    }

    /** Sums the per-batch deltas into one before/after pair (the release between batches is left out). */
    static void accumulate(Map<String, Integer> sumBefore, Map<String, Integer> sumAfter, Map<String, Integer> before,
            Map<String, Integer> after) {
        after.forEach((k, v) -> {
            int d = v - before.getOrDefault(k, 0);
            if (d > 0) {
                sumAfter.merge(k, d, Integer::sum);
                sumBefore.putIfAbsent(k, 0);
            }
        });
    }

    static AllocCommand command(int index) {
        String key = "bench-" + index;
        return new AllocCommand(Hashes.keyHash(key), ResourceType.RUNNER, "", TestCluster.wgKey(index % 997), "amd64");
    }

    /** The exact claim patch (ClaimWriter: JSON merge patch with the resourceVersion precondition), straight from fabric8. */
    static class BaselineScenario implements Scenario {
        private volatile List<Pod> targets = List.of();
        private volatile int baseFirst;

        @Override
        public String name() {
            return BASELINE;
        }

        @Override
        public void prepare(Env e, int first, int count) {
            List<Pod> idle = new ArrayList<>(idle(e));
            if (idle.size() < count) {
                throw new IllegalStateException(name() + " needs " + count + " idle pods, has " + idle.size());
            }
            java.util.Collections.shuffle(idle, new java.util.Random(first));
            targets = List.copyOf(idle.subList(0, count));
            baseFirst = first;
            picked(targets);
        }

        /** The idle pods a batch's targets are picked from: as the API server lists them. */
        List<Pod> idle(Env e) {
            return e.client.pods().inNamespace(NS).list().getItems().stream().filter(ManagedPods::isIdle).toList();
        }

        /** The pods picked for the batch about to run. */
        void picked(List<Pod> pods) {
        }

        @Override
        public void run(Env e, int index, int worker) {
            claim(e, index);
        }

        /** The claim of request {@code index}: the pod as the PATCH answered it. */
        Pod claim(Env e, int index) {
            Pod pod = targets.get(index - baseFirst);
            return e.baselineWriter.claim(pod, pod.getMetadata().getResourceVersion(), command(index));
        }
    }

    /** LIST, LIST, GET node, GET pod, PUT pod per allocation. */
    final class ReferenceScenario implements Scenario {
        @Override
        public String name() {
            return REFERENCE;
        }

        @Override
        public void run(Env e, int index, int worker) {
            e.reference.allocate(command(index));
        }
    }

    /** The body of the alloc request with key bench-{@code index}. */
    static String allocBody(int index) {
        return "{\"idempotencyKey\":\"bench-" + index + "\",\"resourceType\":\"runner\",\"wireGuardPublicKey\":\""
                + command(index).wireGuardPublicKey() + "\",\"architecture\":\"amd64\"}";
    }

    static HttpRequest allocRequest(OperatorHarness op, int index) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url(ALLOC_PATH))).timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.ofString(allocBody(index)));
        for (int i = 0; i < BenchHttps.ALLOC_HEADERS.length; i += 2) {
            b.header(BenchHttps.ALLOC_HEADERS[i], BenchHttps.ALLOC_HEADERS[i + 1]);
        }
        return b.build();
    }

    static void send(Env e, int index, int worker) throws Exception {
        e.https.alloc(worker, e.op.port, allocBody(index));
    }

    /** POST allocs through the HTTPS front door: front-proxy certificate, X-Remote headers, fresh key each. */
    final class OursScenario implements Scenario {
        volatile int lastFirst;
        volatile int lastCount;
        private long eventsBefore;

        @Override
        public String name() {
            return OURS;
        }

        @Override
        public void prepare(Env e, int first, int count) {
            lastFirst = first;
            lastCount = count;
            eventsBefore = eventsSettled(e);
        }

        @Override
        public void run(Env e, int index, int worker) throws Exception {
            send(e, index, worker);
        }

        @Override
        public void settle(Env e, int succeeded) throws Exception {
            // each new allocation queues one Allocated event, written asynchronously; count it with its batch
            await(() -> eventsSettled(e) >= eventsBefore + succeeded, Duration.ofSeconds(10), "Allocated events written");
        }
    }

    static long eventsSettled(Env e) {
        var ev = e.op.app.events();
        return ev.written() + ev.failed() + ev.dropped() + ev.aggregated();
    }

    /** The same requests again: idempotent replays answered from the cache, of ours' last batch (still claimed). */
    final class ReplayScenario implements Scenario {
        private final OursScenario ours;
        private volatile int first;
        private volatile int count;

        ReplayScenario(OursScenario ours) {
            this.ours = ours;
        }

        /** The keys of ours' last batch, as they are when this batch starts. */
        @Override
        public void prepare(Env e, int firstIndex, int n) {
            first = ours.lastFirst;
            count = ours.lastCount;
        }

        @Override
        public String name() {
            return REPLAY;
        }

        @Override
        public boolean claims() {
            return false;
        }

        @Override
        public void run(Env e, int index, int worker) throws Exception {
            send(e, first + Math.floorMod(index, count), worker);
        }
    }

    /**
     * The same alloc request (a replay's) sent to {@link TlsFloor}: TLS and HTTP with the same client, an answer of
     * the same size, and nothing of the operator's.
     */
    static final class FloorScenario implements Scenario {
        private final int port;
        private final String name;

        FloorScenario(int port) {
            this(port, FLOOR);
        }

        /** The same request to another floor server ({@link CamelFloor}: {@link #CAMEL_FLOOR}). */
        FloorScenario(int port, String name) {
            this.port = port;
            this.name = name;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public int port(Env e) {
            return port;
        }

        @Override
        public boolean claims() {
            return false;
        }

        @Override
        public void run(Env e, int index, int worker) throws Exception {
            e.https.alloc(worker, port, allocBody(index));
        }
    }

    /**
     * The API version's discovery (GET of its APIResourceList) through the operator's own front door, with the
     * alloc request's headers: the operator's connection guard, HTTP binding, route metrics, front-proxy
     * authentication and a route of one step answering a fixed document, and none of the alloc flow. Between
     * {@link CamelFloor} and a replay, it takes apart what the front door adds to Camel's HTTP consumer and what the
     * alloc flow adds to the front door.
     */
    static final class DoorScenario implements Scenario {
        @Override
        public String name() {
            return DOOR;
        }

        @Override
        public boolean claims() {
            return false;
        }

        @Override
        public void run(Env e, int index, int worker) throws Exception {
            e.https.get(worker, e.op.port, io.unboundedcloud.playpen.api.ApiPaths.VERSION_PATH);
        }
    }

    // ------------------------------------------------------------------ refill and TTL

    /** Mock-side timestamps of requests whose key starts with a prefix. */
    static final class Timestamps implements TestCluster.RequestListener {
        record Hit(String key, long nanos, long epochMillis) {
        }

        final ConcurrentLinkedQueue<Hit> hits = new ConcurrentLinkedQueue<>();
        private final List<String> prefixes;

        Timestamps(String... prefixes) {
            this.prefixes = List.of(prefixes);
        }

        @Override
        public void onRequest(String key) {
            for (String p : prefixes) {
                if (key.startsWith(p)) {
                    hits.add(new Hit(key, System.nanoTime(), System.currentTimeMillis()));
                    return;
                }
            }
        }

        Hit firstAfter(String prefix, long nanos) {
            return hits.stream().filter(h -> h.key().startsWith(prefix) && h.nanos() >= nanos)
                    .min((a, b) -> Long.compare(a.nanos(), b.nanos())).orElse(null);
        }
    }

    Map<String, Object> refill() throws Exception {
        log("refill: pool of 1 amd64 runner, claim it, time the replacement's create");
        TestCluster cluster = TestCluster.start();
        Timestamps ts = new Timestamps("POST /api/v1/namespaces/playpen/pods", "PATCH /api/v1/namespaces/playpen/pods/");
        cluster.addRequestListener(ts);
        cluster.addNode("node-0", "amd64", "203.0.113.10");
        List<Double> fromAnswer = new ArrayList<>();
        List<Double> fromPatch = new ArrayList<>();
        OperatorHarness op = null;
        try {
            op = new OperatorHarness(cluster, "--runner-amd64-count=1", "--reconcile-interval=10m");
            OperatorHarness harness = op;
            HttpClient http = OperatorHarness.client(cluster.frontProxyClient);
            for (int k = 0; k < refillSamples + 1; k++) {
                // the runner makes the pool's pending pod ready; the operator's cache must see it before we claim
                await(() -> cluster.pods().stream().anyMatch(p -> !ManagedPods.isClaimed(p)), Duration.ofSeconds(10),
                        "pool pod created");
                Pod pending = cluster.pods().stream().filter(p -> !ManagedPods.isClaimed(p)).findFirst().orElseThrow();
                makeReady(cluster, pending, "node-0");
                await(() -> harness.app.podCache().pods().stream().anyMatch(p -> !ManagedPods.isClaimed(p)
                        && p.getStatus() != null && "Running".equals(p.getStatus().getPhase())), Duration.ofSeconds(10),
                        "ready pool pod in cache");
                Thread.sleep(300);
                int index = keySeq.getAndIncrement();
                long t0 = System.nanoTime();
                HttpResponse<String> r = http.send(allocRequest(op, index), HttpResponse.BodyHandlers.ofString());
                long answered = System.nanoTime();
                if (r.statusCode() != 200) {
                    throw new IllegalStateException("refill claim answered " + r.statusCode() + ": " + r.body());
                }
                await(() -> ts.firstAfter("POST ", t0) != null, Duration.ofSeconds(10), "replacement create");
                Timestamps.Hit create = ts.firstAfter("POST ", t0);
                Timestamps.Hit patch = ts.firstAfter("PATCH ", t0);
                if (k == 0) {
                    continue; // warm-up
                }
                fromAnswer.add((create.nanos() - answered) / 1e6);
                fromPatch.add((create.nanos() - patch.nanos()) / 1e6);
            }
        } finally {
            if (op != null) {
                op.close();
            }
            cluster.close();
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("samples", fromAnswer.size());
        m.put("claimAnswerToCreateMs", summary(fromAnswer));
        m.put("claimPatchToCreateMs", summary(fromPatch));
        m.put("note", "create = the replacement pod's POST arriving at the mock API; includes the --refill-debounce "
                + "(default 100ms) and the watch round trip");
        log("  refill create after the claim's 200: %s ms", summary(fromAnswer));
        return m;
    }

    static void makeReady(TestCluster cluster, Pod p, String node) {
        String arch = ManagedPods.architecture(p);
        int port = ManagedPods.hostPort(p).orElseThrow();
        Pod ready = TestCluster.readyRunner(arch, port, node).build();
        cluster.client.pods().inNamespace(NS).withName(p.getMetadata().getName()).edit(x -> new PodBuilder(x)
                .editMetadata().addToAnnotations(ready.getMetadata().getAnnotations()).endMetadata()
                .editSpec().withNodeName(node).endSpec()
                .withStatus(ready.getStatus()).build());
    }

    Map<String, Object> ttl() throws Exception {
        log("ttl: --playpen-ttl=2s, %d claims spread over a second, time the deletes", ttlSamples);
        TestCluster cluster = TestCluster.start();
        Timestamps ts = new Timestamps("DELETE /api/v1/namespaces/playpen/pods/", "PATCH /api/v1/namespaces/playpen/pods/");
        cluster.addRequestListener(ts);
        cluster.addNode("node-0", "amd64", "203.0.113.10");
        List<Double> vsAnnotation = new ArrayList<>();
        List<Double> vsPrecise = new ArrayList<>();
        OperatorHarness op = null;
        try {
            for (int i = 0; i < ttlSamples + 1; i++) {
                cluster.create(TestCluster.readyRunner("amd64", FIRST_PORT + i, "node-0"));
            }
            op = new OperatorHarness(cluster, "--playpen-ttl=2s", "--reconcile-interval=10m");
            OperatorHarness harness = op;
            await(() -> idle(harness.app.podCache().pods()) == ttlSamples + 1, Duration.ofSeconds(10), "pods in cache");
            HttpClient http = OperatorHarness.client(cluster.frontProxyClient);
            Map<String, Long> patchMillis = new LinkedHashMap<>();
            Map<String, Instant> claimedAt = new HashMap<>();
            for (int i = 0; i < ttlSamples + 1; i++) {
                int index = keySeq.getAndIncrement();
                long t0 = System.nanoTime();
                HttpResponse<String> r = http.send(allocRequest(op, index), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() != 200) {
                    throw new IllegalStateException("ttl claim answered " + r.statusCode() + ": " + r.body());
                }
                Timestamps.Hit patch = ts.firstAfter("PATCH ", t0);
                String claimedName = patch.key().substring(patch.key().lastIndexOf('/') + 1);
                patchMillis.put(claimedName, patch.epochMillis());
                // read claimed-at now: on a loaded machine the first claims can expire before the loop ends
                for (Pod p : cluster.pods()) {
                    String at = ManagedPods.annotations(p).get(PlaypenKeys.CLAIMED_AT);
                    if (at != null && p.getMetadata().getName().equals(claimedName)) {
                        claimedAt.put(claimedName, Instant.parse(at));
                    }
                }
                Thread.sleep(1000 / Math.max(1, ttlSamples) + 37);
            }
            await(() -> ts.hits.stream().filter(h -> h.key().startsWith("DELETE ")).count() >= patchMillis.size(),
                    Duration.ofSeconds(15), "TTL deletes");
            boolean first = true;
            for (Map.Entry<String, Long> e : patchMillis.entrySet()) {
                if (first) {
                    first = false; // warm-up claim
                    continue;
                }
                String name = e.getKey();
                Timestamps.Hit del = ts.hits.stream().filter(h -> h.key().equals("DELETE /api/v1/namespaces/playpen/pods/" + name))
                        .findFirst().orElseThrow();
                vsAnnotation.add((double) (del.epochMillis() - claimedAt.get(name).plusSeconds(2).toEpochMilli()));
                vsPrecise.add((double) (del.epochMillis() - (e.getValue() + 2000)));
            }
        } finally {
            if (op != null) {
                op.close();
            }
            cluster.close();
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("samples", vsAnnotation.size());
        m.put("latenessVsClaimedAtAnnotationMs", summary(vsAnnotation));
        m.put("latenessVsPreciseClaimMs", summary(vsPrecise));
        m.put("note", "lateness = DELETE arriving at the mock minus (claimed-at + ttl). claimed-at has whole-second "
                + "resolution, so relative to the precise claim time (the PATCH at the mock) deletes come "
                + "up to 1 s early by design");
        log("  lateness vs claimed-at: %s ms; vs precise claim: %s ms", summary(vsAnnotation), summary(vsPrecise));
        return m;
    }

    // ------------------------------------------------------------------ 5000 pods: idle reconcile, memory, startup

    Map<String, Object> largePhase() throws Exception {
        int idleLarge = large - largeClaimed;
        log("large: %d runner pods (%d idle, %d claimed), pool target %d (nothing to do)", large, idleLarge, largeClaimed,
                idleLarge);
        String[] flags = {"--runner-amd64-count=" + idleLarge, "--runner-arm64-count=0",
            "--runner-wireguard-host-port-start=" + FIRST_PORT, "--runner-wireguard-host-port-end=" + (FIRST_PORT + 3 * large + 100),
            "--reconcile-interval=10m"};
        Map<String, Object> m = new LinkedHashMap<>();
        try (Env e = Env.open(this, idleLarge, largeClaimed, flags)) {
            m.put("pods", large);
            m.put("idlePods", idleLarge);
            m.put("claimedPods", largeClaimed);
            m.put("inProcessStartupToReadyMs", Stats.round(e.startupMs));
            Thread.sleep(1000); // the startup pass and any debounced pass have run
            Map<String, Object> rec = idleReconcile(e);
            m.put("idleReconcile", rec);
            Map<String, Object> sel = selectionCost(e);
            selection.put(large, sel);
            log("  selection over %d cached pods: select %s us, hot path %s us CPU per call", large,
                    sel.get("cpuMicrosPerSelect"), sel.get("hotPathCpuMicrosPerCall"));
            log("  idle reconcile over %d pods: cpu %s ms, wall %s ms, api calls %s, created %s", large,
                    rec.get("cpuMsPerPass"), rec.get("wallMsPerPass"), rec.get("apiCallsTotal"), rec.get("podsCreated"));

            // warm the allocation path, then memory of this JVM (mock API server + operator + bench)
            // (claims lower the idle count below the target, so the pool creates replacements meanwhile)
            int warm = Math.min(requests, idleLarge / 2);
            int first = keySeq.getAndAdd(warm);
            Load.Batch b = Load.run(warm, 8, first, (i, w) -> send(e, i, w));
            Stats ws = new Stats(OURS, large, 8, b.nanos(), b.wallNanos(), b.errors());
            m.put("warmupAllocs", ws.toMap());
            log("  %d allocs at concurrency 8 over %d pods: p50 %.2f ms, p99 %.2f ms, %.1f/s, %d errors", warm, large,
                    ws.pMs(50), ws.pMs(99), ws.throughput(), b.errors());
            int seq = Math.min(100, Math.max(1, idleLarge / 4));
            int seqFirst = keySeq.getAndAdd(seq);
            Load.Batch sb1 = Load.run(seq, 1, seqFirst, (i, w) -> send(e, i, w));
            Stats s1 = new Stats(OURS, large, 1, sb1.nanos(), sb1.wallNanos(), sb1.errors());
            m.put("allocsAtC1", s1.toMap());
            log("  %d allocs at concurrency 1 over %d pods: p50 %.2f ms, %d errors", seq, large, s1.pMs(50), sb1.errors());
            Thread.sleep(1000);
            m.put("memoryInProcess", inProcessMemory());
            e.op.close();
            e.op = null;

            Map<String, Object> jarRes = jarProcess(e.cluster, large, List.of(flags), 200);
            if (jarRes != null) {
                m.put("jarProcess", jarRes);
            }
        }
        return m;
    }

    /** Passes of {@link #idleReconcile} before the measured ones. */
    private static final int UNMEASURED_IDLE_PASSES = 20;

    /**
     * Whether each pass {@link #idleReconcile} asked for ran (passes is how many it measured, after
     * {@link #UNMEASURED_IDLE_PASSES}; a pass the operator ran of its own accord meanwhile counts too).
     */
    static boolean allPassesRan(Map<String, Object> rec) {
        return num(rec.get("passesRun")) >= num(rec.get("passes")) + UNMEASURED_IDLE_PASSES;
    }

    /** 20 unmeasured, then 30 measured passes of the pool reconciler with nothing to do: CPU, wall time, API calls. */
    Map<String, Object> idleReconcile(Env e) throws InterruptedException {
        PoolReconciler pool = e.op.app.poolReconciler();
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        // no pass runs until the cache's listeners (the pool's tally among them) have heard of every listed pod,
        // which they do after the store has them: a pass before that would return at once and measure nothing
        long waitStart = System.nanoTime();
        await(() -> e.op.app.podCache().listenersCaughtUp(), Duration.ofSeconds(120), "the pool heard of every pod");
        double caughtUpMs = (System.nanoTime() - waitStart) / 1e6;
        long passesBefore = pool.passes();
        for (int i = 0; i < UNMEASURED_IDLE_PASSES; i++) {
            pool.reconcile();
        }
        List<Double> cpu = new ArrayList<>();
        List<Double> wall = new ArrayList<>();
        int created = 0;
        Map<String, Integer> sumBefore = new HashMap<>();
        Map<String, Integer> sumAfter = new HashMap<>();
        for (int i = 0; i < 30; i++) {
            Map<String, Integer> before = e.cluster.requestSnapshot();
            long c0 = threads.getCurrentThreadCpuTime();
            long w0 = System.nanoTime();
            PoolReconciler.Result r = pool.reconcile();
            long w1 = System.nanoTime();
            long c1 = threads.getCurrentThreadCpuTime();
            Map<String, Integer> after = e.cluster.requestSnapshot();
            accumulate(sumBefore, sumAfter, before, after);
            created += r.created();
            cpu.add((c1 - c0) / 1e6);
            wall.add((w1 - w0) / 1e6);
        }
        ApiCounts api = ApiCounts.between(sumBefore, sumAfter);
        Map<String, Object> rec = new LinkedHashMap<>();
        rec.put("passes", cpu.size());
        rec.put("passesRun", pool.passes() - passesBefore);
        rec.put("listenersCaughtUpWaitMs", Stats.round(caughtUpMs));
        rec.put("cpuMsPerPass", summary(cpu));
        rec.put("wallMsPerPass", summary(wall));
        // the operator's own timers (caBundle check, serving certificate and owner-hash key reloads) read secrets and
        // the APIService now and then, whatever the pool does: counted apart, not as calls of the pass
        int background = api.backgroundReads();
        rec.put("apiCallsTotal", api.total() - background);
        rec.put("backgroundReads", background);
        rec.put("apiCallsByVerb", api.byVerb);
        rec.put("podsCreated", created);
        return rec;
    }

    Map<String, Object> inProcessMemory() {
        System.gc();
        var heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("vmRssMiB", Stats.round(OperatorProcess.procStatusKb(Path.of("/proc/self/status"), "VmRSS") / 1024.0));
        m.put("vmHwmMiB", Stats.round(OperatorProcess.procStatusKb(Path.of("/proc/self/status"), "VmHWM") / 1024.0));
        m.put("heapUsedAfterGcMiB", Stats.round(heap.getUsed() / 1048576.0));
        m.put("heapCommittedMiB", Stats.round(heap.getCommitted() / 1048576.0));
        m.put("note", "one JVM holds the mock API server (and its copy of every pod), the operator and the bench "
                + "clients: an upper bound for the operator");
        return m;
    }

    /**
     * The packaged jar as a separate process against {@code cluster}: startup to ready, then (when
     * {@code warmAllocs} > 0) allocations through its front door, then RSS and heap.
     */
    Map<String, Object> jarProcess(TestCluster cluster, int podCount, List<String> flags, int warmAllocs) throws Exception {
        return jarProcess(cluster, podCount, flags, warmAllocs, jarJvmArgs);
    }

    /** {@link #jarProcess(TestCluster, int, List, int)} with these JVM flags (the AppCDS archive is added to them). */
    Map<String, Object> jarProcess(TestCluster cluster, int podCount, List<String> flags, int warmAllocs, String jvmArgs)
            throws Exception {
        Path jarPath = jar.isBlank() ? null : Path.of(jar);
        if (jarPath == null || !Files.isRegularFile(jarPath)) {
            log("  (no %s: separate-process measurement skipped)", jar);
            return null;
        }
        List<String> all = jarFlags(flags);
        List<String> jvm = new ArrayList<>(words(jvmArgs));
        if (cds) {
            // as the image does: start from an AppCDS archive recorded by a training run of the same jar
            Path archive = out.resolve("playpen.jsa");
            if (!cdsTrained) {
                // an archive from another run may have other JVM flags and would be ignored: record afresh
                Files.deleteIfExists(archive);
                cdsTrained = true;
                List<String> train = new ArrayList<>(jvm);
                train.add("-XX:ArchiveClassesAtExit=" + archive.toAbsolutePath());
                try (OperatorProcess t = OperatorProcess.start(jarPath, cluster.server.url("/"), out, train, all,
                        out.resolve("operator-jar-cds-training.log"))) {
                    t.awaitReadyMs(OperatorHarness.client(cluster.frontProxyClient), Duration.ofSeconds(60));
                    t.stop(Duration.ofSeconds(120));
                }
                if (Files.exists(archive)) {
                    log("  AppCDS archive recorded: %s (%d MiB)", archive, Files.size(archive) >> 20);
                } else {
                    log("  no AppCDS archive was written (see %s): the jar starts without one, slower than the image",
                            out.resolve("operator-jar-cds-training.log"));
                }
            }
            if (Files.exists(archive)) {
                jvm.add("-XX:SharedArchiveFile=" + archive.toAbsolutePath());
            }
        }
        Map<String, Object> m = new LinkedHashMap<>();
        try (OperatorProcess p = OperatorProcess.start(jarPath, cluster.server.url("/"), out, jvm, all,
                out.resolve("operator-jar-" + podCount + ".log"))) {
            HttpClient http = OperatorHarness.client(cluster.frontProxyClient);
            double readyMs = p.awaitReadyMs(http, Duration.ofSeconds(60));
            m.put("pods", podCount);
            m.put("jvmArgs", jvm);
            m.put("startupToReadyMs", Stats.round(readyMs));
            log("  jar process with %d pods: ready %.0f ms after exec", podCount, readyMs);
            if (warmAllocs > 0) {
                Load.Batch b;
                try (BenchHttps clients = BenchHttps.open(cluster.frontProxyClient, 8)) {
                    int first = keySeq.getAndAdd(warmAllocs);
                    b = Load.run(warmAllocs, 8, first, (i, w) -> clients.alloc(w, p.port, allocBody(i)));
                }
                m.put("warmupAllocs", b.nanos().length);
                m.put("warmupErrors", b.errors());
                m.put("warmupAllocP50Ms", Stats.round(new Stats("jar", podCount, 8, b.nanos(), b.wallNanos(), 0).pMs(50)));
                Thread.sleep(2000); // let the pool refill triggered by the claims run
            }
            m.put("vmRssMiB", Stats.round(p.statusKb("VmRSS") / 1024.0));
            m.put("vmHwmMiB", Stats.round(p.statusKb("VmHWM") / 1024.0));
            long[] heap = p.heapKb();
            if (heap != null) {
                m.put("heapUsedMiB", Stats.round(heap[0] / 1024.0));
                m.put("heapCommittedMiB", Stats.round(heap[1] / 1024.0));
            }
            // the live set: what the heap holds once a full collection has run (what a cached pod really costs),
            // counted in the collection's own safepoint (the class histogram's total; the least of several in a row:
            // a full collection may leave dead objects in place, OperatorProcess.leastHistogram)
            String histogram = p.leastHistogram();
            long liveKb = OperatorProcess.histogramTotalKb(histogram);
            if (liveKb >= 0) {
                m.put("liveHeapMiB", Stats.round(liveKb / 1024.0));
            }
            if (Boolean.getBoolean("bench.histogram")) {
                // -Dbench.histogram=true: what the live heap holds, class by class (compare two pod counts' files)
                Path file = out.resolve("operator-jar-" + podCount + "-histogram.txt");
                Files.writeString(file, histogram);
                log("  jar process with %d pods: class histogram in %s", podCount, file);
            }
            // as before: the heap read by a second command after a full collection (it also holds what the process
            // allocated in between)
            p.jcmd("GC.run");
            long[] live = p.heapKb();
            if (live != null) {
                m.put("heapUsedAfterFullGcMiB", Stats.round(live[0] / 1024.0));
            }
            if (jvm.stream().anyMatch(a -> a.startsWith("-XX:NativeMemoryTracking="))) {
                // -Dbench.jarJvmArgs=... -XX:NativeMemoryTracking=summary: where the RSS goes, for profiling
                Path nmt = out.resolve("operator-jar-" + podCount + "-nmt.txt");
                Files.writeString(nmt, p.jcmd(System.getProperty("bench.nmtCommand", "VM.native_memory summary")));
                log("  jar process with %d pods: native memory summary in %s", podCount, nmt);
            }
            java.util.regex.Matcher gc = java.util.regex.Pattern.compile("-XX:\\+Use\\w+GC").matcher(p.jcmd("VM.flags"));
            m.put("gc", gc.find() ? gc.group() : "unknown");
            log("  jar process with %d pods: VmRSS %.1f MiB (peak %.1f), heap used %s MiB", podCount,
                    p.statusKb("VmRSS") / 1024.0, p.statusKb("VmHWM") / 1024.0, m.get("heapUsedMiB"));
        }
        return m;
    }

    // ------------------------------------------------------------------ operator CPU per allocation

    /**
     * Allocations against the packaged jar as one or more separate processes (replicas) sharing the mock API,
     * clients spread round-robin over them: the operator's own CPU time per allocation from the processes' CPU
     * accounting (/proc utime + stime via {@link ProcessHandle.Info#totalCpuDuration()}) over the measured batches
     * and the settling of their asynchronous writes, plus latency, throughput and API calls per allocation.
     */
    Map<String, Object> operatorProcessAllocs(Env e, List<String> flags) throws Exception {
        Map<String, Object> res = new LinkedHashMap<>();
        Path jarPath = Path.of(jar);
        List<String> all = jarFlags(flags);
        List<String> jvm = new ArrayList<>(words(jarJvmArgs));
        Path archive = out.resolve("playpen.jsa");
        if (cds && Files.exists(archive)) {
            jvm.add("-XX:SharedArchiveFile=" + archive.toAbsolutePath());
        }
        Set<Integer> measured = new HashSet<>();
        for (int replicas : cpuReplicas) {
            // a replica count listed again is measured again, in fresh processes, under keys of its own
            String again = measured.add(replicas) ? "" : AGAIN;
            String label = again.isEmpty() ? "" : " (again)";
            List<OperatorProcess> procs = new ArrayList<>();
            try {
                for (int r = 0; r < replicas; r++) {
                    procs.add(OperatorProcess.start(jarPath, e.cluster.server.url("/"), out, jvm, all,
                            out.resolve("operator-jar-cpu-" + replicas + "-" + r + again.replace('_', '-') + ".log")));
                }
                HttpClient probe = OperatorHarness.client(e.cluster.frontProxyClient);
                for (OperatorProcess p : procs) {
                    p.awaitReadyMs(probe, Duration.ofSeconds(60));
                }
                // measured only once one of them leads: the pool passes and TTL work are part of the cost
                int leaderIndex = OperatorProcess.awaitLeader(procs, Duration.ofSeconds(60));
                for (int c : cpuConcurrency) {
                    // a fresh JVM: its first allocations after a short warm-up (JIT compilation included)
                    Map<String, Object> m = jarAllocRun(e, procs, c, Math.min(warmup, Math.max(1, e.pods / 2)));
                    m.put("leaderReplica", leaderIndex);
                    res.put("replicas" + replicas + "_c" + c + again, m);
                    log("  jar x%d%s c=%d: %s", replicas, label, c, m);
                    if (cpuWarmAllocs > 0) {
                        // the same processes in steady state: another cpuWarmAllocs allocations per replica first,
                        // unmeasured (each process compiles its own code: with the same total, a third each would
                        // leave three processes still compiling, and their JIT would read as a cost of replicas)
                        Map<String, Object> warm = jarAllocRun(e, procs, c, cpuWarmAllocs * replicas);
                        if (c == 1) {
                            // the bare PATCH at c=1 measured now, next to the warm operator, for the ratio
                            Run bare = measure(e, new BaselineScenario(), 1, Math.min(cpuAllocs, requests));
                            warm.put("barePatchP50MsNow", Stats.round(bare.stats().pMs(50)));
                            warm.put("p50OverBarePatchP50", Stats.round(num(warm.get("p50Ms")) / bare.stats().pMs(50)));
                        }
                        warm.put("leaderReplica", leaderIndex);
                        res.put("replicas" + replicas + "_c" + c + "_warm" + again, warm);
                        log("  jar x%d%s c=%d after %d more allocs per replica: %s", replicas, label, c, cpuWarmAllocs,
                                warm);
                        if (replicas > 1 && c == Arrays.stream(cpuConcurrency).max().orElse(c)) {
                            // every request to the first replica, the others only watching: what each replica
                            // costs by following the others' claims, apart from splitting the load
                            Map<String, Object> one = jarAllocRun(e, procs, c, 0, true);
                            one.put("leaderReplica", leaderIndex); // the one serving is replica 0
                            res.put("replicas" + replicas + "_c" + c + "_warm_oneServing" + again, one);
                            log("  jar x%d%s c=%d, all requests to one of them: %s", replicas, label, c, one);
                        }
                    }
                }
            } finally {
                for (OperatorProcess p : procs) {
                    p.close();
                }
            }
        }
        return res;
    }

    /** The suffix of the keys of a replica count measured again ({@code bench.cpuReplicas} lists it twice). */
    static final String AGAIN = "_again";

    static long cpuNanos(OperatorProcess p) {
        return p.process.toHandle().info().totalCpuDuration().map(Duration::toNanos).orElse(-1L);
    }

    /**
     * How long each replica's idle CPU is read for before a measured run. A process's CPU time moves in 10 ms
     * ticks, so over 2 s an idle rate is known to 5 ms per second only (and three replicas' idle share per
     * allocation to a few hundred microseconds); 6 s gives 1.7 ms per second, for 4 s more per measured jar run
     * (about 80 s of a full run).
     */
    static final Duration IDLE_WINDOW = Duration.ofSeconds(6);

    /** Waits until no request reaches the mock API for 300 ms (asynchronous Event writes landed), at most 5 s. */
    static void quiesce(Env e) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        Map<String, Integer> last = e.cluster.requestSnapshot();
        while (System.nanoTime() < deadline) {
            Thread.sleep(300);
            Map<String, Integer> now = e.cluster.requestSnapshot();
            boolean same = true;
            for (Map.Entry<String, Integer> x : now.entrySet()) {
                if (!x.getKey().contains(" WATCH ") && !x.getValue().equals(last.get(x.getKey()))) {
                    same = false;
                }
            }
            if (same) {
                return;
            }
            last = now;
        }
    }

    /** {@code warmupAllocs} unmeasured allocations (in batches, released between), then {@code cpuAllocs} measured. */
    Map<String, Object> jarAllocRun(Env e, List<OperatorProcess> procs, int c, int warmupAllocs) throws Exception {
        return jarAllocRun(e, procs, c, warmupAllocs, false);
    }

    /** {@code oneServing}: every request to the first process (the others only watch). */
    Map<String, Object> jarAllocRun(Env e, List<OperatorProcess> procs, int c, int warmupAllocs, boolean oneServing)
            throws Exception {
        try (BenchHttps clients = BenchHttps.open(e.cluster.frontProxyClient, c)) {
            java.util.function.IntUnaryOperator portOf = w -> procs.get(oneServing ? 0 : w % procs.size()).port;
            clients.connect(c, portOf);
            return jarAllocRun(e, procs, c, warmupAllocs, (i, w) -> clients.alloc(w, portOf.applyAsInt(w), allocBody(i)));
        }
    }

    private Map<String, Object> jarAllocRun(Env e, List<OperatorProcess> procs, int c, int warmupAllocs, Load.Op op)
            throws Exception {
        int batch = Math.max(1, e.pods / 2);
        for (int warmed = 0; warmed < warmupAllocs;) {
            release(e);
            int w = Math.min(batch, warmupAllocs - warmed);
            Load.run(w, c, keySeq.getAndAdd(w), op);
            warmed += w;
        }
        quiesce(e);
        // each replica's CPU while nothing is asked of it (timers, lease renewal, watch keep-alives): what a replica
        // costs per second whatever the load, and part of every measured window's quiet end (quiesce)
        long[] idle0 = procs.stream().mapToLong(Bench::cpuNanos).toArray();
        long idleStart = System.nanoTime();
        Thread.sleep(IDLE_WINDOW.toMillis());
        double idleSeconds = (System.nanoTime() - idleStart) / 1e9;
        List<Double> idleMsPerSec = new ArrayList<>();
        for (int i = 0; i < procs.size(); i++) {
            idleMsPerSec.add(Stats.round((cpuNanos(procs.get(i)) - idle0[i]) / 1e6 / idleSeconds));
        }
        long cpu = 0;
        long[] byProcess = new long[procs.size()];
        OperatorProcess.CpuSplit split = new OperatorProcess.CpuSplit(0, 0, 0);
        List<long[]> parts = new ArrayList<>();
        long wall = 0;
        int errors = 0;
        Throwable firstError = null;
        Map<String, Integer> sumBefore = new HashMap<>();
        Map<String, Integer> sumAfter = new HashMap<>();
        long windowNanos = 0;
        int done = 0;
        while (done < cpuAllocs) {
            release(e);
            Thread.sleep(500); // the replicas' watches deliver the releases outside the measured window
            int n = Math.min(batch, cpuAllocs - done);
            int first = keySeq.getAndAdd(n);
            Map<String, Integer> before = e.cluster.requestSnapshot();
            long[] c0 = procs.stream().mapToLong(Bench::cpuNanos).toArray();
            List<OperatorProcess.CpuSplit> s0 = procs.stream().map(p -> p.cpuSplit().orElse(null)).toList();
            long w0 = System.nanoTime();
            Load.Batch b = Load.run(n, c, first, op);
            quiesce(e);
            long[] c1 = procs.stream().mapToLong(Bench::cpuNanos).toArray();
            windowNanos += System.nanoTime() - w0;
            for (int i = 0; i < c0.length; i++) {
                cpu += c1[i] - c0[i];
                byProcess[i] += c1[i] - c0[i];
                OperatorProcess.CpuSplit s1 = procs.get(i).cpuSplit().orElse(null);
                if (split != null && s0.get(i) != null && s1 != null) {
                    split = split.plus(s1.minus(s0.get(i)));
                } else {
                    split = null;
                }
            }
            accumulate(sumBefore, sumAfter, before, e.cluster.requestSnapshot());
            parts.add(b.nanos());
            wall += b.wallNanos();
            errors += b.errors();
            if (firstError == null) {
                firstError = b.firstError();
            }
            done += n;
        }
        release(e);
        long[] samples = parts.stream().flatMapToLong(Arrays::stream).toArray();
        Stats s = new Stats("jar-x" + procs.size(), e.pods, c, samples, wall, errors);
        ApiCounts api = ApiCounts.between(sumBefore, sumAfter);
        Map<String, Object> per = api.perOperation(s.count());
        int patches = api.get("patch pods");
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("allocs", s.count());
        m.put("warmupAllocs", warmupAllocs);
        m.put("errors", errors);
        m.put("operatorCpuMicrosPerAlloc", Stats.round(cpu / 1e3 / Math.max(1, s.count())));
        if (procs.size() > 1) {
            m.put("operatorCpuMicrosPerAllocByProcess", Arrays.stream(byProcess)
                    .mapToObj(x -> Stats.round(x / 1e3 / Math.max(1, s.count()))).toList());
        }
        if (split != null) {
            // the same CPU by thread: the JIT compiler's share is a cost of a young JVM, the rest is the work
            m.put("workCpuMicrosPerAlloc", Stats.round(split.workNanos() / 1e3 / Math.max(1, s.count())));
            // compiler threads come and go (UseDynamicNumberOfCompilerThreads): the JIT's share is what the process
            // spent beyond its other threads' time
            m.put("jitCpuMicrosPerAlloc", Stats.round(Math.max(0, cpu - split.workNanos() - split.jvmNanos()) / 1e3
                    / Math.max(1, s.count())));
            m.put("gcAndVmCpuMicrosPerAlloc", Stats.round(split.jvmNanos() / 1e3 / Math.max(1, s.count())));
        }
        m.put("idleCpuMsPerSecByProcess", idleMsPerSec);
        // of the CPU per allocation, what the replicas would have spent idle over the measured windows (the
        // batches and their quiet ends)
        double idleMicros = idleMsPerSec.stream().mapToDouble(Double::doubleValue).sum() * 1e3 * windowNanos / 1e9;
        m.put("idleCpuMicrosPerAllocInWindows", Stats.round(idleMicros / Math.max(1, s.count())));
        m.put("p50Ms", Stats.round(s.pMs(50)));
        m.put("p99Ms", Stats.round(s.pMs(99)));
        m.put("perSec", Stats.round(s.throughput()));
        m.put("writesPerAllocInAll", Stats.round((num(per.get("writesPerOp")) + num(per.get("eventWritesPerOp")))));
        m.put("eventWritesPerAlloc", per.get("eventWritesPerOp"));
        // every PATCH beyond one per allocation: conflicts (409), and the rollbacks and settles of lost claims
        m.put("conflictsPerAlloc", Stats.round((patches - s.count()) / (double) Math.max(1, s.count())));
        m.put("getsPerAlloc", per.get("getsPerOp"));
        if (firstError != null) {
            m.put("firstError", String.valueOf(firstError));
        }
        return m;
    }

    // ------------------------------------------------------------------ report

    Map<String, Object> config() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("pods", pods);
        m.put("requestsPerRun", requests);
        m.put("warmupPerRun", warmup);
        m.put("concurrency", concurrencies);
        m.put("scale", scale);
        m.put("large", large);
        m.put("huge", huge);
        m.put("hugeClaimed", hugeClaimed);
        m.put("hugeNodes", hugeNodes);
        m.put("hugeJarJvmArgs", hugeJarJvmArgs);
        m.put("refillSamples", refillSamples);
        m.put("ttlSamples", ttlSamples);
        m.put("nodes", NODES);
        m.put("jar", jar);
        m.put("jarJvmArgs", jarJvmArgs);
        m.put("operatorFlags", String.join(" ", operatorFlags));
        m.put("cpuAllocs", cpuAllocs);
        m.put("cpuWarmAllocs", cpuWarmAllocs);
        m.put("jitWarmupPerScenario", jitWarmup);
        m.put("jitSettleRounds", jitSettleRounds);
        m.put("rounds", rounds);
        m.put("profile", profileEvent.isBlank() ? "none" : profileEvent + " at c=" + Arrays.toString(profileConcurrency));
        m.put("client", BenchHttps.configured().name().toLowerCase(Locale.ROOT));
        m.put("availableProcessors", Runtime.getRuntime().availableProcessors());
        m.put("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
        m.put("inputArguments", ManagementFactory.getRuntimeMXBean().getInputArguments());
        m.put("startedAt", Instant.now().toString());
        m.put("method", List.of(
                "Everything runs on loopback in one JVM: the fabric8 mock API (CRUD mode, one global lock, every "
                        + "lookup a scan of its store), the operator and the load generators; a 2-core machine shared "
                        + "with other work, so expect noise.",
                "The operator is running (watching) during all three scenarios, so the mock pays the same watch "
                        + "fan-out in each; batches never claim more than half the pool and are released (claim "
                        + "annotations stripped with a PUT) outside the timed window.",
                "baseline-patch: ClaimWriter.claim (the exact conditional JSON merge patch) from a separate fabric8 "
                        + "client tuned by KubeClients.create, one distinct idle pod per request.",
                "reference-pattern: LIST pods, LIST runner pods, GET node, GET pod, PUT pod per allocation, in the "
                        + "same candidate order as Candidates.select (the ring order) (generous to it: fewer conflicts).",
                "alloc-https: POST allocs through the HTTPS front door with the front-proxy client certificate and "
                        + "X-Remote-* headers, one keep-alive connection per worker, a fresh key each; the "
                        + "SubjectAccessReview cache is warmed by the warm-up run.",
                "Throughput = completed requests / summed wall time of the measured batches."));
        return m;
    }

    Map<String, Object> runMap(Run r) {
        Map<String, Object> m = r.stats().toMap();
        m.put("api", r.api().perOperation(r.stats().count()));
        m.putAll(r.extra());
        return m;
    }

    Run find(String scenario, int n, int c) {
        return runs.stream().filter(r -> r.stats().scenario.equals(scenario) && r.stats().pods == n
                && r.stats().concurrency == c).findFirst().orElse(null);
    }

    @SuppressWarnings("unchecked")
    Map<String, Object> targets() {
        Map<String, Object> t = new LinkedHashMap<>();
        int cMin = Arrays.stream(concurrencies).min().orElse(1);
        int cMax = Arrays.stream(concurrencies).max().orElse(1);

        // 1. API cost of a new allocation (request path), at every concurrency
        Map<String, Object> api = new LinkedHashMap<>();
        boolean apiPass = true;
        for (int c : concurrencies) {
            Run r = find(OURS, pods, c);
            if (r == null) {
                continue;
            }
            Map<String, Object> per = r.api().perOperation(r.stats().count());
            boolean ok = ((Double) per.get("writesPerOp")) == 1.0 && ((Double) per.get("listsPerOp")) == 0.0
                    && ((Double) per.get("getsPerOp")) == 0.0;
            apiPass &= ok;
            api.put("c" + c, map("writes", per.get("writesPerOp"), "lists", per.get("listsPerOp"), "gets",
                    per.get("getsPerOp"), "sars", per.get("subjectAccessReviewsPerOp"), "eventWrites",
                    per.get("eventWritesPerOp"), "backgroundReads", per.get("backgroundReadsPerOp"), "pass", ok));
        }
        api.put("pass", apiPass);
        api.put("note", "writes/lists/gets on the request path (pods); the asynchronous Allocated Event write, "
                + "the SubjectAccessReview (cache misses only) and the timers' periodic reads (serving Secret, "
                + "APIService, trust bundle ConfigMap) that fall in the window are listed apart");
        t.put("newAllocationApiCalls", api);

        // every write the API server sees per new allocation, Events included, and self-inflicted conflicts
        Run atMax = find(OURS, pods, cMax);
        if (atMax != null) {
            Map<String, Object> per = atMax.api().perOperation(atMax.stats().count());
            double all = num(per.get("writesPerOp")) + num(per.get("eventWritesPerOp"));
            int patches = atMax.api().get("patch pods");
            double conflicts = (patches - atMax.stats().count()) / (double) Math.max(1, atMax.stats().count());
            t.put("writesInAllPerNewAllocAtC" + cMax, map("writes", Stats.round(all), "limit", "<= 1.02", "pass", all <= 1.02));
            t.put("conflictsPerNewAllocAtC" + cMax, map("conflicts", Stats.round(conflicts), "limit", "<= 0.01",
                    "pass", conflicts <= 0.01));
        }
        Map<Integer, Object> sel = selection;
        if (sel.size() >= 2) {
            double maxHot = sel.values().stream().mapToDouble(v -> num(((Map<String, Object>) v).get("hotPathCpuMicrosPerCall")))
                    .max().orElse(Double.NaN);
            t.put("selectionCpuFlatInN", map("maxHotPathMicros", Stats.round(maxHot), "limit", "<= 20 us at every N",
                    "pass", maxHot <= 20));
        }

        // 2. p50 at concurrency 1 vs the bare PATCH
        Run oursRun = find(OURS, pods, cMin);
        Run baseRun = find(BASELINE, pods, cMin);
        Run floorRun = find(FLOOR, pods, cMin);
        Run replayRun = find(REPLAY, pods, cMin);
        // what an exactly-once answer cannot cost less than (LimitScenarios): the claim's PATCH and then its watch
        // event; a replay's GET
        Run watchedRun = find(LimitScenarios.PATCH_WATCHED, pods, cMin);
        Run getRun = find(LimitScenarios.GET, pods, cMin);
        // the same least through a front door built on Camel's netty-http, as the operator's is (CamelFloor)
        Run camelFloorRun = find(CAMEL_FLOOR, pods, cMin);
        // alloc over the bare PATCH alone: reported (no HTTPS front door reaches 1.3 of it here: the floor alone is a
        // quarter of a bare PATCH), the target is the one against the floor plus the bare PATCH below
        Map<String, Object> p50 = ratioTarget(oursRun, baseRun, true, 1.3);
        p50.remove("limit");
        p50.put("pass", null);
        // the same figures against what any HTTPS front door writing once costs here (the floor plus the bare
        // PATCH), and a replay's against the floor alone: the c=1 targets relative to the measured limit
        Map<String, Object> overLimit = floorRun == null || baseRun == null || oursRun == null ? notMeasured()
                : limitTarget(oursRun.stats().pMs(50), Map.of("floorP50Ms", floorRun.stats().pMs(50),
                        "barePatchP50Ms", baseRun.stats().pMs(50)), 1.3);
        Map<String, Object> replayOverFloor = floorRun == null || replayRun == null ? notMeasured()
                : limitTarget(replayRun.stats().pMs(50), Map.of("floorP50Ms", floorRun.stats().pMs(50)), 1.5);
        if (floorRun != null && replayRun != null && getRun != null) {
            replayOverFloor.put("leastPossibleRatio", Stats.round(
                    (floorRun.stats().pMs(50) + getRun.stats().pMs(50)) / floorRun.stats().pMs(50)));
            if (camelFloorRun != null) {
                replayOverFloor.put("camelFloorP50Ms", Stats.round(camelFloorRun.stats().pMs(50)));
                replayOverFloor.put("leastThroughCamelRatio", Stats.round(
                        (camelFloorRun.stats().pMs(50) + getRun.stats().pMs(50)) / floorRun.stats().pMs(50)));
            }
        }
        if (floorRun != null && baseRun != null && oursRun != null && watchedRun != null) {
            double limitMs = floorRun.stats().pMs(50) + baseRun.stats().pMs(50);
            overLimit.put("leastPossibleRatio", Stats.round((floorRun.stats().pMs(50) + watchedRun.stats().pMs(50)) / limitMs));
            if (camelFloorRun != null) {
                overLimit.put("camelFloorP50Ms", Stats.round(camelFloorRun.stats().pMs(50)));
                overLimit.put("leastThroughCamelRatio", Stats.round(
                        (camelFloorRun.stats().pMs(50) + watchedRun.stats().pMs(50)) / limitMs));
            }
        }
        if (floorRun != null && replayRun != null && baseRun != null) {
            double floorMs = floorRun.stats().pMs(50);
            double baseMs = baseRun.stats().pMs(50);
            double replayMs = replayRun.stats().pMs(50);
            p50.put("floorP50Ms", Stats.round(floorMs));
            p50.put("replayP50Ms", Stats.round(replayMs));
            p50.put("leastPossibleRatio", Stats.round((floorMs + baseMs) / baseMs));
            p50.put("frontDoorAboveFloorMs", Stats.round(replayMs - floorMs));
            if (camelFloorRun != null) {
                p50.put("camelFloorP50Ms", Stats.round(camelFloorRun.stats().pMs(50)));
                p50.put("camelAboveFloorMs", Stats.round(camelFloorRun.stats().pMs(50) - floorMs));
            }
            Run doorRun = find(DOOR, pods, cMin);
            if (doorRun != null) {
                // the operator's front door on a discovery GET; a replay is that, the alloc flow and its pod's GET
                p50.put("doorP50Ms", Stats.round(doorRun.stats().pMs(50)));
                if (camelFloorRun != null) {
                    p50.put("doorAboveCamelFloorMs", Stats.round(doorRun.stats().pMs(50) - camelFloorRun.stats().pMs(50)));
                }
                if (getRun != null) {
                    p50.put("replayAboveDoorAndGetMs", Stats.round(replayMs - doorRun.stats().pMs(50)
                            - getRun.stats().pMs(50)));
                }
            }
            p50.put("floorNote", "floor: the same request and answer bytes, same client, same TLS setup, to a bare "
                    + "Netty server answering on its I/O thread (TlsFloor); an allocation is at least that plus a PATCH");
            if (watchedRun != null && oursRun != null) {
                double least = floorMs + watchedRun.stats().pMs(50);
                p50.put("patchWatchedP50Ms", Stats.round(watchedRun.stats().pMs(50)));
                p50.put("leastExactlyOnceRatio", Stats.round(least / baseMs));
                p50.put("oursOverLeastExactlyOnce", Stats.round(oursRun.stats().pMs(50) / least));
            }
            if (getRun != null) {
                double least = floorMs + getRun.stats().pMs(50);
                p50.put("getP50Ms", Stats.round(getRun.stats().pMs(50)));
                p50.put("replayOverFloor", Stats.round(replayMs / floorMs));
                p50.put("leastReplayOverFloor", Stats.round(least / floorMs));
                p50.put("replayOverLeast", Stats.round(replayMs / least));
            }
        }
        t.put("p50VsBaselineAtC" + cMin, p50);
        t.put("p50VsFloorPlusBaselineAtC" + cMin, overLimit);
        t.put("replayP50VsFloorAtC" + cMin, replayOverFloor);
        // 3. throughput vs the bare PATCH at every concurrency from 32 (the highest one always)
        for (int c : concurrencies) {
            if (c >= 32 || c == cMax) {
                Run ours = find(OURS, pods, c);
                Run base = find(BASELINE, pods, c);
                Map<String, Object> r = ratioTarget(ours, base, false, 0.7);
                r.putAll(throughputBound(ours, base, find(FLOOR, pods, c), find(CAMEL_FLOOR, pods, c)));
                t.put("throughputVsBaselineAtC" + c, r);
            }
        }
        // 4. throughput vs the reference pattern, at every concurrency
        Map<String, Object> vsRef = new LinkedHashMap<>();
        boolean refPass = true;
        for (int c : concurrencies) {
            Map<String, Object> r = ratioTarget(find(OURS, pods, c), find(REFERENCE, pods, c), false, 3.0);
            vsRef.put("c" + c, r);
            refPass &= Boolean.TRUE.equals(r.get("pass"));
        }
        vsRef.put("pass", refPass);
        t.put("throughputVsReferenceAtN" + pods, vsRef);
        // 5. the gap grows with N
        Map<String, Object> gap = new LinkedHashMap<>();
        boolean grows = true;
        boolean any = false;
        for (int c : concurrencies) {
            Map<String, Object> perN = new LinkedHashMap<>();
            Double prev = null;
            List<Integer> ns = new ArrayList<>();
            ns.add(pods);
            for (int n : scale) {
                if (n > 0 && n != pods) {
                    ns.add(n);
                }
            }
            for (int n : ns) {
                Run o = find(OURS, n, c);
                Run r = find(REFERENCE, n, c);
                if (o == null || r == null) {
                    continue;
                }
                double ratio = o.stats().throughput() / r.stats().throughput();
                perN.put("N" + n, Stats.round(ratio));
                if (prev != null) {
                    any = true;
                    grows &= ratio > prev;
                }
                prev = ratio;
            }
            gap.put("c" + c, perN);
        }
        gap.put("pass", any ? grows : null);
        gap.put("note", "ours/reference throughput ratio per pod count; pass = it rises with N at every concurrency");
        t.put("gapGrowsWithN", gap);
        // 6. refill and TTL
        // (a run of some phases only, bench.phases, has the targets of those)
        Map<String, Object> refill = (Map<String, Object>) results.get("refill");
        if (refill != null) {
            Map<String, Object> refillMs = (Map<String, Object>) refill.get("claimAnswerToCreateMs");
            t.put("refillCreateWithin1s", map("maxMs", refillMs.get("max"), "pass", num(refillMs.get("max")) <= 1000));
        }
        Map<String, Object> ttl = (Map<String, Object>) results.get("ttl");
        if (ttl != null) {
            Map<String, Object> late = (Map<String, Object>) ttl.get("latenessVsClaimedAtAnnotationMs");
            t.put("ttlLatenessWithin1s", map("maxMs", late.get("max"), "pass", num(late.get("max")) <= 1000));
        }
        Map<Integer, Map<String, Object>> st = (Map<Integer, Map<String, Object>>) results.get("startup");
        Map<String, Object> small = st == null || st.get(pods) == null ? null : (Map<String, Object>) st.get(pods).get("jarProcess");
        Map<String, Object> largeRes = (Map<String, Object>) results.get("large");
        if (largeRes != null) {
            largeTargets(t, largeRes, small);
        }
        hugeTargets(t, small);
        replicaTargets(t);
        return t;
    }

    /** The targets of the large phase: idle reconcile, memory and startup at {@code bench.large} pods. */
    @SuppressWarnings("unchecked")
    private void largeTargets(Map<String, Object> t, Map<String, Object> largeRes, Map<String, Object> small) {
        // 7. idle reconcile
        Map<String, Object> rec = (Map<String, Object>) largeRes.get("idleReconcile");
        Map<String, Object> cpu = (Map<String, Object>) rec.get("cpuMsPerPass");
        Map<String, Object> idle = new LinkedHashMap<>();
        idle.put("pods", large);
        idle.put("apiCalls", rec.get("apiCallsTotal"));
        idle.put("cpuMsP50", cpu.get("p50"));
        idle.put("cpuMsMax", cpu.get("max"));
        idle.put("passesRun", rec.get("passesRun"));
        // every pass really ran (a pass that returned at once, before the pool could plan, measures nothing)
        idle.put("pass", ((Integer) rec.get("apiCallsTotal")) == 0 && num(cpu.get("p50")) <= 50 && allPassesRan(rec));
        t.put("idleReconcile", idle);
        // 8. memory and startup (the separate process when available, else the in-process upper bound)
        Map<String, Object> jarRes = (Map<String, Object>) largeRes.get("jarProcess");
        Map<String, Object> mem = new LinkedHashMap<>();
        if (jarRes != null) {
            mem.put("source", "separate jar process, " + large + " pods, after warm-up allocations");
            mem.put("vmRssMiB", jarRes.get("vmRssMiB"));
            mem.put("pass", num(jarRes.get("vmRssMiB")) <= rssLimitMiB());
        } else {
            Map<String, Object> inProc = (Map<String, Object>) largeRes.get("memoryInProcess");
            mem.put("source", "in-process upper bound (mock API + operator + bench), " + large + " pods");
            mem.put("vmRssMiB", inProc.get("vmRssMiB"));
            mem.put("pass", num(inProc.get("vmRssMiB")) <= rssLimitMiB());
        }
        t.put("rssWith" + large + "PodsWithin" + rssLimitMiB() + "MiB", mem);
        Map<String, Object> start = new LinkedHashMap<>();
        if (jarRes != null) {
            start.put("source", "separate jar process, " + large + " pods, exec to /readyz 204");
            start.put("ms", jarRes.get("startupToReadyMs"));
            start.put("pass", num(jarRes.get("startupToReadyMs")) <= 5000);
        } else {
            start.put("source", "in-process, " + large + " pods");
            start.put("ms", largeRes.get("inProcessStartupToReadyMs"));
            start.put("pass", num(largeRes.get("inProcessStartupToReadyMs")) <= 5000);
        }
        t.put("startupToReadyWithin5s", start);
        // memory per cached pod: the jar's heap at the large pool against the one at N=pods (same JVM flags)
        if (jarRes != null && small != null && small.get("heapUsedMiB") != null && jarRes.get("heapUsedMiB") != null) {
            t.put("memoryPerCachedPod", perCachedPod(small, jarRes, large));
        }
    }

    /**
     * Replicas scale out: with 2 and 3 replicas (steady state, every c of {@code bench.cpuConcurrency} from 32), the
     * extra PATCHes per new allocation (conflicts, and rollbacks of lost claims) at most 0.02, and the operators' CPU
     * per allocation, all replicas together, at most 1.3 times one replica's at the same c; writes per allocation
     * reported.
     */
    @SuppressWarnings("unchecked")
    void replicaTargets(Map<String, Object> t) {
        Map<String, Object> jarCpu = (Map<String, Object>) results.get("operatorProcessAllocs");
        if (jarCpu == null) {
            return;
        }
        Map<String, Object> out = new LinkedHashMap<>();
        boolean pass = true;
        boolean any = false;
        for (int c : cpuConcurrency) {
            String oneKey = "replicas1_c" + c + "_warm";
            Double oneCpu = meanOfRuns(jarCpu, oneKey, "operatorCpuMicrosPerAlloc");
            if (c < 32 || oneCpu == null) {
                continue;
            }
            Double oneIdle = meanOfRuns(jarCpu, oneKey, "idleCpuMicrosPerAllocInWindows");
            Map<String, Object> again = (Map<String, Object>) jarCpu.get(oneKey + AGAIN);
            if (again != null) {
                // what the ratios below divide by: one replica measured before the others and again after them
                out.put("oneReplica_c" + c, map("cpuMicrosPerAlloc", Stats.round(oneCpu), "firstRun",
                        ((Map<String, Object>) jarCpu.get(oneKey)).get("operatorCpuMicrosPerAlloc"),
                        "runAfterTheOthers", again.get("operatorCpuMicrosPerAlloc")));
            }
            for (int r : Arrays.stream(cpuReplicas).distinct().toArray()) {
                String key = "replicas" + r + "_c" + c + "_warm";
                Double manyCpu = meanOfRuns(jarCpu, key, "operatorCpuMicrosPerAlloc");
                if (r < 2 || manyCpu == null) {
                    continue;
                }
                any = true;
                // a run without a conflict count cannot pass (NaN), as before
                Double counted = meanOfRuns(jarCpu, key, "conflictsPerAlloc");
                double conflicts = counted == null ? Double.NaN : counted;
                Double writes = meanOfRuns(jarCpu, key, "writesPerAllocInAll");
                double ratio = manyCpu / oneCpu;
                boolean ok = conflicts <= 0.02 && ratio <= 1.3;
                pass &= ok;
                Map<String, Object> row = map("conflictsPerNewAlloc", Stats.round(conflicts), "cpuMicrosPerAlloc",
                        Stats.round(manyCpu), "cpuOverOneReplica", Stats.round(ratio),
                        "writesPerAllocInAll", writes == null ? null : Stats.round(writes), "pass", ok);
                Double manyIdle = meanOfRuns(jarCpu, key, "idleCpuMicrosPerAllocInWindows");
                if (manyIdle != null && oneIdle != null) {
                    // reported beside the target: what the replicas cost per allocation beyond what they would
                    // have spent idle over the same windows (the windows include each batch's quiet end)
                    row.put("cpuOverOneReplicaNetOfIdle", Stats.round((manyCpu - manyIdle) / (oneCpu - oneIdle)));
                }
                Double oneServing = meanOfRuns(jarCpu, key + "_oneServing", "operatorCpuMicrosPerAlloc");
                if (oneServing != null) {
                    row.put("cpuOverOneReplicaWithOneServing", Stats.round(oneServing / oneCpu));
                }
                out.put("replicas" + r + "_c" + c, row);
            }
        }
        if (any) {
            out.put("limit", "conflicts <= 0.02 and CPU <= 1.3x one replica's, per replica count and c >= 32");
            out.put("pass", pass);
            out.put("note", "steady state (bench.cpuWarmAllocs per replica first); a replica count measured twice "
                    + "(bench.cpuReplicas lists it again) counts with the mean of its runs, one replica's too "
                    + "(oneReplica_c: before the others and after them); conflicts = PATCHes beyond one per "
                    + "allocation (409s, and rollbacks of lost claims); cpuOverOneReplicaWithOneServing: the same "
                    + "replicas with every request sent to one of them (the others only watch); "
                    + "cpuOverOneReplicaNetOfIdle: both sides without what their replicas spend idle over the "
                    + "measured windows (idleCpuMicrosPerAllocInWindows), not the target's measure");
            t.put("replicasScaleOut", out);
        }
    }

    /**
     * The mean of a figure over the run under {@code key} and its run measured again ({@link #AGAIN}) where there is
     * one; null when the first run or its figure is missing (a run measured again without the figure is left out).
     */
    @SuppressWarnings("unchecked")
    static Double meanOfRuns(Map<String, Object> jarCpu, String key, String figure) {
        Map<String, Object> first = (Map<String, Object>) jarCpu.get(key);
        if (first == null || first.get(figure) == null) {
            return null;
        }
        double sum = num(first.get(figure));
        int n = 1;
        Map<String, Object> again = (Map<String, Object>) jarCpu.get(key + AGAIN);
        if (again != null && again.get(figure) != null) {
            sum += num(again.get(figure));
            n++;
        }
        return sum / n;
    }

    /**
     * Heap and RSS per cached pod: (the jar with {@code n} pods - the jar with {@code pods}) / the difference in
     * pods. {@code heapKiB} reads the heap as it is (not collected first: an upper bound, as before), {@code
     * liveHeapKiB} what a full collection leaves (the class histogram's total: what the pods really hold; the target
     * is on this one), {@code afterFullGcKiB} the heap read by a command of its own after a full collection (as
     * measured before: it adds what the operator allocated between the two commands).
     */
    Map<String, Object> perCachedPod(Map<String, Object> small, Map<String, Object> big, int n) {
        double diff = Math.max(1, n - pods);
        // KiB per pod of a figure in MiB: the difference between the two jars over the difference in pods
        java.util.function.ToDoubleFunction<String> perPod = mib -> (num(big.get(mib)) - num(small.get(mib))) * 1024
                / diff;
        double kib = perPod.applyAsDouble("heapUsedMiB");
        double rssKib = perPod.applyAsDouble("vmRssMiB");
        double live = perPod.applyAsDouble("liveHeapMiB");
        double afterGc = perPod.applyAsDouble("heapUsedAfterFullGcMiB");
        Map<String, Object> m = map("pods", n, "liveHeapKiB", Double.isNaN(live) ? null : Stats.round(live),
                "heapKiB", Stats.round(kib), "rssKiB", Stats.round(rssKib));
        m.put("afterFullGcKiB", Double.isNaN(afterGc) ? null : Stats.round(afterGc));
        m.put("limit", "live heap <= 4 KiB");
        m.put("pass", Double.isNaN(live) ? null : live <= 4);
        m.put("note", "(jar heap/RSS with " + n + " pods - with " + pods + ") / difference in pods; liveHeapKiB what a "
                + "full collection leaves (jcmd GC.class_histogram's total), afterFullGcKiB the heap read after jcmd "
                + "GC.run (it adds what was allocated between the two commands), heapKiB as found (an upper bound "
                + "that depends on when the last collection ran)");
        return m;
    }

    /** The targets of the huge phase (HugePool), when it ran. */
    @SuppressWarnings("unchecked")
    void hugeTargets(Map<String, Object> t, Map<String, Object> small) {
        Map<String, Object> h = (Map<String, Object>) results.get("huge");
        if (h == null) {
            return;
        }
        int n = ((Number) h.get("pods")).intValue();
        Map<String, Object> jarRes = (Map<String, Object>) h.get("jarProcess");
        if (jarRes != null) {
            t.put("startupToReadyWith" + n + "PodsWithin15s", map("source", "separate jar process, " + n + " pods, exec "
                    + "to /readyz 204, " + hugeJarJvmArgs, "ms", jarRes.get("startupToReadyMs"), "limit", "<= 15000",
                    "pass", num(jarRes.get("startupToReadyMs")) <= 15_000));
            t.put("rssWith" + n + "PodsWithin1GiB", map("source", "separate jar process, " + n + " pods, after 200 "
                    + "allocations", "vmRssMiB", jarRes.get("vmRssMiB"), "limit", "<= 1024", "pass",
                    num(jarRes.get("vmRssMiB")) <= 1024));
            if (small != null) {
                t.put("memoryPerCachedPodWith" + n + "Pods", perCachedPod(small, jarRes, n));
            }
        }
        Map<String, Object> rec = (Map<String, Object>) h.get("idleReconcile");
        t.put("idleReconcileWith" + n + "Pods", map("apiCalls", rec.get("apiCallsTotal"), "cpuMsP50",
                ((Map<String, Object>) rec.get("cpuMsPerPass")).get("p50"), "passesRun", rec.get("passesRun"),
                "limit", "0 API calls", "pass", ((Integer) rec.get("apiCallsTotal")) == 0 && allPassesRan(rec)));
        Map<String, Object> sel = (Map<String, Object>) selection.get(n);
        if (sel != null) {
            t.put("hotPathSelectionWith" + n + "Pods", map("cpuMicros", sel.get("hotPathCpuMicrosPerCall"), "limit",
                    "<= 20 us", "pass", num(sel.get("hotPathCpuMicrosPerCall")) <= 20));
        }
        Run o = find(OURS, pods, 1);
        Run bare = find(BASELINE, pods, 1);
        Map<String, Object> c1 = (Map<String, Object>) h.get("allocVsBarePatchAtC1");
        if (o != null && bare != null && c1 != null) {
            double atPods = o.stats().pMs(50) / bare.stats().pMs(50);
            double atN = num(c1.get("ratio"));
            Map<String, Object> g = map("ratioAtN" + n, Stats.round(atN), "ratioAtN" + pods,
                    Stats.round(atPods), "growth", Stats.round(atN / atPods), "limit", "growth <= 1.2", "pass",
                    atN / atPods <= 1.2, "note", "alloc p50 / bare PATCH p50 at c=1, each pair measured interleaved "
                    + "in one environment");
            // how much of the growth is the API server's watch: the watched bare PATCH (no operator) against the
            // bare PATCH, and the allocation against the watched bare PATCH, each at both sizes
            Run watched = find(LimitScenarios.PATCH_WATCHED, pods, 1);
            if (watched != null && c1.get("patchWatchedP50Ms") != null) {
                double watchedAtN = num(c1.get("patchWatchedP50Ms"));
                double watchedAtPods = watched.stats().pMs(50);
                g.put("watchedOverBareGrowth", Stats.round((watchedAtN / num(c1.get("barePatchP50Ms")))
                        / (watchedAtPods / bare.stats().pMs(50))));
                g.put("allocOverWatchedGrowth", Stats.round((num(c1.get("allocP50Ms")) / watchedAtN)
                        / (o.stats().pMs(50) / watchedAtPods)));
            }
            t.put("allocOverBarePatchAt" + n + "VsAt" + pods, g);
        }
    }

    /** The RSS target: 300 MiB up to 5,000 pods, 400 MiB for the 10,000-pod scale figure. */
    int rssLimitMiB() {
        return large > 5000 ? 400 : 300;
    }

    /** A map that, unlike Map.of, keeps insertion order and allows null values. */
    static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    static double num(Object o) {
        return o instanceof Number n ? n.doubleValue() : Double.NaN;
    }

    /** ours/other for throughput (≥ limit passes) or ours/other for p50 (≤ limit passes). */
    /**
     * A latency target against a limit made of parts: {@code oursMs} over the sum of {@code parts} (each reported) at
     * most {@code limit}.
     */
    static Map<String, Object> limitTarget(double oursMs, Map<String, Double> parts, double limit) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("oursP50Ms", Stats.round(oursMs));
        double sum = 0;
        for (Map.Entry<String, Double> e : new java.util.TreeMap<>(parts).entrySet()) {
            m.put(e.getKey(), Stats.round(e.getValue()));
            sum += e.getValue();
        }
        double ratio = oursMs / sum;
        m.put("ratio", Stats.round(ratio));
        m.put("limit", "<= " + limit);
        m.put("pass", ratio <= limit);
        return m;
    }

    /** A target whose runs are missing (a run of some phases only): neither met nor missed. */
    static Map<String, Object> notMeasured() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("pass", null);
        return m;
    }

    /**
     * The throughput ratio as the CPU figures explain it. All of the scenarios run in this one JVM, so where a
     * concurrency keeps its cores busy a scenario's rate is its cores over the CPU each request takes (the JIT
     * compiler's left out): the ratio is then about the bare PATCH's CPU over the allocation's
     * ({@code ratioOfCpu}), and an allocation takes at least what the TLS floor's request and the bare PATCH take
     * together (a request through an HTTPS front door that writes once), so the ratio could reach the bare
     * PATCH's CPU over that sum at best ({@code bestRatioOfCpu}); what the allocation takes beyond that sum is the
     * operator's own ({@code oursAboveLeastCpuMicros}). Through a front door built on Camel's netty-http
     * ({@link CamelFloor}, {@code camelFloor}: null where not measured) the best is the bare PATCH's CPU over that
     * floor's and the PATCH's ({@code bestRatioOfCpuThroughCamel}). How busy the cores were says how far the rates
     * follow the CPU: where they are not (the simulated API server serialises its writes), neither ratio binds. Empty
     * where a run or its CPU figure is missing.
     */
    static Map<String, Object> throughputBound(Run ours, Run base, Run floor, Run camelFloor) {
        Map<String, Object> m = new LinkedHashMap<>();
        Double oursCpu = ours == null ? null : cpuPerRequest(ours);
        Double baseCpu = base == null ? null : cpuPerRequest(base);
        Double floorCpu = floor == null ? null : cpuPerRequest(floor);
        if (oursCpu == null || baseCpu == null || floorCpu == null) {
            return m;
        }
        m.put("oursCpuMicros", Stats.round(oursCpu));
        m.put("barePatchCpuMicros", Stats.round(baseCpu));
        m.put("floorCpuMicros", Stats.round(floorCpu));
        m.put("oursAboveLeastCpuMicros", Stats.round(oursCpu - floorCpu - baseCpu));
        m.put("ratioOfCpu", Stats.round(baseCpu / oursCpu));
        m.put("bestRatioOfCpu", Stats.round(baseCpu / (floorCpu + baseCpu)));
        Double camelCpu = camelFloor == null ? null : cpuPerRequest(camelFloor);
        if (camelCpu != null) {
            m.put("camelFloorCpuMicros", Stats.round(camelCpu));
            m.put("bestRatioOfCpuThroughCamel", Stats.round(baseCpu / (camelCpu + baseCpu)));
        }
        m.put("oursBusyShare", ours.extra().get("cpuBusyShare"));
        m.put("barePatchBusyShare", base.extra().get("cpuBusyShare"));
        return m;
    }

    private static Double cpuPerRequest(Run r) {
        return r.extra().get(CPU_PER_REQUEST) instanceof Number n ? n.doubleValue() : null;
    }

    static Map<String, Object> ratioTarget(Run ours, Run other, boolean latency, double limit) {
        if (ours == null || other == null) {
            return notMeasured();
        }
        Map<String, Object> m = new LinkedHashMap<>();
        double a = latency ? ours.stats().pMs(50) : ours.stats().throughput();
        double b = latency ? other.stats().pMs(50) : other.stats().throughput();
        double ratio = a / b;
        m.put(latency ? "oursP50Ms" : "oursPerSec", Stats.round(a));
        m.put(latency ? "otherP50Ms" : "otherPerSec", Stats.round(b));
        m.put("ratio", Stats.round(ratio));
        m.put("limit", (latency ? "<= " : ">= ") + limit);
        m.put("pass", latency ? ratio <= limit : ratio >= limit);
        return m;
    }

    @SuppressWarnings("unchecked")
    private void largeTable(StringBuilder sb, Map<String, Object> large) {
        sb.append(String.format(Locale.ROOT, "startup to ready, in-process, %5d pods: %s ms%n", this.large,
                large.get("inProcessStartupToReadyMs")));
        Map<String, Object> jarRes = (Map<String, Object>) large.get("jarProcess");
        if (jarRes != null) {
            sb.append(String.format(Locale.ROOT, "jar process, %d pods: ready %s ms after exec; after %s warm-up allocs "
                    + "VmRSS %s MiB (peak %s), heap used %s of %s MiB committed, %s%n", this.large,
                    jarRes.get("startupToReadyMs"), jarRes.get("warmupAllocs"), jarRes.get("vmRssMiB"), jarRes.get("vmHwmMiB"),
                    jarRes.get("heapUsedMiB"), jarRes.get("heapCommittedMiB"), jarRes.get("gc")));
        }
        if (large.get("allocsAtC1") != null) {
            sb.append(String.format(Locale.ROOT, "allocs at c=1 with %d pods (%s idle): p50 %s ms%n", this.large,
                    large.get("idlePods"), ((Map<String, Object>) large.get("allocsAtC1")).get("p50Ms")));
        }
        Map<String, Object> inProc = (Map<String, Object>) large.get("memoryInProcess");
        sb.append(String.format(Locale.ROOT, "bench JVM (mock API + operator + clients), %d pods: VmRSS %s MiB, heap after GC %s MiB%n",
                this.large, inProc.get("vmRssMiB"), inProc.get("heapUsedAfterGcMiB")));
    }

    @SuppressWarnings("unchecked")
    String table() {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "%n== allocation latency and throughput (ms; loopback, fabric8 mock API) ==%n"));
        sb.append(String.format(Locale.ROOT, "%-18s %6s %4s %6s %8s %8s %8s %8s %9s %5s  %s%n", "scenario", "pods", "c",
                "n", "p50", "p90", "p99", "max", "req/s", "err", "API calls per request"));
        for (Run r : runs) {
            Stats s = r.stats();
            Map<String, Object> per = r.api().perOperation(s.count());
            sb.append(String.format(Locale.ROOT, "%-18s %6d %4d %6d %8.2f %8.2f %8.2f %8.2f %9.1f %5d  %s%n", s.scenario,
                    s.pods, s.concurrency, s.count(), s.pMs(50), s.pMs(90), s.pMs(99), s.maxMs(), s.throughput(), s.errors,
                    compact((Map<String, Object>) per.get("byVerbPerOp"))));
        }
        sb.append(String.format(Locale.ROOT, "%n== ratios (same run) ==%n"));
        for (int n : allNs()) {
            for (int c : concurrencies) {
                Run b = find(BASELINE, n, c);
                Run rf = find(REFERENCE, n, c);
                Run o = find(OURS, n, c);
                if (b == null || rf == null || o == null) {
                    continue;
                }
                sb.append(String.format(Locale.ROOT,
                        "N=%-5d c=%-3d ours/baseline p50 %5.2fx  ours/baseline req/s %5.2fx  ours/reference req/s %6.2fx",
                        n, c, o.stats().pMs(50) / b.stats().pMs(50), o.stats().throughput() / b.stats().throughput(),
                        o.stats().throughput() / rf.stats().throughput()));
                Run rp = find(REPLAY, n, c);
                Run fl = find(FLOOR, n, c);
                if (rp != null && fl != null) {
                    sb.append(String.format(Locale.ROOT, "  replay/baseline p50 %5.2fx  (floor+baseline)/baseline p50 %5.2fx",
                            rp.stats().pMs(50) / b.stats().pMs(50), (fl.stats().pMs(50) + b.stats().pMs(50)) / b.stats().pMs(50)));
                }
                sb.append(System.lineSeparator());
            }
        }
        sb.append(String.format(Locale.ROOT, "%n== where the time goes, concurrency 1 (p50 ms; claim write = PATCH, or the "
                + "reference's PUT, arriving at the mock API) ==%n"));
        for (Run r : runs) {
            Map<String, Object> bd = (Map<String, Object>) r.extra().get("breakdownAtC1");
            if (bd != null) {
                sb.append(String.format(Locale.ROOT, "%-18s N=%-5d start -> claim write at API %7s   claim write at API -> answer %7s%n",
                        r.stats().scenario, r.stats().pods,
                        ((Map<String, Object>) bd.get("requestStartToClaimWriteAtApiMs")).get("p50"),
                        ((Map<String, Object>) bd.get("claimWriteAtApiToAnswerMs")).get("p50")));
            }
        }
        selection.forEach((n, v) -> sb.append(String.format(Locale.ROOT,
                "Candidates.select over %5d cached pods: %s us CPU per call; hot-path selection (cache read + walk to "
                + "the first candidate): %s us CPU per call%n", n,
                ((Map<String, Object>) v).get("cpuMicrosPerSelect"), ((Map<String, Object>) v).get("hotPathCpuMicrosPerCall"))));
        Map<String, Object> jarCpu = (Map<String, Object>) results.get("operatorProcessAllocs");
        if (jarCpu != null) {
            sb.append(String.format(Locale.ROOT, "%n== allocations against the packaged jar as separate process(es), N=%d "
                    + "(operator CPU from /proc accounting) ==%n", pods));
            jarCpu.forEach((k, v) -> sb.append(String.format(Locale.ROOT, "%-22s %s%n", k, compactTarget((Map<String, Object>) v))));
        }
        Map<String, Object> refill = (Map<String, Object>) results.get("refill");
        Map<String, Object> ttl = (Map<String, Object>) results.get("ttl");
        Map<String, Object> large = (Map<String, Object>) results.get("large");
        if (refill != null || ttl != null || large != null) {
            sb.append(String.format(Locale.ROOT, "%n== background work ==%n"));
        }
        if (refill != null) {
            sb.append(String.format(Locale.ROOT, "refill: claim 200 -> replacement create    %s ms%n", refill.get("claimAnswerToCreateMs")));
            sb.append(String.format(Locale.ROOT, "refill: claim PATCH -> replacement create  %s ms%n", refill.get("claimPatchToCreateMs")));
        }
        if (ttl != null) {
            sb.append(String.format(Locale.ROOT, "ttl lateness vs claimed-at + ttl           %s ms%n", ttl.get("latenessVsClaimedAtAnnotationMs")));
            sb.append(String.format(Locale.ROOT, "ttl lateness vs precise claim + ttl        %s ms%n", ttl.get("latenessVsPreciseClaimMs")));
        }
        if (large != null) {
            Map<String, Object> rec = (Map<String, Object>) large.get("idleReconcile");
            sb.append(String.format(Locale.ROOT, "idle reconcile, %d pods: cpu %s ms/pass, wall %s ms/pass, API calls %s, created %s%n",
                    this.large, rec.get("cpuMsPerPass"), rec.get("wallMsPerPass"), rec.get("apiCallsTotal"), rec.get("podsCreated")));
        }
        sb.append(String.format(Locale.ROOT, "%n== startup and memory ==%n"));
        Map<Integer, Map<String, Object>> st = (Map<Integer, Map<String, Object>>) results.get("startup");
        if (st != null) {
            st.forEach((n, v) -> sb.append(String.format(Locale.ROOT, "startup to ready, in-process, %5d pods: %s ms%s%n", n,
                    v.get("inProcessStartupToReadyMs"), v.containsKey("jarProcess")
                            ? "; jar process: " + ((Map<String, Object>) v.get("jarProcess")).get("startupToReadyMs") + " ms" : "")));
        }
        if (large != null) {
            largeTable(sb, large);
        }
        Map<String, Object> hugeRes = (Map<String, Object>) results.get("huge");
        if (hugeRes != null) {
            sb.append(String.format(Locale.ROOT, "%n== %s pods (%s claimed) over %s nodes ==%n", hugeRes.get("pods"),
                    hugeRes.get("claimedPods"), hugeRes.get("nodes")));
            Map<String, Object> hr = (Map<String, Object>) hugeRes.get("idleReconcile");
            sb.append(String.format(Locale.ROOT, "pods created in %s ms; in-process ready in %s ms%n",
                    hugeRes.get("createPodsMs"), hugeRes.get("inProcessStartupToReadyMs")));
            sb.append(String.format(Locale.ROOT, "idle reconcile: cpu %s ms/pass, API calls %s%n", hr.get("cpuMsPerPass"),
                    hr.get("apiCallsTotal")));
            sb.append(String.format(Locale.ROOT, "c=1: %s%n", compactTarget((Map<String, Object>) hugeRes.get(
                    "allocVsBarePatchAtC1"))));
            Map<String, Object> hj = (Map<String, Object>) hugeRes.get("jarProcess");
            if (hj != null) {
                sb.append(String.format(Locale.ROOT, "jar process: ready %s ms after exec; VmRSS %s MiB (peak %s), heap "
                        + "used %s MiB, %s MiB live (%s MiB read after a full GC) (%s)%n", hj.get("startupToReadyMs"),
                        hj.get("vmRssMiB"), hj.get("vmHwmMiB"), hj.get("heapUsedMiB"), hj.get("liveHeapMiB"),
                        hj.get("heapUsedAfterFullGcMiB"), hj.get("jvmArgs")));
            }
        }
        sb.append(String.format(Locale.ROOT, "%n== targets ==%n"));
        ((Map<String, Object>) results.get("targets")).forEach((k, v) -> {
            Object pass = v instanceof Map<?, ?> mm ? mm.get("pass") : null;
            sb.append(String.format(Locale.ROOT, "%-4s %-36s %s%n", pass == null ? "n/a" : (Boolean) pass ? "PASS" : "MISS",
                    k, v instanceof Map<?, ?> mm ? compactTarget((Map<String, Object>) mm) : v));
        });
        return sb.toString();
    }

    List<Integer> allNs() {
        List<Integer> ns = new ArrayList<>();
        ns.add(pods);
        for (int n : scale) {
            if (n > 0 && n != pods) {
                ns.add(n);
            }
        }
        return ns;
    }

    private static String compact(Map<String, Object> perVerb) {
        StringBuilder sb = new StringBuilder();
        perVerb.forEach((k, v) -> sb.append(sb.length() == 0 ? "" : ", ").append(k).append(' ').append(v));
        return sb.toString();
    }

    private static String compactTarget(Map<String, Object> m) {
        StringBuilder sb = new StringBuilder();
        m.forEach((k, v) -> {
            if (!k.equals("pass") && !k.equals("note")) {
                sb.append(sb.length() == 0 ? "" : " ").append(k).append('=').append(v);
            }
        });
        return sb.toString();
    }

    List<LatencyChart.Panel> panels() {
        List<LatencyChart.Panel> panels = new ArrayList<>();
        for (int n : allNs()) {
            for (int c : concurrencies) {
                List<Stats> s = runs.stream().filter(r -> r.stats().pods == n && r.stats().concurrency == c)
                        .map(Run::stats).toList();
                if (!s.isEmpty()) {
                    panels.add(new LatencyChart.Panel(n + " pods, concurrency " + c, s));
                }
            }
        }
        return panels;
    }

    // ------------------------------------------------------------------ helpers

    static Map<String, Object> summary(List<Double> xs) {
        Map<String, Object> m = new LinkedHashMap<>();
        if (xs.isEmpty()) {
            return m;
        }
        double[] a = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        m.put("min", Stats.round(a[0]));
        m.put("p50", Stats.round(a[(int) Math.ceil(0.5 * a.length) - 1]));
        m.put("p90", Stats.round(a[(int) Math.ceil(0.9 * a.length) - 1]));
        m.put("max", Stats.round(a[a.length - 1]));
        return m;
    }

    static void await(BooleanSupplier condition, Duration timeout, String what) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timed out after " + timeout + " waiting for " + what);
            }
            Thread.sleep(5);
        }
    }

    void log(String fmt, Object... args) {
        System.out.printf(Locale.ROOT, "[%6.1fs] %s%n", (System.nanoTime() - benchStart) / 1e9,
                String.format(Locale.ROOT, fmt, args));
        System.out.flush();
    }

    /** {@code jvmArgs} with -XX:MaxRAM set to {@code maxRam} (the container memory limit the JVM sizes itself by). */
    static String withMaxRam(String jvmArgs, String maxRam) {
        String set = "-XX:MaxRAM=" + maxRam;
        return jvmArgs.matches("(^|.*\\s)-XX:MaxRAM=\\S+.*") ? jvmArgs.replaceAll("-XX:MaxRAM=\\S+", set)
                : (jvmArgs + " " + set).trim();
    }

    static int intProp(String name, int def) {
        String v = System.getProperty(name);
        return v == null || v.isBlank() ? def : Integer.parseInt(v.trim());
    }

    /** The space-separated words of {@code s} (none when it is blank). */
    static List<String> words(String s) {
        return s.isBlank() ? List.of() : List.of(s.trim().split("\\s+"));
    }

    /** The flags of a separately started jar: the bench's routes, {@code flags}, then {@code bench.operatorFlags}. */
    private List<String> jarFlags(List<String> flags) {
        List<String> all = new ArrayList<>(List.of("--routes-dir=" + Path.of(System.getProperty("bench.routes", "routes")).toAbsolutePath()));
        all.addAll(flags);
        all.addAll(operatorFlags);
        return all;
    }

    static int[] ints(String csv) {
        return Arrays.stream(csv.split(",")).map(String::trim).filter(s -> !s.isEmpty()).mapToInt(Integer::parseInt).toArray();
    }
}
