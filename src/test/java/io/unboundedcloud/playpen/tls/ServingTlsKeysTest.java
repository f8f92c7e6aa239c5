package io.unboundedcloud.playpen.tls;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.List;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Test;

import io.netty.util.ReferenceCountUtil;
import io.unboundedcloud.playpen.support.ReferenceCertificates;

/**
 * What a serving Secret must hold before it is served: a certificate, and the private key of that certificate (a
 * key of another would break every handshake, so it is refused up front, and a replacement refused keeps the
 * certificate that serves); the certificates this operator issues say what their subject asked for, and are due
 * for renewal after the configured fraction of their lifetime.
 */
class ServingTlsKeysTest {
    static final Instant NOW = Instant.now().minusSeconds(60);

    static Pki.Issued ec(String cn) {
        return Pki.selfSigned(new Pki.Subject(cn, List.of(), List.of(cn + ".example"), List.of("127.0.0.1")),
                Pki.Usage.SERVER, NOW, Duration.ofDays(1));
    }

    @ParameterizedTest
    @EnumSource(value = ServingTls.Provider.class, names = {"JDK", "OPENSSL"})
    void aKeyThatIsNotTheCertificatesIsRefused(ServingTls.Provider provider) throws Exception {
        // the Go operator's RSA form and this operator's EC form
        ReferenceCertificates.Pem rsa = ReferenceCertificates.selfSigned("a", List.of("127.0.0.1"));
        ReferenceCertificates.Pem otherRsa = ReferenceCertificates.selfSigned("b", List.of("127.0.0.1"));
        Pki.Issued one = ec("one");
        Pki.Issued two = ec("two");
        String refused = "cannot build the serving TLS context: tls.key does not belong to the certificate in tls.crt";
        assertThatThrownBy(() -> new ServingTls(rsa.certificatePem(), otherRsa.privateKeyPem(), List::of, provider))
                .isInstanceOf(IllegalStateException.class).hasMessage(refused);
        assertThatThrownBy(() -> new ServingTls(one.certificatePem(), two.privateKeyPem(), List::of, provider))
                .hasMessage(refused);
        // an RSA certificate with an EC key cannot sign what the certificate's key would verify either
        assertThatThrownBy(() -> new ServingTls(rsa.certificatePem(), one.privateKeyPem(), List::of, provider))
                .isInstanceOf(IllegalStateException.class);

        // each with its own key serves
        assertThat(new ServingTls(rsa.certificatePem(), rsa.privateKeyPem(), List::of, provider).certificate())
                .isEqualTo(rsa.certificate());
        ServingTls served = new ServingTls(one.certificatePem(), one.privateKeyPem(), List::of, provider);
        assertThat(served.certificate()).isEqualTo(one.certificate());
        ReferenceCountUtil.release(served.newServerEngine());
    }

    @Test
    void aRefusedReplacementKeepsTheCertificateThatServes() {
        Pki.Issued one = ec("one");
        Pki.Issued two = ec("two");
        ServingTls serving = new ServingTls(one.certificatePem(), one.privateKeyPem(), List::of, ServingTls.Provider.JDK);

        assertThatThrownBy(() -> serving.replace(two.certificatePem(), one.privateKeyPem()))
                .hasMessageContaining("tls.key does not belong to the certificate in tls.crt");
        assertThat(serving.certificate()).isEqualTo(one.certificate());
        assertThatThrownBy(() -> serving.replace("", two.privateKeyPem()))
                .hasMessage("cannot build the serving TLS context: no certificate in tls.crt");
        assertThat(serving.certificate()).isEqualTo(one.certificate());

        serving.replace(two.certificatePem(), two.privateKeyPem());
        assertThat(serving.certificate()).isEqualTo(two.certificate());
    }

