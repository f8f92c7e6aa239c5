package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import javax.net.ssl.SSLSocket;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.support.LagProxy;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * --idle-timeout closes connections the client left quiet, never one whose request the operator is still answering:
 * a claim whose answer waits for the operator's watch, an alloc waiting for capacity, a watch between its events.
 * Each is kept quiet for several idle timeouts (1 s) and must still be answered on its connection.
 */
class IdleTimeoutRouteTest {
    private static final String ALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs";
    private TestCluster cluster;
    private LagProxy lag;
    private KubernetesClient viaLag;
    private OperatorHarness op;

    @BeforeEach
    void start() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        lag = new LagProxy(java.net.URI.create(cluster.server.url("/")));
        viaLag = lag.newClient();
        op = new OperatorHarness(cluster, viaLag, "--idle-timeout=1s");
    }

    @AfterEach
    void stop() {
        op.close();
        viaLag.close();
        lag.close();
        cluster.close();
    }

    private SSLSocket open() throws Exception {
        SSLSocket s = op.rawConnection();
        s.setSoTimeout(60_000);
        return s;
    }

    /** What arrives until {@code expected} has been read; fails if the connection ends first. */
    private static String readUntil(SSLSocket s, String expected) throws Exception {
        InputStream in = s.getInputStream();
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        byte[] buf = new byte[4096];
        while (!got.toString(StandardCharsets.UTF_8).contains(expected)) {
            int n;
            try {
                n = in.read(buf);
            } catch (java.net.SocketException e) {
                n = -1;
            }
            assertThat(n).as("connection still open, waiting for \"%s\" after: %s", expected,
                    got.toString(StandardCharsets.UTF_8)).isPositive();
            got.write(buf, 0, n);
        }
        return got.toString(StandardCharsets.UTF_8);
    }

    private static String allocBody(String key, int waitSeconds) {
        return "{\"idempotencyKey\":\"" + key + "\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(7)
                + "\",\"waitSeconds\":" + waitSeconds + "}";
    }

    private long carrying(String key) {
        String hash = Hashes.keyHash(key);
        return cluster.pods().stream().filter(p -> hash.equals(ManagedPods.keyHash(p))).count();
    }

    @Test
    void aClaimWhoseAnswerWaitsForTheWatchIsAnsweredOnItsConnection() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op.awaitCache(c -> c.size() == 1);
        lag.holdWatches();
        try (SSLSocket s = open()) {
            OperatorHarness.sendAsAlice(s, "POST", ALLOCS, allocBody("slow-watch", 0));
            OperatorHarness.awaitTrue(() -> carrying("slow-watch") == 1, Duration.ofSeconds(60), "claim written");
            // the answer waits for the operator's watch: three idle timeouts with nothing sent either way
            Thread.sleep(3_000);
            lag.releaseWatches();
            assertThat(readUntil(s, "\"expiresAt\"")).startsWith("HTTP/1.1 200");
        }
        assertThat(carrying("slow-watch")).as("the claim stands").isEqualTo(1);
    }

    @Test
    void anAllocWaitingForCapacityLongerThanTheIdleTimeoutIsAnswered() throws Exception {
        try (SSLSocket s = open()) {
            OperatorHarness.sendAsAlice(s, "POST", ALLOCS, allocBody("patient", 30));
            Thread.sleep(3_000);
            cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
            assertThat(readUntil(s, "\"expiresAt\"")).startsWith("HTTP/1.1 200");
        }
    }

    @Test
    void aWatchQuietLongerThanTheIdleTimeoutStillDeliversItsNextEvent() throws Exception {
        cluster.create(TestCluster.readyRunner("amd64", 51820, "node-a"));
        op.awaitCache(c -> c.size() == 1);
        try (SSLSocket s = open()) {
            OperatorHarness.sendAsAlice(s, "GET", ALLOCS + "?watch=true", "");
            readUntil(s, "HTTP/1.1 200");
            Thread.sleep(3_000);
            assertThat(op.alloc(allocBody("seen-by-watch", 0)).statusCode()).isEqualTo(200);
            assertThat(readUntil(s, "\"type\":\"ADDED\"")).contains("playpen-runner-amd64-51820");
        }
    }
}
