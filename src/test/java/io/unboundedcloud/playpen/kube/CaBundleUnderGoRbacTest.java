package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.Base64;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The Go operator's RBAC grants get and update on the APIService but not patch: a caBundle that must change is
 * then written with an update of the object read, keeping the rest of its spec.
 */
class CaBundleUnderGoRbacTest {
    static final String PATH = "/apis/apiregistration.k8s.io/v1/apiservices/" + KubeApiCall.API_SERVICE_NAME;

    TestCluster cluster;
    ServingCertificate serving;
    final ApiCallCounter calls = new ApiCallCounter();

    @BeforeEach
    void up() {
        cluster = TestCluster.start();
        GenericKubernetesResource svc = new GenericKubernetesResourceBuilder().withApiVersion("apiregistration.k8s.io/v1")
                .withKind("APIService").withNewMetadata().withName(KubeApiCall.API_SERVICE_NAME).endMetadata()
                .addToAdditionalProperties("spec", Map.of("group", "playpen.unbounded-cloud.io", "version", "v1alpha1",
                        "groupPriorityMinimum", 1000, "caBundle", "b2xk",
                        "service", Map.of("namespace", "playpen", "name", "playpen-operator")))
                .build();
        apiServices().resource(svc).create();
        serving = new ServingCertificate(cluster.client, "playpen", "playpen-operator-tls", "playpen-operator",
                Clock.systemUTC(), calls);
    }

    @AfterEach
    void down() {
        cluster.close();
    }

    io.fabric8.kubernetes.client.dsl.NonNamespaceOperation<GenericKubernetesResource,
            io.fabric8.kubernetes.api.model.GenericKubernetesResourceList,
            io.fabric8.kubernetes.client.dsl.Resource<GenericKubernetesResource>> apiServices() {
        return cluster.client.genericKubernetesResources("apiregistration.k8s.io/v1", "APIService");
    }

    @SuppressWarnings("unchecked")
    Map<String, Object> spec() {
        return (Map<String, Object>) apiServices().withName(KubeApiCall.API_SERVICE_NAME).get().getAdditionalProperties()
                .get("spec");
    }

    int requests(String method) {
        return cluster.requestCount(k -> k.equals(method + " " + PATH));
    }

    @Test
    void patchForbiddenFallsBackToUpdateKeepingTheSpec() {
        cluster.forbidden = k -> k.equals("PATCH " + PATH);
        ServingCertificate.Material m = serving.ensure();
        serving.publishCaBundle(KubeApiCall.API_SERVICE_NAME, m.certificatePem());
        Map<String, Object> spec = spec();
        assertThat(spec.get("caBundle"))
                .isEqualTo(Base64.getEncoder().encodeToString(m.certificatePem().getBytes(StandardCharsets.UTF_8)));
        assertThat(spec).containsEntry("group", "playpen.unbounded-cloud.io").containsEntry("groupPriorityMinimum", 1000)
                .containsEntry("service", Map.of("namespace", "playpen", "name", "playpen-operator"));
        assertThat(requests("PATCH")).isEqualTo(1);
        assertThat(requests("PUT")).isEqualTo(1);
        // the API calls counted are the ones made
        assertThat(calls.get(KubeApiCall.API_SERVICES_PATCH)).isEqualTo(1);
        assertThat(calls.get(KubeApiCall.API_SERVICES_UPDATE)).isEqualTo(1);
    }

    @Test
    void withPatchAllowedOnePatchAndNoUpdate() {
        ServingCertificate.Material m = serving.ensure();
        serving.publishCaBundle(KubeApiCall.API_SERVICE_NAME, m.certificatePem());
        assertThat(spec().get("caBundle"))
                .isEqualTo(Base64.getEncoder().encodeToString(m.certificatePem().getBytes(StandardCharsets.UTF_8)));
        assertThat(requests("PATCH")).isEqualTo(1);
        assertThat(requests("PUT")).isZero();
        assertThat(calls.get(KubeApiCall.API_SERVICES_UPDATE)).isZero();
    }
}
