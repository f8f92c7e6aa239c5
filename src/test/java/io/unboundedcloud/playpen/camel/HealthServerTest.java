package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.api.Json;

/**
 * The probe listener on its own: {@code /healthz} is 204 whether or not the replica is ready, {@code /readyz}
 * follows readiness (204, or a 503 Status with Retry-After), HEAD gets the same status without a body, a request
 * with a body is answered alike, and any other path is a 404 Status that says what the listener serves.
 */
class HealthServerTest {
    private final AtomicBoolean ready = new AtomicBoolean();
    /** What the replica says while not ready: passed through to the 503 as it is. */
    static final String WHY = "not ready: no usable front-proxy trust bundle (the test's reason)";
    private final java.util.function.Supplier<String> notReady = () -> ready.get() ? null : WHY;
    private final HttpClient client = HttpClient.newHttpClient();
    private HealthServer server;

    @BeforeEach
    void start() throws Exception {
        server = new HealthServer("127.0.0.1", 0, notReady, 7);
        server.start();
    }

    @AfterEach
    void stop() {
        server.close();
    }

    private HttpResponse<String> send(String method, String path, String body) throws Exception {
        URI uri = URI.create("http://127.0.0.1:" + server.address().getPort() + path);
        HttpRequest.BodyPublisher publisher = body == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(body);
        return client.send(HttpRequest.newBuilder(uri).method(method, publisher).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void livenessIsAlwaysAnsweredAndReadinessFollowsTheReplica() throws Exception {
        assertThat(send("GET", "/healthz", null).statusCode()).isEqualTo(204);
        HttpResponse<String> notReady = send("GET", "/readyz", null);
        assertThat(notReady.statusCode()).isEqualTo(503);
        assertThat(notReady.headers().firstValue("Retry-After")).hasValue("7");
        assertThat(notReady.headers().firstValue("Content-Type")).hasValue("application/json");
        JsonNode status = Json.MAPPER.readTree(notReady.body());
        assertThat(status.get("kind").asText()).isEqualTo("Status");
        assertThat(status.get("code").asInt()).isEqualTo(503);
        assertThat(status.get("reason").asText()).isEqualTo("ServiceUnavailable");
        assertThat(status.get("message").asText()).as("why it is not ready, as the replica says it").isEqualTo(WHY);

        ready.set(true);
        HttpResponse<String> readyNow = send("GET", "/readyz", null);
        assertThat(readyNow.statusCode()).isEqualTo(204);
        assertThat(readyNow.body()).isEmpty();
        assertThat(send("POST", "/healthz", "x".repeat(10_000)).statusCode())
                .as("a request with a body is answered alike").isEqualTo(204);

        ready.set(false);
        assertThat(send("GET", "/readyz", null).statusCode()).isEqualTo(503);
        assertThat(send("GET", "/healthz", null).statusCode()).as("alive while not ready").isEqualTo(204);
    }

    @Test
    void headGetsTheStatusWithoutABody() throws Exception {
        HttpResponse<String> head = send("HEAD", "/readyz", null);
        assertThat(head.statusCode()).isEqualTo(503);
        assertThat(head.body()).isEmpty();
        assertThat(head.headers().firstValue("Retry-After")).hasValue("7");
    }

    @Test
    void everyOtherPathIsANotFoundStatus() throws Exception {
        ready.set(true);
        for (String path : new String[] {"/", "/livez", "/readyz/", "/healthz/x", "/metrics"}) {
            HttpResponse<String> r = send("GET", path, null);
            assertThat(r.statusCode()).as(path).isEqualTo(404);
            JsonNode status = Json.MAPPER.readTree(r.body());
            assertThat(status.get("reason").asText()).isEqualTo("NotFound");
            assertThat(status.get("message").asText()).isEqualTo("the probe listener serves /healthz and /readyz only");
            assertThat(r.headers().firstValue("Retry-After")).isEmpty();
        }
    }

    /**
     * Whoever can reach the probe port (the node, or every pod where NetworkPolicy is not enforced) must not be able
     * to hold it: connections that send part of a request head and then nothing take no thread away from kubelet's
     * probes, however many there are, and each is closed once its head deadline passes.
     */
    @Test
    void connectionsThatNeverFinishTheirHeadDoNotHoldTheProbesUp() throws Exception {
        ready.set(true);
        List<Socket> stalled = new ArrayList<>();
        try {
            for (int i = 0; i < 16; i++) {
                Socket s = new Socket("127.0.0.1", server.address().getPort());
                s.getOutputStream().write("GET /heal".getBytes(StandardCharsets.US_ASCII));
                s.getOutputStream().flush();
                stalled.add(s);
            }
            for (int i = 0; i < 3; i++) {
                HttpRequest probe = HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + server.address().getPort() + "/healthz"))
                        .timeout(Duration.ofSeconds(60)).build();
                assertThat(client.send(probe, HttpResponse.BodyHandlers.discarding()).statusCode())
                        .as("probe %d with 16 stalled connections open", i).isEqualTo(204);
            }
        } finally {
            for (Socket s : stalled) {
                s.close();
            }
        }
    }

