package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReview;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * A kube-apiserver whose trust ConfigMap lists no {@code requestheader-uid-headers} does not vouch for a uid: up
 * to Kubernetes 1.31 its aggregator neither sets nor removes {@code X-Remote-Uid}, so that header is whatever the
 * caller sent. kube-apiserver's own request-header authenticator reads a uid only from the headers the ConfigMap
 * lists; so does the operator, and a forged uid never reaches the SubjectAccessReview.
 */
class UidHeaderRouteTest {
    static final String DEALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/deallocs";
    static TestCluster cluster;
    static OperatorHarness op;

    @BeforeAll
    static void up() throws Exception {
        cluster = TestCluster.start();
        cluster.setTrust(cluster.frontProxyCa.certificatePem(), "[\"front-proxy-client\"]", null);
        op = new OperatorHarness(cluster, "--sar-allowed-ttl=0", "--sar-denied-ttl=0");
    }

    @AfterAll
    static void down() {
        if (op != null) {
            op.close();
        }
        cluster.close();
    }

    @Test
    void aUidTheClusterDoesNotVouchForNeverReachesTheReview() throws Exception {
        cluster.sarRequests.clear();
        HttpRequest req = HttpRequest.newBuilder(URI.create(op.url(DEALLOCS))).header("Idempotency-Key", "k")
                .header("X-Remote-User", "mallory").header("X-Remote-Uid", "uid-of-the-admin")
                .header("X-Remote-Group", "playpen-users")
                .POST(HttpRequest.BodyPublishers.noBody()).build();
        HttpResponse<String> r = op.frontProxy().send(req, HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(204);
        assertThat(cluster.sarRequests).isNotEmpty();
        SubjectAccessReview sar = cluster.sarRequests.get(cluster.sarRequests.size() - 1);
        assertThat(sar.getSpec().getUser()).isEqualTo("mallory");
        assertThat(sar.getSpec().getUid()).as("uid in the SubjectAccessReview").isNullOrEmpty();
    }
}
