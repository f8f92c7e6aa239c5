package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.ConnectException;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

/**
 * The management listener on its own (no operator behind it): every path it serves is behind the guard that refuses
 * web pages and foreign host names, {@code /jolokia} without the slash keeps its query, and after close nothing
 * listens (a second close is harmless).
 */
class ManagementServerTest {
    static final List<String> PATHS = List.of("/metrics", "/observe/metrics", "/observe/health", "/observe/health/ready",
            "/observe/health/live", "/jolokia", "/jolokia/", "/jolokia/version");

    final AtomicBoolean ready = new AtomicBoolean(true);
    final HttpClient http = HttpClient.newHttpClient();
    ManagementServer server;
    int port;

    @BeforeEach
    void up() throws Exception {
        server = new ManagementServer("127.0.0.1", 0, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT), ready::get,
                ManagementAccess.NONE);
        server.start();
        port = server.address().getPort();
    }

    @AfterEach
    void down() {
        server.close();
    }

    HttpResponse<String> get(String path, String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path));
        if (headers.length > 0) {
            b.headers(headers);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** The status line of a raw HTTP/1.1 GET with the Host header as given (the JDK client will not set one). */
    String statusLine(String path, String host) throws Exception {
        String answer = ManagementExposureRouteTest.raw(port,
                "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n");
        return answer.substring(0, answer.indexOf("\r\n"));
    }

    @Test
    void everyPathAnswersToolsAndRefusesWebPagesAndForeignHostNames() throws Exception {
        for (String path : PATHS) {
            assertThat(get(path).statusCode()).as("GET %s", path).isEqualTo(200);
            assertThat(statusLine(path, "127.0.0.1:" + port)).as("%s by address", path).endsWith(" 200 OK");
            HttpResponse<String> page = get(path, "Origin", "https://evil.example");
            assertThat(page.statusCode()).as("%s from a web page", path).isEqualTo(403);
            assertThat(page.body()).as("%s from a web page", path).contains("--management-allowed-origins");
            assertThat(get(path, "Sec-Fetch-Site", "cross-site").statusCode()).as("%s from a script tag", path)
                    .isEqualTo(403);
            assertThat(statusLine(path, "evil.example:" + port)).as("%s by a DNS name", path).endsWith(" 403 Forbidden");
        }
    }

    @Test
    void jolokiaWithoutTheSlashKeepsItsQuery() throws Exception {
        // Hawtio sends its options in the query of ".../jolokia"; a query lost on the way would be ignored silently
        HttpResponse<String> plain = get("/jolokia?mimeType=text/plain");
        assertThat(plain.statusCode()).isEqualTo(200);
        assertThat(plain.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("text/plain"));
        assertThat(plain.body()).contains("\"agent\"");
        HttpResponse<String> json = get("/jolokia");
        assertThat(json.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/json"));
        assertThat(json.body()).contains("\"agent\"");
        // and a proxy target in that query is refused there as under "/jolokia/"
        assertThat(get("/jolokia?target=service:jmx:rmi:///jndi/rmi://127.0.0.1:1/jmxrmi").statusCode()).isEqualTo(403);
    }

    @Test
    void healthFollowsReadinessAndLivenessDoesNot() throws Exception {
        ready.set(false);
        assertThat(get("/observe/health").statusCode()).isEqualTo(503);
        assertThat(get("/observe/health/ready").statusCode()).isEqualTo(503);
        assertThat(get("/observe/health/live").statusCode()).isEqualTo(200);
        assertThat(get("/observe/health/").statusCode()).as("a trailing slash names the same path").isEqualTo(503);
        assertThat(get("/metricsx").statusCode()).isEqualTo(404);
        ready.set(true);
        assertThat(get("/observe/health").body()).isEqualTo("{\"status\":\"UP\"}");
    }

    @Test
    void afterCloseNothingListens() throws Exception {
        server.close();
        assertThatThrownBy(() -> new Socket("127.0.0.1", port).close()).isInstanceOf(ConnectException.class);
        assertThatCode(server::close).as("a second close").doesNotThrowAnyException();
    }
}
