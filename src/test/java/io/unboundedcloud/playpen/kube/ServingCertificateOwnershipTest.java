package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.unboundedcloud.playpen.support.MutableClock;
import io.unboundedcloud.playpen.support.TestCluster;
import io.unboundedcloud.playpen.tls.CertificateRenewal;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * Whose serving certificate this operator creates, serves and renews: the Secret it creates (what it holds and
 * for which names), the one another replica created first, a Secret the Go operator made (self-signed for the
 * service name, no annotation: renewed), and certificates supplied by someone else (signed by another CA, another
 * name, or the annotation set to anything but self-signed: never renewed). Also what the caBundle holds and when it
 * is written, and the API calls each step counts.
 */
class ServingCertificateOwnershipTest {
    static final String SECRET = ServingCertificateRenewalTest.SECRET;
    static final String SERVICE = "playpen-operator";
    static final String APISERVICE = ServingCertificateRenewalTest.APISERVICE;
    /** 300 s lifetime, renewed after 200 s. */
    static final CertificateRenewal RENEWAL = ServingCertificateRenewalTest.RENEWAL;

    TestCluster cluster;
    MutableClock clock;
    ApiCallCounter calls;
    ServingCertificate certs;

    @BeforeEach
    void up() {
        cluster = TestCluster.start();
        clock = new MutableClock(Instant.now());
        calls = new ApiCallCounter();
        certs = new ServingCertificate(cluster.client, TestCluster.NS, SECRET, SERVICE, clock, calls, RENEWAL);
    }

    @AfterEach
    void down() {
        cluster.close();
    }

    Secret secret() {
        return cluster.client.secrets().inNamespace(TestCluster.NS).withName(SECRET).get();
    }

    static String unb64(String s) {
        return new String(Base64.getDecoder().decode(s), StandardCharsets.UTF_8);
    }

    /** A Secret made by someone else: {@code issued} as tls.crt/tls.key, with this origin annotation (null: none). */
    void supplied(Pki.Issued issued, String origin) {
        SecretBuilder b = new SecretBuilder().withNewMetadata().withName(SECRET).withNamespace(TestCluster.NS)
                .endMetadata().withType("kubernetes.io/tls")
                .withData(Map.of("tls.crt", ServingCertificateRenewalTest.b64(issued.certificatePem()),
                        "tls.key", ServingCertificateRenewalTest.b64(issued.privateKeyPem())));
        if (origin != null) {
            b.editMetadata().addToAnnotations(ServingCertificate.ORIGIN_ANNOTATION, origin).endMetadata();
        }
        cluster.client.secrets().inNamespace(TestCluster.NS).resource(b.build()).create();
    }

    Pki.Issued selfSigned(String cn) {
        return Pki.selfSigned(Pki.Subject.cn(cn), Pki.Usage.SERVER, clock.now, Duration.ofSeconds(300));
    }

    void createApiService() {
        ServingCertificateRenewalTest.createApiService(cluster);
    }

    List<X509Certificate> bundle() {
        return ServingCertificateRenewalTest.bundle(cluster);
    }

    @Test
    void itCreatesASelfSignedCertificateForTheServiceAndAnotherReplicaServesTheSame() throws Exception {
        ServingCertificate.Material created = certs.ensure();
        assertThat(calls.get(KubeApiCall.SECRETS_GET)).isEqualTo(1);
        assertThat(calls.get(KubeApiCall.SECRETS_CREATE)).isEqualTo(1);
        Secret s = secret();
        assertThat(s.getType()).isEqualTo("kubernetes.io/tls");
        assertThat(s.getMetadata().getLabels()).containsEntry("app.kubernetes.io/name", "playpen-operator");
        assertThat(s.getMetadata().getAnnotations()).containsEntry(ServingCertificate.ORIGIN_ANNOTATION,
                ServingCertificate.SELF_SIGNED);
        assertThat(unb64(s.getData().get("tls.crt"))).isEqualTo(created.certificatePem());
        assertThat(unb64(s.getData().get("tls.key"))).isEqualTo(created.privateKeyPem());
        assertThat(created.previousCertificatePem()).isEmpty();
        X509Certificate leaf = created.leaf();
        assertThat(leaf.getSubjectX500Principal().getName()).isEqualTo("CN=" + SERVICE);
        leaf.verify(leaf.getPublicKey());
        List<String> names = new ArrayList<>();
        leaf.getSubjectAlternativeNames().forEach(n -> names.add(String.valueOf(n.get(1))));
        assertThat(names).containsExactlyInAnyOrder(SERVICE, SERVICE + "." + TestCluster.NS,
                SERVICE + "." + TestCluster.NS + ".svc", SERVICE + "." + TestCluster.NS + ".svc.cluster.local",
                "localhost");
        // a lifetime under an hour (a test's) is not back-dated; its length is the renewal's validity
        assertThat(leaf.getNotBefore().toInstant()).isEqualTo(clock.now.truncatedTo(java.time.temporal.ChronoUnit.SECONDS));
        assertThat(Duration.between(leaf.getNotBefore().toInstant(), leaf.getNotAfter().toInstant()))
                .isEqualTo(Duration.ofSeconds(300));

        // another replica finds it and serves the same, creating nothing
        ApiCallCounter otherCalls = new ApiCallCounter();
        ServingCertificate other = new ServingCertificate(cluster.client, TestCluster.NS, SECRET, SERVICE, clock,
                otherCalls, RENEWAL);
        ServingCertificate.Material found = other.ensure();
        assertThat(found.certificatePem()).isEqualTo(created.certificatePem());
        assertThat(found.privateKeyPem()).isEqualTo(created.privateKeyPem());
        assertThat(otherCalls.get(KubeApiCall.SECRETS_CREATE)).isZero();
        assertThat(other.read().certificatePem()).isEqualTo(created.certificatePem());
        assertThat(otherCalls.get(KubeApiCall.SECRETS_GET)).isEqualTo(2);
    }

