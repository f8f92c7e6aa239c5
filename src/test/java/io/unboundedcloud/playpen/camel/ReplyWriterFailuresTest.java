package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletionException;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.client.KubernetesClientException;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.support.CapturedLogs;

/**
 * What a failed flow answers, from the exception the error handler caught: an API error as its own Status, also
 * when wrapped (a future's CompletionException, Camel's own wrappers); a failed Kubernetes API call as a 503 with
 * Retry-After that does not pass the API server's words on; anything else a 500 "internal error" that says nothing
 * of its cause. Server-side failures are logged, the client's own mistakes are not. A route that produced no answer
 * is a 500 too. Warnings added during the flow go out with any answer.
 */
class ReplyWriterFailuresTest {
    @RegisterExtension
    final CapturedLogs logs = CapturedLogs.of(ReplyWriter.class);

    final CamelContext camel = new DefaultCamelContext();
    final OperatorMetrics metrics = new OperatorMetrics();
    final ReplyWriter writer = new ReplyWriter(7, metrics);

    @AfterEach
    void down() throws Exception {
        camel.close();
    }

    private Exchange failed(Throwable caught) {
        Exchange e = new DefaultExchange(camel);
        e.setProperty(FrontDoor.FLOW, "alloc");
        e.setProperty(Exchange.EXCEPTION_CAUGHT, caught);
        writer.process(e);
        return e;
    }

    private static JsonNode status(Exchange e) throws Exception {
        return Json.MAPPER.readTree(new String(e.getMessage().getBody(byte[].class), StandardCharsets.UTF_8));
    }

    private List<ILoggingEvent> lines(Level level) {
        return logs.lines().stream().filter(l -> l.getLevel() == level).toList();
    }

    @Test
    void anApiErrorIsItsOwnStatusAlsoWhenWrapped() throws Exception {
        Exchange e = failed(new CompletionException(new IllegalStateException("wrapper",
                ApiException.conflict("the key is held by another request"))));
        assertThat(e.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(409);
        assertThat(status(e).get("message").asText()).isEqualTo("the key is held by another request");
        assertThat(e.getProperty(ReplyWriter.RESULT)).isEqualTo("conflict");
        assertThat(logs.lines()).as("a client's conflict is not the server's failure").isEmpty();

        Exchange unavailable = failed(ApiException.unavailable("no idle pods", 3));
        assertThat(unavailable.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(503);
        assertThat(unavailable.getMessage().getHeader("Retry-After")).isEqualTo("3");
        assertThat(lines(Level.WARN)).singleElement().satisfies(l ->
                assertThat(l.getFormattedMessage()).contains("code=503").contains("no idle pods"));
        Exchange internal = failed(ApiException.internal("the claim ledger is closed"));
        assertThat(internal.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(500);
        assertThat(lines(Level.WARN)).hasSize(2).last().satisfies(l ->
                assertThat(l.getFormattedMessage()).contains("code=500"));
        assertThat(metrics.registry().scrape())
                .contains("playpen_alloc_requests_total{code=\"409\",result=\"conflict\"} 1.0")
                .contains("playpen_alloc_requests_total{code=\"503\",result=\"serviceUnavailable\"} 1.0");
    }

    @Test
    void aFailedKubernetesCallIsA503WithRetryAfterThatKeepsTheApiServersWordsToItself() throws Exception {
        Exchange e = failed(new RuntimeException("outer",
                new KubernetesClientException("etcdserver: request timed out (internal detail)", 500, null)));
        assertThat(e.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(503);
        assertThat(e.getMessage().getHeader("Retry-After")).isEqualTo("7");
        JsonNode s = status(e);
        assertThat(s.get("reason").asText()).isEqualTo("ServiceUnavailable");
        // what to do: the same request again (alloc, dealloc and renewal are safe to send again), after Retry-After
        assertThat(s.get("message").asText()).isEqualTo("the Kubernetes API server could not complete the request;"
                + " try again").doesNotContain("etcd");
        assertThat(lines(Level.WARN)).singleElement().satisfies(l ->
                assertThat(l.getFormattedMessage()).contains("Kubernetes API call failed").contains("code=500"));

        // the API server out of reach: the client's exception carries the connection's as its cause
        Exchange unreachable = failed(new KubernetesClientException("Operation: [patch] failed",
                new java.net.ConnectException("Connection refused")));
        assertThat(unreachable.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(503);
        assertThat(status(unreachable).get("message").asText())
                .isEqualTo("the Kubernetes API server could not complete the request; try again");
    }

    @Test
    void anythingElseIsAnInternalErrorThatSaysNothingOfItsCause() throws Exception {
        Exchange e = failed(new IllegalStateException("secret detail of a bug"));
        assertThat(e.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(500);
        assertThat(e.getMessage().getHeader(Exchange.CONTENT_TYPE)).isEqualTo("application/json");
        JsonNode s = status(e);
        assertThat(s.get("reason").asText()).isEqualTo("InternalError");
        assertThat(s.get("message").asText()).isEqualTo("internal error");
        assertThat(e.getMessage().getHeader("Retry-After")).isNull();
        assertThat(lines(Level.ERROR)).singleElement().satisfies(l ->
                assertThat(l.getThrowableProxy().getMessage()).isEqualTo("secret detail of a bug"));
    }

    @Test
    void aRouteThatProducedNoAnswerIsAnInternalError() throws Exception {
        Exchange e = new DefaultExchange(camel);
        e.getMessage().setBody("not an answer");
        writer.process(e);
        assertThat(e.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(500);
        assertThat(status(e).get("message").asText()).isEqualTo("internal error: the route produced no reply");
    }

    @Test
    void warningsGoOutWithAnyAnswer() {
        Exchange e = new DefaultExchange(camel);
        ReplyWriter.warnings(e).add("unknown field \"colour\"");
        ReplyWriter.warnings(e).add("ttl capped at 2h");
        e.setProperty(Exchange.EXCEPTION_CAUGHT, ApiException.badRequest("bad request"));
        writer.process(e);
        assertThat(e.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(400);
        assertThat(e.getMessage().getHeader("Warning"))
                .isEqualTo("299 - \"unknown field \\\"colour\\\"\", 299 - \"ttl capped at 2h\"");

        Exchange quiet = new DefaultExchange(camel);
        quiet.getMessage().setHeader(Exchange.CONTENT_TYPE, "text/plain");
        quiet.getMessage().setBody(HttpReply.noContent("deallocated"));
        writer.process(quiet);
        assertThat(quiet.getMessage().getHeader("Warning")).isNull();
        assertThat(quiet.getMessage().getHeader(Exchange.CONTENT_TYPE)).as("none for an answer without a body, "
                + "not the request's").isNull();
    }
}
