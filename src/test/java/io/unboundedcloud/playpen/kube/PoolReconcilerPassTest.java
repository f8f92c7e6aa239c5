package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.model.PoolPlan;
import io.unboundedcloud.playpen.model.PoolPlanner;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * A pass as the operator runs it, the reconciler following the pod cache's events: a hostPort taken after the plan
 * moves the create to the next free port, or reports the range full; a refused create ends the pass with its
 * error and leaves nothing locked or expected; an allocated pod that turns unhealthy is reported once per problem;
 * the pod changes the pools act on ask for a pass and the others do not.
 */
class PoolReconcilerPassTest {
    private static final String POST_PODS = "POST /api/v1/namespaces/" + TestCluster.NS + "/pods";

    /** What the reconciler's observers were told. */
    static final class Seen implements PoolReconciler.Observer {
        final List<String> created = new CopyOnWriteArrayList<>();
        final List<PoolPlan.Exhaustion> exhausted = new CopyOnWriteArrayList<>();
        final List<Boolean> passFailed = new CopyOnWriteArrayList<>();
        /** How long each pass took, as the observers were told (the pass-duration metric). */
        final List<Long> passNanos = new CopyOnWriteArrayList<>();
        final List<PoolPlan.Unhealthy> unhealthy = new CopyOnWriteArrayList<>();
        /** The names of the idle pods the passes deleted. */
        final List<String> deleted = new CopyOnWriteArrayList<>();
        /** The reconciler's own count of its API calls. */
        final ApiCallCounter calls = new ApiCallCounter();
        /**
         * Each pod as the cache's listeners last saw it (null once deleted), recorded by a listener added after the
         * reconciler: the cache calls its listeners in order, so what is here the reconciler has been told.
         */
        final Map<String, java.util.Optional<Pod>> toldToListeners = new java.util.concurrent.ConcurrentHashMap<>();

        /** Records what {@code cache} tells its listeners into {@link #toldToListeners}: add it after the reconciler. */
        void follow(PodCache cache) {
            cache.addListener((change, pod) -> toldToListeners.put(ManagedPods.name(pod),
                    change == PodCache.Change.DELETED ? java.util.Optional.empty() : java.util.Optional.of(pod)));
        }

        /** Waits until the reconciler has been told of {@code name} in a version {@code told} accepts. */
        void awaitTold(String name, java.util.function.Predicate<java.util.Optional<Pod>> told, String what)
                throws InterruptedException {
            OperatorHarness.awaitTrue(() -> {
                java.util.Optional<Pod> last = toldToListeners.get(name);
                return last != null && told.test(last);
            }, Duration.ofSeconds(60), what);
        }

        @Override
        public void created(Pod pod) {
            created.add(ManagedPods.name(pod));
        }

        @Override
        public void exhausted(PoolPlan.Exhaustion exhaustion) {
            exhausted.add(exhaustion);
        }

        @Override
        public void pass(PoolReconciler.Result result, long nanos, boolean failed) {
            passFailed.add(failed);
            passNanos.add(nanos);
        }

        @Override
        public void unhealthyAllocated(PoolPlan.Unhealthy report) {
            unhealthy.add(report);
        }

        @Override
        public void deleted(PoolPlan.Deletion deletion) {
            deleted.add(ManagedPods.name(deletion.pod()));
        }
    }

    interface Body {
        void run(TestCluster cluster, PoolReconciler pool, PodCache cache, Seen seen) throws Exception;
    }

