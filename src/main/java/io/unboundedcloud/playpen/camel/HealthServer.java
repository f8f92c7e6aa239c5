package io.unboundedcloud.playpen.camel;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpServerExpectContinueHandler;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;

import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.kube.DaemonThreads;

/**
 * The probe listener (--health-addr, plain HTTP): {@code /healthz} and {@code /readyz} answered as on the HTTPS port
 * (204, or 503 with a Status saying why while not ready), and nothing else. It has its own socket and event loop, so however
 * many connections API clients hold or open on the HTTPS port, kubelet's probes are still answered. Its I/O never
 * blocks a thread: a connection that sends part of a request and then nothing holds no thread the probes need. A
 * request must arrive in full within the read deadline of the connection's opening or of the previous answer
 * (trickling bytes does not extend it), or the connection is closed; a connection beyond {@value #MAX_CONNECTIONS}
 * open ones is closed at once, unanswered.
 */
public final class HealthServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(HealthServer.class);
    /** How long a request may take to arrive, from the connection's opening or the previous answer (kubelet's probes take 1 s). */
    static final Duration READ_DEADLINE = Duration.ofSeconds(10);
    /** Open connections at most; kubelet's probes use a handful. */
    static final int MAX_CONNECTIONS = 64;

    private final EventLoopGroup group;
    private final Channel listener;
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();

    /** {@code notReady}: why the replica is not ready, or null while it is. */
    public HealthServer(String host, int port, Supplier<String> notReady, int retryAfterSeconds) {
        this(host, port, notReady, retryAfterSeconds, READ_DEADLINE);
    }

    HealthServer(String host, int port, Supplier<String> notReady, int retryAfterSeconds, Duration readDeadline) {
        this(host, port, notReady, retryAfterSeconds, readDeadline, MAX_CONNECTIONS);
    }

    HealthServer(String host, int port, Supplier<String> notReady, int retryAfterSeconds, Duration readDeadline,
            int maxConnections) {
        group = new NioEventLoopGroup(1, DaemonThreads.named("health-http"));
        long deadlineMillis = Math.max(1, readDeadline.toMillis());
        AtomicInteger open = new AtomicInteger();
        try {
            listener = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            int n = open.incrementAndGet();
                            ch.closeFuture().addListener(f -> open.decrementAndGet());
                            if (n > maxConnections) {
                                ch.close();
                                return;
                            }
                            ch.pipeline().addLast(new HttpServerCodec(4096, 8192, 8192),
                                    new HttpServerExpectContinueHandler(), new Probe(notReady, retryAfterSeconds, deadlineMillis));
                        }
                    })
                    .bind(new InetSocketAddress(host.isEmpty() ? "0.0.0.0" : host, port)).syncUninterruptibly()
                    .channel();
        } catch (RuntimeException e) {
            group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
            throw e;
        }
    }

    /** Answers each request once its body (ignored, never buffered) has arrived. */
    private static final class Probe extends SimpleChannelInboundHandler<HttpObject> {
        private final Supplier<String> notReady;
        private final int retryAfterSeconds;
        private final long deadlineMillis;
        private HttpRequest request;
        private ScheduledFuture<?> deadline;

        Probe(Supplier<String> notReady, int retryAfterSeconds, long deadlineMillis) {
            super(false);
            this.notReady = notReady;
            this.retryAfterSeconds = retryAfterSeconds;
            this.deadlineMillis = deadlineMillis;
        }

        /**
         * The next request must arrive in full within the deadline, counted from the connection's opening or the
         * previous answer; bytes trickled in do not extend it.
         */
        private void arm(ChannelHandlerContext ctx) {
            if (deadline != null) {
                deadline.cancel(false);
            }
            deadline = ctx.executor().schedule(() -> {
                ctx.close();
            }, deadlineMillis, TimeUnit.MILLISECONDS);
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) throws Exception {
            arm(ctx);
            super.channelActive(ctx);
        }

        /**
         * Answers that back up (a client pipelining requests and never reading) stop the reading of its requests
         * until they drain: otherwise each request read would add an answer to memory without end.
         */
        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) throws Exception {
            ctx.channel().config().setAutoRead(ctx.channel().isWritable());
            super.channelWritabilityChanged(ctx);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) throws Exception {
            if (deadline != null) {
                deadline.cancel(false);
            }
            super.channelInactive(ctx);
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, HttpObject msg) {
            try {
                if (msg.decoderResult().isFailure()) {
                    request = null;
                    FullHttpResponse bad = ConnectionGuard.statusResponse(
                            ConnectionGuard.badHead(msg.decoderResult().cause()), false);
                    bad.headers().set(HttpHeaderNames.CONNECTION, "close");
                    ctx.writeAndFlush(bad).addListener(ChannelFutureListener.CLOSE);
                    return;
                }
                if (msg instanceof HttpRequest r) {
                    request = r;
                }
                if (msg instanceof LastHttpContent && request != null) {
                    HttpRequest r = request;
                    request = null;
                    answer(ctx, r);
                    arm(ctx);
                }
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }

        private void answer(ChannelHandlerContext ctx, HttpRequest r) {
            String path = io.unboundedcloud.playpen.api.ApiPaths.rawPath(r.uri());
            FullHttpResponse response;
            String why = "/readyz".equals(path) ? notReady.get() : null;
            if ("/healthz".equals(path) || ("/readyz".equals(path) && why == null)) {
                response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.NO_CONTENT);
            } else {
                ApiException e = why != null ? ApiException.unavailable(why, retryAfterSeconds)
                        : ApiException.notFound("the probe listener serves /healthz and /readyz only");
                response = ConnectionGuard.statusResponse(e, HttpMethod.HEAD.equals(r.method()));
            }
            boolean keepAlive = HttpUtil.isKeepAlive(r);
            if (!keepAlive) {
                response.headers().set(HttpHeaderNames.CONNECTION, "close");
            }
            var written = ctx.writeAndFlush(response);
            if (!keepAlive) {
                written.addListener(ChannelFutureListener.CLOSE);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            // a read deadline or a reset: nothing to answer
            ctx.close();
        }
    }

    public void start() {
        LOG.info("probe listener on http://{}:{} (/healthz, /readyz)", address().getHostString(), address().getPort());
    }

    public InetSocketAddress address() {
        return (InetSocketAddress) listener.localAddress();
    }

    /** Stops listening; a second close does nothing. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        listener.close().syncUninterruptibly();
        group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS).syncUninterruptibly();
    }
}
