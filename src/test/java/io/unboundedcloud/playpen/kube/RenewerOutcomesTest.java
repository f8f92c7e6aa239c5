package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.TtlPolicy;
import io.unboundedcloud.playpen.support.MutableClock;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * Each outcome of a renewal, as the caller, the cache, the API call count and the observers (metrics, the Renewed
 * Event) see it: renewed (one conditional write, the cache has it at once), unchanged (nothing written), not found
 * (404), gone (410: ended, being deleted, or deleted between the read and the write), failed (any other refusal).
 * Every renewal goes by the key, as the renewal route's: the key's standing claim is read from the API server and
 * renewed with one conditional write.
 */
class RenewerOutcomesTest {
    static final String KEY = RenewerTest.KEY;
    static final String NAME = RenewerTest.NAME;

    /** Observers' view: the result label and, where there is one, the renewal. */
    record Told(String result, Renewer.Renewal renewal) {
    }

    static final String PATCH_POD = "PATCH /api/v1/namespaces/" + TestCluster.NS + "/pods/" + NAME;

    /**
     * The claim of KEY on NAME, settled or not ({@code expiresAt} null: it carries no expiry, as the Go operator's
     * claims). A claim is settled once an answer named it to another request than its writer's (a replay, an earlier
     * renewal): a renewal of it has only the expiry to write.
     */
    static PodBuilder claim(boolean settled, String claimedAt, String expiresAt) {
        java.util.Map<String, String> annotations = new java.util.LinkedHashMap<>();
        annotations.put(PlaypenKeys.IDEMPOTENCY_KEY_HASH, KEY);
        annotations.put(PlaypenKeys.CLAIMED_AT, claimedAt);
        if (expiresAt != null) {
            annotations.put(PlaypenKeys.EXPIRES_AT, expiresAt);
        }
        if (settled) {
            annotations.put(PlaypenKeys.CLAIM_SETTLED, "true");
        }
        return TestCluster.readyRunner("amd64", 51820, ScriptedReplica.NODE).editMetadata().addToAnnotations(annotations)
                .addToLabels(PlaypenKeys.KEY_HASH_LABEL, ClaimWriter.labelValue(KEY)).endMetadata();
    }

    /**
     * This replica, its watch following the API server (each write is in its cache by the time the writer has the
     * answer, unless the test holds the watch), and {@code claim} committed while it watches: its ledger judged the
     * claim at its commit, so it is the key's standing claim, which a renewal reads from the API server and renews.
     */
    static ScriptedReplica watching(PodBuilder claim) throws Exception {
        ScriptedReplica r = new ScriptedReplica(0, 0);
        r.cluster.create(claim);
        assertThat(r.pods.claimOn(NAME).map(ClaimLedger.Claim::standing)).contains(ClaimLedger.Standing.WON);
        return r;
    }

    static Renewer renewer(TestCluster cluster, PodCache pods, Instant now, TtlPolicy policy, ApiCallCounter calls,
            List<Told> told) {
        Renewer r = new Renewer(cluster.client, pods, policy, new MutableClock(now), calls);
        r.addObserver((result, renewal) -> told.add(new Told(result, renewal)));
        return r;
    }

    /** The renewal is refused with {@code code} and {@code message}, the observers hear {@code result}, nothing is written. */
    static void assertRefusedUnwritten(TestCluster cluster, org.assertj.core.api.ThrowableAssert.ThrowingCallable renewal,
            int code, String message, List<Told> told, String result) {
        assertThatThrownBy(renewal).isInstanceOfSatisfying(ApiException.class, e -> {
            assertThat(e.code()).isEqualTo(code);
            assertThat(e.getMessage()).isEqualTo(message);
        });
        assertThat(told).containsExactly(new Told(result, null));
        assertThat(cluster.requestCount(k -> k.startsWith("PATCH "))).isZero();
    }

