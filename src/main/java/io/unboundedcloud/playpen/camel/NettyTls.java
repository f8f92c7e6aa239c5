package io.unboundedcloud.playpen.camel;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import javax.net.ssl.SSLContext;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;
import io.unboundedcloud.playpen.tls.ServingTls;
import org.apache.camel.CamelContext;
import org.apache.camel.component.netty.ChannelHandlerFactory;
import org.apache.camel.support.jsse.SSLContextParameters;

/**
 * Adapts {@link ServingTls} to camel-netty-http: a per-channel SslHandler factory (want-client-auth, TLS 1.3 only),
 * the SSLContextParameters camel-netty insists on when ssl=true, and an idle-connection closer.
 */
public final class NettyTls {
    private NettyTls() {
    }

    /** Referenced as {@code sslHandler=#...}: netty-http asks it for a new handler per connection. */
    public static final class SslHandlerFactory extends SslHandler implements ChannelHandlerFactory {
        private final ServingTls tls;

        public SslHandlerFactory(ServingTls tls) {
            // this instance only makes handlers; a JDK engine here holds no native memory, whatever the provider
            super(tls.context().createSSLEngine());
            this.tls = tls;
        }

        @Override
        public ChannelHandler newChannelHandler() {
            return new SslHandler(tls.newServerEngine());
        }
    }

    /** Referenced as {@code sslContextParameters=#...}; only its context is used (the handler comes from the factory). */
    public static final class ContextParameters extends SSLContextParameters {
        private final transient ServingTls tls;

        public ContextParameters(ServingTls tls) {
            this.tls = tls;
        }

        @Override
        public SSLContext createSSLContext(CamelContext camelContext) {
            return tls.context();
        }
    }

    /**
     * Set by the connection guard while a request it passed on has no answer written yet, or its answer is a watch
     * still streaming: the idle closer leaves the connection open, since the quiet is the operator's (waiting for the
     * API server, for its watch, for capacity, or between a watch's events), not the client's.
     */
    public static final io.netty.util.AttributeKey<Boolean> ANSWER_DUE = io.netty.util.AttributeKey.valueOf("playpenAnswerDue");

    /**
     * Referenced as {@code decoders=#...}: closes connections that stay idle longer than the timeout; a zero timeout
     * closes none (a handler that passes everything on).
     */
    public static final class IdleCloser extends ChannelInboundHandlerAdapter implements ChannelHandlerFactory {
        private final long millis;

        public IdleCloser(Duration timeout) {
            this.millis = timeout.toMillis();
        }

        @Override
        public ChannelHandler newChannelHandler() {
            if (millis <= 0) {
                return new ChannelInboundHandlerAdapter();
            }
            return new IdleStateHandler(0, 0, millis, TimeUnit.MILLISECONDS) {
                @Override
                protected void channelIdle(ChannelHandlerContext ctx, IdleStateEvent evt) {
                    if (Boolean.TRUE.equals(ctx.channel().attr(ANSWER_DUE).get())) {
                        // a request still being answered is quiet, not idle
                        return;
                    }
                    ctx.close();
                }
            };
        }
    }
}
