package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.TtlPolicy;
import io.unboundedcloud.playpen.support.MutableClock;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * A renewal answered 200 tells its caller the allocation stands until the expiry it names: the claim's writer may
 * no longer take it back afterwards (as it does when the alloc's own client left before its answer), just as it
 * may not after a replay handed the claim to another request.
 */
class RenewalHoldsTest {
    static final String KEY = "cd".repeat(32);
    static final String NAME = "playpen-runner-amd64-51820";

    /** ttl 2h moves the expiry (a write); 10m asks for less than is left (nothing to write). */
    @ParameterizedTest
    @ValueSource(strings = {"PT2H", "PT10M"})
    void aClaimRenewedIsNoLongerTakenBackByItsWriter(String ttl) throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
            PodCache pods = new PodCache(cluster.client, TestCluster.NS, p -> null);
            pods.start();
            try {
                OperatorHarness.awaitTrue(() -> pods.get(NAME).isPresent(), Duration.ofSeconds(60), "cache");
                // the claim, committed while this replica's watch runs: it stands
                Pod claim = cluster.client.pods().inNamespace(TestCluster.NS).withName(NAME).edit(p -> new PodBuilder(p)
                        .editMetadata().addToAnnotations(Map.of(PlaypenKeys.IDEMPOTENCY_KEY_HASH, KEY,
                                PlaypenKeys.CLAIMED_AT, "2026-01-01T00:00:00Z", PlaypenKeys.EXPIRES_AT,
                                "2026-01-01T01:00:00Z"))
                        .endMetadata().build());
                OperatorHarness.awaitTrue(() -> pods.claimsOf(KEY).stream().anyMatch(ClaimLedger.Claim::stands),
                        Duration.ofSeconds(60), "the claim judged");
                MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:10:00Z"));
                Renewer renewer = new Renewer(cluster.client, pods, new TtlPolicy(Duration.ofHours(1)), clock,
                        new ApiCallCounter());

                Renewer.Renewal renewed = renewer.renew(KEY, Duration.parse(ttl));
                assertThat(renewed.expiresAt()).isAfter(clock.now);

                // the alloc's client left before its answer: its writer takes the claim back, if it still may
                ClaimWriter.Rollback undone = new ClaimWriter(cluster.client, clock, new ApiCallCounter())
                        .rollback(claim, KEY);
                assertThat(undone).isEqualTo(ClaimWriter.Rollback.SETTLED);
                Pod now = cluster.client.pods().inNamespace(TestCluster.NS).withName(NAME).get();
                assertThat(ManagedPods.keyHash(now)).isEqualTo(KEY);
                assertThat(TtlPolicy.parse(now.getMetadata().getAnnotations().get(PlaypenKeys.EXPIRES_AT)))
                        .contains(renewed.expiresAt());
            } finally {
                pods.close();
            }
        }
    }
}
