package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.model.SlimPods;
import io.unboundedcloud.playpen.model.TtlPolicy;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * Each write of a claim's life is one request with exactly the body and precondition it needs: the claim's merge
 * patch, its rollback (only while the pod carries that very claim, unsettled), its settle, its conditional delete;
 * every API call is counted; an API error comes back with its code and the Status' message (or the body when it is
 * not a Status).
 */
class ClaimWriterCallsTest {
    private static final Instant NOW = Instant.parse("2026-01-02T03:04:05.678Z");
    private static final Clock CLOCK = Clock.fixed(NOW, ZoneOffset.UTC);
    private static final String POD = "playpen-runner-amd64-51820";
    private static final String PATH = "/api/v1/namespaces/playpen/pods/" + POD;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final AllocCommand CMD = new AllocCommand(Hashes.keyHash("writer"), ResourceType.RUNNER, "",
            TestCluster.wgKey(9), "amd64");
    private static final String OWNER = Hashes.ownerHash("alice");

    private TestCluster cluster;
    private ApiCallCounter calls;
    private ClaimWriter writer;

    @BeforeEach
    void start() {
        cluster = TestCluster.start();
        calls = new ApiCallCounter();
        writer = new ClaimWriter(cluster.client, CLOCK, calls, new TtlPolicy(Duration.ofHours(1)));
    }

    @AfterEach
    void stop() {
        cluster.close();
    }

    private Pod idle() {
        return cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
    }

    private Pod inApi() {
        return cluster.client.pods().inNamespace(TestCluster.NS).withName(POD).get();
    }

    private long count(KubeApiCall call) {
        return calls.get(call);
    }

    private Pod edit(java.util.function.UnaryOperator<PodBuilder> change) {
        return cluster.client.pods().inNamespace(TestCluster.NS).withName(POD)
                .edit(p -> change.apply(new PodBuilder(p)).build());
    }

    private static String status(int code, String message) {
        return "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\""
                + message + "\",\"reason\":\"Conflict\",\"code\":" + code + "}";
    }

    /** The next {@code method} of the pod meets a conflict, and the read after it finds the pod being deleted. */
    private void conflictThenRead(Pod current, String method) {
        Pod terminating = new PodBuilder(current).editMetadata().withDeletionTimestamp("2026-01-02T03:06:00Z")
                .endMetadata().build();
        if (method.equals("PATCH")) {
            cluster.server.expect().patch().withPath(PATH).andReturn(409, status(409, "modified")).once();
        } else {
            cluster.server.expect().delete().withPath(PATH).andReturn(409, status(409, "modified")).once();
        }
        cluster.server.expect().get().withPath(PATH).andReturn(200, terminating).once();
    }

    // ---- the claim's patch

    @Test
    void theClaimPatchCarriesThePreconditionTheClaimAndNothingElse() throws Exception {
        ClaimWriter plain = new ClaimWriter(null, CLOCK, new ApiCallCounter());
        String key63 = CMD.keyHash().substring(0, 63);
        JsonNode bare = JSON.readTree(plain.claimPatch("playpen", "p", "12", CMD));
        // each claim carries its own random claim-id, which tells it from a later claim of the key in the same second
        String id = withoutClaimId(bare);
        assertThat(id).matches("[0-9a-f]{1,16}");
        JsonNode twice = JSON.readTree(plain.claimPatch("playpen", "p", "12", CMD));
        assertThat(withoutClaimId(twice)).isNotEqualTo(id);
        assertThat(twice).isEqualTo(bare);
        assertThat(bare).isEqualTo(JSON.readTree("{\"metadata\":{\"resourceVersion\":\"12\",\"labels\":{"
                + q(PlaypenKeys.ALLOCATED) + ":" + q(Hashes.allocationId("playpen", "p")) + ","
                + q(PlaypenKeys.KEY_HASH_LABEL) + ":" + q(key63) + "},\"annotations\":{"
                + q(PlaypenKeys.IDEMPOTENCY_KEY_HASH) + ":" + q(CMD.keyHash()) + ","
                + q(PlaypenKeys.REQUEST_HASH) + ":" + q(CMD.requestHash()) + ","
                + q(PlaypenKeys.CLIENT_WIREGUARD_PUBLIC_KEY) + ":" + q(CMD.wireGuardPublicKey()) + ","
                + q(PlaypenKeys.CLAIMED_AT) + ":\"2026-01-02T03:04:05Z\","
                + q(PlaypenKeys.FENCED_CLAIM_ID) + ":null,"
                + q(PlaypenKeys.OWNER_HASH_MOVED) + ":null}}}"));

        JsonNode owned = JSON.readTree(plain.claimPatch("playpen", "p", "12", CMD, OWNER, 3));
        withoutClaimId(owned);
        assertThat(owned.at("/metadata/labels").size()).isEqualTo(3);
        assertThat(owned.at("/metadata/labels").get(PlaypenKeys.OWNER_HASH_LABEL).asText())
                .isEqualTo(OWNER.substring(0, 63));
        assertThat(owned.at("/metadata/annotations").size()).isEqualTo(8);
        assertThat(owned.at("/metadata/annotations").get(PlaypenKeys.OWNER_HASH).asText()).isEqualTo(OWNER);
        assertThat(owned.at("/metadata/annotations").get(PlaypenKeys.OWNER_QUOTA).asText()).isEqualTo("3");
        // an owner without a quota records no quota; a quota without an owner records neither
        JsonNode noQuota = JSON.readTree(plain.claimPatch("playpen", "p", "12", CMD, OWNER, 0));
        assertThat(noQuota.at("/metadata/annotations").has(PlaypenKeys.OWNER_QUOTA)).isFalse();
        assertThat(noQuota.at("/metadata/annotations").has(PlaypenKeys.OWNER_HASH)).isTrue();
        JsonNode noOwner = JSON.readTree(plain.claimPatch("playpen", "p", "12", CMD, null, 3));
        withoutClaimId(noOwner);
        assertThat(noOwner).isEqualTo(bare);
    }

