package io.unboundedcloud.playpen.tls;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.KeyStore;
import java.time.Duration;
import java.util.List;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManagerFactory;

import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.support.ReferenceCertificates;

import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsParameters;
import com.sun.net.httpserver.HttpsServer;

/** Port of the reference's {@code internal/playpen/operator/tls_test.go}, plus the reference's Secret format. */
class TlsTest {
    /**
     * TestServingTLSRequiresTLS13: a server using the serving TLS configuration answers 204; a TLS 1.2 client
     * (min = max = 1.2) fails, a TLS 1.3 client succeeds. The client trusts the fixture certificate as its root.
     */
    @Test
    void servingTLSRequiresTLS13() throws Exception {
        // the fixture: like httptest's certificate, valid for 127.0.0.1 and example.com
        ReferenceCertificates.Pem fixture = ReferenceCertificates.selfSigned("fixture", List.of("127.0.0.1", "example.com"));
        // the JDK's HttpsServer needs the JDK's context; ServingTlsProviderTest runs the same check against BoringSSL
        ServingTls serving = new ServingTls(fixture.certificatePem(), fixture.privateKeyPem(), List::of, ServingTls.Provider.JDK);

        HttpsServer server = HttpsServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.setHttpsConfigurator(new HttpsConfigurator(serving.context()) {
            @Override
            public void configure(HttpsParameters params) {
                params.setSSLParameters(serving.newServerEngine().getSSLParameters());
            }
        });
        server.createContext("/", exchange -> {
            exchange.sendResponseHeaders(204, -1);
            exchange.close();
        });
        server.start();
        try {
            KeyStore roots = KeyStore.getInstance("PKCS12");
            roots.load(null, null);
            roots.setCertificateEntry("fixture", fixture.certificate());
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(roots);
            URI url = URI.create("https://127.0.0.1:" + server.getAddress().getPort() + "/");
            for (String version : List.of("TLSv1.2", "TLSv1.3")) {
                SSLContext ctx = SSLContext.getInstance("TLS");
                ctx.init(null, tmf.getTrustManagers(), null);
                SSLParameters params = ctx.getDefaultSSLParameters();
                params.setProtocols(new String[] {version});
                HttpClient client = HttpClient.newBuilder().sslContext(ctx).sslParameters(params)
                        .connectTimeout(Duration.ofSeconds(60)).version(HttpClient.Version.HTTP_1_1).build();
                Exception err = null;
                HttpResponse<Void> response = null;
                try {
                    response = client.send(HttpRequest.newBuilder(url).timeout(Duration.ofSeconds(60)).GET().build(),
                            HttpResponse.BodyHandlers.discarding());
                } catch (java.io.IOException e) {
                    err = e;
                }
                assertThat(err == null).as("TLS %s: %s", version, err).isEqualTo(version.equals("TLSv1.3"));
                if (response != null) {
                    assertThat(response.statusCode()).isEqualTo(204);
                }
            }
        } finally {
            server.stop(0);
        }
    }

    @Test
    void referenceSecretKeyIsParsedAsPkcs1Rsa() throws Exception {
        ReferenceCertificates.Pem ref = ReferenceCertificates.selfSigned("playpen-operator", List.of("playpen-operator", "localhost"));
        assertThat(ref.privateKeyPem()).startsWith("-----BEGIN RSA PRIVATE KEY-----");
        var key = Pki.parsePrivateKey(ref.privateKeyPem());
        assertThat(key.getAlgorithm()).isEqualTo("RSA");
        // and a TLS context builds from it with either provider (the handshake itself is covered by
        // servingTLSRequiresTLS13, ServingTlsProviderTest and TlsRouteTest); BoringSSL's engine also lists
        // "SSLv2Hello", a pseudo-protocol naming a ClientHello format, not a protocol version
        for (ServingTls.Provider provider : List.of(ServingTls.Provider.JDK, ServingTls.Provider.OPENSSL)) {
            assertThat(new ServingTls(ref.certificatePem(), ref.privateKeyPem(), List::of, provider).newServerEngine()
                    .getEnabledProtocols()).as(provider.name()).filteredOn(p -> !p.equals("SSLv2Hello")).containsExactly("TLSv1.3");
        }
    }
}
