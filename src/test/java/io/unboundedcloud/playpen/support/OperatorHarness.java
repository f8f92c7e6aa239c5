package io.unboundedcloud.playpen.support;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;

import io.unboundedcloud.playpen.camel.OperatorApp;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.tls.Pki;

/** Runs the real operator (routes from ./routes) against a {@link TestCluster} and talks HTTPS to it. */
public final class OperatorHarness implements AutoCloseable {
    public final TestCluster cluster;
    public final OperatorApp app;
    public final int port;

    /**
     * What an immediate "no idle pods" 503 adds to the Go operator's words when no pool keeps the kind, as in this
     * harness (its pools are 0 unless a test asks): {@code countFlag} is that kind's count flag.
     */
    public static String noPoolAdvice(String countFlag) {
        return "; this operator keeps no pool of them (" + countFlag + " is 0), so trying again or waiting will not "
                + "bring one: ask its administrators for that pool; kubectl get pools lists the pools it keeps";
    }

    public OperatorHarness(TestCluster cluster, String... extraFlags) throws Exception {
        this(cluster, cluster.client, extraFlags);
    }

    /** An operator that talks to the cluster through {@code client} (a lagging proxy, say). */
    public OperatorHarness(TestCluster cluster, io.fabric8.kubernetes.client.KubernetesClient client,
            String... extraFlags) throws Exception {
        this.cluster = cluster;
        Started started = startOnFreePort(port -> {
            List<String> flags = new ArrayList<>(List.of("--listen-addr=127.0.0.1:" + port, "--leader-elect=false",
                    "--management-addr=", "--routes-dir=" + System.getProperty("playpen.test.routesDir", "routes"), "--runner-amd64-count=0", "--runner-arm64-count=0"));
            flags.addAll(Arrays.asList(extraFlags));
            return new OperatorApp(OperatorConfig.parse(flags.toArray(new String[0])), client, Clock.systemUTC(), Map.of());
        });
        this.port = started.port();
        this.app = started.app();
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!app.ready()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("operator not ready within 60s");
            }
            Thread.sleep(20);
        }
    }

    /** Waits until the operator's pod cache satisfies the condition (the watch has caught up). */
    public void awaitCache(java.util.function.Predicate<java.util.Collection<io.fabric8.kubernetes.api.model.Pod>> condition)
            throws InterruptedException {
        awaitTrue(() -> condition.test(app.podCache().pods()), Duration.ofSeconds(60), "operator pod cache");
    }

    /** A copy of the shipped routes (./routes) in {@code dir}/routes, for a test to change before passing --routes-dir. */
    public static java.nio.file.Path copyOfRoutes(java.nio.file.Path dir) throws IOException {
        java.nio.file.Path routes = java.nio.file.Files.createDirectories(dir.resolve("routes"));
        try (java.util.stream.Stream<java.nio.file.Path> files = java.nio.file.Files.list(java.nio.file.Path.of("routes"))) {
            for (java.nio.file.Path f : files.toList()) {
                java.nio.file.Files.copy(f, routes.resolve(f.getFileName()));
            }
        }
        return routes;
    }

    public static void awaitTrue(java.util.function.BooleanSupplier condition, Duration timeout, String what)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout + " waiting for " + what);
            }
            Thread.sleep(10);
        }
    }

    /** Deletes every pod and waits until the operator's cache is empty. */
    public void wipePods() throws InterruptedException {
        for (io.fabric8.kubernetes.api.model.Pod p : cluster.pods()) {
            cluster.client.pods().inNamespace(TestCluster.NS).withName(p.getMetadata().getName()).delete();
        }
        awaitCache(java.util.Collection::isEmpty);
    }

    /** An operator started on the HTTPS port it was made for. */
    public record Started(OperatorApp app, int port) {
    }

    /**
     * Makes an operator for a free HTTPS port ({@code make} is given the port) and starts it. The port is free when
     * chosen, but the operator binds it only seconds later, once Camel has started; a port taken meanwhile (another
     * JVM's server, an outgoing connection) fails the start with a BindException, and the operator is then closed
     * and made again for another free port. Nothing the operator does is retried: only the choice of the port.
     */
    public static Started startOnFreePort(java.util.function.IntFunction<OperatorApp> make) throws Exception {
        for (int attempt = 1; ; attempt++) {
            int port = freePort();
            OperatorApp app = make.apply(port);
            try {
                app.start();
                return new Started(app, port);
            } catch (Exception e) {
                app.close();
                if (!portTaken(e) || attempt == 5) {
                    throw e;
                }
            }
        }
    }

    private static boolean portTaken(Throwable e) {
        String m = String.valueOf(e.getMessage());
        if (m.startsWith("cannot listen on") && !m.contains("(--listen-addr)")) {
            return false; // another listener's port, which a test chose: not the HTTPS port this chose
        }
        return io.unboundedcloud.playpen.config.PortInUse.is(e);
    }

    public static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    public String url(String path) {
        return "https://127.0.0.1:" + port + path;
    }

    /** An HTTP client presenting {@code cert} (null = no client certificate); trusts any server. */
    public static HttpClient client(Pki.Issued cert) throws Exception {
        return HttpClient.newBuilder().sslContext(sslContext(cert)).version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(30)).build();
    }

    /** A TLS context presenting {@code cert} (null = no client certificate) that trusts any server. */
    public static SSLContext sslContext(Pki.Issued cert) throws Exception {
        return cert == null ? sslContext(null, null) : sslContext(cert.privateKey(), cert.certificate());
    }

    /** A TLS context presenting that key and certificate (null = none) that trusts any server. */
    public static SSLContext sslContext(java.security.PrivateKey key, X509Certificate cert) throws Exception {
        KeyManagerFactory kmf = null;
        if (cert != null) {
            KeyStore ks = KeyStore.getInstance("PKCS12");
            ks.load(null, null);
            ks.setKeyEntry("c", key, "pw".toCharArray(), new X509Certificate[] {cert});
            kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(ks, "pw".toCharArray());
        }
        TrustManager trustAll = new X509TrustManager() {
            @Override
            public void checkClientTrusted(X509Certificate[] chain, String authType) {
            }

            @Override
            public void checkServerTrusted(X509Certificate[] chain, String authType) {
            }

            @Override
            public X509Certificate[] getAcceptedIssuers() {
                return new X509Certificate[0];
            }
        };
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(kmf == null ? null : kmf.getKeyManagers(), new TrustManager[] {trustAll}, new SecureRandom());
        return ctx;
    }

    /**
     * A raw TLS connection to the HTTPS port with the front-proxy client certificate, handshake done, for a test that
     * writes the request's bytes itself.
     */
    public javax.net.ssl.SSLSocket rawConnection() throws Exception {
        javax.net.ssl.SSLSocket s = (javax.net.ssl.SSLSocket) sslContext(cluster.frontProxyClient).getSocketFactory()
                .createSocket("127.0.0.1", port);
        s.startHandshake();
        return s;
    }

    /** Writes a request as kube-apiserver forwards alice's (one of playpen-users) with a JSON body, on {@code s}. */
    public static void sendAsAlice(java.net.Socket s, String method, String path, String body) throws Exception {
        byte[] b = body.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        java.io.OutputStream out = s.getOutputStream();
        out.write((method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "X-Remote-User: alice\r\nX-Remote-Group: playpen-users\r\nContent-Length: " + b.length + "\r\n\r\n")
                .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        out.write(b);
        out.flush();
    }

    /** The default front-proxy client, as kube-apiserver would call with it. */
    public HttpClient frontProxy() throws Exception {
        return client(cluster.frontProxyClient);
    }

    public static HttpRequest.Builder asUser(HttpRequest.Builder b, String user, String... groups) {
        b.header("X-Remote-User", user);
        for (String g : groups) {
            b.header("X-Remote-Group", g);
        }
        return b;
    }

    /** POST like kubectl create --raw: chunked, no Content-Type, trailing newline. */
    public HttpResponse<String> kubectlPost(HttpClient http, String path, String body, String user, String... groups)
            throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url(path)))
                .header("Accept", "application/json, */*")
                .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream((body + "\n").getBytes())));
        return http.send(asUser(b, user, groups).build(), HttpResponse.BodyHandlers.ofString());
    }

    public HttpResponse<String> alloc(String body) throws Exception {
        return kubectlPost(frontProxy(), "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs", body, "alice", "playpen-users");
    }

    public HttpResponse<String> dealloc(String body) throws Exception {
        return kubectlPost(frontProxy(), "/apis/playpen.unbounded-cloud.io/v1alpha1/deallocs", body, "alice", "playpen-users");
    }

    @Override
    public void close() {
        app.close();
    }
}
