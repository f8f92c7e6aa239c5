package io.unboundedcloud.playpen.bench;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.kube.ClaimWriter;
import io.unboundedcloud.playpen.model.ManagedPods;

/**
 * The bench's largest pool (phase {@code huge}): {@code bench.huge} runner pods (100,000), {@code bench.hugeClaimed}
 * of them claimed (50,000), over {@code bench.hugeNodes} nodes (2,000), as a large cluster with thousands of nodes
 * and warm runners has them (each host port on several nodes). In-process: startup, an idle reconcile pass, the
 * selection cost, and allocations at c=1 interleaved with bare PATCHes and watched bare PATCHes in
 * {@code bench.rounds} rounds, after the same JIT warm-up and settling as at {@code bench.pods}, for the ratio alloc
 * p50 / bare PATCH p50 against the same ratio at {@code bench.pods} (the watched bare PATCH tells how much of a
 * growth is the API server's watch). Then the packaged jar against the
 * same API with {@code bench.hugeJarJvmArgs} (the image's flags with a 1.5 GiB memory limit): startup to ready,
 * RSS and heap after allocations, heap after a full collection.
 */
final class HugePool {
    private final Bench b;
    /** Idle pods already PATCHed by a bare scenario (the bare and the watched PATCH take pods from the same cache). */
    private final Set<String> used = new HashSet<>();

    HugePool(Bench b) {
        this.b = b;
    }

    /** The pool target the pool reconciler is given: as many as it may be (--runner-amd64-count &lt;= 10,000). */
    static int poolTarget(int idle) {
        return Math.min(idle, 10_000);
    }

    Map<String, Object> run() throws Exception {
        int total = b.huge;
        int claimed = Math.min(b.hugeClaimed, total);
        int idle = total - claimed;
        b.log("huge: %d runner pods (%d idle, %d claimed) over %d nodes, pool target %d (nothing to do)", total, idle,
                claimed, b.hugeNodes, poolTarget(idle));
        String[] flags = {"--runner-amd64-count=" + poolTarget(idle), "--runner-arm64-count=0",
            "--runner-wireguard-host-port-start=" + Bench.FIRST_PORT,
            "--runner-wireguard-host-port-end=" + (Bench.FIRST_PORT + Bench.POOL_PORTS - 1), "--reconcile-interval=10m"};
        Map<String, Object> m = new LinkedHashMap<>();
        try (Bench.Env e = Bench.Env.open(b, idle, claimed, b.hugeNodes, flags)) {
            m.put("pods", total);
            m.put("idlePods", idle);
            m.put("claimedPods", claimed);
            m.put("nodes", b.hugeNodes);
            m.put("createPodsMs", Stats.round(e.createPodsMs));
            m.put("inProcessStartupToReadyMs", Stats.round(e.startupMs));
            Thread.sleep(1000); // the startup pass and any debounced pass have run
            Map<String, Object> rec = b.idleReconcile(e);
            m.put("idleReconcile", rec);
            b.log("  idle reconcile over %d pods: cpu %s ms, wall %s ms, api calls %s, created %s, passes run %s "
                    + "(after the pool heard of every pod, %s ms after ready)", total, rec.get("cpuMsPerPass"),
                    rec.get("wallMsPerPass"), rec.get("apiCallsTotal"), rec.get("podsCreated"), rec.get("passesRun"),
                    rec.get("listenersCaughtUpWaitMs"));
            Map<String, Object> sel = b.selectionCost(e);
            b.selection.put(total, sel);
            b.log("  selection over %d cached pods: select %s us, hot path %s us CPU per call", total,
                    sel.get("cpuMicrosPerSelect"), sel.get("hotPathCpuMicrosPerCall"));

            Set<String> claimedBefore = claimedInCache(e);
            m.put("allocVsBarePatchAtC1", atC1(e, total));
            // the jar below is measured over the pool as it was (half claimed): the c=1 work's claims come off
            m.put("claimsTakenBackAfterC1", takeBackClaimsSince(e, claimedBefore));
            Thread.sleep(1000);
            m.put("memoryInProcess", b.inProcessMemory());
            e.op.close();
            e.op = null;

            Map<String, Object> jarRes = b.jarProcess(e.cluster, total, List.of(flags), 200, b.hugeJarJvmArgs);
            if (jarRes != null) {
                m.put("jarProcess", jarRes);
            }
        }
        return m;
    }