    @Test
    void aRenewalWritesTheNewExpiryOnceAndTheCacheHasItAtOnce() throws Exception {
        try (ScriptedReplica replica = watching(claim(true, "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"))) {
            TestCluster cluster = replica.cluster;
            PodCache pods = replica.pods;
            ApiCallCounter calls = new ApiCallCounter();
            List<Told> told = new CopyOnWriteArrayList<>();
            // a maximum lifetime of 4 h from the claim
            Renewer renewer = renewer(cluster, pods, Instant.parse("2026-01-01T00:30:00Z"),
                    new TtlPolicy(Duration.ofHours(1), Duration.ofHours(4)), calls, told);
            // the watch delivers nothing more until released: what the cache has of the write, it has from its answer
            replica.watch.hold();

            Renewer.Renewal r = renewer.renew(KEY, Duration.ofHours(2));

            assertThat(r.written()).isTrue();
            assertThat(r.expiresAt()).isEqualTo(Instant.parse("2026-01-01T02:30:00Z"));
            assertThat(r.maxExpiresAt()).isEqualTo(Instant.parse("2026-01-01T04:00:00Z"));
            assertThat(RenewerTest.expiresAt(cluster)).isEqualTo("2026-01-01T02:30:00Z");
            assertThat(replica.watch.held()).as("the write's watch event, not delivered yet").hasSize(1);
            assertThat(pods.get(NAME)).get().extracting(p -> p.getMetadata().getAnnotations().get(PlaypenKeys.EXPIRES_AT))
                    .as("this replica's cache, before any watch event").isEqualTo("2026-01-01T02:30:00Z");
            assertThat(cluster.requestCount(PATCH_POD::equals)).isEqualTo(1);
            assertThat(calls.get(KubeApiCall.PODS_PATCH)).isEqualTo(1);
            assertThat(calls.get(KubeApiCall.PODS_GET)).as("the claim read from the API server").isEqualTo(1);
            assertThat(told).containsExactly(new Told("renewed", r));

            // asking for more than the maximum lifetime allows: capped at it
            replica.watch.release();
            Renewer.Renewal capped = renewer.renew(KEY, Duration.ofHours(9));
            assertThat(capped.expiresAt()).isEqualTo(Instant.parse("2026-01-01T04:00:00Z"));
            assertThat(RenewerTest.expiresAt(cluster)).isEqualTo("2026-01-01T04:00:00Z");
        }
    }

    /**
     * A claim written before --playpen-max-lifetime was set (or lowered) may already expire past the cap: a renewal
     * keeps that expiry (it never shortens one) and answers it as the latest the allocation can reach, so the answer
     * never has expiresAt after maxExpiresAt.
     */
    @Test
    void anExpiryPastALaterCapStaysAndIsTheAnswersMaximum() throws Exception {
        try (ScriptedReplica replica = watching(claim(true, "2026-01-01T00:00:00Z", "2026-01-01T06:00:00Z"))) {
            TestCluster cluster = replica.cluster;
            List<Told> told = new CopyOnWriteArrayList<>();
            // a cap of 4 h from the claim, set after this claim was written with 6 h
            Renewer renewer = renewer(cluster, replica.pods, Instant.parse("2026-01-01T00:30:00Z"),
                    new TtlPolicy(Duration.ofHours(1), Duration.ofHours(4)), new ApiCallCounter(), told);

            Renewer.Renewal r = renewer.renew(KEY, Duration.ofHours(2));

            assertThat(r.expiresAt()).isEqualTo(Instant.parse("2026-01-01T06:00:00Z"));
            assertThat(r.maxExpiresAt()).isEqualTo(Instant.parse("2026-01-01T06:00:00Z"));
            assertThat(r.written()).isFalse();
            assertThat(RenewerTest.expiresAt(cluster)).isEqualTo("2026-01-01T06:00:00Z");
        }
    }