    @Test
    void aLifetimeOfAnHourOrMoreIsBackDatedAMinuteAgainstClockSkew() {
        ServingCertificate hourly = new ServingCertificate(cluster.client, TestCluster.NS, SECRET, SERVICE, clock,
                calls, new CertificateRenewal(Duration.ofHours(1), 2.0 / 3, Duration.ofSeconds(1), Duration.ofSeconds(5)));
        X509Certificate leaf = hourly.ensure().leaf();
        Instant now = clock.now.truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
        assertThat(leaf.getNotBefore().toInstant()).isEqualTo(now.minusSeconds(60));
        assertThat(leaf.getNotAfter().toInstant()).isEqualTo(now.minusSeconds(60).plus(Duration.ofHours(1)));
    }

    @Test
    void aCreateThatLosesToAnotherReplicaServesTheirCertificate() {
        // the other replica's create landed after this one's read found nothing: this read answers 404 once, as it
        // did before their write, and this replica's create then meets theirs (409 AlreadyExists)
        Pki.Issued theirs = selfSigned(SERVICE);
        supplied(theirs, ServingCertificate.SELF_SIGNED);
        cluster.server.expect().get().withPath("/api/v1/namespaces/" + TestCluster.NS + "/secrets/" + SECRET)
                .andReturn(404, new io.fabric8.kubernetes.api.model.StatusBuilder().withCode(404)
                        .withReason("NotFound").build()).once();
        ServingCertificate.Material served = certs.ensure();
        assertThat(served.certificatePem()).isEqualTo(theirs.certificatePem());
        assertThat(served.privateKeyPem()).isEqualTo(theirs.privateKeyPem());
        assertThat(calls.get(KubeApiCall.SECRETS_GET)).isEqualTo(2);
        assertThat(calls.get(KubeApiCall.SECRETS_CREATE)).isEqualTo(1);
        assertThat(unb64(secret().getData().get("tls.crt"))).isEqualTo(theirs.certificatePem());
    }

    @Test
    void aCertificateTheGoOperatorMadeIsRenewedAndMarkedAsOurs() {
        Pki.Issued go = selfSigned(SERVICE);
        supplied(go, null);
        clock.now = clock.now.plusSeconds(199);
        assertThat(certs.renewIfDue()).isFalse();
        clock.now = clock.now.plusSeconds(2);
        assertThat(certs.renewIfDue()).isTrue();
        assertThat(calls.get(KubeApiCall.SECRETS_UPDATE)).isEqualTo(1);
        Secret s = secret();
        assertThat(s.getMetadata().getAnnotations()).containsEntry(ServingCertificate.ORIGIN_ANNOTATION,
                ServingCertificate.SELF_SIGNED);
        assertThat(unb64(s.getData().get(ServingCertificate.PREVIOUS_KEY))).isEqualTo(go.certificatePem());
        assertThat(unb64(s.getData().get("tls.crt"))).isNotEqualTo(go.certificatePem());
        ServingCertificate.Material renewed = certs.read();
        assertThat(renewed.previousCertificatePem()).isEqualTo(go.certificatePem());
        assertThat(renewed.leaf().getSubjectX500Principal().getName()).isEqualTo("CN=" + SERVICE);
    }

