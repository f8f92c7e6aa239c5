package io.unboundedcloud.playpen.bench;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

import io.unboundedcloud.playpen.camel.NettyTls;
import io.unboundedcloud.playpen.tls.Pki;
import io.unboundedcloud.playpen.tls.ServingTls;
import org.apache.camel.CamelContext;
import org.apache.camel.ExchangePattern;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.netty.http.NettyHttpComponent;
import org.apache.camel.impl.DefaultCamelContext;

/**
 * The floor under a front door built on Camel's netty-http, as the operator's is: the same TLS setup as
 * {@link TlsFloor} and the operator ({@link ServingTls} through {@link NettyTls}), a netty-http HTTPS consumer
 * with the operator's worker pool size, and a route of one step that answers fixed bytes (an alloc answer's). No
 * authentication, no parsing, no metrics or message history, nothing of the operator's: what Camel's HTTP consumer
 * (its binding, the hand-off from Netty's I/O thread to a worker and back, one route) adds to {@link TlsFloor}.
 * Measured with the same client, so (this floor + the watched bare PATCH) is the least an allocation through a Camel
 * route can cost here, and (this floor + a bare GET) the least such a replay can.
 */
final class CamelFloor implements AutoCloseable {
    /** The operator's default {@code --http-worker-threads}. */
    static final int WORKER_THREADS = 64;

    private final CamelContext camel;
    private final int port;

    private CamelFloor(ServingTls tls, byte[] answer, int port) throws Exception {
        this.port = port;
        camel = new DefaultCamelContext();
        camel.getRegistry().bind("floorSslHandler", new NettyTls.SslHandlerFactory(tls));
        camel.getRegistry().bind("floorSslContext", new NettyTls.ContextParameters(tls));
        NettyHttpComponent http = new NettyHttpComponent();
        http.setMaximumPoolSize(WORKER_THREADS);
        camel.addComponent("netty-http", http);
        camel.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                from("netty-http:https://127.0.0.1:" + port + "?matchOnUriPrefix=true&muteException=true&ssl=true"
                        + "&sslHandler=#floorSslHandler&sslContextParameters=#floorSslContext")
                        .routeId("camel-floor")
                        .setExchangePattern(ExchangePattern.InOnly)
                        .setHeader("Content-Type", constant("application/json"))
                        .setBody(constant(answer));
            }
        });
        camel.start();
    }

    /** A Camel floor server on a free loopback port with a new self-signed serving certificate. */
    static CamelFloor start(Pki.Issued clientCa, byte[] answer) throws Exception {
        Pki.Issued serving = Pki.selfSigned(new Pki.Subject("playpen-camel-floor", List.of(), List.of("localhost"),
                List.of("127.0.0.1")), Pki.Usage.SERVER, Instant.now().minusSeconds(60), Duration.ofHours(1));
        int port;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        return new CamelFloor(new ServingTls(serving.certificatePem(), serving.privateKeyPem(),
                () -> List.of(clientCa.certificate())), answer, port);
    }

    int port() {
        return port;
    }

    @Override
    public void close() {
        camel.stop();
    }
}
