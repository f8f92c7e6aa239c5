package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;

import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * An exchange is answered once: for a failed flow the reply writer runs in the error handler and again at the end
 * of the ingress route, and the second run changes nothing (neither the answer nor the request counters). The
 * answer's result is left for the audit line; the request's own headers never go back; a HEAD answer has no body.
 */
class ReplyWriterOnceTest {
    final CamelContext camel = new DefaultCamelContext();
    final OperatorMetrics metrics = new OperatorMetrics();
    final ReplyWriter writer = new ReplyWriter(1, metrics);

    @AfterEach
    void down() throws Exception {
        camel.close();
    }

    @Test
    void aSecondRunLeavesTheFirstAnswerAndCountsNothingMore() {
        Exchange e = new DefaultExchange(camel);
        e.setProperty(FrontDoor.FLOW, "alloc");
        e.getMessage().setHeader("Idempotency-Key", "secret-key");
        e.getMessage().setBody(HttpReply.json("{\"a\":1}", "allocated"));
        writer.process(e);

        assertThat(e.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(200);
        assertThat(e.getMessage().getHeader("Idempotency-Key")).as("request headers are not echoed").isNull();
        assertThat(e.getProperty(ReplyWriter.RESULT)).isEqualTo("allocated");

        e.getMessage().setBody(HttpReply.json("{\"b\":2}", "replayed"));
        writer.process(e);
        assertThat(e.getMessage().getBody()).isInstanceOf(HttpReply.class);
        assertThat(e.getProperty(ReplyWriter.RESULT)).isEqualTo("allocated");
        assertThat(metrics.registry().scrape()).contains("playpen_alloc_requests_total{code=\"200\",result=\"allocated\"} 1.0")
                .doesNotContain("result=\"replayed\"");
    }

    @Test
    void theAnswerIsUtf8BytesAndAHeadAnswerHasNone() {
        Exchange get = new DefaultExchange(camel);
        get.getMessage().setBody(HttpReply.json("{\"name\":\"\u00e9\"}", "ok"));
        writer.process(get);
        assertThat(new String(get.getMessage().getBody(byte[].class), StandardCharsets.UTF_8)).isEqualTo("{\"name\":\"\u00e9\"}");

        Exchange head = new DefaultExchange(camel);
        head.getMessage().setHeader(Exchange.HTTP_METHOD, "HEAD");
        head.getMessage().setBody(HttpReply.json("{\"a\":1}", "ok"));
        writer.process(head);
        assertThat(head.getMessage().getBody(byte[].class)).isEmpty();
    }
}
