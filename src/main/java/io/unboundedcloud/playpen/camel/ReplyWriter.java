package io.unboundedcloud.playpen.camel;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.Processor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.client.KubernetesClientException;
import io.unboundedcloud.playpen.api.ApiException;

/**
 * Writes an {@link HttpReply} (the body, or one built from the caught exception) onto the message as UTF-8 bytes
 * (none for HEAD). Request headers are dropped first so nothing the client sent (keys included) is echoed back.
 */
public final class ReplyWriter implements Processor {
    private static final Logger LOG = LoggerFactory.getLogger(ReplyWriter.class);
    private static final String REPLIED = "playpenReplied";
    /** Exchange property: the answer's result (allocated, forbidden, conflict, ...), read by the audit line. */
    public static final String RESULT = "playpenResult";
    private static final byte[] NO_BODY = new byte[0];
    /**
     * Exchange property: warnings for the client (a {@code List<String>}), written as one {@code Warning} header
     * like kube-apiserver's ({@code 299 - "text"}, comma-separated); kubectl prints each as a "Warning:" line.
     */
    public static final String WARNINGS = "playpenWarnings";
    private final int retryAfterSeconds;

    private final OperatorMetrics metrics;

    public ReplyWriter(int retryAfterSeconds, OperatorMetrics metrics) {
        this.retryAfterSeconds = retryAfterSeconds;
        this.metrics = metrics;
    }

    @Override
    public void process(Exchange exchange) {
        Message m = exchange.getMessage();
        if (exchange.getProperty(REPLIED, false, Boolean.class)) {
            return;
        }
        exchange.setProperty(REPLIED, true);
        Throwable caught = exchange.getProperty(Exchange.EXCEPTION_CAUGHT, Throwable.class);
        HttpReply reply = caught != null ? fromException(caught, exchange) : m.getBody(HttpReply.class);
        if (reply == null) {
            reply = HttpReply.status(ApiException.internal("internal error: the route produced no reply"));
        }
        boolean head = "HEAD".equals(m.getHeader(Exchange.HTTP_METHOD, String.class));
        m.removeHeaders("*");
        // set by Camel from the request's Content-Type; it would re-encode a String answer (UTF-16, or an
        // exception for an unknown name). Answers are UTF-8 bytes whatever the request said.
        exchange.removeProperty(Exchange.CHARSET_NAME);
        exchange.setProperty(RESULT, reply.result());
        m.setHeader(Exchange.HTTP_RESPONSE_CODE, reply.code());
        if (reply.contentType() != null) {
            m.setHeader(Exchange.CONTENT_TYPE, reply.contentType());
        }
        for (Map.Entry<String, String> h : reply.headers().entrySet()) {
            m.setHeader(h.getKey(), h.getValue());
        }
        String warning = warningHeader(exchange.getProperty(WARNINGS, List.class));
        if (warning != null) {
            m.setHeader("Warning", warning);
        }
        // a HEAD answer has headers only, like Go's server; a body here would be read as the next response
        m.setBody(head || reply.body() == null ? NO_BODY : reply.body().getBytes(StandardCharsets.UTF_8));
        WatchStream stream = exchange.getProperty(WatchStream.class.getName(), WatchStream.class);
        if (stream != null) {
            if (caught == null && !head) {
                // the events follow the head (see PlaypenHttpBinding)
                m.setBody(stream);
            } else {
                stream.end(null);
            }
        }
        String flow = exchange.getProperty(FrontDoor.FLOW, String.class);
        if (flow != null) {
            // the exchange's clock counts whole milliseconds: an answer of 1.9 ms would be recorded as 1 ms
            Long admitted = exchange.getProperty(FrontDoor.ADMITTED_NANOS, Long.class);
            long nanos = admitted != null ? System.nanoTime() - admitted : exchange.getClock().elapsed() * 1_000_000L;
            metrics.request(flow, reply.result(), reply.code(), nanos);
            if ("renewal".equals(flow) && !exchange.getProperty(RenewalFlows.RENEWER_RAN, false, Boolean.class)) {
                metrics.renewalRefused(reply.code());
            }
        }
    }

    /** The exchange's warnings list, created on first use; what is added to it goes out with the answer. */
    @SuppressWarnings("unchecked")
    public static List<String> warnings(Exchange exchange) {
        List<String> list = exchange.getProperty(WARNINGS, List.class);
        if (list == null) {
            list = new java.util.ArrayList<>();
            exchange.setProperty(WARNINGS, list);
        }
        return list;
    }

    /**
     * {@code 299 - "text"} per warning, comma-separated (RFC 7234; client-go reads several from one header). Only
     * printable ASCII goes on the wire: quotes and backslashes are escaped, anything else becomes '?', so text taken
     * from a request can never break the header.
     */
    static String warningHeader(List<?> warnings) {
        if (warnings == null || warnings.isEmpty()) {
            return null;
        }
        StringBuilder sb = new StringBuilder();
        for (Object w : warnings) {
            if (sb.length() > 0) {
                sb.append(", ");
            }
            sb.append("299 - \"");
            for (char c : String.valueOf(w).toCharArray()) {
                if (c == '"' || c == '\\') {
                    sb.append('\\').append(c);
                } else {
                    sb.append(c >= 0x20 && c < 0x7f ? c : '?');
                }
            }
            sb.append('"');
        }
        return sb.toString();
    }

    private HttpReply fromException(Throwable t, Exchange exchange) {
        Throwable root = t;
        while (!(root instanceof ApiException) && !(root instanceof KubernetesClientException) && root.getCause() != null
                && root.getCause() != root) {
            root = root.getCause();
        }
        if (root instanceof ApiException api) {
            if (api.code() >= 500) {
                LOG.warn("request failed route={} code={} message={}", exchange.getFromRouteId(), api.code(), api.getMessage());
            }
            return HttpReply.status(api);
        }
        if (root instanceof KubernetesClientException kce) {
            LOG.warn("Kubernetes API call failed route={} code={} message={}", exchange.getFromRouteId(), kce.getCode(),
                    kce.getMessage());
            // sending the request again is safe (an alloc replays, a dealloc or renewal does what is left to do)
            return HttpReply.status(ApiException.unavailable("the Kubernetes API server could not complete the request;"
                    + " try again", retryAfterSeconds));
        }
        LOG.error("request failed route={}", exchange.getFromRouteId(), t);
        return HttpReply.status(ApiException.internal("internal error"));
    }
}
