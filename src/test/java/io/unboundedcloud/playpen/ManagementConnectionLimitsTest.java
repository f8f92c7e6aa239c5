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
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.unboundedcloud.playpen.camel.ManagementAccess;
import io.unboundedcloud.playpen.camel.ManagementServer;

/**
 * What the management listener's JDK server lets one client hold: a capped number of connections. The limit is a
 * JVM-wide setting read once when the JDK
 * server's classes load, so the server runs in a child JVM started as the operator's Main starts (its
 * {@link JvmDefaults} applied first).
 */
class ManagementConnectionLimitsTest {
    private static final Pattern PORT = Pattern.compile("MANAGEMENT_PORT=(\\d+) MAX_CONNECTIONS=(\\S+)");
    private static final String SCRAPE = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

    /** The child JVM: the operator's JVM defaults, then the management listener with {@code args[0]} bulky series. */
    public static final class Serve {
        public static void main(String[] args) throws Exception {
            JvmDefaults.apply(System.getProperties());
            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            registry.counter("limits_probe").increment();
            String filler = "x".repeat(200);
            for (int i = 0; i < Integer.parseInt(args[0]); i++) {
                registry.counter("bulk", "k", filler + i).increment();
            }
            ManagementServer server = new ManagementServer("127.0.0.1", 0, registry, () -> true, ManagementAccess.NONE);
            server.start();
            System.out.println("MANAGEMENT_PORT=" + server.address().getPort() + " MAX_CONNECTIONS="
                    + System.getProperty("jdk.httpserver.maxConnections"));
            System.out.flush();
            while (System.in.read() >= 0) {
                // until the test ends (its end of stdin closes) or kills us
            }
            server.close();
        }
    }

    @Test
    void connectionsBeyondTheCapAreClosedUnansweredWhileTheEarlierOnesAreHeld(@TempDir Path dir) throws Exception {
        // idle connections live long here, so the held ones are still open when the one beyond the cap arrives
        Process child = start(dir, List.of("-Dsun.net.httpserver.maxReqTime=600", "-Dsun.net.httpserver.idleInterval=600"),
                0);
        List<Socket> held = new ArrayList<>();
        try {
            Matcher m = awaitPort(child, dir.resolve("child.log"));
            int port = Integer.parseInt(m.group(1));
            assertThat(m.group(2)).as("the operator caps the management listener's connections").isNotEqualTo("null");
            int cap = Integer.parseInt(m.group(2));
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
                            .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.discarding()).statusCode();
                } catch (IOException closedWhileTheServerStillCountedTheOldOne) {
                    Thread.onSpinWait();
                }
            }
            assertThat(status).isEqualTo(200);
        } finally {
            for (Socket s : held) {
                s.close();
            }
            stop(child);
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

    private static Process start(Path dir, List<String> jvmArgs, int bulk) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(jvmArgs);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Serve.class.getName(), String.valueOf(bulk)));
        return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(dir.resolve("child.log").toFile()).start();
    }

    private static void stop(Process child) throws InterruptedException {
        child.destroy();
        if (!child.waitFor(30, TimeUnit.SECONDS)) {
            child.destroyForcibly();
        }
    }

    private static Matcher awaitPort(Process child, Path log) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            String out = Files.exists(log) ? Files.readString(log) : "";
            Matcher m = PORT.matcher(out);
            if (m.find()) {
                return m;
            }
            if (!child.isAlive()) {
                throw new AssertionError("the child JVM exited: " + out);
            }
            Thread.sleep(100);
        }
        throw new AssertionError("the child JVM printed no port: " + Files.readString(log));
    }
}
