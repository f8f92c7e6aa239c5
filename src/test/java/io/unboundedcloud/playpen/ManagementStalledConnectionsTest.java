package io.unboundedcloud.playpen;

import static org.assertj.core.api.Assertions.assertThat;

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

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Connections that send part of a request head and then nothing do not stop the management listener: the JDK server
 * behind it reads each request on one of its two pool threads, so without a request deadline four such connections
 * held every thread and {@code /metrics} was never answered. The deadline is a JVM-wide setting read once when the
 * JDK server's classes load, so the server runs in a child JVM started as the operator's Main starts
 * ({@link ManagementChildJvm}, nothing set on the command line).
 */
class ManagementStalledConnectionsTest {
    @Test
    void metricsAreAnsweredWhileStalledConnectionsHoldEveryThread(@TempDir Path dir) throws Exception {
        try (ManagementChildJvm child = ManagementChildJvm.start(dir, List.of(), "stall_probe")) {
            List<Socket> stalled = new ArrayList<>();
            try {
                int port = child.port;
                for (int i = 0; i < 4; i++) {
                    Socket s = new Socket("127.0.0.1", port);
                    OutputStream out = s.getOutputStream();
                    out.write("GET /metrics HTTP/1.1\r\nHost: 127.0.0".getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                    stalled.add(s);
                }
                HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(30)).build();
                HttpResponse<String> scrape = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                        + "/metrics")).timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofString());
                assertThat(scrape.statusCode()).isEqualTo(200);
                assertThat(scrape.body()).contains("stall_probe_total 1.0");
                // and the stalled connections were closed, not answered
                for (Socket s : stalled) {
                    s.setSoTimeout(60_000);
                    InputStream in = s.getInputStream();
                    int first;
                    try {
                        first = in.read();
                    } catch (java.net.SocketException reset) {
                        first = -1;
                    }
                    assertThat(first).as("a stalled connection is closed without an answer").isEqualTo(-1);
                }
            } finally {
                for (Socket s : stalled) {
                    s.close();
                }
            }
        }
    }
}
