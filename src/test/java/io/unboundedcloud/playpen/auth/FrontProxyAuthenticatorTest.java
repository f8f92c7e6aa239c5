package io.unboundedcloud.playpen.auth;

import io.unboundedcloud.playpen.support.MutableClock;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.tls.Pki;
import io.unboundedcloud.playpen.tls.Pki.Subject;
import io.unboundedcloud.playpen.tls.Pki.Usage;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The front-proxy certificate checks with certificates issued by {@link Pki}. */
class FrontProxyAuthenticatorTest {
    @org.junit.jupiter.api.extension.RegisterExtension
    final io.unboundedcloud.playpen.support.CapturedLogs logs =
            io.unboundedcloud.playpen.support.CapturedLogs.of(FrontProxyAuthenticator.class);
    static final Instant NOW = Instant.parse("2026-03-01T12:00:00Z");
    static final Clock CLOCK = Clock.fixed(NOW, ZoneOffset.UTC);
    static final Instant YESTERDAY = NOW.minus(Duration.ofDays(1));

    static final Pki.Issued CA = Pki.selfSigned(Subject.cn("front-proxy-ca"), Usage.CA, YESTERDAY, Duration.ofDays(365));
    static final Pki.Issued CLIENT = Pki.issue(CA, Subject.cn("front-proxy-client"), Usage.CLIENT, YESTERDAY, Duration.ofDays(30));


    static TrustBundle bundle(long generation, Set<String> names, Pki.Issued... cas) {
        return new TrustBundle(java.util.Arrays.stream(cas).map(Pki.Issued::certificate).toList(), names, null, generation);
    }

    static FrontProxyAuthenticator authenticator(TrustBundle tb) {
        return new FrontProxyAuthenticator(() -> tb, CLOCK);
    }

    static X509Certificate[] chain(Pki.Issued... certs) {
        return java.util.Arrays.stream(certs).map(Pki.Issued::certificate).toArray(X509Certificate[]::new);
    }

    /** Refused like the reference (403 "forbidden" on the wire) for the reason given (kept for the log). */
    static void assertUnauthorized(FrontProxyAuthenticator auth, X509Certificate[] chain, String why) {
        FrontProxyAuthenticator.Refused e = catchThrowableOfType(FrontProxyAuthenticator.Refused.class,
                () -> auth.verifyPeer(chain));
        assertThat(e).as("expected 403 " + why).isNotNull();
        assertThat(e.code()).isEqualTo(403);
        assertThat(e.reason()).isEqualTo("Forbidden");
        assertThat(e.getMessage()).isEqualTo("forbidden");
        assertThat(e.why()).isEqualTo(why);
    }

    @Test
    void trustedClientCertificate() {
        FrontProxyAuthenticator auth = authenticator(bundle(1, Set.of("front-proxy-client"), CA));
        assertThatCode(() -> auth.verifyPeer(chain(CLIENT))).doesNotThrowAnyException();
        // again, from the cache
        assertThatCode(() -> auth.verifyPeer(chain(CLIENT))).doesNotThrowAnyException();
        // the CA sent along in the chain is fine too
        assertThatCode(() -> auth.verifyPeer(chain(CLIENT, CA))).doesNotThrowAnyException();
    }

    @Test
    void anyCnWhenNoNamesAreConfigured() {
        Pki.Issued other = Pki.issue(CA, Subject.cn("someone"), Usage.CLIENT, YESTERDAY, Duration.ofDays(30));
        assertThatCode(() -> authenticator(bundle(1, Set.of(), CA)).verifyPeer(chain(other))).doesNotThrowAnyException();
    }

    @Test
    void serverAndClientUsageIsFine() {
        Pki.Issued both = Pki.issue(CA, Subject.cn("front-proxy-client"), Usage.SERVER_AND_CLIENT, YESTERDAY, Duration.ofDays(30));
        assertThatCode(() -> authenticator(bundle(1, Set.of(), CA)).verifyPeer(chain(both))).doesNotThrowAnyException();
    }

    @Test
    void noCertificate() {
        FrontProxyAuthenticator auth = authenticator(bundle(1, Set.of(), CA));
        String message = "no client certificate";
        assertUnauthorized(auth, null, message);
        assertUnauthorized(auth, new X509Certificate[0], message);
    }

    @Test
    void untrustedCa() {
        Pki.Issued otherCa = Pki.selfSigned(Subject.cn("front-proxy-ca"), Usage.CA, YESTERDAY, Duration.ofDays(365));
        Pki.Issued forged = Pki.issue(otherCa, Subject.cn("front-proxy-client"), Usage.CLIENT, YESTERDAY, Duration.ofDays(30));
        FrontProxyAuthenticator auth = authenticator(bundle(1, Set.of("front-proxy-client"), CA));
        assertUnauthorized(auth, chain(forged), "client certificate is not signed by the front-proxy CA");
        // sending the foreign CA along does not help
        assertUnauthorized(auth, chain(forged, otherCa), "client certificate is not signed by the front-proxy CA");
    }

