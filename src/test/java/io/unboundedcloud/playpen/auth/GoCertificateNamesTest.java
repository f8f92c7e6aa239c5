package io.unboundedcloud.playpen.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.Date;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import org.bouncycastle.asn1.ASN1Encodable;
import org.bouncycastle.asn1.DERBMPString;
import org.bouncycastle.asn1.DERIA5String;
import org.bouncycastle.asn1.DERPrintableString;
import org.bouncycastle.asn1.DERT61String;
import org.bouncycastle.asn1.DERUTF8String;
import org.bouncycastle.asn1.DERUniversalString;
import org.bouncycastle.asn1.x500.AttributeTypeAndValue;
import org.bouncycastle.asn1.x500.RDN;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x500.style.BCStyle;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.tls.Pki;

/**
 * The allowed-names check reads a front-proxy certificate's CN as kube-apiserver (Go's crypto/x509) does: the
 * last CN in encoding order, and no certificate whose names Go would refuse to parse.
 */
class GoCertificateNamesTest {
    static final Pki.Issued CA = FrontProxyAuthenticatorTest.CA;
    static final AtomicLong SERIAL = new AtomicLong(1000);
    static final Set<String> ALLOWED = Set.of("front-proxy-client");

    static ASN1Encodable utf8(String s) {
        return new DERUTF8String(s);
    }

    static RDN cn(ASN1Encodable value) {
        return new RDN(new AttributeTypeAndValue(BCStyle.CN, value));
    }

