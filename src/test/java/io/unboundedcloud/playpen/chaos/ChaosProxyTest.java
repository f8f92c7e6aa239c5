package io.unboundedcloud.playpen.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import com.sun.net.httpserver.HttpServer;

import io.unboundedcloud.playpen.chaos.ChaosProxy.Fault;

/** The fault-injecting proxy on its own, in front of a tiny upstream that counts what reaches it. */
class ChaosProxyTest {
    static HttpServer upstream;
    static final AtomicInteger reached = new AtomicInteger();
    static final CountDownLatch streamsEnd = new CountDownLatch(1);
    ChaosProxy proxy;
    final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();

    @BeforeAll
    static void startUpstream() throws IOException {
        upstream = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
        upstream.setExecutor(Executors.newCachedThreadPool());
        upstream.createContext("/echo", ex -> {
            byte[] body = ex.getRequestBody().readAllBytes();
            reached.incrementAndGet();
            byte[] out = (ex.getRequestMethod() + ":" + new String(body, StandardCharsets.UTF_8))
                    .getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("X-Upstream", "yes");
            ex.sendResponseHeaders(201, out.length);
            try (OutputStream os = ex.getResponseBody()) {
                os.write(out);
            }
        });
        // a watch that sends one event and then stays open (until the test class ends)
        upstream.createContext("/stream", ex -> {
            reached.incrementAndGet();
            ex.sendResponseHeaders(200, 0);
            try (OutputStream os = ex.getResponseBody()) {
                os.write("{\"type\":\"ADDED\"}\n".getBytes(StandardCharsets.UTF_8));
                os.flush();
                streamsEnd.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException | IOException e) {
                // the proxy closed the stream
            }
        });
        upstream.start();
    }

    @AfterAll
    static void stopUpstream() {
        streamsEnd.countDown();
        upstream.stop(0);
    }

    @BeforeEach
    void startProxy() throws IOException {
        proxy = new ChaosProxy(URI.create("http://127.0.0.1:" + upstream.getAddress().getPort()), 42);
        reached.set(0);
    }

    @AfterEach
    void stopProxy() {
        proxy.close();
    }

