package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.unboundedcloud.playpen.kube.ServingCertificateReload.Outcome;
import io.unboundedcloud.playpen.kube.ServingCertificateReload.Trust;
import io.unboundedcloud.playpen.support.MutableClock;
import io.unboundedcloud.playpen.support.TestCluster;
import io.unboundedcloud.playpen.tls.CertificateRenewal;
import io.unboundedcloud.playpen.tls.Pki;
import io.unboundedcloud.playpen.tls.ServingTls;

/**
 * Renewal with an injected clock: the self-signed serving certificate is renewed at its renewal point, the new
 * certificate reaches the caBundle before any replica serves it, the old one stays in the bundle until it expires,
 * and a Secret replaced by someone else is picked up the same way.
 */
class ServingCertificateRenewalTest {
    static final String SECRET = "playpen-operator-tls";
    static final String APISERVICE = KubeApiCall.API_SERVICE_NAME;
    // 300 s lifetime, renewed after 2/3 (200 s), served 5 s after the bundle trusts it
    static final CertificateRenewal RENEWAL = new CertificateRenewal(Duration.ofSeconds(300), 2.0 / 3,
            Duration.ofSeconds(1), Duration.ofSeconds(5));

    TestCluster cluster;
    MutableClock clock;
    ServingCertificate leader;
    ServingCertificate replica;

    @BeforeEach
    void up() {
        cluster = TestCluster.start();
        clock = new MutableClock(Instant.now());
        leader = new ServingCertificate(cluster.client, TestCluster.NS, SECRET, "playpen-operator", clock,
                new ApiCallCounter(), RENEWAL);
        replica = new ServingCertificate(cluster.client, TestCluster.NS, SECRET, "playpen-operator", clock,
                new ApiCallCounter(), RENEWAL);
    }

    @AfterEach
    void down() {
        cluster.close();
    }

    void createApiService() {
        createApiService(cluster);
    }

    /** The playpen APIService with an empty caBundle, as the install creates it. */
    static void createApiService(TestCluster cluster) {
        cluster.client.genericKubernetesResources("apiregistration.k8s.io/v1", "APIService")
                .resource(new GenericKubernetesResourceBuilder().withApiVersion("apiregistration.k8s.io/v1")
                        .withKind("APIService").withNewMetadata().withName(APISERVICE).endMetadata()
                        .addToAdditionalProperties("spec", Map.of("group", "playpen.unbounded-cloud.io",
                                "version", "v1alpha1", "caBundle", ""))
                        .build())
                .create();
    }

    /**
     * An APIService set not to verify (insecureSkipTLSVerify, which kube-apiserver refuses beside a caBundle) is read
     * as verifying nothing: no publish is tried, and a replica needs no caBundle to be ready.
     */
    @Test
    void anApiServiceThatSkipsVerificationIsReadAsNoneToVerifyAgainst() {
        cluster.client.genericKubernetesResources("apiregistration.k8s.io/v1", "APIService")
                .resource(new GenericKubernetesResourceBuilder().withApiVersion("apiregistration.k8s.io/v1")
                        .withKind("APIService").withNewMetadata().withName(APISERVICE).endMetadata()
                        .addToAdditionalProperties("spec", Map.of("group", "playpen.unbounded-cloud.io",
                                "version", "v1alpha1", "insecureSkipTLSVerify", true))
                        .build())
                .create();
        leader.ensure();
        assertThat(leader.readCaBundle(APISERVICE)).isInstanceOf(ServingCertificate.NoApiService.class);
        assertThat(leader.publishCaBundle(APISERVICE, (ServingCertificate.Material) null)).isInstanceOf(ServingCertificate.NoApiService.class);
        assertThat(bundle()).as("no caBundle written beside insecureSkipTLSVerify").isEmpty();
    }

    List<X509Certificate> bundle() {
        return bundle(cluster);
    }

    /** The certificates of the APIService's caBundle now. */
    static List<X509Certificate> bundle(TestCluster cluster) {
        GenericKubernetesResource svc = cluster.client.genericKubernetesResources("apiregistration.k8s.io/v1", "APIService")
                .withName(APISERVICE).get();
        Object spec = svc.getAdditionalProperties().get("spec");
        String b64 = spec instanceof Map<?, ?> m && m.get("caBundle") instanceof String s ? s : "";
        return b64.isEmpty() ? List.of() : Pki.parseCertificates(new String(Base64.getDecoder().decode(b64), StandardCharsets.US_ASCII));
    }

