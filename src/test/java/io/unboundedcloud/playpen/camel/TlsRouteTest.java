package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

import org.bouncycastle.asn1.ASN1Primitive;
import org.bouncycastle.asn1.pkcs.PKCSObjectIdentifiers;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.asn1.pkcs.RSAPrivateKey;
import org.bouncycastle.asn1.sec.ECPrivateKey;
import org.bouncycastle.asn1.x9.X9ObjectIdentifiers;
import org.bouncycastle.openssl.jcajce.JcaPEMKeyConverter;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.unboundedcloud.playpen.kube.ApiCallCounter;
import io.unboundedcloud.playpen.kube.ServingCertificate;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * The serving Secret is interchangeable with the reference's: a Secret the reference created (RSA-2048,
 * PKCS#1 key, CA:TRUE) is served as is over TLS 1.3, and a Secret we create is one Go's tls.X509KeyPair accepts.
 */
class TlsRouteTest {
    static TestCluster cluster;
    static OperatorHarness op;
    static io.unboundedcloud.playpen.support.ReferenceCertificates.Pem reference;

    @BeforeAll
    static void up() throws Exception {
        cluster = TestCluster.start();
        reference = io.unboundedcloud.playpen.support.ReferenceCertificates.selfSigned("playpen-operator",
                List.of("playpen-operator", "playpen-operator.playpen", "playpen-operator.playpen.svc",
                        "playpen-operator.playpen.svc.cluster.local", "localhost"));
        cluster.client.secrets().inNamespace(TestCluster.NS).resource(new SecretBuilder().withNewMetadata()
                .withName("playpen-operator-tls").withNamespace(TestCluster.NS).endMetadata()
                .withType("kubernetes.io/tls")
                .withData(Map.of("tls.crt", b64(reference.certificatePem()), "tls.key", b64(reference.privateKeyPem())))
                .build()).create();
        op = new OperatorHarness(cluster, "--namespace=" + TestCluster.NS);
    }

    @AfterAll
    static void down() {
        if (op != null) {
            op.close();
        }
        cluster.close();
    }

