package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * A pod CREATE whose answer is lost after the API server wrote it (found by the chaos suite's reset-after-write
 * fault: the pool overshot its target). Neither the client's retry (AlreadyExists) nor the next pass, both before
 * the watch shows the pod, may create it again under another hostPort.
 */
class PoolReconcilerUnknownOutcomeTest {

    /**
     * A pod cache whose watch stalls on the first amd64 runner pod it sees until {@code release}, so that it lags
     * behind the API server (reads on the test's thread are not held).
     */
    static PodCache stallingOnTheFirstRunner(TestCluster cluster, CountDownLatch release,
            java.util.function.Function<io.fabric8.kubernetes.api.model.Pod, String> kind) {
        Thread test = Thread.currentThread();
        return new PodCache(cluster.client, TestCluster.NS, pod -> {
            if (Thread.currentThread() != test && pod.getMetadata().getName().startsWith("playpen-runner-amd64-")) {
                try {
                    release.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return kind.apply(pod);
        });
    }

    @Test
    void aCreateThatLandedWithoutAnAnswerIsNotCreatedAgainUnderAnotherPort() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            OperatorConfig config = OperatorConfig.parse("--runner-amd64-count=1", "--runner-arm64-count=0");
            Candidates candidates = new Candidates(config.runnerLabelSelector());
            CountDownLatch release = new CountDownLatch(1);
            PodCache cache = stallingOnTheFirstRunner(cluster, release, candidates::kindKey);
            cache.start();
            try {
                OperatorHarness.awaitTrue(cache::hasSynced, Duration.ofSeconds(60), "cache synced");
                PoolReconciler pool = new PoolReconciler(cluster.client, config, cache, new PodTemplates(config, Map.of()),
                        () -> true, new ApiCallCounter());
                PoolReconcilerPassTest.Seen seen = new PoolReconcilerPassTest.Seen();
                pool.addObserver(seen);
                AtomicBoolean once = new AtomicBoolean(true);
                cluster.failAfterWrite = key -> key.equals("POST /api/v1/namespaces/playpen/pods") && once.getAndSet(false);
                // fabric8 retries the POST answered 500; the retry meets the pod the first try wrote (AlreadyExists)
                PoolReconciler.Result first = pool.reconcile();
                assertThat(cluster.pods()).as("one pod, not a second one under the next hostPort").hasSize(1);
                assertThat(cluster.pods().get(0).getMetadata().getName()).isEqualTo("playpen-runner-amd64-51820");
                // the pod was created by this pass: counted, and its observers (the Created Event, the created
                // metric) told, once
                assertThat(first.created()).isEqualTo(1);
                assertThat(seen.created).as("the observers told of the pod the lost answer created")
                        .containsExactly("playpen-runner-amd64-51820");

                PoolReconciler.Result second = pool.reconcile();
                assertThat(second.created()).isZero();
                assertThat(cluster.pods()).as("the next pass waits for the watch instead of creating a second pod")
                        .hasSize(1);
                assertThat(seen.created).as("told once, not again").containsExactly("playpen-runner-amd64-51820");
                pool.close();
            } finally {
                release.countDown();
                cache.close();
            }
        }
    }