    Secret secret() {
        return cluster.client.secrets().inNamespace(TestCluster.NS).withName(SECRET).get();
    }

    static X509Certificate leaf(ServingCertificate.Material m) {
        return m.leaf();
    }

    void advance(Duration d) {
        clock.now = clock.now.plus(d);
    }

    @Test
    void renewsAtTheRenewalPointPublishesFirstAndKeepsTheOldUntilItExpires() {
        createApiService();
        ServingCertificate.Material first = leader.ensure();
        X509Certificate c0 = leaf(first);
        assertThat(Duration.between(c0.getNotBefore().toInstant(), c0.getNotAfter().toInstant())).isEqualTo(Duration.ofSeconds(300));
        assertThat(secret().getMetadata().getAnnotations()).containsEntry(ServingCertificate.ORIGIN_ANNOTATION, "self-signed");
        leader.publishCaBundle(APISERVICE);
        assertThat(bundle()).containsExactly(c0);
        ServingTls tls = new ServingTls(first.certificatePem(), first.privateKeyPem(), List::of);
        ServingCertificateReload reload = new ServingCertificateReload(replica, tls, APISERVICE, clock, RENEWAL.publishGrace());

        advance(Duration.ofSeconds(150)); // before the renewal point (200 s)
        assertThat(leader.renewIfDue()).isFalse();
        assertThat(reload.check()).isEqualTo(Outcome.UNCHANGED);

        advance(Duration.ofSeconds(55)); // 205 s: due
        assertThat(leader.renewIfDue()).isTrue();
        assertThat(leader.renewIfDue()).as("renewed once, not on every pass").isFalse();
        ServingCertificate.Material renewed = replica.read();
        X509Certificate c1 = leaf(renewed);
        assertThat(c1).isNotEqualTo(c0);
        assertThat(renewed.privateKeyPem()).isNotEqualTo(first.privateKeyPem());
        assertThat(Pki.parseCertificates(renewed.previousCertificatePem())).containsExactly(c0);

        // the Secret holds c1 but the caBundle does not trust it yet: keep serving c0
        assertThat(reload.check()).isEqualTo(Outcome.WAITING_FOR_CA_BUNDLE);
        assertThat(tls.certificate()).isEqualTo(c0);

        leader.publishCaBundle(APISERVICE);
        assertThat(bundle()).as("new and old CA during the overlap").containsExactly(c1, c0);
        // trusted now, but the aggregator gets the grace period to pick the bundle up
        assertThat(reload.check()).isEqualTo(Outcome.WAITING_FOR_CA_BUNDLE);
        assertThat(tls.certificate()).isEqualTo(c0);
        advance(Duration.ofSeconds(5));
        assertThat(reload.check()).isEqualTo(Outcome.SWITCHED);
        assertThat(tls.certificate()).isEqualTo(c1);
        assertThat(reload.check()).isEqualTo(Outcome.UNCHANGED);

        advance(Duration.ofSeconds(60)); // 270 s: c0 still valid, still in the bundle
        leader.publishCaBundle(APISERVICE);
        assertThat(bundle()).containsExactly(c1, c0);
        advance(Duration.ofSeconds(31)); // 301 s: c0 expired, dropped
        leader.publishCaBundle(APISERVICE);
        assertThat(bundle()).containsExactly(c1);
    }

    @Test
    void aSecretReplacedBySomeoneElseIsServedOnceTheBundleTrustsItAndTheOldStaysPublished() {
        Served served = publishedAndServed();
        X509Certificate c0 = served.certificate();
        ServingTls tls = served.tls();
        ServingCertificateReload reload = served.reload();

        // an administrator (or cert-manager) writes a certificate from their own CA, marked as not ours to renew
        Pki.Issued corp = corpCertificate(corpCa());
        writeExternal(corp);

        assertThat(reload.check()).isEqualTo(Outcome.WAITING_FOR_CA_BUNDLE);
        assertThat(tls.certificate()).isEqualTo(c0);
        leader.publishCaBundle(APISERVICE);
        assertThat(bundle()).as("the new certificate, and the one replicas may still serve").containsExactly(corp.certificate(), c0);
        assertThat(reload.check()).isEqualTo(Outcome.WAITING_FOR_CA_BUNDLE); // trusted from now: the grace starts
        advance(Duration.ofSeconds(5));
        assertThat(reload.check()).isEqualTo(Outcome.SWITCHED);
        assertThat(tls.certificate()).isEqualTo(corp.certificate());

        // never renewed by us, however old it gets
        advance(Duration.ofDays(9));
        assertThat(leader.renewIfDue()).isFalse();
        assertThat(leaf(replica.read())).isEqualTo(corp.certificate());
        // c0 expired long ago: gone from the bundle
        leader.publishCaBundle(APISERVICE);
        assertThat(bundle()).containsExactly(corp.certificate());
    }

