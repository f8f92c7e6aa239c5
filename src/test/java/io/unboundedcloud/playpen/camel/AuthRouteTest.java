package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;

import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReview;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;
import io.unboundedcloud.playpen.tls.Pki;

/** Front-proxy authentication and SubjectAccessReview authorization matrix (refusals are 403). */
class AuthRouteTest {
    static final ObjectMapper M = new ObjectMapper();
    static final String DISCOVERY = "/apis/playpen.unbounded-cloud.io/v1alpha1";
    static final String DEALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/deallocs";
    static TestCluster cluster;
    static OperatorHarness op;

    @BeforeAll
    static void up() throws Exception {
        cluster = TestCluster.start();
        // SAR decisions are not cached here so every request reaches the scripted policy
        op = new OperatorHarness(cluster, "--sar-allowed-ttl=0", "--sar-denied-ttl=0");
    }

    @AfterAll
    static void down() {
        if (op != null) {
            op.close();
        }
        cluster.close();
    }

    HttpResponse<String> get(HttpClient http, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(op.url(path))).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> dealloc(HttpClient http, String user, String... groups) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(op.url(DEALLOCS))).header("Idempotency-Key", "k")
                .POST(HttpRequest.BodyPublishers.noBody());
        if (user != null) {
            OperatorHarness.asUser(b, user, groups);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    static void assertStatus(HttpResponse<String> r, int code, String reason) throws Exception {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(code);
        assertThat(M.readTree(r.body()).get("kind").asText()).isEqualTo("Status");
        assertThat(M.readTree(r.body()).get("reason").asText()).isEqualTo(reason);
        assertThat(M.readTree(r.body()).get("code").asInt()).isEqualTo(code);
    }

    @Test
    void trustedCertificateReadsDiscoveryAndProbesNeedNoCertificate() throws Exception {
        HttpResponse<String> d = get(op.frontProxy(), DISCOVERY);
        assertThat(d.statusCode()).isEqualTo(200);
        assertThat(M.readTree(d.body()).get("resources").get(0).get("name").asText()).isEqualTo("allocs");
        HttpResponse<String> g = get(op.frontProxy(), "/apis/playpen.unbounded-cloud.io");
        assertThat(M.readTree(g.body()).at("/preferredVersion/groupVersion").asText())
                .isEqualTo("playpen.unbounded-cloud.io/v1alpha1");
        HttpClient anonymous = OperatorHarness.client(null);
        assertThat(get(anonymous, "/healthz").statusCode()).isEqualTo(204);
        assertThat(get(anonymous, "/readyz").statusCode()).isEqualTo(204);
        assertStatus(get(anonymous, DISCOVERY), 403, "Forbidden");
    }

    @Test
    void untrustedExpiredNoClientAuthAndUnlistedCnAre403LikeTheReference() throws Exception {
        Instant now = Instant.now();
        Pki.Issued otherCa = Pki.selfSigned(Pki.Subject.cn("other-ca"), Pki.Usage.CA, now.minusSeconds(60), Duration.ofDays(1));
        Pki.Issued untrusted = Pki.issue(otherCa, Pki.Subject.cn("front-proxy-client"), Pki.Usage.CLIENT,
                now.minusSeconds(60), Duration.ofDays(1));
        Pki.Issued expired = Pki.issue(cluster.frontProxyCa, Pki.Subject.cn("front-proxy-client"), Pki.Usage.CLIENT,
                now.minus(Duration.ofDays(3)), Duration.ofDays(1));
        Pki.Issued serverOnly = Pki.issue(cluster.frontProxyCa, Pki.Subject.cn("front-proxy-client"), Pki.Usage.SERVER,
                now.minusSeconds(60), Duration.ofDays(1));
        Pki.Issued wrongCn = Pki.issue(cluster.frontProxyCa, Pki.Subject.cn("someone-else"), Pki.Usage.CLIENT,
                now.minusSeconds(60), Duration.ofDays(1));
        for (Pki.Issued cert : List.of(untrusted, expired, serverOnly, wrongCn)) {
            HttpResponse<String> refused = dealloc(OperatorHarness.client(cert), "alice", "playpen-users");
            assertStatus(refused, 403, "Forbidden");
            // the reference's text: kubectl prints "Error from server (Forbidden): forbidden", not "log in"
            assertThat(M.readTree(refused.body()).get("message").asText()).isEqualTo("forbidden");
            assertStatus(get(OperatorHarness.client(cert), DISCOVERY), 403, "Forbidden");
        }
        assertStatus(dealloc(OperatorHarness.client(null), "alice", "playpen-users"), 403, "Forbidden");
        HttpResponse<String> noUser = dealloc(op.frontProxy(), null);
        assertStatus(noUser, 403, "Forbidden");
        assertThat(M.readTree(noUser.body()).get("message").asText()).isEqualTo("missing remote user");
    }

    @Test
    void identityComesFromHeadersOnlyNeverFromTheQueryString() throws Exception {
        // the aggregator replaces X-Remote-* headers but passes the query string through: a caller must not be
        // able to add groups, a uid or extras (or a user) with query parameters
        cluster.sarRequests.clear();
        HttpResponse<String> r = op.kubectlPost(op.frontProxy(), DEALLOCS + "?X-Remote-Group=playpen-users"
                + "&x-remote-group=system:masters&X-Remote-Uid=forged&X-Remote-Extra-Scopes=admin&X-Remote-User=root",
                "{\"idempotencyKey\":\"k\"}", "mallory", "others");
        assertStatus(r, 403, "Forbidden");
        SubjectAccessReview sar = cluster.sarRequests.get(cluster.sarRequests.size() - 1);
        assertThat(sar.getSpec().getUser()).isEqualTo("mallory");
        assertThat(sar.getSpec().getGroups()).containsExactly("others");
        assertThat(sar.getSpec().getUid()).isNullOrEmpty();
        assertThat(sar.getSpec().getExtra()).isNullOrEmpty();
    }

    @Test
    void sarDecidesWithEachGroupLineAsOneGroupAndExtraHeaders() throws Exception {
        cluster.sarRequests.clear();
        HttpRequest req = HttpRequest.newBuilder(URI.create(op.url(DEALLOCS))).header("Idempotency-Key", "k")
                .header("X-Remote-User", "bob").header("X-Remote-Uid", "uid-7")
                .header("X-Remote-Group", "CN=devs,OU=groups").header("X-Remote-Group", "playpen-users")
                .header("X-Remote-Group", "system:authenticated")
                .header("X-Remote-Extra-Scopes", "view").header("X-Remote-Extra-Scopes", "edit")
                .header("X-Remote-Extra-Acme.com%2Fproject", "p1")
                .POST(HttpRequest.BodyPublishers.noBody()).build();
        HttpResponse<String> r = op.frontProxy().send(req, HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(204);
        SubjectAccessReview sar = cluster.sarRequests.get(cluster.sarRequests.size() - 1);
        assertThat(sar.getSpec().getUser()).isEqualTo("bob");
        assertThat(sar.getSpec().getUid()).isEqualTo("uid-7");
        assertThat(sar.getSpec().getGroups()).containsExactly("CN=devs,OU=groups", "playpen-users", "system:authenticated");
        assertThat(sar.getSpec().getExtra()).containsEntry("scopes", List.of("view", "edit"))
                .containsEntry("acme.com/project", List.of("p1"));
        assertThat(sar.getSpec().getResourceAttributes().getGroup()).isEqualTo("playpen.unbounded-cloud.io");
        // a dealloc is reviewed for the resource its POST names, as the Go operator reviews it
        assertThat(sar.getSpec().getResourceAttributes().getResource()).isEqualTo("deallocs");
        assertThat(sar.getSpec().getResourceAttributes().getVerb()).isEqualTo("create");
        HttpResponse<String> denied = dealloc(op.frontProxy(), "mallory", "others");
        assertStatus(denied, 403, "Forbidden");
        HttpResponse<String> deniedAlloc = op.kubectlPost(op.frontProxy(),
                "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs", "{\"idempotencyKey\":\"x\"}", "mallory", "others");
        assertStatus(deniedAlloc, 403, "Forbidden");
    }

    /** One dealloc on its own TLS connection with these header lines, their values sent as UTF-8 bytes. */
    static int rawDealloc(List<String[]> headerLines) throws Exception {
        try (javax.net.ssl.SSLSocket s = (javax.net.ssl.SSLSocket) OperatorHarness.sslContext(cluster.frontProxyClient)
                .getSocketFactory().createSocket("127.0.0.1", op.port)) {
            s.setSoTimeout(20_000);
            java.io.ByteArrayOutputStream head = new java.io.ByteArrayOutputStream();
            head.writeBytes(("POST " + DEALLOCS + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                    + "Idempotency-Key: k\r\nContent-Length: 0\r\n").getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            for (String[] h : headerLines) {
                head.writeBytes((h[0] + ": " + h[1] + "\r\n").getBytes(java.nio.charset.StandardCharsets.UTF_8));
            }
            head.writeBytes("\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            s.getOutputStream().write(head.toByteArray());
            s.getOutputStream().flush();
            String reply = new String(s.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            return Integer.parseInt(reply.split(" ")[1]);
        }
    }

    static SubjectAccessReview lastReview() {
        return cluster.sarRequests.get(cluster.sarRequests.size() - 1);
    }

    @Test
    void aGroupWithACommaIsOneGroupAndGrantsNothingItDoesNotName() throws Exception {
        cluster.sarRequests.clear();
        assertThat(rawDealloc(List.of(new String[] {"X-Remote-User", "mallory"},
                new String[] {"X-Remote-Group", "nobody,playpen-users"}))).isEqualTo(403);
        assertThat(lastReview().getSpec().getGroups()).containsExactly("nobody,playpen-users");
        assertThat(rawDealloc(List.of(new String[] {"X-Remote-User", "mallory"},
                new String[] {"X-Remote-Group", "x, system:masters"}, new String[] {"X-Remote-Group", "y"}))).isEqualTo(403);
        assertThat(lastReview().getSpec().getGroups()).containsExactly("x, system:masters", "y");
    }

    @Test
    void theUserIsReviewedExactlyAsSentInUtf8() throws Exception {
        cluster.sarRequests.clear();
        assertThat(rawDealloc(List.of(new String[] {"X-Remote-User", "Jos\u00e9"},
                new String[] {"X-Remote-Group", "playpen-users"}))).isEqualTo(204);
        assertThat(lastReview().getSpec().getUser()).isEqualTo("Jos\u00e9");
        assertThat(rawDealloc(List.of(new String[] {"X-Remote-User", "\u5f20\u4f1f"},
                new String[] {"X-Remote-Group", "playpen-users"}))).isEqualTo(204);
        assertThat(lastReview().getSpec().getUser()).isEqualTo("\u5f20\u4f1f");
        // characters Java's trim() drops but HTTP keeps in a value: never part of a user name, never ignored
        int reviews = cluster.sarRequests.size();
        for (String user : List.of("alice\u000b", "\u0001alice", "alice\u001f")) {
            assertThat(rawDealloc(List.of(new String[] {"X-Remote-User", user},
                    new String[] {"X-Remote-Group", "playpen-users"}))).as(user).isEqualTo(400);
        }
        assertThat(cluster.sarRequests).as("nothing reviewed for them").hasSize(reviews);
    }

    @Test
    void trustBundleChangeTakesEffectWithoutRestart() throws Exception {
        Instant now = Instant.now();
        Pki.Issued newCa = Pki.selfSigned(Pki.Subject.cn("front-proxy-ca-2"), Pki.Usage.CA, now.minusSeconds(60), Duration.ofDays(1));
        Pki.Issued newClient = Pki.issue(newCa, Pki.Subject.cn("front-proxy-client"), Pki.Usage.CLIENT,
                now.minusSeconds(60), Duration.ofDays(1));
        assertStatus(get(OperatorHarness.client(newClient), DISCOVERY), 403, "Forbidden");
        try {
            cluster.setTrust(newCa.certificatePem(), "[\"front-proxy-client\"]");
            OperatorHarness.awaitTrue(() -> {
                try {
                    return get(OperatorHarness.client(newClient), DISCOVERY).statusCode() == 200;
                } catch (Exception e) {
                    return false;
                }
            }, Duration.ofSeconds(60), "new CA accepted");
            assertStatus(get(op.frontProxy(), DISCOVERY), 403, "Forbidden");
            // an invalid bundle refuses everything and readiness drops
            cluster.setTrust("not a pem", null);
            OperatorHarness.awaitTrue(() -> !op.app.ready(), Duration.ofSeconds(60), "not ready with a bad bundle");
            assertStatus(get(OperatorHarness.client(newClient), DISCOVERY), 403, "Forbidden");
        } finally {
            cluster.setTrust(cluster.frontProxyCa.certificatePem(), "[\"front-proxy-client\"]");
            OperatorHarness.awaitTrue(op.app::ready, Duration.ofSeconds(60), "ready again");
        }
    }

    @Test
    void emptyAllowedNamesAcceptsAnyCn() throws Exception {
        Pki.Issued anyCn = Pki.issue(cluster.frontProxyCa, Pki.Subject.cn("aggregator-7"), Pki.Usage.CLIENT,
                Instant.now().minusSeconds(60), Duration.ofDays(1));
        try {
            cluster.setTrust(cluster.frontProxyCa.certificatePem(), "[]");
            OperatorHarness.awaitTrue(() -> {
                try {
                    return get(OperatorHarness.client(anyCn), DISCOVERY).statusCode() == 200;
                } catch (Exception e) {
                    return false;
                }
            }, Duration.ofSeconds(60), "any CN accepted");
        } finally {
            cluster.setTrust(cluster.frontProxyCa.certificatePem(), "[\"front-proxy-client\"]");
        }
    }
}