    @Test
    void selfSignedClientCertificate() {
        Pki.Issued self = Pki.selfSigned(Subject.cn("front-proxy-client"), Usage.CLIENT, YESTERDAY, Duration.ofDays(30));
        assertUnauthorized(authenticator(bundle(1, Set.of(), CA)), chain(self),
                "client certificate is not signed by the front-proxy CA");
    }

    @Test
    void expiredCertificate() {
        Pki.Issued expired = Pki.issue(CA, Subject.cn("front-proxy-client"), Usage.CLIENT,
                NOW.minus(Duration.ofDays(2)), Duration.ofDays(1));
        assertUnauthorized(authenticator(bundle(1, Set.of(), CA)), chain(expired),
                "client certificate is expired or not yet valid");
    }

    @Test
    void notYetValidCertificate() {
        Pki.Issued future = Pki.issue(CA, Subject.cn("front-proxy-client"), Usage.CLIENT,
                NOW.plus(Duration.ofHours(1)), Duration.ofDays(1));
        assertUnauthorized(authenticator(bundle(1, Set.of(), CA)), chain(future),
                "client certificate is expired or not yet valid");
    }

    @Test
    void validityIsReadFromTheInjectedClock() {
        Clock later = Clock.fixed(NOW.plus(Duration.ofDays(31)), ZoneOffset.UTC);
        TrustBundle tb = bundle(1, Set.of(), CA);
        assertUnauthorized(new FrontProxyAuthenticator(() -> tb, later), chain(CLIENT),
                "client certificate is expired or not yet valid");
    }

    @Test
    void aCachedVerdictDoesNotOutliveTheCertificate() {
        MutableClock clock = new MutableClock(NOW);
        TrustBundle tb = bundle(1, Set.of(), CA);
        FrontProxyAuthenticator auth = new FrontProxyAuthenticator(() -> tb, clock);
        Pki.Issued shortLived = Pki.issue(CA, Subject.cn("front-proxy-client"), Usage.CLIENT,
                NOW.minus(Duration.ofMinutes(1)), Duration.ofMinutes(2));
        assertThatCode(() -> auth.verifyPeer(chain(shortLived))).doesNotThrowAnyException();
        clock.now = NOW.plus(Duration.ofMinutes(5));
        assertUnauthorized(auth, chain(shortLived), "client certificate is expired or not yet valid");
    }

    @Test
    void missingClientAuthUsage() {
        Pki.Issued server = Pki.issue(CA, Subject.cn("front-proxy-client"), Usage.SERVER, YESTERDAY, Duration.ofDays(30));
        assertUnauthorized(authenticator(bundle(1, Set.of(), CA)), chain(server),
                "client certificate lacks the clientAuth extended key usage");
    }

    @Test
    void theCaItselfIsNoClientCertificate() {
        assertUnauthorized(authenticator(bundle(1, Set.of(), CA)), chain(CA),
                "client certificate lacks the clientAuth extended key usage");
    }

    @Test
    void cnNotAllowed() {
        Pki.Issued mallory = Pki.issue(CA, Subject.cn("mallory"), Usage.CLIENT, YESTERDAY, Duration.ofDays(30));
        FrontProxyAuthenticator auth = authenticator(bundle(1, Set.of("front-proxy-client", "aggregator"), CA));
        assertUnauthorized(auth, chain(mallory), "client certificate CN \"mallory\" is not an allowed front-proxy name");
        assertThatCode(() -> auth.verifyPeer(chain(CLIENT))).doesNotThrowAnyException();
    }

    @Test
    void cnIsReadFromASubjectWithOrganizations() {
        Pki.Issued withOrg = Pki.issue(CA, new Subject("aggregator", List.of("system:masters"), List.of(), List.of()),
                Usage.CLIENT, YESTERDAY, Duration.ofDays(30));
        assertThatCode(() -> authenticator(bundle(1, Set.of("aggregator"), CA)).verifyPeer(chain(withOrg)))
                .doesNotThrowAnyException();
        assertThat(FrontProxyAuthenticator.commonName(withOrg.certificate().getSubjectX500Principal())).isEqualTo("aggregator");
    }

    @Test
    void intermediatesComeFromThePresentedChain() {
        Pki.Issued intermediate = Pki.issue(CA, Subject.cn("front-proxy-intermediate"), Usage.CA, YESTERDAY, Duration.ofDays(90));
        Pki.Issued leaf = Pki.issue(intermediate, Subject.cn("front-proxy-client"), Usage.CLIENT, YESTERDAY, Duration.ofDays(30));
        FrontProxyAuthenticator auth = authenticator(bundle(1, Set.of(), CA));
        assertThatCode(() -> auth.verifyPeer(chain(leaf, intermediate))).doesNotThrowAnyException();
        FrontProxyAuthenticator fresh = authenticator(bundle(1, Set.of(), CA));
        assertUnauthorized(fresh, chain(leaf), "client certificate is not signed by the front-proxy CA");
        // each connection's chain is judged on its own: the same leaf without its intermediate is refused even
        // right after it was accepted with it, and accepted with it right after it was refused without it
        assertUnauthorized(auth, chain(leaf), "client certificate is not signed by the front-proxy CA");
        assertThatCode(() -> fresh.verifyPeer(chain(leaf, intermediate))).doesNotThrowAnyException();
    }