    /**
     * The leader that published a Secret replaced by someone else, together with the certificate replicas may still
     * serve, loses the Lease (or restarts) before that one expires: the next leader's publish keeps it too. It is
     * what the APIService holds that tells, not a record of the process that published it.
     */
    @Test
    void aCertificateAnotherLeaderKeptPublishedStaysWhenTheNextLeaderPublishes() {
        Served served = publishedAndServed();
        X509Certificate c0 = served.certificate();
        ServingTls tls = served.tls();
        ServingCertificateReload reload = served.reload();
        Pki.Issued corp = corpCertificate(corpCa());
        writeExternal(corp);
        leader.publishCaBundle(APISERVICE);
        assertThat(bundle()).containsExactly(corp.certificate(), c0);
        assertThat(reload.check()).isEqualTo(Outcome.WAITING_FOR_CA_BUNDLE);
        assertThat(tls.certificate()).as("the replica serves the old certificate during the grace").isEqualTo(c0);

        ServingCertificate newLeader = new ServingCertificate(cluster.client, TestCluster.NS, SECRET, "playpen-operator",
                clock, new ApiCallCounter(), RENEWAL);
        newLeader.publishCaBundle(APISERVICE);
        assertThat(bundle()).as("the certificate the replica still serves stays trusted")
                .containsExactly(corp.certificate(), c0);

        advance(Duration.ofDays(9)); // c0 expired
        newLeader.publishCaBundle(APISERVICE);
        assertThat(bundle()).containsExactly(corp.certificate());
    }

    /** A replica serving the leader's first certificate, which the published caBundle trusts. */
    record Served(X509Certificate certificate, ServingTls tls, ServingCertificateReload reload) {
    }

    Served publishedAndServed() {
        createApiService();
        ServingCertificate.Material first = leader.ensure();
        leader.publishCaBundle(APISERVICE);
        ServingTls tls = new ServingTls(first.certificatePem(), first.privateKeyPem(), List::of);
        return new Served(leaf(first), tls,
                new ServingCertificateReload(replica, tls, APISERVICE, clock, RENEWAL.publishGrace()));
    }

    /** An administrator's own CA. */
    Pki.Issued corpCa() {
        return Pki.selfSigned(Pki.Subject.cn("corp-ca"), Pki.Usage.CA, clock.now.minusSeconds(60), Duration.ofDays(30));
    }

    /** A serving certificate from {@code ca}, valid for ten days. */
    Pki.Issued corpCertificate(Pki.Issued ca) {
        return Pki.issue(ca, new Pki.Subject("playpen-operator", List.of(), List.of("playpen-operator.playpen.svc"),
                List.of()), Pki.Usage.SERVER, clock.now.minusSeconds(60), Duration.ofDays(10));
    }

    /** The serving Secret as an administrator (or cert-manager) writes it: their certificate, not ours to renew. */
    void writeExternal(Pki.Issued cert) {
        cluster.client.secrets().inNamespace(TestCluster.NS).resource(new SecretBuilder().withNewMetadata().withName(SECRET)
                .withNamespace(TestCluster.NS).addToAnnotations(ServingCertificate.ORIGIN_ANNOTATION, "external").endMetadata()
                .withType("kubernetes.io/tls").withData(Map.of("tls.crt", b64(cert.certificatePem()), "tls.key",
                        b64(cert.privateKeyPem())))
                .build()).update();
    }

