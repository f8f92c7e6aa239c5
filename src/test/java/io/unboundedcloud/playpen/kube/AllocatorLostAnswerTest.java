package io.unboundedcloud.playpen.kube;

import static io.unboundedcloud.playpen.kube.ScriptedReplica.cmd;
import static io.unboundedcloud.playpen.kube.ScriptedReplica.podPath;
import static io.unboundedcloud.playpen.kube.ScriptedReplica.runner;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.client.KubernetesClientException;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * A claim whose answer is lost (504: the API server may still commit it later) on the one idle pod of a scripted
 * replica (see {@link ScriptedReplica}): the request is answered only once that claim can never land, and what it
 * is answered follows from what the API server shows when the pod is read back after the fence. So does what the
 * take-back of a claim whose client left says when its own write is answered 500.
 */
class AllocatorLostAnswerTest {
    private static final String POD = runner(0);
    /** A fence write's body (a claim's patch carries the annotation too, as null). */
    private static final String FENCE = PlaypenKeys.FENCED_CLAIM_ID + "\":\"";

    private ScriptedReplica r;
    /** The bodies of the PATCHes of the pod that reached the API server. */
    private final List<String> patches = new CopyOnWriteArrayList<>();

    @BeforeEach
    void replica() throws Exception {
        r = new ScriptedReplica(1, 0);
        r.cluster.addRequestListener(new io.unboundedcloud.playpen.support.TestCluster.RequestListener() {
            @Override
            public void onRequest(String key) {
            }

            @Override
            public void onRequest(String key, java.util.function.Supplier<String> body) {
                if (key.equals("PATCH " + podPath(POD))) {
                    patches.add(body.get());
                }
            }
        });
    }

    @AfterEach
    void stop() {
        r.close();
    }

    /** Claims of {@code c} are answered 504 and held, not committed (until {@code applyHeld}). */
    private void holdClaimsOf(AllocCommand c) {
        r.cluster.holdWrite = (key, body) -> key.equals("PATCH " + podPath(POD)) && body.contains(c.keyHash());
    }

    private long gets() {
        return r.calls.get(KubeApiCall.PODS_GET);
    }

    private long writes() {
        return r.calls.get(KubeApiCall.PODS_PATCH);
    }

    @Test
    void theLostClaimIsFencedOnceAndTheErrorAnsweredThenItCanNoLongerLand() throws Exception {
        AllocCommand key = cmd("fenced");
        holdClaimsOf(key);

        KubernetesClientException e = catchThrowableOfType(KubernetesClientException.class,
                () -> r.allocator.allocate(key));

        assertThat(e.getCode()).isEqualTo(504);
        assertThat(writes()).as("the claim and one fence").isEqualTo(2);
        assertThat(gets()).as("the read-back only: the fence's answer shows it took").isEqualTo(1);
        assertThat(ManagedPods.annotations(r.inApi(POD))).containsKey(PlaypenKeys.FENCED_CLAIM_ID);
        r.cluster.holdWrite = (k, body) -> false;
        assertThat(r.cluster.applyHeld()).containsOnly(409);
        assertThat(r.carriers(key.keyHash())).isEmpty();
    }

    @Test
    void aLostClaimThatLandsBeforeTheFenceIsAnsweredWithItsAllocation() throws Exception {
        AllocCommand key = cmd("landed-late");
        holdClaimsOf(key);
        r.cluster.applyHeldBefore = k -> k.equals("PATCH " + podPath(POD));

        Allocator.Allocation a = r.allocator.allocate(key);

        assertThat(ManagedPods.name(a.pod())).isEqualTo(POD);
        assertThat(a.replay()).as("the request's own claim, new: not a replay").isFalse();
        assertThat(r.carriers(key.keyHash())).containsExactly(POD);
        assertThat(patches).as("the fence that met the late claim").anyMatch(b -> b.contains(FENCE));
        assertThat(ManagedPods.annotations(r.inApi(POD))).doesNotContainKey(PlaypenKeys.FENCED_CLAIM_ID);
    }

    /**
     * The take-back of a new claim whose client left, answered 500 ({@code landed}: after the write): it does not
     * fail; what it says follows from the pod read back.
     */
    private boolean releasedWhileItsWritesFail(AllocCommand key, boolean landed) {
        Allocator.Allocation a = r.allocator.allocate(key);
        java.util.function.Predicate<String> pod = k -> k.equals("PATCH " + podPath(POD));
        if (landed) {
            r.cluster.failAfterWrite = pod;
        } else {
            r.cluster.failBeforeWrite = pod;
        }
        return r.allocator.release(a, key);
    }

    @Test
    void aTakeBackTheApiServerRefusedLeavesTheClaimAndSaysSo() {
        AllocCommand key = cmd("kept");
        assertThat(releasedWhileItsWritesFail(key, false)).as("went back").isFalse();
        assertThat(r.carriers(key.keyHash())).containsExactly(POD);
    }

    @Test
    void aTakeBackThatLandedWithoutAnAnswerSaysThePodWentBack() {
        AllocCommand key = cmd("taken-back");
        assertThat(releasedWhileItsWritesFail(key, true)).as("went back").isTrue();
        assertThat(r.carriers(key.keyHash())).isEmpty();
    }

