package io.unboundedcloud.playpen.kube;

import static io.unboundedcloud.playpen.kube.PoolReconcilerPassTest.firstPoolPod;
import static io.unboundedcloud.playpen.kube.PoolReconcilerPassTest.podNames;
import static io.unboundedcloud.playpen.kube.PoolReconcilerPassTest.setPhase;
import static io.unboundedcloud.playpen.kube.PoolReconcilerPassTest.withFollowingPool;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Clock;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PoolPlan;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The delete step of a pool pass acts on the pod as it is when the step runs, not as the plan saw it: a pod claimed
 * since, or replaced under its name, is left alone (an allocation is never deleted by a pool); a delete the API
 * server answers with "not found" is not counted, and the pod is gone from the cache; an observer that throws leaves
 * the next pass free; and {@link PoolReconciler#state} tells apart the facts a pod
 * change is judged by.
 */
class PoolReconcilerDeleteTest {
    private static final String RUNNER = "--runner-amd64-count=1";
    private static final String NO_ARM = "--runner-arm64-count=0";

    @RegisterExtension
    final CapturedLogs logs = CapturedLogs.of(PoolReconciler.class);

    /** The pool's one pod, failed, so that the plan deletes it as unhealthy; the pass stopped after its plan. */
    static PoolReconciler.Pass plannedDelete(TestCluster cluster, PoolReconciler pool,
            PoolReconcilerPassTest.Seen seen, String name) throws Exception {
        setPhase(cluster, seen, name, "Failed");
        PoolReconciler.Pass pass = pool.plan(pool.assess());
        assertThat(pass.plan().toDelete()).extracting(d -> ManagedPods.name(d.pod())).containsExactly(name);
        assertThat(pass.plan().toDelete().get(0).why()).isEqualTo(PoolPlan.Why.UNHEALTHY);
        return pass;
    }

    @Test
    void aPodClaimedAfterThePlanIsNotDeletedByIt() throws Exception {
        withFollowingPool((cluster, pool, cache, seen) -> {
            String name = firstPoolPod(pool, seen);
            PoolReconciler.Pass pass = plannedDelete(cluster, pool, seen, name);
            Pod pod = cache.get(name).orElseThrow();
            new ClaimWriter(cluster.client, Clock.systemUTC(), new ApiCallCounter()).claim(pod,
                    pod.getMetadata().getResourceVersion(), new AllocCommand(Hashes.keyHash("claimed-since"),
                            ResourceType.RUNNER, "", TestCluster.wgKey(1), "amd64"));
            seen.awaitTold(name, p -> p.map(ManagedPods::isClaimed).orElse(false), "the claim told to the pools");

            PoolReconciler.Result r = pool.finish(pool.create(pool.delete(pass)));

            assertThat(r.deleted()).isZero();
            assertThat(seen.deleted).isEmpty();
            assertThat(seen.calls.get(KubeApiCall.PODS_DELETE)).as("no delete sent").isZero();
            assertThat(ManagedPods.isClaimed(cluster.client.pods().inNamespace(TestCluster.NS).withName(name).get()))
                    .isTrue();
        }, RUNNER, NO_ARM);
    }

    @Test
    void aPodReplacedUnderItsNameAfterThePlanIsNotDeletedByIt() throws Exception {
        withFollowingPool((cluster, pool, cache, seen) -> {
            String name = firstPoolPod(pool, seen);
            PoolReconciler.Pass pass = plannedDelete(cluster, pool, seen, name);
            String planned = pass.plan().toDelete().get(0).pod().getMetadata().getUid();
            cluster.client.pods().inNamespace(TestCluster.NS).withName(name).delete();
            seen.awaitTold(name, Optional::isEmpty, "the delete told to the pools");
            String replacement = cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a")).getMetadata()
                    .getUid();
            assertThat(replacement).isNotEqualTo(planned);
            seen.awaitTold(name, p -> p.map(x -> replacement.equals(x.getMetadata().getUid())).orElse(false),
                    "the replacement told to the pools");

            PoolReconciler.Result r = pool.finish(pool.delete(pass));

            assertThat(r.deleted()).isZero();
            assertThat(seen.deleted).isEmpty();
            assertThat(seen.calls.get(KubeApiCall.PODS_DELETE)).as("no delete sent").isZero();
            assertThat(cluster.client.pods().inNamespace(TestCluster.NS).withName(name).get().getMetadata().getUid())
                    .isEqualTo(replacement);
        }, RUNNER, NO_ARM);
    }

    /**
     * The delete is conditional on the version the plan judged: a pod planned out as never ready that becomes ready
     * (a new version, still idle) before the delete step is not deleted as unhealthy; the next pass judges it anew.
     * (A ready timeout of 1ms: the API server's creation time, in whole seconds, is already past it.)
     */
    @Test
    void aPodThatBecameReadyAfterThePlanIsNotDeletedAsNeverReady() throws Exception {
        withFollowingPool((cluster, pool, cache, seen) -> {
            String name = "playpen-runner-amd64-51820";
            Pod made = new PodBuilder(pool.planner().podFor(io.unboundedcloud.playpen.model.PoolTarget.runner("amd64"),
                    51820)).editSpec().withNodeName("node-a").endSpec().build();
            cluster.client.pods().inNamespace(TestCluster.NS).resource(made).create();
            seen.awaitTold(name, Optional::isPresent, "the pod told to the pools");
            PoolReconciler.Pass pass = pool.plan(pool.assess());
            assertThat(pass.plan().toDelete()).singleElement().satisfies(d -> {
                assertThat(ManagedPods.name(d.pod())).isEqualTo(name);
                assertThat(d.reason()).isEqualTo("NotReadyInTime");
            });
            Pod ready = TestCluster.readyRunner("amd64", 51820, "node-a").build();
            cluster.client.pods().inNamespace(TestCluster.NS).withName(name).edit(p -> new PodBuilder(p)
                    .editMetadata().addToAnnotations(ready.getMetadata().getAnnotations()).endMetadata()
                    .withStatus(ready.getStatus()).build());
            seen.awaitTold(name, p -> p.map(io.unboundedcloud.playpen.model.PoolHealth::ready).orElse(false),
                    "the pod's readiness told to the pools");

            PoolReconciler.Result r = pool.finish(pool.delete(pass));

            assertThat(r.deleted()).isZero();
            assertThat(seen.deleted).isEmpty();
            assertThat(cluster.client.pods().inNamespace(TestCluster.NS).withName(name).get()).isNotNull();
        }, RUNNER, NO_ARM, "--pool-ready-timeout=1ms");
    }

    /** A ready idle pod of the pool, made from its template, on {@code port}. */
    static String readyPoolPod(TestCluster cluster, PoolReconciler pool, PoolReconcilerPassTest.Seen seen, int port)
            throws Exception {
        Pod ready = TestCluster.readyRunner("amd64", port, "node-a").build();
        Pod made = new PodBuilder(pool.planner().podFor(io.unboundedcloud.playpen.model.PoolTarget.runner("amd64"),
                port)).editSpec().withNodeName("node-a").endSpec().editMetadata()
                .addToAnnotations(ready.getMetadata().getAnnotations()).endMetadata().build();
        String name = ManagedPods.name(made);
        cluster.client.pods().inNamespace(TestCluster.NS).resource(made).create();
        cluster.client.pods().inNamespace(TestCluster.NS).withName(name)
                .edit(p -> new PodBuilder(p).withStatus(ready.getStatus()).build());
        seen.awaitTold(name, p -> p.map(io.unboundedcloud.playpen.model.PoolHealth::ready).orElse(false),
                "the ready pod told to the pools");
        return name;
    }

    /**
     * A ready pod deleted as surplus only because another ready idle pod stays: when that one is claimed between
     * the plan and the delete, the delete no longer goes ahead (the pool would be left with no ready idle pod).
     */
    @Test
    void aSurplusPodIsKeptWhenThePodThatWasToStayIsClaimedBeforeTheDelete() throws Exception {
        withFollowingPool((cluster, pool, cache, seen) -> {
            String a = readyPoolPod(cluster, pool, seen, 51820);
            String b = readyPoolPod(cluster, pool, seen, 51821);
            PoolReconciler.Pass pass = pool.plan(pool.assess());
            assertThat(pass.plan().toDelete()).singleElement()
                    .satisfies(d -> assertThat(d.why()).isEqualTo(PoolPlan.Why.SURPLUS));
            String doomed = ManagedPods.name(pass.plan().toDelete().get(0).pod());
            String kept = doomed.equals(a) ? b : a;
            Pod pod = cache.get(kept).orElseThrow();
            new ClaimWriter(cluster.client, Clock.systemUTC(), new ApiCallCounter()).claim(pod,
                    pod.getMetadata().getResourceVersion(), new AllocCommand(Hashes.keyHash("claimed-since"),
                            ResourceType.RUNNER, "", TestCluster.wgKey(1), "amd64"));
            seen.awaitTold(kept, p -> p.map(ManagedPods::isClaimed).orElse(false), "the claim told to the pools");

            PoolReconciler.Result r = pool.finish(pool.delete(pass));

            assertThat(r.deleted()).isZero();
            assertThat(seen.deleted).isEmpty();
            assertThat(cluster.client.pods().inNamespace(TestCluster.NS).withName(doomed).get()).isNotNull();
            assertThat(logs.lines()).extracting(e -> e.getFormattedMessage())
                    .anyMatch(l -> l.contains(doomed) && l.contains("outcome=too-few-ready-left"));
        }, RUNNER, NO_ARM);
    }

    @Test
    void aDeleteAnsweredNotFoundIsNotCountedAndThePodIsGoneFromTheCache() throws Exception {
        withFollowingPool((cluster, pool, cache, seen) -> {
            String name = firstPoolPod(pool, seen);
            PoolReconciler.Pass pass = plannedDelete(cluster, pool, seen, name);
            cluster.server.expect().delete().withPath("/api/v1/namespaces/" + TestCluster.NS + "/pods/" + name)
                    .andReturn(404, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":404,"
                            + "\"reason\":\"NotFound\"}").once();

            PoolReconciler.Result r = pool.finish(pool.delete(pass));

            assertThat(r.deleted()).isZero();
            assertThat(seen.deleted).isEmpty();
            assertThat(seen.calls.get(KubeApiCall.PODS_DELETE)).isEqualTo(1);
            // the log says the pod was gone already, not that this pass deleted it
            assertThat(logs.lines()).extracting(e -> e.getFormattedMessage()).filteredOn(l -> l.contains(name))
                    .noneMatch(l -> l.contains("outcome=deleted"))
                    .anyMatch(l -> l.contains("outcome=already-gone"));

            // "not found" means gone: this replica's cache no longer offers the pod (its watch would say so next)
            assertThat(cache.get(name)).isEmpty();
        }, RUNNER, NO_ARM);
    }

    /**
     * A delete the API server refuses (here RBAC without the delete verb) fails the pass with that error, as the
     * pass's observers are told (the failed-pass metric and log line), skips the steps after it and leaves the pod;
     * the next pass tries again once it is allowed.
     */
    @Test
    void aRefusedDeleteFailsThePassAndLeavesThePod() throws Exception {
        withFollowingPool((cluster, pool, cache, seen) -> {
            // only the passes run here: the one a pod change asks for would race this test's own for the pod
            pool.runPassesWith(() -> { });
            String name = firstPoolPod(pool, seen);
            PoolReconciler.Pass pass = plannedDelete(cluster, pool, seen, name);
            long creates = seen.calls.get(KubeApiCall.PODS_CREATE);
            cluster.forbidden = key -> key.startsWith("DELETE ");

            assertThatThrownBy(() -> pool.finish(pool.create(pool.delete(pass))))
                    .isInstanceOfSatisfying(KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(403));

            assertThat(seen.passFailed).last().isEqualTo(true);
            assertThat(seen.deleted).isEmpty();
            assertThat(seen.calls.get(KubeApiCall.PODS_DELETE)).isEqualTo(1);
            // the replacement does not wait on the delete: the failed pod holds its port, the new one takes the next
            assertThat(seen.calls.get(KubeApiCall.PODS_CREATE)).as("the create step ran").isEqualTo(creates + 1);
            assertThat(podNames(cluster)).hasSize(2).contains(name);

            cluster.forbidden = key -> false;
            assertThat(pool.reconcile().deleted()).isEqualTo(1);
            assertThat(seen.deleted).containsExactly(name);
        }, RUNNER, NO_ARM);
    }

    /**
     * A delete the API server refuses (RBAC without pods delete, a policy on DELETE) leaves that pod, and the pass
     * still fails with it, but it does not keep the pools from filling: another pool's planned pod is created in the
     * same pass.
     */
    @Test
    void aRefusedDeleteOfOnePoolsPodLeavesThePoolsCreatesGoing() throws Exception {
        withFollowingPool((cluster, pool, cache, seen) -> {
            pool.runPassesWith(() -> { });
            assertThat(pool.reconcile().created()).isEqualTo(2);
            String amd = "playpen-runner-amd64-51820";
            seen.awaitTold(amd, Optional::isPresent, "the amd64 pod told to the pools");
            String arm = cluster.pods().stream().map(ManagedPods::name).filter(n -> n.contains("arm64")).findFirst()
                    .orElseThrow();
            seen.awaitTold(arm, Optional::isPresent, "the arm64 pod told to the pools");
            cluster.client.pods().inNamespace(TestCluster.NS).withName(arm).edit(p -> new PodBuilder(p)
                    .editOrNewStatus().withPhase("Failed").withReason("Evicted").endStatus().build());
            seen.awaitTold(arm, p -> p.map(x -> x.getStatus() != null && "Failed".equals(x.getStatus().getPhase()))
                    .orElse(false),
                    "the eviction told to the pools");
            Pod pod = cache.get(amd).orElseThrow();
            new ClaimWriter(cluster.client, Clock.systemUTC(), new ApiCallCounter()).claim(pod,
                    pod.getMetadata().getResourceVersion(), new AllocCommand(Hashes.keyHash("claimed"),
                            ResourceType.RUNNER, "", TestCluster.wgKey(1), "amd64"));
            seen.awaitTold(amd, p -> p.map(ManagedPods::isClaimed).orElse(false), "the claim told to the pools");
            long creates = seen.calls.get(KubeApiCall.PODS_CREATE);
            cluster.forbidden = key -> key.startsWith("DELETE ");

            assertThatThrownBy(pool::reconcile)
                    .isInstanceOfSatisfying(KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(403));

            assertThat(seen.passFailed).last().isEqualTo(true);
            assertThat(seen.deleted).isEmpty();
            assertThat(podNames(cluster)).as("the evicted pod stays").contains(arm);
            assertThat(seen.calls.get(KubeApiCall.PODS_CREATE)).as("both pools' creates sent")
                    .isEqualTo(creates + 2);
            assertThat(podNames(cluster)).filteredOn(n -> n.contains("amd64")).as("the amd64 pool refilled")
                    .hasSize(2);
        }, "--runner-amd64-count=1", "--runner-arm64-count=1");
    }

    /** An observer that throws when told of a pass ends that pass with its error, and leaves the next one free. */
    @Test
    void anObserverThatThrowsLeavesThePassLockFree() throws Exception {
        withFollowingPool((cluster, pool, cache, seen) -> {
            java.util.concurrent.atomic.AtomicInteger passes = new java.util.concurrent.atomic.AtomicInteger();
            pool.addObserver(new PoolReconciler.Observer() {
                @Override
                public void pass(PoolReconciler.Result result, long nanos, boolean failed) {
                    if (passes.incrementAndGet() == 1) {
                        throw new IllegalStateException("observer broke");
                    }
                }
            });
            org.assertj.core.api.Assertions.assertThatThrownBy(pool::reconcile)
                    .isInstanceOf(IllegalStateException.class).hasMessage("observer broke");
            assertThat(podNames(cluster)).as("the pass itself was done").hasSize(1);
            // from another thread: this one could take the lock again even if the broken pass had kept it
            PoolReconciler.Result next = java.util.concurrent.CompletableFuture.supplyAsync(pool::reconcile)
                    .get(30, java.util.concurrent.TimeUnit.SECONDS);
            assertThat(next.skipped()).isFalse();
            assertThat(passes).hasValue(2);
        }, RUNNER, NO_ARM);
    }

    @Test
    void stateTellsIdleReadyAndEndedApart() {
        Pod ready = TestCluster.readyRunner("amd64", 51820, "node-a").build();
        Pod claimed = new PodBuilder(ready).editMetadata().addToAnnotations(
                io.unboundedcloud.playpen.model.PlaypenKeys.IDEMPOTENCY_KEY_HASH, Hashes.keyHash("k")).endMetadata()
                .build();
        Pod starting = new PodBuilder(ready).editStatus().withContainerStatuses(List.of()).withPhase("Pending")
                .endStatus().build();
        Pod noStatus = new PodBuilder(ready).withStatus(null).build();
        assertThat(PoolReconciler.state(ready)).isEqualTo(1 | 2);
        assertThat(PoolReconciler.state(claimed)).isEqualTo(2);
        assertThat(PoolReconciler.state(starting)).isEqualTo(1);
        assertThat(PoolReconciler.state(noStatus)).isEqualTo(1);
        for (String ended : List.of("Failed", "Succeeded")) {
            Pod p = new PodBuilder(starting).editStatus().withPhase(ended).endStatus().build();
            assertThat(PoolReconciler.state(p)).as(ended).isEqualTo(1 | 4);
        }
        Pod running = new PodBuilder(starting).editStatus().withPhase("Running").endStatus().build();
        assertThat(PoolReconciler.state(running) & 4).as("Running has not ended").isZero();
    }
}
