package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.AbstractQueuedSynchronizer;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.model.PoolPlan;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The pass's steps against the mock API: a replica that loses the Lease in the middle of a pass stops writing; the
 * delete step deletes only idle pods still as the plan saw them; a pass that finds the cache not synced comes back
 * once it has; a new leader's first pass is not debounced; passes asked for
 * by pod changes wait longer after a costly plan; a pass waits for the one under way.
 */
class PoolReconcilerTest {
    /** A test body given the mock API and a reconciler whose pod cache (given too) has synced. */
    interface SyncedPoolTest {
        void run(TestCluster cluster, PoolReconciler pool, PodCache cache) throws Exception;
    }

    /** Runs {@code body} with a new mock API and a reconciler (no interval timer) configured by {@code flags}. */
    static void withSyncedPool(BooleanSupplier leader, SyncedPoolTest body, String... flags) throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            withSyncedPool(cluster, leader, body, flags);
        }
    }

    /** Runs {@code body} with {@code cluster} as it is and a reconciler (no interval timer) configured by {@code flags}. */
    static void withSyncedPool(TestCluster cluster, BooleanSupplier leader, SyncedPoolTest body, String... flags)
            throws Exception {
        OperatorConfig config = OperatorConfig.parse(flags);
        PodCache cache = new PodCache(cluster.client, TestCluster.NS,
                new Candidates(config.runnerLabelSelector())::idleKindKey);
        cache.start();
        try {
            // synced, and every listed pod told to the listeners: a pass before that is skipped (assess returns null)
            OperatorHarness.awaitTrue(cache::listenersCaughtUp, Duration.ofSeconds(60), "cache synced");
            try (PoolReconciler pool = new PoolReconciler(cluster.client, config, cache,
                    new PodTemplates(config, Map.of()), leader, new ApiCallCounter())) {
                body.run(cluster, pool, cache);
            }
        } finally {
            cache.close();
        }
    }

    /**
     * After a restart the store has every pod before the pool's tally has heard of them (the listeners hear of them
     * one event at a time): a pass in between would create pods for those it has not heard of yet. None runs.
     */
    @Test
    void noPassRunsUntilThePoolHasHeardOfEveryListedPod() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
            cluster.create(TestCluster.readyRunner("amd64", 51821, "node-a"));
            OperatorConfig config = OperatorConfig.parse("--runner-amd64-count=2", "--runner-arm64-count=0");
            PodCache cache = new PodCache(cluster.client, TestCluster.NS,
                    new Candidates(config.runnerLabelSelector())::idleKindKey);
            java.util.concurrent.CountDownLatch hold = new java.util.concurrent.CountDownLatch(1);
            // a slow listener ahead of the pool's: the pool hears of the listed pods only once it lets them through
            cache.addListener((change, pod) -> {
                try {
                    hold.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            try (PoolReconciler pool = new PoolReconciler(cluster.client, config, cache,
                    new PodTemplates(config, Map.of()), () -> true, new ApiCallCounter())) {
                pool.runPassesWith(() -> { });
                cache.addListener(pool);
                cache.start();
                OperatorHarness.awaitTrue(() -> cache.hasSynced() && cache.pods().size() == 2, Duration.ofSeconds(60),
                        "the store holds both pods");
                assertThat(pool.reconcile().created()).isZero();
                assertThat(pool.passes()).isZero();
                hold.countDown();
                OperatorHarness.awaitTrue(cache::listenersCaughtUp, Duration.ofSeconds(60), "the pool heard of both");
                assertThat(pool.reconcile().created()).isZero();
                assertThat(pool.passes()).isEqualTo(1);
                assertThat(cluster.pods()).hasSize(2);
            } finally {
                hold.countDown();
                cache.close();
            }
        }
    }

    @Test
    void aPassWaitsUntilTheOneUnderWayHasFinished() throws Exception {
        withSyncedPool(() -> true, (cluster, pool, cache) -> {
            PoolReconciler.Pass first = pool.plan(pool.assess());
            assertThat(first.plan().toCreate()).hasSize(1);
            CompletableFuture<PoolReconciler.Result> second = new CompletableFuture<>();
            Thread t = new Thread(() -> {
                try {
                    second.complete(pool.reconcile());
                } catch (RuntimeException e) {
                    second.completeExceptionally(e);
                }
            }, "second-pass");
            t.start();
            // the second pass parks on the pass lock before it counts itself, plans or writes
            OperatorHarness.awaitTrue(() -> LockSupport.getBlocker(t) instanceof AbstractQueuedSynchronizer,
                    Duration.ofSeconds(60), "the second pass waiting for the first");
            assertThat(pool.passes()).isEqualTo(1);
            assertThat(pool.finish(pool.create(pool.delete(first))).created()).isEqualTo(1);
            // then it plans with the first one's pod expected: nothing is created twice
            assertThat(second.get(60, TimeUnit.SECONDS).created()).isZero();
            assertThat(pool.passes()).isEqualTo(2);
            assertThat(cluster.pods()).hasSize(1);
        }, "--runner-amd64-count=1", "--runner-arm64-count=0");
    }

    @Test
    void leadershipLostBetweenThePlanAndTheCreatesCreatesNothing() throws Exception {
        AtomicBoolean leader = new AtomicBoolean(true);
        withSyncedPool(leader::get, (cluster, pool, cache) -> {
            // only this test's own passes run
            pool.runPassesWith(() -> { });
            PoolReconciler.Pass pass = pool.plan(pool.assess());
            assertThat(pass.plan().toCreate()).hasSize(3);
            leader.set(false);
            PoolReconciler.Result r = pool.finish(pool.create(pool.delete(pass)));
            assertThat(r.created()).isZero();
            assertThat(cluster.pods()).isEmpty();
            // and the next pass does not even start
            assertThat(pool.assess()).isNull();
            leader.set(true);
            assertThat(pool.reconcile().created()).isEqualTo(3);
        }, "--runner-amd64-count=3", "--runner-arm64-count=0");
    }

    /**
     * The replica leads, but the pass a pod change asks for (a claim: the pool is one short; or, with the demand-aware
     * buffer, an alloc turned away) runs in a moment when it does not count as leading (its last Lease write began
     * more than the renew deadline ago, and the next one lands before its renewal watch looks, so no change of
     * leadership is told and no new leader's pass comes): the pass still comes once the replica is told it counts as
     * leading again, not at the interval timer's next tick (none runs here) or the next pod change.
     */
    @Test
    void aPassAskedForWhileTheLeaderDoesNotCountAsLeadingRunsOnceItDoesAgain() throws Exception {
        AtomicBoolean leading = new AtomicBoolean(false);
        java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
        BooleanSupplier leader = () -> {
            asked.incrementAndGet();
            return leading.get();
        };
        withSyncedPool(leader, (cluster, pool, cache) -> {
            pool.requestRefill();
            OperatorHarness.awaitTrue(() -> asked.get() >= 1, Duration.ofSeconds(60),
                    "the pass asked whether this replica leads");
            assertThat(cluster.pods()).isEmpty();
            assertThat(pool.scheduledTasks()).as("no pass of its own looks again").isZero();
            // leading again without a leadership change told (so no onLeadership), as the election tells it
            leading.set(true);
            pool.onLeadingAgain();
            OperatorHarness.awaitTrue(() -> cluster.pods().size() == 1, Duration.ofSeconds(60),
                    "the pool pod, from the pass asked for while this replica did not count as leading");
        }, "--runner-amd64-count=1", "--runner-arm64-count=0", "--refill-debounce=0", "--reconcile-interval=1h");
    }

    /**
     * A pass that stops before its creates because the replica no longer counts as leading (past its renew deadline)
     * runs again once it is told it counts as leading again within its term; told so with no pass dropped, it runs
     * none.
     */
    @Test
    void aPassStoppedWhileTheLeaderDoesNotCountAsLeadingRunsAgainOnceItDoes() throws Exception {
        AtomicBoolean leader = new AtomicBoolean(true);
        withSyncedPool(leader::get, (cluster, pool, cache) -> {
            java.util.concurrent.atomic.AtomicInteger runs = new java.util.concurrent.atomic.AtomicInteger();
            pool.runPassesWith(() -> {
                runs.incrementAndGet();
                pool.reconcile();
            });
            pool.onLeadingAgain();
            assertThat(pool.scheduledTasks()).as("nothing dropped, nothing to run again").isZero();
            PoolReconciler.Pass pass = pool.plan(pool.assess());
            assertThat(pass.plan().toCreate()).hasSize(2);
            leader.set(false);
            assertThat(pool.finish(pool.create(pool.delete(pass))).created()).isZero();
            leader.set(true);
            pool.onLeadingAgain();
            OperatorHarness.awaitTrue(() -> cluster.pods().size() == 2, Duration.ofSeconds(60),
                    "the pool pods, from the pass run again");
            assertThat(runs.get()).isEqualTo(1);
        }, "--runner-amd64-count=2", "--runner-arm64-count=0", "--reconcile-interval=1h");
    }

    /** A test body given the pool's signals, a reconciler that leads while {@code leads} says so, and its planner. */
    interface BackoffPoolTest {
        void run(PoolSignals signals, PoolReconciler pool, AtomicBoolean leads,
                io.unboundedcloud.playpen.model.PoolPlanner planner) throws Exception;
    }

    /**
     * Runs {@code body} with one amd64 runner pool learning its back-off from {@link PoolSignals}, on a replica that
     * leads (its term begun and its first pass run; further passes do nothing) until {@code leads} says otherwise.
     */
    static void withBackoffPool(BackoffPoolTest body) throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            OperatorConfig config = OperatorConfig.parse("--runner-amd64-count=1", "--runner-arm64-count=0",
                    "--pool-backoff-base=5m", "--reconcile-interval=1h");
            PodCache cache = new PodCache(cluster.client, TestCluster.NS,
                    new Candidates(config.runnerLabelSelector())::idleKindKey);
            io.unboundedcloud.playpen.model.PoolPlanner planner =
                    new io.unboundedcloud.playpen.model.PoolPlanner(config, new PodTemplates(config, Map.of()));
            PoolSignals signals = new PoolSignals(planner, new NodeCache(null), Clock.systemUTC(), config.pools());
            AtomicBoolean leads = new AtomicBoolean(true);
            cache.start();
            try (PoolReconciler pool = new PoolReconciler(cluster.client, config, cache, null, planner, signals,
                    leads::get, new ApiCallCounter(), Clock.systemUTC())) {
                OperatorHarness.awaitTrue(cache::listenersCaughtUp, Duration.ofSeconds(60), "cache synced");
                java.util.concurrent.CountDownLatch firstPass = new java.util.concurrent.CountDownLatch(1);
                pool.runPassesWith(firstPass::countDown);
                pool.onLeadership(); // as the election tells it
                assertThat(firstPass.await(60, TimeUnit.SECONDS)).as("the new leader's pass").isTrue();
                pool.runPassesWith(() -> { });
                body.run(signals, pool, leads, planner);
            } finally {
                cache.close();
            }
        }
    }

    static final io.unboundedcloud.playpen.model.PoolTarget AMD64 = io.unboundedcloud.playpen.model.PoolTarget.runner(
            "amd64");

    /** A replacement of the amd64 pool that never got ready, deleted: a failure of its back-off. */
    static void failed(PoolSignals signals, io.unboundedcloud.playpen.model.PoolPlanner planner, int port, String uid) {
        Pod failed = new io.fabric8.kubernetes.api.model.PodBuilder(planner.podFor(AMD64, port))
                .editMetadata().withUid(uid).endMetadata().build();
        signals.deletedUnhealthy(AMD64, failed, io.unboundedcloud.playpen.model.PoolHealth.Problem.NOT_READY_IN_TIME);
    }

    /** A pod of the amd64 pool's template that became ready, as the watch shows it: the pool's back-off ends. */
    static void becameReady(PoolSignals signals, io.unboundedcloud.playpen.model.PoolPlanner planner, int port,
            String uid) {
        Pod ready = new io.fabric8.kubernetes.api.model.PodBuilder(planner.podFor(AMD64, port))
                .editMetadata().withUid(uid).addToAnnotations(
                        io.unboundedcloud.playpen.model.PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY,
                        TestCluster.wgKey(1)).endMetadata()
                .withNewStatus().withPhase("Running").addNewContainerStatus().withName("runner")
                .withReady(true).withNewState().withNewRunning().endRunning().endState()
                .endContainerStatus().endStatus().build();
        signals.onPodEvent(PodCache.Change.ADDED, ready);
    }

    /** An observer that records the back-off changes told to it. */
    static List<PoolSignals.BackoffChange> recordBackoffs(PoolReconciler pool) {
        List<PoolSignals.BackoffChange> told = new java.util.concurrent.CopyOnWriteArrayList<>();
        pool.addObserver(new PoolReconciler.Observer() {
            @Override
            public void backoffChanged(PoolSignals.BackoffChange change) {
                told.add(change);
            }
        });
        return told;
    }

    /**
     * A pool's back-off ends (a pod of its template becomes ready) in a moment when the leader does not count as
     * leading (past its renew deadline, its next Lease write not landed yet): the recovery, which the leader tells
     * (a Normal BackOffEnded on the pod), is told once the replica counts as leading again within its term, not
     * dropped: no other replica leads meanwhile, and nothing tells it later.
     */
    @Test
    void aBackOffThatEndsWhileTheLeaderDoesNotCountAsLeadingIsToldOnceItDoesAgain() throws Exception {
        withBackoffPool((signals, pool, leads, planner) -> {
            List<PoolSignals.BackoffChange> told = recordBackoffs(pool);
            failed(signals, planner, 51821, "failed");
            assertThat(told).as("the failure, told while leading").hasSize(1);

            leads.set(false);
            becameReady(signals, planner, 51820, "ready");
            assertThat(signals.backoff(AMD64).view().backingOff()).as("the back-off ended").isFalse();
            assertThat(told).as("not told while not counting as leading").hasSize(1);

            // leading again without a leadership change told (so no onLeadership), as the election tells it
            leads.set(true);
            pool.onLeadingAgain();
            OperatorHarness.awaitTrue(() -> told.size() == 2, Duration.ofSeconds(60),
                    "the recovery told once this replica counts as leading again");
            assertThat(told.get(1).recovered()).isTrue();
            assertThat(told.get(1).pod().getMetadata().getUid()).isEqualTo("ready");

            // a replica whose term has ended keeps nothing for later: it is not the one to tell it
            pool.onLeadershipLost();
            leads.set(false);
            failed(signals, planner, 51822, "failed-again");
            leads.set(true);
            pool.onLeadingAgain();
            // what onLeadingAgain hands to the pass thread runs before a pass asked for after it
            java.util.concurrent.CountDownLatch passed = new java.util.concurrent.CountDownLatch(1);
            pool.runPassesWith(passed::countDown);
            pool.requestRefill();
            assertThat(passed.await(60, TimeUnit.SECONDS)).as("a pass asked for after it").isTrue();
            assertThat(told).as("nothing told on a replica that no longer leads").hasSize(2);
        });
    }

    /**
     * The back-off changes kept while the leader did not count as leading are being told (on the pass thread) when
     * the watch shows the pool's next change: that one is told after them, in the order they came, never first (a
     * BackOffEnded before the BackOff it ends).
     */
    @Test
    void aBackOffChangeTheWatchShowsWhileTheKeptOnesAreToldComesAfterThem() throws Exception {
        withBackoffPool((signals, pool, leads, planner) -> {
            java.util.concurrent.CountDownLatch telling = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CountDownLatch goOn = new java.util.concurrent.CountDownLatch(1);
            // an observer ahead of the one that records holds the kept failure while it is being told
            pool.addObserver(new PoolReconciler.Observer() {
                @Override
                public void backoffChanged(PoolSignals.BackoffChange change) {
                    if (!change.recovered()) {
                        telling.countDown();
                        try {
                            goOn.await(60, TimeUnit.SECONDS);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                }
            });
            List<PoolSignals.BackoffChange> told = recordBackoffs(pool);
            leads.set(false);
            failed(signals, planner, 51821, "failed");
            leads.set(true);
            pool.onLeadingAgain();
            assertThat(telling.await(60, TimeUnit.SECONDS)).as("the kept failure being told").isTrue();

            Thread watch = new Thread(() -> becameReady(signals, planner, 51820, "ready"), "pod-watch");
            watch.setDaemon(true);
            watch.start();
            OperatorHarness.awaitTrue(() -> !watch.isAlive()
                    || ScriptedReplica.parkedIn(watch, "PoolReconciler", "backoffSignalled"), Duration.ofSeconds(60),
                    "the recovery told, or waiting to be");
            goOn.countDown();
            watch.join(TimeUnit.SECONDS.toMillis(60));
            OperatorHarness.awaitTrue(() -> told.size() == 2, Duration.ofSeconds(60), "both told");
            assertThat(told).extracting(c -> c.pod().getMetadata().getUid() + (c.recovered() ? " recovered" : " failed"))
                    .as("in the order they came").containsExactly("failed failed", "ready recovered");
        });
    }

    @Test
    void aPassThatFindsTheCacheNotSyncedComesBackOnceItHasWhateverTheDebounce() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            // a debounce of an hour and no interval timer here: only the pass's own look-again can create the pod
            OperatorConfig config = OperatorConfig.parse("--runner-amd64-count=1", "--runner-arm64-count=0",
                    "--refill-debounce=1h");
            PodCache cache = new PodCache(cluster.client, TestCluster.NS,
                    new Candidates(config.runnerLabelSelector())::idleKindKey);
            try (PoolReconciler pool = new PoolReconciler(cluster.client, config, cache,
                    new PodTemplates(config, Map.of()), () -> true, new ApiCallCounter())) {
                // the Lease is won before the cache's first list is in: nothing is planned from an empty cache
                assertThat(pool.assess()).isNull();
                assertThat(pool.passes()).isZero();
                cache.start();
                OperatorHarness.awaitTrue(() -> cluster.pods().size() == 1, Duration.ofSeconds(60),
                        "the pool pod, from the pass that looked again once the cache had synced");
                assertThat(pool.passes()).isGreaterThanOrEqualTo(1);
            } finally {
                cache.close();
            }
        }
    }

    /**
     * Without a debounce (0) a leader whose cache has not synced still looks again only every 100 ms, not in a loop:
     * each look is a pass through the pool-pass route, and the list it waits for needs the CPU. (A look the
     * scheduler delays never comes before its delay.)
     */
    @Test
    void aPassThatFindsTheCacheNotSyncedLooksAgainEveryHundredMillisecondsEvenWithoutADebounce() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            OperatorConfig config = OperatorConfig.parse("--runner-amd64-count=1", "--runner-arm64-count=0",
                    "--refill-debounce=0");
            // never started: it does not sync
            PodCache cache = new PodCache(cluster.client, TestCluster.NS,
                    new Candidates(config.runnerLabelSelector())::idleKindKey);
            try (PoolReconciler pool = new PoolReconciler(cluster.client, config, cache,
                    new PodTemplates(config, Map.of()), () -> true, new ApiCallCounter())) {
                java.util.List<Long> looks = new java.util.concurrent.CopyOnWriteArrayList<>();
                java.util.concurrent.CountDownLatch three = new java.util.concurrent.CountDownLatch(3);
                pool.runPassesWith(() -> {
                    looks.add(System.nanoTime());
                    three.countDown();
                    pool.assess();
                });
                long first = System.nanoTime();
                assertThat(pool.assess()).isNull();
                assertThat(three.await(10, TimeUnit.SECONDS)).as("three looks again").isTrue();
                assertThat(Duration.ofNanos(looks.get(2) - first))
                        .isGreaterThanOrEqualTo(Duration.ofMillis(3 * PoolReconciler.SYNC_RECHECK_MILLIS));
                assertThat(pool.passes()).isZero();
            } finally {
                cache.close();
            }
        }
    }

    @Test
    void aNewLeadersFirstPassRunsAtOnceWhateverTheDebounce() throws Exception {
        // a debounce of an hour and no interval timer here (its first tick can be lost while its route starts): only
        // the pass asked for on winning the Lease can create the pod
        withSyncedPool(() -> true, (cluster, pool, cache) -> {
            assertThat(pool.refillDelayMillis()).isEqualTo(Duration.ofHours(1).toMillis());
            pool.onLeadership();
            OperatorHarness.awaitTrue(() -> cluster.pods().size() == 1, Duration.ofSeconds(60),
                    "the pool pod, from the new leader's first pass");
            assertThat(pool.passes()).isEqualTo(1);
        }, "--runner-amd64-count=1", "--runner-arm64-count=0", "--refill-debounce=1h");
    }

    @Test
    void aCostlyPlanStretchesTheWaitBeforeTheNextPassAskedForByAChange() throws Exception {
        withSyncedPool(() -> true, (cluster, pool, cache) -> {
            // before any plan, and after a cheap one: the debounce
            assertThat(pool.refillDelayMillis()).isEqualTo(100);
            java.util.concurrent.atomic.AtomicLong cpu = new java.util.concurrent.atomic.AtomicLong();
            java.util.concurrent.atomic.AtomicLong planCost = new java.util.concurrent.atomic.AtomicLong();
            // the plan step reads the clock before and after planning: the second read adds the plan's cost
            java.util.concurrent.atomic.AtomicBoolean before = new java.util.concurrent.atomic.AtomicBoolean(true);
            pool.measurePlansWith(() -> before.getAndSet(!before.get()) ? cpu.get() : cpu.addAndGet(planCost.get()));
            planCost.set(Duration.ofMillis(3).toNanos());
            pool.finish(pool.plan(pool.assess()));
            assertThat(pool.refillDelayMillis()).isEqualTo(100);
            // a plan of 50 ms CPU: the next one waits 9 times that, so planning takes at most a tenth of a core
            planCost.set(Duration.ofMillis(50).toNanos());
            pool.finish(pool.plan(pool.assess()));
            assertThat(pool.refillDelayMillis()).isEqualTo(450);
            // and a pass asked for now does not start before then
            java.util.concurrent.CompletableFuture<Long> ran = new java.util.concurrent.CompletableFuture<>();
            long asked = System.nanoTime();
            pool.runPassesWith(() -> ran.complete(System.nanoTime()));
            pool.requestRefill();
            long startedAfterMillis = Duration.ofNanos(ran.get(30, java.util.concurrent.TimeUnit.SECONDS) - asked)
                    .toMillis();
            assertThat(startedAfterMillis).isGreaterThanOrEqualTo(450);
            // cheap again: back to the debounce
            planCost.set(Duration.ofMillis(1).toNanos());
            pool.finish(pool.plan(pool.assess()));
            assertThat(pool.refillDelayMillis()).isEqualTo(100);
        }, "--runner-amd64-count=0", "--runner-arm64-count=0", "--refill-debounce=100ms");
    }

    @Test
    void theDeleteStepDeletesOnlyIdlePodsStillAsThePlanSawThem() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            // four pods the pool made (only those are ever surplus), then a pool of one
            withSyncedPool(cluster, () -> true, (c, pool, cache) -> assertThat(pool.reconcile().created()).isEqualTo(4),
                    "--runner-amd64-count=4", "--runner-arm64-count=0");
            withSyncedPool(cluster, () -> true, (c, pool, cache) -> {
                PoolReconciler.Pass pass = pool.plan(pool.assess());
                List<PoolPlan.Deletion> planned = pass.plan().toDelete();
                assertThat(planned).hasSize(3)
                        .allMatch(d -> d.why() == PoolPlan.Why.SURPLUS);
                String claimed = ManagedPods.name(planned.get(0).pod());
                String changed = ManagedPods.name(planned.get(1).pod());
                String surplus = ManagedPods.name(planned.get(2).pod());
                // after the plan: one of them is claimed (this replica's cache has seen it), another changes in the
                // API server before its delete arrives (the delete's resourceVersion precondition answers 409)
                Pod toClaim = planned.get(0).pod();
                new ClaimWriter(c.client, Clock.systemUTC(), new ApiCallCounter()).claim(toClaim,
                        toClaim.getMetadata().getResourceVersion(), new AllocCommand(
                                Hashes.keyHash("delete-step"),
                                ResourceType.RUNNER, "", TestCluster.wgKey(1),
                                "amd64"));
                OperatorHarness.awaitTrue(() -> cache.get(claimed)
                        .map(ManagedPods::isClaimed).orElse(false),
                        Duration.ofSeconds(60), "the claim in the cache");
                c.server.expect().delete().withPath("/api/v1/namespaces/" + TestCluster.NS + "/pods/" + changed)
                        .andReturn(409, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                                + "\"reason\":\"Conflict\",\"code\":409}")
                        .once();

                PoolReconciler.Pass after = pool.delete(pass);

                assertThat(after.deleted()).isEqualTo(1);
                Set<String> left = c.pods().stream().map(ManagedPods::name)
                        .collect(Collectors.toSet());
                assertThat(left).contains(claimed, changed).doesNotContain(surplus).hasSize(3);
                // one DELETE for the pod still idle, none for the one claimed meanwhile
                assertThat(c.requestCount(k -> k.startsWith("DELETE ") && k.endsWith("/pods/" + surplus))).isEqualTo(1);
                assertThat(c.requestCount(k -> k.startsWith("DELETE ") && k.endsWith("/pods/" + claimed))).isZero();
            }, "--runner-amd64-count=1", "--runner-arm64-count=0");
        }
    }
}
