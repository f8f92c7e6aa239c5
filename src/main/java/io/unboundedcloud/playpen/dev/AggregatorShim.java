package io.unboundedcloud.playpen.dev;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.CertificateException;
import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedTrustManager;
import javax.net.ssl.X509TrustManager;

import org.bouncycastle.asn1.ASN1Encodable;
import org.bouncycastle.asn1.ASN1String;
import org.bouncycastle.asn1.x500.AttributeTypeAndValue;
import org.bouncycastle.asn1.x500.RDN;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x500.style.BCStyle;
import org.bouncycastle.asn1.x500.style.IETFUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsExchange;
import com.sun.net.httpserver.HttpsParameters;
import com.sun.net.httpserver.HttpsServer;

import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * Stands in for kube-apiserver's aggregation layer in front of kubectl: authenticates users by client certificate
 * (the last CN = user, each O = a group, as kube-apiserver reads them), forwards
 * {@code /apis/playpen.unbounded-cloud.io…} to the operator over HTTPS with the front-proxy client certificate and
 * {@code X-Remote-User}/{@code X-Remote-Group}, and everything else to the simulated
 * API server. Like a Service, it spreads requests over the operator replicas whose {@code /readyz} answers 2xx (204 today) and
 * skips dead ones. The operator's watches ({@code kubectl get allocs -w}, the wait of {@code kubectl delete}) are
 * streamed through as they come, each bounded to {@link #DEFAULT_WATCH_BOUND} at most (a longer or absent
 * {@code timeoutSeconds} is cut to it): the stand-in learns that kubectl left only when it next writes, so a watch
 * kubectl abandoned would otherwise keep the operator's watch, and one of the user's slots, until its next event;
 * kubectl ends {@code -w} when the watch does, as at kube-apiserver's own limit. Watches of the simulated API server
 * are refused (501).
 */