    static String b64(String s) {
        return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    /** A client that trusts only the reference's certificate and checks the host name, as the aggregator does. */
    static SSLSocket verifyingClient(String protocol) throws Exception {
        KeyStore roots = KeyStore.getInstance("PKCS12");
        roots.load(null, null);
        roots.setCertificateEntry("reference", reference.certificate());
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(roots);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        Socket plain = new Socket("127.0.0.1", op.port);
        SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket(plain, "localhost", op.port, true);
        SSLParameters p = s.getSSLParameters();
        p.setEndpointIdentificationAlgorithm("HTTPS");
        p.setProtocols(new String[] {protocol});
        s.setSSLParameters(p);
        s.setSoTimeout(10_000);
        return s;
    }

    @Test
    void referenceSecretIsServedAsIsOverTls13() throws Exception {
        try (SSLSocket s = verifyingClient("TLSv1.3")) {
            s.startHandshake();
            assertThat(s.getSession().getProtocol()).isEqualTo("TLSv1.3");
            assertThat(s.getSession().getPeerCertificates()[0].getEncoded())
                    .isEqualTo(reference.certificate().getEncoded());
            OutputStream out = s.getOutputStream();
            out.write("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            byte[] buf = new byte[1024];
            int n = in.read(buf);
            assertThat(new String(buf, 0, n, StandardCharsets.US_ASCII)).matches("(?s)HTTP/1.1 20[04] .*");
        }
        // the Secret was used, not replaced
        Secret secret = cluster.client.secrets().inNamespace(TestCluster.NS).withName("playpen-operator-tls").get();
        assertThat(secret.getData().get("tls.crt")).isEqualTo(b64(reference.certificatePem()));
    }

    @Test
    void tls12IsRefusedWithTheReferenceSecretToo() throws Exception {
        try (SSLSocket s = verifyingClient("TLSv1.2")) {
            assertThatThrownBy(s::startHandshake).isInstanceOf(javax.net.ssl.SSLException.class);
        }
    }

    @Test
    void secretWeCreateIsAcceptedByGoX509KeyPair() throws Exception {
        ServingCertificate.Material m = new ServingCertificate(cluster.client, TestCluster.NS, "created-by-us",
                "playpen-operator", Clock.systemUTC(), new ApiCallCounter()).ensure();
        Secret secret = cluster.client.secrets().inNamespace(TestCluster.NS).withName("created-by-us").get();
        assertThat(secret.getType()).isEqualTo("kubernetes.io/tls");
        String crt = new String(Base64.getDecoder().decode(secret.getData().get("tls.crt")), StandardCharsets.UTF_8);
        String key = new String(Base64.getDecoder().decode(secret.getData().get("tls.key")), StandardCharsets.UTF_8);
        assertThat(crt).isEqualTo(m.certificatePem());
        GoKeyPair.check(crt, key);
        // the reference's own format passes the same check, and a mismatched pair does not
        GoKeyPair.check(reference.certificatePem(), reference.privateKeyPem());
        assertThatThrownBy(() -> GoKeyPair.check(reference.certificatePem(), key))
                .hasMessageContaining("does not match");
    }

    /**
     * What Go's {@code crypto/tls.X509KeyPair} requires: PEM blocks; the certificates are the {@code CERTIFICATE}
     * blocks; the key is the first block whose type is {@code PRIVATE KEY} or ends in {@code " PRIVATE KEY"}, and its
     * DER parses as PKCS#1 RSA, PKCS#8 (RSA, ECDSA on a named curve, Ed25519) or SEC1 EC with a named curve; the key
     * belongs to the leaf certificate.
     */
    static final class GoKeyPair {
        private static final Pattern BLOCK = Pattern.compile(
                "-----BEGIN ([A-Z0-9 ]+)-----\\r?\\n([A-Za-z0-9+/=\\r\\n]+?)-----END \\1-----");

        static void check(String certPem, String keyPem) throws Exception {
            List<byte[]> certs = new ArrayList<>();
            Matcher m = BLOCK.matcher(certPem);
            while (m.find()) {
                if (m.group(1).equals("CERTIFICATE")) {
                    certs.add(Base64.getMimeDecoder().decode(m.group(2)));
                }
            }
            if (certs.isEmpty()) {
                throw new AssertionError("tls: failed to find any PEM data in certificate input");
            }
            X509Certificate leaf = Pki.parseCertificates(certPem).get(0);
            Matcher k = BLOCK.matcher(keyPem);
            byte[] der = null;
            while (k.find()) {
                String type = k.group(1);
                if (type.equals("PRIVATE KEY") || type.endsWith(" PRIVATE KEY")) {
                    der = Base64.getMimeDecoder().decode(k.group(2));
                    break;
                }
            }
            if (der == null) {
                throw new AssertionError("tls: failed to find PEM block with type ending in \"PRIVATE KEY\"");
            }
            PrivateKey key = parseLikeGo(der);
            String leafAlg = leaf.getPublicKey().getAlgorithm();
            if (!leafAlg.equals(key.getAlgorithm()) && !(leafAlg.equals("EC") && key.getAlgorithm().equals("ECDSA"))) {
                throw new AssertionError("tls: private key type does not match public key type");
            }
            Signature sig = Signature.getInstance(key.getAlgorithm().equals("RSA") ? "SHA256withRSA" : "SHA256withECDSA");
            sig.initSign(key);
            byte[] data = "x509 key pair".getBytes(StandardCharsets.US_ASCII);
            sig.update(data);
            byte[] signature = sig.sign();
            sig.initVerify(leaf.getPublicKey());
            sig.update(data);
            if (!sig.verify(signature)) {
                throw new AssertionError("tls: private key does not match public key");
            }
        }

        private static PrivateKey parseLikeGo(byte[] der) throws Exception {
            JcaPEMKeyConverter conv = new JcaPEMKeyConverter();
            ASN1Primitive asn1 = ASN1Primitive.fromByteArray(der);
            try { // x509.ParsePKCS1PrivateKey
                RSAPrivateKey rsa = RSAPrivateKey.getInstance(asn1);
                return KeyFactory.getInstance("RSA").generatePrivate(new java.security.spec.RSAPrivateCrtKeySpec(
                        rsa.getModulus(), rsa.getPublicExponent(), rsa.getPrivateExponent(), rsa.getPrime1(),
                        rsa.getPrime2(), rsa.getExponent1(), rsa.getExponent2(), rsa.getCoefficient()));
            } catch (RuntimeException notPkcs1) {
                // next form
            }
            try { // x509.ParsePKCS8PrivateKey
                PrivateKeyInfo info = PrivateKeyInfo.getInstance(asn1);
                var alg = info.getPrivateKeyAlgorithm().getAlgorithm();
                if (alg.equals(PKCSObjectIdentifiers.rsaEncryption)) {
                    return KeyFactory.getInstance("RSA").generatePrivate(new PKCS8EncodedKeySpec(der));
                }
                if (alg.equals(X9ObjectIdentifiers.id_ecPublicKey)) {
                    if (info.getPrivateKeyAlgorithm().getParameters() == null
                            || !(info.getPrivateKeyAlgorithm().getParameters().toASN1Primitive()
                                    instanceof org.bouncycastle.asn1.ASN1ObjectIdentifier)) {
                        throw new AssertionError("x509: PKCS#8 EC key without a named curve");
                    }
                    return conv.getPrivateKey(info);
                }
                if (alg.getId().equals("1.3.101.112")) {
                    return conv.getPrivateKey(info);
                }
                throw new AssertionError("x509: PKCS#8 wrapping contained private key with unknown algorithm: " + alg);
            } catch (RuntimeException notPkcs8) {
                // next form
            }
            ECPrivateKey ec = ECPrivateKey.getInstance(asn1); // x509.ParseECPrivateKey
            if (ec.getParametersObject() == null) {
                throw new AssertionError("x509: SEC1 EC key without a named curve");
            }
            return conv.getPrivateKey(new PrivateKeyInfo(new org.bouncycastle.asn1.x509.AlgorithmIdentifier(
                    X9ObjectIdentifiers.id_ecPublicKey, ec.getParametersObject()), ec));
        }
    }
}
