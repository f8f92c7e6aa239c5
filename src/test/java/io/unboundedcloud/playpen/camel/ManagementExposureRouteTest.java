package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * What a web page or a proxy request can get from the management listener: no JMX connection to another host
 * in any request form, no answer for a page whose origin is not configured (nor through a DNS name pointing at
 * the port), no JSONP, no request type beyond the read-only ones, and never the JVM's command line, system
 * properties or environment.
 */
class ManagementExposureRouteTest {
    static final String SECRET_PROPERTY = "playpen.test.exposure-secret";
    static final String SECRET = "s3cret-" + System.nanoTime();
    static TestCluster cluster;
    static OperatorHarness op;
    static OperatorHarness configured;
    static int port;
    static int configuredPort;
    static final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    static void up() throws Exception {
        System.setProperty(SECRET_PROPERTY, SECRET);
        cluster = TestCluster.start();
        op = new OperatorHarness(cluster, "--management-addr=127.0.0.1:0", "--reconcile-interval=10m",
                "--runner-redfish-password=" + SECRET);
        port = op.app.managementAddress().getPort();
        configured = new OperatorHarness(cluster, "--management-addr=127.0.0.1:0",
                "--reconcile-interval=10m", "--management-allowed-origins=https://hawtio.example:8443",
                "--management-allowed-hosts=ops.example");
        configuredPort = configured.app.managementAddress().getPort();
    }

    @AfterAll
    static void down() {
        System.clearProperty(SECRET_PROPERTY);
        configured.close();
        op.close();
        cluster.close();
    }

