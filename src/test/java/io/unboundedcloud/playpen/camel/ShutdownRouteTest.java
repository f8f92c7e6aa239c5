package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;

import javax.net.ssl.SSLSocket;

import org.apache.camel.ServiceStatus;
import org.apache.camel.StatefulService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.unboundedcloud.playpen.support.HeldRequest;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * A stopping replica and the connections kube-apiserver keeps open to it: kube-proxy sends a connection that is
 * already open on to the old pod after its endpoint is gone, so only the server can move them. Idle ones are closed
 * before Camel stops, an answer still under way carries {@code Connection: close}, and a request that comes once
 * Camel stops gets a Status 503 with Retry-After (which client-go retries), never netty-http's bare text/plain 503.
 */
class ShutdownRouteTest {
    private static final String ALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs";
    private TestCluster cluster;
    private final AtomicBoolean holdReviews = new AtomicBoolean();
    private HeldRequest review;
    private KubernetesClient client;
    private OperatorHarness op;
    private Thread closing;

    @BeforeEach
    void start() throws Exception {
        cluster = TestCluster.start();
        review = new HeldRequest(r -> holdReviews.get() && r.uri().getPath().endsWith("/subjectaccessreviews"));
        client = review.client(cluster);
        op = new OperatorHarness(cluster, client);
    }

    @AfterEach
    void stop() throws InterruptedException {
        review.release();
        if (closing == null) {
            op.close();
        } else {
            closing.join();
        }
        client.close();
        cluster.close();
    }

    private SSLSocket open() throws Exception {
        SSLSocket s = (SSLSocket) OperatorHarness.sslContext(cluster.frontProxyClient).getSocketFactory()
                .createSocket("127.0.0.1", op.port);
        s.startHandshake();
        s.setSoTimeout(60_000);
        return s;
    }

    private static void send(SSLSocket s, String method, String path, String body) throws Exception {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        OutputStream out = s.getOutputStream();
        out.write((method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "X-Remote-User: alice\r\nX-Remote-Group: playpen-users\r\nContent-Length: " + b.length + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        out.write(b);
        out.flush();
    }

    /** What arrives until the server ends the connection. */
    private static String readToEnd(SSLSocket s) throws Exception {
        InputStream in = s.getInputStream();
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        byte[] buf = new byte[4096];
        for (;;) {
            int n;
            try {
                n = in.read(buf);
            } catch (java.net.SocketException e) {
                n = -1;
            }
            if (n < 0) {
                return got.toString(StandardCharsets.UTF_8);
            }
            got.write(buf, 0, n);
        }
    }

    /** One answer's head (a 204 has no body). */
    private static String readHead(SSLSocket s) throws Exception {
        InputStream in = s.getInputStream();
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        while (!got.toString(StandardCharsets.US_ASCII).endsWith("\r\n\r\n")) {
            int b = in.read();
            assertThat(b).as("the answer's head, after: %s", got).isNotNegative();
            got.write(b);
        }
        return got.toString(StandardCharsets.US_ASCII);
    }

    @Test
    void kubeApiserversOpenConnectionsAreDrainedAndNeverGetABare503() throws Exception {
        org.apache.camel.CamelContext camel = op.app.camelContext();
        try (SSLSocket idle = open(); SSLSocket busy = open()) {
            // a kept-alive connection that has been used and now waits for kube-apiserver's next request
            send(idle, "GET", "/healthz", "");
            assertThat(readHead(idle)).startsWith("HTTP/1.1 204");
            // one whose request is in the routes: its authorization is held on its way to the API server
            holdReviews.set(true);
            send(busy, "POST", ALLOCS, "{\"idempotencyKey\":\"in-flight\",\"wireGuardPublicKey\":\""
                    + TestCluster.wgKey(7) + "\",\"waitSeconds\":0}");
            assertThat(review.awaitHeld(60)).as("the alloc's SubjectAccessReview held").isTrue();

            // Camel's state when the server ends the idle connection
            java.util.concurrent.CompletableFuture<ServiceStatus> whenIdleClosed = new java.util.concurrent.CompletableFuture<>();
            java.util.concurrent.CompletableFuture<String> idleGot = new java.util.concurrent.CompletableFuture<>();
            Thread reader = new Thread(() -> {
                try {
                    idleGot.complete(readToEnd(idle));
                } catch (Exception e) {
                    idleGot.completeExceptionally(e);
                }
                whenIdleClosed.complete(camel.getStatus());
            }, "idle-reader");
            reader.start();
            closing = new Thread(op.app::close, "closing");
            closing.start();

            // Camel stops (the alloc still in the routes): a request that comes now, on a connection opened now
            StatefulService ingress = (StatefulService) camel.getRoute("https-ingress").getConsumer();
            OperatorHarness.awaitTrue(() -> ingress.isSuspending() || ingress.isSuspended() || ingress.isStopping(),
                    Duration.ofSeconds(60), "the HTTPS route's consumer stopping");
            try (SSLSocket late = open()) {
                send(late, "GET", ALLOCS, "");
                String answer = readToEnd(late);
                String head = answer.toLowerCase(Locale.ROOT);
                assertThat(answer).startsWith("HTTP/1.1 503");
                assertThat(head).contains("retry-after:").contains("content-type: application/json")
                        .doesNotContain("text/plain");
                assertThat(answer).contains("\"kind\":\"Status\"").contains("shutting down");
            }

            review.release();
            String answered = readToEnd(busy).toLowerCase(Locale.ROOT);
            assertThat(answered).startsWith("http/1.1 ").contains("\r\nconnection: close\r\n");
            assertThat(idleGot.get(60, java.util.concurrent.TimeUnit.SECONDS)).as("written on the idle connection")
                    .isEmpty();
            assertThat(whenIdleClosed.get(60, java.util.concurrent.TimeUnit.SECONDS))
                    .as("Camel when the idle connection was closed").isEqualTo(ServiceStatus.Started);
        }
    }
}