    HttpResponse<String> send(String method, String path, String body) throws Exception {
        HttpRequest.BodyPublisher p = body == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(body);
        return http.send(HttpRequest.newBuilder(proxy.url().resolve(path)).timeout(Duration.ofSeconds(30))
                .method(method, p).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void withoutFaultsEverythingPassesThrough() throws Exception {
        HttpResponse<String> r = send("POST", "/echo?x=1", "hello");
        assertThat(r.statusCode()).isEqualTo(201);
        assertThat(r.body()).isEqualTo("POST:hello");
        assertThat(r.headers().firstValue("X-Upstream")).hasValue("yes");
        // a chunked request body (unknown length) arrives whole
        HttpResponse<String> chunked = http.send(HttpRequest.newBuilder(proxy.url().resolve("/echo"))
                .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(
                        "streamed".getBytes(StandardCharsets.UTF_8)))).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(chunked.body()).isEqualTo("POST:streamed");
        assertThat(send("GET", "/echo", null).body()).isEqualTo("GET:");
        assertThat(reached.get()).isEqualTo(3);
        assertThat(proxy.requests()).isEqualTo(3);
        assertThat(proxy.injected().values()).allMatch(n -> n == 0);
    }

    @Test
    void statusFaultsAnswerAKubernetesStatusWithoutReachingTheServer() throws Exception {
        int[][] cases = {{Fault.TOO_MANY_REQUESTS.ordinal(), 429}, {Fault.INTERNAL_ERROR.ordinal(), 500},
            {Fault.SERVICE_UNAVAILABLE.ordinal(), 503}, {Fault.GATEWAY_TIMEOUT.ordinal(), 504}};
        for (int[] c : cases) {
            Fault f = Fault.values()[c[0]];
            proxy.clear().rate(f, 1.0);
            HttpResponse<String> r = send("GET", "/echo", null);
            assertThat(r.statusCode()).as(f.name()).isEqualTo(c[1]);
            assertThat(r.body()).contains("\"kind\":\"Status\"", "\"code\":" + c[1]);
            assertThat(proxy.injected()).containsEntry(f, 1L);
        }
        proxy.clear().rate(Fault.TOO_MANY_REQUESTS, 1.0);
        assertThat(send("GET", "/echo", null).headers().firstValue("Retry-After")).hasValue("1");
        assertThat(reached.get()).isZero();
    }

    @Test
    void conflictOnlyOnWrites() throws Exception {
        proxy.rate(Fault.CONFLICT_ON_WRITE, 1.0);
        assertThat(send("GET", "/echo", null).statusCode()).isEqualTo(201);
        HttpResponse<String> put = send("PUT", "/echo", "x");
        assertThat(put.statusCode()).isEqualTo(409);
        assertThat(put.body()).contains("\"reason\":\"Conflict\"");
        assertThat(send("DELETE", "/echo", null).statusCode()).isEqualTo(409);
        assertThat(reached.get()).isEqualTo(1);
    }

    @Test
    void resetBeforeNeverReachesTheServer() throws Exception {
        proxy.rate(Fault.RESET_BEFORE, 1.0);
        assertThatThrownBy(() -> send("POST", "/echo", "w")).isInstanceOf(IOException.class);
        assertThat(reached.get()).isZero();
    }

    @Test
    void resetAfterLandsTheWriteButTheClientNeverHears() throws Exception {
        proxy.rate(Fault.RESET_AFTER, 1.0);
        assertThatThrownBy(() -> send("POST", "/echo", "w")).isInstanceOf(IOException.class);
        assertThat(reached.get()).isEqualTo(1);
    }

    @Test
    void latencyDelaysTheAnswer() throws Exception {
        proxy.rate(Fault.LATENCY, 1.0).latency(Duration.ofMillis(400), Duration.ofMillis(400));
        long t0 = System.nanoTime();
        assertThat(send("GET", "/echo", null).statusCode()).isEqualTo(201);
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isGreaterThanOrEqualTo(Duration.ofMillis(400));
    }

    @Test
    void watchGoneSendsA410ErrorEventOnlyToWatches() throws Exception {
        proxy.rate(Fault.WATCH_GONE, 1.0);
        HttpResponse<String> w = send("GET", "/stream?resourceVersion=5&watch=true", null);
        assertThat(w.statusCode()).isEqualTo(200);
        assertThat(w.body()).contains("\"type\":\"ERROR\"", "\"code\":410", "too old resource version");
        assertThat(send("GET", "/echo?watch=false", null).statusCode()).isEqualTo(201);
        assertThat(reached.get()).isEqualTo(1);
    }

    @Test
    void watchClosedEarlyEndsAStreamTheServerKeepsOpen() throws Exception {
        proxy.rate(Fault.WATCH_CLOSED_EARLY, 1.0);
        HttpResponse<InputStream> w = http.send(HttpRequest.newBuilder(proxy.url().resolve("/stream?watch=true"))
                .build(), HttpResponse.BodyHandlers.ofInputStream());
        assertThat(w.statusCode()).isEqualTo(200);
        long t0 = System.nanoTime();
        byte[] got;
        try (InputStream in = w.body()) {
            got = in.readAllBytes();
        } catch (IOException cut) {
            got = new byte[0]; // an abrupt end is an early close too
        }
        // the upstream holds the stream for 60 s; the proxy cuts it within its 0.2-3 s window
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(30));
        assertThat(new String(got, StandardCharsets.UTF_8)).satisfiesAnyOf(s -> assertThat(s).isEmpty(),
                s -> assertThat(s).contains("ADDED"));
        // a plain request is not a watch: not cut
        assertThat(send("GET", "/echo", null).statusCode()).isEqualTo(201);
    }

