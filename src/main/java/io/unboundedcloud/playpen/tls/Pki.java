package io.unboundedcloud.playpen.tls;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;

import org.bouncycastle.asn1.DERUTF8String;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x500.X500NameBuilder;
import org.bouncycastle.asn1.x500.style.BCStyle;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.PEMKeyPair;
import org.bouncycastle.openssl.PEMParser;
import org.bouncycastle.openssl.jcajce.JcaPEMKeyConverter;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
import org.bouncycastle.util.io.pem.PemObject;

/** Issues and encodes X.509 certificates (serving certificates, CAs, client certificates) with BouncyCastle. */
public final class Pki {
    private static final SecureRandom RANDOM = new SecureRandom();

    private Pki() {
    }

    /** A certificate with its private key. */
    public record Issued(X509Certificate certificate, PrivateKey privateKey) {
        public String certificatePem() {
            return toPem(certificate);
        }

        public String privateKeyPem() {
            return Pki.toPem(privateKey);
        }
    }

    /** What a new certificate says about its subject. */
    public record Subject(String commonName, List<String> organizations, List<String> dnsNames, List<String> ipAddresses) {
        public static Subject cn(String cn) {
            return new Subject(cn, List.of(), List.of(), List.of());
        }
    }

    public enum Usage { CA, SERVER, CLIENT, SERVER_AND_CLIENT }

    public static KeyPair newKeyPair() {
        try {
            KeyPairGenerator gen = KeyPairGenerator.getInstance("EC");
            gen.initialize(new ECGenParameterSpec("secp256r1"), RANDOM);
            return gen.generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot generate an EC key pair", e);
        }
    }

    /** A self-signed certificate (issuer = subject). */
    public static Issued selfSigned(Subject subject, Usage usage, Instant notBefore, Duration validity) {
        KeyPair kp = newKeyPair();
        return new Issued(build(subject, usage, kp, null, kp.getPrivate(), notBefore, validity), kp.getPrivate());
    }

    /** A certificate signed by {@code issuer}. */
    public static Issued issue(Issued issuer, Subject subject, Usage usage, Instant notBefore, Duration validity) {
        KeyPair kp = newKeyPair();
        return new Issued(build(subject, usage, kp, issuer.certificate(), issuer.privateKey(), notBefore, validity),
                kp.getPrivate());
    }

    private static X509Certificate build(Subject subject, Usage usage, KeyPair kp, X509Certificate issuerCert,
            PrivateKey signer, Instant notBefore, Duration validity) {
        try {
            // each name as it is, a UTF8String: a string given to the builder would be read the way a distinguished
            // name's text is ("#..." as hex-encoded DER)
            X500NameBuilder nb = new X500NameBuilder(BCStyle.INSTANCE);
            for (String o : subject.organizations()) {
                nb.addRDN(BCStyle.O, new DERUTF8String(o));
            }
            nb.addRDN(BCStyle.CN, new DERUTF8String(subject.commonName()));
            X500Name name = nb.build();
            X500Name issuerName = issuerCert == null ? name : X500Name.getInstance(issuerCert.getSubjectX500Principal().getEncoded());
            X509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(issuerName,
                    new BigInteger(127, RANDOM).add(BigInteger.ONE), Date.from(notBefore),
                    Date.from(notBefore.plus(validity)), name, kp.getPublic());
            JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
            b.addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(kp.getPublic()));
            if (issuerCert != null) {
                b.addExtension(Extension.authorityKeyIdentifier, false, ext.createAuthorityKeyIdentifier(issuerCert));
            }
            if (usage == Usage.CA) {
                b.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
                b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign | KeyUsage.digitalSignature));
            } else {
                b.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
                b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature | KeyUsage.keyEncipherment));
                List<KeyPurposeId> purposes = new ArrayList<>();
                if (usage == Usage.SERVER || usage == Usage.SERVER_AND_CLIENT) {
                    purposes.add(KeyPurposeId.id_kp_serverAuth);
                }
                if (usage == Usage.CLIENT || usage == Usage.SERVER_AND_CLIENT) {
                    purposes.add(KeyPurposeId.id_kp_clientAuth);
                }
                b.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(purposes.toArray(new KeyPurposeId[0])));
            }
            List<GeneralName> sans = new ArrayList<>();
            subject.dnsNames().forEach(d -> sans.add(new GeneralName(GeneralName.dNSName, d)));
            subject.ipAddresses().forEach(ip -> sans.add(new GeneralName(GeneralName.iPAddress, ip)));
            if (!sans.isEmpty()) {
                b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(sans.toArray(new GeneralName[0])));
            }
            return new JcaX509CertificateConverter().getCertificate(
                    b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(signer)));
        } catch (Exception e) {
            throw new IllegalStateException("cannot issue certificate for " + subject.commonName(), e);
        }
    }

    /**
     * PEM of a certificate or key. Private keys are written as PKCS#8 ({@code PRIVATE KEY}): BouncyCastle would turn a
     * PrivateKeyInfo into a SEC1 {@code EC PRIVATE KEY} without the curve OID, which Go (kubectl) and OpenSSL reject.
     */
    public static String toPem(Object object) {
        StringWriter sw = new StringWriter();
        try (JcaPEMWriter w = new JcaPEMWriter(sw)) {
            w.writeObject(object instanceof PrivateKey pk ? new PemObject("PRIVATE KEY", pk.getEncoded()) : object);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return sw.toString();
    }

    /** Every certificate in a PEM bundle, in order; non-certificate blocks are ignored. */
    public static List<X509Certificate> parseCertificates(String pem) {
        try {
            CertificateFactory cf = CertificateFactory.getInstance("X.509");
            List<X509Certificate> out = new ArrayList<>();
            for (var c : cf.generateCertificates(new ByteArrayInputStream(pem.getBytes(StandardCharsets.US_ASCII)))) {
                out.add((X509Certificate) c);
            }
            return out;
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("invalid PEM certificate bundle: " + e.getMessage(), e);
        }
    }

    /** A PEM private key in PKCS#8, PKCS#1 (RSA) or SEC1 (EC) form. */
    public static PrivateKey parsePrivateKey(String pem) {
        try (PEMParser parser = new PEMParser(new StringReader(pem))) {
            Object o = parser.readObject();
            JcaPEMKeyConverter conv = new JcaPEMKeyConverter();
            if (o instanceof PEMKeyPair kp) {
                return conv.getPrivateKey(kp.getPrivateKeyInfo());
            }
            if (o instanceof PrivateKeyInfo info) {
                return conv.getPrivateKey(info);
            }
            throw new IllegalArgumentException("no private key found in PEM");
        } catch (IOException e) {
            throw new IllegalArgumentException("invalid PEM private key: " + e.getMessage(), e);
        }
    }
}