    @Test
    void aConnectionThatNeverFinishesItsHeadIsClosedAtTheDeadline() throws Exception {
        HealthServer quick = new HealthServer("127.0.0.1", 0, notReady, 7, Duration.ofMillis(200));
        quick.start();
        try (Socket s = new Socket("127.0.0.1", quick.address().getPort())) {
            s.setSoTimeout(60_000);
            s.getOutputStream().write("GET /healthz HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.US_ASCII));
            s.getOutputStream().flush();
            assertThat(s.getInputStream().read()).as("closed without an answer").isEqualTo(-1);
        } finally {
            quick.close();
        }
    }

    /** A byte every few milliseconds does not keep a connection open past its request deadline. */
    @Test
    void aConnectionThatTricklesItsHeadIsClosedAtTheDeadline() throws Exception {
        HealthServer quick = new HealthServer("127.0.0.1", 0, notReady, 7, Duration.ofMillis(500));
        quick.start();
        try (Socket s = new Socket("127.0.0.1", quick.address().getPort())) {
            java.util.concurrent.CompletableFuture<Integer> firstByte = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    return s.getInputStream().read();
                } catch (java.io.IOException reset) {
                    return -1;
                }
            });
            java.io.OutputStream out = s.getOutputStream();
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            try {
                out.write("GET /healthz?".getBytes(StandardCharsets.US_ASCII));
                while (!firstByte.isDone() && System.nanoTime() < deadline) {
                    out.write('a');
                    out.flush();
                    Thread.sleep(50); // the trickle's pace
                }
            } catch (java.io.IOException closed) {
                // the server closed the connection while we were still sending
            }
            assertThat(firstByte).as("closed while it was still trickling").isDone();
            assertThat(firstByte.get()).as("closed without an answer").isEqualTo(-1);
        } finally {
            quick.close();
        }
    }

    @Test
    void connectionsBeyondTheCapAreClosedUnansweredWhileTheEarlierOnesAreServed() throws Exception {
        ready.set(true);
        HealthServer capped = new HealthServer("127.0.0.1", 0, notReady, 7, Duration.ofSeconds(60), 4);
        capped.start();
        List<Socket> held = new ArrayList<>();
        try {
            for (int i = 0; i < 4; i++) {
                held.add(new Socket("127.0.0.1", capped.address().getPort()));
            }
            try (Socket beyond = new Socket("127.0.0.1", capped.address().getPort())) {
                beyond.setSoTimeout(60_000);
                assertThat(probe(beyond)).as("the fifth connection is closed without an answer").isEmpty();
            }
            Socket first = held.get(0);
            first.setSoTimeout(60_000);
            assertThat(probe(first)).startsWith("HTTP/1.1 204");
        } finally {
            for (Socket s : held) {
                s.close();
            }
            capped.close();
        }
    }

    /**
     * A client that pipelines requests and never reads the answers is not read on without end: once its answers
     * back up, the listener stops reading it, so what it sent stays in the socket buffers instead of piling up
     * answers in the operator's memory.
     */
    @Test
    void aClientThatNeverReadsItsAnswersIsNoLongerRead() throws Exception {
        HealthServer patient = new HealthServer("127.0.0.1", 0, notReady, 7, Duration.ofSeconds(60));
        byte[] request = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
        java.nio.ByteBuffer requests = java.nio.ByteBuffer.allocate(request.length * 4096);
        while (requests.remaining() >= request.length) {
            requests.put(request);
        }
        requests.flip();
        long limit = 16L * 1024 * 1024;
        long sent = 0;
        try (java.nio.channels.SocketChannel ch = java.nio.channels.SocketChannel.open();
                java.nio.channels.Selector selector = java.nio.channels.Selector.open()) {
            ch.setOption(java.net.StandardSocketOptions.SO_RCVBUF, 4096);
            ch.connect(patient.address());
            ch.configureBlocking(false);
            ch.register(selector, java.nio.channels.SelectionKey.OP_WRITE);
            // send until the listener stops taking requests (nothing can be written for 10 s) or 16 MiB went out
            while (sent < limit) {
                if (selector.select(10_000) == 0) {
                    break;
                }
                selector.selectedKeys().clear();
                if (!requests.hasRemaining()) {
                    requests.rewind();
                }
                sent += ch.write(requests);
            }
        } finally {
            patient.close();
        }
        assertThat(sent).as("bytes of requests the listener took without its answers being read").isLessThan(limit);
    }

    /** A request Netty cannot read is answered as on the HTTPS port: a Status with the code that says why. */
    @Test
    void anUnreadableRequestIsAStatusThatSaysWhy() throws Exception {
        int port = server.address().getPort();
        String longLine = "GET /healthz?" + "a".repeat(5000) + " HTTP/1.1\r\nHost: x\r\n\r\n";
        String longHeader = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + "b".repeat(9000) + "\r\n\r\n";
        String badHeader = "GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n";
        // the same codes, reasons and messages as the HTTPS port (ConnectionGuardTest)
        String[][] cases = {{longLine, "414", "RequestURITooLong", "request line is longer than 4096 bytes, the most"
                + " this server reads; send a shorter request target: this API's paths are short and need no query"},
                {longHeader, "431", "RequestHeaderFieldsTooLarge", "request header fields are larger than 8192 bytes,"
                        + " the most this server reads; send fewer or shorter header fields"},
                {badHeader, "400", "BadRequest", HttpConformanceRouteTest.MALFORMED_HEAD}};
        for (String[] c : cases) {
            try (Socket s = new Socket("127.0.0.1", port)) {
                s.setSoTimeout(60_000);
                s.getOutputStream().write(c[0].getBytes(StandardCharsets.US_ASCII));
                s.getOutputStream().flush();
                String answer = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertThat(answer).as(c[2]).startsWith("HTTP/1.1 " + c[1] + " ");
                JsonNode status = Json.MAPPER.readTree(answer.substring(answer.indexOf("\r\n\r\n") + 4));
                assertThat(status.get("kind").asText()).isEqualTo("Status");
                assertThat(status.get("code").asInt()).isEqualTo(Integer.parseInt(c[1]));
                assertThat(status.get("reason").asText()).isEqualTo(c[2]);
                assertThat(status.get("message").asText()).as(c[2]).isEqualTo(c[3]);
            }
        }
    }

    /** The status line the server sends for a /healthz request, or what it sent before it closed. */
    private static String probe(Socket s) throws java.io.IOException {
        StringBuilder got = new StringBuilder();
        try {
            s.getOutputStream().write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            s.getOutputStream().flush();
            int c;
            while ((c = s.getInputStream().read()) >= 0 && c != '\r') {
                got.append((char) c);
            }
        } catch (java.net.SocketException reset) {
            // closed by the server
        }
        return got.toString();
    }

    @Test
    void anEmptyHostListensOnEveryAddressAndCloseStopsListening() throws Exception {
        HealthServer everywhere = new HealthServer("", 0, notReady, 7);
        try {
            assertThat(everywhere.address().getAddress().isAnyLocalAddress()).isTrue();
        } finally {
            everywhere.close();
        }
        int port = server.address().getPort();
        server.close();
        assertThatThrownBy(() -> new java.net.Socket("127.0.0.1", port).close())
                .isInstanceOf(java.net.ConnectException.class);
    }
}
