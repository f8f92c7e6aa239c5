package io.unboundedcloud.playpen.camel;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.BooleanSupplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.api.Status;
import io.unboundedcloud.playpen.kube.DaemonThreads;

/**
 * The probe listener (--health-addr, plain HTTP): {@code /healthz} and {@code /readyz} answered as on the HTTPS port
 * (204, or 503 with a Status while not ready), and nothing else. It has its own socket, accept queue and threads,
 * so however many connections API clients hold or open on the HTTPS port, kubelet's probes are still answered.
 */
public final class HealthServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(HealthServer.class);

    private final HttpServer http;
    private final ExecutorService executor;

    public HealthServer(String host, int port, BooleanSupplier ready, int retryAfterSeconds) throws IOException {
        http = HttpServer.create(new InetSocketAddress(host.isEmpty() ? "0.0.0.0" : host, port), 64);
        executor = Executors.newFixedThreadPool(2, DaemonThreads.named("health-http"));
        http.setExecutor(executor);
        http.createContext("/", exchange -> answer(exchange, ready, retryAfterSeconds));
    }

    private static void answer(HttpExchange exchange, BooleanSupplier ready, int retryAfterSeconds) throws IOException {
        try (exchange; InputStream in = exchange.getRequestBody()) {
            in.readNBytes(4096);
            String path = exchange.getRequestURI().getRawPath();
            if ("/healthz".equals(path) || ("/readyz".equals(path) && ready.getAsBoolean())) {
                exchange.sendResponseHeaders(204, -1);
                return;
            }
            ApiException e = "/readyz".equals(path)
                    ? ApiException.unavailable("not ready: caches not synced or front-proxy trust bundle not loaded",
                            retryAfterSeconds)
                    : ApiException.notFound("the probe listener serves /healthz and /readyz only");
            byte[] body = Json.write(Status.failure(e.code(), e.reason(), e.getMessage())).getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "application/json");
            e.headers().forEach((k, v) -> exchange.getResponseHeaders().set(k, v));
            boolean head = "HEAD".equalsIgnoreCase(exchange.getRequestMethod());
            exchange.sendResponseHeaders(e.code(), head ? -1 : body.length);
            if (!head) {
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(body);
                }
            }
        }
    }

    public void start() {
        http.start();
        LOG.info("probe listener on http://{}:{} (/healthz, /readyz)", http.getAddress().getHostString(),
                http.getAddress().getPort());
    }

    public InetSocketAddress address() {
        return http.getAddress();
    }

    @Override
    public void close() {
        http.stop(0);
        executor.shutdownNow();
    }
}