    /** A CA certificate signed by {@code issuer} (self-signed when null) that lists these extended key usages. */
    static Pki.Issued caWithUsages(Pki.Issued issuer, String cn, org.bouncycastle.asn1.x509.KeyPurposeId... usages)
            throws Exception {
        java.security.KeyPair kp = Pki.newKeyPair();
        org.bouncycastle.asn1.x500.X500Name name = new org.bouncycastle.asn1.x500.X500Name("CN=" + cn);
        org.bouncycastle.asn1.x500.X500Name issuerName = issuer == null ? name
                : org.bouncycastle.asn1.x500.X500Name.getInstance(
                        issuer.certificate().getSubjectX500Principal().getEncoded());
        var b = new org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder(issuerName, java.math.BigInteger.valueOf(
                System.nanoTime()), java.util.Date.from(YESTERDAY), java.util.Date.from(NOW.plus(Duration.ofDays(90))),
                name, kp.getPublic());
        var ext = new org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils();
        b.addExtension(org.bouncycastle.asn1.x509.Extension.subjectKeyIdentifier, false,
                ext.createSubjectKeyIdentifier(kp.getPublic()));
        if (issuer != null) {
            b.addExtension(org.bouncycastle.asn1.x509.Extension.authorityKeyIdentifier, false,
                    ext.createAuthorityKeyIdentifier(issuer.certificate()));
        }
        b.addExtension(org.bouncycastle.asn1.x509.Extension.basicConstraints, true,
                new org.bouncycastle.asn1.x509.BasicConstraints(true));
        b.addExtension(org.bouncycastle.asn1.x509.Extension.keyUsage, true, new org.bouncycastle.asn1.x509.KeyUsage(
                org.bouncycastle.asn1.x509.KeyUsage.keyCertSign | org.bouncycastle.asn1.x509.KeyUsage.digitalSignature));
        b.addExtension(org.bouncycastle.asn1.x509.Extension.extendedKeyUsage, false,
                new org.bouncycastle.asn1.x509.ExtendedKeyUsage(usages));
        java.security.PrivateKey signer = issuer == null ? kp.getPrivate() : issuer.privateKey();
        X509Certificate cert = new org.bouncycastle.cert.jcajce.JcaX509CertificateConverter().getCertificate(
                b.build(new org.bouncycastle.operator.jcajce.JcaContentSignerBuilder("SHA256withECDSA").build(signer)));
        return new Pki.Issued(cert, kp.getPrivate());
    }

    /**
     * kube-apiserver verifies the chain for client authentication (Go's x509 Verify with ExtKeyUsageClientAuth):
     * a CA in it that lists extended key usages must list clientAuth (or any), so a leaf under a CA kept for
     * serving certificates is no front proxy.
     */
    @Test
    void aChainThroughACaLimitedToOtherUsagesIsRefused() throws Exception {
        String why = "client certificate's chain is not for client authentication: a CA in it does not allow clientAuth";
        Pki.Issued serving = caWithUsages(CA, "serving-intermediate", org.bouncycastle.asn1.x509.KeyPurposeId.id_kp_serverAuth);
        Pki.Issued leaf = Pki.issue(serving, Subject.cn("front-proxy-client"), Usage.CLIENT, YESTERDAY, Duration.ofDays(30));
        assertUnauthorized(authenticator(bundle(1, Set.of(), CA)), chain(leaf, serving), why);

        Pki.Issued servingRoot = caWithUsages(null, "serving-root", org.bouncycastle.asn1.x509.KeyPurposeId.id_kp_serverAuth);
        Pki.Issued underRoot = Pki.issue(servingRoot, Subject.cn("front-proxy-client"), Usage.CLIENT, YESTERDAY,
                Duration.ofDays(30));
        assertUnauthorized(authenticator(bundle(1, Set.of(), servingRoot)), chain(underRoot), why);

        for (var usage : List.of(org.bouncycastle.asn1.x509.KeyPurposeId.id_kp_clientAuth,
                org.bouncycastle.asn1.x509.KeyPurposeId.anyExtendedKeyUsage)) {
            Pki.Issued fine = caWithUsages(CA, "client-intermediate", usage);
            Pki.Issued fineLeaf = Pki.issue(fine, Subject.cn("front-proxy-client"), Usage.CLIENT, YESTERDAY,
                    Duration.ofDays(30));
            assertThatCode(() -> authenticator(bundle(1, Set.of(), CA)).verifyPeer(chain(fineLeaf, fine)))
                    .doesNotThrowAnyException();
        }
    }