    /** Takes the claim-id out of a claim's patch; its value. */
    private static String withoutClaimId(JsonNode patch) {
        return ((com.fasterxml.jackson.databind.node.ObjectNode) patch.at("/metadata/annotations"))
                .remove(PlaypenKeys.CLAIM_ID).asText();
    }

    @Test
    void theClaimRecordsItsExpiryWhenTheWriterHasALeasePolicy() throws Exception {
        JsonNode defaultTtl = JSON.readTree(writer.claimPatch("playpen", "p", "1", CMD));
        assertThat(defaultTtl.at("/metadata/annotations").get(PlaypenKeys.EXPIRES_AT).asText())
                .isEqualTo("2026-01-02T04:04:05Z");
        JsonNode asked = JSON.readTree(writer.claimPatch("playpen", "p", "1", CMD.withLease(Duration.ofMinutes(30), 0)));
        assertThat(asked.at("/metadata/annotations").get(PlaypenKeys.EXPIRES_AT).asText())
                .isEqualTo("2026-01-02T03:34:05Z");
        ClaimWriter noTtl = new ClaimWriter(null, CLOCK, calls, new TtlPolicy(Duration.ZERO));
        assertThat(JSON.readTree(noTtl.claimPatch("playpen", "p", "1", CMD)).at("/metadata/annotations")
                .has(PlaypenKeys.EXPIRES_AT)).isFalse();
    }

    @Test
    void labelValuesAreCutToTheSixtyThreeCharactersALabelMayHave() {
        assertThat(ClaimWriter.labelValue("a".repeat(62))).isEqualTo("a".repeat(62));
        assertThat(ClaimWriter.labelValue("b".repeat(63))).isEqualTo("b".repeat(63));
        assertThat(ClaimWriter.labelValue("c".repeat(63) + "d")).isEqualTo("c".repeat(63));
        assertThat(ClaimWriter.labelValue("")).isEmpty();
    }

    private static String q(String s) {
        return "\"" + s + "\"";
    }

    // ---- the claim on the API server

    @Test
    void aClaimIsOnePatchOnTheVersionItWasJudgedOn() {
        Pod pod = idle();
        Pod claimed = writer.claim(pod, pod.getMetadata().getResourceVersion(), CMD, OWNER, 2);
        assertThat(count(KubeApiCall.PODS_PATCH)).isEqualTo(1);
        assertThat(cluster.requestCount(k -> k.equals("PATCH " + PATH))).isEqualTo(1);
        assertThat(ManagedPods.keyHash(claimed)).isEqualTo(CMD.keyHash());
        assertThat(ManagedPods.annotations(inApi())).containsEntry(PlaypenKeys.OWNER_QUOTA, "2")
                .containsEntry(PlaypenKeys.OWNER_HASH, OWNER)
                .containsEntry(PlaypenKeys.EXPIRES_AT, "2026-01-02T04:04:05Z");
        assertThat(claimed.getMetadata().getResourceVersion()).isEqualTo(inApi().getMetadata().getResourceVersion());

        // the version it was judged on is gone: 409, nothing written
        KubernetesClientException stale = catchThrowableOfType(KubernetesClientException.class,
                () -> writer.claim(pod, pod.getMetadata().getResourceVersion(), CMD));
        assertThat(stale.getCode()).isEqualTo(409);
        assertThat(stale.getMessage()).startsWith("PATCH of pod playpen/" + POD + " answered 409: ");
        assertThat(count(KubeApiCall.PODS_PATCH)).isEqualTo(2);
        assertThat(inApi().getMetadata().getResourceVersion()).isEqualTo(claimed.getMetadata().getResourceVersion());
    }

    @Test
    void aClaimOfAPodThatIsGoneIs404() {
        Pod pod = idle();
        cluster.client.pods().inNamespace(TestCluster.NS).withName(POD).delete();
        KubernetesClientException gone = catchThrowableOfType(KubernetesClientException.class,
                () -> writer.claim(pod, pod.getMetadata().getResourceVersion(), CMD));
        assertThat(gone.getCode()).isEqualTo(404);
    }

