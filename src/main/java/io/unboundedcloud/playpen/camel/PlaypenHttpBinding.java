package io.unboundedcloud.playpen.camel;

import java.util.Map;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import org.apache.camel.Exchange;
import org.apache.camel.component.netty.http.DefaultNettyHttpBinding;
import org.apache.camel.component.netty.http.NettyHttpConfiguration;

/**
 * Two things camel-netty-http does before any route runs that an aggregated API server must not:
 * <ul>
 * <li>it decodes form bodies into headers (and drops the connection on odd ones): this binding hides a non-JSON
 * Content-Type from that step and keeps it in an exchange property, so the front door can answer 415 as a
 * Status;</li>
 * <li>it maps query parameters to headers, mixed with the real ones. The aggregator replaces the X-Remote-*
 * identity headers but passes the query string through, so {@code ?X-Remote-Group=system:masters} would reach
 * the SubjectAccessReview. This API takes no query parameters: the query is kept out of that step.</li>
 * </ul>
 */
public class PlaypenHttpBinding extends DefaultNettyHttpBinding {
    public static final String ORIGINAL_CONTENT_TYPE = "playpen.contentType";

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
        } finally {
            request.setUri(uri);
            if (contentType != null) {
                request.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
                headers.put(Exchange.CONTENT_TYPE, contentType);
            }
        }
    }
}
