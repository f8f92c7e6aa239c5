package io.unboundedcloud.playpen.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The chaos checker's rule for keys on a pod: a pod carries one key in its life, unless the claim was taken back
 * off it (a claim that lost to an earlier claim of its key is rolled back, never answered); then another key may
 * claim it, and an answer naming the pod for the key taken back is the violation instead.
 */
class ClusterHistoryTest {
    static final String A = "aa".repeat(32);
    static final String B = "bb".repeat(32);
    static final String C = "cc".repeat(32);
    static final String D = "dd".repeat(32);
    static final String P0 = "playpen-runner-amd64-51820";
    static final String P1 = "playpen-runner-amd64-51821";

    @Test
    void aPodMayCarryAnotherKeyOnlyAfterItsClaimWasTakenBack() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.create(readyCondition(TestCluster.readyRunner("amd64", 51820, "node-a")));
            cluster.create(readyCondition(TestCluster.readyRunner("amd64", 51821, "node-a")));
            try (ClusterHistory h = new ClusterHistory(URI.create(cluster.client.getMasterUrl().toString()),
                    TestCluster.NS, Map.of(), Duration.ofHours(1))) {
                long start = System.nanoTime();
                claim(cluster, P0, A);
                claim(cluster, P0, null); // rolled back
                claim(cluster, P0, B);
                claim(cluster, P1, C);
                claim(cluster, P1, D); // over another key's claim
                OperatorHarness.awaitTrue(() -> h.podsThatCarried(D).contains(P1), Duration.ofSeconds(60),
                        "the checker saw every claim");
                assertThat(h.violations()).singleElement().asString().startsWith("pod " + P1 + " carried two keys");
                assertThat(h.takenBackAfter(P0, A, start)).isTrue();
                assertThat(h.takenBackAfter(P0, A, System.nanoTime())).as("taken back before").isFalse();
                assertThat(h.takenBackAfter(P0, B, start)).isFalse();
                assertThat(h.takenBackAfter(P1, C, start)).as("replaced, not taken back").isFalse();
            }
        }
    }

    @Test
    void aClaimTakenBackAndThenMadeAgainOnTheSamePodStands() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.create(readyCondition(TestCluster.readyRunner("amd64", 51820, "node-a")));
            try (ClusterHistory h = new ClusterHistory(URI.create(cluster.client.getMasterUrl().toString()),
                    TestCluster.NS, Map.of(), Duration.ofHours(1))) {
                long start = System.nanoTime();
                claim(cluster, P0, A);
                claim(cluster, P0, null); // lost to an earlier claim of A elsewhere, rolled back
                OperatorHarness.awaitTrue(() -> h.takenBackAfter(P0, A, start), Duration.ofSeconds(60),
                        "the checker saw the claim taken back");
                claim(cluster, P0, A); // that earlier claim went too: A claims the pod again, and this claim stands
                OperatorHarness.awaitTrue(() -> !h.takenBackAfter(P0, A, start), Duration.ofSeconds(60),
                        "an answer naming the pod for A, sent before the rollback, names the claim that stands");
                assertThat(h.violations()).isEmpty();
                claim(cluster, P0, null); // taken back again: now an answer naming the pod for A is wrong
                OperatorHarness.awaitTrue(() -> h.takenBackAfter(P0, A, start), Duration.ofSeconds(60),
                        "taken back after it was claimed again");
            }
        }
    }

    @Test
    void aPoolAboveItsTargetForAMomentIsNoViolation() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            cluster.create(readyCondition(TestCluster.readyRunner("amd64", 51820, "node-a")));
            try (ClusterHistory h = new ClusterHistory(URI.create(cluster.client.getMasterUrl().toString()),
                    TestCluster.NS, Map.of(), Duration.ofHours(1))) {
                h.targets(Map.of("runner/amd64", 1), 0);
                // a claim taken back after the pool replaced its pod: two idle pods until the next pass deletes one
                cluster.create(readyCondition(TestCluster.readyRunner("amd64", 51821, "node-a")));
                OperatorHarness.awaitTrue(() -> h.readyIdle("runner/amd64")[0] == 2, Duration.ofSeconds(60),
                        "the checker saw both pods idle");
                cluster.client.pods().inNamespace(TestCluster.NS).withName(P1).delete();
                OperatorHarness.awaitTrue(() -> h.readyIdle("runner/amd64")[0] == 1, Duration.ofSeconds(60),
                        "the checker saw the surplus pod go");
                assertThat(h.violations()).isEmpty();
                assertThat(h.longestOverTargetMs()).isLessThan(ClusterHistory.OVER_TARGET_GRACE.toMillis());
            }
        }
    }

    /** A history of the cluster's pods, with no pool targets. */
    static ClusterHistory history(TestCluster cluster) {
        return new ClusterHistory(URI.create(cluster.client.getMasterUrl().toString()), TestCluster.NS, Map.of(),
                Duration.ofHours(1));
    }

    @Test
    void aHostPortHeldByTwoLivePodsOfANodeIsAViolation() throws Exception {
        try (TestCluster cluster = TestCluster.start(); ClusterHistory h = history(cluster)) {
            cluster.create(readyCondition(TestCluster.readyRunner("amd64", 51820, "node-a")));
            cluster.create(readyCondition(TestCluster.readyRunner("amd64", 51820, "node-a")).editMetadata()
                    .withName("playpen-runner-amd64-twin").endMetadata());
            OperatorHarness.awaitTrue(() -> h.events() >= 2, Duration.ofSeconds(60), "the checker saw both pods");
            assertThat(h.violations()).isNotEmpty().allSatisfy(v -> assertThat(v)
                    .startsWith("hostPort 51820 on node-a held by two pods: playpen-runner-amd64-"));
        }
    }

    @Test
    void aKeyOnTwoPodsLongerThanTheGraceIsAViolation() throws Exception {
        try (TestCluster cluster = TestCluster.start(); ClusterHistory h = history(cluster)) {
            cluster.create(readyCondition(TestCluster.readyRunner("amd64", 51820, "node-a")));
            cluster.create(readyCondition(TestCluster.readyRunner("amd64", 51821, "node-a")));
            claim(cluster, P0, A);
            claim(cluster, P1, A);
            OperatorHarness.awaitTrue(() -> h.podsThatCarried(A).size() == 2, Duration.ofSeconds(60),
                    "the checker saw both claims");
            assertThat(h.violations()).as("a claim that lost, for a moment").isEmpty();
            h.graces(Duration.ofNanos(ClusterHistory.CLAIM_GRACE_NANOS), Duration.ZERO);
            assertThat(h.violations()).singleElement().asString().startsWith("key [aaaaaaaaaaaa] on two pods");
        }
    }

    @Test
    void aClaimOfAPodNotRunningAndReadyIsAViolation() throws Exception {
        try (TestCluster cluster = TestCluster.start(); ClusterHistory h = history(cluster)) {
            h.graces(Duration.ZERO, ClusterHistory.DOUBLE_GRACE);
            cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a")); // no Ready condition
            OperatorHarness.awaitTrue(() -> h.events() > 0, Duration.ofSeconds(60), "the checker saw the pod");
            claim(cluster, P0, A);
            OperatorHarness.awaitTrue(() -> h.podsThatCarried(A).contains(P0), Duration.ofSeconds(60),
                    "the checker saw the claim");
            assertThat(h.violations()).singleElement().asString()
                    .startsWith("pod " + P0 + " was claimed although it had not been Running and Ready");
        }
    }

    @Test
    void aClaimOfAnOlderTemplateWhileACurrentPodWasReadyIsAStaleAnswer() throws Exception {
        try (TestCluster cluster = TestCluster.start(); ClusterHistory h = history(cluster)) {
            h.graces(Duration.ZERO, ClusterHistory.DOUBLE_GRACE);
            h.currentTemplate("runner/amd64", "new");
            cluster.create(template(readyCondition(TestCluster.readyRunner("amd64", 51820, "node-a")), "old"));
            cluster.create(template(readyCondition(TestCluster.readyRunner("amd64", 51821, "node-a")), "new"));
            OperatorHarness.awaitTrue(() -> h.readyIdle("runner/amd64")[1] == 1, Duration.ofSeconds(60),
                    "the checker saw the current pod ready");
            claim(cluster, P0, A);
            OperatorHarness.awaitTrue(() -> h.podsThatCarried(A).contains(P0), Duration.ofSeconds(60),
                    "the checker saw the claim");
            assertThat(h.violations()).singleElement().asString().startsWith("stale answer: pod " + P0
                    + " (template old) was claimed while current pod " + P1 + " had been ready and idle");
        }
    }

    static PodBuilder template(PodBuilder pod, String hash) {
        return pod.editMetadata().addToLabels(PlaypenKeys.TEMPLATE_HASH, hash).endMetadata();
    }

    static PodBuilder readyCondition(PodBuilder pod) {
        return pod.editStatus().addNewCondition().withType("Ready").withStatus("True").endCondition().endStatus();
    }

    /** Sets (or, with null, removes) the pod's claim of {@code keyHash}. */
    static void claim(TestCluster cluster, String pod, String keyHash) {
        cluster.client.pods().inNamespace(TestCluster.NS).withName(pod).edit(p -> {
            PodBuilder b = new PodBuilder(p);
            if (keyHash == null) {
                b.editMetadata().removeFromAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH).endMetadata();
            } else {
                b.editMetadata().addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, keyHash).endMetadata();
            }
            return b.build();
        });
    }
}
