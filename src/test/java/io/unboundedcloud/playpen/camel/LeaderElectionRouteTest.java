package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** Two replicas on one API: one Lease holder does the pool work; when it stops the other takes over. */
class LeaderElectionRouteTest {
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
        cluster.close();
    }

    static String[] flags(int amd64) {
        return flags(amd64, "3s", "2s");
    }

    static String[] flags(int amd64, String leaseDuration, String renewDeadline) {
        return new String[] {"--leader-elect=true", "--leader-election-lease-duration=" + leaseDuration,
                "--leader-election-renew-deadline=" + renewDeadline, "--leader-election-retry-period=500ms",
                "--runner-amd64-count=" + amd64, "--reconcile-interval=10m"};
    }

    @Test
    void onlyTheLeaseHolderCreatesPodsAndTheOtherTakesOver() throws Exception {
        cluster = TestCluster.start();
        // a renew deadline a loaded 2-core machine cannot miss by accident (a stall of that length would hand the
        // Lease over mid-test); the takeover below is quick anyway because a stopping leader releases the Lease
        a = new OperatorHarness(cluster, flags(2, "15s", "10s"));
        b = new OperatorHarness(cluster, flags(2, "15s", "10s"));
        OperatorHarness.awaitTrue(() -> a.app.leaderElection().isLeader() || b.app.leaderElection().isLeader(),
                Duration.ofSeconds(60), "a leader");
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 2, Duration.ofSeconds(60), "pool filled");
        Thread.sleep(1500);
        assertThat(a.app.leaderElection().isLeader() ^ b.app.leaderElection().isLeader()).isTrue();
        OperatorHarness leader = a.app.leaderElection().isLeader() ? a : b;
        OperatorHarness follower = leader == a ? b : a;
        Lease lease = cluster.client.leases().inNamespace("playpen").withName("playpen-operator").get();
        assertThat(lease.getSpec().getHolderIdentity()).isEqualTo(leader.app.leaderElection().identity());
        assertThat(follower.app.poolReconciler().passes()).isZero();
        assertThat(follower.app.camelContext().getRouteController().getRouteStatus("pool-reconcile").isStarted()).isFalse();
        assertThat(cluster.pods()).hasSize(2);
        // both replicas serve HTTP
        for (OperatorHarness h : new OperatorHarness[] {a, b}) {
            assertThat(OperatorHarness.client(null).send(java.net.http.HttpRequest.newBuilder(
                    java.net.URI.create(h.url("/readyz"))).build(), java.net.http.HttpResponse.BodyHandlers.ofString())
                    .statusCode()).isEqualTo(204);
        }
        // stop the leader; the follower takes the Lease and continues the pool work
        leader.close();
        if (leader == a) {
            a = null;
        } else {
            b = null;
        }
        OperatorHarness.awaitTrue(() -> follower.app.leaderElection().isLeader(), Duration.ofSeconds(60), "takeover");
        cluster.client.pods().inNamespace("playpen").withName("playpen-runner-amd64-51820").delete();
        OperatorHarness.awaitTrue(() -> cluster.pods().size() == 2 && follower.app.poolReconciler().passes() > 0,
                Duration.ofSeconds(60), "new leader refills");
    }

    /**
     * A claim that lost, left behind by a writer that died, is judged lost only by the replicas whose watch
     * delivered its commit; a leader that started later lists it undecided and cannot tell it from the claim that
     * stood. So every replica runs the sweep of lost claims (each rolls back the claims its own watch saw lose),
     * the follower too, while the TTL expiry stays with the leader.
     */
    @Test
    void theFollowerSweepsLostClaimsToo() throws Exception {
        cluster = TestCluster.start();
        a = new OperatorHarness(cluster, flags(0, "15s", "10s"));
        b = new OperatorHarness(cluster, flags(0, "15s", "10s"));
        OperatorHarness.awaitTrue(() -> a.app.leaderElection().isLeader() || b.app.leaderElection().isLeader(),
                Duration.ofSeconds(60), "a leader");
        OperatorHarness leader = a.app.leaderElection().isLeader() ? a : b;
        OperatorHarness follower = leader == a ? b : a;
        assertThat(follower.app.leaderElection().isLeader()).isFalse();
        for (OperatorHarness h : new OperatorHarness[] {leader, follower}) {
            for (String step : new String[] {"lost-claims-sweep", "lost-claims-beside-settled"}) {
                org.apache.camel.Route sweeps = h.app.camelContext().getRoutes().stream()
                        .filter(r -> !r.filter(step).isEmpty()).findFirst().orElseThrow();
                assertThat(h.app.camelContext().getRouteController().getRouteStatus(sweeps.getRouteId()).isStarted())
                        .as("%s runs on the %s", step, h == leader ? "leader" : "follower").isTrue();
            }
        }
        // the claims a replica saw lose go back within seconds, whatever the reconcile interval (10 s here)
        assertThat(follower.app.camelContext().getRoute("lost-claims").getEndpoint().getEndpointUri())
                .contains("period=1000");
        assertThat(follower.app.camelContext().getRouteController().getRouteStatus("ttl-expiry").isStarted())
                .isFalse();
    }

    @Test
    void aReplicaThatLostTheLeaseCompetesAgain() throws Exception {
        cluster = TestCluster.start();
        a = new OperatorHarness(cluster, flags(0));
        OperatorHarness.awaitTrue(() -> a.app.leaderElection().isLeader(), Duration.ofSeconds(60), "leader");
        // another holder takes the Lease (as after an API server blip longer than the renew deadline)
        OperatorHarness.awaitTrue(() -> {
            try {
                cluster.client.leases().inNamespace("playpen").withName("playpen-operator").edit(l -> {
                    l.getSpec().setHolderIdentity("intruder");
                    l.getSpec().setRenewTime(java.time.ZonedDateTime.now(java.time.ZoneOffset.UTC));
                    l.getSpec().setAcquireTime(java.time.ZonedDateTime.now(java.time.ZoneOffset.UTC));
                    return l;
                });
                return true;
            } catch (io.fabric8.kubernetes.client.KubernetesClientException e) {
                return false; // the leader renewed in between: try again
            }
        }, Duration.ofSeconds(60), "lease taken over");
        OperatorHarness.awaitTrue(() -> !a.app.leaderElection().isLeader(), Duration.ofSeconds(60), "leadership lost");
        // the intruder never renews: once its lease expires this replica must take it back
        OperatorHarness.awaitTrue(() -> a.app.leaderElection().isLeader(), Duration.ofSeconds(20), "leadership regained");
        assertThat(cluster.client.leases().inNamespace("playpen").withName("playpen-operator").get().getSpec()
                .getHolderIdentity()).isEqualTo(a.app.leaderElection().identity());
        OperatorHarness.awaitTrue(() -> a.app.camelContext().getRouteController().getRouteStatus("pool-reconcile").isStarted(),
                Duration.ofSeconds(60), "leader routes running again");
    }
}
