package io.unboundedcloud.playpen.camel;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.Filter;
import com.sun.net.httpserver.HttpExchange;

/**
 * Refuses Jolokia notification requests (GET {@code /jolokia/notification/...} and POST bodies, bulk ones
 * included, with {@code "type":"notification"}) before Jolokia sees them: Jolokia's notification handler
 * skips the restrictor, and every registration would keep a client in memory. POST bodies are read up to
 * {@link #MAX_BODY} bytes; larger ones are refused too, since no Hawtio request comes near it.
 */
final class NoNotificationsFilter extends Filter {
    static final int MAX_BODY = 256 * 1024;
    private static final ObjectMapper JSON = new ObjectMapper();

    private final String agentContext;

    NoNotificationsFilter(String agentContext) {
        this.agentContext = agentContext;
    }

    @Override
    public void doFilter(HttpExchange exchange, Chain chain) throws IOException {
        String path = exchange.getRequestURI().getRawPath();
        String rest = path.length() > agentContext.length() ? path.substring(agentContext.length()) : "";
        if (rest.replaceFirst("^/+", "").toLowerCase(Locale.ROOT).startsWith("notification")) {
            refuse(exchange, 403, "notifications are disabled on this agent");
            return;
        }
        if ("POST".equalsIgnoreCase(exchange.getRequestMethod())) {
            byte[] body;
            try (InputStream in = exchange.getRequestBody()) {
                body = in.readNBytes(MAX_BODY + 1);
            }
            if (body.length > MAX_BODY) {
                refuse(exchange, 413, "request body too large");
                return;
            }
            if (asksForNotifications(body)) {
                refuse(exchange, 403, "notifications are disabled on this agent");
                return;
            }
            exchange.setStreams(new ByteArrayInputStream(body), exchange.getResponseBody());
        }
        chain.doFilter(exchange);
    }

    static boolean asksForNotifications(byte[] body) {
        JsonNode tree;
        try {
            tree = JSON.readTree(body);
        } catch (IOException e) {
            return false; // not JSON: Jolokia answers its own error
        }
        if (tree == null) {
            return false;
        }
        if (tree.isArray()) {
            for (JsonNode r : tree) {
                if (isNotification(r)) {
                    return true;
                }
            }
            return false;
        }
        return isNotification(tree);
    }

    private static boolean isNotification(JsonNode request) {
        return request.path("type").asText("").trim().equalsIgnoreCase("notification");
    }

    private static void refuse(HttpExchange exchange, int status, String message) throws IOException {
        byte[] out = ("{\"status\":" + status + ",\"error_type\":\"java.lang.SecurityException\",\"error\":"
                + JSON.writeValueAsString(message) + "}").getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/json; charset=utf-8");
        exchange.sendResponseHeaders(status, out.length);
        try (OutputStream o = exchange.getResponseBody()) {
            o.write(out);
        }
    }

    @Override
    public String description() {
        return "refuses Jolokia notification requests";
    }
}