    private static Set<String> claimedInCache(Bench.Env e) {
        Set<String> names = new HashSet<>();
        for (Pod p : e.op.app.podCache().pods()) {
            if (ManagedPods.isClaimed(p)) {
                names.add(ManagedPods.name(p));
            }
        }
        return names;
    }

    /** Takes every claim made since {@code before} off its pod (the claim's own rollback write); returns how many. */
    private long takeBackClaimsSince(Bench.Env e, Set<String> before) throws Exception {
        long t0 = System.nanoTime();
        List<Pod> since = new ArrayList<>();
        for (Pod p : e.op.app.podCache().pods()) {
            if (ManagedPods.isClaimed(p) && !before.contains(ManagedPods.name(p))) {
                since.add(p);
            }
        }
        List<Callable<ClaimWriter.Rollback>> rollbacks = new ArrayList<>();
        for (Pod p : since) {
            rollbacks.add(() -> e.baselineWriter.rollback(p, ManagedPods.keyHash(p)));
        }
        long undone = Bench.inParallel(8, rollbacks).stream().filter(r -> r == ClaimWriter.Rollback.ROLLED_BACK).count();
        if (undone != since.size()) {
            throw new IllegalStateException("took back " + undone + " of the " + since.size()
                    + " claims made at c=1; the jar would not be measured over a half-claimed pool");
        }
        b.log("  took back the %d claims made at c=1 in %.1f s", undone, (System.nanoTime() - t0) / 1e9);
        return undone;
    }

    /**
     * Allocations and bare PATCHes at c=1, interleaved in {@code bench.rounds} rounds (no pod is released between:
     * the pool is far larger than the requests), recorded as runs at N = {@code total} like the comparison's.
     */
    private Map<String, Object> atC1(Bench.Env e, int total) throws Exception {
        Allocs ours = new Allocs();
        IdleFromCache bare = new IdleFromCache();
        try (LimitScenarios.WatchedPatch watched = new LimitScenarios.WatchedPatch(new IdleFromCache())) {
            return atC1(e, total, List.of(bare, ours, watched));
        }
    }

    /**
     * {@code lineup}: the bare PATCH, the allocation and the watched bare PATCH (what an exactly-once answer cannot
     * cost less than, without the front door: see {@link LimitScenarios}), measured in turn in every round.
     */
    private Map<String, Object> atC1(Bench.Env e, int total, List<Bench.Scenario> lineup) throws Exception {
        Map<String, Object> jit = null;
        if (b.jitWarmup > 0) {
            // as at bench.pods (Bench.comparison): this JVM has just started an operator over 100,000 pods, run its
            // idle passes and the full selection, so C2 recompiles the request path and G1 marks the large heap;
            // measured before that settles, both ratios would be a compiling JVM's, not this pool size's
            long t0 = System.nanoTime();
            b.warmUp(e, lineup, b.jitWarmup);
            b.log("  JIT warm-up over %d pods: %d requests of each scenario in %.1f s", total, b.jitWarmup,
                    (System.nanoTime() - t0) / 1e9);
            int idleLeft = idleLeft(e);
            int settleRounds = settleRoundsWithin(idleLeft, lineup.size());
            b.log("  JIT settling over %d pods: at most %d rounds (%d idle pods left)", total, settleRounds, idleLeft);
            jit = b.settleJit(e, lineup, settleRounds);
        }
        List<Bench.Measured> measured = new ArrayList<>();
        for (Bench.Scenario sc : lineup) {
            measured.add(b.new Measured(sc, 1));
        }
        int rounds = Math.max(1, b.rounds);
        int per = Math.max(1, b.requests / rounds);
        // the leader's pool passes while allocations come in: each claim asks for one, and each plan judges every
        // idle pod
        io.unboundedcloud.playpen.kube.PoolReconciler pools = e.op.app.poolReconciler();
        long passes0 = pools.passes();
        long planCpu0 = pools.planCpuNanos();
        long wall0 = System.nanoTime();
        for (int round = 0; round < rounds; round++) {
            int n = round == rounds - 1 ? b.requests - per * (rounds - 1) : per;
            for (int i = 0; i < lineup.size(); i++) {
                b.measureInto(e, measured.get(i), lineup.get(i), n, Bench.ROUND_WARMUP);
            }
        }
        double wallSeconds = (System.nanoTime() - wall0) / 1e9;
        long passes = pools.passes() - passes0;
        double planCpuMs = (pools.planCpuNanos() - planCpu0) / 1e6;
        double planCpuMsPerPass = planCpuMs / Math.max(1, passes);
        double planShare = planCpuMs / 1e3 / wallSeconds;
        Bench.Run bareRun = measured.get(0).run(e);
        Bench.Run oursRun = measured.get(1).run(e);
        Bench.Run watchedRun = measured.get(2).run(e);
        b.runs.add(bareRun);
        b.runs.add(oursRun);
        b.runs.add(watchedRun);
        double ratio = oursRun.stats().pMs(50) / bareRun.stats().pMs(50);
        Map<String, Object> m = Bench.map("pods", total, "allocP50Ms", Stats.round(oursRun.stats().pMs(50)),
                "barePatchP50Ms", Stats.round(bareRun.stats().pMs(50)), "ratio", Stats.round(ratio),
                "patchWatchedP50Ms", Stats.round(watchedRun.stats().pMs(50)),
                "allocErrors", oursRun.stats().errors, "barePatchErrors", bareRun.stats().errors,
                "patchWatchedErrors", watchedRun.stats().errors,
                "poolPasses", passes, "planCpuMsPerPass", Stats.round(planCpuMsPerPass),
                "planCpuShareOfOneCore", Stats.round(planShare));
        if (jit != null) {
            m.put("jitSettle", jit);
        }
        b.log("  pool passes while allocating over %d pods: %d in %.1f s, plan CPU %.1f ms each, %.0f%% of one core",
                total, passes, wallSeconds, planCpuMsPerPass, 100 * planShare);
        b.log("  c=1 over %d pods: alloc p50 %.2f ms, bare PATCH p50 %.2f ms, ratio %.2f; watched bare PATCH p50 %.2f ms",
                total, oursRun.stats().pMs(50), bareRun.stats().pMs(50), ratio, watchedRun.stats().pMs(50));
        return m;
    }