    /** Counts the PATCHes of the pod from now on (the client's resends included). */
    private java.util.concurrent.atomic.AtomicInteger countPatchesFromNow() {
        java.util.concurrent.atomic.AtomicInteger n = new java.util.concurrent.atomic.AtomicInteger();
        r.cluster.addRequestListener(k -> {
            if (k.equals("PATCH " + podPath(POD))) {
                n.incrementAndGet();
            }
        });
        return n;
    }

    /**
     * The claim lands and its answer is lost (500); the client sends it once more by itself, and the API server,
     * overloaded now, refuses that (429). The 429 is the answer that comes back, yet the claim stands.
     */
    @Test
    void aClaimThatLandedIsFoundWhenTheClientsResendOfItIsRefused() throws Exception {
        AllocCommand key = cmd("resend-refused");
        var n = countPatchesFromNow();
        r.cluster.failAfterWrite = k -> k.equals("PATCH " + podPath(POD)) && n.get() == 1;
        r.cluster.tooManyRequests = k -> k.equals("PATCH " + podPath(POD)) && n.get() == 2;

        Allocator.Allocation a = r.allocator.allocate(key);

        assertThat(n.get()).as("the claim and the client's resend").isEqualTo(2);
        assertThat(ManagedPods.name(a.pod())).isEqualTo(POD);
        assertThat(a.replay()).as("the request's own claim, new: not a replay").isFalse();
        assertThat(r.carriers(key.keyHash())).containsExactly(POD);
    }

    /**
     * The take-back lands and its answer is lost (500); the client's resend meets the changed pod (409), which reads
     * back idle: the pod went back.
     */
    @Test
    void aTakeBackWhoseAnswerAloneWasLostSaysThePodWentBack() {
        AllocCommand key = cmd("answer-lost");
        Allocator.Allocation a = r.allocator.allocate(key);
        var n = countPatchesFromNow();
        r.cluster.failAfterWrite = k -> k.equals("PATCH " + podPath(POD)) && n.get() == 1;

        assertThat(r.allocator.release(a, key)).as("went back").isTrue();

        assertThat(n.get()).as("the take-back and the client's resend").isEqualTo(2);
        assertThat(r.carriers(key.keyHash())).isEmpty();
    }

    @Test
    void aPodAnotherKeyClaimedBeforeTheFenceIsLostLikeAnyOther() throws Exception {
        AllocCommand key = cmd("beaten");
        AllocCommand other = cmd("the-other-key");
        holdClaimsOf(key);
        // the fence meets the other key's claim, committed just before it
        java.util.concurrent.atomic.AtomicBoolean once = new java.util.concurrent.atomic.AtomicBoolean();
        r.cluster.addRequestListener(k -> {
            if (k.equals("PATCH " + podPath(POD)) && !patches.isEmpty() && patches.get(patches.size() - 1)
                    .contains(FENCE) && once.compareAndSet(false, true)) {
                r.cluster.patchInStore(podPath(POD), "{\"metadata\":{\"annotations\":{\""
                        + PlaypenKeys.IDEMPOTENCY_KEY_HASH + "\":\"" + other.keyHash() + "\",\""
                        + PlaypenKeys.REQUEST_HASH + "\":\"" + other.requestHash() + "\",\"" + PlaypenKeys.CLAIMED_AT
                        + "\":\"2026-01-01T00:00:00Z\"},\"labels\":{\"" + PlaypenKeys.KEY_HASH_LABEL + "\":\""
                        + ClaimWriter.labelValue(other.keyHash()) + "\"}}}");
            }
        });

        ApiException e = catchThrowableOfType(ApiException.class, () -> r.allocator.allocate(key));

        assertThat(e.code()).as("no other pod to claim").isEqualTo(503);
        assertThat(r.carriers(other.keyHash())).containsExactly(POD);
        assertThat(r.carriers(key.keyHash())).isEmpty();
    }

    @Test
    void aFenceWhoseAnswerIsLostTooIsTriedThriceThenA503ThatSaysToSendTheRequestAgain() throws Exception {
        AllocCommand key = cmd("no-answers");
        // every write to the pod (the claim, each fence) is answered 504 and held
        r.cluster.holdWrite = (k, body) -> k.equals("PATCH " + podPath(POD));

        ApiException e = catchThrowableOfType(ApiException.class, () -> r.allocator.allocate(key));

        assertThat(e.code()).isEqualTo(503);
        assertThat(e.getMessage()).startsWith("the Kubernetes API server gave no clear answer to the claim of pod "
                + POD + " (it answered 504), and whether it was made could not be learnt");
        assertThat(gets()).as("the read-back, and one read after each of three fences").isEqualTo(4);
        assertThat(writes()).as("the claim and three fences").isEqualTo(4);
        r.cluster.holdWrite = (k, body) -> false;
        r.cluster.applyHeld();
        assertThat(r.carriers(key.keyHash())).as("the claim landed first, in the order the writes came")
                .containsExactly(POD);
    }
}
