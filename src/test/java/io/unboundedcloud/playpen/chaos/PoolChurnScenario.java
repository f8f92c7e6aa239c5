package io.unboundedcloud.playpen.chaos;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.model.PoolPlanner;
import io.unboundedcloud.playpen.model.PoolTarget;

/**
 * Scenario "pool under churn", against the running replicas of the chaos suite: paced allocations and deallocations
 * through the aggregator stand-in for the whole run while every 10 s 30% of the idle pods are evicted (their status
 * patched to Failed/Evicted, as a node under memory pressure does), and the runner image is rolled twice by a rolling
 * restart of the replicas (followers first, the leader last): first to an image the simulated kubelet never makes
 * ready, then to a good one; each of the three phases lasts a third of the length, the restarts come on top. Checked from the cluster's own history: no claim of a pod of an older template while a
 * current pod had been ready and idle for a second, no claim of a pod that had visibly been unhealthy for a second,
 * the pool full again (current ready idle pods at the target) within {@link #RECOVERY_BOUND} after each eviction wave
 * while its template works and within {@link #ROLL_BOUND} after the good roll, and creates per minute while the
 * image never gets ready at most {@link #MAX_CREATES_PER_MINUTE}.
 */
final class PoolChurnScenario {
    static final String GOOD_OLD = "ghcr.io/azure/playpen:latest";
    static final String NEVER_READY = "example.com/playpen-runner:never-ready";
    static final String GOOD_NEW = "example.com/playpen-runner:v2";
    /** The dev cluster's flag that makes the simulated kubelet keep pods of {@link #NEVER_READY} unready. */
    static final String CLUSTER_FLAG = "--dev-image-faults=" + NEVER_READY + "=never-ready";
    static final Map<String, Integer> TARGETS = Map.of("runner/amd64", 3, "runner/arm64", 3);
    static final int SURGE = 1;
    static final Duration READY_TIMEOUT = Duration.ofSeconds(15);
    static final Duration EVICT_EVERY = Duration.ofSeconds(10);
    static final double EVICT_SHARE = 0.3;
    /** Evicted pods are replaced by the next pass (a refill right away) and a started pod is ready in ~0.2 s here. */
    static final Duration RECOVERY_BOUND = Duration.ofSeconds(10);
    /** From the end of the rolling restart to a pool full of the new template's pods. */
    static final Duration ROLL_BOUND = Duration.ofSeconds(30);
    /**
     * Both pools together while their image never gets ready. Without a back-off they would replace 3 pods each
     * every ready timeout (15 s): 24 per minute.
     */
    static final int MAX_CREATES_PER_MINUTE = 12;

    private PoolChurnScenario() {
    }

    /** The replicas' flags with {@code image}: pools of 3+3, a short ready timeout and back-off, a surge of 1. */
    static List<String> flags(String image) {
        List<String> flags = new ArrayList<>(ChaosSuite.operatorFlags());
        flags.removeIf(f -> f.startsWith("--runner-amd64-count") || f.startsWith("--runner-arm64-count"));
        flags.addAll(List.of("--runner-amd64-count=3", "--runner-arm64-count=3", "--runner-image=" + image,
                "--pool-ready-timeout=" + READY_TIMEOUT.toSeconds() + "s", "--pool-backoff-base=5s",
                "--pool-backoff-max=60s", "--pool-max-surge=" + SURGE));
        return flags;
    }

    /** The template hash the replicas compute for {@code image} (same flags, same environment). */
    static String hash(String image, String arch) {
        OperatorConfig config = OperatorConfig.parse(flags(image).toArray(new String[0]));
        return new PoolPlanner(config, new PodTemplates(config, System.getenv())).template(PoolTarget.runner(arch)).hash();
    }