    static HttpResponse<String> post(int port, String body, Map<String, String> headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/jolokia/"))
                .POST(HttpRequest.BodyPublishers.ofString(body));
        headers.forEach(b::header);
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    static HttpResponse<String> get(int port, String pathAndQuery, Map<String, String> headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + pathAndQuery));
        headers.forEach(b::header);
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** A raw HTTP/1.1 exchange: the Host header as given (the JDK client does not let a test set it). */
    static String raw(int port, String request) throws Exception {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            out.write(request.getBytes(StandardCharsets.UTF_8));
            out.flush();
            InputStream in = s.getInputStream();
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            byte[] buf = new byte[8192];
            int n;
            while ((n = in.read(buf)) > 0) {
                got.write(buf, 0, n);
                if (got.toString(StandardCharsets.UTF_8).contains("\r\n\r\n")) {
                    break;
                }
            }
            return got.toString(StandardCharsets.UTF_8);
        }
    }

    @Test
    void theProxyHandlerIsNotShipped() {
        assertThatThrownBy(() -> Class.forName("org.jolokia.service.jsr160.Jsr160RequestHandler"))
                .isInstanceOf(ClassNotFoundException.class);
    }

    @Test
    void aProxyTargetIsRefusedInEveryFormAndNoConnectionIsOpened() throws Exception {
        try (ServerSocket trap = new ServerSocket(0)) {
            trap.setSoTimeout(1500);
            String url = "service:jmx:rmi:///jndi/rmi://127.0.0.1:" + trap.getLocalPort() + "/jmxrmi";
            String target = "{\"url\":\"" + url + "\"}";
            String read = "\"type\":\"read\",\"mbean\":\"java.lang:type=Memory\",\"attribute\":\"HeapMemoryUsage\"";
            List<String> posts = List.of(
                    "{" + read + ",\"target\":" + target + "}",
                    "{" + read + ",\"options\":{\"target\":" + target + "}}",
                    "{" + read + ",\"options\":{\"targetId\":\"" + url + "\"}}",
                    "[{\"type\":\"version\"},{" + read + ",\"target\":" + target + "}]",
                    "{" + read + ",\"TARGET\":" + target + "}");
            for (String body : posts) {
                HttpResponse<String> r = post(port, body, Map.of("Content-Type", "application/json"));
                assertThat(r.statusCode()).as(body).isEqualTo(403);
                assertThat(r.body()).as(body).contains("proxy requests (target) are disabled");
            }
            String q = URLEncoder.encode(url, StandardCharsets.UTF_8);
            for (String path : List.of("/jolokia/read/java.lang:type=Memory/HeapMemoryUsage?target=" + q,
                    "/jolokia/?p=/read/java.lang:type=Memory/HeapMemoryUsage&targetId=" + q,
                    "/jolokia/read/java.lang:type=Memory/HeapMemoryUsage?%74arget=" + q)) {
                HttpResponse<String> r = get(port, path, Map.of());
                assertThat(r.statusCode()).as(path).isEqualTo(403);
            }
            assertThatThrownBy(trap::accept).as("no JMX connection was attempted")
                    .isInstanceOf(SocketTimeoutException.class);
        }
    }

    @Test
    void webPagesAreRefusedUnlessTheirOriginIsConfigured() throws Exception {
        String version = "{\"type\":\"version\"}";
        // a cross-origin "simple" POST (text/plain, no preflight) as a page would send it
        HttpResponse<String> simple = post(port, version, Map.of("Content-Type", "text/plain", "Origin", "http://evil.example"));
        assertThat(simple.statusCode()).isEqualTo(403);
        assertThat(simple.body()).contains("--management-allowed-origins").doesNotContain("\"agent\"");
        // the refusal is a Jolokia error document, typed as JSON like Jolokia's own answers
        assertThat(simple.headers().firstValue("Content-Type")).contains("application/json; charset=utf-8");
        assertThat(Json.MAPPER.readTree(simple.body()).get("error_type").asText()).isEqualTo("java.lang.SecurityException");
        assertThat(simple.headers().firstValue("Access-Control-Allow-Origin")).isEmpty();
        // a script or image tag: no Origin, but the browser says where the request comes from
        for (String site : List.of("cross-site", "same-site", "Cross-Site")) {
            HttpResponse<String> r = get(port, "/jolokia/version", Map.of("Sec-Fetch-Site", site));
            assertThat(r.statusCode()).as(site).isEqualTo(403);
        }
        // a console's proxy may pass on what the browser said about the console's own page: same-origin
        assertThat(get(port, "/jolokia/version", Map.of("Sec-Fetch-Site", "same-origin")).statusCode()).isEqualTo(200);
        assertThat(get(port, "/metrics", Map.of("Origin", "http://evil.example")).statusCode()).isEqualTo(403);
        HttpResponse<String> preflight = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/jolokia/"))
                .method("OPTIONS", HttpRequest.BodyPublishers.noBody()).header("Origin", "http://evil.example")
                .header("Access-Control-Request-Method", "POST").build(), HttpResponse.BodyHandlers.ofString());
        assertThat(preflight.statusCode()).isEqualTo(403);
        assertThat(preflight.headers().firstValue("Access-Control-Allow-Origin")).isEmpty();
        // a typed URL and tools without a browser are answered
        assertThat(get(port, "/jolokia/version", Map.of("Sec-Fetch-Site", "none")).statusCode()).isEqualTo(200);
        assertThat(post(port, version, Map.of()).statusCode()).isEqualTo(200);

        // a configured origin (a Hawtio console) is answered, with CORS for it alone
        HttpResponse<String> hawtio = post(configuredPort, version, Map.of("Origin", "https://hawtio.example:8443"));
        assertThat(hawtio.statusCode()).isEqualTo(200);
        assertThat(hawtio.headers().firstValue("Access-Control-Allow-Origin")).contains("https://hawtio.example:8443");
        // Hawtio sends its login with the request; caches keep answers for different origins apart
        assertThat(hawtio.headers().firstValue("Access-Control-Allow-Credentials")).contains("true");
        assertThat(hawtio.headers().allValues("Vary")).contains("Origin");
        // the preflight's answers belong to a preflight only
        assertThat(hawtio.headers().firstValue("Access-Control-Allow-Methods")).isEmpty();
        assertThat(hawtio.headers().firstValue("Access-Control-Max-Age")).isEmpty();
        assertThat(post(configuredPort, version, Map.of("Origin", "https://hawtio.example")).statusCode()).isEqualTo(403);
        HttpResponse<String> okPreflight = preflight(configuredPort, "https://hawtio.example:8443", "content-type");
        assertThat(okPreflight.statusCode()).isEqualTo(200);
        assertThat(okPreflight.headers().firstValue("Access-Control-Allow-Origin")).contains("https://hawtio.example:8443");
        assertThat(okPreflight.headers().firstValue("Access-Control-Allow-Credentials")).contains("true");
        assertThat(okPreflight.headers().firstValue("Access-Control-Allow-Methods")).contains("GET, POST");
        assertThat(okPreflight.headers().firstValue("Access-Control-Allow-Headers")).contains("content-type");
        assertThat(okPreflight.headers().firstValue("Access-Control-Max-Age")).contains("600");
        // request headers are allowed back only as a plain list of header names: none asked, none allowed; a value
        // with other characters is not repeated into the answer
        for (String asked : new String[] {null, "content-type;evil=1", "x".repeat(513)}) {
            HttpResponse<String> p = preflight(configuredPort, "https://hawtio.example:8443", asked);
            assertThat(p.statusCode()).as(String.valueOf(asked)).isEqualTo(200);
            assertThat(p.headers().firstValue("Access-Control-Allow-Methods")).as(String.valueOf(asked)).contains("GET, POST");
            assertThat(p.headers().firstValue("Access-Control-Allow-Headers")).as(String.valueOf(asked)).isEmpty();
        }
    }

    /** A browser's CORS preflight of a POST from {@code origin}, asking for {@code headers} (null: none). */
    HttpResponse<String> preflight(int port, String origin, String headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/jolokia/"))
                .method("OPTIONS", HttpRequest.BodyPublishers.noBody()).header("Origin", origin)
                .header("Access-Control-Request-Method", "POST");
        if (headers != null) {
            b.header("Access-Control-Request-Headers", headers);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aDnsNamePointingAtThePortIsRefused() throws Exception {
        String rebound = raw(port, "GET /jolokia/version HTTP/1.1\r\nHost: attacker.example:" + port + "\r\nConnection: close\r\n\r\n");
        assertThat(rebound).startsWith("HTTP/1.1 403");
        for (String host : List.of("127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port,
                "playpen-operator-metrics.playpen-system.svc:9876", "10.1.2.3:9876")) {
            String r = raw(port, "GET /jolokia/version HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n");
            assertThat(r).as(host).startsWith("HTTP/1.1 200");
        }
        assertThat(raw(configuredPort, "GET /metrics HTTP/1.1\r\nHost: ops.example:9876\r\nConnection: close\r\n\r\n"))
                .startsWith("HTTP/1.1 200");
        assertThat(raw(port, "GET /metrics HTTP/1.1\r\nHost: ops.example:9876\r\nConnection: close\r\n\r\n"))
                .startsWith("HTTP/1.1 403");
    }

    @Test
    void jsonpIsRefused() throws Exception {
        for (String path : List.of("/jolokia/version?callback=steal", "/jolokia/read/java.lang:type=Memory?%63allback=steal")) {
            HttpResponse<String> r = get(port, path, Map.of());
            assertThat(r.statusCode()).as(path).isEqualTo(403);
            assertThat(r.body()).doesNotContain("steal(");
        }
        HttpResponse<String> r = post(port, "{\"type\":\"version\",\"config\":{\"callback\":\"steal\"}}", Map.of());
        assertThat(r.statusCode()).isEqualTo(403);
    }

    @Test
    void onlyReadOnlyRequestTypesPassInEveryForm() throws Exception {
        for (String path : List.of("/jolokia/notification/register", "/jolokia/%6Eotification/register",
                "/jolokia/?p=/notification/register", "/jolokia//NOTIFICATION/register",
                "/jolokia/write/java.lang:type=Memory/Verbose/true", "/jolokia/config")) {
            HttpResponse<String> r = get(port, path, Map.of());
            assertThat(r.statusCode()).as(path).isEqualTo(403);
        }
        for (String body : List.of("{\"type\":\"write\",\"mbean\":\"java.lang:type=Memory\",\"attribute\":\"Verbose\",\"value\":true}",
                "[{\"type\":\"version\"},{\"type\":\"NOTIFICATION\",\"command\":\"register\"}]", "{\"mbean\":\"x\"}",
                "[\"version\"]")) {
            HttpResponse<String> r = post(port, body, Map.of());
            assertThat(r.statusCode()).as(body).isIn(400, 403);
            assertThat(r.body()).doesNotContain("\"value\"");
        }
        // bodies this guard cannot read exactly as Jolokia would are refused, not passed on
        for (String body : List.of("{\"type\":\"version\"} {\"type\":\"write\"}", "{\"type\":\"version\"")) {
            assertThat(post(port, body, Map.of()).statusCode()).as(body).isEqualTo(400);
        }
        assertThat(post(port, "{\"type\":\"version\"}", Map.of("Content-Type", "application/json; charset=UTF-16"))
                .statusCode()).isEqualTo(415);
        assertThat(get(port, "/jolokia/read/java.lang:type=Memory/HeapMemoryUsage", Map.of()).statusCode()).isEqualTo(200);
        assertThat(get(port, "/jolokia/?p=/read/java.lang:type=Memory/HeapMemoryUsage", Map.of()).statusCode()).isEqualTo(200);
    }

    @Test
    void theCommandLineSystemPropertiesAndEnvironmentAreNeverReadable() throws Exception {
        String commandLine = System.getProperty("sun.java.command");
        List<String> secrets = new ArrayList<>(List.of(SECRET));
        String path = System.getenv("PATH");
        if (path != null && path.length() > 8) {
            secrets.add(path);
        }
        List<String> reads = List.of(
                "{\"type\":\"read\",\"mbean\":\"java.lang:type=Runtime\"}",
                "{\"type\":\"read\",\"mbean\":\"java.lang:type=Runtime\",\"attribute\":\"SystemProperties\"}",
                "{\"type\":\"read\",\"mbean\":\"java.lang:type=Runtime\",\"attribute\":[\"InputArguments\",\"SystemProperties\"]}",
                "{\"type\":\"read\",\"mbean\":\"java.lang:*\"}",
                "{\"type\":\"read\",\"mbean\":\"*:*\",\"config\":{\"ignoreErrors\":true}}",
                "{\"type\":\"read\",\"mbean\":\"*:*\"}",
                "{\"type\":\"exec\",\"mbean\":\"com.sun.management:type=DiagnosticCommand\",\"operation\":\"vmCommandLine()\"}",
                "{\"type\":\"exec\",\"mbean\":\"com.sun.management:type=DiagnosticCommand\",\"operation\":\"vmSystemProperties()\"}");
        for (String read : reads) {
            String body = post(port, read, Map.of()).body();
            for (String s : secrets) {
                assertThat(body).as(read).doesNotContain(s);
            }
            assertThat(body).as(read).doesNotContain("sun.java.command");
            if (commandLine != null && commandLine.length() > 20) {
                assertThat(body).as(read).doesNotContain(commandLine);
            }
        }
        for (String get : List.of("/jolokia/read/java.lang:type=Runtime/SystemProperties",
                "/jolokia/read/java.lang:type=Runtime/InputArguments", "/jolokia/read/java.lang:type=Runtime")) {
            String body = get(port, get, Map.of()).body();
            assertThat(body).as(get).doesNotContain(SECRET).doesNotContain("sun.java.command");
        }
        // what Hawtio shows of the runtime still works
        String uptime = post(port, "{\"type\":\"read\",\"mbean\":\"java.lang:type=Runtime\",\"attribute\":\"Uptime\"}", Map.of()).body();
        assertThat(uptime).contains("\"status\":200");
    }
}