    /** A self-signed CA certificate for {@code keys}, valid from {@code notBefore} for {@code validity}. */
    static Pki.Issued caFor(java.security.KeyPair keys, String cn, Instant notBefore, Duration validity)
            throws Exception {
        org.bouncycastle.asn1.x500.X500Name name = new org.bouncycastle.asn1.x500.X500Name("CN=" + cn);
        var b = new org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder(name,
                new java.math.BigInteger(64, new java.security.SecureRandom()).add(java.math.BigInteger.ONE),
                java.util.Date.from(notBefore), java.util.Date.from(notBefore.plus(validity)), name, keys.getPublic());
        var ext = new org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils();
        b.addExtension(org.bouncycastle.asn1.x509.Extension.subjectKeyIdentifier, false,
                ext.createSubjectKeyIdentifier(keys.getPublic()));
        b.addExtension(org.bouncycastle.asn1.x509.Extension.basicConstraints, true,
                new org.bouncycastle.asn1.x509.BasicConstraints(true));
        b.addExtension(org.bouncycastle.asn1.x509.Extension.keyUsage, true, new org.bouncycastle.asn1.x509.KeyUsage(
                org.bouncycastle.asn1.x509.KeyUsage.keyCertSign | org.bouncycastle.asn1.x509.KeyUsage.digitalSignature));
        X509Certificate cert = new org.bouncycastle.cert.jcajce.JcaX509CertificateConverter().getCertificate(
                b.build(new org.bouncycastle.operator.jcajce.JcaContentSignerBuilder("SHA256withECDSA")
                        .build(keys.getPrivate())));
        return new Pki.Issued(cert, keys.getPrivate());
    }

    /**
     * kube-apiserver (Go's x509 Verify) holds the trusted CA to its validity period as well: a front-proxy CA that
     * has expired, or is not valid yet, vouches for no one, even for a client certificate that is itself still
     * valid, and even while it stays in the bundle next to its successor.
     */
    @Test
    void aCaOutsideItsValidityVouchesForNoOne() {
        String why = "client certificate's front-proxy CA is expired or not yet valid";
        Pki.Issued expiredCa = Pki.selfSigned(Subject.cn("front-proxy-ca"), Usage.CA, NOW.minus(Duration.ofDays(400)),
                Duration.ofDays(365));
        Pki.Issued underExpired = Pki.issue(expiredCa, Subject.cn("front-proxy-client"), Usage.CLIENT, YESTERDAY,
                Duration.ofDays(30));
        assertUnauthorized(authenticator(bundle(1, Set.of(), expiredCa)), chain(underExpired), why);
        // its successor in the same bundle does not make it trusted again
        FrontProxyAuthenticator rotating = authenticator(bundle(2, Set.of(), expiredCa, CA));
        assertUnauthorized(rotating, chain(underExpired), why);
        assertThatCode(() -> rotating.verifyPeer(chain(CLIENT))).doesNotThrowAnyException();

        Pki.Issued futureCa = Pki.selfSigned(Subject.cn("front-proxy-ca"), Usage.CA, NOW.plus(Duration.ofDays(1)),
                Duration.ofDays(365));
        Pki.Issued underFuture = Pki.issue(futureCa, Subject.cn("front-proxy-client"), Usage.CLIENT, YESTERDAY,
                Duration.ofDays(30));
        assertUnauthorized(authenticator(bundle(1, Set.of(), futureCa)), chain(underFuture), why);
    }

    /** A CA renewed with its key kept: the bundle holds the expired and the renewed certificate; the renewed one counts. */
    @Test
    void aCaRenewedWithTheSameKeyStillVouches() throws Exception {
        java.security.KeyPair keys = Pki.newKeyPair();
        Pki.Issued old = caFor(keys, "front-proxy-ca", NOW.minus(Duration.ofDays(400)), Duration.ofDays(365));
        Pki.Issued renewed = caFor(keys, "front-proxy-ca", NOW.minus(Duration.ofDays(40)), Duration.ofDays(365));
        Pki.Issued leaf = Pki.issue(renewed, Subject.cn("front-proxy-client"), Usage.CLIENT, YESTERDAY,
                Duration.ofDays(30));
        for (int i = 0; i < 8; i++) {
            // both orders, several times: which anchor the validator tries first must not matter
            assertThatCode(() -> authenticator(bundle(1, Set.of(), old, renewed)).verifyPeer(chain(leaf)))
                    .doesNotThrowAnyException();
            assertThatCode(() -> authenticator(bundle(1, Set.of(), renewed, old)).verifyPeer(chain(leaf)))
                    .doesNotThrowAnyException();
        }
    }

    /** A verdict made while the CA was valid is not reused once the CA has expired, within the cache period too. */
    @Test
    void aCachedVerdictDoesNotOutliveTheCa() {
        MutableClock clock = new MutableClock(NOW);
        Pki.Issued shortCa = Pki.selfSigned(Subject.cn("front-proxy-ca"), Usage.CA, YESTERDAY,
                Duration.ofDays(1).plus(Duration.ofMinutes(2)));
        Pki.Issued leaf = Pki.issue(shortCa, Subject.cn("front-proxy-client"), Usage.CLIENT, YESTERDAY,
                Duration.ofDays(30));
        TrustBundle tb = bundle(1, Set.of(), shortCa);
        FrontProxyAuthenticator auth = new FrontProxyAuthenticator(() -> tb, clock, () -> 0L);
        assertThatCode(() -> auth.verifyPeer(chain(leaf))).doesNotThrowAnyException();
        clock.now = NOW.plus(Duration.ofMinutes(5));
        assertUnauthorized(auth, chain(leaf), "client certificate's front-proxy CA is expired or not yet valid");
    }