    /**
     * This scenario alone: {@code -Dchaos.jar}, {@code -Dchaos.out}, {@code -Dchaos.churnSeconds} (default 300),
     * {@code -Dchaos.seed}. Exits 1 on a violation.
     */
    public static void main(String[] args) throws Exception {
        Path jar = Path.of(System.getProperty("chaos.jar", "target/playpen-operator.jar"));
        Path out = Path.of(System.getProperty("chaos.out", "target/chaos"));
        Files.createDirectories(out);
        Path dir = Files.createTempDirectory(out, "churn-");
        ChaosSuite.Result r;
        try (ChaosSuite suite = ChaosSuite.start(jar, dir, 3, Long.getLong("chaos.seed", 20261123L))) {
            r = run(suite, Duration.ofSeconds(Long.getLong("chaos.churnSeconds", 300)));
        }
        r.violations().forEach(v -> System.out.println("VIOLATION [pool under churn] " + v));
        System.out.println(ChaosSuite.table(List.of(r)));
        System.exit(r.violations().isEmpty() ? 0 : 1);
    }

    /** A churn run in which no pod was evicted tested no refill. */
    static List<String> evictionVerdict(int evicted) {
        return evicted > 0 ? List.of() : List.of("no pod was evicted: the churn tested no refill");
    }

    static ChaosSuite.Result run(ChaosSuite suite, Duration length) throws Exception {
        return new Run(suite, length).run();
    }

    private static final class Run {
        final ChaosSuite suite;
        final Duration length;
        final ClusterHistory history;
        final Random random;
        final List<String> violations = new ArrayList<>();
        final Map<String, Object> recovery = new LinkedHashMap<>();
        /** "healthy" while the current template's pods get ready, "broken" while they never do. */
        volatile boolean templateWorks = true;
        final AtomicBoolean running = new AtomicBoolean(true);
        final AtomicInteger waves = new AtomicInteger();
        final AtomicInteger evicted = new AtomicInteger();
        final AtomicLong worstRecoveryMs = new AtomicLong();
        final AtomicInteger slowRecoveries = new AtomicInteger();
        final AtomicInteger minReadyWhileBroken = new AtomicInteger(Integer.MAX_VALUE);
        final List<String> notes = new java.util.concurrent.CopyOnWriteArrayList<>();

        Run(ChaosSuite suite, Duration length) {
            this.suite = suite;
            this.length = length;
            this.history = suite.history;
            this.random = new Random(suite.seed ^ 0x5eed);
        }

