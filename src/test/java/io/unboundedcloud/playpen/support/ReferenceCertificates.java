package io.unboundedcloud.playpen.support;

import java.math.BigInteger;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.List;

import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

import io.unboundedcloud.playpen.tls.Pki;

/** Serving certificates in the Go reference's format, to test that we read what it writes. */
public final class ReferenceCertificates {
    private ReferenceCertificates() {
    }

    /** A certificate and key the way the reference writes them: RSA-2048, PKCS#1 {@code RSA PRIVATE KEY}, CA:TRUE. */
    public record Pem(String certificatePem, String privateKeyPem, X509Certificate certificate) {
    }

    /**
     * Like the reference's selfSignedCert: RSA-2048, serial from the clock, one year from a minute ago, key usages
     * keyEncipherment, digitalSignature and certSign, serverAuth, CA:TRUE, DNS SANs (IP SANs for IP hosts).
     */
    public static Pem selfSigned(String commonName, List<String> hosts) throws Exception {
        KeyPairGenerator gen = KeyPairGenerator.getInstance("RSA");
        gen.initialize(2048);
        KeyPair kp = gen.generateKeyPair();
        Instant notBefore = Instant.now().minusSeconds(60);
        X500Name name = new X500Name("CN=" + commonName);
        var b = new JcaX509v3CertificateBuilder(name, BigInteger.valueOf(System.nanoTime()), Date.from(notBefore),
                Date.from(notBefore.plus(Duration.ofDays(365))), name, kp.getPublic());
        b.addExtension(Extension.keyUsage, true,
                new KeyUsage(KeyUsage.keyEncipherment | KeyUsage.digitalSignature | KeyUsage.keyCertSign));
        b.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth));
        b.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
        GeneralName[] sans = hosts.stream()
                .map(h -> h.matches("[0-9.]+") ? new GeneralName(GeneralName.iPAddress, h) : new GeneralName(GeneralName.dNSName, h))
                .toArray(GeneralName[]::new);
        b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(sans));
        X509Certificate cert = new JcaX509CertificateConverter()
                .getCertificate(b.build(new JcaContentSignerBuilder("SHA256withRSA").build(kp.getPrivate())));
        java.io.StringWriter key = new java.io.StringWriter();
        try (JcaPEMWriter w = new JcaPEMWriter(key)) {
            w.writeObject(kp.getPrivate()); // an RSA key is written as PKCS#1 "RSA PRIVATE KEY", like Go's MarshalPKCS1PrivateKey
        }
        return new Pem(Pki.toPem(cert), key.toString(), cert);
    }

}