    @Test
    void newBundleGenerationRefusesCertificatesOfTheOldCa() {
        Pki.Issued newCa = Pki.selfSigned(Subject.cn("front-proxy-ca"), Usage.CA, YESTERDAY, Duration.ofDays(365));
        Pki.Issued newClient = Pki.issue(newCa, Subject.cn("front-proxy-client"), Usage.CLIENT, YESTERDAY, Duration.ofDays(30));
        AtomicReference<TrustBundle> current = new AtomicReference<>(bundle(1, Set.of("front-proxy-client"), CA));
        FrontProxyAuthenticator auth = new FrontProxyAuthenticator(current::get, CLOCK);

        assertThatCode(() -> auth.verifyPeer(chain(CLIENT))).doesNotThrowAnyException();
        assertUnauthorized(auth, chain(newClient), "client certificate is not signed by the front-proxy CA");

        // rotation, step 1: both CAs trusted
        current.set(bundle(2, Set.of("front-proxy-client"), CA, newCa));
        assertThatCode(() -> auth.verifyPeer(chain(CLIENT))).doesNotThrowAnyException();
        assertThatCode(() -> auth.verifyPeer(chain(newClient))).doesNotThrowAnyException();

        // step 2: the old CA is gone; its certificate must be refused at once, not after a cache expiry
        current.set(bundle(3, Set.of("front-proxy-client"), newCa));
        assertUnauthorized(auth, chain(CLIENT), "client certificate is not signed by the front-proxy CA");
        assertThatCode(() -> auth.verifyPeer(chain(newClient))).doesNotThrowAnyException();
    }

    @Test
    void newAllowedNamesApplyAtOnce() {
        AtomicReference<TrustBundle> current = new AtomicReference<>(bundle(1, Set.of(), CA));
        FrontProxyAuthenticator auth = new FrontProxyAuthenticator(current::get, CLOCK);
        assertThatCode(() -> auth.verifyPeer(chain(CLIENT))).doesNotThrowAnyException();
        current.set(bundle(2, Set.of("aggregator"), CA));
        assertUnauthorized(auth, chain(CLIENT),
                "client certificate CN \"front-proxy-client\" is not an allowed front-proxy name");
    }

    @Test
    void unusableBundleRefusesEverything() {
        FrontProxyAuthenticator auth = authenticator(TrustBundle.invalid("requestheader-client-ca-file is missing or empty", 1));
        assertUnauthorized(auth, chain(CLIENT),
                "front-proxy trust bundle is not usable: requestheader-client-ca-file is missing or empty");
        FrontProxyAuthenticator empty = authenticator(new TrustBundle(List.of(), Set.of(), null, 1));
        assertUnauthorized(empty, chain(CLIENT), "front-proxy trust bundle is not usable: empty");
    }

    @Test
    void bundleFromTheConfigMapParser() {
        TrustBundle tb = TrustBundleParser.parse(Map.of(
                TrustBundleParser.CA_KEY, CA.certificatePem(),
                TrustBundleParser.NAMES_KEY, "[\"front-proxy-client\"]"), 1);
        assertThatCode(() -> authenticator(tb).verifyPeer(chain(CLIENT))).doesNotThrowAnyException();
    }

    /**
     * A verdict is reused for ten seconds of the monotonic clock while the bundle's generation stands, and no longer:
     * a bundle whose contents changed under the same generation shows when the path is validated again.
     */
    @Test
    void verdictsLastTenSecondsOfTheMonotonicClock() {
        Pki.Issued otherCa = Pki.selfSigned(Subject.cn("front-proxy-ca"), Usage.CA, YESTERDAY, Duration.ofDays(365));
        Pki.Issued otherClient = Pki.issue(otherCa, Subject.cn("front-proxy-client"), Usage.CLIENT, YESTERDAY,
                Duration.ofDays(30));
        AtomicLong nanos = new AtomicLong(-5_000_000_000L);
        AtomicReference<TrustBundle> current = new AtomicReference<>(bundle(7, Set.of(), CA));
        FrontProxyAuthenticator auth = new FrontProxyAuthenticator(current::get, CLOCK, nanos::get);
        assertThatCode(() -> auth.verifyPeer(chain(CLIENT))).doesNotThrowAnyException();
        assertUnauthorized(auth, chain(otherClient), "client certificate is not signed by the front-proxy CA");

        // the same generation now trusts the other CA only: both verdicts stand until their period ends
        current.set(bundle(7, Set.of(), otherCa));
        nanos.set(5_000_000_000L); // exactly ten seconds after both verdicts were made
        assertThatCode(() -> auth.verifyPeer(chain(CLIENT))).doesNotThrowAnyException();
        assertUnauthorized(auth, chain(otherClient), "client certificate is not signed by the front-proxy CA");

        nanos.incrementAndGet();
        assertUnauthorized(auth, chain(CLIENT), "client certificate is not signed by the front-proxy CA");
        assertThatCode(() -> auth.verifyPeer(chain(otherClient))).doesNotThrowAnyException();

        // the new verdicts last ten seconds from now, not from the old ones
        current.set(bundle(7, Set.of(), CA));
        nanos.addAndGet(9_999_999_999L);
        assertUnauthorized(auth, chain(CLIENT), "client certificate is not signed by the front-proxy CA");
        assertThatCode(() -> auth.verifyPeer(chain(otherClient))).doesNotThrowAnyException();
        nanos.addAndGet(2);
        assertThatCode(() -> auth.verifyPeer(chain(CLIENT))).doesNotThrowAnyException();
    }

