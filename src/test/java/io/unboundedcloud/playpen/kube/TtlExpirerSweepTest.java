package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.TtlPolicy;
import io.unboundedcloud.playpen.support.MutableClock;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The backstop sweep and the timers' bookkeeping: the sweep deletes every expired claim this replica's cache holds,
 * on the leader only, and counts only the deletes that landed, telling the observers how late each one was; a claim
 * released, renewed or gone takes its timer with it.
 */
class TtlExpirerSweepTest {
    /** Claims here are made at this instant and live 2 s unless they carry their own expires-at. */
    private static final String CLAIMED_AT = "2026-01-01T00:00:00Z";

    /** A runner pod on {@code port}, claimed at {@link #CLAIMED_AT}, with {@code annotations} besides. */
    private static PodBuilder claimed(int port, Map<String, String> annotations) {
        return TestCluster.readyRunner("amd64", port, "node-a").editMetadata()
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, Integer.toHexString(port).repeat(16))
                .addToAnnotations(PlaypenKeys.CLAIMED_AT, CLAIMED_AT).addToAnnotations(annotations).endMetadata();
    }

    private static String name(int port) {
        return "playpen-runner-amd64-" + port;
    }

    private static int deletesOf(TestCluster cluster, String name) {
        return cluster.requestCount(k -> k.equals("DELETE /api/v1/namespaces/playpen/pods/" + name));
    }

    interface Body {
        void run(TestCluster cluster, PodCache pods, TtlExpirer ttl, MutableClock clock, AtomicBoolean leading,
                List<Duration> lateness) throws Exception;
    }

    /** A synced cache over the pods {@code setup} creates, and an expirer (not its listener) on a clock set to now. */
    static void withExpirer(Instant now, java.util.function.Consumer<TestCluster> setup, Body body) throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            setup.accept(cluster);
            MutableClock clock = new MutableClock(now);
            PodCache pods = cluster.syncedPodCache();
            AtomicBoolean leading = new AtomicBoolean(true);
            List<Duration> lateness = new CopyOnWriteArrayList<>();
            try (pods; TtlExpirer ttl = new TtlExpirer(pods, new ClaimWriter(cluster.client, clock,
                    new ApiCallCounter()), new TtlPolicy(Duration.ofSeconds(2)), clock, leading::get)) {
                ttl.addObserver((pod, late) -> lateness.add(late));
                body.run(cluster, pods, ttl, clock, leading, lateness);
            }
        }
    }

    @Test
    void theSweepDeletesEveryExpiredClaimAndOnlyThose() throws Exception {
        withExpirer(Instant.parse("2026-01-01T00:00:05Z"), cluster -> {
            cluster.create(claimed(51820, Map.of()));                                       // expired at :02
            cluster.create(claimed(51821, Map.of(PlaypenKeys.EXPIRES_AT, "2026-01-01T00:00:04Z"))); // expired at :04
            cluster.create(claimed(51822, Map.of(PlaypenKeys.EXPIRES_AT, "2026-01-01T00:01:00Z"))); // renewed: alive
            cluster.create(TestCluster.readyRunner("amd64", 51823, "node-a"));              // idle
            // expired by its annotations, but not the operator's pod
            cluster.create(new PodBuilder().withNewMetadata().withName("someone-elses").withNamespace(TestCluster.NS)
                    .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ab".repeat(32))
                    .addToAnnotations(PlaypenKeys.CLAIMED_AT, CLAIMED_AT).endMetadata()
                    .withNewSpec().addNewContainer().withName("c").withImage("busybox").endContainer().endSpec());
        }, (cluster, pods, ttl, clock, leading, lateness) -> {
            leading.set(false);
            assertThat(ttl.sweep()).as("a replica that does not lead deletes nothing").isZero();
            assertThat(cluster.requestCount(k -> k.startsWith("DELETE "))).isZero();

            leading.set(true);
            assertThat(ttl.sweep()).isEqualTo(2);

            assertThat(deletesOf(cluster, name(51820))).isEqualTo(1);
            assertThat(deletesOf(cluster, name(51821))).isEqualTo(1);
            assertThat(cluster.requestCount(k -> k.startsWith("DELETE "))).isEqualTo(2);
            assertThat(cluster.pods()).extracting(ManagedPods::name)
                    .containsExactlyInAnyOrder(name(51822), name(51823), "someone-elses");
            // the cache forgets them at once (a request now must not be handed a deleted pod)
            assertThat(pods.get(name(51820))).isEmpty();
            assertThat(pods.get(name(51821))).isEmpty();
            // how late each was: 3 s after :02 and 1 s after :04
            assertThat(lateness).containsExactlyInAnyOrder(Duration.ofSeconds(3), Duration.ofSeconds(1));
            // nothing left to sweep
            assertThat(ttl.sweep()).isZero();
        });
    }

    @Test
    void aClaimAnotherReplicaDeletedFirstIsNotCountedAsThisSweepsDelete() throws Exception {
        withExpirer(Instant.parse("2026-01-01T00:00:05Z"), cluster -> cluster.create(claimed(51820, Map.of())),
                (cluster, pods, ttl, clock, leading, lateness) -> {
                    // deleted by someone else while this cache still shows it
                    cluster.server.expect().delete().withPath("/api/v1/namespaces/" + TestCluster.NS + "/pods/"
                            + name(51820)).andReturn(404, "{\"kind\":\"Status\",\"apiVersion\":\"v1\","
                                    + "\"status\":\"Failure\",\"reason\":\"NotFound\",\"code\":404}").once();
                    assertThat(ttl.sweep()).isZero();
                    assertThat(lateness).as("no expiry reported for a delete that was not this one").isEmpty();
                    assertThat(pods.get(name(51820))).as("but the cache forgets the pod").isEmpty();
                });
    }

    @Test
    void aClaimReleasedOrRenewedBeforeItsExpiryTakesItsTimerWithIt() throws Exception {
        // the clock stands 300 ms before the claims expire: their timers fire in 300 ms
        withExpirer(Instant.parse("2026-01-01T00:00:01.700Z"), cluster -> {
            cluster.create(claimed(51820, Map.of()));
            cluster.create(claimed(51821, Map.of()));
            cluster.create(claimed(51822, Map.of()));
            cluster.create(claimed(51823, Map.of()));
        }, (cluster, pods, ttl, clock, leading, lateness) -> {
            for (int port = 51820; port <= 51823; port++) {
                ttl.onPodEvent(PodCache.Change.UPDATED, pods.get(name(port)).orElseThrow());
            }
            // released (no claim any more), renewed (a later expires-at), deleted; 51823 is left to expire
            Pod released = new PodBuilder(pods.get(name(51820)).orElseThrow()).editMetadata()
                    .removeFromAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH).endMetadata().build();
            ttl.onPodEvent(PodCache.Change.UPDATED, released);
            Pod renewed = new PodBuilder(pods.get(name(51821)).orElseThrow()).editMetadata()
                    .addToAnnotations(PlaypenKeys.EXPIRES_AT, "2026-01-01T00:01:00Z").endMetadata().build();
            ttl.onPodEvent(PodCache.Change.UPDATED, renewed);
            ttl.onPodEvent(PodCache.Change.DELETED, pods.get(name(51822)).orElseThrow());
            // the clock moves past the first expiry (not the renewed one) while the timers run out
            clock.now = Instant.parse("2026-01-01T00:00:02.500Z");
            OperatorHarness.awaitTrue(() -> deletesOf(cluster, name(51823)) == 1, Duration.ofSeconds(60),
                    "the claim left alone deleted by its timer");
            Thread.sleep(500);
            assertThat(cluster.requestCount(k -> k.startsWith("DELETE "))).as("only that one").isEqualTo(1);
            assertThat(lateness).hasSize(1);
        });
    }
}
