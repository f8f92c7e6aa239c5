package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;

import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * Two replicas on one API server: the leader's pod creates are refused, and the follower's answer for the pool (the
 * Service may send {@code kubectl get pool} to either) shows the Degraded condition CreateRefused too, from what the
 * leader publishes on its Lease, and stops showing it once a create succeeds.
 */
class CreateRefusedAcrossReplicasTest {
    static final String POST_PODS = "POST /api/v1/namespaces/playpen/pods";
    TestCluster cluster;
    OperatorHarness a;
    OperatorHarness b;

    @AfterEach
    void down() {
        if (a != null) {
            a.close();
        }
        if (b != null) {
            b.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void aFollowersAnswerShowsTheLeadersRefusedCreatesUntilOneSucceeds() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        cluster.forbidden = POST_PODS::equals;
        // a renew deadline a loaded machine cannot miss by accident: the leader must stay the leader
        String[] flags = {"--leader-elect=true", "--leader-election-lease-duration=15s",
                "--leader-election-renew-deadline=10s", "--leader-election-retry-period=500ms",
                "--runner-amd64-count=1", "--runner-arm64-count=0", "--reconcile-interval=10m"};
        a = new OperatorHarness(cluster, flags);
        b = new OperatorHarness(cluster, flags);
        OperatorHarness.awaitTrue(() -> a.app.leaderElection().isLeader() || b.app.leaderElection().isLeader(),
                Duration.ofSeconds(60), "a leader");
        OperatorHarness leader = a.app.leaderElection().isLeader() ? a : b;
        OperatorHarness follower = leader == a ? b : a;
        OperatorHarness.awaitTrue(() -> cluster.requestCount(POST_PODS::equals) > 0, Duration.ofSeconds(60),
                "a pod create refused");

        JsonNode shown = awaitDegraded(follower, "CreateRefused");
        assertThat(follower.app.leaderElection().isLeader()).as("answered by the follower").isFalse();
        assertThat(shown.path("status").asText()).isEqualTo("True");
        assertThat(shown.path("message").asText()).contains("of pool runner-amd64", "HTTP 403",
                "forbidden by the test's RBAC", "ResourceQuota", "admission webhooks",
                leader.app.leaderElection().identity());

        cluster.forbidden = key -> false;
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 1, Duration.ofSeconds(60),
                "the pod created once the refusals end");
        awaitDegraded(follower, "Healthy");
        assertThat(follower.app.leaderElection().isLeader()).as("answered by the follower").isFalse();
    }

    /** The Degraded condition of runner-amd64 in {@code replica}'s answer, once its reason is {@code reason}. */
    static JsonNode awaitDegraded(OperatorHarness replica, String reason) throws Exception {
        return PoolsRouteTest.awaitCondition(replica, replica.frontProxy(), "runner-amd64", "Degraded", reason);
    }
}
