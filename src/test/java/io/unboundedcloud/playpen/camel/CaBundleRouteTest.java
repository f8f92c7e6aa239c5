package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.Secret;
import io.unboundedcloud.playpen.kube.KubeApiCall;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** The serving certificate is published as the APIService caBundle, and kept there. */
class CaBundleRouteTest {

    static GenericKubernetesResource apiService(TestCluster cluster) {
        return cluster.client.genericKubernetesResources("apiregistration.k8s.io/v1", "APIService")
                .withName(KubeApiCall.API_SERVICE_NAME).get();
    }

    static String caBundle(TestCluster cluster) {
        GenericKubernetesResource svc = apiService(cluster);
        Object spec = svc == null ? null : svc.getAdditionalProperties().get("spec");
        return spec instanceof Map<?, ?> m && m.get("caBundle") instanceof String s ? s : "";
    }

    static void createApiService(TestCluster cluster) {
        cluster.client.genericKubernetesResources("apiregistration.k8s.io/v1", "APIService")
                .resource(new GenericKubernetesResourceBuilder().withApiVersion("apiregistration.k8s.io/v1")
                        .withKind("APIService").withNewMetadata().withName(KubeApiCall.API_SERVICE_NAME).endMetadata()
                        .addToAdditionalProperties("spec", Map.of("group", "playpen.unbounded-cloud.io",
                                "version", "v1alpha1", "caBundle", ""))
                        .build())
                .create();
    }

    @Test
    void publishedRightAfterBecomingLeaderNotAtTheNextInterval() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            createApiService(cluster);
            // the interval is 10 minutes: only the publish on leadership (or the route's very first tick) can do it
            try (OperatorHarness op = new OperatorHarness(cluster, "--reconcile-interval=10m")) {
                OperatorHarness.awaitTrue(() -> !caBundle(cluster).isEmpty(), Duration.ofSeconds(60), "caBundle published");
                Secret tls = cluster.client.secrets().inNamespace("playpen").list().getItems().stream()
                        .filter(s -> "kubernetes.io/tls".equals(s.getType())).findFirst().orElseThrow();
                String servingPem = new String(Base64.getDecoder().decode(tls.getData().get("tls.crt")), StandardCharsets.UTF_8);
                assertThat(new String(Base64.getDecoder().decode(caBundle(cluster)), StandardCharsets.UTF_8))
                        .isEqualTo(servingPem);
            }
        }
    }

    @Test
    void anApiServiceCreatedLaterGetsTheBundleFromTheRoute() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                // the route's timer ticks every --serving-cert-check-interval: at its 10 s default the next tick after
                // the APIService appears could come just as the wait below ends
                OperatorHarness op = new OperatorHarness(cluster, "--serving-cert-check-interval=1s")) {
            OperatorHarness.awaitTrue(() -> op.app.camelContext().getRouteController().getRouteStatus("ca-bundle")
                    .isStarted(), Duration.ofSeconds(60), "ca-bundle route running");
            createApiService(cluster);
            OperatorHarness.awaitTrue(() -> !caBundle(cluster).isEmpty(), Duration.ofSeconds(60), "caBundle published");
        }
    }
}