    /**
     * A reconciler that follows its pod cache's events (as in the operator), no interval timer, and its observer.
     * The passes those events ask for are not run: each test runs its passes itself, and one in the background
     * (a pod deleted asks for one after the debounce) could run before the test's and do its work. A test about the
     * passes asked for records them instead.
     */
    static void withFollowingPool(Body body, String... flags) throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            withFollowingPool(cluster, cluster.client, () -> { }, body, flags);
        }
    }

    /**
     * {@link #withFollowingPool(Body, String...)} on {@code cluster} whose reconciler and pod cache talk through
     * {@code client} (a proxy that lags, say); {@code beforeClose} runs before the cache is closed.
     */
    static void withFollowingPool(TestCluster cluster, io.fabric8.kubernetes.client.KubernetesClient client,
            Runnable beforeClose, Body body, String... flags) throws Exception {
        withFollowingPool(cluster, client, () -> true, beforeClose, body, flags);
    }

    /** The same on a replica that leads while {@code leader} says so. */
    static void withFollowingPool(TestCluster cluster, io.fabric8.kubernetes.client.KubernetesClient client,
            java.util.function.BooleanSupplier leader, Runnable beforeClose, Body body, String... flags)
            throws Exception {
        withFollowingPool(cluster, client, leader, Clock.systemUTC(), beforeClose, body, flags);
    }

    /** {@link #withFollowingPool(Body, String...)} whose passes read the time from {@code clock}. */
    static void withFollowingPool(Clock clock, Body body, String... flags) throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            withFollowingPool(cluster, cluster.client, () -> true, clock, () -> { }, body, flags);
        }
    }

    static void withFollowingPool(TestCluster cluster, io.fabric8.kubernetes.client.KubernetesClient client,
            java.util.function.BooleanSupplier leader, Clock clock, Runnable beforeClose, Body body, String... flags)
            throws Exception {
        OperatorConfig config = OperatorConfig.parse(flags);
        PodCache cache = new PodCache(client, TestCluster.NS, new Candidates(config.runnerLabelSelector())::idleKindKey);
        Seen seen = new Seen();
        try (PoolReconciler pool = new PoolReconciler(client, config, cache, null,
                new PoolPlanner(config, new PodTemplates(config, Map.of())), null, leader, seen.calls, clock)) {
            pool.runPassesWith(() -> { });
            cache.addListener(pool);
            seen.follow(cache);
            cache.start();
            OperatorHarness.awaitTrue(cache::hasSynced, Duration.ofSeconds(60), "cache synced");
            pool.addObserver(seen);
            body.run(cluster, pool, cache, seen);
        } finally {
            beforeClose.run();
            cache.close();
        }
    }

    /** A pod that is none of the operator's, under the name (and so the hostPort) a pool pod would take. */
    static Pod foreignPod(String name) {
        return new PodBuilder().withNewMetadata().withName(name).withNamespace(TestCluster.NS).endMetadata()
                .withNewSpec().addNewContainer().withName("other").withImage("busybox").endContainer().endSpec()
                .build();
    }

    /** A pool of one's first pass: the pod it created, once the cache has it. */
    static String firstPoolPod(PoolReconciler pool, Seen seen) throws InterruptedException {
        assertThat(pool.reconcile().created()).isEqualTo(1);
        String name = "playpen-runner-amd64-51820";
        seen.awaitTold(name, java.util.Optional::isPresent, "the pod told to the pools");
        return name;
    }

    static List<String> podNames(TestCluster cluster) {
        return cluster.pods().stream().map(ManagedPods::name).sorted().collect(Collectors.toList());
    }

    @Test
    void aPassTellsHowLongItTook() throws Exception {
        withFollowingPool((cluster, pool, cache, seen) -> {
            long before = System.nanoTime();
            PoolReconciler.Pass pass = pool.assess();
            // the pass holds the pass lock from here: an earlier pass has told its observers already, a later one
            // tells them after this one
            int earlier = seen.passNanos.size();
            assertThat(pool.finish(pool.create(pool.delete(pool.plan(pass)))).created()).isEqualTo(1);
            long within = System.nanoTime() - before;
            assertThat(seen.passNanos.get(earlier)).isPositive().isLessThanOrEqualTo(within);
        }, "--runner-amd64-count=1", "--runner-arm64-count=0");
    }

    @Test
    void aPortTakenAfterThePlanMovesTheCreateToTheNextFreePort() throws Exception {
        withFollowingPool((cluster, pool, cache, seen) -> {
            PoolReconciler.Pass pass = pool.plan(pool.assess());
            assertThat(pass.plan().toCreate()).extracting(PoolPlan.PlannedPod::hostPort)
                    .containsExactlyInAnyOrder(51820, 51821);
            cluster.client.pods().inNamespace(TestCluster.NS).resource(foreignPod("playpen-runner-amd64-51820"))
                    .create();

            PoolReconciler.Result r = pool.finish(pool.create(pool.delete(pass)));

            // 51821 is the other planned pod's: the one that met AlreadyExists goes to 51822
            assertThat(r.created()).isEqualTo(2);
            assertThat(r.alreadyExisted()).isEqualTo(1);
            assertThat(r.exhausted()).isEmpty();
            assertThat(seen.exhausted).isEmpty();
            assertThat(seen.created).containsExactlyInAnyOrder("playpen-runner-amd64-51821",
                    "playpen-runner-amd64-51822");
            assertThat(podNames(cluster)).containsExactly("playpen-runner-amd64-51820", "playpen-runner-amd64-51821",
                    "playpen-runner-amd64-51822");
            Pod moved = cluster.client.pods().inNamespace(TestCluster.NS).withName("playpen-runner-amd64-51822").get();
            assertThat(ManagedPods.containerHostPort(moved)).hasValue(51822);
            assertThat(ManagedPods.isManaged(moved)).isTrue();
            assertThat(seen.passFailed).containsExactly(false);
            // three creates, and the one read that told the pod behind AlreadyExists was not the pool's
            assertThat(seen.calls.get(KubeApiCall.PODS_CREATE)).isEqualTo(3);
            assertThat(seen.calls.get(KubeApiCall.PODS_GET)).isEqualTo(1);
            assertThat(cluster.requestCount(POST_PODS::equals)).as("the reconciler's three and this test's one")
                    .isEqualTo(4);
        }, "--runner-amd64-count=2", "--runner-arm64-count=0", "--runner-wireguard-host-port-end=51829");
    }

    @Test
    void aPortTakenAfterThePlanInAFullRangeIsReportedAsExhausted() throws Exception {
        withFollowingPool((cluster, pool, cache, seen) -> {
            PoolReconciler.Pass pass = pool.plan(pool.assess());
            assertThat(pass.plan().toCreate()).hasSize(2);
            assertThat(pass.plan().exhausted()).isEmpty();
            cluster.client.pods().inNamespace(TestCluster.NS).resource(foreignPod("playpen-runner-amd64-51820"))
                    .create();

            PoolReconciler.Result r = pool.finish(pool.create(pool.delete(pass)));

            assertThat(r.created()).isEqualTo(1);
            assertThat(r.alreadyExisted()).isEqualTo(1);
            assertThat(r.exhausted()).singleElement().satisfies(x -> {
                assertThat(x.unplanned()).isEqualTo(1);
                assertThat(x.target().type()).isEqualTo(ResourceType.RUNNER);
                assertThat(x.message()).contains("51820-51821");
            });
            // the observers hear of it once, when the pass ends
            assertThat(seen.exhausted).containsExactlyElementsOf(r.exhausted());
            assertThat(seen.created).containsExactly("playpen-runner-amd64-51821");
            assertThat(podNames(cluster)).containsExactly("playpen-runner-amd64-51820", "playpen-runner-amd64-51821");
        }, "--runner-amd64-count=2", "--runner-arm64-count=0", "--runner-wireguard-host-port-end=51821");
    }

    @Test
    void aRefusedCreateEndsThePassWithItsErrorAndLeavesNothingLockedOrExpected() throws Exception {
        withFollowingPool((cluster, pool, cache, seen) -> {
            cluster.forbidden = key -> key.equals(POST_PODS);

            assertThatThrownBy(pool::reconcile).isInstanceOfSatisfying(KubernetesClientException.class,
                    e -> assertThat(e.getCode()).isEqualTo(403));

            // the create step stopped at the first refusal: the second planned pod was not tried; a refusal is
            // known not to have written anything, so no read follows it
            assertThat(cluster.requestCount(POST_PODS::equals)).isEqualTo(1);
            assertThat(cluster.requestCount(k -> k.startsWith("GET /api/v1/namespaces/" + TestCluster.NS + "/pods/")))
                    .isZero();
            assertThat(seen.passFailed).containsExactly(true);
            assertThat(seen.created).isEmpty();
            cluster.forbidden = key -> false;
            // from another thread (this one could take the pass lock again even if the failed pass had kept it);
            // the refused pool's creates pause for a second, then a refusal wrote nothing, so the pods are not
            // waited for as expected (that would last a minute): both are created by the first pass after the pause
            OperatorHarness.awaitTrue(() -> CompletableFuture.supplyAsync(pool::reconcile).join().created() == 2,
                    Duration.ofSeconds(60), "both pods created after the pause");
            assertThat(seen.passFailed).startsWith(true, false).containsOnlyOnce(true);
            assertThat(cluster.requestCount(POST_PODS::equals)).as("no create sent during the pause").isEqualTo(3);
            assertThat(podNames(cluster)).hasSize(2);
        }, "--runner-amd64-count=2", "--runner-arm64-count=0");
    }

    /**
     * A pool whose creates the API server refuses shows it (its Degraded condition, the gauge) while it needs pods:
     * a pass during the pause tries no create and still shows it, a pass after the pause tries again and is refused
     * again; once it needs no new pod (one made elsewhere fills it) nothing is being refused, though creates are
     * still refused.
     */
    @Test
    void aPoolWhoseCreatesAreRefusedShowsItWhileItNeedsPods() throws Exception {
        io.unboundedcloud.playpen.support.MutableClock clock =
                new io.unboundedcloud.playpen.support.MutableClock(java.time.Instant.now());
        withFollowingPool(clock, (cluster, pool, cache, seen) -> {
            io.unboundedcloud.playpen.model.PoolTarget amd64 = io.unboundedcloud.playpen.model.PoolTarget.runner("amd64");
            io.unboundedcloud.playpen.camel.OperatorMetrics metrics = new io.unboundedcloud.playpen.camel.OperatorMetrics();
            metrics.bindCreateRefusals(pool.planner(), pool);
            assertThat(createsRefusedGauge(metrics)).as("nothing refused yet").isZero();
            java.util.function.Predicate<String> refuse = key -> key.equals(POST_PODS);
            cluster.forbidden = refuse;
            assertThatThrownBy(pool::reconcile).isInstanceOf(KubernetesClientException.class);
            assertThat(pool.createsRefused(amd64)).isTrue();
            assertThat(createsRefusedGauge(metrics)).as("the gauge while refused").isEqualTo(1.0);
            assertThat(pool.createRefusedCondition(amd64, clock.instant())).contains(
                    "the last pod create of pool runner-amd64 with HTTP 403", "forbidden by the test's RBAC",
                    "trying again in 1 s", "check ResourceQuota and admission webhooks in namespace " + TestCluster.NS);

            long refusedOnce = cluster.requestCount(POST_PODS::equals);
            pool.reconcile();
            assertThat(cluster.requestCount(POST_PODS::equals)).as("no create during the pause").isEqualTo(refusedOnce);
            assertThat(pool.createsRefused(amd64)).as("still short, still refused").isTrue();
            assertThat(createsRefusedGauge(metrics)).as("the gauge during the pause").isEqualTo(1.0);

            clock.now = clock.now.plus(PoolReconciler.REFUSAL_FIRST_PAUSE);
            assertThatThrownBy(pool::reconcile).as("refused again after the pause").isInstanceOfSatisfying(
                    KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(403));
            assertThat(cluster.requestCount(POST_PODS::equals)).as("one create after the pause")
                    .isEqualTo(refusedOnce + 1);
            assertThat(pool.createsRefused(amd64)).as("still short, still refused").isTrue();
            assertThat(pool.createRefusedCondition(amd64, clock.instant())).contains(
                    "the last 2 pod creates in a row of pool runner-amd64", "trying again in 2 s");

            cluster.forbidden = key -> false;
            String name = ManagedPods.name(cluster.client.pods().inNamespace(TestCluster.NS)
                    .resource(pool.planner().podFor(amd64, 51820)).create());
            cluster.forbidden = refuse;
            seen.awaitTold(name, java.util.Optional::isPresent, "the pod made elsewhere told to the pools");
            long creates = cluster.requestCount(POST_PODS::equals);
            pool.reconcile();

            assertThat(cluster.requestCount(POST_PODS::equals)).as("no create sent").isEqualTo(creates);
            assertThat(pool.createsRefused(amd64)).as("the pool needs no new pod").isFalse();
            assertThat(pool.createRefusedCondition(amd64, clock.instant())).isNull();
            assertThat(createsRefusedGauge(metrics)).as("the gauge once the pool needs no new pod").isZero();
        }, "--runner-amd64-count=1", "--runner-arm64-count=0");
    }

    /**
     * A pool whose creates are refused keeps its pause through a moment in which this replica does not count as
     * leading (its last Lease write began more than the renew deadline ago, and the next one lands before its renewal
     * watch looks: its term goes on, no change of leadership is told): a pass in that moment does not end the pause,
     * so once the replica counts as leading again the pool still shows the refusal, publishes it on the Lease, and
     * sends no create before the pause ends.
     */
    @Test
    void aRefusalPauseOutlivesAMomentWhenTheLeaderDoesNotCountAsLeading() throws Exception {
        io.unboundedcloud.playpen.support.MutableClock clock =
                new io.unboundedcloud.playpen.support.MutableClock(java.time.Instant.now());
        java.util.concurrent.atomic.AtomicBoolean leads = new java.util.concurrent.atomic.AtomicBoolean(true);
        try (TestCluster cluster = TestCluster.start()) {
            withFollowingPool(cluster, cluster.client, leads::get, clock, () -> { }, (c, pool, cache, seen) -> {
                io.unboundedcloud.playpen.model.PoolTarget amd64 =
                        io.unboundedcloud.playpen.model.PoolTarget.runner("amd64");
                cluster.forbidden = key -> key.equals(POST_PODS);
                assertThatThrownBy(pool::reconcile).isInstanceOfSatisfying(KubernetesClientException.class,
                        e -> assertThat(e.getCode()).isEqualTo(403));
                long refusedOnce = cluster.requestCount(POST_PODS::equals);

                leads.set(false);
                assertThat(pool.reconcile().skipped()).as("a replica that does not count as leading runs no pass")
                        .isTrue();
                // leading again without a leadership change told (so no onLeadership)
                leads.set(true);

                assertThat(pool.createsRefused(amd64)).as("still short, still refused").isTrue();
                assertThat(pool.publishedRefusals()).as("the refusal published on the Lease")
                        .containsKey(io.unboundedcloud.playpen.model.PoolStatus.name(amd64));
                pool.reconcile();
                assertThat(cluster.requestCount(POST_PODS::equals)).as("no create during the pause")
                        .isEqualTo(refusedOnce);
            }, "--runner-amd64-count=1", "--runner-arm64-count=0");
        }
    }

    /** playpen_pool_creates_refused of the amd64 runner pool, as a scrape of {@code metrics} has it. */
    static double createsRefusedGauge(io.unboundedcloud.playpen.camel.OperatorMetrics metrics) {
        String series = "playpen_pool_creates_refused{resource_type=\"runner\",variant=\"amd64\"} ";
        return java.util.Arrays.stream(metrics.scrape().split("\n")).filter(l -> l.startsWith(series))
                .mapToDouble(l -> Double.parseDouble(l.substring(series.length()).strip())).findFirst()
                .orElseThrow(() -> new AssertionError("no series " + series + "in the scrape"));
    }

    /**
     * One pool whose creates are refused (here an admission rule that turns away its pods, and only its) stops
     * trying for this pass, but the other pools are still healed and filled; the pass ends with the refusal.
     */
    @Test
    void aPoolWhoseCreatesAreRefusedDoesNotKeepTheOtherPoolsEmpty() throws Exception {
        withFollowingPool((cluster, pool, cache, seen) -> {
            ThreadLocal<Boolean> amd64Body = ThreadLocal.withInitial(() -> false);
            cluster.addRequestListener(new TestCluster.RequestListener() {
                @Override
                public void onRequest(String key) {
                }

                @Override
                public void onRequest(String key, java.util.function.Supplier<String> body) {
                    String b = key.equals(POST_PODS) ? body.get() : null;
                    amd64Body.set(b != null && b.contains("playpen-runner-amd64-"));
                }
            });
            cluster.forbidden = key -> key.equals(POST_PODS) && amd64Body.get();

            assertThatThrownBy(pool::reconcile).isInstanceOfSatisfying(KubernetesClientException.class,
                    e -> assertThat(e.getCode()).isEqualTo(403));

            assertThat(podNames(cluster)).as("the arm64 pool is filled though the amd64 one cannot be")
                    .containsExactly("playpen-runner-arm64-51822");
            // (on the first port the amd64 pool's planned pods left free: the range is one for both)
            assertThat(seen.created).containsExactly("playpen-runner-arm64-51822");
            assertThat(seen.passFailed).containsExactly(true);
            // the refused pool tried once, not once per pod it wants
            assertThat(cluster.requestCount(POST_PODS::equals)).isEqualTo(2);
        }, "--runner-amd64-count=2", "--runner-arm64-count=1");
    }

    @Test
    void anAllocatedPodThatTurnsUnhealthyIsReportedOncePerSpell() throws Exception {
        withFollowingPool((cluster, pool, cache, seen) -> {
            // only the passes below run: the passes pod changes ask for would report too
            pool.runPassesWith(() -> { });
            String name = firstPoolPod(pool, seen);
            Pod pod = cache.get(name).orElseThrow();
            new ClaimWriter(cluster.client, Clock.systemUTC(), new ApiCallCounter()).claim(pod,
                    pod.getMetadata().getResourceVersion(), new AllocCommand(Hashes.keyHash("unhealthy-allocated"),
                            ResourceType.RUNNER, "", TestCluster.wgKey(1), "amd64"));
            seen.awaitTold(name, p -> p.map(ManagedPods::isClaimed).orElse(false), "the claim told to the pools");

            setPhase(cluster, seen, name, "Failed");
            pool.reconcile();
            pool.reconcile();
            assertThat(seen.unhealthy).singleElement().satisfies(u -> {
                assertThat(ManagedPods.name(u.pod())).isEqualTo(name);
                assertThat(u.problem().reason()).isEqualTo("Failed");
            });
            // the allocated pod is reported, never deleted by the pool
            assertThat(podNames(cluster)).contains(name);

            // well again, then failed again: a new spell, reported again
            setPhase(cluster, seen, name, "Running");
            pool.reconcile();
            assertThat(seen.unhealthy).hasSize(1);
            setPhase(cluster, seen, name, "Failed");
            pool.reconcile();
            assertThat(seen.unhealthy).hasSize(2);
            assertThat(podNames(cluster)).contains(name);
        }, "--runner-amd64-count=1", "--runner-arm64-count=0");
    }

    /**
     * A replica that leads, steps down and leads again reports an allocated pod still unhealthy again in its new
     * term, as a replica that never led would: its Event may be gone by then (the API server deletes Events after
     * an hour), and when it is not, its name makes the create meet the one there.
     */
    @Test
    void aReplicaThatLeadsAgainReportsAnAllocatedPodStillUnhealthyAgain() throws Exception {
        java.util.concurrent.atomic.AtomicBoolean leads = new java.util.concurrent.atomic.AtomicBoolean(true);
        try (TestCluster cluster = TestCluster.start()) {
            withFollowingPool(cluster, cluster.client, leads::get, () -> { }, (c, pool, cache, seen) -> {
                String name = firstPoolPod(pool, seen);
                Pod pod = cache.get(name).orElseThrow();
                new ClaimWriter(cluster.client, Clock.systemUTC(), new ApiCallCounter()).claim(pod,
                        pod.getMetadata().getResourceVersion(), new AllocCommand(Hashes.keyHash("leads-again"),
                                ResourceType.RUNNER, "", TestCluster.wgKey(1), "amd64"));
                seen.awaitTold(name, p -> p.map(ManagedPods::isClaimed).orElse(false), "the claim told to the pools");
                setPhase(cluster, seen, name, "Failed");
                pool.reconcile();
                assertThat(seen.unhealthy).hasSize(1);

                leads.set(false);
                assertThat(pool.reconcile().skipped()).as("a replica that does not lead runs no pass").isTrue();
                leads.set(true);
                pool.onLeadership();
                pool.reconcile();

                assertThat(seen.unhealthy).as("reports of the pod, the second in the new term").hasSize(2)
                        .allSatisfy(u -> assertThat(ManagedPods.name(u.pod())).isEqualTo(name));
                pool.reconcile();
                assertThat(seen.unhealthy).as("once per term").hasSize(2);
            }, "--runner-amd64-count=1", "--runner-arm64-count=0");
        }
    }

    /**
     * A pass whose creates are refused (a quota, an admission rule: here every create, so that the pass fails each
     * time) still reports what its plan found: an allocated pod that turned unhealthy gets its report although the
     * refill it leaves behind cannot be created.
     */
    @Test
    void aPassWhoseCreatesAreRefusedStillReportsAnUnhealthyAllocatedPod() throws Exception {
        withFollowingPool((cluster, pool, cache, seen) -> {
            String name = firstPoolPod(pool, seen);
            Pod pod = cache.get(name).orElseThrow();
            new ClaimWriter(cluster.client, Clock.systemUTC(), new ApiCallCounter()).claim(pod,
                    pod.getMetadata().getResourceVersion(), new AllocCommand(Hashes.keyHash("refused-refill"),
                            ResourceType.RUNNER, "", TestCluster.wgKey(1), "amd64"));
            seen.awaitTold(name, p -> p.map(ManagedPods::isClaimed).orElse(false), "the claim told to the pools");
            setPhase(cluster, seen, name, "Failed");
            cluster.forbidden = key -> key.equals(POST_PODS);

            assertThatThrownBy(pool::reconcile).isInstanceOfSatisfying(KubernetesClientException.class,
                    e -> assertThat(e.getCode()).isEqualTo(403));

            assertThat(seen.passFailed).last().isEqualTo(true);
            assertThat(seen.unhealthy).singleElement().satisfies(u -> {
                assertThat(ManagedPods.name(u.pod())).isEqualTo(name);
                assertThat(u.problem().reason()).isEqualTo("Failed");
            });
            assertThat(podNames(cluster)).containsExactly(name);
        }, "--runner-amd64-count=1", "--runner-arm64-count=0");
    }

    static void setPhase(TestCluster cluster, Seen seen, String name, String phase) throws InterruptedException {
        cluster.client.pods().inNamespace(TestCluster.NS).withName(name)
                .edit(p -> new PodBuilder(p).editOrNewStatus().withPhase(phase).endStatus().build());
        seen.awaitTold(name, p -> p.map(x -> x.getStatus() != null && phase.equals(x.getStatus().getPhase()))
                .orElse(false), "phase " + phase + " told to the pools");
    }

    @Test
    void onlyThePodChangesThePoolsActOnAskForAPass() throws Exception {
        withFollowingPool((cluster, pool, cache, seen) -> {
            AtomicInteger asked = new AtomicInteger();
            pool.runPassesWith(asked::incrementAndGet);
            String name = "playpen-runner-amd64-51820";
            Pod idle = TestCluster.readyRunner("amd64", 51820, "node-a").build();
            // first sight of a pod: its state is learnt, nothing has changed yet
            pool.onPodEvent(PodCache.Change.ADDED, idle);
            assertNoPassAsked(asked, 0);
            // a change the pools do not act on: an annotation
            pool.onPodEvent(PodCache.Change.UPDATED, new PodBuilder(idle).editMetadata()
                    .addToAnnotations("example.com/note", "x").endMetadata().build());
            assertNoPassAsked(asked, 0);
            // claimed: one idle pod fewer
            Pod claimed = new PodBuilder(idle).editMetadata().addToAnnotations(
                    io.unboundedcloud.playpen.model.PlaypenKeys.IDEMPOTENCY_KEY_HASH, Hashes.keyHash("k")).endMetadata()
                    .build();
            assertThat(ManagedPods.isClaimed(claimed)).as("the claim's mark").isTrue();
            pool.onPodEvent(PodCache.Change.UPDATED, claimed);
            awaitPassAsked(asked, 1);
            // ended (Failed): replaced
            pool.onPodEvent(PodCache.Change.UPDATED, new PodBuilder(claimed).editStatus().withPhase("Failed")
                    .endStatus().build());
            awaitPassAsked(asked, 2);
            // gone, once seen: replaced
            pool.onPodEvent(PodCache.Change.DELETED, claimed);
            awaitPassAsked(asked, 3);
            // gone without ever being seen, and pods that are not the operator's: nothing to act on
            pool.onPodEvent(PodCache.Change.DELETED, TestCluster.readyRunner("amd64", 51821, "node-a").build());
            Pod foreign = foreignPod(name);
            pool.onPodEvent(PodCache.Change.ADDED, foreign);
            pool.onPodEvent(PodCache.Change.UPDATED, new PodBuilder(foreign).editOrNewStatus().withPhase("Failed")
                    .endStatus().build());
            pool.onPodEvent(PodCache.Change.DELETED, foreign);
            assertNoPassAsked(asked, 3);
            // a pod that becomes ready
            Pod starting = new PodBuilder(TestCluster.readyRunner("amd64", 51822, "node-a").build()).editStatus()
                    .withContainerStatuses(List.of()).withPhase("Pending").endStatus().build();
            pool.onPodEvent(PodCache.Change.ADDED, starting);
            assertNoPassAsked(asked, 3);
            pool.onPodEvent(PodCache.Change.UPDATED, TestCluster.readyRunner("amd64", 51822, "node-a").build());
            awaitPassAsked(asked, 4);
            // a pod that fails before it was ever ready (neither idle nor ready change: only its end)
            Pod neverReady = new PodBuilder(starting).editMetadata().withName("playpen-runner-amd64-51823")
                    .endMetadata().build();
            pool.onPodEvent(PodCache.Change.ADDED, neverReady);
            assertNoPassAsked(asked, 4);
            pool.onPodEvent(PodCache.Change.UPDATED, new PodBuilder(neverReady).editStatus().withPhase("Failed")
                    .endStatus().build());
            awaitPassAsked(asked, 5);
        }, "--runner-amd64-count=0", "--runner-arm64-count=0", "--refill-debounce=0s");
    }

    /**
     * A pool pod relabeled out of the operator's pods (its kind labels removed, to keep it for a look, say) leaves
     * the pool one pod short: that asks for a pass, as a delete does, not only the interval timer's next tick.
     */
    @Test
    void aPodRelabeledOutOfThePoolsAsksForAPass() throws Exception {
        withFollowingPool((cluster, pool, cache, seen) -> {
            AtomicInteger asked = new AtomicInteger();
            pool.runPassesWith(asked::incrementAndGet);
            Pod idle = TestCluster.readyRunner("amd64", 51820, "node-a").build();
            pool.onPodEvent(PodCache.Change.ADDED, idle);
            assertNoPassAsked(asked, 0);
            Pod relabeled = new PodBuilder(idle).editMetadata()
                    .removeFromLabels(io.unboundedcloud.playpen.model.PlaypenKeys.RESOURCE_TYPE)
                    .removeFromLabels(io.unboundedcloud.playpen.model.PlaypenKeys.APP_NAME).endMetadata().build();
            assertThat(ManagedPods.isManaged(relabeled)).as("no longer the operator's").isFalse();

            pool.onPodEvent(PodCache.Change.UPDATED, relabeled);

            awaitPassAsked(asked, 1);
        }, "--runner-amd64-count=0", "--runner-arm64-count=0", "--refill-debounce=0s");
    }

    private static void awaitPassAsked(AtomicInteger asked, int count) throws InterruptedException {
        OperatorHarness.awaitTrue(() -> asked.get() >= count, Duration.ofSeconds(60), count + " passes asked for");
        assertThat(asked.get()).isEqualTo(count);
    }

    /** Nothing asked: a pass asked for runs after the debounce (0 here), so a short wait would see it. */
    private static void assertNoPassAsked(AtomicInteger asked, int count) throws InterruptedException {
        Thread.sleep(150);
        assertThat(asked.get()).isEqualTo(count);
    }

    @Test
    void aPodDeletedFromOutsideIsReplacedByTheNextPass() throws Exception {
        withFollowingPool((cluster, pool, cache, seen) -> {
            String name = firstPoolPod(pool, seen);
            assertThat(pool.reconcile().created()).as("the pool is full").isZero();
            cluster.client.pods().inNamespace(TestCluster.NS).withName(name).delete();
            seen.awaitTold(name, java.util.Optional::isEmpty, "the delete told to the pools");

            PoolReconciler.Result r = pool.reconcile();

            assertThat(r.created()).as("the pools count the pod gone").isEqualTo(1);
            assertThat(podNames(cluster)).containsExactly(name);
        }, "--runner-amd64-count=1", "--runner-arm64-count=0");
    }
}
