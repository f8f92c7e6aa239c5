package io.unboundedcloud.playpen.camel;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.Executors;

import org.jolokia.jvmagent.JolokiaServer;
import org.jolokia.jvmagent.JolokiaServerConfig;
import org.jolokia.server.core.service.impl.QuietLogHandler;
import io.unboundedcloud.playpen.kube.DaemonThreads;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import com.sun.net.httpserver.HttpServer;

import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

/**
 * The plain-HTTP management listener (--management-addr, loopback by default): read-only Jolokia at
 * /jolokia for Hawtio, and /metrics in Prometheus text format.
 */
public final class ManagementServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ManagementServer.class);

    private final HttpServer http;
    private final JolokiaServer jolokia;
    private final java.util.concurrent.ExecutorService executor;

    public ManagementServer(String host, int port, PrometheusMeterRegistry registry) throws IOException {
        http = HttpServer.create(new InetSocketAddress(host, port), 16);
        executor = Executors.newFixedThreadPool(2, DaemonThreads.named("management-http"));
        http.setExecutor(executor);
        http.createContext("/metrics", exchange -> {
            byte[] body = registry.scrape().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        jolokia = new JolokiaServer(http, new JolokiaServerConfig(Map.of(
                "agentContext", "/jolokia",
                "policyLocation", "classpath:/jolokia-access.xml",
                "discoveryEnabled", "false",
                "includeStackTrace", "false")), new QuietLogHandler());
    }

    public void start() {
        jolokia.start(false);
        http.start();
        LOG.info("management listener on http://{}:{} (/jolokia read-only, /metrics)",
                http.getAddress().getHostString(), http.getAddress().getPort());
    }

    public InetSocketAddress address() {
        return http.getAddress();
    }

    @Override
    public void close() {
        jolokia.stop();
        http.stop(0);
        executor.shutdownNow();
    }
}
