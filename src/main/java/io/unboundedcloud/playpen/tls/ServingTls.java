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

import io.netty.buffer.ByteBufAllocator;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;

/**
 * The HTTPS server's TLS: the serving certificate, TLS 1.3 only (like the newest reference: no renegotiation, no
 * CBC or SHA-1 suites), and a client certificate requested but not required. Client chains are accepted at the TLS
 * layer and verified per request against the live front-proxy bundle, so a rotated bundle takes effect without
 * rebuilding the listener.
 * <p>
 * BoringSSL (netty-tcnative, its native library inside the jar) serves when it loads, else the JDK's TLS. Measured
 * with the image's C1-only JIT, BoringSSL took about an eighth off the CPU of an allocation at one request at a time
 * (docs/performance.md); {@code --tls-provider} picks one explicitly.
 */
public final class ServingTls {
    // TLS 1.3 only, like the newest reference (MinVersion TLS 1.3): it has no renegotiation (a TLS 1.2 client could
    // renegotiate without a certificate, 197 times cost 1.3 s of CPU) and none of TLS 1.2's CBC/SHA-1 suites
    private static final String[] PROTOCOLS = {"TLSv1.3"};
    /**
     * The TLS 1.3 suites with ChaCha20-Poly1305 first, used when the JIT is C1 only (the image's
     * {@code -XX:TieredStopAtLevel=1}): the JDK's AES-GCM is fast only through C2's intrinsics (AES-NI, carry-less
     * multiply); compiled by C1 it costs ~36 us per 1.5 KB record against ChaCha20-Poly1305's ~9 us (and 0.7 us
     * with C2). Every TLS 1.3 client offers all three; with C2 the JDK's own order (AES-GCM first) stays.
     */
    static final String[] CHACHA_FIRST = {"TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384"};

    private final Supplier<List<X509Certificate>> acceptedIssuers;
    /** Swapped whole when the serving certificate changes: new handshakes get the new one, open connections keep theirs. */
    private volatile Served served;

    /**
     * What one serving certificate serves with: the JDK context (always built: camel-netty asks for one), and the
     * BoringSSL context when BoringSSL serves, made with the front-proxy CAs of {@code issuers}.
     */
    private record Served(SSLContext context, List<X509Certificate> chain, PrivateKey key, List<X509Certificate> issuers,
            SslContext boringSsl) {
        X509Certificate leaf() {
            return chain.get(0);
        }
    }

    /** Which TLS implementation serves ({@code --tls-provider}). */
    public enum Provider {
        /** BoringSSL when its native library loads on this machine, else the JDK's. */
        AUTO,
        /** The JDK's TLS (SunJSSE). */
        JDK,
        /** BoringSSL through netty-tcnative; startup fails when its native library cannot load. */
        OPENSSL;

        /** The flag's value, case-insensitive; throws with the accepted values otherwise. */
        public static Provider parse(String value) {
            for (Provider p : values()) {
                if (p.name().equalsIgnoreCase(value.trim())) {
                    return p;
                }
            }
            throw new IllegalArgumentException("must be auto, jdk or openssl");
        }

        /** AUTO resolved on this machine; OPENSSL throws when BoringSSL cannot load here. */
        Provider resolve() {
            if (this == JDK) {
                return JDK; // without loading the native library
            }
            boolean available = OpenSsl.isAvailable();
            if (this == OPENSSL && !available) {
                throw new IllegalStateException("--tls-provider=openssl, but BoringSSL cannot load here ("
                        + OpenSsl.unavailabilityCause() + "); use --tls-provider=jdk or auto");
            }
            return this == AUTO ? (available ? OPENSSL : JDK) : this;
        }
    }

    private final boolean chachaFirst;
    private final Provider provider;

    /** Serves with BoringSSL when it loads here, else with the JDK's TLS. */
    public ServingTls(String certificatePem, String privateKeyPem, Supplier<List<X509Certificate>> acceptedIssuers) {
        this(certificatePem, privateKeyPem, acceptedIssuers, Provider.AUTO);
    }