    /** 1,025 client certificates of {@link #CA}, made once per JVM (the mutation tests run this class many times). */
    private static final class ManyLeaves {
        static final List<Pki.Issued> LEAVES = java.util.stream.IntStream.range(0, 1025)
                .mapToObj(i -> Pki.issue(CA, Subject.cn("front-proxy-client"), Usage.CLIENT, YESTERDAY,
                        Duration.ofDays(30)))
                .toList();
    }

    /**
     * The trusted chains' verdicts are forgotten all at once when more than 1,024 would be kept, and not before;
     * the refused ones' apart from them.
     */
    @Test
    void trustedVerdictsAreBounded() {
        Pki.Issued otherCa = Pki.selfSigned(Subject.cn("front-proxy-ca"), Usage.CA, YESTERDAY, Duration.ofDays(365));
        List<Pki.Issued> leaves = ManyLeaves.LEAVES;
        AtomicReference<TrustBundle> current = new AtomicReference<>(bundle(1, Set.of(), CA, otherCa));
        FrontProxyAuthenticator auth = new FrontProxyAuthenticator(current::get, CLOCK, () -> 0L);
        // 1,024 chains of the first CA, a 1,025th of the other: all trusted, all kept
        for (Pki.Issued leaf : leaves.subList(0, 1024)) {
            auth.verifyPeer(chain(leaf));
        }
        auth.verifyPeer(chain(issuedBy(otherCa)));
        current.set(bundle(1, Set.of(), otherCa)); // same generation: only a forgotten verdict shows the change
        assertThatCode(() -> auth.verifyPeer(chain(leaves.get(0)))).doesNotThrowAnyException();
        // a chain refused now is kept apart: the trusted ones are still all there
        assertUnauthorized(auth, chain(leaves.get(1024)), "client certificate is not signed by the front-proxy CA");
        assertThatCode(() -> auth.verifyPeer(chain(leaves.get(0)))).doesNotThrowAnyException();
        // one more trusted: the trusted verdicts are forgotten before it is kept, so the first is checked again
        auth.verifyPeer(chain(issuedBy(otherCa)));
        assertUnauthorized(auth, chain(leaves.get(0)), "client certificate is not signed by the front-proxy CA");
    }

    /** The refused chains' verdicts are forgotten all at once when more than 1,024 would be kept, and not before. */
    @Test
    void refusedVerdictsAreBounded() {
        Pki.Issued otherCa = Pki.selfSigned(Subject.cn("front-proxy-ca"), Usage.CA, YESTERDAY, Duration.ofDays(365));
        List<Pki.Issued> leaves = ManyLeaves.LEAVES;
        AtomicReference<TrustBundle> current = new AtomicReference<>(bundle(1, Set.of(), otherCa));
        FrontProxyAuthenticator auth = new FrontProxyAuthenticator(current::get, CLOCK, () -> 0L);
        // 1,025 chains refused, all kept
        for (Pki.Issued leaf : leaves) {
            assertThat(auth.trusts(chain(leaf))).isFalse();
        }
        current.set(bundle(1, Set.of(), CA)); // same generation: only a forgotten verdict shows the change
        assertUnauthorized(auth, chain(leaves.get(0)), "client certificate is not signed by the front-proxy CA");
        // a chain trusted now is kept apart: the refused ones are still all there
        assertThatCode(() -> auth.verifyPeer(chain(CLIENT))).doesNotThrowAnyException();
        assertUnauthorized(auth, chain(leaves.get(0)), "client certificate is not signed by the front-proxy CA");
        // one more refused: the refused verdicts are forgotten before it is kept, so the first is checked again
        assertThat(auth.trusts(chain(issuedBy(otherCa)))).isFalse();
        assertThatCode(() -> auth.verifyPeer(chain(leaves.get(0)))).doesNotThrowAnyException();
    }

    private static Pki.Issued issuedBy(Pki.Issued ca) {
        return Pki.issue(ca, Subject.cn("front-proxy-client"), Usage.CLIENT, YESTERDAY, Duration.ofDays(30));
    }

