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
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.unboundedcloud.playpen.camel.ManagementAccess;
import io.unboundedcloud.playpen.camel.ManagementServer;

/**
 * Connections that send part of a request head and then nothing do not stop the management listener: the JDK server
 * behind it reads each request on one of its two pool threads, so without a request deadline four such connections
 * held every thread and {@code /metrics} was never answered. The deadline is a JVM-wide setting read once when the
 * JDK server's classes load, so the server runs in a child JVM started as the operator's Main starts (its
 * {@link JvmDefaults} applied first, nothing set on the command line).
 */
class ManagementStalledConnectionsTest {
    private static final Pattern PORT = Pattern.compile("MANAGEMENT_PORT=(\\d+)");

    /** The child JVM: the operator's JVM defaults, then the management listener on a free loopback port. */
    public static final class Serve {
        public static void main(String[] args) throws Exception {
            JvmDefaults.apply(System.getProperties());
            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            registry.counter("stall_probe").increment();
            ManagementServer server = new ManagementServer("127.0.0.1", 0, registry, () -> true, ManagementAccess.NONE);
            server.start();
            System.out.println("MANAGEMENT_PORT=" + server.address().getPort());
            System.out.flush();
            // until the test ends (its end of stdin closes) or kills us
            while (System.in.read() >= 0) {
                // nothing to read
            }
            server.close();
        }
    }

    @Test
    void metricsAreAnsweredWhileStalledConnectionsHoldEveryThread(@TempDir Path dir) throws Exception {
        Path log = dir.resolve("child.log");
        Process child = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                System.getProperty("java.class.path"), Serve.class.getName())
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        List<Socket> stalled = new ArrayList<>();
        try {
            int port = awaitPort(child, log);
            for (int i = 0; i < 4; i++) {
                Socket s = new Socket("127.0.0.1", port);
                OutputStream out = s.getOutputStream();
                out.write("GET /metrics HTTP/1.1\r\nHost: 127.0.0".getBytes(StandardCharsets.US_ASCII));
                out.flush();
                stalled.add(s);
            }
            HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(30)).build();
            HttpResponse<String> scrape = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                    .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofString());
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
            child.destroy();
            if (!child.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)) {
                child.destroyForcibly();
            }
        }
    }

    private static int awaitPort(Process child, Path log) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            String out = Files.exists(log) ? Files.readString(log) : "";
            Matcher m = PORT.matcher(out);
            if (m.find()) {
                return Integer.parseInt(m.group(1));
            }
            if (!child.isAlive()) {
                throw new AssertionError("the child JVM exited: " + out);
            }
            Thread.sleep(100);
        }
        throw new AssertionError("the child JVM printed no port: " + Files.readString(log));
    }
}
