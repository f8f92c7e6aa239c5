package io.unboundedcloud.playpen;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the management listener's JDK server lets one client hold: a capped number of connections. The limit is a
 * JVM-wide setting read once when the JDK server's classes load, so the server runs in a child JVM started as the
 * operator's Main starts ({@link ManagementChildJvm}).
 */
class ManagementConnectionLimitsTest {
    private static final String SCRAPE = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

    @Test
    void connectionsBeyondTheCapAreClosedUnansweredWhileTheEarlierOnesAreHeld(@TempDir Path dir) throws Exception {
        // idle connections live long here, so the held ones are still open when the one beyond the cap arrives
        try (ManagementChildJvm child = ManagementChildJvm.start(dir,
                List.of("-Dsun.net.httpserver.maxReqTime=600", "-Dsun.net.httpserver.idleInterval=600"),
                "limits_probe")) {
            List<Socket> held = new ArrayList<>();
            try {
                int port = child.port;
                assertThat(child.maxConnections).as("the operator caps the management listener's connections")
                        .isNotEqualTo("null");
                int cap = Integer.parseInt(child.maxConnections);
                assertThat(cap).isBetween(16, 1000);
                for (int i = 0; i < cap; i++) {
                    held.add(new Socket("127.0.0.1", port));
                }
                try (Socket beyond = new Socket("127.0.0.1", port)) {
                    beyond.setSoTimeout(60_000);
                    assertThat(answer(beyond)).as("a connection beyond the cap is closed without an answer").isEmpty();
                }
                // a held connection answers as usual
                Socket first = held.get(0);
                first.setSoTimeout(60_000);
                assertThat(answer(first)).startsWith("HTTP/1.1 200");
                // and once one is let go, a new client is served again
                held.remove(held.size() - 1).close();
                HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(30)).build();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                int status = -1;
                while (status != 200 && System.nanoTime() < deadline) {
                    try {
                        status = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                                .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.discarding())
                                .statusCode();
                    } catch (IOException closedWhileTheServerStillCountedTheOldOne) {
                        Thread.onSpinWait();
                    }
                }
                assertThat(status).isEqualTo(200);
            } finally {
                for (Socket s : held) {
                    s.close();
                }
            }
        }
    }

    /** What the server sends after a scrape request, until it closes the connection or ends one answer. */
    private static String answer(Socket s) throws IOException {
        StringBuilder got = new StringBuilder();
        try {
            OutputStream out = s.getOutputStream();
            out.write(SCRAPE.getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            int c;
            while ((c = in.read()) >= 0) {
                got.append((char) c);
                if (got.indexOf("limits_probe_total") >= 0) {
                    break;
                }
            }
        } catch (java.net.SocketException reset) {
            // closed by the server
        }
        return got.toString();
    }
}