    /**
     * A client without a trusted certificate may present a new chain on every handshake, each as large as the TLS
     * layer lets through (tens of kilobytes of certificates), and is judged at the handshake already; the verdict
     * kept for a chain must not keep the chain itself, or the 1,024 verdicts the cache holds keep that many chains
     * in memory. A refused chain is collected once nothing else holds it, as the certificates the TLS engine hands
     * over (netty's lazily parsed ones) are once their connection is gone. (A trusted chain's verdict keeps it: only
     * a holder of a trusted certificate's private key can present one.)
     */
    @Test
    void aVerdictDoesNotKeepTheCertificatesItWasMadeFor() {
        Pki.Issued stranger = Pki.issue(Pki.selfSigned(Subject.cn("front-proxy-ca"), Usage.CA, YESTERDAY,
                Duration.ofDays(365)), Subject.cn("front-proxy-client"), Usage.CLIENT, YESTERDAY, Duration.ofDays(30));
        FrontProxyAuthenticator auth = new FrontProxyAuthenticator(() -> bundle(1, Set.of(), CA), CLOCK, () -> 0L);
        java.lang.ref.WeakReference<X509Certificate> refused = judged(auth, stranger, false);
        judged(auth, CLIENT, true);
        for (int gc = 0; gc < 20 && refused.get() != null; gc++) {
            System.gc();
        }
        assertThat(refused.get()).as("a refused chain kept in memory by its verdict").isNull();
        // the verdicts themselves are still kept: the same certificates, parsed again, are judged from the cache
        assertThat(auth.trusts(new X509Certificate[] {lazy(stranger)})).isFalse();
        assertThat(auth.trusts(new X509Certificate[] {lazy(CLIENT)})).isTrue();
    }

    /** A chain of {@code leaf} as the TLS engine hands it over, judged; what refers to it once nothing else does. */
    private static java.lang.ref.WeakReference<X509Certificate> judged(FrontProxyAuthenticator auth, Pki.Issued leaf,
            boolean trusted) {
        X509Certificate[] chain = {lazy(leaf)};
        assertThat(auth.trusts(chain)).isEqualTo(trusted);
        return new java.lang.ref.WeakReference<>(chain[0]);
    }

    private static X509Certificate lazy(Pki.Issued issued) {
        try {
            return new io.netty.handler.ssl.util.LazyX509Certificate(issued.certificate().getEncoded());
        } catch (java.security.cert.CertificateEncodingException e) {
            throw new AssertionError(e);
        }
    }

    /** The INFO lines about refused certificates written so far. */
    List<String> refusalLines() {
        return logs.lines().stream().filter(e -> e.getLevel() == ch.qos.logback.classic.Level.INFO)
                .map(ch.qos.logback.classic.spi.ILoggingEvent::getFormattedMessage).toList();
    }

    /**
     * A client with a new certificate on every handshake gets one refusal line per ten seconds of the monotonic
     * clock, not one per certificate: the first refusal is written at once, the next line says how many were left
     * out meanwhile.
     */
    @Test
    void refusedCertificatesAreLoggedAtMostOncePerTenSecondsWithACountOfTheOthers() {
        Pki.Issued otherCa = Pki.selfSigned(Subject.cn("front-proxy-ca"), Usage.CA, YESTERDAY, Duration.ofDays(365));
        AtomicLong nanos = new AtomicLong(123_000_000_000L);
        FrontProxyAuthenticator auth = new FrontProxyAuthenticator(() -> bundle(1, Set.of(), otherCa), CLOCK,
                nanos::get);
        List<Pki.Issued> leaves = ManyLeaves.LEAVES;
        for (int i = 0; i < 50; i++) {
            assertUnauthorized(auth, chain(leaves.get(i)), "client certificate is not signed by the front-proxy CA");
            nanos.addAndGet(100_000_000L); // a handshake every 100 ms: 5 s in all
        }
        assertThat(refusalLines()).as("the first refusal, and nothing more within ten seconds").singleElement()
                .asString().contains("cn=\"front-proxy-client\"")
                .contains("reason=client certificate is not signed by the front-proxy CA");

        nanos.set(123_000_000_000L + 10_000_000_000L);
        assertUnauthorized(auth, chain(leaves.get(50)), "client certificate is not signed by the front-proxy CA");
        assertThat(refusalLines()).hasSize(2);
        assertThat(refusalLines().get(1)).contains("49 more refused");
    }