    @Test
    void certificatesSomeoneElseSuppliesAreNeverRenewed() {
        Pki.Issued ca = Pki.selfSigned(Pki.Subject.cn("company-ca"), Pki.Usage.CA, clock.now, Duration.ofDays(1));
        Map<String, Runnable> cases = new java.util.LinkedHashMap<>();
        cases.put("signed by another CA, for the service name", () -> supplied(
                Pki.issue(ca, Pki.Subject.cn(SERVICE), Pki.Usage.SERVER, clock.now, Duration.ofSeconds(300)), null));
        cases.put("self-signed for another name", () -> supplied(selfSigned("someone-else"), null));
        cases.put("marked external", () -> supplied(selfSigned(SERVICE), "external"));
        for (Map.Entry<String, Runnable> c : cases.entrySet()) {
            cluster.client.secrets().inNamespace(TestCluster.NS).withName(SECRET).delete();
            c.getValue().run();
            String before = secret().getData().get("tls.crt");
            clock.now = clock.now.plusSeconds(400); // past its renewal point, even past its end
            assertThat(certs.renewIfDue()).as(c.getKey()).isFalse();
            assertThat(certs.renewIfDueAndRead().certificatePem()).as(c.getKey()).isEqualTo(unb64(before));
            assertThat(secret().getData()).as(c.getKey()).containsEntry("tls.crt", before)
                    .doesNotContainKey(ServingCertificate.PREVIOUS_KEY);
        }
        assertThat(calls.get(KubeApiCall.SECRETS_UPDATE)).isZero();
        // no Secret at all: nothing to renew, nothing to read
        cluster.client.secrets().inNamespace(TestCluster.NS).withName(SECRET).delete();
        assertThat(certs.renewIfDue()).isFalse();
        assertThat(certs.renewIfDueAndRead()).isNull();
        assertThat(certs.read()).isNull();
    }

    @Test
    void theCaBundleHoldsTheServingCertificateAndTheOneItReplacedUntilItExpires() {
        // no Secret and no APIService: nothing is written, nothing fails
        certs.publishCaBundle(APISERVICE);
        assertThat(calls.get(KubeApiCall.API_SERVICES_GET)).isZero();
        ServingCertificate.Material first = certs.ensure();
        certs.publishCaBundle(APISERVICE);
        assertThat(calls.get(KubeApiCall.API_SERVICES_GET)).isEqualTo(1);
        assertThat(calls.get(KubeApiCall.API_SERVICES_PATCH)).isZero();
        assertThat(certs.readCaBundle(APISERVICE)).isInstanceOf(ServingCertificate.NoApiService.class);
        assertThat(calls.get(KubeApiCall.API_SERVICES_GET)).isEqualTo(2);

        createApiService();
        certs.publishCaBundle(APISERVICE);
        assertThat(bundle()).containsExactly(first.leaf());
        assertThat(calls.get(KubeApiCall.API_SERVICES_PATCH)).isEqualTo(1);
        // the same bundle again: read, not written
        certs.publishCaBundle(APISERVICE);
        assertThat(calls.get(KubeApiCall.API_SERVICES_GET)).isEqualTo(4);
        assertThat(calls.get(KubeApiCall.API_SERVICES_PATCH)).isEqualTo(1);
        assertThat(((ServingCertificate.Published) certs.readCaBundle(APISERVICE)).certificates())
                .containsExactly(first.leaf());
        assertThat(calls.get(KubeApiCall.API_SERVICES_GET)).isEqualTo(5);

        // renewed: the new certificate first, the replaced one kept while it is valid, once
        clock.now = clock.now.plusSeconds(201);
        ServingCertificate.Material renewed = certs.renewIfDueAndRead();
        assertThat(renewed.previousCertificatePem()).isEqualTo(first.certificatePem());
        certs.publishCaBundle(APISERVICE, renewed);
        assertThat(bundle()).containsExactly(renewed.leaf(), first.leaf());
        // a replica that never published before keeps the replaced one too: the Secret's previous.crt names it
        ServingCertificate fresh = new ServingCertificate(cluster.client, TestCluster.NS, SECRET, SERVICE, clock,
                new ApiCallCounter(), RENEWAL);
        cluster.client.genericKubernetesResources("apiregistration.k8s.io/v1", "APIService").withName(APISERVICE)
                .delete();
        createApiService();
        fresh.publishCaBundle(APISERVICE);
        assertThat(bundle()).containsExactly(renewed.leaf(), first.leaf());
        // once the replaced certificate has expired it leaves the bundle
        clock.now = clock.now.plusSeconds(100);
        certs.publishCaBundle(APISERVICE);
        assertThat(bundle()).containsExactly(renewed.leaf());
    }
}
