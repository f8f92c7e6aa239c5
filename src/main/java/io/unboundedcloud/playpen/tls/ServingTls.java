package io.unboundedcloud.playpen.tls;

import java.net.Socket;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.function.Supplier;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * The HTTPS server's TLS: the serving certificate, TLS 1.3 only (like the newest reference: no renegotiation, no
 * CBC or SHA-1 suites), and a client certificate requested but not required. Client chains are accepted at the TLS layer and verified per request against the live
 * front-proxy bundle, so a rotated bundle takes effect without rebuilding the listener.
 */
public final class ServingTls {
    // TLS 1.3 only, like the newest reference (MinVersion TLS 1.3): it has no renegotiation (a TLS 1.2 client could
    // renegotiate without a certificate, 197 times cost 1.3 s of CPU) and none of TLS 1.2's CBC/SHA-1 suites
    private static final String[] PROTOCOLS = {"TLSv1.3"};

    private final SSLContext context;

    public ServingTls(String certificatePem, String privateKeyPem, Supplier<List<X509Certificate>> acceptedIssuers) {
        try {
            List<X509Certificate> chain = Pki.parseCertificates(certificatePem);
            PrivateKey key = Pki.parsePrivateKey(privateKeyPem);
            // in memory only, never written: JKS, because PKCS12 encrypts the key with 10000 rounds of PBKDF2 on
            // the way in and again on the way out, which cost 200-350 ms of a cold start (profiled with JFR)
            KeyStore ks = KeyStore.getInstance("JKS");
            ks.load(null, null);
            char[] pw = "serving".toCharArray();
            ks.setKeyEntry("serving", key, pw, chain.toArray(new X509Certificate[0]));
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(ks, pw);
            context = SSLContext.getInstance("TLS");
            context.init(kmf.getKeyManagers(), new TrustManager[] {new DeferredClientTrust(acceptedIssuers)},
                    new SecureRandom());
        } catch (Exception e) {
            throw new IllegalStateException("cannot build the serving TLS context: " + e.getMessage(), e);
        }
    }

    public SSLContext context() {
        return context;
    }

    /** A server-side engine: TLS 1.3, client certificate wanted, not needed. */
    public SSLEngine newServerEngine() {
        SSLEngine engine = context.createSSLEngine();
        engine.setUseClientMode(false);
        engine.setEnabledProtocols(PROTOCOLS);
        engine.setWantClientAuth(true);
        return engine;
    }

    /** Accepts any client chain at handshake time; FrontProxyAuthenticator decides per request. */
    private static final class DeferredClientTrust extends X509ExtendedTrustManager {
        private final Supplier<List<X509Certificate>> issuers;

        DeferredClientTrust(Supplier<List<X509Certificate>> issuers) {
            this.issuers = issuers;
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType) {
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) {
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) {
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType) {
            throw new UnsupportedOperationException("server-side trust manager");
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) {
            throw new UnsupportedOperationException("server-side trust manager");
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) {
            throw new UnsupportedOperationException("server-side trust manager");
        }

        @Override
        public X509Certificate[] getAcceptedIssuers() {
            return issuers.get().toArray(new X509Certificate[0]);
        }
    }
}
