package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** Connection behaviour of the HTTPS listener: TLS 1.3 only, idle connections closed, readiness follows the API. */
class ConnectionRouteTest {
    static TestCluster cluster;
    static OperatorHarness op;

    @BeforeAll
    static void up() throws Exception {
        cluster = TestCluster.start();
        op = new OperatorHarness(cluster, "--idle-timeout=2s");
    }

    @AfterAll
    static void down() {
        if (op != null) {
            op.close();
        }
        cluster.close();
    }

    static SSLSocket connect(String... protocols) throws Exception {
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, new TrustManager[] {new X509TrustManager() {
            @Override
            public void checkClientTrusted(java.security.cert.X509Certificate[] c, String a) {
            }

            @Override
            public void checkServerTrusted(java.security.cert.X509Certificate[] c, String a) {
            }

            @Override
            public java.security.cert.X509Certificate[] getAcceptedIssuers() {
                return new java.security.cert.X509Certificate[0];
            }
        }}, null);
        SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket("127.0.0.1", op.port);
        s.setEnabledProtocols(protocols);
        return s;
    }

    @Test
    void negotiatesTls13AndClosesIdleConnections() throws Exception {
        try (SSLSocket s = connect("TLSv1.3", "TLSv1.2")) {
            s.startHandshake();
            assertThat(s.getSession().getProtocol()).isEqualTo("TLSv1.3");
            OutputStream out = s.getOutputStream();
            out.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            // 30 s: far more than --idle-timeout (2 s) on a loaded machine, far less than its default (60 s)
            s.setSoTimeout(30_000);
            InputStream in = s.getInputStream();
            byte[] buf = new byte[4096];
            int n = in.read(buf);
            assertThat(new String(buf, 0, n, StandardCharsets.US_ASCII)).startsWith("HTTP/1.1 204");
            // keep-alive connection left idle: the server closes it after --idle-timeout
            long t0 = System.nanoTime();
            int r;
            try {
                r = in.read(buf);
            } catch (SocketTimeoutException e) {
                throw new AssertionError("idle connection not closed within 30s");
            } catch (java.io.IOException e) {
                r = -1;
            }
            assertThat(r).isEqualTo(-1);
            assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(30));
        }
    }

    @Test
    void tls12ClientIsRefusedSoThereIsNoRenegotiation() throws Exception {
        // TLS 1.3 has no renegotiation; a TLS 1.2 client (which could renegotiate without a certificate, and
        // could pick CBC/SHA-1 suites) does not get a session at all
        try (SSLSocket s = connect("TLSv1.2")) {
            s.setSoTimeout(10_000);
            org.assertj.core.api.Assertions.assertThatThrownBy(s::startHandshake)
                    .isInstanceOf(javax.net.ssl.SSLException.class);
        }
        // the server engine offers TLS 1.3 alone and asks for (not requires) a client cert
        var tls = new io.unboundedcloud.playpen.tls.ServingTls(cluster.frontProxyClient.certificatePem(),
                cluster.frontProxyClient.privateKeyPem(), java.util.List::of);
        var engine = tls.newServerEngine();
        // (BoringSSL's engine also lists "SSLv2Hello": a pseudo-protocol naming a ClientHello format, not a version)
        assertThat(engine.getEnabledProtocols()).filteredOn(p -> !p.equals("SSLv2Hello")).containsExactly("TLSv1.3");
        assertThat(engine.getWantClientAuth()).isTrue();
        assertThat(engine.getNeedClientAuth()).isFalse();
    }
}