    @Test
    void issuedCertificatesSayWhatTheirSubjectAskedFor() throws Exception {
        Pki.Issued ca = Pki.selfSigned(Pki.Subject.cn("playpen-ca"), Pki.Usage.CA, NOW, Duration.ofDays(10));
        Pki.Issued leaf = Pki.issue(ca, new Pki.Subject("svc", List.of("system:masters"), List.of("svc.ns.svc"),
                List.of("10.0.0.1")), Pki.Usage.SERVER_AND_CLIENT, NOW, Duration.ofHours(2));
        Pki.Issued client = Pki.issue(ca, Pki.Subject.cn("front-proxy-client"), Pki.Usage.CLIENT, NOW,
                Duration.ofHours(1));

        X509Certificate c = ca.certificate();
        c.verify(c.getPublicKey());
        assertThat(c.getBasicConstraints()).as("a CA").isGreaterThanOrEqualTo(0);
        assertThat(c.getKeyUsage()[5]).as("keyCertSign").isTrue();
        assertThat(c.getNotBefore()).isEqualTo(Date.from(NOW.truncatedTo(java.time.temporal.ChronoUnit.SECONDS)));
        assertThat(c.getNotAfter().toInstant()).isEqualTo(NOW.plus(Duration.ofDays(10))
                .truncatedTo(java.time.temporal.ChronoUnit.SECONDS));

        X509Certificate l = leaf.certificate();
        l.verify(c.getPublicKey());
        assertThat(l.getIssuerX500Principal()).isEqualTo(c.getSubjectX500Principal());
        assertThat(l.getSubjectX500Principal().getName()).isEqualTo("CN=svc,O=system:masters");
        assertThat(l.getBasicConstraints()).as("not a CA").isEqualTo(-1);
        assertThat(l.getExtendedKeyUsage()).containsExactly("1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2");
        assertThat(l.getSubjectAlternativeNames()).extracting(n -> n.get(0) + "=" + n.get(1))
                .containsExactly("2=svc.ns.svc", "7=10.0.0.1");
        assertThat(client.certificate().getExtendedKeyUsage()).containsExactly("1.3.6.1.5.5.7.3.2");
        assertThat(client.certificate().getSubjectAlternativeNames()).isNull();
        assertThat(ec("x").certificate().getExtendedKeyUsage()).containsExactly("1.3.6.1.5.5.7.3.1");

        // the PEM forms read back as the same certificate and key (PKCS#8, which kubectl and OpenSSL read)
        assertThat(Pki.parseCertificates(leaf.certificatePem())).containsExactly(l);
        assertThat(leaf.privateKeyPem()).startsWith("-----BEGIN PRIVATE KEY-----");
        assertThat(Pki.parsePrivateKey(leaf.privateKeyPem())).isEqualTo(leaf.privateKey());
        assertThatThrownBy(() -> Pki.parsePrivateKey(leaf.certificatePem())).hasMessage("no private key found in PEM");
        // two certificates never share a serial number
        assertThat(l.getSerialNumber()).isNotEqualTo(client.certificate().getSerialNumber()).isPositive();
    }

    @Test
    void theStartupLogSaysWhichTlsServesAndInWhatCipherOrder() {
        Pki.Issued one = ec("one");
        assertThat(new ServingTls(one.certificatePem(), one.privateKeyPem(), List::of, true).describe()).isEqualTo(
                "the JDK's TLS, cipher suites TLS_CHACHA20_POLY1305_SHA256,TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384"
                        + " in this order (C1-only JIT: AES-GCM has no intrinsics)");
        assertThat(new ServingTls(one.certificatePem(), one.privateKeyPem(), List::of, false).describe())
                .isEqualTo("the JDK's TLS, cipher suites in the JDK's order");
        assertThat(new ServingTls(one.certificatePem(), one.privateKeyPem(), List::of, ServingTls.Provider.OPENSSL)
                .describe()).isEqualTo("BoringSSL, cipher suites in its order");
    }

    @Test
    void aCertificateIsDueForRenewalAfterTheFractionOfItsLifetime() {
        X509Certificate tenDays = Pki.selfSigned(Pki.Subject.cn("s"), Pki.Usage.SERVER, NOW, Duration.ofDays(10))
                .certificate();
        Instant notBefore = tenDays.getNotBefore().toInstant();
        assertThat(new CertificateRenewal(Duration.ofDays(10), 0.25, Duration.ofSeconds(10), Duration.ofSeconds(5))
                .renewAt(tenDays)).isEqualTo(notBefore.plus(Duration.ofHours(60)));
        assertThat(CertificateRenewal.DEFAULT.renewAt(tenDays))
                .isEqualTo(notBefore.plusMillis((long) (Duration.ofDays(10).toMillis() * 0.667)));
    }
}