    @Test
    void theApiServerAddressMayEndWithOrWithoutASlash() {
        Pod pod = idle();
        String url = cluster.server.url("/");
        String bare = url.substring(0, url.length() - 1);
        try (KubernetesClient noSlash = KubeClients.create(new ConfigBuilder().withMasterUrl(bare)
                .withNamespace(TestCluster.NS).withTrustCerts(true).build())) {
            ClaimWriter w = new ClaimWriter(noSlash, CLOCK, calls);
            Pod claimed = w.claim(pod, pod.getMetadata().getResourceVersion(), CMD);
            assertThat(ManagedPods.keyHash(claimed)).isEqualTo(CMD.keyHash());
            assertThat(cluster.requestCount(k -> k.equals("PATCH " + PATH))).isEqualTo(1);
        }
    }

    @Test
    void anErrorStatusComesBackWithItsCodeAndMessage() {
        Pod pod = idle();
        cluster.server.expect().patch().withPath(PATH).andReturn(409, status(409, "the object has been modified"))
                .once();
        KubernetesClientException e = catchThrowableOfType(KubernetesClientException.class,
                () -> writer.claim(pod, "1", CMD));
        assertThat(e.getCode()).isEqualTo(409);
        assertThat(e.getStatus().getMessage()).isEqualTo("the object has been modified");
        assertThat(e.getStatus().getReason()).isEqualTo("Conflict");
        assertThat(e.getMessage()).isEqualTo("PATCH of pod playpen/" + POD + " answered 409: the object has been modified");
    }

    @Test
    void anErrorThatIsNoStatusKeepsTheAnswersCodeAndBody() {
        Pod pod = idle();
        // (the client retries a server error once: both answers are scripted)
        cluster.server.expect().patch().withPath(PATH).andReturn(502, "<html>bad gateway</html>").times(2);
        KubernetesClientException html = catchThrowableOfType(KubernetesClientException.class,
                () -> writer.claim(pod, "1", CMD));
        assertThat(html.getCode()).isEqualTo(502);
        assertThat(html.getStatus().getCode()).isEqualTo(502);
        assertThat(html.getStatus().getStatus()).isEqualTo("Failure");
        assertThat(html.getStatus().getMessage()).isEqualTo("<html>bad gateway</html>");
        assertThat(html.getMessage()).isEqualTo("PATCH of pod playpen/" + POD + " answered 502: <html>bad gateway</html>");

        // a JSON body that is not a Status with a code is the same: the answer's code, the body as the message
        String noCode = "{\"kind\":\"Status\",\"message\":\"half a status\"}";
        cluster.server.expect().patch().withPath(PATH).andReturn(422, noCode).once();
        KubernetesClientException partial = catchThrowableOfType(KubernetesClientException.class,
                () -> writer.claim(pod, "1", CMD));
        assertThat(partial.getCode()).isEqualTo(422);
        assertThat(partial.getStatus().getCode()).isEqualTo(422);
        assertThat(partial.getStatus().getMessage()).isEqualTo(noCode);

        // no body at all
        cluster.server.expect().patch().withPath(PATH).andReturn(503, "").times(2);
        KubernetesClientException empty = catchThrowableOfType(KubernetesClientException.class,
                () -> writer.claim(pod, "1", CMD));
        assertThat(empty.getCode()).isEqualTo(503);
        assertThat(empty.getStatus().getMessage()).isEmpty();
        assertThat(count(KubeApiCall.PODS_PATCH)).isEqualTo(3);
        assertThat(inApi().getMetadata().getAnnotations()).doesNotContainKey(PlaypenKeys.IDEMPOTENCY_KEY_HASH);
    }

    @Test
    void anUnreachableApiServerIsAClientErrorNamingThePod() throws Exception {
        Pod pod = idle();
        int port;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        try (KubernetesClient nowhere = KubeClients.create(new ConfigBuilder().withMasterUrl("https://127.0.0.1:" + port)
                .withTrustCerts(true).withRequestRetryBackoffLimit(0).withConnectionTimeout(2000).build())) {
            KubernetesClientException e = catchThrowableOfType(KubernetesClientException.class,
                    () -> new ClaimWriter(nowhere, CLOCK, calls).claim(pod, "1", CMD));
            assertThat(e.getMessage()).startsWith("PATCH of pod playpen/" + POD + " failed: ");
            // the transport's own failure, not the future's wrapper around it
            assertThat(e.getCause()).isNotNull().isNotInstanceOf(java.util.concurrent.ExecutionException.class);
            assertThat(e.getMessage()).doesNotContain("ExecutionException");
        }
    }

    @Test
    void anInterruptedClaimSaysSoAndKeepsTheInterrupt() {
        Pod pod = idle();
        assertInterrupted(() -> writer.claim(pod, pod.getMetadata().getResourceVersion(), CMD),
                "interrupted while patching pod playpen/" + POD);
    }

