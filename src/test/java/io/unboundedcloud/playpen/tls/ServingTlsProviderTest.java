package io.unboundedcloud.playpen.tls;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.Socket;
import java.nio.ByteBuffer;
import java.security.KeyStore;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult.HandshakeStatus;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedKeyManager;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import io.netty.handler.ssl.OpenSsl;
import io.netty.util.ReferenceCountUtil;
import io.unboundedcloud.playpen.support.ReferenceCertificates;

/**
 * The HTTPS listener's TLS behaves the same with BoringSSL and with the JDK's TLS: TLS 1.3 only, a client certificate
 * wanted but not needed and visible to the request afterwards, and the front-proxy CAs offered to the client follow
 * the trust bundle. Handshakes run engine to engine in memory, a JDK client against the server engine.
 */
class ServingTlsProviderTest {
    private static final ReferenceCertificates.Pem SERVING;
    private static final ReferenceCertificates.Pem PROXY_CLIENT;
    private static final ReferenceCertificates.Pem OTHER_CA;

    static {
        try {
            SERVING = ReferenceCertificates.selfSigned("playpen-operator", List.of("127.0.0.1"));
            PROXY_CLIENT = ReferenceCertificates.selfSigned("front-proxy-client", List.of());
            OTHER_CA = ReferenceCertificates.selfSigned("rotated-front-proxy-ca", List.of());
        } catch (Exception e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @Test
    void autoServesWithBoringSslWhereItsNativeLibraryLoads() {
        // the jar carries BoringSSL for Linux x86-64 and arm64 (and the tests' classpath for macOS and Windows too)
        assertThat(OpenSsl.isAvailable()).as("BoringSSL loads: %s", OpenSsl.unavailabilityCause()).isTrue();
        ServingTls auto = new ServingTls(SERVING.certificatePem(), SERVING.privateKeyPem(), List::of);
        assertThat(auto.provider()).isEqualTo(ServingTls.Provider.OPENSSL);
        assertThat(auto.describe()).startsWith("BoringSSL");
        SSLEngine engine = auto.newServerEngine();
        try {
            assertThat(engine.getClass().getName()).contains("OpenSsl");
        } finally {
            ReferenceCountUtil.release(engine);
        }
        ServingTls jdk = new ServingTls(SERVING.certificatePem(), SERVING.privateKeyPem(), List::of, ServingTls.Provider.JDK);
        assertThat(jdk.provider()).isEqualTo(ServingTls.Provider.JDK);
        assertThat(jdk.describe()).startsWith("the JDK's TLS");
        assertThat(jdk.newServerEngine().getClass().getName()).doesNotContain("OpenSsl");
    }

    @Test
    void anUnknownProviderIsRefusedWithTheChoices() {
        assertThatThrownBy(() -> ServingTls.Provider.parse("gnutls")).hasMessage("must be auto, jdk or openssl");
        assertThat(ServingTls.Provider.parse(" Auto ")).isEqualTo(ServingTls.Provider.AUTO);
    }

    @ParameterizedTest
    @EnumSource(value = ServingTls.Provider.class, names = {"JDK", "OPENSSL"})
    void onlyTls13IsServed(ServingTls.Provider provider) throws Exception {
        ServingTls tls = new ServingTls(SERVING.certificatePem(), SERVING.privateKeyPem(), List::of, provider);
        assertThatThrownBy(() -> handshake(client("TLSv1.2", null), tls.newServerEngine()))
                .isInstanceOf(SSLException.class);
        SSLEngine server = tls.newServerEngine();
        handshake(client("TLSv1.3", null), server);
        assertThat(server.getSession().getProtocol()).isEqualTo("TLSv1.3");
    }

    @ParameterizedTest
    @EnumSource(value = ServingTls.Provider.class, names = {"JDK", "OPENSSL"})
    void aClientCertificateIsWantedNotNeededAndReachesTheRequest(ServingTls.Provider provider) throws Exception {
        ServingTls tls = new ServingTls(SERVING.certificatePem(), SERVING.privateKeyPem(),
                () -> List.of(PROXY_CLIENT.certificate()), provider);

        SSLEngine anonymous = tls.newServerEngine();
        handshake(client("TLSv1.3", null), anonymous);
        assertThatThrownBy(() -> anonymous.getSession().getPeerCertificates()).isInstanceOf(SSLPeerUnverifiedException.class);

        SSLEngine server = tls.newServerEngine();
        handshake(client("TLSv1.3", new RecordingKeys(PROXY_CLIENT)), server);
        var peer = server.getSession().getPeerCertificates();
        assertThat(peer).hasSize(1);
        assertThat(((X509Certificate) peer[0]).getEncoded()).isEqualTo(PROXY_CLIENT.certificate().getEncoded());
    }

    @ParameterizedTest
    @EnumSource(value = ServingTls.Provider.class, names = {"JDK", "OPENSSL"})
    void theCasOfferedToTheClientFollowTheFrontProxyBundle(ServingTls.Provider provider) throws Exception {
        AtomicReference<List<X509Certificate>> bundle = new AtomicReference<>(List.of(PROXY_CLIENT.certificate()));
        ServingTls tls = new ServingTls(SERVING.certificatePem(), SERVING.privateKeyPem(), bundle::get, provider);

        RecordingKeys keys = new RecordingKeys(PROXY_CLIENT);
        handshake(client("TLSv1.3", keys), tls.newServerEngine());
        assertThat(keys.offered).containsExactly(PROXY_CLIENT.certificate().getSubjectX500Principal().getName());

        // the bundle is rotated: the next connection is offered the new CA, without a new certificate or listener
        bundle.set(List.of(OTHER_CA.certificate(), PROXY_CLIENT.certificate()));
        keys.offered.clear();
        handshake(client("TLSv1.3", keys), tls.newServerEngine());
        assertThat(keys.offered).containsExactly(OTHER_CA.certificate().getSubjectX500Principal().getName(),
                PROXY_CLIENT.certificate().getSubjectX500Principal().getName());

        // and a new serving certificate keeps the current bundle's CAs
        ReferenceCertificates.Pem renewed = ReferenceCertificates.selfSigned("playpen-operator-renewed", List.of("127.0.0.1"));
        tls.replace(renewed.certificatePem(), renewed.privateKeyPem());
        keys.offered.clear();
        SSLEngine server = tls.newServerEngine();
        SSLEngine client = client("TLSv1.3", keys, renewed.certificate());
        handshake(client, server);
        assertThat(((X509Certificate) client.getSession().getPeerCertificates()[0]).getEncoded())
                .isEqualTo(renewed.certificate().getEncoded());
        assertThat(keys.offered).hasSize(2);
    }

    /** A JDK client engine trusting the serving certificates, with only {@code protocol} enabled. */
    private static SSLEngine client(String protocol, RecordingKeys keys, X509Certificate... alsoTrusted) throws Exception {
        KeyStore roots = KeyStore.getInstance("PKCS12");
        roots.load(null, null);
        roots.setCertificateEntry("serving", SERVING.certificate());
        for (int i = 0; i < alsoTrusted.length; i++) {
            roots.setCertificateEntry("also" + i, alsoTrusted[i]);
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(roots);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(keys == null ? null : new javax.net.ssl.KeyManager[] {keys}, tmf.getTrustManagers(), null);
        SSLEngine engine = ctx.createSSLEngine("127.0.0.1", 443);
        engine.setUseClientMode(true);
        engine.setEnabledProtocols(new String[] {protocol});
        return engine;
    }

    /** Runs the handshake between two engines in memory, then one request record each way; throws what TLS throws. */
    private static void handshake(SSLEngine client, SSLEngine server) throws SSLException {
        try {
            ByteBuffer toServer = ByteBuffer.allocate(1 << 17);
            ByteBuffer toClient = ByteBuffer.allocate(1 << 17);
            ByteBuffer clientIn = ByteBuffer.allocate(1 << 17);
            ByteBuffer serverIn = ByteBuffer.allocate(1 << 17);
            ByteBuffer request = ByteBuffer.wrap("GET /healthz HTTP/1.1\r\n\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            ByteBuffer answer = ByteBuffer.wrap("HTTP/1.1 200 OK\r\n\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            client.beginHandshake();
            server.beginHandshake();
            for (int i = 0; i < 200; i++) {
                client.wrap(request, toServer);
                tasks(client);
                toServer.flip();
                server.unwrap(toServer, serverIn);
                toServer.compact();
                tasks(server);
                server.wrap(done(server) && serverIn.position() > 0 ? answer : ByteBuffer.allocate(0), toClient);
                tasks(server);
                toClient.flip();
                client.unwrap(toClient, clientIn);
                toClient.compact();
                tasks(client);
                if (done(client) && done(server) && clientIn.position() > 0 && serverIn.position() > 0) {
                    return;
                }
            }
            throw new AssertionError("no handshake after 200 rounds: client " + client.getHandshakeStatus()
                    + ", server " + server.getHandshakeStatus());
        } finally {
            ReferenceCountUtil.release(server);
        }
    }

    private static boolean done(SSLEngine e) {
        HandshakeStatus s = e.getHandshakeStatus();
        return s == HandshakeStatus.NOT_HANDSHAKING || s == HandshakeStatus.FINISHED;
    }

    private static void tasks(SSLEngine e) {
        Runnable task;
        while ((task = e.getDelegatedTask()) != null) {
            task.run();
        }
    }

    /** Presents one client certificate and records the CAs the server offered in its CertificateRequest. */
    private static final class RecordingKeys extends X509ExtendedKeyManager {
        final List<String> offered = new ArrayList<>();
        private final X509Certificate certificate;
        private final PrivateKey key;

        RecordingKeys(ReferenceCertificates.Pem pem) throws Exception {
            this.certificate = pem.certificate();
            this.key = Pki.parsePrivateKey(pem.privateKeyPem());
        }

        @Override
        public String chooseEngineClientAlias(String[] keyType, Principal[] issuers, SSLEngine engine) {
            if (issuers != null) {
                Arrays.stream(issuers).map(Principal::getName).forEach(offered::add);
            }
            return "client";
        }

        @Override
        public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
            return chooseEngineClientAlias(keyType, issuers, null);
        }

        @Override
        public X509Certificate[] getCertificateChain(String alias) {
            return new X509Certificate[] {certificate};
        }

        @Override
        public PrivateKey getPrivateKey(String alias) {
            return key;
        }

        @Override
        public String[] getClientAliases(String keyType, Principal[] issuers) {
            return new String[] {"client"};
        }

        @Override
        public String[] getServerAliases(String keyType, Principal[] issuers) {
            return null;
        }

        @Override
        public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
            return null;
        }
    }
}
