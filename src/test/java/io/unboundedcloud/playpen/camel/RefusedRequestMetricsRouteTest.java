package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * A request refused for its client certificate before any flow took it is counted by its answer, like one a flow
 * refused: in playpen_dealloc_requests_total (and alloc's), and a renewal in playpen_renewals_total.
 */
class RefusedRequestMetricsRouteTest {
    static final String DEALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/deallocs";
    static final String RENEWALS = "/apis/playpen.unbounded-cloud.io/v1alpha1/renewals";
    TestCluster cluster = TestCluster.start();
    OperatorHarness op;

    @AfterEach
    void down() {
        if (op != null) {
            op.close();
        }
        cluster.close();
    }

    /** The sum of the scrape's samples whose name and labels start with {@code series}. */
    double sum(String series) throws Exception {
        String scrape = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                + op.app.managementAddress().getPort() + "/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
        return scrape.lines().filter(l -> l.startsWith(series))
                .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
    }

    static HttpResponse<String> post(HttpClient http, String url) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(url)).header("Idempotency-Key", "k")
                .POST(HttpRequest.BodyPublishers.noBody()).timeout(Duration.ofSeconds(60)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aDeallocAndARenewalRefusedForTheirCertificateAreCountedLikeThoseRefusedForTheirUser() throws Exception {
        op = new OperatorHarness(cluster, "--management-addr=127.0.0.1:0");
        HttpResponse<String> noUser = post(op.frontProxy(), op.url(DEALLOCS));
        HttpResponse<String> noCertificate = post(OperatorHarness.client(null), op.url(DEALLOCS));
        HttpResponse<String> renewalWithoutCertificate = post(OperatorHarness.client(null), op.url(RENEWALS));

        assertThat(noUser.statusCode()).as(noUser.body()).isBetween(400, 499);
        assertThat(noCertificate.statusCode()).as(noCertificate.body()).isEqualTo(403);
        assertThat(renewalWithoutCertificate.statusCode()).isEqualTo(403);
        assertThat(sum("playpen_dealloc_requests_total{")).as("refused deallocs counted").isEqualTo(2.0);
        assertThat(sum("playpen_renewals_total{result=\"forbidden\"}")).as("the refused renewal counted").isEqualTo(1.0);
    }
}
