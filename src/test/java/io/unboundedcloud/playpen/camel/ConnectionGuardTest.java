package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import javax.net.ssl.SSLEngine;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpRequestDecoder;
import io.netty.handler.codec.http.HttpResponseEncoder;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import io.netty.handler.ssl.SslHandler;
import io.unboundedcloud.playpen.auth.FrontProxyAuthenticator;
import io.unboundedcloud.playpen.auth.TrustBundle;
import io.unboundedcloud.playpen.support.CapturedLogs;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * The connection guard in a Netty pipeline shaped like camel-netty-http's (decoder, guard, encoder, handler), without
 * TLS: every connection here is unauthenticated. Time is advanced by hand, so deadlines are exact.
 */
class ConnectionGuardTest {
    static final String ALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs";

    final FrontProxyAuthenticator authenticator = withoutCertificates();

    @RegisterExtension
    final CapturedLogs authenticatorLogs = CapturedLogs.of(FrontProxyAuthenticator.class);

    /** For connections without a client certificate: the authenticator refuses them before consulting the bundle. */
    static FrontProxyAuthenticator withoutCertificates() {
        return new FrontProxyAuthenticator(() -> {
            throw new AssertionError("no trust bundle lookup expected without a client certificate");
        }, java.time.Clock.systemUTC());
    }

    ConnectionGuard guard(int maxConnections, int maxUnauthenticated) {
        return new ConnectionGuard(authenticator, new ConnectionGuard.Limits(maxConnections, maxUnauthenticated,
                Duration.ofSeconds(10), Duration.ofSeconds(30), 8192, 4096, 65536));
    }