    /**
     * When refusals stop, the count of those left out since the last line still reaches the log: on the next verdict
     * of any kind (here an accepted certificate) once ten seconds have passed, and not before.
     */
    @Test
    void theCountLeftOutIsLoggedByTheNextVerdictOnceTenSecondsHavePassed() {
        Pki.Issued otherCa = Pki.selfSigned(Subject.cn("front-proxy-ca"), Usage.CA, YESTERDAY, Duration.ofDays(365));
        Pki.Issued trusted = Pki.issue(otherCa, Subject.cn("front-proxy-client"), Usage.CLIENT, YESTERDAY,
                Duration.ofDays(30));
        AtomicLong nanos = new AtomicLong(5_000_000_000L);
        FrontProxyAuthenticator auth = new FrontProxyAuthenticator(() -> bundle(1, Set.of(), otherCa), CLOCK,
                nanos::get);
        for (int i = 0; i < 4; i++) {
            assertUnauthorized(auth, chain(ManyLeaves.LEAVES.get(i)),
                    "client certificate is not signed by the front-proxy CA");
        }
        assertThat(refusalLines()).hasSize(1);
        nanos.addAndGet(9_999_999_999L);
        assertThatCode(() -> auth.verifyPeer(chain(trusted))).doesNotThrowAnyException();
        assertThat(refusalLines()).as("within ten seconds of the last line: nothing more").hasSize(1);

        nanos.addAndGet(1);
        assertThatCode(() -> auth.verifyPeer(chain(trusted))).doesNotThrowAnyException();
        assertThat(refusalLines()).hasSize(2);
        assertThat(refusalLines().get(1)).contains("3 more front-proxy client certificates refused");
        assertThatCode(() -> auth.verifyPeer(chain(trusted))).doesNotThrowAnyException();
        nanos.addAndGet(60_000_000_000L);
        assertThatCode(() -> auth.verifyPeer(chain(trusted))).doesNotThrowAnyException();
        assertThat(refusalLines()).as("the count is written once").hasSize(2);
    }

    /**
     * With no request at all after the refusals, the periodic check (the trust refresh calls it) writes the count
     * once ten seconds have passed since the last line, and only once.
     */
    @Test
    void theCountLeftOutIsLoggedByThePeriodicCheckWhenNoRequestComes() {
        Pki.Issued otherCa = Pki.selfSigned(Subject.cn("front-proxy-ca"), Usage.CA, YESTERDAY, Duration.ofDays(365));
        AtomicLong nanos = new AtomicLong(-7_000_000_000L);
        FrontProxyAuthenticator auth = new FrontProxyAuthenticator(() -> bundle(1, Set.of(), otherCa), CLOCK,
                nanos::get);
        auth.logRefusalsLeftOut();
        assertThat(refusalLines()).as("nothing refused, nothing written").isEmpty();
        for (int i = 0; i < 6; i++) {
            assertUnauthorized(auth, chain(ManyLeaves.LEAVES.get(i)),
                    "client certificate is not signed by the front-proxy CA");
        }
        nanos.addAndGet(5_000_000_000L);
        auth.logRefusalsLeftOut();
        assertThat(refusalLines()).hasSize(1);
        nanos.addAndGet(5_000_000_000L);
        auth.logRefusalsLeftOut();
        assertThat(refusalLines()).hasSize(2);
        assertThat(refusalLines().get(1)).contains("5 more front-proxy client certificates refused");
        nanos.addAndGet(60_000_000_000L);
        auth.logRefusalsLeftOut();
        assertThat(refusalLines()).hasSize(2);

        // a refusal long after that line is written at once, with no count
        assertUnauthorized(auth, chain(ManyLeaves.LEAVES.get(6)), "client certificate is not signed by the front-proxy CA");
        assertThat(refusalLines()).as("more than ten seconds after the last line: written at once").hasSize(3);
        assertThat(refusalLines().get(2)).doesNotContain("more");
    }

    /**
     * Asking whether a chain is trusted refuses nothing: an untrusted chain gives false and writes no refusal line,
     * and the verdict it leaves in the cache is logged by the first request it refuses, once.
     */
    @Test
    void askingWhetherAChainIsTrustedLogsNoRefusal() {
        Pki.Issued otherCa = Pki.selfSigned(Subject.cn("front-proxy-ca"), Usage.CA, YESTERDAY, Duration.ofDays(365));
        Pki.Issued stranger = Pki.issue(otherCa, Subject.cn("front-proxy-client"), Usage.CLIENT, YESTERDAY,
                Duration.ofDays(30));
        FrontProxyAuthenticator auth = new FrontProxyAuthenticator(() -> bundle(1, Set.of(), CA), CLOCK, () -> 0L);
        assertThat(auth.trusts(chain(CLIENT))).isTrue();
        assertThat(auth.trusts(chain(stranger))).isFalse();
        assertThat(auth.trusts(chain(stranger))).isFalse();
        assertThat(auth.trusts(null)).isFalse();
        assertThat(refusalLines()).as("nothing refused").isEmpty();

        assertUnauthorized(auth, chain(stranger), "client certificate is not signed by the front-proxy CA");
        assertThat(refusalLines()).singleElement().asString().contains("cn=\"front-proxy-client\"")
                .contains("reason=client certificate is not signed by the front-proxy CA");
        assertUnauthorized(auth, chain(stranger), "client certificate is not signed by the front-proxy CA");
        assertThat(auth.trusts(chain(stranger))).isFalse();
        assertThat(refusalLines()).as("one line per verdict").hasSize(1);
    }
}
