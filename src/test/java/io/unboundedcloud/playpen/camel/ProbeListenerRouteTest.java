package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import javax.net.ssl.SSLSocket;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;

import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * kubelet's probes cannot be crowded out by API traffic: the probe listener (--health-addr) answers /healthz and
 * /readyz while every HTTPS connection slot is taken, and waiting allocs can never take all of those slots.
 */
class ProbeListenerRouteTest {
    static final String ALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs";
    TestCluster cluster;
    OperatorHarness op;
    final HttpClient plain = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    final List<SSLSocket> held = new ArrayList<>();

    @BeforeEach
    void up() {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
    }

    @AfterEach
    void down() throws IOException {
        for (SSLSocket s : held) {
            s.close();
        }
        op.close();
        cluster.close();
    }

    HttpResponse<String> probe(String path) throws Exception {
        return plain.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + op.app.healthAddress().getPort() + path))
                .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void probesAreAnsweredWhileEveryHttpsConnectionIsTaken() throws Exception {
        op = new OperatorHarness(cluster, "--health-addr=127.0.0.1:0", "--max-connections=8",
                "--max-unauthenticated-connections=8", "--max-waiting=4", "--request-header-timeout=60s");
        assertThat(probe("/healthz").statusCode()).isEqualTo(204);
        assertThat(probe("/readyz").statusCode()).isEqualTo(204);
        for (int i = 0; i < 8; i++) {
            SSLSocket s = (SSLSocket) OperatorHarness.sslContext(cluster.frontProxyClient).getSocketFactory()
                    .createSocket("127.0.0.1", op.port);
            s.startHandshake();
            held.add(s);
        }
        OperatorHarness.awaitTrue(() -> op.app.connectionGuard().openConnections() == 8, Duration.ofSeconds(60),
                "every HTTPS slot taken");
        HttpClient https = OperatorHarness.client(null);
        assertThatThrownBy(() -> https.send(HttpRequest.newBuilder(URI.create(op.url("/readyz")))
                .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString()))
                .as("the HTTPS port has no room").isInstanceOf(IOException.class);
        for (int i = 0; i < 20; i++) {
            assertThat(probe("/healthz").statusCode()).isEqualTo(204);
            assertThat(probe("/readyz").statusCode()).isEqualTo(204);
        }
        HttpResponse<String> other = probe("/apis/playpen.unbounded-cloud.io/v1alpha1");
        assertThat(other.statusCode()).as("nothing but probes here").isEqualTo(404);
        assertThat(Json.MAPPER.readTree(other.body()).get("kind").asText()).isEqualTo("Status");
    }

    @Test
    void readinessFollowsTheTrustBundleOnTheProbeListener() throws Exception {
        op = new OperatorHarness(cluster, "--health-addr=127.0.0.1:0");
        cluster.client.configMaps().inNamespace("kube-system").withName("extension-apiserver-authentication").delete();
        OperatorHarness.awaitTrue(() -> {
            try {
                return probe("/readyz").statusCode() == 503;
            } catch (Exception e) {
                return false;
            }
        }, Duration.ofSeconds(60), "not ready without a trust bundle");
        HttpResponse<String> r = probe("/readyz");
        JsonNode status = Json.MAPPER.readTree(r.body());
        assertThat(status.get("reason").asText()).isEqualTo("ServiceUnavailable");
        assertThat(r.headers().firstValue("Retry-After")).isPresent();
        assertThat(probe("/healthz").statusCode()).as("alive while not ready").isEqualTo(204);
        // the answer names what is missing (not the caches), where the bundle is read from and what to check
        String message = status.get("message").asText();
        assertThat(message).startsWith("not ready: no usable front-proxy trust bundle (ConfigMap"
                + " kube-system/extension-apiserver-authentication not found)")
                .contains("read from the ConfigMap kube-system/extension-apiserver-authentication (key"
                        + " requestheader-client-ca-file)", "check that the ConfigMap exists")
                .doesNotContain("caches");
        HttpResponse<String> https = OperatorHarness.client(null).send(HttpRequest.newBuilder(URI.create(op.url("/readyz")))
                .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(https.statusCode()).isEqualTo(503);
        assertThat(Json.MAPPER.readTree(https.body()).get("message").asText()).as("the HTTPS port says the same")
                .isEqualTo(message);
    }

    @Test
    void aBundleWhoseCasAreAllExpiredIsNamedAsSuchWithoutItsContent() throws Exception {
        op = new OperatorHarness(cluster, "--health-addr=127.0.0.1:0");
        java.time.Instant now = java.time.Instant.now();
        io.unboundedcloud.playpen.tls.Pki.Issued expired = io.unboundedcloud.playpen.tls.Pki.selfSigned(
                io.unboundedcloud.playpen.tls.Pki.Subject.cn("front-proxy-ca-expired"), io.unboundedcloud.playpen.tls.Pki.Usage.CA,
                now.minus(Duration.ofDays(2)), Duration.ofDays(1));
        cluster.setTrust(expired.certificatePem(), "[\"front-proxy-client\"]");
        OperatorHarness.awaitTrue(() -> {
            try {
                return probe("/readyz").statusCode() == 503;
            } catch (Exception e) {
                return false;
            }
        }, Duration.ofSeconds(60), "not ready with only an expired CA");
        String message = Json.MAPPER.readTree(probe("/readyz").body()).get("message").asText();
        assertThat(message).startsWith("not ready: no usable front-proxy trust bundle (none of its CAs is valid now"
                + " (all expired or not yet valid))").contains("holds a CA valid now")
                .doesNotContain("BEGIN", "front-proxy-ca-expired", "caches");
    }

    @Test
    void waitingAllocsLeaveConnectionsForEverythingElse() throws Exception {
        op = new OperatorHarness(cluster, "--max-connections=10", "--max-unauthenticated-connections=10",
                "--max-waiting=6", "--max-waiting-per-user=6");
        HttpClient http = op.frontProxy();
        List<CompletableFuture<HttpResponse<String>>> waiting = new ArrayList<>();
        // nine requests, at most nine connections: six wait, three are refused at once
        for (int i = 0; i < 9; i++) {
            HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url(ALLOCS))).timeout(Duration.ofSeconds(60))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"idempotencyKey\":\"w-" + i + "\",\"wireGuardPublicKey\":\""
                            + TestCluster.wgKey(3) + "\",\"waitSeconds\":30}"));
            waiting.add(http.sendAsync(OperatorHarness.asUser(b, "user-" + (i % 3), "playpen-users").build(),
                    HttpResponse.BodyHandlers.ofString()));
        }
        OperatorHarness.awaitTrue(() -> waiting.stream().filter(CompletableFuture::isDone).count() == 3,
                Duration.ofSeconds(20), "three refused");
        assertThat(waiting.stream().filter(CompletableFuture::isDone).map(f -> f.join().statusCode())).containsOnly(429);
        assertThat(op.app.waitingQueue().waitingRequests()).isEqualTo(6);
        HttpResponse<String> ready = OperatorHarness.client(null).send(HttpRequest.newBuilder(URI.create(op.url("/readyz")))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertThat(ready.statusCode()).isEqualTo(204);
    }
}