    /**
     * The chaos suite's overshoot (pool runner/arm64 held 3 idle pods for a target of 2 after API faults with a
     * reset after the write at 30%): the create's answer is lost, fabric8's retry meets AlreadyExists, and the read
     * that should tell whether that pod is this pool's own fails too (both of its tries reset). Taking "unknown"
     * for "someone else's pod" moved on to the next hostPort and created a second pod. Unknown keeps the name
     * expected and creates nothing else.
     */
    @Test
    void whenTheReadAfterAlreadyExistsFailsTooNothingIsCreatedUnderAnotherPort() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            OperatorConfig config = OperatorConfig.parse("--runner-amd64-count=1", "--runner-arm64-count=0");
            Candidates candidates = new Candidates(config.runnerLabelSelector());
            CountDownLatch release = new CountDownLatch(1);
            PodCache cache = stallingOnTheFirstRunner(cluster, release, candidates::idleKindKey);
            cache.start();
            try {
                OperatorHarness.awaitTrue(cache::hasSynced, Duration.ofSeconds(60), "cache synced");
                PoolReconciler pool = new PoolReconciler(cluster.client, config, cache, new PodTemplates(config, Map.of()),
                        () -> true, new ApiCallCounter());
                AtomicBoolean once = new AtomicBoolean(true);
                cluster.failAfterWrite = key -> key.equals("POST /api/v1/namespaces/playpen/pods") && once.getAndSet(false);
                cluster.forbidden = key -> key.equals("GET /api/v1/namespaces/playpen/pods/playpen-runner-amd64-51820");
                org.assertj.core.api.Assertions.assertThatThrownBy(pool::reconcile)
                        .as("the pass reports the unknown outcome").isNotNull();
                assertThat(cluster.pods()).as("one pod, not a second one under the next hostPort").hasSize(1);
                cluster.forbidden = key -> false;
                PoolReconciler.Result second = pool.reconcile();
                assertThat(second.created()).isZero();
                assertThat(cluster.pods()).as("the next pass counts the pod it could not read as its own").hasSize(1);
                pool.close();
            } finally {
                release.countDown();
                cache.close();
            }
        }
    }
    /**
     * A pod this process created and reported, that the watch has still not shown when its expectation lapses: the
     * next pass plans its port again and meets it (AlreadyExists, the pool's own pod). It is not created again, and
     * not reported a second time.
     */
    @Test
    void aPodAlreadyReportedIsNotReportedAgainWhenItsCreateMeetsIt() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            OperatorConfig config = OperatorConfig.parse("--runner-amd64-count=1", "--runner-arm64-count=0");
            Candidates candidates = new Candidates(config.runnerLabelSelector());
            CountDownLatch release = new CountDownLatch(1);
            PodCache cache = stallingOnTheFirstRunner(cluster, release, candidates::idleKindKey);
            cache.start();
            try {
                OperatorHarness.awaitTrue(cache::hasSynced, Duration.ofSeconds(60), "cache synced");
                PoolReconciler pool = new PoolReconciler(cluster.client, config, cache, new PodTemplates(config, Map.of()),
                        () -> true, new ApiCallCounter());
                java.util.concurrent.atomic.AtomicLong nanos = new java.util.concurrent.atomic.AtomicLong();
                pool.timeExpectationsWith(nanos::get);
                PoolReconcilerPassTest.Seen seen = new PoolReconcilerPassTest.Seen();
                pool.addObserver(seen);
                assertThat(pool.reconcile().created()).isEqualTo(1);
                assertThat(seen.created).containsExactly("playpen-runner-amd64-51820");

                nanos.addAndGet(TimeUnit.SECONDS.toNanos(61));
                PoolReconciler.Result again = pool.reconcile();
                assertThat(cluster.pods()).as("the pool's own pod met, no second one").hasSize(1);
                assertThat(cluster.requestCount("POST /api/v1/namespaces/playpen/pods"::equals))
                        .as("the second pass's create met the pod").isEqualTo(2);
                assertThat(again.created()).as("created by the first pass, counted there").isZero();
                assertThat(seen.created).as("reported once").containsExactly("playpen-runner-amd64-51820");
                pool.close();
            } finally {
                release.countDown();
                cache.close();
            }
        }
    }

    /**
     * Two leaders for a moment (the old one has not noticed it lost the Lease), neither watch showing the other's
     * pod yet: both plan the same lowest free hostPort, one creates the pod and the other's create meets it
     * (AlreadyExists). That pod is not the second leader's: it must not count it or tell its observers (the Created
     * Event, the created metric) a second time.
     */
    @Test
    void aPodAnotherLeaderCreatedIsNotReportedAgainWhenACreateMeetsIt() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            OperatorConfig config = OperatorConfig.parse("--runner-amd64-count=1", "--runner-arm64-count=0");
            Candidates candidates = new Candidates(config.runnerLabelSelector());
            CountDownLatch release = new CountDownLatch(1);
            PodCache cache = stallingOnTheFirstRunner(cluster, release, candidates::idleKindKey);
            cache.start();
            try {
                OperatorHarness.awaitTrue(cache::hasSynced, Duration.ofSeconds(60), "cache synced");
                PodTemplates templates = new PodTemplates(config, Map.of());
                PoolReconciler oldLeader = new PoolReconciler(cluster.client, config, cache, templates, () -> true,
                        new ApiCallCounter());
                PoolReconciler newLeader = new PoolReconciler(cluster.client, config, cache, templates, () -> true,
                        new ApiCallCounter());
                PoolReconcilerPassTest.Seen seenOld = new PoolReconcilerPassTest.Seen();
                PoolReconcilerPassTest.Seen seenNew = new PoolReconcilerPassTest.Seen();
                oldLeader.addObserver(seenOld);
                newLeader.addObserver(seenNew);

                assertThat(oldLeader.reconcile().created()).isEqualTo(1);
                assertThat(seenOld.created).containsExactly("playpen-runner-amd64-51820");

                PoolReconciler.Result second = newLeader.reconcile();
                assertThat(cluster.requestCount("POST /api/v1/namespaces/playpen/pods"::equals))
                        .as("the second leader's create met the first one's pod").isEqualTo(2);
                assertThat(cluster.pods()).as("one pod for the pool, not a second one").hasSize(1);
                assertThat(second.created()).as("created by the other leader, counted there").isZero();
                assertThat(seenNew.created).as("the other leader's pod is not reported here again").isEmpty();
                oldLeader.close();
                newLeader.close();
            } finally {
                release.countDown();
                cache.close();
            }
        }
    }

    /**
     * A create whose final answer is unclear but which landed: the first try answered 500 before any write, fabric8's
     * retry wrote the pod and its answer was lost (500 again). The read after it finds the pod, created by this
     * process: a pod created, as when the retry meets it (AlreadyExists): counted, its observers (the Created Event,
     * the created metric) told once, and the pass does not fail.
     */
    @Test
    void aCreateWithoutAClearAnswerThatTheReadFindsIsReportedCreated() throws Exception {
        PoolReconcilerPassTest.withFollowingPool((cluster, pool, cache, seen) -> {
            String post = "POST /api/v1/namespaces/playpen/pods";
            java.util.concurrent.atomic.AtomicInteger posts = new java.util.concurrent.atomic.AtomicInteger();
            cluster.failBeforeWrite = key -> key.equals(post) && posts.incrementAndGet() == 1;
            cluster.failAfterWrite = key -> key.equals(post) && posts.get() == 2;
            PoolReconciler.Result first = pool.reconcile();
            assertThat(cluster.requestCount(post::equals)).as("the try and fabric8's retry").isEqualTo(2);
            assertThat(cluster.pods()).extracting(io.unboundedcloud.playpen.model.ManagedPods::name)
                    .containsExactly("playpen-runner-amd64-51820");
            assertThat(first.created()).isEqualTo(1);
            assertThat(seen.created).containsExactly("playpen-runner-amd64-51820");
            assertThat(seen.passFailed).containsExactly(false);

            PoolReconciler.Result second = pool.reconcile();
            assertThat(second.created()).isZero();
            assertThat(cluster.pods()).hasSize(1);
            assertThat(seen.created).as("told once").containsExactly("playpen-runner-amd64-51820");
        }, "--runner-amd64-count=1", "--runner-arm64-count=0");
    }

    /**
     * A create answered 504 that the API server commits later (kube-apiserver runs a request on after its timeout
     * answer), the read after it finding no pod yet. Its port must stay taken meanwhile: the next pass gave it to
     * another pool's pod (another Kubernetes version, so another name, and no AlreadyExists to stop it), and once the
     * late create landed two control planes published one API server hostPort.
     */
    @Test
    void aPortWhoseCreateMayStillLandIsNotGivenToAnotherPool() throws Exception {
        PoolReconcilerPassTest.withFollowingPool((cluster, pool, cache, seen) -> {
            String late = "playpen-control-plane-1.34.0-16444";
            cluster.holdWrite = (key, body) -> key.equals("POST /api/v1/namespaces/playpen/pods")
                    && body.contains("\"" + late + "\"");
            org.assertj.core.api.Assertions.assertThatThrownBy(pool::reconcile)
                    .as("the pass reports the create without an answer").isNotNull();
            assertThat(cluster.pods()).extracting(io.unboundedcloud.playpen.model.ManagedPods::name)
                    .containsExactly("playpen-control-plane-1.33.0-16443");
            // the v1.33.0 pool's pod is allocated: that pool needs a new idle pod
            String first = "playpen-control-plane-1.33.0-16443";
            seen.awaitTold(first, java.util.Optional::isPresent, "the pod told to the pools");
            io.fabric8.kubernetes.api.model.Pod pod = cache.get(first).orElseThrow();
            new ClaimWriter(cluster.client, java.time.Clock.systemUTC(), new ApiCallCounter()).claim(pod,
                    pod.getMetadata().getResourceVersion(), new io.unboundedcloud.playpen.model.AllocCommand(
                            io.unboundedcloud.playpen.model.Hashes.keyHash("allocated"),
                            io.unboundedcloud.playpen.model.ResourceType.CONTROL_PLANE, "v1.33.0", "", ""));
            seen.awaitTold(first, p -> p.map(io.unboundedcloud.playpen.model.ManagedPods::isClaimed).orElse(false),
                    "the claim told to the pools");
            cluster.holdWrite = (key, body) -> false;

            pool.reconcile();
            assertThat(cluster.applyHeld()).as("the late create lands").contains(201);

            java.util.Map<Integer, java.util.List<String>> byPort = new java.util.TreeMap<>();
            for (io.fabric8.kubernetes.api.model.Pod p : cluster.pods()) {
                byPort.computeIfAbsent(io.unboundedcloud.playpen.model.ManagedPods.hostPort(p).orElseThrow(),
                        k -> new java.util.ArrayList<>()).add(io.unboundedcloud.playpen.model.ManagedPods.name(p));
            }
            assertThat(byPort.values()).as("one pod per hostPort: %s", byPort).allMatch(names -> names.size() == 1);
        }, "--runner-amd64-count=0", "--runner-arm64-count=0", "--control-plane-count=1",
                "--control-plane-versions=v1.33.0,v1.34.0");
    }

    /**
     * An admission webhook with failurePolicy Fail that cannot be reached: kube-apiserver answers every pod create
     * 500 "failed calling webhook". The pool pauses its creates as after a refusal (1 s doubling), its Degraded
     * condition says so with the API server's message, and the ports of the creates that may still land steer the
     * next creates away without making the range count as full (no exhaustion told: its alert would say to widen a
     * range that is not the trouble).
     */
    @Test
    void aCreateFailingWith500IsPausedAndNeverReportedAsAFullRange() throws Exception {
        io.unboundedcloud.playpen.support.MutableClock clock = new io.unboundedcloud.playpen.support.MutableClock(
                java.time.Instant.parse("2026-12-01T12:00:00Z"));
        PoolReconcilerPassTest.withFollowingPool(clock, (cluster, pool, cache, seen) -> {
            pool.timeExpectationsWith(() -> 0L); // the held ports do not lapse during the test
            String post = "POST /api/v1/namespaces/playpen/pods";
            cluster.failBeforeWriteMessage = "Internal error occurred: failed calling webhook \"x.example.com\": "
                    + "failed to call webhook: Post \"https://x.x-system.svc:443/validate\": connection refused";
            cluster.failBeforeWrite = key -> key.equals(post);
            io.unboundedcloud.playpen.model.PoolTarget amd64 = io.unboundedcloud.playpen.model.PoolTarget.runner("amd64");
            // passes asked for by pod changes, 100 ms apart: only the first one posts, the others wait out the pause
            for (int i = 0; i < 10; i++) {
                try {
                    pool.reconcile(); // the first pass fails with the 500, the paused ones create nothing
                } catch (io.fabric8.kubernetes.client.KubernetesClientException e) {
                    assertThat(e.getCode()).isEqualTo(500);
                }
                clock.now = clock.now.plusMillis(100);
            }
            long posts = seen.calls.get(KubeApiCall.PODS_CREATE);
            assertThat(posts).as("one create (with the client's retry), then the pause").isBetween(1L, 2L);
            assertThat(pool.createRefusedCondition(amd64, clock.now)).isNotNull()
                    .contains("HTTP 500", "failed calling webhook", "runner-amd64");
            // each later pass after its pause: the ports of the failed creates are held, the range is never full
            for (int i = 0; i < 10; i++) {
                clock.now = clock.now.plusSeconds(31);
                try {
                    pool.reconcile();
                } catch (io.fabric8.kubernetes.client.KubernetesClientException e) {
                    assertThat(e.getCode()).isEqualTo(500);
                }
            }
            assertThat(seen.calls.get(KubeApiCall.PODS_CREATE)).as("creates sent after the first pause")
                    .isGreaterThan(posts);
            assertThat(seen.exhausted).as("no full range told").isEmpty();
            assertThat(cluster.pods()).isEmpty();
        }, "--runner-amd64-count=1", "--runner-arm64-count=0", "--runner-wireguard-host-port-start=51820",
                "--runner-wireguard-host-port-end=51824");
    }
}