    /** {@code call} made on an interrupted thread fails with {@code message} and leaves the thread interrupted. */
    private static void assertInterrupted(org.assertj.core.api.ThrowableAssert.ThrowingCallable call, String message) {
        Thread.currentThread().interrupt();
        try {
            assertThatThrownBy(call).isInstanceOf(KubernetesClientException.class).hasMessage(message)
                    .hasCauseInstanceOf(InterruptedException.class);
            assertThat(Thread.currentThread().isInterrupted()).isTrue();
        } finally {
            Thread.interrupted();
        }
    }

    // ---- rollback

    private Pod claimed() {
        Pod pod = idle();
        return writer.claim(pod, pod.getMetadata().getResourceVersion(), CMD, OWNER, 2);
    }

    @Test
    void aRollbackTakesTheWholeClaimOffAndLeavesThePodAsThePoolMadeIt() {
        Pod pod = idle();
        Pod claimed = writer.claim(pod, pod.getMetadata().getResourceVersion(), CMD, OWNER, 2);
        assertThat(writer.rollback(claimed, CMD.keyHash())).isEqualTo(ClaimWriter.Rollback.ROLLED_BACK);
        Pod after = inApi();
        assertThat(after.getMetadata().getAnnotations()).isEqualTo(pod.getMetadata().getAnnotations());
        assertThat(after.getMetadata().getLabels()).isEqualTo(pod.getMetadata().getLabels());
        assertThat(count(KubeApiCall.PODS_PATCH)).isEqualTo(2);
        assertThat(count(KubeApiCall.PODS_GET)).isZero();
    }

    /**
     * A claim whose owner hash was moved from the legacy form carries the mark of the move: its rollback takes that
     * off too, so the idle pod's next claim is not taken for a moved one.
     */
    @Test
    void aRollbackOfAMovedClaimTakesTheMarkOfTheMoveOffToo() {
        Pod pod = idle();
        writer.claim(pod, pod.getMetadata().getResourceVersion(), CMD, OWNER, 2);
        Pod moved = edit(b -> b.editMetadata().addToAnnotations(PlaypenKeys.OWNER_HASH_MOVED, "true").endMetadata());
        assertThat(writer.rollback(moved, CMD.keyHash())).isEqualTo(ClaimWriter.Rollback.ROLLED_BACK);
        assertThat(inApi().getMetadata().getAnnotations()).isEqualTo(pod.getMetadata().getAnnotations());
    }

    @Test
    void aRollbackAfterAnUnrelatedChangeReadsThePodAndTriesAgain() {
        Pod claimed = claimed();
        edit(b -> b.editMetadata().addToLabels("touched", "yes").endMetadata());
        assertThat(writer.rollback(claimed, CMD.keyHash())).isEqualTo(ClaimWriter.Rollback.ROLLED_BACK);
        assertThat(ManagedPods.isClaimed(inApi())).isFalse();
        assertThat(inApi().getMetadata().getLabels()).containsEntry("touched", "yes");
        assertThat(count(KubeApiCall.PODS_PATCH)).isEqualTo(3);
        assertThat(count(KubeApiCall.PODS_GET)).isEqualTo(1);
    }

    @Test
    void aRollbackOfAnotherKeysClaimIsNeverSent() {
        Pod claimed = claimed();
        assertThat(writer.rollback(claimed, Hashes.keyHash("someone else"))).isEqualTo(ClaimWriter.Rollback.GONE);
        assertThat(count(KubeApiCall.PODS_PATCH)).isEqualTo(1);
        assertThat(ManagedPods.keyHash(inApi())).isEqualTo(CMD.keyHash());
    }

    @Test
    void aRollbackOfAPodBeingDeletedIsNeverSent() {
        Pod claimed = claimed();
        Pod terminating = new PodBuilder(claimed).editMetadata().withDeletionTimestamp("2026-01-02T03:04:06Z")
                .endMetadata().build();
        assertThat(writer.rollback(terminating, CMD.keyHash())).isEqualTo(ClaimWriter.Rollback.GONE);
        assertThat(count(KubeApiCall.PODS_PATCH)).isEqualTo(1);
        assertThat(ManagedPods.isClaimed(inApi())).isTrue();
    }

    @Test
    void aSettledClaimIsNeverRolledBack() {
        Pod claimed = claimed();
        Pod settled = writer.settle(claimed);
        assertThat(ManagedPods.annotations(inApi())).containsEntry(PlaypenKeys.CLAIM_SETTLED, "true");
        assertThat(writer.rollback(settled, CMD.keyHash())).isEqualTo(ClaimWriter.Rollback.SETTLED);
        assertThat(count(KubeApiCall.PODS_PATCH)).isEqualTo(2);
        // nor when the rollback learns of the settle from its conflict
        assertThat(writer.rollback(claimed, CMD.keyHash())).isEqualTo(ClaimWriter.Rollback.SETTLED);
        assertThat(count(KubeApiCall.PODS_PATCH)).isEqualTo(3);
        assertThat(count(KubeApiCall.PODS_GET)).isEqualTo(1);
        assertThat(ManagedPods.keyHash(inApi())).isEqualTo(CMD.keyHash());
    }

