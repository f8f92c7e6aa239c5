package io.unboundedcloud.playpen.kube;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * The serving certificate (SPEC A9): read from the TLS Secret, or created self-signed when absent (replicas
 * racing to create it all end up serving the winner's), and published as the APIService caBundle.
 */
public final class ServingCertificate {
    private static final Logger LOG = LoggerFactory.getLogger(ServingCertificate.class);

    private final KubernetesClient client;
    private final String namespace;
    private final String secretName;
    private final String serviceName;
    private final Clock clock;
    private final ApiCallCounter calls;

    public ServingCertificate(KubernetesClient client, String namespace, String secretName, String serviceName, Clock clock,
            ApiCallCounter calls) {
        this.client = client;
        this.namespace = namespace;
        this.secretName = secretName;
        this.serviceName = serviceName;
        this.clock = clock;
        this.calls = calls;
    }

    /** The certificate chain PEM and key to serve with. */
    public record Material(String certificatePem, String privateKeyPem) {
    }

    public Material ensure() {
        calls.count(KubeApiCall.SECRETS_GET);
        Secret existing = client.secrets().inNamespace(namespace).withName(secretName).get();
        if (existing != null) {
            return fromSecret(existing);
        }
        String svc = serviceName;
        Pki.Issued issued = Pki.selfSigned(new Pki.Subject(svc, List.of(),
                List.of(svc, svc + "." + namespace, svc + "." + namespace + ".svc",
                        svc + "." + namespace + ".svc.cluster.local", "localhost"),
                List.of()), Pki.Usage.SERVER, clock.instant().minusSeconds(60), Duration.ofDays(365));
        Secret secret = new SecretBuilder().withNewMetadata().withName(secretName).withNamespace(namespace)
                .addToLabels("app.kubernetes.io/name", "playpen-operator").endMetadata()
                .withType("kubernetes.io/tls")
                .withData(Map.of("tls.crt", b64(issued.certificatePem()), "tls.key", b64(issued.privateKeyPem())))
                .build();
        try {
            calls.count(KubeApiCall.SECRETS_CREATE);
            client.secrets().inNamespace(namespace).resource(secret).create();
            LOG.info("created self-signed serving certificate secret={}/{} cn={}", namespace, secretName, svc);
            return new Material(issued.certificatePem(), issued.privateKeyPem());
        } catch (KubernetesClientException e) {
            if (e.getCode() != 409) {
                throw e;
            }
            // another replica created it first: serve theirs so every replica presents the same certificate
            calls.count(KubeApiCall.SECRETS_GET);
            return fromSecret(client.secrets().inNamespace(namespace).withName(secretName).get());
        }
    }

    private Material fromSecret(Secret s) {
        Map<String, String> data = s.getData() == null ? Map.of() : s.getData();
        String crt = data.get("tls.crt");
        String key = data.get("tls.key");
        if (crt == null || key == null) {
            throw new IllegalStateException("secret " + namespace + "/" + secretName + " lacks tls.crt or tls.key");
        }
        return new Material(unb64(crt), unb64(key));
    }

    /** Writes the certificate into the APIService caBundle when the APIService exists and differs. */
    public void publishCaBundle(String apiServiceName, String certificatePem) {
        String want = b64(certificatePem);
        GenericKubernetesResource svc;
        try {
            calls.count(KubeApiCall.API_SERVICES_GET);
            svc = client.genericKubernetesResources("apiregistration.k8s.io/v1", "APIService").withName(apiServiceName).get();
        } catch (KubernetesClientException e) {
            LOG.warn("cannot read APIService {}: {}", apiServiceName, e.getMessage());
            return;
        }
        if (svc == null) {
            LOG.warn("APIService {} not found; caBundle not published", apiServiceName);
            return;
        }
        Object spec = svc.getAdditionalProperties().get("spec");
        Object current = spec instanceof Map<?, ?> m ? m.get("caBundle") : null;
        if (want.equals(current)) {
            return;
        }
        try {
            calls.count(KubeApiCall.API_SERVICES_PATCH);
            client.genericKubernetesResources("apiregistration.k8s.io/v1", "APIService").withName(apiServiceName)
                    .patch(PatchContext.of(PatchType.JSON_MERGE), Json.write(Map.of("spec", Map.of("caBundle", want))));
        } catch (KubernetesClientException e) {
            if (e.getCode() != 403) {
                throw e;
            }
            // the Go operator's RBAC grants get and update on the APIService, not patch: write the object we read
            // (its resourceVersion is the precondition), as the Go operator does
            @SuppressWarnings("unchecked")
            Map<String, Object> specMap = new java.util.LinkedHashMap<>(spec instanceof Map<?, ?> m2
                    ? (Map<String, Object>) m2 : Map.of());
            specMap.put("caBundle", want);
            svc.getAdditionalProperties().put("spec", specMap);
            calls.count(KubeApiCall.API_SERVICES_UPDATE);
            client.genericKubernetesResources("apiregistration.k8s.io/v1", "APIService").resource(svc).update();
        }
        LOG.info("published serving certificate as caBundle of APIService {}", apiServiceName);
    }

    private static String b64(String s) {
        return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    private static String unb64(String s) {
        return new String(Base64.getDecoder().decode(s), StandardCharsets.UTF_8);
    }
}
