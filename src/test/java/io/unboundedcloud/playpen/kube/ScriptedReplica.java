package io.unboundedcloud.playpen.kube;

import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.function.Supplier;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.ScriptedWatch;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * One replica's allocation core against the mock API server, with its pod cache fed by a {@link ScriptedWatch}
 * that follows the server: each pod write is in the cache by the time its writer gets the answer, unless the test
 * holds the watch. So a test sets up a lagging or relisting watch at an exact point of a request, and what the
 * request does next does not depend on thread timing.
 */
final class ScriptedReplica implements AutoCloseable {
    static final String NODE = "node-a";
    static final String EXTERNAL_IP = "203.0.113.10";
    static final String KIND = "runner/amd64";

    final TestCluster cluster;
    final ScriptedWatch watch;
    final Candidates candidates = new Candidates(Map.of());
    final PodCache pods;
    final NodeCache nodes;
    final ApiCallCounter calls = new ApiCallCounter();
    /** The client the writer sends through: the cluster's, unless the replica was made with another. */
    private final KubernetesClient writesThrough;
    final ClaimWriter writer;
    final Allocator allocator;

    /** {@code runners} ready runner pods (host ports 51820 on), then the replica, synced. */
    ScriptedReplica(int runners, int maxPerOwner) throws Exception {
        this(runners, maxPerOwner, null);
    }

    /**
     * The same, with replica lanes (null: none): the claims record {@code lanes.self()}, and the lanes learn from
     * this replica's watch which other replicas claim.
     */
    ScriptedReplica(int runners, int maxPerOwner, ReplicaLanes lanes) throws Exception {
        this(runners, maxPerOwner, lanes, null);
    }

    /** The same, with one more listener of the pod cache (null: none), added before it starts. */
    ScriptedReplica(int runners, int maxPerOwner, ReplicaLanes lanes, PodCache.Listener listener) throws Exception {
        this(runners, maxPerOwner, lanes, listener, c -> c.client);
    }

    /**
     * The same, with the client the replica's writer sends through (its claims, take-backs, deletes and reads of the
     * pods), made for the cluster: such as one whose request is held
     * ({@link io.unboundedcloud.playpen.support.HeldRequest#client}).
     */
    ScriptedReplica(int runners, int maxPerOwner, ReplicaLanes lanes, PodCache.Listener listener,
            Function<TestCluster, KubernetesClient> writes) throws Exception {
        cluster = TestCluster.start();
        cluster.addNode(NODE, "amd64", EXTERNAL_IP);
        for (int i = 0; i < runners; i++) {
            cluster.create(TestCluster.readyRunner("amd64", 51820 + i, NODE));
        }
        watch = new ScriptedWatch(TestCluster.NS).follow(cluster);
        pods = new PodCache(watch.client(), TestCluster.NS, candidates::kindKey);
        nodes = new NodeCache(cluster.client);
        writesThrough = writes.apply(cluster);
        if (lanes == null) {
            writer = new ClaimWriter(writesThrough, Clock.systemUTC(), calls);
            allocator = new Allocator(pods, nodes, writer, candidates, 1, maxPerOwner);
        } else {
            pods.addListener(lanes);
            writer = new ClaimWriter(writesThrough, Clock.systemUTC(), calls, null, lanes.self());
            allocator = new Allocator(pods, nodes, writer, candidates, 1, maxPerOwner, lanes);
        }
        if (listener != null) {
            pods.addListener(listener);
        }
        pods.start();
        nodes.start();
        watch.awaitWatching();
        OperatorHarness.awaitTrue(() -> nodes.hasSynced() && nodes.externalIp(NODE).isPresent(), Duration.ofSeconds(20),
                "the node cache synced");
    }

    static AllocCommand cmd(String key) {
        return new AllocCommand(Hashes.keyHash(key), ResourceType.RUNNER, "", TestCluster.wgKey(3), "amd64");
    }