    @Test
    void aRollbackWhoseClaimWasReplacedMeanwhileLeavesTheNewOneAlone() {
        Pod claimed = claimed();
        // rolled back by someone else and claimed again with the same key: another claimed-at
        edit(b -> b.editMetadata().addToAnnotations(PlaypenKeys.CLAIMED_AT, "2026-01-02T03:05:00Z").endMetadata());
        assertThat(writer.rollback(claimed, CMD.keyHash())).isEqualTo(ClaimWriter.Rollback.GONE);
        assertThat(ManagedPods.isClaimed(inApi())).isTrue();
        // the pod deleted and made again under the same name, then claimed with the same key: another uid
        Pod current = inApi();
        cluster.client.pods().inNamespace(TestCluster.NS).withName(POD).delete();
        cluster.create(new PodBuilder(current).editMetadata().withUid(null).withResourceVersion(null).endMetadata());
        assertThat(inApi().getMetadata().getUid()).isNotEqualTo(current.getMetadata().getUid());
        assertThat(writer.rollback(current, CMD.keyHash())).isEqualTo(ClaimWriter.Rollback.GONE);
        assertThat(ManagedPods.isClaimed(inApi())).isTrue();
        // taken off by someone else: the key is gone
        Pod again = inApi();
        edit(b -> b.editMetadata().removeFromAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH).endMetadata());
        assertThat(writer.rollback(again, CMD.keyHash())).isEqualTo(ClaimWriter.Rollback.GONE);
        // being deleted by then
        Pod last = edit(b -> b.editMetadata().addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, CMD.keyHash())
                .endMetadata());
        conflictThenRead(last, "PATCH");
        assertThat(writer.rollback(last, CMD.keyHash())).isEqualTo(ClaimWriter.Rollback.GONE);
        assertThat(ManagedPods.isClaimed(inApi())).isTrue();
        // deleted by then
        Pod deleted = inApi();
        cluster.client.pods().inNamespace(TestCluster.NS).withName(POD).delete();
        assertThat(writer.rollback(deleted, CMD.keyHash())).isEqualTo(ClaimWriter.Rollback.GONE);
    }

    /**
     * A claim taken back by another replica (its sweeper) and made again for the same key on the same pod within the
     * same second, by another writer whose answer stands: the first writer's rollback, reading the pod after its
     * conflict, finds the same uid, key and claimed-at, yet the claim is not its own and must be left alone.
     */
    @Test
    void aRollbackNeverTakesAnotherWritersClaimOfTheSameKeyMadeInTheSameSecond() {
        Pod claimedHere = claimed();
        ClaimWriter elsewhere = new ClaimWriter(cluster.client, CLOCK, new ApiCallCounter(),
                new TtlPolicy(Duration.ofHours(1)), "other-replica");
        assertThat(elsewhere.rollbackAsOf(claimedHere, CMD.keyHash())).isEqualTo(ClaimWriter.Rollback.ROLLED_BACK);
        Pod idleAgain = inApi();
        Pod claimedThere = elsewhere.claim(idleAgain, idleAgain.getMetadata().getResourceVersion(), CMD, OWNER, 2);
        assertThat(ManagedPods.annotations(claimedThere).get(PlaypenKeys.CLAIMED_AT))
                .isEqualTo(ManagedPods.annotations(claimedHere).get(PlaypenKeys.CLAIMED_AT));

        assertThat(writer.rollback(claimedHere, CMD.keyHash())).isEqualTo(ClaimWriter.Rollback.GONE);
        assertThat(ManagedPods.keyHash(inApi())).isEqualTo(CMD.keyHash());
        assertThat(inApi().getMetadata().getResourceVersion())
                .isEqualTo(claimedThere.getMetadata().getResourceVersion());
        // the other writer's own rollback still takes its claim off
        assertThat(elsewhere.rollback(claimedThere, CMD.keyHash())).isEqualTo(ClaimWriter.Rollback.ROLLED_BACK);
        assertThat(ManagedPods.isClaimed(inApi())).isFalse();
    }

    /**
     * A rollback as of a listed version writes on that version only: after any change it undoes nothing and reads
     * nothing, even when the pod still carries the same key and claimed-at (as a claim taken back and made again
     * within the second would; the rollback that reads again tells that one by its claim-id).
     */
    @Test
    void aRollbackAsOfAVersionNeverWritesOnALaterOne() {
        Pod claimed = claimed();
        Pod later = edit(b -> b.editMetadata().addToLabels("touched", "yes").endMetadata());
        assertThat(writer.rollbackAsOf(claimed, CMD.keyHash())).isEqualTo(ClaimWriter.Rollback.CHANGED);
        assertThat(ManagedPods.keyHash(inApi())).isEqualTo(CMD.keyHash());
        assertThat(count(KubeApiCall.PODS_PATCH)).isEqualTo(2);
        assertThat(count(KubeApiCall.PODS_GET)).isZero();
        assertThat(writer.rollbackAsOf(later, CMD.keyHash())).isEqualTo(ClaimWriter.Rollback.ROLLED_BACK);
        assertThat(ManagedPods.isClaimed(inApi())).isFalse();
    }

    @Test
    void aRollbackOfAPodThatIsGoneIsGone() {
        Pod claimed = claimed();
        cluster.server.expect().patch().withPath(PATH).andReturn(404, status(404, "not found")).once();
        assertThat(writer.rollback(claimed, CMD.keyHash())).isEqualTo(ClaimWriter.Rollback.GONE);
        assertThat(count(KubeApiCall.PODS_GET)).isZero();
    }

    @Test
    void aRollbackTheApiServerRefusesIsAnError() {
        Pod claimed = claimed();
        cluster.forbidden = k -> k.equals("PATCH " + PATH);
        KubernetesClientException e = catchThrowableOfType(KubernetesClientException.class,
                () -> writer.rollback(claimed, CMD.keyHash()));
        assertThat(e.getCode()).isEqualTo(403);
        assertThat(count(KubeApiCall.PODS_GET)).isZero();
    }

    @Test
    void aRollbackGivesUpAfterFiveConflicts() {
        Pod claimed = claimed();
        cluster.server.expect().patch().withPath(PATH).andReturn(409, status(409, "modified")).times(5);
        assertThatThrownBy(() -> writer.rollback(claimed, CMD.keyHash())).isInstanceOf(KubernetesClientException.class)
                .hasMessage("pod playpen/" + POD + " kept changing while its lost claim was undone");
        assertThat(count(KubeApiCall.PODS_PATCH)).isEqualTo(1 + 5);
        assertThat(count(KubeApiCall.PODS_GET)).isEqualTo(5);
        assertThat(ManagedPods.isClaimed(inApi())).isTrue();
    }

    // ---- settle

    @Test
    void aSettleIsConditionalOnTheVersionItRead() {
        Pod claimed = claimed();
        Pod settled = writer.settle(claimed);
        assertThat(ClaimLedger.isSettled(settled)).isTrue();
        assertThat(ManagedPods.keyHash(settled)).isEqualTo(CMD.keyHash());
        KubernetesClientException stale = catchThrowableOfType(KubernetesClientException.class,
                () -> writer.settle(claimed));
        assertThat(stale.getCode()).isEqualTo(409);
        assertThat(count(KubeApiCall.PODS_PATCH)).isEqualTo(3);
    }

    // ---- reads

    @Test
    void theCarriersOfAKeyAreListedByLabelAndTheCachedOnesReadOneByOne() {
        String key = CMD.keyHash();
        String label = ClaimWriter.labelValue(key);
        cluster.create(TestCluster.readyRunner("amd64", 51830, "n").editMetadata()
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, key).addToLabels(PlaypenKeys.KEY_HASH_LABEL, label)
                .endMetadata());
        // a stale label: the annotation names another key
        cluster.create(TestCluster.readyRunner("amd64", 51831, "n").editMetadata()
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, Hashes.keyHash("other"))
                .addToLabels(PlaypenKeys.KEY_HASH_LABEL, label).endMetadata());
        // not a managed pod
        cluster.create(new PodBuilder().withNewMetadata().withName("stranger").addToLabels(PlaypenKeys.KEY_HASH_LABEL,
                label).addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, key).endMetadata());
        // claimed before the label existed: found only when the cache names it
        cluster.create(TestCluster.readyRunner("amd64", 51832, "n").editMetadata()
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, key).endMetadata());
        cluster.create(TestCluster.readyRunner("amd64", 51833, "n").editMetadata()
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, Hashes.keyHash("other")).endMetadata());
        cluster.create(new PodBuilder().withNewMetadata().withName("stranger-2")
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, key).endMetadata());

        assertThat(writer.claimedWith(TestCluster.NS, key, List.of())).extracting(ManagedPods::name)
                .containsExactly("playpen-runner-amd64-51830");
        assertThat(count(KubeApiCall.PODS_LIST)).isEqualTo(1);
        assertThat(count(KubeApiCall.PODS_GET)).isZero();

        List<Pod> all = writer.claimedWith(TestCluster.NS, key, List.of("playpen-runner-amd64-51830",
                "playpen-runner-amd64-51832", "playpen-runner-amd64-51833", "stranger-2", "gone"));
        assertThat(all).extracting(ManagedPods::name)
                .containsExactly("playpen-runner-amd64-51830", "playpen-runner-amd64-51832");
        assertThat(count(KubeApiCall.PODS_LIST)).isEqualTo(2);
        assertThat(count(KubeApiCall.PODS_GET)).as("the listed one is not read again").isEqualTo(4);
    }

    @Test
    void listsAndReadsAreCounted() {
        idle();
        Pod claimed = claimed2();
        assertThat(writer.listByLabel(TestCluster.NS, PlaypenKeys.OWNER_HASH_LABEL, ClaimWriter.labelValue(OWNER)))
                .extracting(ManagedPods::name).containsExactly(ManagedPods.name(claimed));
        assertThat(writer.listWithLabel(TestCluster.NS, PlaypenKeys.ALLOCATED)).extracting(ManagedPods::name)
                .containsExactly(ManagedPods.name(claimed));
        assertThat(count(KubeApiCall.PODS_LIST)).isEqualTo(2);
        assertThat(writer.read(TestCluster.NS, POD)).isNotNull();
        assertThat(writer.read(TestCluster.NS, "gone")).isNull();
        assertThat(count(KubeApiCall.PODS_GET)).isEqualTo(2);
    }

    /**
     * A read is one GET whose answer is read as the slim pod the cache keeps (the environment, which the operator
     * never reads, is not built): the slim copy of the pod read whole, and its own slim copy.
     */
    @Test
    void aReadIsOneGetAnsweredAsTheSlimPod() {
        cluster.create(new PodBuilder(TestCluster.readyRunner("amd64", 51820, "node-a").build()).editSpec()
                .editFirstContainer().addNewEnv().withName("A").withValue("1").endEnv().endContainer().endSpec());
        Pod read = writer.read(TestCluster.NS, POD);
        Pod whole = inApi();
        assertThat(whole.getSpec().getContainers().get(0).getEnv()).extracting("name").containsExactly("A");
        assertThat(read.getSpec().getContainers().get(0).getEnv()).isEmpty();
        assertThat(read).isEqualTo(SlimPods.slim(whole));
        assertThat(SlimPods.slim(read)).isSameAs(read);
        assertThat(count(KubeApiCall.PODS_GET)).isEqualTo(1);
        assertThat(cluster.requestCount(k -> k.equals("GET " + PATH))).isEqualTo(2); // the read and inApi()
    }

    @Test
    void aReadAnswered404IsNull() {
        idle();
        cluster.server.expect().get().withPath(PATH).andReturn(404, status(404, "pods \"" + POD + "\" not found"))
                .once();
        assertThat(writer.read(TestCluster.NS, POD)).isNull();
        assertThat(count(KubeApiCall.PODS_GET)).isEqualTo(1);
    }

    @Test
    void aReadTheApiServerRefusesIsAnErrorWithItsCodeAndMessage() {
        idle();
        cluster.forbidden = k -> k.equals("GET " + PATH);
        KubernetesClientException forbidden = catchThrowableOfType(KubernetesClientException.class,
                () -> writer.read(TestCluster.NS, POD));
        assertThat(forbidden.getCode()).isEqualTo(403);
        assertThat(forbidden.getStatus().getReason()).isEqualTo("Forbidden");
        assertThat(forbidden.getStatus().getMessage()).isEqualTo("forbidden by the test's RBAC: GET " + PATH);
        assertThat(forbidden.getMessage())
                .isEqualTo("GET of pod playpen/" + POD + " answered 403: forbidden by the test's RBAC: GET " + PATH);
        cluster.forbidden = k -> false;

        // (the client retries a server error once: both answers are scripted)
        cluster.server.expect().get().withPath(PATH).andReturn(500, status(500, "etcdserver: request timed out"))
                .times(2);
        KubernetesClientException failed = catchThrowableOfType(KubernetesClientException.class,
                () -> writer.read(TestCluster.NS, POD));
        assertThat(failed.getCode()).isEqualTo(500);
        assertThat(failed.getStatus().getMessage()).isEqualTo("etcdserver: request timed out");
        assertThat(failed.getMessage())
                .isEqualTo("GET of pod playpen/" + POD + " answered 500: etcdserver: request timed out");
        assertThat(count(KubeApiCall.PODS_GET)).isEqualTo(2);
    }

    @Test
    void anInterruptedReadSaysSoAndKeepsTheInterrupt() {
        idle();
        assertInterrupted(() -> writer.read(TestCluster.NS, POD), "interrupted while reading pod playpen/" + POD);
        assertThat(cluster.requestCount(k -> k.equals("GET " + PATH))).isZero();
    }

    private Pod claimed2() {
        Pod pod = cluster.create(TestCluster.readyRunner("amd64", 51821, "node-a"));
        return writer.claim(pod, pod.getMetadata().getResourceVersion(), CMD, OWNER, 0);
    }

    // ---- delete

    @Test
    void aDeleteIsOneConditionalCall() {
        Pod claimed = claimed();
        assertThat(writer.delete(claimed, CMD.keyHash())).isEqualTo(ClaimWriter.Deletion.DELETED);
        assertThat(inApi()).isNull();
        assertThat(count(KubeApiCall.PODS_DELETE)).isEqualTo(1);
        assertThat(count(KubeApiCall.PODS_GET)).isZero();
        // again: someone else's delete got there first
        assertThat(writer.delete(claimed, CMD.keyHash())).isEqualTo(ClaimWriter.Deletion.GONE);
        assertThat(count(KubeApiCall.PODS_DELETE)).isEqualTo(2);
    }

    @Test
    void aDeleteOfAnotherKeysPodIsNeverSent() {
        Pod claimed = claimed();
        assertThat(writer.delete(claimed, Hashes.keyHash("other"))).isEqualTo(ClaimWriter.Deletion.NOT_OURS);
        assertThat(writer.deleteIfClaimedBy(claimed, Hashes.keyHash("other"))).isFalse();
        assertThat(count(KubeApiCall.PODS_DELETE)).isZero();
        assertThat(inApi()).isNotNull();
    }

    @Test
    void theFirstDeleteIsSentWhateverTheCachedPodSays() {
        // the cached version already shows a delete under way and no longer wanted: the first call goes out anyway
        // (only a fresh read after a conflict decides against it)
        Pod claimed = claimed();
        Pod terminating = new PodBuilder(claimed).editMetadata().withDeletionTimestamp("2026-01-02T03:04:06Z")
                .endMetadata().build();
        assertThat(writer.delete(terminating, CMD.keyHash(), p -> false)).isEqualTo(ClaimWriter.Deletion.DELETED);
        assertThat(count(KubeApiCall.PODS_DELETE)).isEqualTo(1);
        assertThat(inApi()).isNull();
    }

    @Test
    void aDeleteAfterAConflictJudgesTheFreshPod() {
        Pod claimed = claimed();
        // renewed meanwhile (still this key's, still wanted): deleted on the second try
        edit(b -> b.editMetadata().addToAnnotations(PlaypenKeys.EXPIRES_AT, "2026-01-02T05:00:00Z").endMetadata());
        assertThat(writer.delete(claimed, CMD.keyHash(), p -> true)).isEqualTo(ClaimWriter.Deletion.DELETED);
        assertThat(count(KubeApiCall.PODS_DELETE)).isEqualTo(2);
        assertThat(count(KubeApiCall.PODS_GET)).isEqualTo(1);
        assertThat(inApi()).isNull();
    }

    @Test
    void aDeleteAfterAConflictLeavesAPodNoLongerWantedOrAlreadyBeingDeleted() {
        Pod claimed = claimed();
        Pod renewed = edit(b -> b.editMetadata().addToAnnotations(PlaypenKeys.EXPIRES_AT, "2026-01-02T05:00:00Z")
                .endMetadata());
        java.util.List<Pod> asked = new java.util.ArrayList<>();
        assertThat(writer.delete(claimed, CMD.keyHash(), p -> {
            asked.add(p);
            return false;
        })).isEqualTo(ClaimWriter.Deletion.NOT_OURS);
        assertThat(asked).extracting(p -> p.getMetadata().getResourceVersion())
                .containsExactly(renewed.getMetadata().getResourceVersion());
        assertThat(inApi()).isNotNull();
        assertThat(count(KubeApiCall.PODS_DELETE)).isEqualTo(1);

        conflictThenRead(renewed, "DELETE");
        assertThat(writer.delete(renewed, CMD.keyHash(), p -> true)).isEqualTo(ClaimWriter.Deletion.GONE);
        assertThat(count(KubeApiCall.PODS_DELETE)).isEqualTo(2);
        assertThat(inApi()).isNotNull();
    }

    @Test
    void aDeleteThatMeetsAPodGoneAfterAConflictIsGone() {
        Pod claimed = claimed();
        cluster.server.expect().delete().withPath(PATH).andReturn(409, status(409, "modified")).once();
        cluster.server.expect().get().withPath(PATH).andReturn(404, status(404, "not found")).once();
        assertThat(writer.delete(claimed, CMD.keyHash())).isEqualTo(ClaimWriter.Deletion.GONE);
        assertThat(count(KubeApiCall.PODS_GET)).isEqualTo(1);
    }

    @Test
    void aDeleteGivesUpAfterThreeConflicts() {
        Pod claimed = claimed();
        cluster.server.expect().delete().withPath(PATH).andReturn(409, status(409, "modified")).times(3);
        assertThat(writer.delete(claimed, CMD.keyHash())).isEqualTo(ClaimWriter.Deletion.NOT_OURS);
        assertThat(count(KubeApiCall.PODS_DELETE)).isEqualTo(3);
        assertThat(count(KubeApiCall.PODS_GET)).isEqualTo(3);
        assertThat(inApi()).isNotNull();
    }

    @Test
    void aDeleteTheApiServerRefusesIsAnError() {
        Pod claimed = claimed();
        cluster.forbidden = k -> k.equals("DELETE " + PATH);
        KubernetesClientException e = catchThrowableOfType(KubernetesClientException.class,
                () -> writer.delete(claimed, CMD.keyHash()));
        assertThat(e.getCode()).isEqualTo(403);
        assertThat(count(KubeApiCall.PODS_GET)).isZero();
    }

    @Test
    void aDeleteAnswered404IsGone() {
        Pod claimed = claimed();
        cluster.server.expect().delete().withPath(PATH).andReturn(404, status(404, "not found")).once();
        assertThat(writer.delete(claimed, CMD.keyHash())).isEqualTo(ClaimWriter.Deletion.GONE);
        assertThat(count(KubeApiCall.PODS_GET)).isZero();
    }

    @SuppressWarnings("unused")
    private static Map<String, String> annotations(Pod p) {
        return ManagedPods.annotations(p);
    }
}
