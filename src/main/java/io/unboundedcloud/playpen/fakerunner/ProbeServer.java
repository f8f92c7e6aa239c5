package io.unboundedcloud.playpen.fakerunner;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;

import io.unboundedcloud.playpen.tls.Pki;

/**
 * The HTTPS endpoint the kubelet probes: {@code /healthz}, {@code /readyz} and {@code /livez} answer 200 {@code ok}
 * (the runner's liveness probe, the k3s container's liveness and readiness probes); every other path is 404, since
 * nothing behind a stand-in can be used.
 */
final class ProbeServer implements AutoCloseable {
    private static final Set<String> PROBES = Set.of("/healthz", "/readyz", "/livez");

    private final HttpsServer server;
    private final ExecutorService executor;

    ProbeServer(String host, int port, Pki.Issued certificate, X509Certificate... chain) throws IOException {
        SSLContext tls;
        try {
            tls = context(certificate, chain);
        } catch (GeneralSecurityException e) {
            throw new IOException("cannot set up TLS for the probe endpoint: " + e.getMessage(), e);
        }
        server = HttpsServer.create(new InetSocketAddress(host, port), 16);
        server.setHttpsConfigurator(new HttpsConfigurator(tls));
        executor = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "fake-runner-https");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        server.createContext("/", ProbeServer::handle);
        server.start();
    }

    int port() {
        return server.getAddress().getPort();
    }

    private static void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            exchange.getRequestBody().readAllBytes();
            boolean probe = PROBES.contains(exchange.getRequestURI().getPath());
            byte[] body = (probe ? "ok" : "not served by the playpen stand-in").getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
            boolean head = exchange.getRequestMethod().equals("HEAD");
            exchange.sendResponseHeaders(probe ? 200 : 404, head ? -1 : body.length);
            if (!head) {
                try (OutputStream os = exchange.getResponseBody()) {
                    os.write(body);
                }
            }
        }
    }

    private static SSLContext context(Pki.Issued leaf, X509Certificate... chain) throws GeneralSecurityException, IOException {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        X509Certificate[] full = new X509Certificate[1 + chain.length];
        full[0] = leaf.certificate();
        System.arraycopy(chain, 0, full, 1, chain.length);
        char[] pw = "stand-in".toCharArray();
        ks.setKeyEntry("key", leaf.privateKey(), pw, full);
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, pw);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(kmf.getKeyManagers(), null, null);
        return ctx;
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
