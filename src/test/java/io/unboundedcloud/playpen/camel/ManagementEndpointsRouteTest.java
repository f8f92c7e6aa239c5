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

/** The camel-observability-services paths on the management listener: /observe/health[/ready|/live], /observe/metrics. */
class ManagementEndpointsRouteTest {
    TestCluster cluster;
    OperatorHarness op;
    int port;
    final HttpClient http = HttpClient.newHttpClient();

    @AfterEach
    void down() {
        op.close();
        cluster.close();
    }

    HttpResponse<String> send(String method, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .method(method, HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void observePathsFollowReadinessAndServeTheSameMetrics() throws Exception {
        cluster = TestCluster.start();
        op = new OperatorHarness(cluster, "--management-addr=127.0.0.1:0");
        port = op.app.managementAddress().getPort();

        HttpResponse<String> health = send("GET", "/observe/health");
        assertThat(health.statusCode()).isEqualTo(200);
        assertThat(health.body()).isEqualTo("{\"status\":\"UP\"}");
        assertThat(health.headers().firstValue("Content-Type")).contains("application/json");
        assertThat(send("GET", "/observe/health/ready").statusCode()).isEqualTo(200);
        assertThat(send("GET", "/observe/health/live").statusCode()).isEqualTo(200);
        HttpResponse<String> metrics = send("GET", "/observe/metrics");
        assertThat(metrics.statusCode()).isEqualTo(200);
        assertThat(metrics.headers().firstValue("Content-Type").orElse("")).startsWith("text/plain; version=0.0.4");
        assertThat(metrics.body()).contains("playpen_ready 1.0").contains("playpen_trust_bundle_valid 1.0")
                .contains("playpen_leader ");
        assertThat(send("GET", "/observe/health/other").statusCode()).isEqualTo(404);
        HttpResponse<String> post = send("POST", "/observe/health");
        assertThat(post.statusCode()).isEqualTo(405);
        assertThat(post.headers().firstValue("Allow")).contains("GET, HEAD");
        HttpResponse<String> head = send("HEAD", "/observe/health");
        assertThat(head.statusCode()).isEqualTo(200);
        assertThat(head.body()).isEmpty();

        // no trust bundle: not ready, and every observer sees it
        cluster.client.configMaps().inNamespace("kube-system").withName("extension-apiserver-authentication").delete();
        OperatorHarness.awaitTrue(() -> {
            try {
                return send("GET", "/observe/health").statusCode() == 503;
            } catch (Exception e) {
                return false;
            }
        }, Duration.ofSeconds(60), "readiness false after the trust bundle is deleted");
        assertThat(send("GET", "/observe/health").body()).isEqualTo("{\"status\":\"DOWN\"}");
        assertThat(send("GET", "/observe/health/ready").statusCode()).isEqualTo(503);
        assertThat(send("GET", "/observe/health/live").statusCode()).as("alive while not ready").isEqualTo(200);
        String scrape = send("GET", "/metrics").body();
        assertThat(scrape).contains("playpen_ready 0.0").contains("playpen_trust_bundle_valid 0.0");
    }

    /**
     * A trust bundle whose CAs have all expired, or are not valid yet, refuses every request as a missing one does:
     * the replica is not ready and {@code playpen_trust_bundle_valid} is 0; a CA valid now makes both 1 again.
     */
    @Test
    void aTrustBundleWithNoCaValidNowIsNotValid() throws Exception {
        cluster = TestCluster.start();
        op = new OperatorHarness(cluster, "--management-addr=127.0.0.1:0");
        port = op.app.managementAddress().getPort();
        assertThat(send("GET", "/observe/metrics").body()).contains("playpen_trust_bundle_valid 1.0");

        java.time.Instant now = java.time.Instant.now();
        io.unboundedcloud.playpen.tls.Pki.Issued expired = io.unboundedcloud.playpen.tls.Pki.selfSigned(
                io.unboundedcloud.playpen.tls.Pki.Subject.cn("front-proxy-ca"), io.unboundedcloud.playpen.tls.Pki.Usage.CA,
                now.minus(Duration.ofDays(30)), Duration.ofDays(1));
        io.unboundedcloud.playpen.tls.Pki.Issued notYet = io.unboundedcloud.playpen.tls.Pki.selfSigned(
                io.unboundedcloud.playpen.tls.Pki.Subject.cn("front-proxy-ca"), io.unboundedcloud.playpen.tls.Pki.Usage.CA,
                now.plus(Duration.ofDays(1)), Duration.ofDays(30));
        cluster.setTrust(expired.certificatePem() + notYet.certificatePem(), "[\"front-proxy-client\"]");
        OperatorHarness.awaitTrue(() -> {
            try {
                return send("GET", "/observe/metrics").body().contains("playpen_trust_bundle_valid 0.0");
            } catch (Exception e) {
                return false;
            }
        }, Duration.ofSeconds(60), "playpen_trust_bundle_valid 0 with no CA valid now");
        assertThat(send("GET", "/observe/metrics").body()).contains("playpen_ready 0.0");
        assertThat(send("GET", "/observe/health/ready").statusCode()).isEqualTo(503);
        assertThat(op.app.ready()).isFalse();

        cluster.setTrust(expired.certificatePem() + cluster.frontProxyCa.certificatePem(), "[\"front-proxy-client\"]");
        OperatorHarness.awaitTrue(() -> {
            try {
                return send("GET", "/observe/metrics").body().contains("playpen_trust_bundle_valid 1.0");
            } catch (Exception e) {
                return false;
            }
        }, Duration.ofSeconds(60), "playpen_trust_bundle_valid 1 with one CA valid now");
        OperatorHarness.awaitTrue(op.app::ready, Duration.ofSeconds(60), "ready with one CA valid now");
    }

    /** Hawtio is told ".../jolokia" (no slash); Jolokia's own context is "/jolokia/". Both serve, restrictions included. */
    @Test
    void jolokiaAnswersWithAndWithoutTheTrailingSlash() throws Exception {
        cluster = TestCluster.start();
        op = new OperatorHarness(cluster, "--management-addr=127.0.0.1:0");
        port = op.app.managementAddress().getPort();
        for (String path : new String[] {"/jolokia", "/jolokia/"}) {
            HttpResponse<String> get = send("GET", path);
            assertThat(get.statusCode()).as("GET %s", path).isEqualTo(200);
            assertThat(get.body()).as("GET %s", path).contains("\"agent\"");
            HttpResponse<String> post = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"type\":\"version\"}")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(post.statusCode()).as("POST %s", path).isEqualTo(200);
            assertThat(post.body()).as("POST %s", path).contains("\"protocol\"");
            // the filters and the restrictor apply on both paths
            HttpResponse<String> notify = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"type\":\"notification\",\"command\":\"register\"}"))
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertThat(notify.statusCode()).as("notification via %s", path).isEqualTo(403);
            HttpResponse<String> write = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"type\":\"write\",\"mbean\":\"java.lang:type=Memory\","
                            + "\"attribute\":\"Verbose\",\"value\":true}")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(write.body()).as("write via %s", path).doesNotContain("\"status\":200");
        }
        assertThat(send("GET", "/jolokiax").statusCode()).isEqualTo(404);
    }
}