    /** Allocations through the HTTPS front door, as the comparison's, but nothing is released between rounds. */
    final class Allocs implements Bench.Scenario {
        private long eventsBefore;

        @Override
        public String name() {
            return Bench.OURS;
        }

        @Override
        public boolean claims() {
            return false;
        }

        @Override
        public void prepare(Bench.Env e, int firstIndex, int count) {
            eventsBefore = Bench.eventsSettled(e);
        }

        @Override
        public void run(Bench.Env e, int index, int worker) throws Exception {
            Bench.send(e, index, worker);
        }

        @Override
        public void settle(Bench.Env e, int succeeded) throws Exception {
            Bench.await(() -> Bench.eventsSettled(e) >= eventsBefore + succeeded, java.time.Duration.ofSeconds(10),
                    "Allocated events written");
        }
    }

    /**
     * The settling rounds the idle pods left allow: every scenario of the lineup ({@code scenarios} of them) uses up
     * an idle pod per request (the bare and watched PATCHes keep the pods they claim, the allocations here are
     * not released, and the pool here makes none), each round's batch after {@code bench.warmup} unmeasured requests,
     * and the measured rounds after need {@code bench.requests} plus each round's warm-up of each; at most
     * {@code bench.jitSettleRounds}.
     */
    int settleRoundsWithin(int idleLeft, int scenarios) {
        int measuredNeed = scenarios * (b.requests + Math.max(1, b.rounds) * Bench.ROUND_WARMUP);
        int perRound = Math.max(1, scenarios * (b.jitSettleRoundRequests() + b.warmup));
        return Math.max(0, Math.min(b.jitSettleRounds, (idleLeft - measuredNeed) / perRound));
    }

    /** Idle pods in the cache (those a bare scenario has PATCHed already count as claimed). */
    private int idleLeft(Bench.Env e) {
        int n = 0;
        for (Pod p : e.op.app.podCache().pods()) {
            if (ManagedPods.isIdle(p) && !used.contains(ManagedPods.name(p))) {
                n++;
            }
        }
        return n;
    }

    /** The bare claim PATCH on idle pods picked from the in-process operator's cache (a LIST of 100,000 is not cheap). */
    final class IdleFromCache extends Bench.BaselineScenario {
        @Override
        public boolean claims() {
            return false;
        }

        @Override
        List<Pod> idle(Bench.Env e) {
            List<Pod> idle = new ArrayList<>();
            for (Pod p : e.op.app.podCache().pods()) {
                if (ManagedPods.isIdle(p) && !used.contains(ManagedPods.name(p))) {
                    idle.add(p);
                }
            }
            return idle;
        }

        @Override
        void picked(List<Pod> pods) {
            pods.forEach(p -> used.add(ManagedPods.name(p)));
        }
    }
}
