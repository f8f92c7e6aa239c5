package io.unboundedcloud.playpen.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The chaos suite's verdicts: whatever went wrong is a violation of some row of the report, and a scenario that
 * checked nothing does not read as one that found nothing wrong.
 */
class ChaosVerdictsTest {
    static final String P1 = "playpen-runner-amd64-51821";

    /** A history on {@code cluster} that has seen one violation: a pod carried two keys. */
    static ClusterHistory historyWithAViolation(TestCluster cluster) throws InterruptedException {
        cluster.create(ClusterHistoryTest.readyCondition(TestCluster.readyRunner("amd64", 51821, "node-a")));
        ClusterHistory h = new ClusterHistory(URI.create(cluster.client.getMasterUrl().toString()), TestCluster.NS,
                Map.of(), Duration.ofHours(1));
        ClusterHistoryTest.claim(cluster, P1, ClusterHistoryTest.C);
        ClusterHistoryTest.claim(cluster, P1, ClusterHistoryTest.D);
        OperatorHarness.awaitTrue(() -> !h.violations().isEmpty(), Duration.ofSeconds(60),
                "the checker saw the pod carry two keys");
        return h;
    }

    @Test
    void theLaggingReplicaScenarioReportsTheClusterHistorysViolations() throws Exception {
        try (TestCluster cluster = TestCluster.start(); ClusterHistory h = historyWithAViolation(cluster)) {
            ChaosSuite suite = new ChaosSuite(null, null, h, 1);
            assertThat(new LaggingReplicaScenario(suite).verdict()).singleElement().asString()
                    .startsWith("pod " + P1 + " carried two keys");
            assertThat(suite.afterTheLastScenario()).as("reported once").isEmpty();
        }
    }

    @Test
    void historyViolationsNoScenarioCollectedAreARowOfTheirOwn() throws Exception {
        try (TestCluster cluster = TestCluster.start(); ClusterHistory h = historyWithAViolation(cluster)) {
            ChaosSuite suite = new ChaosSuite(null, null, h, 1);
            assertThat(suite.afterTheLastScenario()).get().satisfies(r -> assertThat(r.violations()).singleElement()
                    .asString().startsWith("pod " + P1 + " carried two keys"));
            assertThat(suite.afterTheLastScenario()).as("reported once").isEmpty();
        }
    }

    @Test
    void aReplicaNotReadyAtStartIsAViolation() throws Exception {
        try (TestCluster cluster = TestCluster.start(); ClusterHistory h = new ClusterHistory(
                URI.create(cluster.client.getMasterUrl().toString()), TestCluster.NS, Map.of(), Duration.ofHours(1))) {
            ChaosSuite suite = new ChaosSuite(null, null, h, 1);
            assertThat(suite.startup()).as("every replica ready at once").isEmpty();
            suite.startupNotes.add("timed out after PT2M30S waiting for replica 1 ready: restarted once");
            assertThat(suite.startup()).get().satisfies(r -> assertThat(r.violations()).singleElement().asString()
                    .contains("replica 1 ready: restarted once"));
        }
    }

    @Test
    void aFaultNeverInjectedTestedNothing() {
        assertThat(ChaosSuite.faultVerdict(ChaosProxy.Fault.WATCH_GONE, 0)).singleElement().asString()
                .contains("WATCH_GONE was never injected");
        assertThat(ChaosSuite.faultVerdict(ChaosProxy.Fault.WATCH_GONE, 1)).isEmpty();
    }

    @Test
    void aChurnWithoutAnEvictionTestedNoRefill() {
        assertThat(PoolChurnScenario.evictionVerdict(0)).singleElement().asString().contains("no pod was evicted");
        assertThat(PoolChurnScenario.evictionVerdict(3)).isEmpty();
    }

    @Test
    void aPodListTheApiServerRefusedIsACheckerFailureNotAnEmptyList() throws Exception {
        assertThat(ChaosSuite.podItems(200, "{\"kind\":\"PodList\",\"items\":[{},{}]}")).hasSize(2);
        assertThatThrownBy(() -> ChaosSuite.podItems(503, "{\"kind\":\"Status\",\"code\":503}"))
                .isInstanceOf(java.io.IOException.class).hasMessageContaining("503");
    }
}
