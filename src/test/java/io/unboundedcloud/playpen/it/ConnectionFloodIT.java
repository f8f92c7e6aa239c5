package io.unboundedcloud.playpen.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * Hostile connections against the packaged jar started with the image's JVM flags and a 768 MiB memory limit:
 * silent TCP connections, certificate-less slow heads, certificate-less slow bodies on
 * {@code /apis} and oversized heads, all at once. The operator must stay under the Deployment's limit while they
 * are open and after they close, and keep answering. {@code -Dflood.connections=4000} runs the full attack (the
 * default is a trimmed 400 for {@code mvn verify}); the figures go to stdout and {@code target/flood-results.txt}.
 */
class ConnectionFloodIT {
    static final int CONNECTIONS = Integer.getInteger("flood.connections", 400);
    /** The Deployment's memory limit and the bound we hold ourselves to below it. */
    static final long LIMIT_MIB = 768;
    static final long BOUND_MIB = 700;
    static Process process;
    static Path dir;
    static String host;
    static int port;

    @BeforeAll
    static void start() throws Exception {
        String jar = System.getProperty("playpen.jar", "target/playpen-operator.jar");
        assumeTrue(new File(jar).isFile(), "packaged jar " + jar + " not found (run mvn verify)");
        dir = Files.createTempDirectory(Path.of("target"), "it-flood-");
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(imageJvmFlags());
        // the container's memory limit, which the image's percentages refer to
        cmd.add("-XX:MaxRAM=" + LIMIT_MIB + "m");
        cmd.addAll(List.of("-jar", jar, "--dev", "--dev-dir=" + dir.resolve("dev"), "--management-addr="));
        process = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(dir.resolve("operator.log").toFile())
                .start();
        long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        while (!Files.readString(dir.resolve("operator.log")).contains("dev playground ready in")) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                throw new IllegalStateException("dev mode did not start:\n" + Files.readString(dir.resolve("operator.log")));
            }
            Thread.sleep(100);
        }
        Map<String, String> env = new HashMap<>();
        for (String line : Files.readAllLines(dir.resolve("dev").resolve("endpoints.env"))) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                env.put(line.substring(0, eq).trim(), line.substring(eq + 1).trim());
            }
        }
        URI operator = URI.create(env.get("OPERATOR_URL"));
        host = operator.getHost();
        port = operator.getPort();
    }

    @AfterAll
    static void stop() throws Exception {
        if (process != null && process.isAlive()) {
            process.destroy();
            if (!process.waitFor(15, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        }
    }

    /** The JVM flags of the Dockerfile's ENTRYPOINT, without the AppCDS archive that exists only in the image. */
    static List<String> imageJvmFlags() throws IOException {
        String dockerfile = Files.readString(Path.of("Dockerfile"));
        Matcher entry = Pattern.compile("ENTRYPOINT \\[(.*?)\\]", Pattern.DOTALL).matcher(dockerfile);
        assertThat(entry.find()).as("ENTRYPOINT in Dockerfile").isTrue();
        List<String> flags = new ArrayList<>();
        Matcher q = Pattern.compile("\"([^\"]*)\"").matcher(entry.group(1));
        while (q.find()) {
            String f = q.group(1);
            if (f.equals("-jar")) {
                break;
            }
            if (f.startsWith("-X") || f.startsWith("-D")) {
                if (!f.startsWith("-XX:SharedArchiveFile") && !f.startsWith("-Xshare")) {
                    flags.add(f);
                }
            }
        }
        assertThat(flags).contains("-XX:+ExitOnOutOfMemoryError");
        return flags;
    }

    static long rssMib() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc", String.valueOf(process.pid()), "status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024;
            }
        }
        throw new IllegalStateException("no VmRSS");
    }

    static SSLContext tlsContext(boolean withFrontProxyCertificate) throws Exception {
        if (!withFrontProxyCertificate) {
            return OperatorHarness.sslContext(null, null);
        }
        Path dev = dir.resolve("dev");
        return OperatorHarness.sslContext(Pki.parsePrivateKey(Files.readString(dev.resolve("front-proxy-client.key"))),
                Pki.parseCertificates(Files.readString(dev.resolve("front-proxy-client.crt"))).get(0));
    }

    /** GET as the aggregator would (front-proxy certificate); the status code, or -1 when it failed. */
    static int trustedDiscovery(SSLContext trusted) {
        try {
            HttpClient http = HttpClient.newBuilder().sslContext(trusted).version(HttpClient.Version.HTTP_1_1)
                    .connectTimeout(Duration.ofSeconds(10)).build();
            return http.send(HttpRequest.newBuilder(URI.create("https://" + host + ":" + port
                    + "/apis/playpen.unbounded-cloud.io")).timeout(Duration.ofSeconds(10)).GET().build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (Exception e) {
            return -1;
        }
    }

    static int probe() throws Exception {
        HttpClient http = HttpClient.newBuilder().sslContext(tlsContext(false)).version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10)).build();
        return http.send(HttpRequest.newBuilder(URI.create("https://" + host + ":" + port + "/healthz"))
                .timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.discarding()).statusCode();
    }

    @Test
    void hostileConnectionsKeepTheOperatorUnderItsMemoryLimit() throws Exception {
        SSLContext anonymous = tlsContext(false);
        SSLContext trusted = tlsContext(true);
        assertThat(trustedDiscovery(trusted)).isEqualTo(200);
        long baseline = rssMib();
        AtomicLong peak = new AtomicLong(baseline);
        AtomicBoolean sampling = new AtomicBoolean(true);
        Thread sampler = new Thread(() -> {
            while (sampling.get()) {
                try {
                    peak.accumulateAndGet(rssMib(), Math::max);
                    Thread.sleep(200);
                } catch (Exception e) {
                    return;
                }
            }
        }, "rss-sampler");
        sampler.setDaemon(true);
        sampler.start();

        ConcurrentLinkedQueue<Socket> open = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<Socket> trickling = new ConcurrentLinkedQueue<>();
        AtomicInteger failed = new AtomicInteger();
        byte[] bigHead = ("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Filler: " + "a".repeat(64 * 1024))
                .getBytes(StandardCharsets.US_ASCII);
        ExecutorService attackers = Executors.newFixedThreadPool(48);
        long t0 = System.nanoTime();
        for (int i = 0; i < CONNECTIONS; i++) {
            int kind = i % 4;
            attackers.submit(() -> {
                try {
                    Socket raw = new Socket();
                    raw.connect(new InetSocketAddress(host, port), 10_000);
                    open.add(raw);
                    if (kind == 0) {
                        return; // silent: never starts the TLS handshake
                    }
                    SSLSocket s = (SSLSocket) anonymous.getSocketFactory().createSocket(raw, host, port, true);
                    s.setSoTimeout(10_000);
                    s.startHandshake();
                    OutputStream out = s.getOutputStream();
                    if (kind == 1) { // slow head
                        out.write("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ".getBytes(StandardCharsets.US_ASCII));
                        trickling.add(s);
                    } else if (kind == 2) { // slow 1 MiB body on /apis without a certificate
                        out.write(("POST /apis/playpen.unbounded-cloud.io/v1alpha1/allocs HTTP/1.1\r\nHost: x\r\n"
                                + "Content-Length: 1048576\r\n\r\n{").getBytes(StandardCharsets.US_ASCII));
                        trickling.add(s);
                    } else { // oversized head, sent at once
                        out.write(bigHead);
                    }
                    out.flush();
                } catch (IOException e) {
                    failed.incrementAndGet(); // refused, evicted or closed by the server: what the bounds are for
                }
            });
        }
        // the slow ones send a byte a second, so no idle timeout ever fires for them
        AtomicBoolean trickle = new AtomicBoolean(true);
        Thread trickler = new Thread(() -> {
            while (trickle.get()) {
                for (Socket s : trickling) {
                    try {
                        s.getOutputStream().write('a');
                        s.getOutputStream().flush();
                    } catch (IOException e) {
                        trickling.remove(s);
                    }
                }
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "trickler");
        trickler.setDaemon(true);
        trickler.start();

        // the aggregator still gets through while the attack runs
        List<Integer> duringAttack = new ArrayList<>();
        while (!attackers.isTerminated()) {
            attackers.shutdown();
            duringAttack.add(trustedDiscovery(trusted));
            attackers.awaitTermination(2, TimeUnit.SECONDS);
        }
        long attackMillis = (System.nanoTime() - t0) / 1_000_000;
        // hold the survivors open a while (past the header deadline, with bytes trickling in)
        Thread.sleep(12_000);
        long peakWhileOpen = peak.get();
        int stillTrickling = trickling.size();
        trickle.set(false);
        for (Socket s : open) {
            try {
                s.close();
            } catch (IOException e) {
                // already closed by the server
            }
        }
        Thread.sleep(10_000);
        long after = rssMib();
        sampling.set(false);
        int probeAfter = probe();
        int discoveryAfter = trustedDiscovery(trusted);
        String figures = String.format("connections=%d attackMillis=%d failedOrRefused=%d stillTricklingAfterHold=%d "
                + "rssBaselineMiB=%d rssPeakWhileOpenMiB=%d rssAfterCloseMiB=%d limitMiB=%d "
                + "trustedDiscoveryDuringAttack=%s probeAfter=%d discoveryAfter=%d",
                CONNECTIONS, attackMillis, failed.get(), stillTrickling, baseline, peakWhileOpen, after, LIMIT_MIB,
                duringAttack, probeAfter, discoveryAfter);
        System.out.println("connection flood: " + figures);
        Files.writeString(Path.of("target", "flood-results.txt"), figures + "\n");

        assertThat(process.isAlive()).as("operator alive after the flood").isTrue();
        assertThat(peakWhileOpen).as("RSS while open (MiB)").isLessThan(BOUND_MIB);
        assertThat(after).as("RSS after close (MiB)").isLessThan(BOUND_MIB);
        assertThat(probeAfter).isIn(200, 204);
        assertThat(discoveryAfter).isEqualTo(200);
        assertThat(duringAttack).as("trusted requests during the attack").contains(200);
        // the slow connections were cut off: by the 10 s header deadline, the early 403 or eviction
        assertThat(stillTrickling).isLessThan(CONNECTIONS / 4);
    }
}
