package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * What a connection may cost on the real HTTPS listener: 403 before the body without
 * a trusted certificate, 1 MiB heads with one, deadlines for slow heads and bodies, and unauthenticated floods that
 * cannot lock out the aggregator.
 */
class ConnectionBoundsRouteTest {
    static final String ALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs";
    static TestCluster cluster;
    static OperatorHarness op;

    @BeforeAll
    static void up() throws Exception {
        cluster = TestCluster.start();
        op = new OperatorHarness(cluster, "--max-unauthenticated-connections=4", "--request-header-timeout=2s",
                "--request-body-timeout=2s");
    }

    @AfterAll
    static void down() {
        if (op != null) {
            op.close();
        }
        cluster.close();
    }

    static SSLSocket tls(Pki.Issued clientCert) throws Exception {
        SSLContext ctx = OperatorHarness.sslContext(clientCert);
        SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket("127.0.0.1", op.port);
        s.setSoTimeout(20_000);
        s.startHandshake();
        return s;
    }

    /** Everything until the server closes (or 20 s pass). */
    static String readAll(Socket s) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        InputStream in = s.getInputStream();
        byte[] buf = new byte[8192];
        int n;
        try {
            while ((n = in.read(buf)) >= 0) {
                out.write(buf, 0, n);
            }
        } catch (SocketTimeoutException e) {
            throw new AssertionError("connection still open after 20 s; got: " + out.toString(StandardCharsets.UTF_8));
        } catch (IOException e) {
            // a reset after the answer counts as closed
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    @Test
    void apisWithoutCertificateGets403BeforeTheBodyIsSent() throws Exception {
        try (SSLSocket s = tls(null)) {
            OutputStream out = s.getOutputStream();
            out.write(("POST " + ALLOCS + " HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            String r = readAll(s);
            assertThat(r).startsWith("HTTP/1.1 403 ").contains("\"kind\":\"Status\"").contains("\"code\":403");
        }
    }

    /** One answer on a kept-alive connection: its head and as many body bytes as its Content-Length says. */
    static String readOne(Socket s) throws IOException {
        InputStream in = s.getInputStream();
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new AssertionError("closed before a whole answer head: " + head);
            }
            head.write(b);
        }
        String h = head.toString(StandardCharsets.ISO_8859_1);
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?i)\r\ncontent-length: *(\\d+)").matcher(h);
        int length = m.find() ? Integer.parseInt(m.group(1)) : 0;
        return h + new String(in.readNBytes(length), StandardCharsets.UTF_8);
    }