    @Test
    void aCertificateReplacedWhileItsGraceRunsGetsAGraceOfItsOwn() {
        Served served = publishedAndServed();
        X509Certificate c0 = served.certificate();
        ServingTls tls = served.tls();
        ServingCertificateReload reload = served.reload();
        assertThat(RENEWAL.publishGrace()).isEqualTo(Duration.ofSeconds(5));
        Pki.Issued ca = corpCa();
        Pki.Issued one = corpCertificate(ca);
        Pki.Issued two = corpCertificate(ca);

        writeExternal(one);
        leader.publishCaBundle(APISERVICE);
        assertThat(reload.check()).isEqualTo(Outcome.WAITING_FOR_CA_BUNDLE); // the first one's grace starts
        advance(Duration.ofSeconds(3));
        // replaced before its grace ended: the aggregator has known the second one for no time at all
        writeExternal(two);
        leader.publishCaBundle(APISERVICE);
        assertThat(reload.check()).isEqualTo(Outcome.WAITING_FOR_CA_BUNDLE);
        advance(Duration.ofSeconds(3)); // past the first one's grace, not the second one's
        assertThat(reload.check()).isEqualTo(Outcome.WAITING_FOR_CA_BUNDLE);
        assertThat(tls.certificate()).isEqualTo(c0);
        advance(Duration.ofSeconds(2));
        assertThat(reload.check()).isEqualTo(Outcome.SWITCHED);
        assertThat(tls.certificate()).isEqualTo(two.certificate());
    }

    @Test
    void aBundleHoldingTheIssuingCaTrustsTheNewCertificate() {
        Pki.Issued ca = corpCa();
        Pki.Issued other = corpCa();
        Pki.Issued leafCert = Pki.issue(ca, Pki.Subject.cn("playpen-operator"), Pki.Usage.SERVER, clock.now, Duration.ofDays(1));
        assertThat(new ServingCertificate.Published(List.of(ca.certificate())).trusts(leafCert.certificate())).isTrue();
        assertThat(new ServingCertificate.Published(List.of(leafCert.certificate())).trusts(leafCert.certificate())).isTrue();
        // same issuer name, different key: not trusted
        assertThat(new ServingCertificate.Published(List.of(other.certificate())).trusts(leafCert.certificate())).isFalse();
        assertThat(new ServingCertificate.Published(List.of()).trusts(leafCert.certificate())).isFalse();
        // a chain served with its intermediate: a bundle holding the root trusts it
        Pki.Issued intermediate = Pki.issue(ca, Pki.Subject.cn("corp-intermediate"), Pki.Usage.CA, clock.now, Duration.ofDays(2));
        Pki.Issued viaIntermediate = Pki.issue(intermediate, Pki.Subject.cn("playpen-operator"), Pki.Usage.SERVER, clock.now,
                Duration.ofDays(1));
        List<X509Certificate> chain = List.of(viaIntermediate.certificate(), intermediate.certificate());
        assertThat(new ServingCertificate.Published(List.of(ca.certificate())).trusts(chain)).isTrue();
        assertThat(new ServingCertificate.Published(List.of(ca.certificate())).trusts(viaIntermediate.certificate())).isFalse();
        assertThat(new ServingCertificate.Published(List.of(other.certificate())).trusts(chain)).isFalse();
    }

    @Test
    void withoutAnApiServiceTheNewCertificateIsServedAtOnce() {
        ServingCertificate.Material first = leader.ensure();
        ServingTls tls = new ServingTls(first.certificatePem(), first.privateKeyPem(), List::of);
        ServingCertificateReload reload = new ServingCertificateReload(replica, tls, APISERVICE, clock, RENEWAL.publishGrace());
        assertThat(reload.lastSwitch()).isNull();
        advance(Duration.ofSeconds(201));
        assertThat(leader.renewIfDue()).isTrue();
        assertThat(reload.check()).isEqualTo(Outcome.SWITCHED);
        assertThat(tls.certificate()).isEqualTo(leaf(replica.read()));
        assertThat(reload.lastSwitch()).isEqualTo(clock.now);
        assertThat(reload.servedTrust()).as("nobody verifies it").isEqualTo(Trust.NO_API_SERVICE);
    }

