package io.unboundedcloud.playpen.bench;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.ssl.SslHandler;
import io.unboundedcloud.playpen.tls.Pki;
import io.unboundedcloud.playpen.tls.ServingTls;

/**
 * The floor under any HTTPS front door on this machine: a bare Netty server with the operator's TLS setup
 * ({@link ServingTls}: TLS 1.3, client certificate wanted, its cipher order) that answers every request on its I/O
 * thread with fixed bytes (an alloc answer's). No routing, no authentication, no thread hand-off. Measured with the
 * same client as the alloc and replay requests, it is what the client, TLS and HTTP cost before the operator does
 * anything, so (floor + bare PATCH) is the least an allocation (a request that then makes a claim PATCH) can cost.
 */
final class TlsFloor implements AutoCloseable {
    private final EventLoopGroup group = new NioEventLoopGroup(1);
    private final Channel server;

    private TlsFloor(ServingTls tls, byte[] answer) throws InterruptedException {
        server = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new SslHandler(tls.newServerEngine()), new HttpServerCodec(),
                                new HttpObjectAggregator(65536), new SimpleChannelInboundHandler<FullHttpRequest>() {
                                    @Override
                                    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
                                        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                                                HttpResponseStatus.OK, Unpooled.wrappedBuffer(answer));
                                        r.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json")
                                                .setInt(HttpHeaderNames.CONTENT_LENGTH, answer.length);
                                        ctx.writeAndFlush(r);
                                    }
                                });
                    }
                }).bind("127.0.0.1", 0).sync().channel();
    }

    /** A floor server on a free loopback port with a new self-signed serving certificate. */
    static TlsFloor start(Pki.Issued clientCa, byte[] answer) throws InterruptedException {
        Pki.Issued serving = Pki.selfSigned(new Pki.Subject("playpen-floor", List.of(), List.of("localhost"),
                List.of("127.0.0.1")), Pki.Usage.SERVER, Instant.now().minusSeconds(60), Duration.ofHours(1));
        return new TlsFloor(new ServingTls(serving.certificatePem(), serving.privateKeyPem(),
                () -> List.of(clientCa.certificate())), answer);
    }

    int port() {
        return ((java.net.InetSocketAddress) server.localAddress()).getPort();
    }

    @Override
    public void close() {
        server.close().syncUninterruptibly();
        group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).syncUninterruptibly();
    }
}