    public ServingTls(String certificatePem, String privateKeyPem, Supplier<List<X509Certificate>> acceptedIssuers,
            Provider provider) {
        this(certificatePem, privateKeyPem, acceptedIssuers, c1Only(), provider);
    }

    /** The JDK's TLS; {@code chachaFirst}: prefer ChaCha20-Poly1305 over AES-GCM (see {@link #CHACHA_FIRST}). */
    ServingTls(String certificatePem, String privateKeyPem, Supplier<List<X509Certificate>> acceptedIssuers,
            boolean chachaFirst) {
        this(certificatePem, privateKeyPem, acceptedIssuers, chachaFirst, Provider.JDK);
    }

    private ServingTls(String certificatePem, String privateKeyPem, Supplier<List<X509Certificate>> acceptedIssuers,
            boolean chachaFirst, Provider provider) {
        this.acceptedIssuers = acceptedIssuers;
        this.chachaFirst = chachaFirst;
        this.provider = provider.resolve();
        this.served = build(certificatePem, privateKeyPem, acceptedIssuers, this.provider);
    }

    /**
     * Whether this JVM compiles with C1 only (tiered compilation stopped below level 4), where AES-GCM runs without
     * its intrinsics. False when it cannot tell.
     */
    static boolean c1Only() {
        try {
            var vm = java.lang.management.ManagementFactory.getPlatformMXBean(com.sun.management.HotSpotDiagnosticMXBean.class);
            return Boolean.parseBoolean(vm.getVMOption("TieredCompilation").getValue())
                    && Integer.parseInt(vm.getVMOption("TieredStopAtLevel").getValue()) < 4;
        } catch (RuntimeException | LinkageError e) {
            return false;
        }
    }

    /** Serves another certificate from the next handshake on; throws (and keeps the current one) when it is unusable. */
    public synchronized void replace(String certificatePem, String privateKeyPem) {
        served = build(certificatePem, privateKeyPem, acceptedIssuers, provider);
    }

    /** The implementation that serves: OPENSSL (BoringSSL) or JDK. */
    public Provider provider() {
        return provider;
    }

    /** The implementation and how the cipher suite is chosen, for the startup log. */
    public String describe() {
        if (provider == Provider.OPENSSL) {
            return "BoringSSL, cipher suites in its order";
        }
        return "the JDK's TLS, cipher suites " + (chachaFirst
                ? String.join(",", CHACHA_FIRST) + " in this order (C1-only JIT: AES-GCM has no intrinsics)"
                : "in the JDK's order");
    }

    /** The leaf certificate new handshakes present. */
    public X509Certificate certificate() {
        return served.leaf();
    }

    /** The chain new handshakes present, leaf first. */
    public List<X509Certificate> chain() {
        return served.chain();
    }

    private static Served build(String certificatePem, String privateKeyPem, Supplier<List<X509Certificate>> acceptedIssuers,
            Provider provider) {
        try {
            List<X509Certificate> chain = Pki.parseCertificates(certificatePem);
            if (chain.isEmpty()) {
                throw new IllegalArgumentException("no certificate in tls.crt");
            }
            PrivateKey key = Pki.parsePrivateKey(privateKeyPem);
            checkKeyMatches(key, chain.get(0));
            // in memory only, never written: JKS, because PKCS12 encrypts the key with 10000 rounds of PBKDF2 on
            // the way in and again on the way out, which cost 200-350 ms of a cold start (profiled with JFR)
            KeyStore ks = KeyStore.getInstance("JKS");
            ks.load(null, null);
            char[] pw = "serving".toCharArray();
            ks.setKeyEntry("serving", key, pw, chain.toArray(new X509Certificate[0]));
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(ks, pw);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(kmf.getKeyManagers(), new TrustManager[] {new DeferredClientTrust(acceptedIssuers)},
                    new SecureRandom());
            List<X509Certificate> issuers = acceptedIssuers.get();
            return new Served(context, chain, key, issuers,
                    provider == Provider.OPENSSL ? boringSsl(chain, key, issuers) : null);
        } catch (Exception e) {
            throw new IllegalStateException("cannot build the serving TLS context: " + e.getMessage(), e);
        }
    }