    /** What reached the routes' side of the pipeline. */
    static final class Sink extends ChannelInboundHandlerAdapter {
        final List<Object> seen = new ArrayList<>();

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            seen.add(msg instanceof HttpRequest r ? r.method() + " " + r.uri()
                    : msg instanceof LastHttpContent ? "last" : msg instanceof HttpContent ? "content" : msg);
            ReferenceCountUtil.release(msg);
        }
    }

    static EmbeddedChannel channel(ConnectionGuard guard, Sink sink) {
        EmbeddedChannel ch = new EmbeddedChannel(new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel c) {
                c.pipeline().addLast("decoder", new HttpRequestDecoder(4096, 1 << 20, 8192));
                c.pipeline().addLast("decoder-0", guard.newChannelHandler());
                c.pipeline().addLast("encoder", new HttpResponseEncoder());
                c.pipeline().addLast("handler", sink);
            }
        });
        ch.freezeTime();
        return ch;
    }

    static void send(EmbeddedChannel ch, String s) {
        ch.writeInbound(Unpooled.copiedBuffer(s, StandardCharsets.ISO_8859_1));
        ch.runPendingTasks();
    }

    static String response(EmbeddedChannel ch) {
        StringBuilder sb = new StringBuilder();
        Object o;
        while ((o = ch.readOutbound()) != null) {
            ByteBuf b = (ByteBuf) o;
            sb.append(b.toString(StandardCharsets.UTF_8));
            b.release();
        }
        return sb.toString();
    }

    @Test
    void probeWithoutCertificatePassesThrough() {
        Sink sink = new Sink();
        EmbeddedChannel ch = channel(guard(10, 10), sink);
        send(ch, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
        assertThat(sink.seen).containsExactly("GET /healthz", "last");
        assertThat(response(ch)).isEmpty();
        assertThat(ch.isOpen()).isTrue();
    }

    @Test
    void apisRequestWithoutCertificateIsRefusedBeforeItsBody() {
        Sink sink = new Sink();
        EmbeddedChannel ch = channel(guard(10, 10), sink);
        send(ch, "POST " + ALLOCS + " HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n");
        String r = response(ch);
        assertThat(r).startsWith("HTTP/1.1 403 ").contains("connection: close").contains("\"kind\":\"Status\"")
                .contains("\"code\":403").contains("\"message\":\"forbidden\"");
        // answered from the head alone: the body was never sent, read or buffered, and the connection is closed
        assertThat(sink.seen).isEmpty();
        assertThat(closedAfterLinger(ch)).isTrue();
    }

    @Test
    void oversizedHeadWithoutCertificateIs431() {
        Sink sink = new Sink();
        EmbeddedChannel ch = channel(guard(10, 10), sink);
        send(ch, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Filler: " + "a".repeat(9000));
        String r = response(ch);
        assertThat(r).startsWith("HTTP/1.1 431 ").contains("\"code\":431").contains("\"kind\":\"Status\"");
        assertThat(sink.seen).isEmpty();
        assertThat(closedAfterLinger(ch)).isTrue();
    }

    @Test
    void probeBodyBeyondTheUnauthenticatedBudgetIs413() {
        Sink sink = new Sink();
        EmbeddedChannel ch = channel(guard(10, 10), sink);
        send(ch, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n");
        assertThat(response(ch)).startsWith("HTTP/1.1 413 ").contains("\"code\":413")
                .contains("request body is larger than 4096 bytes: /healthz and /readyz take no body; send the probe"
                        + " without one");
        assertThat(closedAfterLinger(ch)).isTrue();

        // chunked: counted as it arrives, refused once over the budget
        Sink sink2 = new Sink();
        EmbeddedChannel ch2 = channel(guard(10, 10), sink2);
        send(ch2, "POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
        send(ch2, "1000\r\n" + "a".repeat(4096) + "\r\n");
        assertThat(response(ch2)).isEmpty();
        send(ch2, "10\r\n" + "a".repeat(16) + "\r\n");
        assertThat(response(ch2)).startsWith("HTTP/1.1 413 ");
        assertThat(closedAfterLinger(ch2)).isTrue();
    }

    @Test
    void nettyErrorsAreStatusObjects() {
        EmbeddedChannel trace = channel(guard(10, 10), new Sink());
        // method before certificate, like the reference: no certificate here, still 405
        send(trace, "TRACE " + ALLOCS + " HTTP/1.1\r\nHost: x\r\n\r\n");
        assertThat(response(trace)).startsWith("HTTP/1.1 405 ").contains("Allow: GET, POST").contains("\"code\":405")
                .contains("\"reason\":\"MethodNotAllowed\"");

        EmbeddedChannel malformed = channel(guard(10, 10), new Sink());
        send(malformed, "GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n");
        assertThat(response(malformed)).startsWith("HTTP/1.1 400 ").contains("\"code\":400")
                .contains("malformed HTTP request");

        EmbeddedChannel noHost = channel(guard(10, 10), new Sink());
        send(noHost, "GET /healthz HTTP/1.1\r\n\r\n");
        assertThat(response(noHost)).startsWith("HTTP/1.1 400 ").contains("missing Host header");

        EmbeddedChannel longLine = channel(guard(10, 10), new Sink());
        send(longLine, "GET /healthz?" + "a".repeat(5000) + " HTTP/1.1\r\nHost: x\r\n\r\n");
        assertThat(response(longLine)).startsWith("HTTP/1.1 414 ").contains("\"code\":414");
    }

    /**
     * A HEAD to an API path skips the certificate check (the front door answers it without a body), so without a
     * trusted certificate it has the 4 KiB budget of that connection; its 413 says that a HEAD takes no body, not
     * what a probe takes.
     */
    @Test
    void headBodyBeyondTheUnauthenticatedBudgetIs413SayingAHeadTakesNoBody() {
        Sink sink = new Sink();
        EmbeddedChannel ch = channel(guard(10, 10), sink);
        send(ch, "HEAD " + ALLOCS + " HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n");
        send(ch, "a".repeat(5000));
        String r = response(ch);
        assertThat(r).startsWith("HTTP/1.1 413 ").contains("\"code\":413")
                .contains("request body is larger than 4096 bytes: a HEAD request takes no body; send it without one")
                .doesNotContain("/healthz");
        assertThat(closedAfterLinger(ch)).isTrue();

        // chunked, after a probe on the same connection: counted as it arrives against the same budget
        Sink sink2 = new Sink();
        EmbeddedChannel ch2 = channel(guard(10, 10), sink2);
        send(ch2, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
        assertThat(sink2.seen).containsExactly("GET /healthz", "last");
        send(ch2, "HEAD " + ALLOCS + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
        send(ch2, "1000\r\n" + "a".repeat(4096) + "\r\n");
        assertThat(response(ch2)).isEmpty();
        send(ch2, "10\r\n" + "a".repeat(16) + "\r\n");
        assertThat(response(ch2)).startsWith("HTTP/1.1 413 ")
                .contains("request body is larger than 4096 bytes: a HEAD request takes no body; send it without one");
        assertThat(closedAfterLinger(ch2)).isTrue();
    }

    @Test
    void versionsHostsAndExpectationsAreJudgedAsGoJudgesThem() {
        EmbeddedChannel two = channel(guard(10, 10), new Sink());
        send(two, "GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n");
        assertThat(response(two)).startsWith("HTTP/1.1 505 ").contains("\"code\":505")
                .contains("unsupported protocol version");

        // the HTTP/2 preface, and a version Netty upper-cased into an HTTP/1.1 of its own: misspelt, 400
        for (String line : List.of("PRI * HTTP/2.0", "GET /healthz http/1.1")) {
            EmbeddedChannel ch = channel(guard(10, 10), new Sink());
            send(ch, line + "\r\nHost: x\r\n\r\n");
            assertThat(response(ch)).as(line).startsWith("HTTP/1.1 400 ").contains("malformed HTTP version");
        }

        // HTTP/1.0 needs no Host and gets through; an expectation other than 100-continue is 417
        Sink old = new Sink();
        EmbeddedChannel http10 = channel(guard(10, 10), old);
        send(http10, "GET /healthz HTTP/1.0\r\n\r\n");
        assertThat(old.seen).containsExactly("GET /healthz", "last");
        assertThat(response(http10)).isEmpty();

        EmbeddedChannel expect = channel(guard(10, 10), new Sink());
        send(expect, "GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\n\r\n");
        assertThat(response(expect)).startsWith("HTTP/1.1 417 ").contains("\"reason\":\"ExpectationFailed\"");
        Sink continued = new Sink();
        EmbeddedChannel cont = channel(guard(10, 10), continued);
        send(cont, "GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\n\r\n");
        assertThat(continued.seen).containsExactly("GET /healthz", "last");
    }

    @Test
    void slowHeadAndSlowBodyAreCutOffByTheirDeadlines() {
        Sink sink = new Sink();
        EmbeddedChannel head = channel(guard(10, 10), sink);
        send(head, "GET /healthz HTTP/1.1\r\n");
        head.advanceTimeBy(9, TimeUnit.SECONDS);
        head.runScheduledPendingTasks();
        send(head, "Host: x\r\n");
        assertThat(head.isOpen()).isTrue();
        head.advanceTimeBy(2, TimeUnit.SECONDS);
        head.runScheduledPendingTasks();
        assertThat(head.isOpen()).isFalse();

        EmbeddedChannel body = channel(guard(10, 10), new Sink());
        send(body, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc");
        body.advanceTimeBy(29, TimeUnit.SECONDS);
        body.runScheduledPendingTasks();
        assertThat(body.isOpen()).isTrue();
        body.advanceTimeBy(2, TimeUnit.SECONDS);
        body.runScheduledPendingTasks();
        assertThat(body.isOpen()).isFalse();

        // a kept-alive connection between requests is left to the idle timeout; the next head gets a fresh deadline
        Sink sink3 = new Sink();
        EmbeddedChannel idle = channel(guard(10, 10), sink3);
        send(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
        idle.advanceTimeBy(60, TimeUnit.SECONDS);
        idle.runScheduledPendingTasks();
        assertThat(idle.isOpen()).isTrue();
        send(idle, "GET /readyz HTTP/1.1\r\n");
        idle.advanceTimeBy(11, TimeUnit.SECONDS);
        idle.runScheduledPendingTasks();
        assertThat(idle.isOpen()).isFalse();
        assertThat(sink3.seen).containsExactly("GET /healthz", "last");
    }

    @Test
    void connectionsBeyondTheCapAreClosedAndTheOldestUnauthenticatedIsEvicted() {
        ConnectionGuard capped = guard(3, 2);
        EmbeddedChannel a = channel(capped, new Sink());
        EmbeddedChannel b = channel(capped, new Sink());
        assertThat(capped.unauthenticatedConnections()).isEqualTo(2);
        EmbeddedChannel c = channel(capped, new Sink());
        // the oldest unauthenticated connection made room for the newest
        assertThat(a.isOpen()).isFalse();
        assertThat(b.isOpen()).isTrue();
        assertThat(c.isOpen()).isTrue();
        assertThat(capped.evicted()).isEqualTo(1);
        assertThat(capped.unauthenticatedConnections()).isEqualTo(2);
        assertThat(capped.openConnections()).isEqualTo(2);

        ConnectionGuard total = guard(2, 10);
        EmbeddedChannel x = channel(total, new Sink());
        EmbeddedChannel y = channel(total, new Sink());
        EmbeddedChannel z = channel(total, new Sink());
        assertThat(x.isOpen()).isTrue();
        assertThat(y.isOpen()).isTrue();
        assertThat(z.isOpen()).isFalse();
        assertThat(total.refused()).isEqualTo(1);
        assertThat(total.openConnections()).isEqualTo(2);
        x.close();
        assertThat(total.openConnections()).isEqualTo(1);
        assertThat(channel(total, new Sink()).isOpen()).isTrue();
    }

    /**
     * A client whose certificate the trust bundle does not trust may still call the probes. Asking whether its
     * connection is trusted (at the handshake, and at each later request head, here with a verdict made against a
     * new bundle generation each time) refuses nothing, so it writes no refusal line; the /apis request refused for
     * that certificate does, once.
     */
    @Test
    void probesOverAConnectionWithAnUntrustedCertificateLogNoRefusal() throws Exception {
        java.time.Instant now = java.time.Instant.now();
        Pki.Issued otherCa = Pki.selfSigned(Pki.Subject.cn("other-ca"), Pki.Usage.CA, now.minusSeconds(3600),
                Duration.ofDays(1));
        Pki.Issued client = Pki.issue(otherCa, Pki.Subject.cn("front-proxy-client"), Pki.Usage.CLIENT,
                now.minusSeconds(3600), Duration.ofDays(1));
        Pki.Issued frontProxyCa = Pki.selfSigned(Pki.Subject.cn("front-proxy-ca"), Pki.Usage.CA,
                now.minusSeconds(3600), Duration.ofDays(1));
        Pki.Issued server = Pki.selfSigned(Pki.Subject.cn("server"), Pki.Usage.SERVER, now.minusSeconds(3600),
                Duration.ofDays(1));
        AtomicLong generation = new AtomicLong(1);
        FrontProxyAuthenticator auth = new FrontProxyAuthenticator(() -> new TrustBundle(
                List.of(frontProxyCa.certificate()), Set.of(), null, generation.get()), java.time.Clock.systemUTC());
        ConnectionGuard guard = new ConnectionGuard(auth, new ConnectionGuard.Limits(10, 10, Duration.ofSeconds(10),
                Duration.ofSeconds(30), 8192, 4096, 65536));

        SSLEngine serverEngine = OperatorHarness.sslContext(server).createSSLEngine();
        serverEngine.setUseClientMode(false);
        serverEngine.setWantClientAuth(true);
        SSLEngine clientEngine = OperatorHarness.sslContext(client).createSSLEngine();
        clientEngine.setUseClientMode(true);
        Sink sink = new Sink();
        EmbeddedChannel srv = new EmbeddedChannel(new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel c) {
                c.pipeline().addLast("ssl", new SslHandler(serverEngine));
                c.pipeline().addLast("decoder", new HttpRequestDecoder(4096, 1 << 20, 8192));
                c.pipeline().addLast("decoder-0", guard.newChannelHandler());
                c.pipeline().addLast("encoder", new HttpResponseEncoder());
                c.pipeline().addLast("handler", sink);
            }
        });
        EmbeddedChannel cli = new EmbeddedChannel(new SslHandler(clientEngine));
        pump(cli, srv);

        for (int i = 0; i < 3; i++) {
            generation.incrementAndGet(); // a verdict made before does not stand for this head
            cli.writeOutbound(Unpooled.copiedBuffer("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
                    StandardCharsets.ISO_8859_1));
            pump(cli, srv);
        }
        assertThat(sink.seen).containsExactly("GET /healthz", "last", "GET /healthz", "last", "GET /healthz",
                "last");
        assertThat(srv.isOpen()).isTrue();
        assertThat(refusalLines()).as("nothing was refused").isEmpty();

        cli.writeOutbound(Unpooled.copiedBuffer("POST " + ALLOCS + " HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                + "\r\n", StandardCharsets.ISO_8859_1));
        pump(cli, srv);
        StringBuilder answer = new StringBuilder();
        Object in;
        while ((in = cli.readInbound()) != null) {
            answer.append(((ByteBuf) in).toString(StandardCharsets.UTF_8));
            ((ByteBuf) in).release();
        }
        assertThat(answer.toString()).startsWith("HTTP/1.1 403 ");
        assertThat(refusalLines()).as("the /apis request refused").singleElement().asString()
                .contains("front-proxy client certificate refused cn=\"front-proxy-client\"");
    }

    /** The refusal lines (INFO) the authenticator wrote. */
    List<String> refusalLines() {
        return authenticatorLogs.lines().stream().filter(e -> e.getLevel() == ch.qos.logback.classic.Level.INFO)
                .map(ch.qos.logback.classic.spi.ILoggingEvent::getFormattedMessage).toList();
    }

    /** Moves the bytes each side wrote to the other until neither has more. */
    static void pump(EmbeddedChannel a, EmbeddedChannel b) {
        boolean moved = true;
        while (moved) {
            moved = false;
            a.runPendingTasks();
            b.runPendingTasks();
            Object o;
            while ((o = a.readOutbound()) != null) {
                b.writeInbound(o);
                moved = true;
            }
            while ((o = b.readOutbound()) != null) {
                a.writeInbound(o);
                moved = true;
            }
        }
    }

    /** A refused connection drains for {@link ConnectionGuard#LINGER_MILLIS}, then closes. */
    static boolean closedAfterLinger(EmbeddedChannel ch) {
        ch.advanceTimeBy(ConnectionGuard.LINGER_MILLIS, TimeUnit.MILLISECONDS);
        ch.runScheduledPendingTasks();
        return !ch.isOpen();
    }
}
