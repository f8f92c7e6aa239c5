package io.unboundedcloud.playpen.deploy;

import com.fasterxml.jackson.databind.BeanDescription;
import com.fasterxml.jackson.databind.DeserializationConfig;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.deser.BeanDeserializerBuilder;
import com.fasterxml.jackson.databind.deser.BeanDeserializerModifier;
import com.fasterxml.jackson.databind.module.SimpleModule;
import io.fabric8.kubernetes.api.model.APIService;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingAdmissionPolicy;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingAdmissionPolicyBinding;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.fabric8.kubernetes.api.model.rbac.ClusterRole;
import io.fabric8.kubernetes.api.model.rbac.ClusterRoleBinding;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.RoleBinding;
import java.io.IOException;
import java.util.Map;

/**
 * Reads rendered manifests into the fabric8 model and refuses anything the model does not know.
 * fabric8 classes keep unknown fields in {@code additionalProperties} through a Jackson any-setter; that
 * any-setter is switched off here so FAIL_ON_UNKNOWN_PROPERTIES really fails on a misspelt field.
 */
final class StrictModel {
    /** apiVersion + "/" + kind of every document deploy/ may contain; anything else is a test failure. */
    static final Map<String, Class<? extends HasMetadata>> KINDS = Map.ofEntries(
            Map.entry("v1/Namespace", Namespace.class),
            Map.entry("v1/ServiceAccount", ServiceAccount.class),
            Map.entry("v1/ConfigMap", ConfigMap.class),
            Map.entry("v1/Service", Service.class),
            Map.entry("apps/v1/Deployment", Deployment.class),
            Map.entry("policy/v1/PodDisruptionBudget", PodDisruptionBudget.class),
            Map.entry("rbac.authorization.k8s.io/v1/Role", Role.class),
            Map.entry("rbac.authorization.k8s.io/v1/ClusterRole", ClusterRole.class),
            Map.entry("rbac.authorization.k8s.io/v1/RoleBinding", RoleBinding.class),
            Map.entry("rbac.authorization.k8s.io/v1/ClusterRoleBinding", ClusterRoleBinding.class),
            Map.entry("apiregistration.k8s.io/v1/APIService", APIService.class),
            Map.entry("networking.k8s.io/v1/NetworkPolicy", NetworkPolicy.class),
            Map.entry("admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy", ValidatingAdmissionPolicy.class),
            Map.entry("admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding",
                    ValidatingAdmissionPolicyBinding.class));

    private static final ObjectMapper MAPPER = new ObjectMapper()
            .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, true)
            .configure(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES, true)
            .configure(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY, true)
            .registerModule(new SimpleModule("no-additional-properties").setDeserializerModifier(new BeanDeserializerModifier() {
                @Override
                public BeanDeserializerBuilder updateBuilder(DeserializationConfig config, BeanDescription desc,
                                                             BeanDeserializerBuilder builder) {
                    if (desc.getBeanClass().getName().startsWith("io.fabric8.kubernetes.api.model")) {
                        builder.setAnySetter(null);
                    }
                    return builder;
                }
            }));

    private StrictModel() {
    }

    static Class<? extends HasMetadata> modelClass(JsonNode doc) {
        String key = doc.path("apiVersion").asText("") + "/" + doc.path("kind").asText("");
        Class<? extends HasMetadata> type = KINDS.get(key);
        if (type == null) {
            throw new AssertionError("deploy/ renders " + RenderedDeploy.describe(doc) + " of apiVersion/kind \"" + key
                    + "\", which this test does not know; add it to StrictModel.KINDS with its fabric8 class");
        }
        return type;
    }

    /** Parses a document into its fabric8 class; unknown fields and unknown kinds throw. */
    static HasMetadata read(JsonNode doc) throws IOException {
        return MAPPER.treeToValue(doc, modelClass(doc));
    }

    static <T extends HasMetadata> T read(JsonNode doc, Class<T> type) throws IOException {
        if (modelClass(doc) != type) {
            throw new AssertionError(RenderedDeploy.describe(doc) + " is not a " + type.getSimpleName());
        }
        return MAPPER.treeToValue(doc, type);
    }
}
