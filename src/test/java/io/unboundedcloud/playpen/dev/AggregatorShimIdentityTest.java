package io.unboundedcloud.playpen.dev;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigInteger;
import java.security.KeyPair;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.List;

import org.bouncycastle.asn1.DERUTF8String;
import org.bouncycastle.asn1.x500.AttributeTypeAndValue;
import org.bouncycastle.asn1.x500.RDN;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x500.style.BCStyle;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.tls.Pki;

/**
 * The dev playground's shim names the user and groups of a client certificate as kube-apiserver's x509
 * authenticator does (Go's pkix.Name filled from the subject in encoding order): the user is the last CN, as the
 * operator's own front-proxy check reads it, and the groups are every O, each attribute of a multi-valued RDN
 * included.
 */
class AggregatorShimIdentityTest {
    static final Instant NOW = Instant.now();
    static final Pki.Issued CA = Pki.selfSigned(Pki.Subject.cn("dev-client-ca"), Pki.Usage.CA,
            NOW.minus(Duration.ofDays(1)), Duration.ofDays(30));

    static AttributeTypeAndValue atv(org.bouncycastle.asn1.ASN1ObjectIdentifier type, String value) {
        return new AttributeTypeAndValue(type, new DERUTF8String(value));
    }

    /** A client certificate whose subject holds exactly these RDNs, in this order. */
    static X509Certificate issue(RDN... rdns) throws Exception {
        KeyPair kp = Pki.newKeyPair();
        X500Name issuer = X500Name.getInstance(CA.certificate().getSubjectX500Principal().getEncoded());
        JcaX509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(issuer, BigInteger.valueOf(7),
                Date.from(NOW.minus(Duration.ofDays(1))), Date.from(NOW.plus(Duration.ofDays(30))), new X500Name(rdns),
                kp.getPublic());
        return new JcaX509CertificateConverter().getCertificate(
                b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(CA.privateKey())));
    }

    @Test
    void theLastCommonNameIsTheUserAsKubeApiserverReadsIt() throws Exception {
        X509Certificate twoNames = issue(new RDN(atv(BCStyle.O, "playpen-users")), new RDN(atv(BCStyle.CN, "first")),
                new RDN(atv(BCStyle.CN, "alice")));
        assertThat(AggregatorShim.identityHeaders(twoNames).get("X-Remote-User")).containsExactly("alice");
        assertThat(io.unboundedcloud.playpen.auth.GoCertificateNames.commonName(twoNames)).as("the front-proxy check")
                .isEqualTo("alice");
        assertThat(AggregatorShim.identityHeaders(twoNames).get("X-Remote-Group")).containsExactly("playpen-users");
    }

    @Test
    void aMultiValuedRdnCountsEachOfItsAttributes() throws Exception {
        X509Certificate multi = issue(new RDN(atv(BCStyle.O, "a,b")),
                new RDN(new AttributeTypeAndValue[] {atv(BCStyle.CN, "bob"), atv(BCStyle.O, "playpen-users")}));
        var headers = AggregatorShim.identityHeaders(multi);
        assertThat(headers.get("X-Remote-User")).containsExactly("bob");
        assertThat(headers.get("X-Remote-Group")).containsExactly("a,b", "playpen-users");
        assertThat(AggregatorShim.identityHeaders(issue(new RDN(atv(BCStyle.O, "g")))).get("X-Remote-User"))
                .as("no CN: the empty user, as Go leaves it").isEqualTo(List.of(""));
    }
}
