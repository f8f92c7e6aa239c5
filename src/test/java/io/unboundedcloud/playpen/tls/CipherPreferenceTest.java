package io.unboundedcloud.playpen.tls;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;

import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.ReferenceCertificates;

/**
 * The serving TLS picks ChaCha20-Poly1305 over AES-GCM when the JIT is C1 only (AES-GCM without C2's intrinsics costs
 * ~4x ChaCha20's CPU there), and leaves the JDK's order alone otherwise. The client is a default JDK TLS client,
 * which lists AES-GCM first.
 */
class CipherPreferenceTest {

    @Test
    void c1OnlyServerNegotiatesChaCha20WithAClientThatPrefersAesGcm() throws Exception {
        assertThat(negotiated(true)).isEqualTo("TLS_CHACHA20_POLY1305_SHA256");
    }

    @Test
    void aNettyClientLikeVertxAndTheBenchGetsChaCha20Too() throws Exception {
        // Netty's JDK-provider TLS (Vert.x, so fabric8's client and the bench's) offers its own list, AES-GCM first
        io.vertx.core.Vertx vertx = io.vertx.core.Vertx.vertx();
        try {
            assertThat(negotiatedWith(true, port -> vertx.createNetClient(new io.vertx.core.net.NetClientOptions()
                    .setSsl(true).setTrustAll(true).setHostnameVerificationAlgorithm(""))
                    .connect(port, "127.0.0.1").toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS)
                    .close()))
                    .isEqualTo("TLS_CHACHA20_POLY1305_SHA256");
        } finally {
            vertx.close();
        }
    }

    @Test
    void otherwiseTheJdkOrderStands() throws Exception {
        assertThat(negotiated(false)).matches("TLS_AES_(128|256)_GCM_SHA(256|384)");
    }

    @Test
    void theTestJvmRunsC2SoItSeesNoC1OnlyJit() {
        // surefire runs with the JDK's default tiered compilation (level 4): the detection must say so; the image's
        // -XX:TieredStopAtLevel=1 is covered by the detection reading the same two VM options
        assertThat(ServingTls.c1Only()).isFalse();
    }

    interface Client {
        void handshake(int port) throws Exception;
    }

    /** The suite the server side negotiated with {@code client}. */
    private static String negotiatedWith(boolean chachaFirst, Client client) throws Exception {
        ReferenceCertificates.Pem fixture = ReferenceCertificates.selfSigned("fixture", List.of("127.0.0.1"));
        ServingTls serving = new ServingTls(fixture.certificatePem(), fixture.privateKeyPem(), List::of, chachaFirst);
        try (SSLServerSocket server = (SSLServerSocket) serving.context().getServerSocketFactory()
                .createServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            server.setSSLParameters(serving.newServerEngine().getSSLParameters());
            CompletableFuture<String> serverSide = CompletableFuture.supplyAsync(() -> {
                try (SSLSocket s = (SSLSocket) server.accept()) {
                    s.startHandshake();
                    return s.getSession().getCipherSuite();
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            client.handshake(server.getLocalPort());
            return serverSide.get(60, TimeUnit.SECONDS);
        }
    }

    /** The suite a default JDK TLS client gets. */
    private static String negotiated(boolean chachaFirst) throws Exception {
        return negotiatedWith(chachaFirst, port -> {
            try (SSLSocket client = (SSLSocket) OperatorHarness.sslContext(null).getSocketFactory()
                    .createSocket(InetAddress.getLoopbackAddress(), port)) {
                assertThat(client.getEnabledCipherSuites()[0]).as("the client prefers AES-GCM").startsWith("TLS_AES_");
                client.startHandshake();
            }
        });
    }
}