    /**
     * A replica that starts serves the Secret's certificate: it learns whether the caBundle trusts it at start, on each
     * check until it does (from the leader's publish too), and reads the APIService no more once it does.
     */
    @Test
    void theServedCertificateIsJudgedByTheCaBundleUntilItTrustsIt() {
        createApiService();
        ServingCertificate.Material first = leader.ensure();
        ApiCallCounter calls = new ApiCallCounter();
        ServingCertificate counted = new ServingCertificate(cluster.client, TestCluster.NS, SECRET, "playpen-operator",
                clock, calls, RENEWAL);
        ServingTls tls = new ServingTls(first.certificatePem(), first.privateKeyPem(), List::of);
        ServingCertificateReload reload = new ServingCertificateReload(counted, tls, APISERVICE, clock,
                RENEWAL.publishGrace());
        assertThat(reload.servedTrust()).isEqualTo(Trust.NOT_READ);
        assertThat(reload.checkServedTrust()).as("the caBundle is empty").isEqualTo(Trust.NOT_TRUSTED);
        assertThat(reload.check()).isEqualTo(Outcome.UNCHANGED);
        assertThat(reload.servedTrust()).isEqualTo(Trust.NOT_TRUSTED);
        assertThat(calls.get(KubeApiCall.API_SERVICES_GET)).isEqualTo(2);

        reload.observed(leader.publishCaBundle(APISERVICE, (ServingCertificate.Material) null));
        assertThat(reload.servedTrust()).as("as the leader's publish left it").isEqualTo(Trust.TRUSTED);
        assertThat(reload.check()).isEqualTo(Outcome.UNCHANGED);
        assertThat(reload.checkServedTrust()).isEqualTo(Trust.TRUSTED);
        assertThat(calls.get(KubeApiCall.API_SERVICES_GET)).as("not read once it trusts it").isEqualTo(2);

        // a caBundle that never held it, read by a check
        ServingCertificate.Material other = new ServingCertificate(cluster.client, TestCluster.NS, "other-tls",
                "playpen-operator", clock, new ApiCallCounter(), RENEWAL).ensure();
        ServingCertificateReload second = new ServingCertificateReload(counted,
                new ServingTls(other.certificatePem(), other.privateKeyPem(), List::of), APISERVICE, clock,
                RENEWAL.publishGrace());
        assertThat(second.check()).as("the Secret holds another certificate").isEqualTo(Outcome.WAITING_FOR_CA_BUNDLE);
        assertThat(second.servedTrust()).isEqualTo(Trust.NOT_TRUSTED);
    }

    @Test
    void aMissingSecretOrOneWithoutACertificateKeepsTheServedOne() {
        createApiService();
        ServingCertificate.Material first = leader.ensure();
        ServingTls tls = new ServingTls(first.certificatePem(), first.privateKeyPem(), List::of);
        ServingCertificateReload reload = new ServingCertificateReload(replica, tls, APISERVICE, clock, Duration.ZERO);
        Secret s = secret();
        s.setData(Map.of("tls.crt", b64("not a certificate"), "tls.key", s.getData().get("tls.key")));
        cluster.client.secrets().inNamespace(TestCluster.NS).resource(s).update();
        assertThat(reload.check()).isEqualTo(Outcome.INVALID);
        assertThat(tls.certificate()).isEqualTo(leaf(first));
        cluster.client.secrets().inNamespace(TestCluster.NS).withName(SECRET).delete();
        assertThat(reload.check()).isEqualTo(Outcome.NO_SECRET);
        assertThat(tls.certificate()).isEqualTo(leaf(first));
        assertThat(reload.lastSwitch()).isNull();
    }

    @Test
    void anExpiredServedCertificateIsReplacedEvenBeforeTheBundleTrustsTheNewOne() {
        createApiService();
        ServingCertificate.Material first = leader.ensure();
        leader.publishCaBundle(APISERVICE);
        ServingTls tls = new ServingTls(first.certificatePem(), first.privateKeyPem(), List::of);
        ServingCertificateReload reload = new ServingCertificateReload(replica, tls, APISERVICE, clock, RENEWAL.publishGrace());
        advance(Duration.ofSeconds(301)); // the leader was gone all along: nobody renewed or published
        assertThat(leader.renewIfDue()).isTrue();
        assertThat(reload.check()).isEqualTo(Outcome.SWITCHED);
        assertThat(reload.servedTrust()).as("served before the caBundle trusts it").isEqualTo(Trust.NOT_TRUSTED);
    }

    @Test
    void aKeyThatDoesNotMatchTheCertificateIsNotServed() {
        createApiService();
        ServingCertificate.Material first = leader.ensure();
        ServingTls tls = new ServingTls(first.certificatePem(), first.privateKeyPem(), List::of);
        ServingCertificateReload reload = new ServingCertificateReload(replica, tls, APISERVICE, clock, Duration.ZERO);
        Pki.Issued a = Pki.selfSigned(Pki.Subject.cn("playpen-operator"), Pki.Usage.SERVER, clock.now, Duration.ofDays(1));
        Pki.Issued b = Pki.selfSigned(Pki.Subject.cn("playpen-operator"), Pki.Usage.SERVER, clock.now, Duration.ofDays(1));
        Secret s = secret();
        s.setData(Map.of("tls.crt", b64(a.certificatePem()), "tls.key", b64(b.privateKeyPem())));
        cluster.client.secrets().inNamespace(TestCluster.NS).resource(s).update();
        leader.publishCaBundle(APISERVICE);
        assertThat(reload.check()).isEqualTo(Outcome.INVALID);
        assertThat(tls.certificate()).isEqualTo(leaf(first));
    }

