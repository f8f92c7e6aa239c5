package io.unboundedcloud.playpen.camel;

import java.net.URISyntaxException;
import java.util.Map;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.component.netty.http.DefaultNettyHttpBinding;
import org.apache.camel.component.netty.http.NettyHttpConfiguration;

/**
 * Three things camel-netty-http does before any route runs that an aggregated API server must not:
 * <ul>
 * <li>it decodes form bodies into headers (and drops the connection on odd ones): this binding hides the
 * Content-Type from that step and keeps it in an exchange property, so a form-encoded POST is read like any other
 * body (the reference ignores Content-Type) and the flows can answer 415 for a charset other than UTF-8;</li>
 * <li>it maps query parameters to headers, mixed with the real ones. The aggregator replaces the X-Remote-*
 * identity headers but passes the query string through, so {@code ?X-Remote-Group=system:masters} would reach
 * the SubjectAccessReview. This API takes no query parameters: the query is kept out of that step.</li>
 * <li>it parses the request target with java.net.URI and drops the connection when that fails: such a target is
 * replaced by "/" for that step only, and the front door answers from the raw one.</li>
 * </ul>
 */
public class PlaypenHttpBinding extends DefaultNettyHttpBinding {
    public static final String ORIGINAL_CONTENT_TYPE = "playpen.contentType";

    public PlaypenHttpBinding() {
        setHeaderFilterStrategy(new org.apache.camel.component.netty.http.NettyHttpHeaderFilterStrategy());
    }

    /**
     * Camel's header filter (the endpoint sets its own here), except that a {@code Warning} header goes out: it is how
     * the API warns clients, as kube-apiserver does, and kubectl prints it. Camel drops it as a hop-by-hop header.
     */
    @Override
    public void setHeaderFilterStrategy(org.apache.camel.spi.HeaderFilterStrategy strategy) {
        super.setHeaderFilterStrategy(strategy == null || strategy instanceof LetWarningsOut ? strategy
                : new LetWarningsOut(strategy));
    }

    private record LetWarningsOut(org.apache.camel.spi.HeaderFilterStrategy delegate)
            implements org.apache.camel.spi.HeaderFilterStrategy {
        @Override
        public boolean applyFilterToCamelHeaders(String name, Object value, Exchange exchange) {
            return !"warning".equalsIgnoreCase(name) && delegate.applyFilterToCamelHeaders(name, value, exchange);
        }

        @Override
        public boolean applyFilterToExternalHeaders(String name, Object value, Exchange exchange) {
            return delegate.applyFilterToExternalHeaders(name, value, exchange);
        }
    }

    /**
     * The request's body as the bytes it holds (the flows read it as {@code byte[]}): camel-netty-http hands it on as
     * a stream, which Camel's converter copies to an array through one or two 8 KiB buffers of its own per request.
     */
    @Override
    public Message toCamelMessage(FullHttpRequest request, Exchange exchange, NettyHttpConfiguration configuration)
            throws Exception {
        Message message = super.toCamelMessage(request, exchange, configuration);
        ByteBuf content = request.content();
        message.setBody(content.isReadable() ? ByteBufUtil.getBytes(content) : NO_BYTES);
        return message;
    }

    private static final byte[] NO_BYTES = new byte[0];

    /**
     * A watch's answer ({@link WatchStream} as the body) is its head only, chunked: the stream writes the events after
     * it. Camel closes the connection after a response it was asked to close it after; a watch's would be cut off
     * after its head, so the stream closes it after its last chunk instead.
     */
    @Override
    public io.netty.handler.codec.http.HttpResponse toNettyResponse(Message message, NettyHttpConfiguration configuration)
            throws Exception {
        if (!(message.getBody() instanceof WatchStream stream)) {
            return super.toNettyResponse(message, configuration);
        }
        message.setBody(NO_BYTES);
        io.netty.handler.codec.http.HttpResponse built = super.toNettyResponse(message, configuration);
        io.netty.util.ReferenceCountUtil.release(built);
        message.removeHeader(org.apache.camel.component.netty.NettyConstants.NETTY_CLOSE_CHANNEL_WHEN_COMPLETE);
        message.getExchange().removeProperty(org.apache.camel.component.netty.NettyConstants.NETTY_CLOSE_CHANNEL_WHEN_COMPLETE);
        return WatchStream.head(built, stream);
    }

    @Override
    public void populateCamelHeaders(HttpRequest request, Map<String, Object> headers, Exchange exchange,
            NettyHttpConfiguration configuration) throws Exception {
        String contentType = request.headers().get(HttpHeaderNames.CONTENT_TYPE);
        if (contentType != null) {
            exchange.setProperty(ORIGINAL_CONTENT_TYPE, contentType);
            request.headers().remove(HttpHeaderNames.CONTENT_TYPE);
        }
        String uri = request.uri();
        int query = uri.indexOf('?');
        if (query >= 0) {
            request.setUri(uri.substring(0, query));
        }
        try {
            super.populateCamelHeaders(request, headers, exchange, configuration);
        } catch (URISyntaxException e) {
            // Camel parses the target with java.net.URI and drops the connection when it cannot (a bad %-escape,
            // '{', '|'); the front door routes on the raw target from the request and answers 400 or 404
            request.setUri("/");
            super.populateCamelHeaders(request, headers, exchange, configuration);
        } finally {
            request.setUri(uri);
            if (contentType != null) {
                request.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
                headers.put(Exchange.CONTENT_TYPE, contentType);
            }
        }
        // a header sent on several lines reaches Camel as a list of them; the key is the first line's, as the Go
        // operator reads a header (Header.Get) and as the connection guard reads it
        if (headers.get(IDEMPOTENCY_KEY) instanceof java.util.List<?> lines && !lines.isEmpty()) {
            headers.put(IDEMPOTENCY_KEY, lines.get(0));
        }
    }

    private static final String IDEMPOTENCY_KEY = "Idempotency-Key";
}