        ChaosSuite.Result run() throws Exception {
            long t0 = System.nanoTime();
            // setup: the pool flags, the first (good) template; the history judges by templates from now on
            history.targets(TARGETS, SURGE);
            roll(GOOD_OLD);
            long full = awaitFull(Duration.ofSeconds(60));
            recovery.put("setupFullMs", full < 0 ? "not within 60 s" : full);

            LoadRun load = suite.load("churn").pace(Duration.ofMillis(400));
            Thread loader = new Thread(() -> {
                try {
                    // stopped below; the deadline only bounds a run that hangs
                    load.run(new LoadRun.Mix(Integer.MAX_VALUE, 2, 0.10, 0.0, 0.40, 4, length.plusMinutes(10)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "chaos-churn-load");
            Thread evictor = new Thread(this::evictLoop, "chaos-churn-evict");
            Duration phase = length.dividedBy(3);
            loader.start();
            evictor.start();

            // phase 1: the first template works
            Thread.sleep(phase.toMillis());
            // phase 2: a rolling restart to an image that never gets ready; the phase runs once the last replica
            // (the leader) has restarted with it
            templateWorks = false;
            long rollStart = System.nanoTime();
            roll(NEVER_READY);
            long brokenAt = System.nanoTime();
            recovery.put("brokenRollMs", (brokenAt - rollStart) / 1_000_000);
            Thread.sleep(phase.toMillis());
            // phase 3: a rolling restart to a good image
            long fixStart = System.nanoTime();
            String brokenHash = hash(NEVER_READY, "amd64");
            String brokenHashArm = hash(NEVER_READY, "arm64");
            roll(GOOD_NEW);
            long rolled = System.nanoTime();
            int created = history.podsAddedWithTemplate(brokenHash, rollStart, rolled)
                    + history.podsAddedWithTemplate(brokenHashArm, rollStart, rolled);
            double minutes = (rolled - rollStart) / 60e9;
            double perMinute = created / minutes;
            recovery.put("neverReadyCreates", created);
            recovery.put("neverReadyMinutes", Math.round(minutes * 10) / 10.0);
            recovery.put("neverReadyCreatesPerMinute", Math.round(perMinute * 10) / 10.0);
            recovery.put("createsBoundPerMinute", MAX_CREATES_PER_MINUTE);
            if (perMinute > MAX_CREATES_PER_MINUTE) {
                violations.add("with a never-ready image the pools created " + created + " pods of it in "
                        + Math.round(minutes * 60) + " s (" + Math.round(perMinute) + " per minute), bound "
                        + MAX_CREATES_PER_MINUTE);
            }
            recovery.put("goodRollMs", (rolled - fixStart) / 1_000_000);
            long fullAgain = awaitFull(ROLL_BOUND.plusSeconds(30));
            recovery.put("fullAfterGoodRollMs", fullAgain < 0 ? "not within " + ROLL_BOUND.plusSeconds(30).toSeconds()
                    + " s" : fullAgain);
            recovery.put("rollBoundMs", ROLL_BOUND.toMillis());
            if (fullAgain < 0 || fullAgain > ROLL_BOUND.toMillis()) {
                violations.add("after the good roll the pools were full after " + fullAgain + " ms, bound "
                        + ROLL_BOUND.toMillis() + " ms");
            }
            templateWorks = true;
            Thread.sleep(phase.toMillis());

            load.stop();
            loader.join(Duration.ofMinutes(2).toMillis());
            running.set(false);
            evictor.interrupt();
            evictor.join(30_000);

            recovery.put("evictionWaves", waves.get());
            recovery.put("podsEvicted", evicted.get());
            recovery.put("worstRecoveryMs", worstRecoveryMs.get());
            recovery.put("recoveryBoundMs", RECOVERY_BOUND.toMillis());
            recovery.put("minReadyIdleWhileNeverReady", minReadyWhileBroken.get() == Integer.MAX_VALUE ? "-"
                    : minReadyWhileBroken.get());
            long[] claims = history.claimCounts();
            recovery.put("claims", claims[0]);
            recovery.put("claimsOfOlderTemplate", claims[1]);
            if (slowRecoveries.get() > 0) {
                violations.add(slowRecoveries.get() + " eviction wave(s) while the template worked were not refilled "
                        + "within " + RECOVERY_BOUND.toMillis() + " ms (worst " + worstRecoveryMs.get() + " ms)");
            }
            violations.addAll(evictionVerdict(evicted.get()));
            violations.addAll(load.violations(history));
            violations.addAll(suite.newHistoryViolations());
            notes.forEach(n -> System.out.println("chaos: churn: " + n));
            return new ChaosSuite.Result("pool under churn", "3 replicas, 2 clients paced 400 ms (40% deallocs, 10% "
                    + "retried), pools 3+3, surge 1, ready timeout " + READY_TIMEOUT.toSeconds() + " s; three phases of "
                    + phase.toSeconds() + " s", "every 10 s 30% of idle pods evicted; rolling restarts to a never-ready "
                    + "image after phase 1, to a good one after phase 2", load.attempts().size(),
                    load.outcomes(), violations, recovery, ChaosSuite.seconds(t0));
        }

        /** Rolling restart with {@code image}: followers first, the leader last (stopped with SIGTERM). */
        void roll(String image) throws Exception {
            for (String arch : List.of("amd64", "arm64")) {
                history.currentTemplate("runner/" + arch, hash(image, arch));
            }
            Path kubeconfig = suite.pg.dir().resolve("proxy-kubeconfig");
            int leader = suite.leaderIndex();
            List<Integer> order = new ArrayList<>();
            for (int i = 0; i < suite.pg.replicas().size(); i++) {
                if (i != leader) {
                    order.add(i);
                }
            }
            if (leader >= 0) {
                order.add(leader);
            }
            for (int i : order) {
                suite.pg.stop(i);
                suite.pg.start(i, kubeconfig, flags(image));
                int r = i;
                long ready = ChaosSuite.awaitNanos(() -> suite.pg.ready(r, suite.anon), Duration.ofSeconds(120));
                if (ready < 0) {
                    violations.add("replica-" + i + " not ready within 120 s after its restart with " + image);
                }
            }
        }

        /** ms until every pool holds its target of current ready idle pods, or -1 at the timeout. */
        long awaitFull(Duration timeout) throws InterruptedException {
            long t = System.nanoTime();
            long at = ChaosSuite.awaitNanos(this::full, timeout);
            return at < 0 ? -1 : (at - t) / 1_000_000;
        }

        boolean full() {
            return TARGETS.entrySet().stream().allMatch(e -> history.readyIdle(e.getKey())[1] >= e.getValue());
        }

        void evictLoop() {
            long next = System.nanoTime() + EVICT_EVERY.toNanos();
            while (running.get()) {
                try {
                    Thread.sleep(Math.max(0, (next - System.nanoTime()) / 1_000_000));
                } catch (InterruptedException e) {
                    return;
                }
                next += EVICT_EVERY.toNanos();
                if (!running.get()) {
                    return;
                }
                boolean works = templateWorks;
                long wave = System.nanoTime();
                evictWave();
                if (works) {
                    long until = Math.min(next, wave + RECOVERY_BOUND.toNanos() * 3);
                    long at = pollUntil(this::full, until);
                    if (at < 0) {
                        if (templateWorks) {
                            slowRecoveries.incrementAndGet();
                            worstRecoveryMs.accumulateAndGet((until - wave) / 1_000_000, Math::max);
                            notes.add("wave " + waves.get() + " not refilled before the next one");
                        }
                    } else {
                        long ms = (at - wave) / 1_000_000;
                        worstRecoveryMs.accumulateAndGet(ms, Math::max);
                        if (ms > RECOVERY_BOUND.toMillis()) {
                            slowRecoveries.incrementAndGet();
                        }
                    }
                } else {
                    int ready = TARGETS.keySet().stream().mapToInt(k -> history.readyIdle(k)[0]).sum();
                    minReadyWhileBroken.accumulateAndGet(ready, Math::min);
                }
            }
        }

        long pollUntil(java.util.function.BooleanSupplier condition, long deadlineNanos) {
            while (System.nanoTime() < deadlineNanos && running.get()) {
                if (condition.getAsBoolean()) {
                    return System.nanoTime();
                }
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    return -1;
                }
            }
            return -1;
        }

        /** 30% of the idle Running pods (at least one when there are any), Failed/Evicted by a status patch. */
        void evictWave() {
            waves.incrementAndGet();
            List<Pod> idle = new ArrayList<>();
            try {
                for (Pod p : history.client().pods().inNamespace("playpen").list().getItems()) {
                    if (ClusterHistory.keyHash(p) == null && !ClusterHistory.terminating(p) && p.getStatus() != null
                            && "Running".equals(p.getStatus().getPhase())) {
                        idle.add(p);
                    }
                }
            } catch (RuntimeException e) {
                notes.add("listing pods for an eviction wave failed: " + e.getMessage());
                return;
            }
            java.util.Collections.shuffle(idle, random);
            int n = idle.isEmpty() ? 0 : Math.max(1, (int) Math.round(idle.size() * EVICT_SHARE));
            for (Pod p : idle.subList(0, n)) {
                try {
                    history.client().pods().inNamespace("playpen").withName(p.getMetadata().getName())
                            .patch(PatchContext.of(PatchType.JSON_MERGE), "{\"status\":{\"phase\":\"Failed\","
                                    + "\"reason\":\"Evicted\",\"message\":\"chaos: the node was low on memory\"}}");
                    evicted.incrementAndGet();
                } catch (RuntimeException e) {
                    notes.add("evicting " + p.getMetadata().getName() + " failed: " + e.getMessage());
                }
            }
        }

        void sleepUntil(long start, Duration offset) throws InterruptedException {
            long left = start + offset.toNanos() - System.nanoTime();
            if (left > 0) {
                Thread.sleep(left / 1_000_000);
            }
        }
    }
}
