package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.Replica;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * A claim answered 504 that the API server still commits later (it runs a request on after answering 504, or after
 * the client gave up): the request must not be answered with that error while its claim can still land, or a pod
 * would stand claimed for a key nobody was answered. One idle pod, so the claim's target is known.
 */
class ClaimCommittedLateTest {
    private static final String NODE = "node-a";
    private static final String POD = "playpen-runner-amd64-51820";
    private static final String POD_PATH = "/api/v1/namespaces/" + TestCluster.NS + "/pods/" + POD;
    /** A fence write's body (a claim's patch carries the annotation too, as null). */
    private static final String FENCE = PlaypenKeys.FENCED_CLAIM_ID + "\":\"";

    private TestCluster cluster;
    private Replica replica;
    /** The bodies of the PATCHes of the pod that reached the API server. */
    private final List<String> patches = new CopyOnWriteArrayList<>();

    @BeforeEach
    void cluster() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode(NODE, "amd64", "203.0.113.10");
        cluster.create(TestCluster.readyRunner("amd64", 51820, NODE));
        cluster.addRequestListener(new TestCluster.RequestListener() {
            @Override
            public void onRequest(String key) {
            }

            @Override
            public void onRequest(String key, java.util.function.Supplier<String> body) {
                if (key.equals("PATCH " + POD_PATH)) {
                    patches.add(body.get());
                }
            }
        });
        replica = new Replica(cluster, 0).awaitReady(NODE);
        OperatorHarness.awaitTrue(() -> replica.pods.get(POD).isPresent(), Duration.ofSeconds(60),
                "the replica sees the pod");
    }

    @AfterEach
    void stop() {
        replica.close();
        cluster.close();
    }

    private static AllocCommand cmd(String key) {
        return new AllocCommand(Hashes.keyHash(key), ResourceType.RUNNER, "", TestCluster.wgKey(3), "amd64");
    }

    /** Claims of {@code c} (the client's own retry of one is the same request) are held, not committed. */
    private void holdClaimsOf(AllocCommand c) {
        cluster.holdWrite = (key, body) -> key.equals("PATCH " + POD_PATH) && body.contains(c.keyHash());
    }

    private List<Pod> carrying(AllocCommand c) {
        return cluster.pods().stream().filter(p -> c.keyHash().equals(ManagedPods.keyHash(p))).toList();
    }

    private Pod pod() {
        return cluster.client.pods().inNamespace(TestCluster.NS).withName(POD).get();
    }

    /**
     * The held claim commits after the operator's read of the idle pod, before its next write to the pod: the
     * request learns of it and answers with that claim.
     */
    @Test
    void aClaimCommittedAfterTheReadBackIsAnsweredWithItsAllocation() throws Exception {
        AllocCommand key = cmd("late-before-fence");
        holdClaimsOf(key);
        cluster.applyHeldBefore = k -> k.equals("PATCH " + POD_PATH);

        Allocator.Allocation answer = replica.allocator.allocate(key);

        assertThat(answer.pod().getMetadata().getName()).isEqualTo(POD);
        assertThat(carrying(key)).extracting(ManagedPods::name).containsExactly(POD);
        assertThat(cluster.heldWrites()).isZero();
        assertThat(patches).as("the fence that met the late claim").anyMatch(b -> b.contains(FENCE));
        assertThat(ManagedPods.annotations(pod())).doesNotContainKey(PlaypenKeys.FENCED_CLAIM_ID);
    }

    /**
     * The held claim would commit only after the request was answered with the error: by then it must be unable to
     * (its precondition fails), so no pod is claimed for a key whose client was told the claim failed.
     */
    @Test
    void aClaimAnsweredWithAnErrorCanNoLongerCommitLater() throws Exception {
        AllocCommand key = cmd("late-after-answer");
        holdClaimsOf(key);

        assertThatThrownBy(() -> replica.allocator.allocate(key))
                .isInstanceOfSatisfying(KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(504));
        assertThat(cluster.heldWrites()).as("the claim and the client's own retry of it, held").isEqualTo(2);
        cluster.holdWrite = (k, body) -> false;
        List<Integer> late = cluster.applyHeld();

        assertThat(carrying(key)).as("pods claimed for the key after its request was answered with an error")
                .isEmpty();
        assertThat(late).containsOnly(409);
        Pod idle = pod();
        assertThat(ManagedPods.isClaimed(idle)).isFalse();
        // the fence records the claim-id of the claim whose answer was lost
        String lostClaimId = new com.fasterxml.jackson.databind.ObjectMapper().readTree(patches.get(0))
                .at("/metadata/annotations").get(PlaypenKeys.CLAIM_ID).asText();
        assertThat(ManagedPods.annotations(idle)).containsEntry(PlaypenKeys.FENCED_CLAIM_ID, lostClaimId);

        // the fenced pod is idle and serves the next key; its claim takes the fence off
        AllocCommand next = cmd("next-key");
        OperatorHarness.awaitTrue(() -> replica.pods.get(POD).map(p -> ManagedPods.annotations(p)
                .containsKey(PlaypenKeys.FENCED_CLAIM_ID)).orElse(false), Duration.ofSeconds(60),
                "the replica sees the fenced pod");
        Allocator.Allocation answer = replica.allocator.allocate(next);
        assertThat(answer.pod().getMetadata().getName()).isEqualTo(POD);
        assertThat(carrying(next)).extracting(ManagedPods::name).containsExactly(POD);
        assertThat(ManagedPods.annotations(pod())).doesNotContainKey(PlaypenKeys.FENCED_CLAIM_ID);
    }

    /**
     * The pod read back is idle at another version than the claim's precondition (another write came between): the
     * claim can never commit, so the error is answered without a fence write.
     */
    @Test
    void aPodReadBackAtAnotherVersionIsNotFenced() throws Exception {
        AllocCommand key = cmd("changed-meanwhile");
        holdClaimsOf(key);
        AtomicBoolean touched = new AtomicBoolean();
        List<Integer> touches = new CopyOnWriteArrayList<>();
        cluster.onHold = k -> {
            if (!touched.getAndSet(true)) {
                touches.add(cluster.patchInStore(POD_PATH,
                        "{\"metadata\":{\"annotations\":{\"example.com/touched\":\"yes\"}}}"));
            }
        };
        long claimsBefore = replica.calls.get(KubeApiCall.PODS_PATCH);

        assertThatThrownBy(() -> replica.allocator.allocate(key))
                .isInstanceOfSatisfying(KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(504));

        // (the mock answers a PATCH it applied with 202)
        assertThat(touches).as("the other write, between the claim and its read-back").singleElement()
                .satisfies(code -> assertThat(code).isBetween(200, 299));
        assertThat(patches).noneMatch(b -> b.contains(FENCE));
        assertThat(replica.calls.get(KubeApiCall.PODS_PATCH) - claimsBefore).as("the claim, no fence").isEqualTo(1);
        cluster.holdWrite = (k, body) -> false;
        assertThat(cluster.applyHeld()).containsOnly(409);
        assertThat(carrying(key)).isEmpty();
    }
}