    @Test
    void aRenewalThatWouldNotMoveTheExpiryWritesNothing() throws Exception {
        try (ScriptedReplica replica = watching(claim(true, "2026-01-01T00:00:00Z", "2026-01-01T03:00:00Z"))) {
            TestCluster cluster = replica.cluster;
            ApiCallCounter calls = new ApiCallCounter();
            List<Told> told = new CopyOnWriteArrayList<>();
            Renewer renewer = renewer(cluster, replica.pods, Instant.parse("2026-01-01T00:30:00Z"),
                    new TtlPolicy(Duration.ofHours(1)), calls, told);

            // 30 minutes asked, 2.5 hours left: never earlier than it was
            Renewer.Renewal r = renewer.renew(KEY, Duration.ofMinutes(30));

            assertThat(r.written()).isFalse();
            assertThat(r.expiresAt()).isEqualTo(Instant.parse("2026-01-01T03:00:00Z"));
            assertThat(cluster.requestCount(PATCH_POD::equals)).isZero();
            assertThat(calls.get(KubeApiCall.PODS_PATCH)).isZero();
            assertThat(told).containsExactly(new Told("unchanged", r));
        }
    }

    /**
     * A claim the Go operator made carries no expires-at: it ends at claimed-at + --playpen-ttl. A renewal asking
     * for less than is left does not move that expiry, so it writes nothing and is told as unchanged (no Renewed
     * Event saying the expiry moved), as for a claim that carries its expiry.
     */
    @Test
    void aRenewalOfAClaimWithoutExpiresAtThatWouldNotMoveItsExpiryWritesNothing() throws Exception {
        try (ScriptedReplica replica = watching(claim(true, "2026-01-01T00:00:00Z", null))) {
            TestCluster cluster = replica.cluster;
            ApiCallCounter calls = new ApiCallCounter();
            List<Told> told = new CopyOnWriteArrayList<>();
            Renewer renewer = renewer(cluster, replica.pods, Instant.parse("2026-01-01T00:30:00Z"),
                    new TtlPolicy(Duration.ofHours(1)), calls, told);

            // 10 minutes asked, 30 minutes left of claimed-at + 1 h
            Renewer.Renewal r = renewer.renew(KEY, Duration.ofMinutes(10));

            assertThat(r.expiresAt()).isEqualTo(Instant.parse("2026-01-01T01:00:00Z"));
            assertThat(r.written()).as("nothing moved, so nothing is written").isFalse();
            assertThat(cluster.requestCount(PATCH_POD::equals)).isZero();
            assertThat(told).containsExactly(new Told("unchanged", r));
        }
    }

