package io.unboundedcloud.playpen.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.X509KeyManager;

import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.tls.Pki;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.net.KeyCertOptions;

/**
 * The bench's HTTPS client for the operator's front door: one keep-alive connection per worker, presenting the
 * front-proxy certificate, requests as the aggregator forwards them (X-Remote headers, JSON body).
 *
 * <p>{@code bench.client=vertx} (the default) sends through a Vert.x HTTP client: the client stack the fabric8 client
 * uses for the bare PATCH and the reference pattern, so the ratios compare like with like. {@code bench.client=jdk}
 * sends through {@link java.net.http.HttpClient}, the harness's earlier client; its selector
 * thread and executor add about 0.2 ms per request at c=1 on the 2-core machine (measured with both against the same
 * operator), time the front door never sees.
 */
final class BenchHttps implements AutoCloseable {
    enum Kind {
        VERTX, JDK
    }

    /** A status and body. */
    record Answer(int status, String body) {
    }

    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    /** The headers of an alloc request as the aggregator forwards it, name/value pairs. */
    static final String[] ALLOC_HEADERS = {"Content-Type", "application/json", "Accept", "application/json, */*",
        "X-Remote-User", "bench-user", "X-Remote-Group", "playpen-users", "X-Remote-Group", "system:authenticated"};

    final Kind kind;
    private final HttpClient[] jdk;
    private final Vertx vertx;
    private final io.vertx.core.http.HttpClient[] vx;

    static Kind configured() {
        return Kind.valueOf(System.getProperty("bench.client", "vertx").toUpperCase(Locale.ROOT));
    }

    /** {@code workers} clients of the configured kind presenting {@code cert}. */
    static BenchHttps open(Pki.Issued cert, int workers) throws Exception {
        return new BenchHttps(configured(), cert, workers);
    }

    BenchHttps(Kind kind, Pki.Issued cert, int workers) throws Exception {
        this.kind = kind;
        if (kind == Kind.JDK) {
            jdk = new HttpClient[workers];
            for (int i = 0; i < workers; i++) {
                jdk[i] = OperatorHarness.client(cert);
            }
            vertx = null;
            vx = null;
            return;
        }
        jdk = null;
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        ks.setKeyEntry("c", cert.privateKey(), "pw".toCharArray(), new X509Certificate[] {cert.certificate()});
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, "pw".toCharArray());
        X509KeyManager km = (X509KeyManager) kmf.getKeyManagers()[0];
        vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(Math.min(workers, 2 * Runtime.getRuntime().availableProcessors())));
        vx = new io.vertx.core.http.HttpClient[workers];
        for (int i = 0; i < workers; i++) {
            vx[i] = vertx.createHttpClient(new HttpClientOptions().setSsl(true).setTrustAll(true).setVerifyHost(false)
                    .setKeyCertOptions(KeyCertOptions.wrap(km)).setMaxPoolSize(1).setKeepAlive(true)
                    .setConnectTimeout((int) TIMEOUT.toMillis()));
        }
    }

    /**
     * Opens the keep-alive connection of workers 0 to {@code workers - 1} (worker w to {@code portOf(w)}) with one
     * GET /healthz each, so no TLS handshake falls into a measured window: a handshake with a client certificate
     * costs a few ms of CPU on both ends, and at c=64 the first 50-request warm-up left 14 of them to the
     * measurement.
     */
    void connect(int workers, java.util.function.IntUnaryOperator portOf) throws Exception {
        for (int w = 0; w < workers; w++) {
            Answer a = send(w, "GET", portOf.applyAsInt(w), "/healthz", null);
            if (a.status() / 100 != 2) {
                throw new IllegalStateException("GET /healthz answered " + a.status() + ": " + a.body());
            }
        }
    }

    /** {@code method} with {@code body} (null: none) to {@code https://127.0.0.1:port + path}, header name/value pairs. */
    private Answer send(int worker, String method, int port, String path, String body, String... headers) throws Exception {
        if (jdk != null) {
            HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + port + path)).timeout(TIMEOUT)
                    .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
            for (int i = 0; i < headers.length; i += 2) {
                b.header(headers[i], headers[i + 1]);
            }
            HttpResponse<String> r = jdk[worker].send(b.build(), HttpResponse.BodyHandlers.ofString());
            return new Answer(r.statusCode(), r.body());
        }
        RequestOptions ro = new RequestOptions().setMethod(HttpMethod.valueOf(method)).setHost("127.0.0.1").setPort(port).setURI(path)
                .setTimeout(TIMEOUT.toMillis());
        for (int i = 0; i < headers.length; i += 2) {
            ro.addHeader(headers[i], headers[i + 1]);
        }
        int[] status = new int[1];
        Buffer b = vx[worker].request(ro).compose(req -> (body == null ? req.send() : req.send(body)).compose(resp -> {
            status[0] = resp.statusCode();
            return resp.body();
        })).toCompletionStage().toCompletableFuture().get(TIMEOUT.toMillis() + 1000, TimeUnit.MILLISECONDS);
        return new Answer(status[0], b.toString());
    }

    /** An alloc request for a runner as the aggregator forwards it; fails unless answered 200 with a runner. */
    String alloc(int worker, int port, String body) throws Exception {
        Answer a = send(worker, "POST", port, Bench.ALLOC_PATH, body, ALLOC_HEADERS);
        if (a.status() != 200 || !a.body().contains("\"resourceType\":\"runner\"")) {
            throw new IllegalStateException("alloc answered " + a.status() + ": " + a.body());
        }
        return a.body();
    }

    /**
     * A GET of {@code path} with the alloc request's headers, through the same connection; fails unless answered
     * 200.
     */
    String get(int worker, int port, String path) throws Exception {
        Answer a = send(worker, "GET", port, path, null, ALLOC_HEADERS);
        if (a.status() != 200) {
            throw new IllegalStateException("GET " + path + " answered " + a.status() + ": " + a.body());
        }
        return a.body();
    }

    @Override
    public void close() {
        if (vertx != null) {
            for (io.vertx.core.http.HttpClient c : vx) {
                c.close();
            }
            vertx.close();
        }
    }
}
