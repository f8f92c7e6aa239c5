package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.Base64;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.coordination.v1.LeaseBuilder;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.kube.KubeApiCall;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * A replica that starts serves the Secret's certificate at once; while the APIService's caBundle does not trust it
 * (the Secret was replaced and the leader has not published yet), kube-apiserver could not verify it, so the replica
 * is not ready, says what it waits for, and is ready once the caBundle trusts it. A replica that leads publishes the
 * caBundle itself and does not wait for anyone.
 */
class ServingCertificateReadinessRouteTest {

    static void createApiService(TestCluster cluster, String caBundlePem) {
        cluster.client.genericKubernetesResources("apiregistration.k8s.io/v1", "APIService")
                .resource(new GenericKubernetesResourceBuilder().withApiVersion("apiregistration.k8s.io/v1")
                        .withKind("APIService").withNewMetadata().withName(KubeApiCall.API_SERVICE_NAME).endMetadata()
                        .addToAdditionalProperties("spec", Map.of("group", "playpen.unbounded-cloud.io",
                                "version", "v1alpha1", "caBundle", b64(caBundlePem)))
                        .build())
                .create();
    }

    static String b64(String s) {
        return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void aReplicaThatDoesNotLeadIsNotReadyUntilTheCaBundleTrustsTheCertificateItServes() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            // the caBundle trusts the certificate the Secret held before it was replaced (deleted here: the replica
            // makes a new one), and another replica leads, for longer than the test
            Pki.Issued before = Pki.selfSigned(Pki.Subject.cn("playpen-operator"), Pki.Usage.SERVER,
                    Instant.now().minusSeconds(60), Duration.ofDays(1));
            createApiService(cluster, before.certificatePem());
            ZonedDateTime now = ZonedDateTime.now(ZoneOffset.UTC);
            cluster.client.leases().inNamespace(TestCluster.NS).resource(new LeaseBuilder().withNewMetadata()
                    .withName("playpen-operator").withNamespace(TestCluster.NS).endMetadata().withNewSpec()
                    .withHolderIdentity("playpen-operator-elsewhere").withLeaseDurationSeconds(3600)
                    .withAcquireTime(now).withRenewTime(now).endSpec().build()).create();
            try (OperatorApp app = OperatorHarness.startOnFreePort(port -> new OperatorApp(OperatorConfig.parse(
                    "--listen-addr=127.0.0.1:" + port, "--leader-elect=true", "--leader-election-lease-duration=1h",
                    "--management-addr=", "--runner-amd64-count=0", "--runner-arm64-count=0",
                    "--serving-cert-check-interval=200ms"), cluster.client, Clock.systemUTC(), Map.of())).app()) {
                OperatorHarness.awaitTrue(() -> app.podCache().hasSynced() && app.nodeCache().hasSynced()
                        && app.podCache().isWatching() && app.nodeCache().isWatching(), Duration.ofSeconds(60),
                        "caches synced and watching");
                assertThat(app.leaderElection().isLeader()).as("another replica leads").isFalse();
                assertThat(app.notReady()).as("why the replica is not ready")
                        .startsWith("not ready: the caBundle of APIService " + KubeApiCall.API_SERVICE_NAME
                                + " does not trust the serving certificate this replica serves")
                        .contains("kube-apiserver could not verify it", "the leader publishes it",
                                "--serving-cert-check-interval", "cannot publish the APIService caBundle");
                assertThat(app.ready()).isFalse();

                // the leader publishes the Secret's certificate, keeping the one it replaced
                String served = new String(Base64.getDecoder().decode(cluster.client.secrets()
                        .inNamespace(TestCluster.NS).withName("playpen-operator-tls").get().getData().get("tls.crt")),
                        StandardCharsets.UTF_8);
                cluster.client.genericKubernetesResources("apiregistration.k8s.io/v1", "APIService")
                        .withName(KubeApiCall.API_SERVICE_NAME).edit(svc -> {
                            @SuppressWarnings("unchecked")
                            Map<String, Object> spec = new java.util.LinkedHashMap<>(
                                    (Map<String, Object>) svc.getAdditionalProperties().get("spec"));
                            spec.put("caBundle", b64(served + before.certificatePem()));
                            svc.getAdditionalProperties().put("spec", spec);
                            return svc;
                        });
                OperatorHarness.awaitTrue(app::ready, Duration.ofSeconds(60),
                        "ready once the caBundle trusts the served certificate");
                assertThat(app.leaderElection().isLeader()).isFalse();
            }
        }
    }

    /**
     * The replica that leads publishes the caBundle for the certificate it serves and is then ready, without waiting
     * for a check of its own: the check interval here is longer than the test.
     */
    @Test
    void aReplicaThatLeadsIsReadyOnceItPublishedTheCertificateItServes() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            createApiService(cluster, "");
            try (OperatorHarness op = new OperatorHarness(cluster, "--serving-cert-check-interval=10m")) {
                assertThat(op.app.ready()).isTrue();
                assertThat(ServingCertRotationRouteTest.bundle(cluster))
                        .contains(ServingCertRotationRouteTest.secretLeaf(cluster));
            }
        }
    }
}
