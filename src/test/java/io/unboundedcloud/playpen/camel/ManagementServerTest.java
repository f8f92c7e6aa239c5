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
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.StandardMBean;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

/**
 * The management listener on its own (no operator behind it): every path it serves is behind the guard that refuses
 * web pages and foreign host names, {@code /jolokia} without the slash keeps its query, what one Jolokia read
 * builds is capped whatever the request asks, and after close nothing listens (a second close is harmless).
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
        server = new ManagementServer("127.0.0.1", 0, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT)::scrape, ready::get,
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

    /** An MBean whose attributes are as large as a test wants them. */
    public interface LargeMBean {
        List<String> getItems();

        Map<String, Object> getNested();

        List<List<List<String>>> getTree();
    }

    record Large(int items, int depth, int fan) implements LargeMBean {
        @Override
        public List<String> getItems() {
            List<String> out = new ArrayList<>();
            for (int i = 0; i < items; i++) {
                out.add("i" + i);
            }
            return out;
        }

        @Override
        public Map<String, Object> getNested() {
            Map<String, Object> top = new LinkedHashMap<>();
            Map<String, Object> at = top;
            for (int i = 0; i < depth; i++) {
                Map<String, Object> next = new LinkedHashMap<>();
                at.put("n", next);
                at = next;
            }
            at.put("n", "bottom");
            return top;
        }

        /** {@code items} lists of {@code fan} lists each. */
        @Override
        public List<List<List<String>>> getTree() {
            List<List<String>> inner = new ArrayList<>();
            for (int i = 0; i < fan; i++) {
                inner.add(new ArrayList<>(List.of("x")));
            }
            List<List<List<String>>> out = new ArrayList<>();
            for (int i = 0; i < items; i++) {
                List<List<String>> copy = new ArrayList<>();
                inner.forEach(l -> copy.add(new ArrayList<>(l)));
                out.add(copy);
            }
            return out;
        }
    }

    static final ObjectMapper M = new ObjectMapper();

    HttpResponse<String> post(String json) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/jolokia/"))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    static int depth(JsonNode n) {
        int below = 0;
        for (JsonNode child : n) {
            below = Math.max(below, depth(child));
        }
        return n.isContainerNode() ? below + 1 : 0;
    }

    /**
     * A read of a large MBean attribute cannot make the agent build a huge answer: collections, depth and the number
     * of objects are capped whatever the request asks, a request that asks for no cap (0) is refused rather than
     * let through uncapped, and an error never carries the exception's stack trace or its serialized fields.
     */
    @Test
    void jolokiaCapsWhatOneReadBuildsWhateverTheRequestAsks() throws Exception {
        MBeanServer mbeans = ManagementFactory.getPlatformMBeanServer();
        ObjectName name = new ObjectName("playpen.test:type=Large");
        String mbean = "\"mbean\":\"playpen.test:type=Large\"";
        int items = ManagementServer.MAX_COLLECTION_SIZE + 10;
        // as many lists as a collection may hold, each of enough lists that together they are more objects than an
        // answer may hold
        int fan = ManagementServer.MAX_OBJECTS / ManagementServer.MAX_COLLECTION_SIZE + 2;
        mbeans.registerMBean(new StandardMBean(new Large(items, ManagementServer.MAX_DEPTH + 10, fan),
                LargeMBean.class), name);
        try {
            JsonNode list = M.readTree(post("{\"type\":\"read\"," + mbean + ",\"attribute\":\"Items\",\"config\":"
                    + "{\"maxCollectionSize\":" + items * 2 + "}}").body());
            assertThat(list.path("status").asInt()).as(list.toString()).isEqualTo(200);
            assertThat(list.path("value").size()).isEqualTo(ManagementServer.MAX_COLLECTION_SIZE);

            JsonNode deep = M.readTree(post("{\"type\":\"read\"," + mbean + ",\"attribute\":\"Nested\",\"config\":"
                    + "{\"maxDepth\":" + ManagementServer.MAX_DEPTH * 10 + "}}").body());
            assertThat(deep.path("status").asInt()).as(deep.toString()).isEqualTo(200);
            assertThat(depth(deep.path("value"))).isBetween(1, ManagementServer.MAX_DEPTH);

            String many = post("{\"type\":\"read\"," + mbean + ",\"attribute\":\"Tree\",\"config\":"
                    + "{\"maxObjects\":" + ManagementServer.MAX_OBJECTS * 10 + "}}").body();
            assertThat(M.readTree(many).path("status").asInt()).isEqualTo(200);
            assertThat(many).contains("[Object limit exceeded]");

            for (String limit : List.of("maxDepth", "maxCollectionSize", "maxObjects")) {
                HttpResponse<String> posted = post("{\"type\":\"read\"," + mbean + ",\"attribute\":\"Items\","
                        + "\"config\":{\"" + limit + "\":0}}");
                assertThat(posted.statusCode()).as(limit + " 0 posted: " + posted.body()).isEqualTo(400);
                assertThat(posted.body()).contains(limit);
                HttpResponse<String> queried = get("/jolokia/read/playpen.test:type=Large/Items?" + limit + "=0");
                assertThat(queried.statusCode()).as(limit + " 0 in the query: " + queried.body()).isEqualTo(400);
            }

            JsonNode missing = M.readTree(post("{\"type\":\"read\"," + mbean + ",\"attribute\":\"Missing\","
                    + "\"config\":{\"serializeException\":true,\"includeStackTrace\":true}}").body());
            assertThat(missing.path("status").asInt()).as(missing.toString()).isEqualTo(404);
            assertThat(missing.path("error").asText()).contains("Missing");
            assertThat(missing.has("stacktrace")).as(missing.toString()).isFalse();
            assertThat(missing.has("error_value")).as(missing.toString()).isFalse();
        } finally {
            mbeans.unregisterMBean(name);
        }
    }

    /**
     * Jolokia takes a GET's request type from the path and reads {@code ?p=} only when the path names nothing, so a
     * read-only {@code p} does not let another type in the path past the guard.
     */
    @Test
    void aPathParameterDoesNotHideTheTypeInThePath() throws Exception {
        for (String path : List.of("/jolokia/notification/register?p=/version",
                "/jolokia/write/java.lang:type=Memory/Verbose/true?p=/read/java.lang:type=Memory/HeapMemoryUsage",
                "/jolokia//config?p=/version", "/jolokia/notification/register?p=")) {
            HttpResponse<String> r = get(path);
            assertThat(r.statusCode()).as(path).isEqualTo(403);
            assertThat(r.body()).as(path).contains("java.lang.SecurityException").containsAnyOf(
                    "notifications are disabled on this agent", "is not allowed on this agent");
        }
        // p still names the request when the path does not, and a read-only type in both passes
        for (String path : List.of("/jolokia/?p=/version", "/jolokia//?p=/read/java.lang:type=Memory/HeapMemoryUsage",
                "/jolokia/read/java.lang:type=Memory/HeapMemoryUsage?p=/version")) {
            HttpResponse<String> r = get(path);
            assertThat(r.statusCode()).as(path).isEqualTo(200);
            assertThat(r.body()).as(path).contains("\"status\":200");
        }
        assertThat(get("/jolokia/?p=/write/java.lang:type=Memory/Verbose/true").statusCode()).isEqualTo(403);
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
