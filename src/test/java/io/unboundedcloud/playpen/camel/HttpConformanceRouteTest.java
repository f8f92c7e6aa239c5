package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.AllocRequestParser;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * HTTP semantics like the reference's handler, on raw HTTPS requests: method checked before authentication, exact
 * paths, probes 204 to any method, HEAD without a body, any Content-Type but UTF-8 only, answers always UTF-8 JSON,
 * dealloc's header means its body is never read. Every refused request leaves the cluster as it was.
 */
class HttpConformanceRouteTest {
    static final ObjectMapper M = new ObjectMapper();
    static final String V = "/apis/playpen.unbounded-cloud.io/v1alpha1";
    static final String ALLOCS = V + "/allocs";
    static final String DEALLOCS = V + "/deallocs";
    static TestCluster cluster;
    static OperatorHarness op;

    @BeforeAll
    static void up() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        op = new OperatorHarness(cluster);
    }

    @AfterAll
    static void down() {
        if (op != null) {
            op.close();
        }
        cluster.close();
    }

    @BeforeEach
    void oneIdleRunner() throws Exception {
        op.wipePods();
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op.awaitCache(c -> c.size() == 1);
    }

    record Reply(int code, Map<String, String> headers, byte[] body) {
        String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }

        String text() {
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    /** One request on its own TLS connection, as the bytes say; the reply read until the server closes. */
    static Reply raw(Pki.Issued cert, String method, String target, Map<String, String> headers, byte[] body)
            throws Exception {
        try (SSLSocket s = (SSLSocket) tls(cert).getSocketFactory().createSocket("127.0.0.1", op.port)) {
            s.setSoTimeout(20_000);
            StringBuilder head = new StringBuilder(method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    + "Connection: close\r\n");
            headers.forEach((k, v) -> head.append(k).append(": ").append(v).append("\r\n"));
            if (body != null) {
                head.append("Content-Length: ").append(body.length).append("\r\n");
            }
            head.append("\r\n");
            OutputStream out = s.getOutputStream();
            out.write(head.toString().getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            if (body != null) {
                try {
                    out.write(body);
                    out.flush();
                } catch (java.net.SocketException e) {
                    // the server may answer from the head alone (413 for a declared size over the limit) and close
                    // while the body is still on its way: read the answer it sent
                }
            }
            InputStream in = s.getInputStream();
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            in.transferTo(all);
            return parse(all.toByteArray());
        }
    }

    static Reply parse(byte[] bytes) {
        String text = new String(bytes, StandardCharsets.ISO_8859_1);
        int end = text.indexOf("\r\n\r\n");
        assertThat(end).as("a complete HTTP response, got: " + text).isPositive();
        String[] lines = text.substring(0, end).split("\r\n");
        Map<String, String> headers = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            headers.put(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT), lines[i].substring(colon + 1).trim());
        }
        return new Reply(Integer.parseInt(lines[0].split(" ")[1]), headers,
                Arrays.copyOfRange(bytes, end + 4, bytes.length));
    }

    static SSLContext tls(Pki.Issued cert) throws Exception {
        return OperatorHarness.sslContext(cert);
    }

    /** A request as the aggregator sends it: front-proxy certificate and an allowed user. */
    static Reply asUser(String method, String target, Map<String, String> headers, String body) throws Exception {
        Map<String, String> h = new LinkedHashMap<>(headers);
        h.put("X-Remote-User", "alice");
        h.put("X-Remote-Group", "playpen-users");
        return raw(cluster.frontProxyClient, method, target, h, body == null ? null : body.getBytes(StandardCharsets.UTF_8));
    }

    static String runner(String key) {
        return "{\"idempotencyKey\":\"" + key + "\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(3) + "\"}";
    }

    static Map<String, String> state() {
        Map<String, String> s = new TreeMap<>();
        for (Pod p : cluster.pods()) {
            s.put(p.getMetadata().getName(), p.getMetadata().getResourceVersion());
        }
        return s;
    }

    static long claimed() {
        return cluster.pods().stream().filter(p -> p.getMetadata().getAnnotations() != null
                && p.getMetadata().getAnnotations().containsKey(PlaypenKeys.IDEMPOTENCY_KEY_HASH)).count();
    }

    static String claimedBy() {
        Map<String, String> annotations = cluster.pods().get(0).getMetadata().getAnnotations();
        return annotations == null ? null : annotations.get(PlaypenKeys.IDEMPOTENCY_KEY_HASH);
    }

    static JsonNode status(Reply r, int code, String reason) throws Exception {
        assertThat(r.code()).as(r.text()).isEqualTo(code);
        assertThat(r.header("Content-Type")).isEqualTo("application/json");
        JsonNode st = M.readTree(r.text());
        assertThat(st.get("kind").asText()).isEqualTo("Status");
        assertThat(st.get("reason").asText()).isEqualTo(reason);
        assertThat(st.get("code").asInt()).isEqualTo(code);
        return st;
    }

    @Test
    void wrongMethodIs405WithAllowBeforeAnyCertificateIsAsked() throws Exception {
        Map<String, String> before = state();
        // GET allocs lists allocations (ours, not the reference's): the allocs path's Allow names GET and POST
        for (String[] c : new String[][] {{"PUT", ALLOCS, "GET, POST"}, {"PUT", DEALLOCS, "POST"},
                {"DELETE", ALLOCS, "GET, POST"}, {"OPTIONS", ALLOCS, "GET, POST"}, {"TRACE", DEALLOCS, "POST"},
                {"PATCH", ALLOCS, "GET, POST"},
                {"POST", V, "GET"}, {"OPTIONS", V, "GET"}, {"PUT", "/apis/playpen.unbounded-cloud.io", "GET"}}) {
            // no client certificate at all: the reference answers 405 before it looks at the caller
            Reply r = raw(null, c[0], c[1], Map.of(), c[0].equals("PUT") || c[0].equals("PATCH") ? new byte[0] : null);
            JsonNode st = status(r, 405, "MethodNotAllowed");
            assertThat(st.get("message").asText()).as(c[0] + " " + c[1]).startsWith("method not allowed: ")
                    .contains(c[1].equals(DEALLOCS) ? "/deallocs -f <file>" : c[1].equals(ALLOCS) ? "/allocs -f <file>"
                            : "kubectl api-resources");
            assertThat(r.header("Allow")).as(c[0] + " " + c[1]).isEqualTo(c[2]);
        }
        // with the right method, no certificate is 403 "forbidden" like the reference, not 401
        JsonNode st = status(raw(null, "POST", ALLOCS, Map.of(), runner("k").getBytes(StandardCharsets.UTF_8)),
                403, "Forbidden");
        assertThat(st.get("message").asText()).isEqualTo("forbidden");
        assertThat(status(raw(null, "GET", V, Map.of(), null), 403, "Forbidden").get("message").asText())
                .isEqualTo("forbidden");
        // GET allocs and DELETE allocs/<id> (ours) are real flows: no certificate is 403 like every /apis flow
        assertThat(status(raw(null, "GET", ALLOCS, Map.of(), null), 403, "Forbidden").get("message").asText())
                .isEqualTo("forbidden");
        assertThat(status(raw(null, "DELETE", ALLOCS + "/0123456789abcdef", Map.of(), null), 403, "Forbidden")
                .get("message").asText()).isEqualTo("forbidden");
        assertThat(state()).isEqualTo(before);
    }

    @Test
    void onlyExactPathsAreServedAndNothingElseClaims() throws Exception {
        Map<String, String> before = state();
        for (String target : List.of(ALLOCS + "/", V + "%2Fallocs", V + "%2fallocs", V + "//allocs",
                V + "/./allocs", V + "/../v1alpha1/allocs", V + "/%2e%2e/v1alpha1/allocs", "/apis/playpen.unbounded-cloud.io/"
                        + "v1alpha1/allocs/.", "//apis/playpen.unbounded-cloud.io/v1alpha1/allocs", ALLOCS + "%00",
                V + "/Allocs", V + "/a{l}locs", V + "/al|locs", DEALLOCS + "/", V + "/")) {
            JsonNode st = status(asUser("POST", target, Map.of("Content-Type", "application/json"), runner("k-" + target.length())),
                    404, "NotFound");
            assertThat(st.get("message").asText()).as(target).startsWith("the server could not find the requested resource");
            assertThat(st.get("message").asText().contains("this API serves")).as(target)
                    .isEqualTo(target.startsWith("/apis/playpen.unbounded-cloud.io/"));
        }
        // a bad %-escape is Go's 400, and the connection gets its answer (Camel's own URI parsing would drop it)
        for (String target : List.of(V + "/allocs%", V + "/alloc%zzs", ALLOCS + "%2")) {
            JsonNode st = status(asUser("POST", target, Map.of(), runner("k")), 400, "BadRequest");
            assertThat(st.get("message").asText()).isEqualTo("malformed request path: invalid URL escape (a % not"
                    + " followed by two hexadecimal digits); write % itself as %25");
        }
        status(asUser("GET", V + "/", Map.of(), null), 404, "NotFound");
        status(asUser("GET", "/apis/playpen.unbounded-cloud.io/", Map.of(), null), 404, "NotFound");
        assertThat(state()).isEqualTo(before);
        // the same request on the exact path (a query other than dryRun ignored, segments may be percent-encoded)
        // claims the pod
        Reply ok = asUser("POST", V + "/%61llocs?pretty=true", Map.of("Content-Type", "application/json"), runner("k-ok"));
        assertThat(ok.code()).as(ok.text()).isEqualTo(200);
        assertThat(claimedBy()).isNotNull();
    }

    @Test
    void probesAnswer204WithNoBodyToAnyMethodWithoutACertificate() throws Exception {
        for (String path : List.of("/healthz", "/readyz")) {
            // methods camel-netty-http does not know (PROPFIND, a lower-case get) too, as Go's server answers them
            for (String method : List.of("GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "TRACE", "PATCH", "PROPFIND",
                    "get")) {
                Reply r = raw(null, method, path, Map.of(), method.equals("POST") || method.equals("PUT")
                        ? "x".getBytes(StandardCharsets.UTF_8) : null);
                assertThat(r.code()).as(method + " " + path + ": " + r.text()).isEqualTo(204);
                assertThat(r.body()).as(method + " " + path).isEmpty();
                assertThat(r.header("Content-Type")).as(method + " " + path).isNull();
            }
            // exact paths here too
            status(raw(null, "GET", path + "/", Map.of(), null), 404, "NotFound");
        }
    }

    static final String MALFORMED_HEAD = "malformed HTTP request head; send a request line (METHOD /path HTTP/1.1),"
            + " then one Name: value line per header field (a name of letters, digits and -, no space before the colon;"
            + " a printable value), at most one Content-Length, and an empty line";
    static final String MALFORMED_VERSION = "malformed HTTP version; send HTTP/1.1 (or HTTP/1.0), in capitals: this"
            + " server does not speak HTTP/2";

    /**
     * Requests Netty cannot read, or that the server refuses from their head, are answered with a Status whose
     * message says what is wrong and what to send, never quoting the request's header values; the connection is
     * closed after the answer, since the rest of the stream cannot be read as requests.
     */
    @Test
    void anUnreadableRequestIsAStatusThatSaysWhatToSend() throws Exception {
        Map<String, String> before = state();
        String user = "X-Remote-User: alice\r\nX-Remote-Group: playpen-users\r\n";
        String[][] cases = {
            {"GET /healthz?" + "a".repeat(5000) + " HTTP/1.1\r\nHost: x\r\n\r\n", "414", "RequestURITooLong",
                "request line is longer than 4096 bytes, the most this server reads; send a shorter request"
                        + " target: this API's paths are short and need no query"},
            {"POST " + ALLOCS + " HTTP/1.1\r\nHost: x\r\n" + user + "X-Token : secret-value\r\nContent-Length: 2\r\n\r\n{}",
                "400", "BadRequest", MALFORMED_HEAD},
            {"POST " + ALLOCS + " HTTP/1.1\r\nHost: x\r\n" + user + "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
                "400", "BadRequest", MALFORMED_HEAD},
            {"GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", "505", "HTTPVersionNotSupported",
                "unsupported protocol version HTTP/2.0; send HTTP/1.1 (this server speaks HTTP/1.1 and HTTP/1.0)"},
            {"GET /healthz http/1.1\r\nHost: x\r\n\r\n", "400", "BadRequest", MALFORMED_VERSION},
            {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "400", "BadRequest", MALFORMED_VERSION},
            {"POST " + ALLOCS + " HTTP/1.1\r\n" + user + "Content-Length: 2\r\n\r\n{}", "400", "BadRequest",
                "missing Host header; an HTTP/1.1 request names the server it is for: send Host: with the name or"
                        + " address you connected to"},
            {"POST " + ALLOCS + " HTTP/1.1\r\nHost: x\r\n" + user + "Expect: secret-expectation\r\nContent-Length: 2\r\n\r\n{}",
                "417", "ExpectationFailed", "expectation failed; the one expectation this server meets is 100-continue:"
                        + " send the request without its Expect header, or with Expect: 100-continue"},
            {"POST " + ALLOCS + " HTTP/1.1\r\nHost: x\r\n" + user + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
                "400", "BadRequest", "malformed HTTP request body; a chunked body is each chunk's size in hexadecimal,"
                        + " CRLF, its bytes and CRLF, then a chunk of size 0 and an empty line: send it so, or send the body"
                        + " whole with a Content-Length"}};
        for (String[] c : cases) {
            List<Reply> replies = pipelined(c[0]);
            assertThat(replies).as(c[2] + ": one answer, then the server closes").hasSize(1);
            Reply r = replies.get(0);
            JsonNode st = status(r, Integer.parseInt(c[1]), c[2]);
            assertThat(r.header("Connection")).isEqualTo("close");
            assertThat(st.get("message").asText()).as(c[0].substring(0, Math.min(40, c[0].length()))).isEqualTo(c[3]);
            assertThat(r.text()).doesNotContain("secret");
        }
        assertThat(state()).isEqualTo(before);
    }

    /**
     * Without a trusted client certificate a request head may hold 8 KiB, also when it arrives whole in one read: the
     * answer is a 431 Status that says how large the head was and what to do, not the probe's 204.
     */
    @Test
    void aWholeHeadOverTheBudgetOfAClientWithoutATrustedCertificateIs431() throws Exception {
        String head = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Filler: " + "a".repeat(9000) + "\r\n\r\n";
        List<Reply> replies = pipelined((Pki.Issued) null, head);
        assertThat(replies).hasSize(1);
        JsonNode st = status(replies.get(0), 431, "RequestHeaderFieldsTooLarge");
        assertThat(st.get("message").asText()).matches("request head is 90\\d\\d bytes, over the 8192 bytes allowed"
                + " without a trusted client certificate; send fewer or shorter header fields, or send the request"
                + " with a client certificate the front-proxy trust bundle trusts");
        assertThat(replies.get(0).header("Connection")).isEqualTo("close");
    }

    /**
     * Plain HTTP sent to the HTTPS port gets a plain-HTTP answer that says so, as Go's server gives it, not a closed
     * connection without a word.
     */
    @Test
    void plainHttpToTheHttpsPortIsAStatusSayingToUseHttps() throws Exception {
        for (String request : List.of("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
                "POST " + ALLOCS + " HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")) {
            try (java.net.Socket s = new java.net.Socket("127.0.0.1", op.port)) {
                s.setSoTimeout(20_000);
                s.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
                s.getOutputStream().flush();
                ByteArrayOutputStream all = new ByteArrayOutputStream();
                s.getInputStream().transferTo(all);
                Reply r = parse(all.toByteArray());
                JsonNode st = status(r, 400, "BadRequest");
                assertThat(r.header("Connection")).isEqualTo("close");
                assertThat(st.get("message").asText()).isEqualTo("the client sent an HTTP request to an HTTPS server; send it over TLS, to https://"
                        + " and this port");
            }
        }
    }

    @Test
    void headAnswersCarryNoBody() throws Exception {
        // discovery is GET only in the reference, HEAD included: 405, and like every HEAD answer, headers only
        for (Reply r : List.of(asUser("HEAD", V, Map.of(), null), raw(null, "HEAD", ALLOCS, Map.of(), null),
                raw(null, "HEAD", "/nowhere", Map.of(), null), raw(null, "HEAD", "/healthz", Map.of(), null))) {
            assertThat(r.body()).as(r.code() + " " + r.headers()).isEmpty();
            assertThat(r.header("Content-Length")).isIn(null, "0");
        }
        assertThat(asUser("HEAD", V, Map.of(), null).code()).isEqualTo(405);
        assertThat(asUser("HEAD", V, Map.of(), null).header("Allow")).isEqualTo("GET");
        assertThat(raw(null, "HEAD", "/nowhere", Map.of(), null).code()).isEqualTo(404);
    }

    @Test
    void anyContentTypeIsAcceptedAndTheAnswerIsUtf8Json() throws Exception {
        // form-urlencoded gets an answer (Camel's form decoding never sees it) and its body is read as JSON
        Reply form = asUser("POST", ALLOCS, Map.of("Content-Type", "application/x-www-form-urlencoded"), "idempotencyKey=a");
        assertThat(status(form, 400, "BadRequest").get("message").asText())
                .isEqualTo(BadInputRouteTest.badAlloc("the body is not valid JSON near line 1, column 1"));
        List<String> types = List.of("text/plain", "application/x-www-form-urlencoded; charset=UTF-8", "application/xml",
                "application/json; charset=\"utf-8\"", "application/json;charset=utf8", "text/plain; charset=us-ascii");
        for (int i = 1; i < types.size(); i++) {
            cluster.create(TestCluster.readyRunner("amd64", 51820 + i, "node-a"));
        }
        op.awaitCache(c -> c.size() == types.size());
        for (int i = 0; i < types.size(); i++) {
            String ct = types.get(i);
            Reply r = asUser("POST", ALLOCS, Map.of("Content-Type", ct), runner("k-" + i));
            assertThat(r.code()).as(ct + ": " + r.text()).isEqualTo(200);
            assertThat(r.header("Content-Type")).as(ct).isEqualTo("application/json");
            assertThat(M.readTree(r.text()).at("/pod/name").asText()).startsWith("playpen-runner-amd64-518");
            assertThat(claimed()).as(ct).isEqualTo(i + 1);
        }
    }

    @Test
    void aCharsetOtherThanUtf8Is415BeforeAnythingIsClaimed() throws Exception {
        Map<String, String> before = state();
        for (String ct : List.of("application/json; charset=utf-16", "application/json; charset=UTF-32",
                "application/json; charset=IBM037", "application/json; charset=bogus-cs", "text/plain; charset=latin1",
                "application/json; charset=", "application/json; charset=utf-8; charset=utf-16")) {
            Reply r = asUser("POST", ALLOCS, Map.of("Content-Type", ct), runner("k-" + ct.hashCode()));
            // the Status is UTF-8 JSON whatever the request declared (it was UTF-16, or no answer at all)
            JsonNode st = status(r, 415, "UnsupportedMediaType");
            assertThat(r.body()[0]).isEqualTo((byte) '{');
            assertThat(st.get("message").asText()).as(ct).contains("is not supported; send UTF-8");
        }
        assertThat(state()).isEqualTo(before);
        assertThat(claimedBy()).isNull();
    }

    @Test
    void deallocWithTheHeaderNeverReadsTheBodyAndAnEmptyBodyNeedsTheKey() throws Exception {
        Reply claimed = asUser("POST", ALLOCS, Map.of(), runner("gone"));
        assertThat(claimed.code()).as(claimed.text()).isEqualTo(200);
        // header set: not JSON, an unknown charset and more than 64 KiB are all ignored, like the reference
        byte[] big = new byte[70 * 1024];
        Arrays.fill(big, (byte) 'x');
        Map<String, String> h = Map.of("Idempotency-Key", "unknown-key", "Content-Type", "text/plain; charset=bogus-cs");
        assertThat(asUser("POST", DEALLOCS, h, "not json").code()).isEqualTo(204);
        Map<String, String> withUser = new LinkedHashMap<>(h);
        withUser.put("X-Remote-User", "alice");
        withUser.put("X-Remote-Group", "playpen-users");
        assertThat(raw(cluster.frontProxyClient, "POST", DEALLOCS, withUser, big).code()).isEqualTo(204);
        assertThat(cluster.pods()).hasSize(1);
        assertThat(asUser("POST", DEALLOCS, Map.of("Idempotency-Key", " gone "), "[1,2").code()).isEqualTo(204);
        op.awaitCache(java.util.Collection::isEmpty);
        // no header: an empty or blank body is the reference's "key required", not "invalid JSON"
        String required = AllocRequestParser.RELEASE_KEY_REQUIRED;
        for (String body : new String[] {null, "", " \r\n\t"}) {
            assertThat(status(asUser("POST", DEALLOCS, Map.of(), body), 400, "BadRequest").get("message").asText())
                    .isEqualTo(required);
        }
        assertThat(status(asUser("POST", DEALLOCS, Map.of("Idempotency-Key", "  "), ""), 400, "BadRequest")
                .get("message").asText()).isEqualTo(required);
        assertThat(status(asUser("POST", DEALLOCS, Map.of(), "not json"), 400, "BadRequest").get("message").asText())
                .isEqualTo(AllocRequestParser.invalidJsonMessage("the body is not valid JSON near line 1, column 1",
                        AllocRequestParser.DEALLOC_SHAPE));
        // without the header the body is read, so its charset and size count
        status(asUser("POST", DEALLOCS, Map.of("Content-Type", "application/json; charset=utf-16"), "{}"), 415,
                "UnsupportedMediaType");
        status(raw(cluster.frontProxyClient, "POST", DEALLOCS, Map.of("X-Remote-User", "alice",
                "X-Remote-Group", "playpen-users"), big), 413, "RequestEntityTooLarge");
    }

    /** Several requests written at once on one connection; every answer the server sends, in the order sent. */
    static List<Reply> pipelined(String... requests) throws Exception {
        return pipelined(cluster.frontProxyClient, requests);
    }

    /** The same with {@code cert} as the client certificate (null: none). */
    static List<Reply> pipelined(Pki.Issued cert, String... requests) throws Exception {
        try (SSLSocket s = (SSLSocket) tls(cert).getSocketFactory().createSocket("127.0.0.1", op.port)) {
            s.setSoTimeout(20_000);
            OutputStream out = s.getOutputStream();
            out.write(String.join("", requests).getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            s.getInputStream().transferTo(all);
            byte[] bytes = all.toByteArray();
            List<Reply> replies = new java.util.ArrayList<>();
            int at = 0;
            while (at < bytes.length) {
                String text = new String(bytes, at, bytes.length - at, StandardCharsets.ISO_8859_1);
                int end = text.indexOf("\r\n\r\n");
                assertThat(end).as("a complete HTTP response, got: " + text).isPositive();
                Reply head = parse(Arrays.copyOfRange(bytes, at, at + end + 4));
                int length = head.header("Content-Length") == null ? 0 : Integer.parseInt(head.header("Content-Length"));
                replies.add(new Reply(head.code(), head.headers(),
                        Arrays.copyOfRange(bytes, at + end + 4, at + end + 4 + length)));
                at += end + 4 + length;
            }
            return replies;
        }
    }

    static String request(String method, String target, String body, boolean last) {
        return method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Remote-User: alice\r\n"
                + "X-Remote-Group: playpen-users\r\n" + (last ? "Connection: close\r\n" : "")
                + (body == null ? "" : "Content-Length: " + body.getBytes(StandardCharsets.UTF_8).length + "\r\n")
                + "\r\n" + (body == null ? "" : body);
    }

    @Test
    void pipelinedRequestsAreAnsweredInTheOrderTheyCame() throws Exception {
        Map<String, String> before = state();
        // a bad body (the routes answer 400) then a path that does not exist (answered from its head, 404): the 404
        // must not overtake the 400, or the client reads "not found" as the answer to its alloc
        List<Reply> two = pipelined(request("POST", ALLOCS, "[]", false), request("GET", V + "/widgets", null, true));
        assertThat(two).extracting(Reply::code).containsExactly(400, 404);
        assertThat(M.readTree(two.get(0).text()).get("message").asText())
                .isEqualTo(BadInputRouteTest.badAlloc("the body is an array, not an object"));
        // an alloc that waits for capacity (no arm64 pod) is still answered first, and not lost when the probe
        // after it closes the connection
        String waits = "{\"idempotencyKey\":\"pipelined-wait\",\"architecture\":\"arm64\",\"wireGuardPublicKey\":\""
                + TestCluster.wgKey(3) + "\",\"waitSeconds\":1}";
        List<Reply> three = pipelined(request("POST", ALLOCS, waits, false), request("GET", "/healthz", null, false),
                request("PUT", DEALLOCS, "", true));
        assertThat(three).extracting(Reply::code).containsExactly(503, 204, 405);
        assertThat(status(three.get(0), 503, "ServiceUnavailable").get("message").asText()).contains("arm64");
        assertThat(three.get(2).header("Allow")).isEqualTo("POST");
        assertThat(state()).isEqualTo(before);
    }

    /**
     * Two Idempotency-Key lines: the first is the key, as the Go operator reads a header (Header.Get) and as the
     * connection guard does; the second is ignored. A later request with the first key alone is its replay.
     */
    @Test
    void ofTwoIdempotencyKeyLinesTheFirstIsTheKey() throws Exception {
        String body = "{\"architecture\":\"amd64\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(5) + "\"}";
        String twoKeys = "POST " + ALLOCS + " HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Remote-User: alice\r\n"
                + "X-Remote-Group: playpen-users\r\nIdempotency-Key: first-key\r\nIdempotency-Key: second-key\r\n"
                + "Connection: close\r\nContent-Length: " + body.length() + "\r\n\r\n" + body;
        Reply made = pipelined(twoKeys).get(0);
        assertThat(made.code()).as(made.text()).isEqualTo(200);
        Pod claimed = cluster.pods().get(0);
        assertThat(claimed.getMetadata().getAnnotations())
                .containsEntry(PlaypenKeys.IDEMPOTENCY_KEY_HASH, Hashes.keyHash("first-key"));
        Reply replay = pipelined(twoKeys.replace("Idempotency-Key: second-key\r\n", "")).get(0);
        assertThat(replay.code()).as(replay.text()).isEqualTo(200);
        assertThat(replay.text()).isEqualTo(made.text());
    }

    @Test
    void aDeleteWhoseBodyIsJsonNullIsReadAsNoOptions() throws Exception {
        Map<String, String> before = state();
        // "null" is no DeleteOptions, as kube-apiserver reads it: the id is looked up like without a body (404 here),
        // never an internal error
        JsonNode st = status(asUser("DELETE", ALLOCS + "/0123456789abcdef", Map.of("Content-Type", "application/json"),
                "null"), 404, "NotFound");
        assertThat(st.get("message").asText()).startsWith("allocs.playpen.unbounded-cloud.io \"0123456789abcdef\" not found");
        assertThat(state()).isEqualTo(before);
    }

    @Test
    void kubectlReadsARefusalAsForbiddenNotAsLogIn(@TempDir Path dir) throws Exception {
        Path kubectl = Path.of(System.getenv().getOrDefault("KUBECTL", "/usr/bin/kubectl"));
        Assumptions.assumeTrue(Files.isExecutable(kubectl), "kubectl not found at " + kubectl + "; set KUBECTL");
        Path req = Files.writeString(dir.resolve("req.json"), runner("kubectl"));
        Base64.Encoder b64 = Base64.getEncoder();
        String certUser = "  user:\n    client-certificate-data: "
                + b64.encodeToString(cluster.frontProxyClient.certificatePem().getBytes(StandardCharsets.UTF_8))
                + "\n    client-key-data: "
                + b64.encodeToString(cluster.frontProxyClient.privateKeyPem().getBytes(StandardCharsets.UTF_8)) + "\n";
        // kubectl straight at the operator: with a token and no certificate (forbidden), with the front-proxy one but no
        // X-Remote-User (kubectl cannot send it). A 401 would read "You must be logged in to the server".
        for (String[] c : new String[][] {{"  user:\n    token: not-a-certificate\n", "Error from server (Forbidden): forbidden"},
                {certUser, "Error from server (Forbidden): missing remote user"}}) {
            Path kubeconfig = Files.writeString(dir.resolve("kubeconfig"), "apiVersion: v1\nkind: Config\n"
                    + "clusters:\n- name: op\n  cluster:\n    server: " + op.url("") + "\n    insecure-skip-tls-verify: true\n"
                    + "users:\n- name: u\n" + c[0] + "contexts:\n- name: op\n  context:\n    cluster: op\n    user: u\n"
                    + "current-context: op\n");
            Process p = new ProcessBuilder(kubectl.toString(), "--kubeconfig", kubeconfig.toString(), "--cache-dir",
                    dir.resolve("cache").toString(), "--request-timeout", "30s", "create", "--raw", ALLOCS, "-f",
                    req.toString()).redirectErrorStream(true).start();
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(p.exitValue()).as(out).isNotZero();
            assertThat(out.trim()).isEqualTo(c[1]);
        }
        assertThat(claimedBy()).isNull();
    }
}