    /** The status line of a discovery GET on a new connection with {@code cert}. */
    static String freshDiscovery(Pki.Issued cert) {
        try (SSLSocket s = tls(cert)) {
            s.getOutputStream().write("GET /apis/playpen.unbounded-cloud.io HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                    .getBytes(StandardCharsets.US_ASCII));
            s.getOutputStream().flush();
            String r = readAll(s);
            return r.contains("\r\n") ? r.substring(0, r.indexOf("\r\n")) : r;
        } catch (Exception e) {
            return e.toString();
        }
    }

    /** What a test sends on a connection, and reads from it, once its certificate is no longer trusted. */
    interface OnDistrustedConnection {
        void run(SSLSocket s, OutputStream out) throws Exception;
    }

    /**
     * Opens a connection with the front proxy's certificate, sees one request on it answered, has the trust bundle
     * stop trusting that certificate (another CA in its place), runs {@code then} on the still open connection, and
     * trusts the front proxy's CA again.
     */
    private void afterItsCertificateIsNoLongerTrusted(OnDistrustedConnection then) throws Exception {
        Pki.Issued otherCa = Pki.selfSigned(Pki.Subject.cn("front-proxy-ca"), Pki.Usage.CA,
                java.time.Instant.now().minusSeconds(60), Duration.ofDays(30));
        try (SSLSocket s = tls(cluster.frontProxyClient)) {
            OutputStream out = s.getOutputStream();
            out.write("GET /apis/playpen.unbounded-cloud.io HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            assertThat(readOne(s)).as("trusted at first").startsWith("HTTP/1.1 200 ");

            cluster.setTrust(otherCa.certificatePem(), "[\"front-proxy-client\"]");
            OperatorHarness.awaitTrue(() -> freshDiscovery(cluster.frontProxyClient).startsWith("HTTP/1.1 403 "),
                    Duration.ofSeconds(60), "the old front-proxy CA to be refused");
            then.run(s, out);
        } finally {
            cluster.setTrust(cluster.frontProxyCa.certificatePem(), "[\"front-proxy-client\"]");
            OperatorHarness.awaitTrue(() -> freshDiscovery(cluster.frontProxyClient).startsWith("HTTP/1.1 200 "),
                    Duration.ofSeconds(60), "the front-proxy CA to be trusted again");
        }
    }

    /**
     * A connection keeps the certificate it shook hands with, not the verdict on it: once the trust bundle no longer
     * trusts that certificate, an /apis request on the connection is refused from its head, before its body, as one
     * without a certificate is.
     */
    @Test
    void aConnectionWhoseCertificateIsNoLongerTrustedGets403BeforeTheBody() throws Exception {
        afterItsCertificateIsNoLongerTrusted((s, out) -> {
            out.write(("POST " + ALLOCS + " HTTP/1.1\r\nHost: x\r\nX-Remote-User: alice\r\nContent-Length: 100\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            String r = readAll(s);
            assertThat(r).startsWith("HTTP/1.1 403 ").contains("\"kind\":\"Status\"").contains("\"code\":403");
        });
    }

    /**
     * Once the trust bundle no longer trusts a connection's certificate, its next request head gets the budget of a
     * client without a trusted certificate (8 KiB), not the 1 MiB a trusted one may send: a head past it is a 431
     * Status as soon as the budget is spent, not held until the head deadline.
     */
    @Test
    void aConnectionWhoseCertificateIsNoLongerTrustedGetsTheUnauthenticatedHeadBudget() throws Exception {
        afterItsCertificateIsNoLongerTrusted((s, out) -> {
            // 64 KiB of head, never finished: only the head budget can answer it before the head deadline closes
            StringBuilder head = new StringBuilder("POST " + ALLOCS + " HTTP/1.1\r\nHost: x\r\n");
            while (head.length() < 65_536) {
                head.append("X-Remote-Group: ").append("g".repeat(1000)).append("\r\n");
            }
            out.write(head.toString().getBytes(StandardCharsets.US_ASCII));
            out.flush();
            String r = readAll(s);
            assertThat(r).startsWith("HTTP/1.1 431 ").contains("\"kind\":\"Status\"").contains("\"code\":431")
                    .contains("without a trusted client certificate");
        });
    }

    /**
     * The reverse: a connection whose certificate the trust bundle did not accept at its handshake (here its
     * CN was not an allowed name yet) and accepts later is, from its next request on, one with a trusted
     * certificate: the 64 KiB body and 1 MiB head budgets, and no longer among the unauthenticated connections the
     * oldest of which is closed to make room.
     */
    @Test
    void aConnectionWhoseCertificateBecomesTrustedGetsTheAuthenticatedBudgets() throws Exception {
        cluster.setTrust(cluster.frontProxyCa.certificatePem(), "[\"someone-else\"]");
        try {
            OperatorHarness.awaitTrue(() -> freshDiscovery(cluster.frontProxyClient).startsWith("HTTP/1.1 403 "),
                    Duration.ofSeconds(60), "the front-proxy client's CN to be refused");
            try (SSLSocket s = tls(cluster.frontProxyClient)) {
                OutputStream out = s.getOutputStream();
                out.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                out.flush();
                assertThat(readOne(s)).as("a probe on the untrusted connection").startsWith("HTTP/1.1 204 ");

                cluster.setTrust(cluster.frontProxyCa.certificatePem(), "[\"front-proxy-client\"]");
                OperatorHarness.awaitTrue(() -> freshDiscovery(cluster.frontProxyClient).startsWith("HTTP/1.1 200 "),
                        Duration.ofSeconds(60), "the front-proxy client's CN to be allowed");

                // a body past the 4 KiB of a client without a trusted certificate
                byte[] body = ("{\"idempotencyKey\":\"trusted-later\"}" + " ".repeat(6000))
                        .getBytes(StandardCharsets.US_ASCII);
                out.write(("POST /apis/playpen.unbounded-cloud.io/v1alpha1/deallocs HTTP/1.1\r\nHost: x\r\n"
                        + "X-Remote-User: alice\r\nX-Remote-Group: playpen-users\r\nContent-Type: application/json\r\n"
                        + "Content-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                out.write(body);
                out.flush();
                assertThat(readOne(s)).as("a 6 KiB body once trusted").startsWith("HTTP/1.1 204 ");

                // a head past the 8 KiB of a client without a trusted certificate
                StringBuilder head = new StringBuilder("GET /apis/playpen.unbounded-cloud.io HTTP/1.1\r\nHost: x\r\n");
                while (head.length() < 20_000) {
                    head.append("X-Remote-Group: ").append("g".repeat(1000)).append("\r\n");
                }
                out.write(head.append("\r\n").toString().getBytes(StandardCharsets.US_ASCII));
                out.flush();
                assertThat(readOne(s)).as("a 20 KiB head once trusted").startsWith("HTTP/1.1 200 ");
            }
        } finally {
            cluster.setTrust(cluster.frontProxyCa.certificatePem(), "[\"front-proxy-client\"]");
            OperatorHarness.awaitTrue(() -> freshDiscovery(cluster.frontProxyClient).startsWith("HTTP/1.1 200 "),
                    Duration.ofSeconds(60), "the front-proxy CA to be trusted again");
        }
    }

    @Test
    void usersInThousandsOfGroupsFitInTheHead() throws Exception {
        // ~2000 X-Remote-Group lines (Entra ID group ids), ~110 KiB of head: Netty's old 8 KiB limit refused 155+
        List<String> groups = new ArrayList<>();
        for (int i = 0; i < 2000; i++) {
            groups.add(String.format("%08x-4b1c-4c1e-9d1a-%012d", i, i));
        }
        groups.add("playpen-users");
        HttpResponse<String> r = op.kubectlPost(op.frontProxy(), "/apis/playpen.unbounded-cloud.io/v1alpha1/deallocs",
                "{\"idempotencyKey\":\"many-groups\"}", "alice", groups.toArray(new String[0]));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(204);
        assertThat(cluster.sarRequests.get(cluster.sarRequests.size() - 1).getSpec().getGroups()).hasSize(2001);
    }

    @Test
    void headOverOneMebibyteIs431Status() throws Exception {
        try (SSLSocket s = tls(cluster.frontProxyClient)) {
            StringBuilder head = new StringBuilder("GET /apis/playpen.unbounded-cloud.io HTTP/1.1\r\nHost: x\r\n");
            String line = "X-Remote-Group: " + "g".repeat(1000) + "\r\n";
            while (head.length() < 1_100_000) {
                head.append(line);
            }
            head.append("\r\n");
            byte[] bytes = head.toString().getBytes(StandardCharsets.US_ASCII);
            // written from another thread: the server answers and closes before the whole head is written, and the
            // answer must be read while the write is still under way
            Thread writer = new Thread(() -> {
                try {
                    s.getOutputStream().write(bytes);
                    s.getOutputStream().flush();
                } catch (IOException e) {
                    // expected once the server has closed
                }
            });
            writer.start();
            String r = readAll(s);
            writer.join(20_000);
            assertThat(r).startsWith("HTTP/1.1 431 ").contains("\"kind\":\"Status\"").contains("\"code\":431");
        }
    }

    @Test
    void slowBodyFromTrustedClientIsCutOffByTheBodyDeadline() throws Exception {
        try (SSLSocket s = tls(cluster.frontProxyClient)) {
            OutputStream out = s.getOutputStream();
            out.write(("POST " + ALLOCS + " HTTP/1.1\r\nHost: x\r\nX-Remote-User: alice\r\nContent-Length: 100\r\n\r\n{")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            long t0 = System.nanoTime();
            // one byte every 200 ms never lets the idle timeout (60 s) fire; only the 2 s body deadline can
            s.setSoTimeout(200);
            boolean closed = false;
            while (!closed && System.nanoTime() - t0 < Duration.ofSeconds(20).toNanos()) {
                try {
                    out.write(' ');
                    out.flush();
                    closed = s.getInputStream().read() < 0;
                } catch (SocketTimeoutException stillOpen) {
                    // keep trickling
                } catch (IOException reset) {
                    closed = true;
                }
            }
            assertThat(closed).as("slow body closed within 20 s").isTrue();
        }
    }

    @Test
    void connectionThatNeverHandshakesIsClosedByTheHeaderDeadline() throws Exception {
        long timedOutBefore = op.app.connectionGuard().timedOut();
        try (Socket s = new Socket("127.0.0.1", op.port)) {
            s.setSoTimeout(20_000);
            assertThat(s.getInputStream().read()).isEqualTo(-1);
        }
        // closed by the 2 s header deadline, not by Netty's own 10 s handshake timeout
        assertThat(op.app.connectionGuard().timedOut()).isGreaterThan(timedOutBefore);
    }

    @Test
    void unauthenticatedFloodDoesNotLockOutTheAggregator() throws Exception {
        List<Socket> flood = new ArrayList<>();
        try {
            for (int i = 0; i < 20; i++) {
                flood.add(new Socket("127.0.0.1", op.port));
            }
            OperatorHarness.awaitTrue(() -> op.app.connectionGuard().evicted() >= 16, Duration.ofSeconds(60),
                    "oldest unauthenticated connections evicted");
            assertThat(op.app.connectionGuard().unauthenticatedConnections()).isLessThanOrEqualTo(4);
            HttpResponse<String> r = op.frontProxy().send(HttpRequest.newBuilder(URI.create(
                    op.url("/apis/playpen.unbounded-cloud.io"))).timeout(Duration.ofSeconds(60)).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).contains("\"kind\":\"APIGroup\"");
        } finally {
            for (Socket s : flood) {
                s.close();
            }
        }
    }
}
