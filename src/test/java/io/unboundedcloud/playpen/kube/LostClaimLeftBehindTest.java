package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * A running operator takes back a lost claim whose writer died before rolling it back, on its own (no request
 * for the key, no reconcile pass: the interval here is ten minutes), and leaves the claim that stood.
 */
class LostClaimLeftBehindTest {
    private TestCluster cluster;
    private OperatorHarness operator;

    @AfterEach
    void down() {
        if (operator != null) {
            operator.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void aLostClaimLeftByAWriterThatDiedGoesBackToThePoolWithoutARequest() throws Exception {
        cluster = TestCluster.start();
        operator = new OperatorHarness(cluster, "--runner-amd64-count=2", "--reconcile-interval=10m");
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 2
                && cluster.pods().stream().allMatch(p -> operator.app.podCache().get(ManagedPods.name(p)).isPresent()),
                Duration.ofSeconds(60), "the pool's two pods in the operator's cache");
        List<Pod> pods = cluster.pods().stream().sorted(java.util.Comparator.comparing(ManagedPods::name)).toList();
        AllocCommand key = ScriptedReplica.cmd("writer-died");
        // two writers of other replicas: the first claim stands, the second is committed after it and lost; its
        // writer dies before rolling it back
        ClaimWriter others = new ClaimWriter(cluster.client, Clock.systemUTC(), new ApiCallCounter());
        others.claim(pods.get(0), pods.get(0).getMetadata().getResourceVersion(), key);
        Pod current = cluster.client.pods().inNamespace(TestCluster.NS).withName(ManagedPods.name(pods.get(1))).get();
        others.claim(current, current.getMetadata().getResourceVersion(), key);
        OperatorHarness.awaitTrue(() -> operator.app.podCache().claimsOf(key.keyHash()).size() == 2,
                Duration.ofSeconds(60), "the operator's watch judged both claims");
        assertThat(operator.app.podCache().claimOn(ManagedPods.name(pods.get(1))).orElseThrow().standing())
                .isEqualTo(ClaimLedger.Standing.LOST);

        OperatorHarness.awaitTrue(() -> carriers(key).size() == 1, Duration.ofSeconds(60),
                "the lost claim taken back");
        assertThat(carriers(key)).containsExactly(ManagedPods.name(pods.get(0)));
        Pod back = cluster.client.pods().inNamespace(TestCluster.NS).withName(ManagedPods.name(pods.get(1))).get();
        assertThat(ManagedPods.isClaimed(back)).isFalse();
    }

    private List<String> carriers(AllocCommand key) {
        return cluster.pods().stream().filter(p -> key.keyHash().equals(ManagedPods.keyHash(p)))
                .map(ManagedPods::name).toList();
    }
}
