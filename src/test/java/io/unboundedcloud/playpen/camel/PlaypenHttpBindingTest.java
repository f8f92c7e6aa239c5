package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import org.apache.camel.Exchange;
import org.apache.camel.component.netty.http.NettyHttpConfiguration;
import org.apache.camel.component.netty.http.NettyHttpHeaderFilterStrategy;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.spi.HeaderFilterStrategy;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The HTTP binding on its own, with camel-netty-http's own header mapping behind it: a form-encoded body is not
 * decoded into headers (its Content-Type is hidden from that step, kept in a property and put back), the query
 * string is not mapped to headers (an identity header in the query reaches no step), a target java.net.URI cannot
 * parse does not fail the request, the request is left as it came, and the header filter lets {@code Warning}
 * out and nothing else that Camel's own filter keeps in.
 */
class PlaypenHttpBindingTest {
    private final DefaultCamelContext camel = new DefaultCamelContext();
    private final PlaypenHttpBinding binding = new PlaypenHttpBinding();

    @AfterEach
    void stop() throws Exception {
        camel.close();
    }

    private Map<String, Object> populate(FullHttpRequest request, Exchange exchange) throws Exception {
        Map<String, Object> headers = new HashMap<>();
        binding.populateCamelHeaders(request, headers, exchange, new NettyHttpConfiguration());
        return headers;
    }

    private static FullHttpRequest request(HttpMethod method, String target, String contentType, String body) {
        FullHttpRequest r = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, method, target,
                Unpooled.copiedBuffer(body, StandardCharsets.UTF_8));
        r.headers().set(HttpHeaderNames.HOST, "playpen");
        if (contentType != null) {
            r.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
        }
        return r;
    }

    @Test
    void aFormBodyIsNotDecodedIntoHeadersAndItsContentTypeIsKept() throws Exception {
        String form = "application/x-www-form-urlencoded";
        FullHttpRequest r = request(HttpMethod.POST, "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs", form,
                "X-Remote-User=admin&idempotencyKey=k");
        Exchange exchange = new DefaultExchange(camel);
        Map<String, Object> headers = populate(r, exchange);

        assertThat(headers).doesNotContainKeys("X-Remote-User", "idempotencyKey");
        assertThat(headers).containsEntry(Exchange.CONTENT_TYPE, form);
        assertThat(exchange.getProperty(PlaypenHttpBinding.ORIGINAL_CONTENT_TYPE)).isEqualTo(form);
        assertThat(r.headers().get(HttpHeaderNames.CONTENT_TYPE)).as("the request is left as it came").isEqualTo(form);
        assertThat(r.content().toString(StandardCharsets.UTF_8)).isEqualTo("X-Remote-User=admin&idempotencyKey=k");
    }

    @Test
    void withoutAContentTypeNoneIsMadeUp() throws Exception {
        FullHttpRequest r = request(HttpMethod.POST, "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs", null, "{}");
        Exchange exchange = new DefaultExchange(camel);
        Map<String, Object> headers = populate(r, exchange);

        assertThat(headers).doesNotContainKey(Exchange.CONTENT_TYPE);
        assertThat(exchange.getProperty(PlaypenHttpBinding.ORIGINAL_CONTENT_TYPE)).isNull();
        assertThat(r.headers().contains(HttpHeaderNames.CONTENT_TYPE)).isFalse();
    }

    @Test
    void theQueryStringReachesNoHeader() throws Exception {
        String target = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs?X-Remote-Group=system:masters&limit=5";
        FullHttpRequest r = request(HttpMethod.GET, target, null, "");
        Map<String, Object> headers = populate(r, new DefaultExchange(camel));

        assertThat(headers).doesNotContainKeys("X-Remote-Group", "limit");
        assertThat(headers).containsEntry(Exchange.HTTP_METHOD, "GET");
        assertThat(r.uri()).as("the request is left as it came").isEqualTo(target);
    }

    @Test
    void aTargetJavaCannotParseDoesNotFailTheRequest() throws Exception {
        String target = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs/%zz{|}";
        FullHttpRequest r = request(HttpMethod.GET, target, "application/json", "");
        Exchange exchange = new DefaultExchange(camel);
        Map<String, Object> headers = populate(r, exchange);

        assertThat(headers).containsEntry(Exchange.HTTP_METHOD, "GET");
        assertThat(headers).containsEntry(Exchange.CONTENT_TYPE, "application/json");
        assertThat(headers).as("mapped as a request for / (the request's own headers too)")
                .containsEntry(Exchange.HTTP_URI, "/").containsEntry("host", "playpen");
        assertThat(r.uri()).as("the front door answers from the raw target").isEqualTo(target);
        assertThat(r.headers().get(HttpHeaderNames.CONTENT_TYPE)).isEqualTo("application/json");
    }

    @Test
    void warningHeadersGoOutAndEverythingElseIsFilteredAsCamelDoes() {
        HeaderFilterStrategy filter = binding.getHeaderFilterStrategy();
        HeaderFilterStrategy camels = new NettyHttpHeaderFilterStrategy();
        Exchange exchange = new DefaultExchange(camel);

        assertThat(filter.applyFilterToCamelHeaders("Warning", "299 - \"x\"", exchange)).isFalse();
        assertThat(filter.applyFilterToCamelHeaders("warning", "299 - \"x\"", exchange)).isFalse();
        assertThat(camels.applyFilterToCamelHeaders("Warning", "299 - \"x\"", exchange))
                .as("Camel's own filter keeps it in").isTrue();
        for (String name : new String[] {"Connection", "Transfer-Encoding", "CamelHttpUri", "Content-Length"}) {
            assertThat(filter.applyFilterToCamelHeaders(name, "v", exchange)).as(name)
                    .isEqualTo(camels.applyFilterToCamelHeaders(name, "v", exchange)).isTrue();
        }
        assertThat(filter.applyFilterToCamelHeaders("Retry-After", "1", exchange)).isFalse();
        for (String name : new String[] {"Warning", "Connection", "X-Remote-User", "CamelHttpUri"}) {
            assertThat(filter.applyFilterToExternalHeaders(name, "v", exchange)).as("incoming " + name)
                    .isEqualTo(camels.applyFilterToExternalHeaders(name, "v", exchange));
        }
    }

    @Test
    void theFilterSetByTheEndpointIsWrappedOnce() {
        Exchange exchange = new DefaultExchange(camel);
        HeaderFilterStrategy dropsAll = new HeaderFilterStrategy() {
            @Override
            public boolean applyFilterToCamelHeaders(String name, Object value, Exchange e) {
                return true;
            }

            @Override
            public boolean applyFilterToExternalHeaders(String name, Object value, Exchange e) {
                return true;
            }
        };
        binding.setHeaderFilterStrategy(dropsAll);
        HeaderFilterStrategy wrapped = binding.getHeaderFilterStrategy();
        assertThat(wrapped.applyFilterToCamelHeaders("Warning", "v", exchange)).isFalse();
        assertThat(wrapped.applyFilterToCamelHeaders("Retry-After", "v", exchange)).isTrue();
        assertThat(wrapped.applyFilterToExternalHeaders("Warning", "v", exchange)).isTrue();

        binding.setHeaderFilterStrategy(wrapped);
        assertThat(binding.getHeaderFilterStrategy()).as("not wrapped again").isSameAs(wrapped);
        binding.setHeaderFilterStrategy(null);
        assertThat(binding.getHeaderFilterStrategy()).isNull();
    }
}