    /** The same key, another request (another client key): its request hash differs. */
    static AllocCommand otherRequest(AllocCommand cmd) {
        return new AllocCommand(cmd.keyHash(), ResourceType.RUNNER, "", TestCluster.wgKey(4), "amd64");
    }

    static String runner(int n) {
        return "playpen-runner-amd64-" + (51820 + n);
    }

    Pod inApi(String name) {
        return cluster.client.pods().inNamespace(TestCluster.NS).withName(name).get();
    }

    java.util.List<String> carriers(String keyHash) {
        return cluster.pods().stream().filter(p -> keyHash.equals(ManagedPods.keyHash(p))).map(ManagedPods::name)
                .sorted().toList();
    }

    /** Claims {@code pod} for {@code cmd} as another replica would (a merge patch, no precondition). */
    Pod claimElsewhere(String pod, AllocCommand cmd, String ownerHash) {
        return cluster.client.pods().inNamespace(TestCluster.NS).withName(pod).edit(p -> {
            PodBuilder b = new PodBuilder(p).editMetadata()
                    .addToAnnotations(Map.of(PlaypenKeys.IDEMPOTENCY_KEY_HASH, cmd.keyHash(), PlaypenKeys.REQUEST_HASH,
                            cmd.requestHash(), PlaypenKeys.CLAIMED_AT, "2026-01-01T00:00:00Z"))
                    .addToLabels(PlaypenKeys.KEY_HASH_LABEL, ClaimWriter.labelValue(cmd.keyHash()))
                    .addToLabels(PlaypenKeys.ALLOCATED, Hashes.allocationId(TestCluster.NS, pod)).endMetadata();
            if (ownerHash != null) {
                b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_HASH, ownerHash)
                        .addToLabels(PlaypenKeys.OWNER_HASH_LABEL, ClaimWriter.labelValue(ownerHash)).endMetadata();
            }
            return b.build();
        });
    }

    Pod edit(String pod, java.util.function.UnaryOperator<PodBuilder> change) {
        return cluster.client.pods().inNamespace(TestCluster.NS).withName(pod)
                .edit(p -> change.apply(new PodBuilder(p)).build());
    }

    /** A request's first API call to this path makes the held watch deliver what it kept, before the answer. */
    void releaseOnAnswer(String method, String pathPrefix) {
        java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
        cluster.addAnswerListener((m, path, answer) -> {
            if (m.equals(method) && path.startsWith(pathPrefix) && done.compareAndSet(false, true)) {
                watch.release();
            }
        });
    }

    static String podPath(String name) {
        return "/api/v1/namespaces/" + TestCluster.NS + "/pods/" + name;
    }

    static final String PODS = "/api/v1/namespaces/" + TestCluster.NS + "/pods";

    /**
     * Runs {@code call} on a thread of its own and returns once that thread waits for this replica's watch (parked
     * in {@link ClaimResolver#await}), so the test can deliver what it waits for.
     */
    static <T> CompletableFuture<T> waitingForTheWatch(Supplier<T> call) throws InterruptedException {
        CompletableFuture<T> result = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                result.complete(call.get());
            } catch (Throwable e) {
                result.completeExceptionally(e);
            }
        }, "scripted-request");
        t.setDaemon(true);
        t.start();
        OperatorHarness.awaitTrue(() -> result.isDone() || parkedIn(t, "ClaimResolver", "await"),
                Duration.ofSeconds(20), "the request waits for the watch");
        return result;
    }

    /** The thread is parked (waiting) inside {@code type.method}. */
    static boolean parkedIn(Thread t, String type, String method) {
        Thread.State s = t.getState();
        if (s != Thread.State.WAITING && s != Thread.State.TIMED_WAITING) {
            return false;
        }
        for (StackTraceElement e : t.getStackTrace()) {
            if (e.getClassName().endsWith("." + type) && e.getMethodName().equals(method)) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void close() {
        watch.release();
        pods.close();
        nodes.close();
        if (writesThrough != cluster.client) {
            writesThrough.close();
        }
        cluster.close();
    }
}
