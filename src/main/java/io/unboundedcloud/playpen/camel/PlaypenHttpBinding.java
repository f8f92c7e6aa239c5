package io.unboundedcloud.playpen.camel;

import java.util.Map;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import org.apache.camel.Exchange;
import org.apache.camel.component.netty.http.DefaultNettyHttpBinding;
import org.apache.camel.component.netty.http.NettyHttpConfiguration;

/**
 * camel-netty-http decodes form bodies into headers (and drops the connection on odd ones) before any route
 * runs. This binding hides a non-JSON Content-Type from that step and keeps it in an exchange property, so
 * the front door can answer 415 as a Status.
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
        try {
            super.populateCamelHeaders(request, headers, exchange, configuration);
        } finally {
            if (contentType != null) {
                request.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
                headers.put(Exchange.CONTENT_TYPE, contentType);
            }
        }
    }
}