    @Test
    void aKeyWithNoAllocationIs404() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            try (PodCache pods = cluster.syncedPodCache()) {
                List<Told> told = new CopyOnWriteArrayList<>();
                Renewer renewer = renewer(cluster, pods, Instant.parse("2026-01-01T00:30:00Z"),
                        new TtlPolicy(Duration.ofHours(1)), new ApiCallCounter(), told);
                assertRefusedUnwritten(cluster, () -> renewer.renew(KEY, Duration.ofHours(1)), 404, Renewer.NOT_FOUND,
                        told, "not-found");
            }
        }
    }

    /**
     * Before this replica's pod cache has synced, a renewal of a claim the cache has not listed yet is a 503 saying
     * to try again, with nothing written: not the 404 that would tell the client its live allocation is gone.
     */
    @Test
    void aRenewalBeforeThePodCacheSyncedIs503AndNothingIsWritten() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            RenewerTest.claimed(cluster, "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z");
            try (PodCache pods = new PodCache(cluster.client, TestCluster.NS, p -> null)) {
                List<Told> told = new CopyOnWriteArrayList<>();
                Renewer renewer = renewer(cluster, pods, Instant.parse("2026-01-01T00:30:00Z"),
                        new TtlPolicy(Duration.ofHours(1)), new ApiCallCounter(), told);
                assertRefusedUnwritten(cluster, () -> renewer.renew(KEY, Duration.ofHours(2)), 503,
                        "the operator's pod cache is not synced yet; nothing was renewed, try again", told, "failed");
                assertThatThrownBy(() -> renewer.renew(KEY, Duration.ofHours(2))).isInstanceOfSatisfying(
                        ApiException.class, e -> assertThat(e.headers()).containsEntry("Retry-After", "1"));
                assertThat(RenewerTest.expiresAt(cluster)).isEqualTo("2026-01-01T01:00:00Z");
            }
        }
    }

    /** The allocation is being deleted (graceful deletion: the pod is still there) and this replica's watch says so. */
    @Test
    void aClaimBeingDeletedIs410() throws Exception {
        try (ScriptedReplica replica = watching(claim(true, "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z")
                .editMetadata().addToFinalizers("example.com/hold").endMetadata())) {
            TestCluster cluster = replica.cluster;
            cluster.client.pods().inNamespace(TestCluster.NS).withName(NAME).delete();
            assertThat(replica.pods.claimOn(NAME).map(ClaimLedger.Claim::terminating)).contains(true);
            List<Told> told = new CopyOnWriteArrayList<>();
            Renewer renewer = renewer(cluster, replica.pods, Instant.parse("2026-01-01T00:30:00Z"),
                    new TtlPolicy(Duration.ofHours(1)), new ApiCallCounter(), told);
            assertRefusedUnwritten(cluster, () -> renewer.renew(KEY, Duration.ofHours(1)), 410, Renewer.GONE, told,
                    "gone");
        }
    }

    /**
     * The allocation is being deleted (by the TTL or a dealloc through another replica) and this replica's watch has
     * not delivered that pod yet: the API server still has the pod, so the renewal is 410 as the docs say, not the
     * 404 of a key that holds nothing; nothing is written.
     */
    @Test
    void aClaimBeingDeletedThatThisReplicasWatchHasNotSeenIs410() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            Pod pod = cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a").editMetadata()
                    .addToLabels(PlaypenKeys.KEY_HASH_LABEL, ClaimWriter.labelValue(KEY))
                    .addToAnnotations(java.util.Map.of(PlaypenKeys.IDEMPOTENCY_KEY_HASH, KEY, PlaypenKeys.CLAIMED_AT,
                            "2026-01-01T00:00:00Z", PlaypenKeys.EXPIRES_AT, "2026-01-01T01:00:00Z")).endMetadata());
            // the API server has it being deleted (graceful deletion: the pod is still there)
            Pod terminating = new PodBuilder(pod).editMetadata().withDeletionTimestamp("2026-01-01T00:20:00Z")
                    .endMetadata().build();
            cluster.server.expect().get().withPath("/api/v1/namespaces/" + TestCluster.NS + "/pods?labelSelector="
                    + java.net.URLEncoder.encode(PlaypenKeys.KEY_HASH_LABEL + "=" + ClaimWriter.labelValue(KEY),
                            java.nio.charset.StandardCharsets.UTF_8))
                    .andReturn(200, new io.fabric8.kubernetes.api.model.PodListBuilder().withNewMetadata()
                            .withResourceVersion(pod.getMetadata().getResourceVersion()).endMetadata()
                            .addToItems(terminating).build()).always();
            // a synced cache whose watch has delivered nothing of it: the cache is empty
            io.unboundedcloud.playpen.support.ScriptedWatch watch = new io.unboundedcloud.playpen.support.ScriptedWatch(
                    TestCluster.NS);
            try (PodCache pods = new PodCache(watch.client(), TestCluster.NS, p -> null)) {
                pods.start();
                watch.awaitWatching();
                OperatorHarness.awaitTrue(pods::hasSynced, Duration.ofSeconds(60), "the empty cache synced");
                List<Told> told = new CopyOnWriteArrayList<>();
                Renewer renewer = renewer(cluster, pods, Instant.parse("2026-01-01T00:30:00Z"),
                        new TtlPolicy(Duration.ofHours(1)), new ApiCallCounter(), told);
                assertRefusedUnwritten(cluster, () -> renewer.renew(KEY, Duration.ofHours(1)), 410, Renewer.GONE, told,
                        "gone");
            }
        }
    }

    /**
     * An expired claim this replica cannot judge yet (made before its watch started, never settled): the renewal is
     * 410 and writes nothing, not even the settled mark a renewal of a live claim writes with it.
     */
    @Test
    void anExpiredClaimOfUnknownStandingIs410AndStaysUnsettled() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            RenewerTest.claimed(cluster, "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z");
            try (PodCache pods = cluster.syncedPodCache()) {
                assertThat(pods.claimOn(NAME).map(ClaimLedger.Claim::standing)).contains(ClaimLedger.Standing.UNKNOWN);
                List<Told> told = new CopyOnWriteArrayList<>();
                Renewer renewer = renewer(cluster, pods, Instant.parse("2026-01-01T01:30:00Z"),
                        new TtlPolicy(Duration.ofHours(1)), new ApiCallCounter(), told);

                assertRefusedUnwritten(cluster, () -> renewer.renew(KEY, Duration.ofHours(1)), 410, Renewer.GONE, told,
                        "gone");
                assertThat(cluster.client.pods().inNamespace(TestCluster.NS).withName(NAME).get().getMetadata()
                        .getAnnotations()).doesNotContainKey(PlaypenKeys.CLAIM_SETTLED);
            }
        }
    }

    @Test
    void aClaimDeletedBetweenTheReadAndTheWriteIs410AndLeavesTheCache() throws Exception {
        try (ScriptedReplica replica = watching(claim(true, "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"))) {
            TestCluster cluster = replica.cluster;
            PodCache pods = replica.pods;
            // deleted (the TTL on the leader, a dealloc through another replica) after the renewal read it: the API
            // server answers its write 404, and this replica's watch has not delivered the delete
            cluster.server.expect().patch().withPath(ScriptedReplica.podPath(NAME)).andReturn(404,
                    "{\"kind\":\"Status\",\"code\":404,\"message\":\"not found\"}").once();
            List<Told> told = new CopyOnWriteArrayList<>();
            Renewer renewer = renewer(cluster, pods, Instant.parse("2026-01-01T00:30:00Z"),
                    new TtlPolicy(Duration.ofHours(1)), new ApiCallCounter(), told);

            assertThatThrownBy(() -> renewer.renew(KEY, Duration.ofHours(2)))
                    .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.code()).isEqualTo(410));

            assertThat(cluster.requestCount(PATCH_POD::equals)).as("the write that found it gone").isEqualTo(1);
            assertThat(told).containsExactly(new Told("gone", null));
            assertThat(pods.get(NAME)).as("the cache forgets it at once").isEmpty();
        }
    }

    @Test
    void aClaimGoneWhenItsRenewalOnlySettlesItIs410AndLeavesTheCache() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            PodCache pods = new PodCache(cluster.client, TestCluster.NS, p -> null);
            pods.start();
            try {
                // claimed after the watch started: seen at its commit, it stands here, unsettled
                RenewerTest.claimed(cluster, "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z");
                OperatorHarness.awaitTrue(() -> pods.claimOn(NAME).map(ClaimLedger.Claim::stands).orElse(false),
                        Duration.ofSeconds(60), "the claim, standing");
                assertThat(pods.claimOn(NAME).map(c -> c.standing())).contains(ClaimLedger.Standing.WON);
                cluster.server.expect().patch().withPath(ScriptedReplica.podPath(NAME)).andReturn(404,
                        "{\"kind\":\"Status\",\"code\":404,\"message\":\"not found\"}").once();
                List<Told> told = new CopyOnWriteArrayList<>();
                Renewer renewer = renewer(cluster, pods, Instant.parse("2026-01-01T00:30:00Z"),
                        new TtlPolicy(Duration.ofHours(1)), new ApiCallCounter(), told);

                // less than is left: the expiry stays, the one write is the settle, and it finds the pod gone
                assertThatThrownBy(() -> renewer.renew(KEY, Duration.ofMinutes(10)))
                        .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.code()).isEqualTo(410));

                assertThat(cluster.requestCount(PATCH_POD::equals)).as("the settle that found it gone").isEqualTo(1);
                assertThat(told).containsExactly(new Told("gone", null));
                assertThat(pods.get(NAME)).as("the cache forgets it at once").isEmpty();
            } finally {
                pods.close();
            }
        }
    }

    @Test
    void aRenewalTheApiServerRefusesIsToldAsFailedOnce() throws Exception {
        try (ScriptedReplica replica = watching(claim(true, "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"))) {
            TestCluster cluster = replica.cluster;
            cluster.failBeforeWrite = PATCH_POD::equals;
            List<Told> told = new CopyOnWriteArrayList<>();
            Renewer renewer = renewer(cluster, replica.pods, Instant.parse("2026-01-01T00:30:00Z"),
                    new TtlPolicy(Duration.ofHours(1)), new ApiCallCounter(), told);

            assertThatThrownBy(() -> renewer.renew(KEY, Duration.ofHours(2)))
                    .isInstanceOf(io.fabric8.kubernetes.client.KubernetesClientException.class);

            assertThat(told).as("a renewal answered with an error is counted too").containsExactly(new Told("failed", null));
            assertThat(RenewerTest.expiresAt(cluster)).isEqualTo("2026-01-01T01:00:00Z");
        }
    }

    /**
     * Another replica renews the claim to {@code expiresAt} right after this replica's renewal read it from the API
     * server, before its write: that write meets the newer version.
     */
    static void renewedElsewhereAfterTheRead(ScriptedReplica replica, String expiresAt) {
        java.util.concurrent.atomic.AtomicBoolean once = new java.util.concurrent.atomic.AtomicBoolean();
        replica.cluster.addAnswerListener((method, path, answer) -> {
            if (method.equals("GET") && path.equals(ScriptedReplica.podPath(NAME)) && once.compareAndSet(false, true)) {
                replica.cluster.patchInStore(path, "{\"metadata\":{\"annotations\":{\"" + PlaypenKeys.EXPIRES_AT
                        + "\":\"" + expiresAt + "\"}}}");
            }
        });
    }

    @Test
    void aConflictIsReadFreshIntoTheCacheAndDecidedAgain() throws Exception {
        try (ScriptedReplica replica = watching(claim(true, "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"))) {
            TestCluster cluster = replica.cluster;
            renewedElsewhereAfterTheRead(replica, "2026-01-01T01:45:00Z");
            ApiCallCounter calls = new ApiCallCounter();
            List<Told> told = new CopyOnWriteArrayList<>();
            Renewer renewer = renewer(cluster, replica.pods, Instant.parse("2026-01-01T00:30:00Z"),
                    new TtlPolicy(Duration.ofHours(1)), calls, told);

            Renewer.Renewal r = renewer.renew(KEY, Duration.ofHours(2));

            // 409 on the version read first, a fresh read, then the write on the fresh one
            assertThat(r.expiresAt()).isEqualTo(Instant.parse("2026-01-01T02:30:00Z"));
            assertThat(r.written()).isTrue();
            assertThat(cluster.requestCount(PATCH_POD::equals)).as("the write that met the other one, and the next")
                    .isEqualTo(2);
            assertThat(calls.get(KubeApiCall.PODS_PATCH)).isEqualTo(2);
            assertThat(calls.get(KubeApiCall.PODS_GET)).as("the read, and the read after the conflict").isEqualTo(2);
            assertThat(told).containsExactly(new Told("renewed", r));
            assertThat(RenewerTest.expiresAt(cluster)).isEqualTo("2026-01-01T02:30:00Z");
        }
    }

    @Test
    void aConflictWithALaterRenewalKeepsItAndTheCacheHasTheFreshVersion() throws Exception {
        try (ScriptedReplica replica = watching(claim(true, "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"))) {
            TestCluster cluster = replica.cluster;
            renewedElsewhereAfterTheRead(replica, "2026-01-01T05:00:00Z");
            List<Told> told = new CopyOnWriteArrayList<>();
            Renewer renewer = renewer(cluster, replica.pods, Instant.parse("2026-01-01T00:30:00Z"),
                    new TtlPolicy(Duration.ofHours(1)), new ApiCallCounter(), told);

            Renewer.Renewal r = renewer.renew(KEY, Duration.ofHours(2));

            assertThat(r.written()).isFalse();
            assertThat(r.expiresAt()).isEqualTo(Instant.parse("2026-01-01T05:00:00Z"));
            assertThat(told).containsExactly(new Told("unchanged", r));
            assertThat(RenewerTest.expiresAt(cluster)).isEqualTo("2026-01-01T05:00:00Z");
            assertThat(replica.pods.get(NAME)).get()
                    .extracting(p -> p.getMetadata().getAnnotations().get(PlaypenKeys.EXPIRES_AT))
                    .as("the fresh read, kept by this replica's cache").isEqualTo("2026-01-01T05:00:00Z");
        }
    }
}