    /** A client certificate with exactly these RDNs, in this order, signed by the front-proxy CA. */
    static X509Certificate issue(RDN... rdns) throws Exception {
        KeyPair kp = Pki.newKeyPair();
        X500Name issuer = X500Name.getInstance(CA.certificate().getSubjectX500Principal().getEncoded());
        JcaX509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(issuer, BigInteger.valueOf(SERIAL.incrementAndGet()),
                Date.from(FrontProxyAuthenticatorTest.YESTERDAY), Date.from(FrontProxyAuthenticatorTest.NOW.plus(Duration.ofDays(30))),
                new X500Name(rdns), kp.getPublic());
        b.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_clientAuth));
        return new JcaX509CertificateConverter().getCertificate(
                b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(CA.privateKey())));
    }

    static FrontProxyAuthenticator authenticator() {
        return FrontProxyAuthenticatorTest.authenticator(FrontProxyAuthenticatorTest.bundle(1, ALLOWED, CA));
    }

    static void accepted(X509Certificate cert) {
        assertThatCode(() -> authenticator().verifyPeer(new X509Certificate[] {cert})).doesNotThrowAnyException();
    }

    static String refused(X509Certificate cert) {
        FrontProxyAuthenticator.Refused e = catchThrowableOfType(FrontProxyAuthenticator.Refused.class,
                () -> authenticator().verifyPeer(new X509Certificate[] {cert}));
        assertThat(e).as("refused: " + cert.getSubjectX500Principal()).isNotNull();
        assertThat(e.getMessage()).isEqualTo("forbidden");
        return e.why();
    }

    @Test
    void theLastCnInEncodingOrderIsTheOneThatCounts() throws Exception {
        X509Certificate allowedFirst = issue(cn(utf8("front-proxy-client")), cn(utf8("evil")));
        assertThat(GoCertificateNames.commonName(allowedFirst)).isEqualTo("evil");
        assertThat(refused(allowedFirst)).contains("\"evil\" is not an allowed front-proxy name");

        X509Certificate allowedLast = issue(cn(utf8("evil")), cn(utf8("front-proxy-client")));
        assertThat(GoCertificateNames.commonName(allowedLast)).isEqualTo("front-proxy-client");
        accepted(allowedLast);

        X509Certificate withOthers = issue(new RDN(BCStyle.O, utf8("system:masters")), cn(utf8("front-proxy-client")),
                new RDN(BCStyle.OU, utf8("ops")));
        accepted(withOthers);

        // an empty CN after the allowed one is Go's CommonName too
        X509Certificate emptyLast = issue(cn(utf8("front-proxy-client")), cn(utf8("")));
        assertThat(GoCertificateNames.commonName(emptyLast)).isEmpty();
        refused(emptyLast);
        assertThat(GoCertificateNames.commonName(issue(new RDN(BCStyle.O, utf8("no-cn"))))).isEmpty();
    }

    @Test
    void aMultiValuedRdnIsReadInItsEncodedOrder() throws Exception {
        // DER sorts a SET by encoding: the shorter attribute comes first, so the allowed name is last here...
        X509Certificate shortFirst = issue(new RDN(new AttributeTypeAndValue[] {
            new AttributeTypeAndValue(BCStyle.CN, utf8("front-proxy-client")), new AttributeTypeAndValue(BCStyle.CN, utf8("x"))}));
        assertThat(GoCertificateNames.commonName(shortFirst)).isEqualTo("front-proxy-client");
        accepted(shortFirst);
        // ... and first here
        X509Certificate longLast = issue(new RDN(new AttributeTypeAndValue[] {
            new AttributeTypeAndValue(BCStyle.CN, utf8("front-proxy-client")),
            new AttributeTypeAndValue(BCStyle.CN, utf8("a-much-longer-name-that-sorts-after-it"))}));
        assertThat(GoCertificateNames.commonName(longLast)).isEqualTo("a-much-longer-name-that-sorts-after-it");
        refused(longLast);
    }

    @Test
    void everyStringTypeGoReadsIsReadLikeGo() throws Exception {
        accepted(issue(cn(new DERBMPString("front-proxy-client"))));
        accepted(issue(cn(new DERPrintableString("front-proxy-client"))));
        accepted(issue(cn(new DERIA5String("front-proxy-client"))));
        accepted(issue(cn(new DERT61String("front-proxy-client"))));
        // T61String bytes read as ISO-8859-1
        X509Certificate t61 = issue(cn(new DERT61String("caf\u00e9".getBytes(StandardCharsets.ISO_8859_1))));
        assertThat(GoCertificateNames.commonName(t61)).isEqualTo("caf\u00e9");
        // Go's PrintableString also takes '*' and '&'
        assertThat(GoCertificateNames.commonName(issue(cn(new DERPrintableString("a*b&c", false))))).isEqualTo("a*b&c");
    }

    @Test
    void namesGoCannotParseAreRefusedWhateverTheirCn() throws Exception {
        // a string type Go does not read at all
        assertThat(refused(issue(cn(new DERUniversalString("front-proxy-client".getBytes(StandardCharsets.UTF_8))))))
                .contains("cannot be read as kube-apiserver reads them");
        // bytes that do not fit the type, in the CN or in any other attribute
        refused(issue(cn(new DERPrintableString("front_proxy_client", false))));
        refused(issue(new RDN(BCStyle.O, new DERPrintableString("under_score", false)), cn(utf8("front-proxy-client"))));
        refused(issue(cn(new DERIA5String(new String("caf\u00e9".getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1), false))));
        refused(issue(cn(new DERBMPString("a\uD800"))));
        assertThatThrownBy(() -> GoCertificateNames.commonName(issue(cn(new DERUniversalString(new byte[] {0, 0, 0, 'a'})))))
                .isInstanceOf(GoCertificateNames.Unreadable.class);
    }

    @Test
    void withoutAllowedNamesAnyReadableCnIsAccepted() throws Exception {
        FrontProxyAuthenticator any = FrontProxyAuthenticatorTest.authenticator(FrontProxyAuthenticatorTest.bundle(1, Set.of(), CA));
        X509Certificate twoCns = issue(cn(utf8("front-proxy-client")), cn(utf8("evil")));
        assertThatCode(() -> any.verifyPeer(new X509Certificate[] {twoCns})).doesNotThrowAnyException();
        X509Certificate universal = issue(cn(new DERUniversalString(new byte[] {0, 0, 0, 'a'})));
        assertThatThrownBy(() -> any.verifyPeer(new X509Certificate[] {universal}))
                .isInstanceOf(FrontProxyAuthenticator.Refused.class);
    }

    @Test
    void refusalLogLinesCannotBeSplitByACertificate() {
        assertThat(FrontProxyAuthenticator.loggable("evil\nINFO forged line\u2028\u0085"))
                .isEqualTo("\"evil\\u000aINFO forged line\\u2028\\u0085\"");
    }
}