    /** A replaced Secret whose key is not the certificate's would break every handshake: refuse it up front. */
    private static void checkKeyMatches(PrivateKey key, X509Certificate leaf) throws java.security.GeneralSecurityException {
        String alg = switch (key.getAlgorithm()) {
            case "EC" -> "SHA256withECDSA";
            case "RSA" -> "SHA256withRSA";
            case "Ed25519", "EdDSA" -> "Ed25519";
            default -> null;
        };
        if (alg == null) {
            return;
        }
        byte[] probe = "playpen serving key check".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        java.security.Signature sig = java.security.Signature.getInstance(alg);
        sig.initSign(key);
        sig.update(probe);
        byte[] signature = sig.sign();
        sig.initVerify(leaf.getPublicKey());
        sig.update(probe);
        if (!sig.verify(signature)) {
            throw new IllegalArgumentException("tls.key does not belong to the certificate in tls.crt");
        }
    }

    public SSLContext context() {
        return served.context();
    }

    /**
     * BoringSSL's context: TLS 1.3 only, client certificate wanted, not needed. BoringSSL sends the client the list
     * of acceptable CAs fixed when the context is made (a Go client, like kube-apiserver's front proxy, offers its
     * certificate only when its issuer is in that list), so {@link #newServerEngine} makes another when the
     * front-proxy CAs change.
     */
    private static SslContext boringSsl(List<X509Certificate> chain, PrivateKey key, List<X509Certificate> issuers) {
        try {
            return SslContextBuilder.forServer(key, chain.toArray(new X509Certificate[0]))
                    .sslProvider(SslProvider.OPENSSL)
                    .protocols(PROTOCOLS)
                    .clientAuth(ClientAuth.OPTIONAL)
                    .trustManager(new DeferredClientTrust(() -> issuers))
                    .build();
        } catch (javax.net.ssl.SSLException e) {
            throw new IllegalStateException("BoringSSL refused the serving certificate or key: " + e.getMessage(), e);
        }
    }

    /**
     * The served context for {@code issuers}: BoringSSL's made again when the CAs differ, else the same one kept with
     * this list, so the next connection's check is a reference comparison.
     */
    private synchronized Served withIssuers(List<X509Certificate> issuers) {
        Served s = served;
        if (issuers != s.issuers()) {
            SslContext boringSsl = issuers.equals(s.issuers()) ? s.boringSsl() : boringSsl(s.chain(), s.key(), issuers);
            s = new Served(s.context(), s.chain(), s.key(), issuers, boringSsl);
            served = s;
        }
        return s;
    }

    /** A server-side engine: TLS 1.3, client certificate wanted, not needed; with the JDK, ChaCha20 first under C1 only. */
    public SSLEngine newServerEngine() {
        Served s = served;
        if (s.boringSsl() != null) {
            List<X509Certificate> issuers = acceptedIssuers.get();
            if (issuers != s.issuers()) {
                s = withIssuers(issuers);
            }
            return s.boringSsl().newEngine(ByteBufAllocator.DEFAULT);
        }
        SSLEngine engine = s.context().createSSLEngine();
        engine.setUseClientMode(false);
        engine.setEnabledProtocols(PROTOCOLS);
        if (chachaFirst) {
            javax.net.ssl.SSLParameters p = engine.getSSLParameters();
            p.setCipherSuites(CHACHA_FIRST);
            p.setUseCipherSuitesOrder(true);
            engine.setSSLParameters(p);
        }
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
