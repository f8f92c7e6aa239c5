package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.TtlPolicy;
import io.unboundedcloud.playpen.support.MutableClock;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** Renewals against the mock API server: racing renewals end with the later expiry; expired claims are 410. */
class RenewerTest {
    static final String KEY = "ab".repeat(32);
    static final String NAME = "playpen-runner-amd64-51820";

    static Pod claimed(TestCluster cluster, String claimedAt, String expiresAt) {
        return cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a").editMetadata()
                .addToAnnotations(Map.of(PlaypenKeys.IDEMPOTENCY_KEY_HASH, KEY, PlaypenKeys.CLAIMED_AT, claimedAt,
                        PlaypenKeys.EXPIRES_AT, expiresAt)).endMetadata());
    }

    static String expiresAt(TestCluster cluster) {
        return cluster.client.pods().inNamespace("playpen").withName(NAME).get().getMetadata().getAnnotations()
                .get(PlaypenKeys.EXPIRES_AT);
    }

    @Test
    void racingRenewalsEndWithTheLaterExpiryAndNoneIsLost() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            claimed(cluster, "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z");
            PodCache pods = new PodCache(cluster.client, TestCluster.NS, p -> null);
            pods.start();
            OperatorHarness.awaitTrue(() -> pods.byKeyHash(KEY).size() == 1, Duration.ofSeconds(60), "cache");
            MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:10:00Z"));
            Renewer renewer = new Renewer(cluster.client, pods, new TtlPolicy(Duration.ofHours(1)), clock,
                    new ApiCallCounter());
            ExecutorService pool = Executors.newFixedThreadPool(6);
            try {
                // rounds of six renewals released at once, asking for 2h..7h: every round must end with the latest
                for (int round = 0; round < 5; round++) {
                    clock.now = Instant.parse("2026-01-01T00:10:00Z").plus(Duration.ofHours(round));
                    CyclicBarrier start = new CyclicBarrier(6);
                    List<Future<Renewer.Renewal>> results = new ArrayList<>();
                    for (int i = 0; i < 6; i++) {
                        Duration ttl = Duration.ofHours(2 + i);
                        results.add(pool.submit(() -> {
                            start.await();
                            return renewer.renew(KEY, ttl);
                        }));
                    }
                    for (Future<Renewer.Renewal> f : results) {
                        f.get();
                    }
                    assertThat(expiresAt(cluster)).as("round %d", round)
                            .isEqualTo(clock.now.plus(Duration.ofHours(7)).toString());
                }
            } finally {
                pool.shutdownNow();
                pods.close();
            }
        }
    }

    @Test
    void aStormOfIdenticalRenewalsWritesOnce() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            claimed(cluster, "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z");
            PodCache pods = new PodCache(cluster.client, TestCluster.NS, p -> null);
            pods.start();
            OperatorHarness.awaitTrue(() -> pods.byKeyHash(KEY).size() == 1, Duration.ofSeconds(60), "cache");
            MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:10:00.250Z"));
            Renewer renewer = new Renewer(cluster.client, pods, new TtlPolicy(Duration.ofHours(1)), clock,
                    new ApiCallCounter());
            ExecutorService pool = Executors.newFixedThreadPool(8);
            try {
                int before = cluster.requestCount(k -> k.startsWith("PATCH "));
                List<Future<Renewer.Renewal>> results = new ArrayList<>();
                for (int i = 0; i < 20; i++) {
                    results.add(pool.submit(() -> renewer.renew(KEY, Duration.ofHours(3))));
                }
                int written = 0;
                for (Future<Renewer.Renewal> f : results) {
                    assertThat(f.get().expiresAt()).isEqualTo(Instant.parse("2026-01-01T03:10:00Z"));
                    written += f.get().written() ? 1 : 0;
                }
                // one successful write; racers' conditional writes met it (409) and found nothing left to do, later
                // ones see it in the cache and write nothing: at most one write attempt per request in flight. The
                // claim predates this replica's watch, so it is settled first: one more write, once
                assertThat(expiresAt(cluster)).isEqualTo("2026-01-01T03:10:00Z");
                assertThat(written).isEqualTo(1);
                assertThat(cluster.pods().get(0).getMetadata().getAnnotations())
                        .containsEntry(PlaypenKeys.CLAIM_SETTLED, "true");
                assertThat(cluster.requestCount(k -> k.startsWith("PATCH "))).isLessThanOrEqualTo(before + 8 + 1);
            } finally {
                pool.shutdownNow();
                pods.close();
            }
        }
    }

    /**
     * Another replica renewed the claim to 05:00 and this replica's watch has not delivered that yet: the renewal
     * reads the claim from the API server and waits for its watch to get there, then decides on 05:00, which stays.
     */
    @Test
    void aStaleCacheDoesNotTurnARenewalIntoALostUpdate() throws Exception {
        try (ScriptedReplica replica = RenewerOutcomesTest.watching(
                RenewerOutcomesTest.claim(true, "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"))) {
            TestCluster cluster = replica.cluster;
            replica.watch.hold();
            cluster.client.pods().inNamespace("playpen").withName(NAME).edit(p -> new PodBuilder(p).editMetadata()
                    .addToAnnotations(PlaypenKeys.EXPIRES_AT, "2026-01-01T05:00:00Z").endMetadata().build());
            int before = cluster.requestCount(k -> k.startsWith("PATCH "));
            MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:30:00Z"));
            Renewer renewer = new Renewer(cluster.client, replica.pods, new TtlPolicy(Duration.ofHours(1)), clock,
                    new ApiCallCounter());

            java.util.concurrent.CompletableFuture<Renewer.Renewal> renewal = ScriptedReplica.waitingForTheWatch(
                    () -> renewer.renew(KEY, Duration.ofHours(2)));
            assertThat(replica.watch.held()).as("the other replica's renewal, not delivered yet").hasSize(1);
            replica.watch.release();
            Renewer.Renewal r = renewal.join();

            // 05:00 stays, and the answer says so
            assertThat(expiresAt(cluster)).isEqualTo("2026-01-01T05:00:00Z");
            assertThat(r.expiresAt()).isEqualTo(Instant.parse("2026-01-01T05:00:00Z"));
            assertThat(r.written()).isFalse();
            assertThat(cluster.requestCount(k -> k.startsWith("PATCH "))).isEqualTo(before);
        }
    }

    /** A standing claim past its expiry, not settled: nothing is written, not even the settle a renewal writes. */
    @Test
    void anExpiredClaimIs410AndNothingIsWritten() throws Exception {
        try (ScriptedReplica replica = RenewerOutcomesTest.watching(
                RenewerOutcomesTest.claim(false, "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"))) {
            TestCluster cluster = replica.cluster;
            MutableClock clock = new MutableClock(Instant.parse("2026-01-01T01:00:00Z"));
            Renewer renewer = new Renewer(cluster.client, replica.pods, new TtlPolicy(Duration.ofHours(1)), clock,
                    new ApiCallCounter());
            int before = cluster.requestCount(k -> k.startsWith("PATCH "));
            assertThatThrownBy(() -> renewer.renew(KEY, Duration.ofHours(1))).isInstanceOf(ApiException.class)
                    .satisfies(e -> assertThat(((ApiException) e).code()).isEqualTo(410));
            assertThat(cluster.requestCount(k -> k.startsWith("PATCH "))).isEqualTo(before);
            assertThat(expiresAt(cluster)).isEqualTo("2026-01-01T01:00:00Z");
            assertThat(cluster.pods().get(0).getMetadata().getAnnotations()).doesNotContainKey(PlaypenKeys.CLAIM_SETTLED);
        }
    }
}