    @Test
    void renewalForbiddenByRbacIsALoggedNoOp() {
        ServingCertificate.Material first = leader.ensure();
        cluster.forbidden = k -> k.startsWith("PUT /api/v1/namespaces/playpen/secrets/");
        advance(Duration.ofSeconds(201));
        assertThat(leader.renewIfDue()).isFalse();
        assertThat(leaf(replica.read())).isEqualTo(leaf(first));
    }

    @Test
    void apiFailuresLeaveTheServedCertificateAndTheNextPassDecidesAfresh() {
        createApiService();
        ServingCertificate.Material first = leader.ensure();
        leader.publishCaBundle(APISERVICE);
        ServingTls tls = new ServingTls(first.certificatePem(), first.privateKeyPem(), List::of);
        ServingCertificateReload reload = new ServingCertificateReload(replica, tls, APISERVICE, clock, Duration.ZERO);
        advance(Duration.ofSeconds(201));
        // the write lands but its answer is lost: a 500 after the write
        cluster.failAfterWrite = k -> k.startsWith("PUT /api/v1/namespaces/playpen/secrets/");
        assertThat(leader.renewIfDue()).isFalse();
        cluster.failAfterWrite = k -> false;
        X509Certificate landed = leaf(replica.read());
        assertThat(landed).as("the write landed").isNotEqualTo(leaf(first));
        assertThat(leader.renewIfDue()).as("not renewed twice").isFalse();
        // reads failing: nothing changes, no exception reaches the route
        cluster.forbidden = k -> k.startsWith("GET /api/v1/namespaces/playpen/secrets/");
        assertThat(reload.check()).isEqualTo(Outcome.READ_FAILED);
        assertThat(leader.renewIfDue()).isFalse();
        cluster.forbidden = k -> false;
        leader.publishCaBundle(APISERVICE);
        assertThat(bundle()).containsExactly(landed, leaf(first));
        assertThat(reload.check()).isEqualTo(Outcome.SWITCHED);
        assertThat(tls.certificate()).isEqualTo(landed);
    }

    /**
     * A former leader whose ca-bundle pass read the Secret just before its Lease ran out (a GC pause, a partition)
     * publishes after the new leader has renewed, published the new certificate and replicas serve it: the bundle it
     * made from that old read must not drop the certificate replicas now serve.
     */
    @Test
    void aFormerLeadersPublishFromAnOlderReadOfTheSecretKeepsTheRenewedCertificate() {
        createApiService();
        ServingCertificate.Material first = leader.ensure();
        leader.publishCaBundle(APISERVICE);
        X509Certificate c0 = leaf(first);
        ServingTls tls = new ServingTls(first.certificatePem(), first.privateKeyPem(), List::of);
        ServingCertificateReload reload = new ServingCertificateReload(replica, tls, APISERVICE, clock, RENEWAL.publishGrace());

        advance(Duration.ofSeconds(199)); // not due yet: the old leader's pass reads the Secret, then stalls
        ServingCertificate.Material stale = leader.renewIfDueAndRead();
        assertThat(leaf(stale)).isEqualTo(c0);

        // its Lease runs out; the new leader renews and publishes, and the replica switches after the grace
        ServingCertificate newLeader = new ServingCertificate(cluster.client, TestCluster.NS, SECRET, "playpen-operator",
                clock, new ApiCallCounter(), RENEWAL);
        advance(Duration.ofSeconds(6));
        ServingCertificate.Material renewed = newLeader.renewIfDueAndRead();
        X509Certificate c1 = leaf(renewed);
        assertThat(c1).isNotEqualTo(c0);
        newLeader.publishCaBundle(APISERVICE, renewed);
        assertThat(bundle()).containsExactly(c1, c0);
        assertThat(reload.check()).isEqualTo(Outcome.WAITING_FOR_CA_BUNDLE);
        advance(Duration.ofSeconds(5));
        assertThat(reload.check()).isEqualTo(Outcome.SWITCHED);
        assertThat(tls.certificate()).isEqualTo(c1);

        // the old leader's stalled pass goes on with what it read
        leader.publishCaBundle(APISERVICE, stale);
        assertThat(bundle()).as("the certificate the replica serves stays trusted").contains(c1);
        assertThat(bundle()).containsExactly(c1, c0);
    }

    static String b64(String s) {
        return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }
}
