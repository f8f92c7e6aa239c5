package io.unboundedcloud.playpen.chaos;

import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

import com.fasterxml.jackson.databind.node.ObjectNode;

import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * The scenario "Certificate rotation", against the running replicas of the chaos suite: while clients allocate
 * through the aggregator stand-in (which, like kube-apiserver, verifies each replica against the APIService caBundle
 * and the service name), the serving Secret is replaced with a certificate from another CA. Every replica must serve
 * the new certificate within the bound without a restart, and no handshake may fail for a client that trusts the
 * caBundle of the moment (probed directly every ~100 ms, and counted in the stand-in's log). Then the front-proxy CA
 * is rotated: a second CA added to {@code extension-apiserver-authentication} is accepted by every replica, and
 * refused again once removed, while the stand-in's client (first CA) keeps working.
 */
final class CertRotationScenario {
    /** The replicas run with the operator's defaults: --serving-cert-check-interval=10s, --serving-cert-publish-grace=5s. */
    static final Duration CHECK_INTERVAL = Duration.ofSeconds(10);
    static final Duration GRACE = Duration.ofSeconds(5);
    /** Leader sees the Secret and publishes (1 interval), a replica sees the bundle (1), grace rounded up to intervals. */
    static final Duration BOUND = CHECK_INTERVAL.multipliedBy(2 + (GRACE.toMillis() + CHECK_INTERVAL.toMillis() - 1)
            / CHECK_INTERVAL.toMillis());
    /** Scheduling slack on a loaded 2-core machine before a late switch counts as a violation. */
    static final Duration SLACK = Duration.ofSeconds(10);
    static final String SECRET_PATH = "/api/v1/namespaces/playpen/secrets/playpen-operator-tls";
    static final String TRUST_PATH = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication";
    static final String APISERVICE_PATH = "/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.playpen.unbounded-cloud.io";
    static final String SERVICE_DNS = "playpen-operator.playpen.svc";

    private CertRotationScenario() {
    }

    /**
     * This scenario alone (the suite runs it after "crash mid-load"): {@code -Dchaos.jar}, {@code -Dchaos.out},
     * {@code -Dchaos.replicas} (default 3), {@code -Dchaos.seed}. Exits 1 on a violation.
     */
    public static void main(String[] args) throws Exception {
        Path jar = Path.of(System.getProperty("chaos.jar", "target/playpen-operator.jar"));
        Path out = Path.of(System.getProperty("chaos.out", "target/chaos"));
        Files.createDirectories(out);
        Path dir = Files.createTempDirectory(out, "certrot-");
        ChaosSuite.Result r;
        try (ChaosSuite suite = ChaosSuite.start(jar, dir, Integer.getInteger("chaos.replicas", 3),
                Long.getLong("chaos.seed", 20261123L))) {
            r = run(suite);
        }
        r.violations().forEach(v -> System.out.println("VIOLATION [certificate rotation] " + v));
        System.out.println(ChaosSuite.M.writeValueAsString(r));
        System.exit(r.violations().isEmpty() ? 0 : 1);
    }

    static ChaosSuite.Result run(ChaosSuite suite) throws Exception {
        ChaosSuite.Result r = new CertRotationScenario.Run(suite).run();
        System.out.println(ChaosSuite.table(List.of(r)));
        return r;
    }

    private static final class Run {
        final ChaosSuite suite;
        final Playground pg;
        final List<String> violations = new CopyOnWriteArrayList<>();
        final AtomicInteger handshakes = new AtomicInteger();
        final AtomicInteger rejected = new AtomicInteger();
        final Map<Integer, Long> switchedAt = new ConcurrentHashMap<>();
        volatile X509Certificate target;
        volatile boolean probing = true;

        Run(ChaosSuite suite) {
            this.suite = suite;
            this.pg = suite.pg;
        }

        ChaosSuite.Result run() throws Exception {
            long t0 = System.nanoTime();
            Path clusterLog = pg.dir().resolve("cluster.log");
            long logOffset = Files.exists(clusterLog) ? Files.size(clusterLog) : 0;
            Map<String, Object> recovery = new LinkedHashMap<>();

            LoadRun load = suite.load("certrot");
            LoadRun.Mix mix = new LoadRun.Mix(400, 8, 0.20, 0.0, 0.10, 4, Duration.ofSeconds(150));
            Thread loader = new Thread(() -> {
                try {
                    load.run(mix);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "chaos-certrot-load");
            Thread prober = new Thread(this::probe, "chaos-certrot-probe");
            prober.setDaemon(true);
            loader.start();
            prober.start();
            Thread.sleep(2000); // a baseline of probes with the old certificate

            // --- the serving Secret replaced with a certificate from another CA
            Instant now = Instant.now();
            Pki.Issued ca = Pki.selfSigned(Pki.Subject.cn("chaos-serving-ca"), Pki.Usage.CA, now.minusSeconds(60),
                    Duration.ofDays(30));
            Pki.Issued serving = Pki.issue(ca, new Pki.Subject("playpen-operator", List.of(),
                    List.of("playpen-operator", "playpen-operator.playpen", SERVICE_DNS, "localhost"), List.of()),
                    Pki.Usage.SERVER, now.minusSeconds(60), Duration.ofDays(10));
            target = serving.certificate();
            ObjectNode secret = (ObjectNode) ChaosSuite.M.readTree(get(SECRET_PATH));
            ObjectNode data = ChaosSuite.M.createObjectNode();
            data.put("tls.crt", b64(serving.certificatePem()));
            data.put("tls.key", b64(serving.privateKeyPem()));
            secret.set("data", data);
            ((ObjectNode) secret.get("metadata")).withObject("annotations").put("playpen.unbounded-cloud.io/serving-certificate",
                    "external");
            long replacedAt = System.nanoTime();
            put(SECRET_PATH, secret.toString());
            long deadline = replacedAt + BOUND.plus(SLACK).plusSeconds(30).toNanos();
            while (System.nanoTime() < deadline && switchedAt.size() < liveCount()) {
                Thread.sleep(100);
            }
            long worst = 0;
            for (int i = 0; i < pg.replicas().size(); i++) {
                if (!pg.replicas().get(i).alive()) {
                    continue;
                }
                Long at = switchedAt.get(i);
                if (at == null) {
                    violations.add("replica-" + i + " did not serve the new certificate within "
                            + (deadline - replacedAt) / 1_000_000 + " ms");
                    recovery.put("replica" + i + "NewCertMs", "never");
                } else {
                    long ms = (at - replacedAt) / 1_000_000;
                    worst = Math.max(worst, ms);
                    recovery.put("replica" + i + "NewCertMs", ms);
                }
            }
            recovery.put("newCertServedMs", worst);
            recovery.put("boundMs", BOUND.toMillis());
            if (worst > BOUND.plus(SLACK).toMillis()) {
                violations.add("new serving certificate served after " + worst + " ms, bound " + BOUND.toMillis()
                        + " ms (+" + SLACK.toMillis() + " ms slack)");
            }
            List<X509Certificate> bundle = bundle();
            if (!bundle.contains(serving.certificate())) {
                violations.add("the caBundle does not hold the new certificate after the switch");
            }
            recovery.put("caBundleCerts", bundle.size());

            // --- the front-proxy CA rotated: a second CA added, then removed again
            Pki.Issued fpCa = Pki.selfSigned(Pki.Subject.cn("chaos-front-proxy-ca-2"), Pki.Usage.CA, now.minusSeconds(60),
                    Duration.ofDays(1));
            Pki.Issued fpClient = Pki.issue(fpCa, Pki.Subject.cn("front-proxy-client"), Pki.Usage.CLIENT,
                    now.minusSeconds(60), Duration.ofDays(1));
            ObjectNode trust = (ObjectNode) ChaosSuite.M.readTree(get(TRUST_PATH));
            String originalCas = trust.at("/data/requestheader-client-ca-file").asText();
            ObjectNode added = trust.deepCopy();
            ((ObjectNode) added.get("data")).put("requestheader-client-ca-file", originalCas.strip() + "\n"
                    + fpCa.certificatePem());
            long addedAt = System.nanoTime();
            put(TRUST_PATH, added.toString());
            long accepted = ChaosSuite.awaitNanos(() -> allLive(i -> discovery(i, fpClient) == 200), Duration.ofSeconds(90));
            recovery.put("frontProxyCaAddedMs", accepted < 0 ? "never" : (accepted - addedAt) / 1_000_000);
            if (accepted < 0) {
                violations.add("a client of the added front-proxy CA was not accepted by every replica within 90 s");
            }
            ObjectNode restored = (ObjectNode) ChaosSuite.M.readTree(get(TRUST_PATH));
            ((ObjectNode) restored.get("data")).put("requestheader-client-ca-file", originalCas);
            long removedAt = System.nanoTime();
            put(TRUST_PATH, restored.toString());
            long refused = ChaosSuite.awaitNanos(() -> allLive(i -> discovery(i, fpClient) == 403), Duration.ofSeconds(90));
            recovery.put("frontProxyCaRemovedMs", refused < 0 ? "never" : (refused - removedAt) / 1_000_000);
            if (refused < 0) {
                violations.add("a client of the removed front-proxy CA was still accepted 90 s later");
            }

            loader.join(Duration.ofMinutes(3).toMillis());
            probing = false;
            prober.join(10_000);
            recovery.put("probeHandshakes", handshakes.get());
            recovery.put("probeRejected", rejected.get());
            long shimTlsFailures = shimTlsFailures(clusterLog, logOffset);
            recovery.put("standInTlsFailures", shimTlsFailures);
            if (shimTlsFailures > 0) {
                violations.add("the aggregator stand-in failed " + shimTlsFailures + " TLS handshakes with replicas");
            }
            violations.addAll(load.violations(suite.history));
            violations.addAll(suite.newHistoryViolations());
            return new ChaosSuite.Result("certificate rotation", pg.replicas().size() + " replicas, " + mix.clients()
                    + " clients, " + mix.requests() + " requests through the stand-in; TLS probe of every replica every "
                    + "~100 ms", "serving Secret replaced (other CA); front-proxy CA added, then removed",
                    load.attempts().size(), load.outcomes(), new ArrayList<>(violations), recovery, ChaosSuite.seconds(t0));
        }

        /** Handshakes with every live replica like the aggregator, trusting only the caBundle read just before. */
        void probe() {
            while (probing) {
                List<X509Certificate> bundle;
                try {
                    bundle = bundle();
                } catch (Exception e) {
                    sleep(100);
                    continue;
                }
                for (int i = 0; i < pg.replicas().size(); i++) {
                    Playground.Replica r = pg.replicas().get(i);
                    if (!r.alive()) {
                        continue;
                    }
                    try {
                        X509Certificate served = handshake(r.port(), bundle);
                        handshakes.incrementAndGet();
                        if (served.equals(target)) {
                            switchedAt.putIfAbsent(i, System.nanoTime());
                        }
                    } catch (javax.net.ssl.SSLHandshakeException e) {
                        handshakes.incrementAndGet();
                        if (rejected.incrementAndGet() <= 5) {
                            violations.add("replica-" + i + " rejected by a client trusting the caBundle of the moment ("
                                    + bundle.size() + " certificates): " + e.getMessage());
                        }
                    } catch (IOException | java.security.GeneralSecurityException e) {
                        // connection-level trouble (a busy replica): not a trust failure
                    }
                }
                sleep(100);
            }
        }

        int liveCount() {
            int n = 0;
            for (Playground.Replica r : pg.replicas()) {
                n += r.alive() ? 1 : 0;
            }
            return n;
        }

        boolean allLive(java.util.function.IntPredicate p) {
            for (int i = 0; i < pg.replicas().size(); i++) {
                if (pg.replicas().get(i).alive() && !p.test(i)) {
                    return false;
                }
            }
            return true;
        }

        int discovery(int i, Pki.Issued client) {
            try {
                return OperatorHarness.client(client).send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:"
                        + pg.replicas().get(i).port() + "/apis/playpen.unbounded-cloud.io/v1alpha1"))
                        .header("X-Remote-User", "chaos").timeout(Duration.ofSeconds(5)).build(),
                        HttpResponse.BodyHandlers.discarding()).statusCode();
            } catch (Exception e) {
                return -1;
            }
        }

        List<X509Certificate> bundle() throws Exception {
            String b64 = ChaosSuite.M.readTree(get(APISERVICE_PATH)).at("/spec/caBundle").asText("");
            return b64.isEmpty() ? List.of()
                    : Pki.parseCertificates(new String(Base64.getDecoder().decode(b64), StandardCharsets.US_ASCII));
        }

        String get(String path) throws Exception {
            HttpResponse<String> res = suite.plain.send(HttpRequest.newBuilder(pg.kubeApiUrl().resolve(path))
                    .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            if (res.statusCode() != 200) {
                throw new IOException("GET " + path + ": " + res.statusCode());
            }
            return res.body();
        }

        void put(String path, String json) throws Exception {
            HttpResponse<String> res = suite.plain.send(HttpRequest.newBuilder(pg.kubeApiUrl().resolve(path))
                    .header("Content-Type", "application/json").timeout(Duration.ofSeconds(10))
                    .PUT(HttpRequest.BodyPublishers.ofString(json)).build(), HttpResponse.BodyHandlers.ofString());
            if (res.statusCode() != 200) {
                throw new IOException("PUT " + path + ": " + res.statusCode() + " " + res.body());
            }
        }
    }

    /** A handshake like kube-apiserver's: trusts the bundle only and checks the service name; returns the leaf. */
    static X509Certificate handshake(int port, List<X509Certificate> bundle)
            throws IOException, java.security.GeneralSecurityException {
        KeyStore roots = KeyStore.getInstance("PKCS12");
        roots.load(null, null);
        for (int i = 0; i < bundle.size(); i++) {
            roots.setCertificateEntry("ca" + i, bundle.get(i));
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(roots);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        Socket plain = new Socket();
        plain.connect(new java.net.InetSocketAddress("127.0.0.1", port), 5000);
        try (SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket(plain, SERVICE_DNS, port, true)) {
            SSLParameters p = s.getSSLParameters();
            p.setEndpointIdentificationAlgorithm("HTTPS");
            s.setSSLParameters(p);
            s.setSoTimeout(5000);
            s.startHandshake();
            return (X509Certificate) s.getSession().getPeerCertificates()[0];
        }
    }

    /** Lines of the stand-in's log since {@code offset} where a replica's TLS handshake failed. */
    static long shimTlsFailures(Path log, long offset) throws IOException {
        if (!Files.exists(log)) {
            return 0;
        }
        byte[] all = Files.readAllBytes(log);
        String text = new String(all, (int) Math.min(offset, all.length), (int) Math.max(0, all.length - offset),
                StandardCharsets.UTF_8);
        return text.lines().filter(l -> l.contains("unreachable")
                && (l.contains("SSL") || l.contains("ertificate") || l.contains("PKIX"))).count();
    }

    static String b64(String s) {
        return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
