package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** The pass's steps against the mock API: a replica that loses the Lease in the middle of a pass stops writing. */
class PoolReconcilerTest {
    @Test
    void leadershipLostBetweenThePlanAndTheCreatesCreatesNothing() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            OperatorConfig config = OperatorConfig.parse("--runner-amd64-count=3", "--runner-arm64-count=0");
            PodCache cache = new PodCache(cluster.client, TestCluster.NS,
                    new Candidates(config.runnerLabelSelector())::idleKindKey);
            cache.start();
            try {
                OperatorHarness.awaitTrue(cache::hasSynced, Duration.ofSeconds(10), "cache synced");
                AtomicBoolean leader = new AtomicBoolean(true);
                try (PoolReconciler pool = new PoolReconciler(cluster.client, config, cache,
                        new PodTemplates(config, Map.of()), leader::get, new ApiCallCounter())) {
                    PoolReconciler.Pass pass = pool.plan(pool.assess());
                    assertThat(pass.plan().toCreate()).hasSize(3);
                    leader.set(false);
                    PoolReconciler.Result r = pool.finish(pool.create(pool.delete(pass)));
                    assertThat(r.created()).isZero();
                    assertThat(cluster.pods()).isEmpty();
                    // and the next pass does not even start
                    assertThat(pool.assess()).isNull();
                    leader.set(true);
                    assertThat(pool.reconcile().created()).isEqualTo(3);
                }
            } finally {
                cache.close();
            }
        }
    }
}