    /** A raw upstream that completes WebSocket handshakes and sends one text frame "hello" on each. */
    static java.net.ServerSocket webSocketUpstream() throws IOException {
        java.net.ServerSocket ss = new java.net.ServerSocket(0, 16, InetAddress.getLoopbackAddress());
        Thread t = new Thread(() -> {
            while (!ss.isClosed()) {
                try (java.net.Socket s = ss.accept()) {
                    reached.incrementAndGet();
                    java.io.BufferedReader r = new java.io.BufferedReader(new java.io.InputStreamReader(s.getInputStream(),
                            StandardCharsets.ISO_8859_1));
                    String key = null;
                    for (String line = r.readLine(); line != null && !line.isEmpty(); line = r.readLine()) {
                        if (line.toLowerCase().startsWith("sec-websocket-key:")) {
                            key = line.substring(line.indexOf(':') + 1).trim();
                        }
                    }
                    String accept = java.util.Base64.getEncoder().encodeToString(java.security.MessageDigest
                            .getInstance("SHA-1").digest((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
                                    .getBytes(StandardCharsets.ISO_8859_1)));
                    OutputStream os = s.getOutputStream();
                    os.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                            + "Sec-WebSocket-Accept: " + accept + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
                    os.write(new byte[] {(byte) 0x81, 5, 'h', 'e', 'l', 'l', 'o'});
                    os.flush();
                    s.getInputStream().read(); // until the client closes
                } catch (Exception e) {
                    // next connection
                }
            }
        }, "ws-upstream");
        t.setDaemon(true);
        t.start();
        return ss;
    }

    static String firstWebSocketText(HttpClient client, URI uri) throws Exception {
        java.util.concurrent.CompletableFuture<String> text = new java.util.concurrent.CompletableFuture<>();
        java.net.http.WebSocket ws = client.newWebSocketBuilder().buildAsync(uri, new java.net.http.WebSocket.Listener() {
            @Override
            public java.util.concurrent.CompletionStage<?> onText(java.net.http.WebSocket w, CharSequence data, boolean last) {
                text.complete(data.toString());
                return null;
            }
        }).get(30, TimeUnit.SECONDS);
        try {
            return text.get(30, TimeUnit.SECONDS);
        } finally {
            ws.abort();
        }
    }

    @Test
    void webSocketWatchesAreTunnelledAndCanBeTold410() throws Exception {
        try (java.net.ServerSocket ws = webSocketUpstream();
                ChaosProxy wsProxy = new ChaosProxy(URI.create("http://127.0.0.1:" + ws.getLocalPort()), 1)) {
            URI watch = URI.create("ws://127.0.0.1:" + wsProxy.url().getPort() + "/api/v1/pods?watch=true");
            assertThat(firstWebSocketText(http, watch)).isEqualTo("hello");
            assertThat(reached.get()).isEqualTo(1);
            wsProxy.rate(Fault.WATCH_GONE, 1.0);
            assertThat(firstWebSocketText(http, watch)).contains("\"type\":\"ERROR\"", "\"code\":410");
            assertThat(reached.get()).as("a 410 is answered by the proxy").isEqualTo(1);
        }
    }

    @Test
    void closeWatchesEndsEveryWatchInFlight() throws Exception {
        HttpResponse<InputStream> w = http.send(HttpRequest.newBuilder(proxy.url().resolve("/stream?watch=true"))
                .build(), HttpResponse.BodyHandlers.ofInputStream());
        try (InputStream in = w.body()) {
            assertThat(new String(in.readNBytes(17), StandardCharsets.UTF_8)).contains("ADDED");
            assertThat(proxy.closeWatches()).isEqualTo(1);
            try {
                assertThat(in.readAllBytes()).isEmpty();
            } catch (IOException cut) {
                // an abrupt end is the point
            }
        }
    }

    @Test
    void aRateIsAProbability() throws Exception {
        proxy.rate(Fault.SERVICE_UNAVAILABLE, 0.3);
        int failed = 0;
        for (int i = 0; i < 200; i++) {
            if (send("GET", "/echo", null).statusCode() == 503) {
                failed++;
            }
        }
        assertThat(failed).isBetween(30, 90);
        assertThat(proxy.injected().get(Fault.SERVICE_UNAVAILABLE)).isEqualTo(failed);
        assertThat(reached.get()).isEqualTo(200 - failed);
    }
}
