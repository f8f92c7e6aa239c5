package io.unboundedcloud.playpen.camel;

import java.io.IOException;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.function.BooleanSupplier;

import org.jolokia.jvmagent.JolokiaServer;
import org.jolokia.jvmagent.JolokiaServerConfig;
import org.jolokia.server.core.service.impl.QuietLogHandler;
import io.unboundedcloud.playpen.kube.DaemonThreads;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import com.sun.net.httpserver.HttpContext;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;


/**
 * The plain-HTTP management listener (--management-addr, loopback by default): Jolokia at /jolokia for
 * Hawtio (look, never change: {@link ManagementRestrictor}; no proxy, no notifications, no JSONP:
 * {@link ManagementGuard}), /metrics (also /observe/metrics) in Prometheus text format, and
 * /observe/health[/ready|/live] as Camel users expect. Web pages reach none of it unless their origin is
 * configured ({@link ManagementAccess}).
 */
public final class ManagementServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ManagementServer.class);

    private static final String AGENT_CONTEXT = "/jolokia";
    /** The deepest an answer of Jolokia's goes, whatever a request asks (Jolokia's default; Hawtio asks for 7). */
    static final int MAX_DEPTH = 15;
    /** The most elements of one collection, map or array an answer shows, whatever a request asks. */
    static final int MAX_COLLECTION_SIZE = 10_000;
    /** The most objects one answer holds, whatever a request asks (a whole-tree list holds far fewer). */
    static final int MAX_OBJECTS = 200_000;

    private final HttpServer http;
    private final JolokiaServer jolokia;
    private final java.util.concurrent.ExecutorService executor;
    private final ManagementAccess access;
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();

    /** {@code metrics}: the text of one Prometheus scrape. */
    public ManagementServer(String host, int port, java.util.function.Supplier<String> metrics, BooleanSupplier ready,
            ManagementAccess access) throws IOException {
        this.access = access;
        http = HttpServer.create(new InetSocketAddress(host, port), 16);
        executor = Executors.newFixedThreadPool(2, DaemonThreads.named("management-http"));
        http.setExecutor(executor);
        for (String path : new String[] {"/metrics", "/observe/metrics"}) {
            // /observe/*: the paths camel-observability-services serves, which Camel users and their tooling expect
            guarded(http.createContext(path, exchange -> reply(exchange, path, 200,
                    "text/plain; version=0.0.4; charset=utf-8", metrics.get())));
        }
        guarded(http.createContext("/observe/health", exchange -> health(exchange, "/observe/health", ready.getAsBoolean())));
        guarded(http.createContext("/observe/health/ready",
                exchange -> health(exchange, "/observe/health/ready", ready.getAsBoolean())));
        guarded(http.createContext("/observe/health/live", exchange -> health(exchange, "/observe/health/live", true)));
        // the caps bound what one answer holds, whatever a request asks (ManagementGuard refuses a request that asks
        // for none); an error answer says what went wrong, never with the exception's stack trace or its fields
        jolokia = new JolokiaServer(http, new JolokiaServerConfig(Map.of(
                "agentContext", AGENT_CONTEXT,
                "restrictorClass", ManagementRestrictor.class.getName(),
                "discoveryEnabled", "false",
                "includeStackTrace", "false",
                "allowErrorDetails", "false",
                "maxDepth", String.valueOf(MAX_DEPTH),
                "maxCollectionSize", String.valueOf(MAX_COLLECTION_SIZE),
                "maxObjects", String.valueOf(MAX_OBJECTS))), new QuietLogHandler());
    }

    private void guarded(HttpContext context) {
        context.getFilters().add(new ManagementGuard(null, access));
    }

    private static void health(HttpExchange exchange, String path, boolean up) throws IOException {
        reply(exchange, path, up ? 200 : 503, "application/json", up ? "{\"status\":\"UP\"}" : "{\"status\":\"DOWN\"}");
    }

    /** Answers a GET (or HEAD) on exactly {@code path}; anything else under the context is 404/405. */
    private static void reply(HttpExchange exchange, String path, int status, String contentType, String body)
            throws IOException {
        try (exchange) {
            String method = exchange.getRequestMethod();
            if (!exchange.getRequestURI().getPath().replaceAll("/+$", "").equals(path)) {
                exchange.sendResponseHeaders(404, -1);
                return;
            }
            if (!"GET".equals(method) && !"HEAD".equals(method)) {
                exchange.getResponseHeaders().set("Allow", "GET, HEAD");
                exchange.sendResponseHeaders(405, -1);
                return;
            }
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", contentType);
            if ("HEAD".equals(method)) {
                exchange.sendResponseHeaders(status, -1);
                return;
            }
            exchange.sendResponseHeaders(status, bytes.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        }
    }

    public void start() {
        jolokia.start(false);
        HttpContext agent = jolokiaContext();
        agent.getFilters().add(new ManagementGuard(AGENT_CONTEXT, access, agent.getHandler()));
        // Jolokia's context is "/jolokia/"; Hawtio's connect dialog and most docs say ".../jolokia", which the JDK
        // server would answer 404 ("No context found"). That exact path is served as "/jolokia/", filters included.
        http.createContext(AGENT_CONTEXT, exchange -> {
            if (!exchange.getRequestURI().getRawPath().equals(AGENT_CONTEXT)) {
                try (exchange) {
                    exchange.sendResponseHeaders(404, -1);
                }
                return;
            }
            new com.sun.net.httpserver.Filter.Chain(agent.getFilters(), agent.getHandler())
                    .doFilter(new SlashedExchange(exchange, agent));
        });
        http.start();
        LOG.info("management listener on http://{}:{} (/jolokia for Hawtio, /metrics, /observe/health, /observe/metrics)",
                http.getAddress().getHostString(), http.getAddress().getPort());
    }

    /**
     * The HTTP context Jolokia registered on our server. JolokiaServer keeps it private; reading it is the
     * only way to put a filter in front of Jolokia's handler on a server we own. Fails loudly (and every
     * management test with it) if a Jolokia upgrade renames the field.
     */
    private HttpContext jolokiaContext() {
        try {
            Field f = JolokiaServer.class.getDeclaredField("httpContext");
            f.setAccessible(true);
            HttpContext ctx = (HttpContext) f.get(jolokia);
            if (ctx == null) {
                throw new IllegalStateException("Jolokia registered no HTTP context");
            }
            return ctx;
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot guard Jolokia's HTTP context: " + e, e);
        }
    }

    /** The exchange of a request for {@code /jolokia}, seen by Jolokia as one for {@code /jolokia/}. */
    private static final class SlashedExchange extends ForwardingExchange {
        private final HttpContext context;
        private final java.net.URI uri;

        SlashedExchange(HttpExchange in, HttpContext context) {
            super(in);
            this.context = context;
            java.net.URI u = in.getRequestURI();
            this.uri = java.net.URI.create(u.getRawPath() + "/" + (u.getRawQuery() == null ? "" : "?" + u.getRawQuery()));
        }

        @Override
        public java.net.URI getRequestURI() {
            return uri;
        }

        @Override
        public HttpContext getHttpContext() {
            return context;
        }
    }

    public InetSocketAddress address() {
        return http.getAddress();
    }

    /** Stops listening; a second close does nothing (Jolokia's own stop would throw on its removed context). */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        jolokia.stop();
        http.stop(0);
        executor.shutdownNow();
    }
}