final class AggregatorShim implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(AggregatorShim.class);
    private static final String GROUP_PREFIX = "/apis/" + PlaypenKeys.GROUP;
    /** The group's OpenAPI v3 document, served by the operator (the v3 index comes from the simulated API server). */
    private static final String OPENAPI_V3_GROUP = "/openapi/v3/apis/" + PlaypenKeys.GROUP_VERSION;
    /** Never forwarded in either direction (RFC 9110 hop-by-hop, plus what the HTTP stacks compute themselves). */
    private static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-authenticate",
            "proxy-authorization", "proxy-connection", "te", "trailer", "trailers", "transfer-encoding", "upgrade",
            "content-length", "host", "date", "expect", "http2-settings");
    /** Request headers the aggregator sets or strips itself. */
    private static final Set<String> STRIPPED_REQUEST = Set.of("authorization", "impersonate-user", "impersonate-group",
            "impersonate-uid");

    /** The longest a watch streamed through to the operator lasts (its timeoutSeconds is cut to it). */
    static final Duration DEFAULT_WATCH_BOUND = Duration.ofMinutes(5);

    /** What kubectl prints for {@code -w} on anything but the playpen group. */
    static final String STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json";
    static final String STRATEGIC_MERGE_UNSUPPORTED = "the dev playground cannot apply strategic merge patches"
            + " (kubectl patch's default, and kubectl edit and apply of built-in kinds): add --type=merge or --type=json"
            + " to kubectl patch; a real cluster can";
    static final String WATCH_UNSUPPORTED = "the dev playground cannot stream watches: run the command without -w"
            + " (for example every 2 seconds with: watch kubectl ...); a real cluster can";

    /** Where the shim reports the APIService's availability (its Available condition). */
    @FunctionalInterface
    interface Availability {
        void report(boolean available, String reason, String message);
    }

    /** How the operator is registered: its CA bundle (PEM) and the host name its certificate must carry. */
    record Registration(String caBundlePem, String serverName) {
    }

    private record OperatorClient(Registration registration, HttpClient client) {
    }

    private final HttpsServer server;
    private final ExecutorService executor;
    private final URI kubeApi;
    /** Every replica address the shim may use, asked for at each probe (like a Service's selected pods). */
    private final Supplier<List<URI>> replicas;
    /** The replicas whose last probe answered 200 (like a Service's ready endpoints). */
    private volatile List<URI> ready = List.of();
    private final AtomicInteger nextReplica = new AtomicInteger();
    private final ScheduledExecutorService prober;
    private final Supplier<Registration> registration;
    private final Pki.Issued frontProxyClient;
    private final HttpClient apiClient;
    private final AtomicReference<OperatorClient> operatorClient = new AtomicReference<>();
    private final Availability availability;
    private volatile long watchBoundSeconds = DEFAULT_WATCH_BOUND.toSeconds();

    AggregatorShim(int port, Pki.Issued serving, Pki.Issued servingCa, X509Certificate clientCa, URI kubeApi,
            Supplier<List<URI>> replicas, Supplier<Registration> registration, Pki.Issued frontProxyClient,
            Availability availability) throws IOException {
        this.availability = availability;
        this.kubeApi = kubeApi;
        this.replicas = replicas;
        this.registration = registration;
        this.frontProxyClient = frontProxyClient;
        this.apiClient = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5)).build();
        SSLContext tls;
        try {
            tls = serverContext(serving, servingCa, clientCa);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot set up the dev shim's TLS", e);
        }
        server = HttpsServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 64);
        server.setHttpsConfigurator(new HttpsConfigurator(tls) {
            @Override
            public void configure(HttpsParameters params) {
                SSLParameters p = tls.getDefaultSSLParameters();
                p.setProtocols(new String[] {"TLSv1.3", "TLSv1.2"});
                p.setNeedClientAuth(false);
                p.setWantClientAuth(true);
                params.setSSLParameters(p);
            }
        });
        AtomicInteger n = new AtomicInteger();
        // a thread per request in flight; a watch streamed through holds its thread while it lasts (the stand-in
        // learns that kubectl left only when it next writes an event; the watch bound ends it at the latest), so
        // threads are made as needed
        executor = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "dev-shim-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        server.createContext("/", this::handle);
        server.start();
        prober = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "dev-shim-prober");
            t.setDaemon(true);
            return t;
        });
        prober.scheduleWithFixedDelay(this::probeQuietly, 0, PROBE_INTERVAL.toMillis(), TimeUnit.MILLISECONDS);
    }

    private static final Duration PROBE_INTERVAL = Duration.ofMillis(500);

    /** The replicas the last probe found ready, in candidate order. */
    List<URI> readyReplicas() {
        return ready;
    }

    private void probeQuietly() {
        try {
            probe();
        } catch (RuntimeException e) {
            LOG.debug("dev shim: replica probe failed", e);
        }
    }

    /**
     * GET /readyz on every candidate, in parallel. Like a readiness probe with failureThreshold 3, a replica leaves the
     * ready set after three failed probes in a row (1.5 s), or at once when it refuses the connection (it is gone);
     * one slow answer on a loaded machine does not take it out. A replica joins at its first 2xx.
     */
    private synchronized List<URI> probe() {
        OperatorClient oc = operatorClient(registration.get());
        if (oc == null) {
            ready = List.of();
            failures.clear();
            reportAvailability(false, "MissingCABundle", "the operator has not published its caBundle yet");
            return ready;
        }
        List<URI> candidates = replicas.get();
        List<java.util.concurrent.CompletableFuture<Probe>> answers = new ArrayList<>();
        for (URI r : candidates) {
            HttpRequest probe = HttpRequest.newBuilder(URI.create(base(r) + "/readyz")).timeout(Duration.ofSeconds(2))
                    .GET().build();
            answers.add(oc.client().sendAsync(probe, HttpResponse.BodyHandlers.discarding())
                    .thenApply(resp -> resp.statusCode() >= 200 && resp.statusCode() < 300 ? Probe.READY : Probe.NOT_READY)
                    .exceptionally(e -> refused(e) ? Probe.REFUSED : Probe.NOT_READY));
        }
        List<URI> now = new ArrayList<>();
        for (int i = 0; i < candidates.size(); i++) {
            URI r = candidates.get(i);
            Probe answer = answers.get(i).join();
            int failed = answer == Probe.READY ? 0 : failures.getOrDefault(r, 0) + 1;
            failures.put(r, failed);
            boolean wasReady = ready.contains(r);
            if (answer == Probe.READY || (wasReady && answer == Probe.NOT_READY && failed < FAILURE_THRESHOLD)) {
                now.add(r);
            }
        }
        failures.keySet().retainAll(candidates);
        if (!now.equals(ready)) {
            LOG.info("dev shim: ready operator replicas {}", now);
        }
        ready = List.copyOf(now);
        if (ready.isEmpty()) {
            reportAvailability(false, "MissingEndpoints", "no operator replica among " + candidates + " answers /readyz");
        } else {
            reportAvailability(true, "Passed", "all checks passed");
        }
        return ready;
    }

    private enum Probe { READY, NOT_READY, REFUSED }

    /** Failed probes in a row, per replica. */
    private final java.util.Map<URI, Integer> failures = new java.util.HashMap<>();
    private static final int FAILURE_THRESHOLD = 3;

    private static boolean refused(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof java.net.ConnectException) {
                return true;
            }
        }
        return false;
    }

    /** Tells the cluster (the APIService's Available condition) when availability changes, as the aggregator does. */
    private void reportAvailability(boolean available, String reason, String message) {
        if (lastAvailable != null && lastAvailable == available) {
            return;
        }
        lastAvailable = available;
        try {
            availability.report(available, reason, message);
        } catch (RuntimeException e) {
            lastAvailable = null; // try again at the next probe
            LOG.debug("dev shim: cannot record APIService availability", e);
        }
    }

    private Boolean lastAvailable;

    private static String base(URI uri) {
        return uri.toString().replaceAll("/+$", "");
    }

    /** The client for the current registration (rebuilt when the caBundle changes); null while unregistered. */
    private OperatorClient operatorClient(Registration reg) {
        if (reg == null || reg.caBundlePem().isBlank()) {
            return null;
        }
        OperatorClient oc = operatorClient.get();
        if (oc == null || !oc.registration().equals(reg)) {
            try {
                oc = new OperatorClient(reg, HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                        .connectTimeout(Duration.ofSeconds(5)).sslContext(operatorContext(reg)).build());
            } catch (GeneralSecurityException | IOException e) {
                throw new IllegalStateException("cannot build the client for the operator's caBundle: " + e.getMessage(), e);
            }
            operatorClient.set(oc);
        }
        return oc;
    }

    /** Drops a replica that just failed from the ready set until the next probe finds it ready again. */
    private synchronized void markUnready(URI replica) {
        List<URI> now = new ArrayList<>(ready);
        if (now.remove(replica)) {
            ready = List.copyOf(now);
            LOG.info("dev shim: operator replica {} unreachable, skipped until it answers /readyz again", replica);
        }
    }

    int port() {
        return server.getAddress().getPort();
    }

    /** Sets the longest a watch streamed through to the operator lasts (tests shorten it). */
    void watchBound(Duration bound) {
        watchBoundSeconds = Math.max(1, bound.toSeconds());
    }

    /**
     * The query of a request to the operator, a watch's with its {@code timeoutSeconds} cut to {@code boundSeconds}
     * (set to it when absent or 0, which is no limit); any other query, and a timeoutSeconds that is not a number
     * (the operator answers it 400), as it is.
     */
    static String boundedWatch(String rawQuery, long boundSeconds) {
        if (rawQuery == null || rawQuery.isEmpty()) {
            return rawQuery;
        }
        List<String> parts = new ArrayList<>(List.of(rawQuery.split("&")));
        boolean watch = false;
        int timeout = -1;
        for (int i = 0; i < parts.size(); i++) {
            String part = parts.get(i);
            int eq = part.indexOf('=');
            String key = eq < 0 ? part : part.substring(0, eq);
            String value = eq < 0 ? "" : part.substring(eq + 1);
            if (key.equals("watch") && !value.equals("0") && !value.equalsIgnoreCase("false")) {
                watch = true; // as kube-apiserver reads it: any value but 0 or false
            } else if (key.equals("timeoutSeconds")) {
                timeout = i;
            }
        }
        if (!watch) {
            return rawQuery;
        }
        String bounded = "timeoutSeconds=" + boundSeconds;
        if (timeout < 0) {
            parts.add(bounded);
        } else {
            String value = parts.get(timeout).substring(Math.min(parts.get(timeout).length(),
                    "timeoutSeconds=".length()));
            try {
                long asked = value.isEmpty() ? 0 : Long.parseLong(value);
                if (asked <= 0 || asked > boundSeconds) {
                    parts.set(timeout, bounded);
                }
            } catch (NumberFormatException notANumber) {
                return rawQuery;
            }
        }
        return String.join("&", parts);
    }

    private void handle(HttpExchange exchange) {
        try (exchange) {
            X509Certificate peer = peerCertificate((HttpsExchange) exchange);
            if (peer == null) {
                sendStatus(exchange, 401, "Unauthorized", "Unauthorized: a client certificate issued by the dev client CA is required");
                return;
            }
            byte[] body = exchange.getRequestBody().readAllBytes();
            URI uri = exchange.getRequestURI();
            String pathAndQuery = uri.getRawPath() + (uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery());
            String query = uri.getRawQuery() == null ? "" : uri.getRawQuery();
            String path = uri.getRawPath();
            boolean operatorPath = path.equals(GROUP_PREFIX) || path.startsWith(GROUP_PREFIX + "/")
                    || path.equals(OPENAPI_V3_GROUP);
            // the operator's watches are streamed through (forward); the simulated API's would need a stream of its own
            if (!operatorPath && query.matches("(^|.*&)watch=(true|1)(&.*|$)")) {
                sendStatus(exchange, 501, "NotImplemented", WATCH_UNSUPPORTED);
                return;
            }
            // the simulated API server answers a strategic merge patch with a bare 415 that kubectl prints as
            // 'The Unknown "" is invalid'
            if (!operatorPath && exchange.getRequestMethod().equals("PATCH") && String.valueOf(
                    exchange.getRequestHeaders().getFirst("Content-Type")).startsWith(STRATEGIC_MERGE_PATCH)) {
                sendStatus(exchange, 415, "UnsupportedMediaType", STRATEGIC_MERGE_UNSUPPORTED);
                return;
            }
            if (operatorPath) {
                String bounded = boundedWatch(uri.getRawQuery(), watchBoundSeconds);
                forwardToOperator(exchange, path + (bounded == null ? "" : "?" + bounded), body, peer);
            } else if (PodTables.wanted(exchange.getRequestMethod(), path, query,
                    exchange.getRequestHeaders().getFirst("Accept"))) {
                podTable(exchange, pathAndQuery, query);
            } else {
                forward(exchange, apiClient, URI.create(kubeApi.toString().replaceAll("/+$", "") + pathAndQuery), body, Map.of());
            }
        } catch (Exception e) {
            LOG.warn("dev shim: {} {} failed: {}", exchange.getRequestMethod(), exchange.getRequestURI().getRawPath(),
                    e.toString());
            try {
                sendStatus(exchange, 502, "InternalError", "dev aggregator shim: " + e.getMessage());
            } catch (IOException | RuntimeException ignored) {
                // headers were already sent; the connection is closed with the exchange
            }
        }
    }

    /** kubectl get pods: the pods from the simulated API server as the Table kube-apiserver would answer. */
    private void podTable(HttpExchange exchange, String pathAndQuery, String query)
            throws IOException, InterruptedException {
        HttpResponse<byte[]> pods;
        try {
            pods = apiClient.send(HttpRequest.newBuilder(URI.create(kubeApi.toString().replaceAll("/+$", "") + pathAndQuery))
                    .timeout(Duration.ofSeconds(60)).header("Accept", "application/json").GET().build(),
                    HttpResponse.BodyHandlers.ofByteArray());
        } catch (IOException e) {
            throw new UpstreamException(e);
        }
        byte[] body = pods.body();
        if (pods.statusCode() == 200) {
            String include = "";
            for (String param : query.split("&")) {
                if (param.startsWith("includeObject=")) {
                    include = param.substring("includeObject=".length());
                }
            }
            body = PodTables.table(PodTables.parse(body), include, java.time.Instant.now())
                    .getBytes(StandardCharsets.UTF_8);
        }
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        exchange.sendResponseHeaders(pods.statusCode(), body.length == 0 ? -1 : body.length);
        if (body.length > 0) {
            try (OutputStream os = exchange.getResponseBody()) {
                os.write(body);
            }
        }
    }

    private void forwardToOperator(HttpExchange exchange, String pathAndQuery, byte[] body, X509Certificate peer)
            throws IOException, InterruptedException, GeneralSecurityException {
        Registration reg = registration.get();
        if (reg == null || reg.caBundlePem().isBlank()) {
            sendStatus(exchange, 503, "ServiceUnavailable",
                    "operator not registered yet: APIService " + PlaypenKeys.API_SERVICE + " has no caBundle");
            return;
        }
        OperatorClient oc = operatorClient(reg);
        Map<String, List<String>> identity = identityHeaders(peer);
        List<URI> live = ready;
        if (live.isEmpty()) {
            live = probe(); // a replica may have become ready since the last probe
        }
        if (live.isEmpty()) {
            sendStatus(exchange, 503, "ServiceUnavailable", "error trying to reach the operator: no replica among "
                    + replicas.get() + " answers /readyz");
            return;
        }
        // round robin like a Service; a replica that refuses the connection never saw the request, so the next one
        // may take it (a request that reached a replica is not sent again unless it is a GET)
        int start = Math.floorMod(nextReplica.getAndIncrement(), live.size());
        boolean idempotent = exchange.getRequestMethod().equals("GET") || exchange.getRequestMethod().equals("HEAD");
        IOException last = null;
        for (int i = 0; i < live.size(); i++) {
            URI replica = live.get((start + i) % live.size());
            URI target = URI.create(base(replica) + pathAndQuery);
            try {
                forward(exchange, oc.client(), target, body, identity);
                return;
            } catch (UpstreamException e) {
                if (e.getCause() instanceof java.net.http.HttpTimeoutException) {
                    // kube-apiserver ends a request (a watch apart) after its --request-timeout, 60 s by default,
                    // with a 504, and the replica stays an endpoint: it answered, only too late
                    sendStatus(exchange, 504, "Timeout", "Timeout: request did not complete within the allotted"
                            + " timeout of 60s (kube-apiserver's --request-timeout); the operator may still complete"
                            + " it: send the same request again (an alloc with the same key returns its answer), or"
                            + " use a waitSeconds below 60");
                    return;
                }
                LOG.warn("dev shim: operator at {} unreachable: {}", target.getAuthority(), e.getMessage());
                markUnready(replica);
                last = e;
                if (!idempotent && !(e.getCause() instanceof java.net.ConnectException)) {
                    break;
                }
            }
        }
        // like the aggregator when the service does not answer (connection refused, TLS failure, timeout)
        sendStatus(exchange, 503, "ServiceUnavailable", "error trying to reach the operator: " + last.getMessage());
    }

    /**
     * The user (X-Remote-User) and groups (X-Remote-Group) of a client certificate as kube-apiserver's x509
     * authenticator takes them from Go's reading of the subject: every attribute in encoding order, those of a
     * multi-valued RDN included, the last CN being the user (as the operator's front-proxy check reads the CN, see
     * GoCertificateNames) and each O a group.
     */
    static Map<String, List<String>> identityHeaders(X509Certificate peer) {
        X500Name subject = X500Name.getInstance(peer.getSubjectX500Principal().getEncoded());
        String user = "";
        List<String> groups = new ArrayList<>();
        for (RDN rdn : subject.getRDNs()) {
            for (AttributeTypeAndValue atv : rdn.getTypesAndValues()) {
                if (atv.getType().equals(BCStyle.CN)) {
                    user = text(atv.getValue());
                } else if (atv.getType().equals(BCStyle.O)) {
                    groups.add(text(atv.getValue()));
                }
            }
        }
        return Map.of("X-Remote-User", List.of(user), "X-Remote-Group", groups);
    }

    /**
     * A value as the certificate holds it, like the aggregator's: a group "a,b" is passed as "a,b", not in a
     * distinguished name's escaped form ("a\,b"). A value that is not a string (which no client certificate of a
     * user has) is passed in its escaped form.
     */
    private static String text(ASN1Encodable v) {
        return v instanceof ASN1String s ? s.getString() : IETFUtils.valueToString(v);
    }

    private void forward(HttpExchange exchange, HttpClient client, URI target, byte[] body,
            Map<String, List<String>> extraHeaders) throws IOException, InterruptedException {
        String method = exchange.getRequestMethod();
        Headers in = exchange.getRequestHeaders();
        String transferEncoding = in.getFirst("Transfer-Encoding");
        boolean chunked = transferEncoding != null && transferEncoding.toLowerCase(Locale.ROOT).contains("chunked");
        boolean hasBody = chunked || body.length > 0 || in.containsKey("Content-Length");
        HttpRequest.BodyPublisher publisher;
        if (!hasBody) {
            publisher = HttpRequest.BodyPublishers.noBody();
        } else if (chunked) {
            // unknown length: the JDK client sends it chunked, as kubectl sent it to us
            publisher = HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(body));
        } else {
            publisher = HttpRequest.BodyPublishers.ofByteArray(body);
        }
        HttpRequest.Builder rb = HttpRequest.newBuilder(target).timeout(Duration.ofSeconds(60)).method(method, publisher);
        for (Map.Entry<String, List<String>> h : in.entrySet()) {
            String lower = h.getKey().toLowerCase(Locale.ROOT);
            if (HOP_BY_HOP.contains(lower) || STRIPPED_REQUEST.contains(lower) || lower.startsWith("x-remote-")) {
                continue;
            }
            for (String v : h.getValue()) {
                try {
                    rb.header(h.getKey(), v);
                } catch (IllegalArgumentException restricted) {
                    // a header the JDK client manages itself
                }
            }
        }
        extraHeaders.forEach((k, vs) -> vs.forEach(v -> rb.header(k, v)));
        HttpResponse<java.io.InputStream> response;
        try {
            response = client.send(rb.build(), HttpResponse.BodyHandlers.ofInputStream());
        } catch (IOException e) {
            throw new UpstreamException(e);
        }
        Headers out = exchange.getResponseHeaders();
        response.headers().map().forEach((k, vs) -> {
            if (!k.startsWith(":") && !HOP_BY_HOP.contains(k.toLowerCase(Locale.ROOT))) {
                vs.forEach(v -> out.add(k, v));
            }
        });
        int code = response.statusCode();
        if (code == 200 && !method.equals("HEAD") && response.headers().firstValue("Content-Length").isEmpty()) {
            // an answer of unknown length (a watch's events): passed on as it comes, as the aggregator streams it
            exchange.sendResponseHeaders(code, 0);
            try (java.io.InputStream is = response.body(); OutputStream os = exchange.getResponseBody()) {
                byte[] buf = new byte[8192];
                for (int n = is.read(buf); n >= 0; n = is.read(buf)) {
                    os.write(buf, 0, n);
                    os.flush();
                }
            } catch (IOException ended) {
                // kubectl stopped watching (Ctrl-C), or the operator ended the stream: the watch is over
                LOG.debug("dev shim: stream of {} ended: {}", target.getRawPath(), ended.toString());
            }
            return;
        }
        byte[] responseBody;
        try (java.io.InputStream is = response.body()) {
            responseBody = is.readAllBytes();
        }
        boolean noBody = responseBody.length == 0 || method.equals("HEAD") || code == 204 || code == 304;
        exchange.sendResponseHeaders(code, noBody ? -1 : responseBody.length);
        if (!noBody) {
            try (OutputStream os = exchange.getResponseBody()) {
                os.write(responseBody);
            }
        }
    }

    /** The upstream did not answer (as opposed to kubectl's side of the exchange failing). */
    private static final class UpstreamException extends IOException {
        private static final long serialVersionUID = 1L;

        UpstreamException(IOException cause) {
            super(cause.toString(), cause);
        }
    }

    private static X509Certificate peerCertificate(HttpsExchange exchange) {
        try {
            var chain = exchange.getSSLSession().getPeerCertificates();
            return chain.length > 0 && chain[0] instanceof X509Certificate x ? x : null;
        } catch (SSLPeerUnverifiedException e) {
            return null;
        }
    }

    static void sendStatus(HttpExchange exchange, int code, String reason, String message) throws IOException {
        byte[] body = statusJson(code, reason, message).getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        exchange.sendResponseHeaders(code, body.length);
        try (OutputStream os = exchange.getResponseBody()) {
            os.write(body);
        }
    }

    static String statusJson(int code, String reason, String message) {
        return DiscoveryDocuments.json(Map.of("kind", "Status", "apiVersion", "v1", "metadata", Map.of(),
                "status", "Failure", "message", message, "reason", reason, "code", code));
    }

    private static SSLContext serverContext(Pki.Issued serving, Pki.Issued servingCa, X509Certificate clientCa)
            throws GeneralSecurityException, IOException {
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(keyManagers(serving, servingCa.certificate()), trustManagers(List.of(clientCa)), null);
        return ctx;
    }

    /** Front-proxy client certificate out; the operator's serving certificate checked against the APIService caBundle. */
    private SSLContext operatorContext(Registration reg) throws GeneralSecurityException, IOException {
        List<X509Certificate> bundle = Pki.parseCertificates(reg.caBundlePem());
        if (bundle.isEmpty()) {
            throw new CertificateException("APIService caBundle holds no certificate");
        }
        X509TrustManager pkix = (X509TrustManager) trustManagers(bundle)[0];
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(keyManagers(frontProxyClient), new TrustManager[] {new ServiceNameTrustManager(pkix, reg.serverName())},
                null);
        return ctx;
    }

    private static javax.net.ssl.KeyManager[] keyManagers(Pki.Issued leaf, X509Certificate... intermediates)
            throws GeneralSecurityException, IOException {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        X509Certificate[] chain = new X509Certificate[1 + intermediates.length];
        chain[0] = leaf.certificate();
        System.arraycopy(intermediates, 0, chain, 1, intermediates.length);
        char[] pw = "dev".toCharArray();
        ks.setKeyEntry("key", leaf.privateKey(), pw, chain);
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, pw);
        return kmf.getKeyManagers();
    }

    private static TrustManager[] trustManagers(List<X509Certificate> anchors) throws GeneralSecurityException, IOException {
        KeyStore ts = KeyStore.getInstance("PKCS12");
        ts.load(null, null);
        for (int i = 0; i < anchors.size(); i++) {
            ts.setCertificateEntry("ca-" + i, anchors.get(i));
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance("PKIX");
        tmf.init(ts);
        return tmf.getTrustManagers();
    }

    /**
     * Verifies the operator like the aggregator does: the chain must lead to the caBundle and the certificate must name
     * the service ({@code <service>.<namespace>.svc}), whatever address the shim actually dials.
     */
    private static final class ServiceNameTrustManager extends X509ExtendedTrustManager {
        private final X509TrustManager pkix;
        private final String serverName;

        ServiceNameTrustManager(X509TrustManager pkix, String serverName) {
            this.pkix = pkix;
            this.serverName = serverName;
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
            pkix.checkServerTrusted(chain, authType);
            if (!names(chain[0]).contains(serverName)) {
                throw new CertificateException("operator certificate does not name " + serverName + " (it names "
                        + names(chain[0]) + ")");
            }
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
            checkServerTrusted(chain, authType);
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
            checkServerTrusted(chain, authType);
        }

        private static List<String> names(X509Certificate cert) throws CertificateParsingException {
            List<String> names = new ArrayList<>();
            if (cert.getSubjectAlternativeNames() != null) {
                for (List<?> san : cert.getSubjectAlternativeNames()) {
                    names.add(String.valueOf(san.get(1)).toLowerCase(Locale.ROOT));
                }
            }
            return names;
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
            throw new CertificateException("not a server");
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
            throw new CertificateException("not a server");
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
            throw new CertificateException("not a server");
        }

        @Override
        public X509Certificate[] getAcceptedIssuers() {
            return pkix.getAcceptedIssuers();
        }
    }

    @Override
    public void close() {
        prober.shutdownNow();
        server.stop(0);
        executor.shutdownNow();
    }
}
