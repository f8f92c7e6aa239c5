package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.unboundedcloud.playpen.kube.ServingCertificate;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * Serving-certificate renewal and rotation, with real TLS handshakes against the running operator: a client
 * that trusts exactly the APIService caBundle of the moment (as the aggregator does) must always complete its
 * handshake while the self-signed certificate is renewed and while the Secret is replaced by someone else; the new
 * certificate is served without a restart, the caBundle held it (and the old one) before it was served, and the
 * front-proxy CA rotation keeps working alongside.
 */
class ServingCertRotationRouteTest {
    static final String SECRET = "playpen-operator-tls";

    /** One observation: the caBundle read just before a handshake, and the certificate that handshake got. */
    record Sample(long nanos, List<X509Certificate> bundle, X509Certificate served) {
    }

    static List<X509Certificate> bundle(TestCluster cluster) {
        String b64 = CaBundleRouteTest.caBundle(cluster);
        return b64.isEmpty() ? List.of()
                : Pki.parseCertificates(new String(Base64.getDecoder().decode(b64), StandardCharsets.US_ASCII));
    }

    /** A handshake like the aggregator's: trusts the bundle only, verifies the host name; throws when rejected. */
    static X509Certificate handshake(int port, List<X509Certificate> bundle) throws Exception {
        KeyStore roots = KeyStore.getInstance("PKCS12");
        roots.load(null, null);
        for (int i = 0; i < bundle.size(); i++) {
            roots.setCertificateEntry("ca" + i, bundle.get(i));
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(roots);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        try (SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket(new Socket("127.0.0.1", port), "localhost",
                port, true)) {
            SSLParameters p = s.getSSLParameters();
            p.setEndpointIdentificationAlgorithm("HTTPS");
            p.setServerNames(List.of(new javax.net.ssl.SNIHostName("localhost")));
            s.setSSLParameters(p);
            s.setSoTimeout(10_000);
            s.startHandshake();
            return (X509Certificate) s.getSession().getPeerCertificates()[0];
        }
    }

    /** Samples until the served certificate is {@code until} (or the timeout), failing on any rejected handshake. */
    static List<Sample> sampleUntil(OperatorHarness op, java.util.function.Predicate<X509Certificate> until, Duration timeout)
            throws Exception {
        List<Sample> samples = new ArrayList<>();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            List<X509Certificate> b = bundle(op.cluster);
            X509Certificate served;
            try {
                served = handshake(op.port, b);
            } catch (javax.net.ssl.SSLHandshakeException e) {
                throw new AssertionError("a client trusting the caBundle of the moment was rejected (" + b.size()
                        + " certificates in it): " + e.getMessage(), e);
            }
            samples.add(new Sample(System.nanoTime(), b, served));
            if (until.test(served)) {
                return samples;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("served certificate did not change within " + timeout);
            }
            Thread.sleep(25);
        }
    }

    static X509Certificate secretLeaf(TestCluster cluster) {
        Secret s = cluster.client.secrets().inNamespace(TestCluster.NS).withName(SECRET).get();
        return Pki.parseCertificates(new String(Base64.getDecoder().decode(s.getData().get("tls.crt")),
                StandardCharsets.US_ASCII)).get(0);
    }

