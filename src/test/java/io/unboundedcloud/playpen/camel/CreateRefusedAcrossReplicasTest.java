package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * Two replicas on one API server: the leader's pod creates are refused, and the follower's answer for the pool (the
 * Service may send {@code kubectl get pool} to either) shows the Degraded condition CreateRefused too, from what the
 * leader publishes on its Lease, and stops showing it once a create succeeds.
 */
class CreateRefusedAcrossReplicasTest {
    static final ObjectMapper M = new ObjectMapper();
    static final String POOL = "/apis/playpen.unbounded-cloud.io/v1alpha1/pools/runner-amd64";
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
        HttpClient http = replica.frontProxy();
        AtomicReference<JsonNode> found = new AtomicReference<>();
        AtomicReference<String> last = new AtomicReference<>();
        try {
            OperatorHarness.awaitTrue(() -> {
                try {
                    HttpResponse<String> r = http.send(OperatorHarness.asUser(HttpRequest.newBuilder(
                            URI.create(replica.url(POOL))).header("Accept", "application/json")
                            .timeout(Duration.ofSeconds(20)).GET(), "alice", "playpen-users").build(),
                            HttpResponse.BodyHandlers.ofString());
                    JsonNode conditions = M.readTree(r.body()).at("/status/conditions");
                    last.set(conditions.toString());
                    for (JsonNode c : conditions) {
                        if ("Degraded".equals(c.path("type").asText()) && reason.equals(c.path("reason").asText())) {
                            found.set(c);
                            return true;
                        }
                    }
                    return false;
                } catch (Exception e) {
                    return false;
                }
            }, Duration.ofSeconds(60), "Degraded " + reason + " in the answer of " + replica.app.leaderElection()
                    .identity());
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; the conditions last shown: " + last.get(), e);
        }
        return found.get();
    }
}