    @Test
    void theSelfSignedCertificateIsRenewedAndServedAfterTheCaBundleHoldsItWithoutARestart() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            CaBundleRouteTest.createApiService(cluster);
            // 20 s lifetime renewed after half: a renewal every 10 s (if startup is slow and the first one already
            // happened, the test watches the next)
            try (OperatorHarness op = new OperatorHarness(cluster, "--serving-cert-validity=20s",
                    "--serving-cert-renew-fraction=0.5", "--serving-cert-check-interval=200ms",
                    "--serving-cert-publish-grace=2s")) {
                OperatorHarness.awaitTrue(() -> !bundle(cluster).isEmpty(), Duration.ofSeconds(60), "caBundle published");
                Instant started = Instant.now();
                X509Certificate first = sampleUntil(op, c -> true, Duration.ofSeconds(1)).get(0).served();
                List<Sample> samples = sampleUntil(op, c -> !c.equals(first), Duration.ofSeconds(30));
                Sample switched = samples.get(samples.size() - 1);
                X509Certificate renewed = switched.served();
                assertThat(renewed.getNotBefore()).isAfter(first.getNotBefore());
                assertThat(renewed).isEqualTo(secretLeaf(cluster));
                // the bundle read right before the first handshake with the new certificate held new and old
                assertThat(switched.bundle()).contains(renewed, first);
                // and it held the new one for a while before: at least one earlier sample saw it while the old was served
                assertThat(samples).anySatisfy(s -> {
                    assertThat(s.served()).isEqualTo(first);
                    assertThat(s.bundle()).contains(renewed);
                });
                // no restart: the same Camel context and listener throughout, and the switch was recorded
                assertThat(op.app.servingCertificateReload().lastSwitch()).isNotNull().isAfter(started.minusSeconds(1));
                HttpResponse<String> r = op.frontProxy().send(HttpRequest.newBuilder(URI.create(op.url(
                        "/apis/playpen.unbounded-cloud.io/v1alpha1"))).header("X-Remote-User", "alice").build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(r.statusCode()).isEqualTo(200);
            }
        }
    }

    @Test
    void aReplacedSecretIsServedWithinABoundAndFrontProxyRotationKeepsWorking() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            CaBundleRouteTest.createApiService(cluster);
            try (OperatorHarness op = new OperatorHarness(cluster, "--serving-cert-check-interval=200ms",
                    "--serving-cert-publish-grace=2s")) {
                OperatorHarness.awaitTrue(() -> !bundle(cluster).isEmpty(), Duration.ofSeconds(60), "caBundle published");
                X509Certificate first = handshake(op.port, bundle(cluster));

                // the Secret is replaced with a certificate from the administrator's CA
                Instant now = Instant.now();
                Pki.Issued ca = Pki.selfSigned(Pki.Subject.cn("corp-ca"), Pki.Usage.CA, now.minusSeconds(60), Duration.ofDays(30));
                Pki.Issued corp = Pki.issue(ca, new Pki.Subject("playpen-operator", List.of(),
                        List.of("playpen-operator.playpen.svc", "localhost"), List.of()), Pki.Usage.SERVER,
                        now.minusSeconds(60), Duration.ofDays(10));
                Secret s = cluster.client.secrets().inNamespace(TestCluster.NS).withName(SECRET).get();
                s.setData(Map.of("tls.crt", b64(corp.certificatePem()), "tls.key", b64(corp.privateKeyPem())));
                long replacedAt = System.nanoTime();
                cluster.client.secrets().inNamespace(TestCluster.NS).resource(s).update();
                List<Sample> samples = sampleUntil(op, c -> c.equals(corp.certificate()), Duration.ofSeconds(20));
                Sample switched = samples.get(samples.size() - 1);
                long millis = (switched.nanos() - replacedAt) / 1_000_000;
                System.out.printf("serving Secret replaced -> new certificate served after %d ms (check interval 200 ms, "
                        + "grace 2 s)%n", millis);
                assertThat(switched.bundle()).contains(corp.certificate(), first);
                assertThat(samples).anySatisfy(x -> {
                    assertThat(x.served()).isEqualTo(first);
                    assertThat(x.bundle()).contains(corp.certificate());
                });

                // front-proxy CA rotation on top: the new front-proxy CA is accepted, the old one no longer
                Pki.Issued fpCa = Pki.selfSigned(Pki.Subject.cn("front-proxy-ca-2"), Pki.Usage.CA, now.minusSeconds(60),
                        Duration.ofDays(1));
                Pki.Issued fpClient = Pki.issue(fpCa, Pki.Subject.cn("front-proxy-client"), Pki.Usage.CLIENT,
                        now.minusSeconds(60), Duration.ofDays(1));
                cluster.setTrust(cluster.frontProxyCa.certificatePem() + fpCa.certificatePem(), "[\"front-proxy-client\"]");
                OperatorHarness.awaitTrue(() -> discovery(op, fpClient) == 200, Duration.ofSeconds(60), "new front-proxy CA accepted");
                assertThat(discovery(op, cluster.frontProxyClient)).as("old CA still trusted during its overlap").isEqualTo(200);
                cluster.setTrust(fpCa.certificatePem(), "[\"front-proxy-client\"]");
                OperatorHarness.awaitTrue(() -> discovery(op, cluster.frontProxyClient) == 403, Duration.ofSeconds(60),
                        "old front-proxy CA dropped");
                assertThat(discovery(op, fpClient)).isEqualTo(200);
                assertThat(handshake(op.port, bundle(cluster))).isEqualTo(corp.certificate());
            }
        }
    }

    static int discovery(OperatorHarness op, Pki.Issued client) {
        try {
            return OperatorHarness.client(client).send(HttpRequest.newBuilder(URI.create(op.url(
                    "/apis/playpen.unbounded-cloud.io/v1alpha1"))).header("X-Remote-User", "alice").build(),
                    HttpResponse.BodyHandlers.ofString()).statusCode();
        } catch (Exception e) {
            return -1;
        }
    }

    static String b64(String s) {
        return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }
}
