package io.unboundedcloud.playpen.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.cel.common.CelAbstractSyntaxTree;
import dev.cel.common.CelValidationException;
import dev.cel.common.types.MapType;
import dev.cel.common.types.SimpleType;
import dev.cel.common.values.NullValue;
import dev.cel.compiler.CelCompiler;
import dev.cel.compiler.CelCompilerFactory;
import dev.cel.parser.CelStandardMacro;
import dev.cel.runtime.CelEvaluationException;
import dev.cel.runtime.CelRuntime;
import dev.cel.runtime.CelRuntimeFactory;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingAdmissionPolicy;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingAdmissionPolicyBinding;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.PodTemplates;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The ValidatingAdmissionPolicy that fences runner and control-plane pods, evaluated the way kube-apiserver
 * evaluates it: its own CEL expressions (matchConditions, variables, validations) compiled and run by Google's
 * CEL interpreter, failurePolicy and the binding's validationActions applied, against the writes the reference
 * runner image makes (allowed) and the attacks on other pods and on claims (denied). Requests are built like kube-apiserver's
 * admission request; the pods come from the operator's own templates, and the new object is the old one with the
 * JSON merge patch the caller sends applied.
 */
class DeployAdmissionPolicyTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String POD_NAME_EXTRA = "authentication.kubernetes.io/pod-name";
    private static final String POD_UID_EXTRA = "authentication.kubernetes.io/pod-uid";
    private static final String WG_KEY = "hN3AZ9cU3EJgpx8NhBdz2Z3ZDyZ3VjUd2R9cpD2b0lg=";
    private static final String NETWORK_READY = PlaypenKeys.GROUP + "/network-ready";

    private static OperatorConfig config;
    private static JsonNode policy;
    private static JsonNode binding;
    private static final List<Compiled> MATCH_CONDITIONS = new ArrayList<>();
    private static final List<Compiled> VARIABLES = new ArrayList<>();
    private static final List<Compiled> VALIDATIONS = new ArrayList<>();

    /** One compiled expression with its name (variables, match conditions) or message (validations). */
    record Compiled(String label, String expression, CelRuntime.Program program) {
    }

    /** The outcome of one admission request: allowed, or denied with the message kube-apiserver would return. */
    record Decision(boolean allowed, String message) {
        static Decision allow(String why) {
            return new Decision(true, why);
        }

        static Decision deny(String message) {
            return new Decision(false, message);
        }
    }

    @BeforeAll
    static synchronized void compilePolicy() throws Exception {
        if (policy != null) {
            return; // compiled already (FakeRunnerAdmissionTest uses it too)
        }
        config = DeployManifestsTest.deployedConfig();
        ObjectNode policyDoc = RenderedDeploy.single("ValidatingAdmissionPolicy");
        ObjectNode bindingDoc = RenderedDeploy.single("ValidatingAdmissionPolicyBinding");
        StrictModel.read(policyDoc, ValidatingAdmissionPolicy.class);
        StrictModel.read(bindingDoc, ValidatingAdmissionPolicyBinding.class);
        policy = policyDoc.path("spec");
        binding = bindingDoc.path("spec");

        // kube-apiserver's environment: object, oldObject, request, variables (params, authorizer and
        // namespaceObject are unused here, so an expression that reads them fails to compile)
        CelCompiler compiler = CelCompilerFactory.standardCelCompilerBuilder()
                .setStandardMacros(CelStandardMacro.STANDARD_MACROS)
                .addVar("object", SimpleType.DYN)
                .addVar("oldObject", SimpleType.DYN)
                .addVar("request", SimpleType.DYN)
                .addVar("variables", MapType.create(SimpleType.STRING, SimpleType.DYN))
                .build();
        CelRuntime runtime = CelRuntimeFactory.standardCelRuntimeBuilder().build();
        for (JsonNode c : policy.path("matchConditions")) {
            MATCH_CONDITIONS.add(compile(compiler, runtime, c.path("name").asText(), c.path("expression").asText()));
        }
        for (JsonNode v : policy.path("variables")) {
            VARIABLES.add(compile(compiler, runtime, v.path("name").asText(), v.path("expression").asText()));
        }
        for (JsonNode v : policy.path("validations")) {
            assertThat(v.has("messageExpression")).as("messageExpression is not evaluated here").isFalse();
            VALIDATIONS.add(compile(compiler, runtime, v.path("message").asText(), v.path("expression").asText()));
        }
    }

    private static Compiled compile(CelCompiler compiler, CelRuntime runtime, String label, String expression)
            throws CelEvaluationException {
        try {
            CelAbstractSyntaxTree ast = compiler.compile(expression).getAst();
            return new Compiled(label, expression, runtime.createProgram(ast));
        } catch (CelValidationException e) {
            throw new AssertionError("CEL expression \"" + label + "\" does not compile: " + e.getMessage(), e);
        }
    }

    // ---------------------------------------------------------------- the admission evaluation

    /** kube-apiserver's steps for one policy and its binding. */
    static Decision admit(Map<String, Object> request, Object oldObject, Object object) {
        if (!matchesConstraints(request)) {
            return Decision.allow("not matched by matchConstraints");
        }
        Map<String, Object> activation = new LinkedHashMap<>();
        activation.put("request", request);
        activation.put("oldObject", oldObject == null ? NullValue.NULL_VALUE : oldObject);
        activation.put("object", object == null ? NullValue.NULL_VALUE : object);
        activation.put("variables", Map.of());
        for (Compiled c : MATCH_CONDITIONS) {
            Object r;
            try {
                r = c.program().eval(activation);
            } catch (CelEvaluationException e) {
                return failurePolicy("matchCondition " + c.label() + ": " + e.getMessage());
            }
            if (!Boolean.TRUE.equals(r)) {
                return Decision.allow("matchCondition " + c.label() + " is false");
            }
        }
        // variables are lazy in kube-apiserver: one that fails only fails the expressions that use it,
        // which then fail with "no such key" here
        Map<String, Object> variables = new LinkedHashMap<>();
        activation.put("variables", variables);
        for (Compiled v : VARIABLES) {
            try {
                variables.put(v.label(), v.program().eval(activation));
            } catch (CelEvaluationException e) {
                // left unset
            }
        }
        for (Compiled v : VALIDATIONS) {
            Object r;
            try {
                r = v.program().eval(activation);
            } catch (CelEvaluationException e) {
                return failurePolicy("validation \"" + v.label() + "\" failed to evaluate: " + e.getMessage());
            }
            if (!Boolean.TRUE.equals(r)) {
                return bindingAction(v.label());
            }
        }
        return Decision.allow("every validation holds");
    }

    static Decision failurePolicy(String why) {
        return "Fail".equals(policy.path("failurePolicy").asText("Fail")) ? bindingAction(why) : Decision.allow(why);
    }

    static Decision bindingAction(String message) {
        for (JsonNode a : binding.path("validationActions")) {
            if ("Deny".equals(a.asText())) {
                return Decision.deny(message);
            }
        }
        return Decision.allow("violation only warned or audited: " + message);
    }

    static boolean matchesConstraints(Map<String, Object> request) {
        @SuppressWarnings("unchecked")
        Map<String, Object> resource = (Map<String, Object>) request.get("resource");
        String sub = (String) request.getOrDefault("subResource", "");
        String res = sub.isEmpty() ? (String) resource.get("resource") : resource.get("resource") + "/" + sub;
        for (JsonNode rule : policy.path("matchConstraints").path("resourceRules")) {
            if (anyOf(rule.path("apiGroups"), (String) resource.get("group"))
                    && anyOf(rule.path("apiVersions"), (String) resource.get("version"))
                    && anyOf(rule.path("operations"), (String) request.get("operation"))
                    && resourceMatches(rule.path("resources"), res)) {
                return true;
            }
        }
        return false;
    }

    static boolean anyOf(JsonNode values, String value) {
        for (JsonNode v : values) {
            if (v.asText().equals("*") || v.asText().equals(value)) {
                return true;
            }
        }
        return false;
    }

    static boolean resourceMatches(JsonNode values, String resource) {
        for (JsonNode v : values) {
            String r = v.asText();
            if (r.equals("*") || r.equals(resource)
                    || (r.endsWith("/*") && resource.startsWith(r.substring(0, r.length() - 1)))) {
                return true;
            }
        }
        return false;
    }

    // ---------------------------------------------------------------- requests and pods

    static String account(String name) {
        return "system:serviceaccount:" + config.runnerNamespace() + ":" + name;
    }

    static String runnerAccount() {
        return account(config.runnerServiceAccountName());
    }

    static String controlPlaneAccount() {
        return account(config.controlPlaneServiceAccountName());
    }

    /** The extra kube-apiserver adds for a service-account token bound to a pod. */
    static Map<String, List<String>> boundTo(Map<String, Object> pod) {
        return Map.of(POD_NAME_EXTRA, List.of(name(pod)), POD_UID_EXTRA, List.of(uid(pod)),
                "authentication.kubernetes.io/credential-id", List.of("JTI=7d1c0c7e-2f7e-4a59-9d27-0d5f0b1a6a11"));
    }

    static Map<String, Object> request(String operation, String subResource, String username,
                                       Map<String, List<String>> extra, Map<String, Object> target) {
        Map<String, Object> userInfo = new LinkedHashMap<>();
        userInfo.put("username", username);
        userInfo.put("groups", List.of("system:serviceaccounts", "system:serviceaccounts:" + namespace(target),
                "system:authenticated"));
        if (!extra.isEmpty()) {
            userInfo.put("extra", extra);
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("uid", "5c1d4a0e-6f57-4c8e-9d2a-3f1d2b7c9e01");
        r.put("kind", Map.of("group", "", "version", "v1", "kind", "Pod"));
        r.put("resource", Map.of("group", "", "version", "v1", "resource", "pods"));
        if (!subResource.isEmpty()) {
            r.put("subResource", subResource);
        }
        r.put("name", name(target));
        r.put("namespace", namespace(target));
        r.put("operation", operation);
        r.put("userInfo", userInfo);
        return r;
    }

    /** A JSON merge PATCH (what the reference runner sends: controller-runtime's MergeFrom) by a caller. */
    static Decision patch(String username, Map<String, List<String>> extra, Map<String, Object> pod,
                          Map<String, Object> mergePatch) {
        return admit(request("UPDATE", "", username, extra, pod), pod, mergePatched(pod, mergePatch));
    }

    static Map<String, Object> annotations(Object... keyValues) {
        Map<String, Object> a = new LinkedHashMap<>();
        for (int i = 0; i < keyValues.length; i += 2) {
            a.put((String) keyValues[i], keyValues[i + 1]);
        }
        return Map.of("metadata", Map.of("annotations", a));
    }

    /** A pod as kube-apiserver stores it: the operator's template plus uid and resourceVersion. */
    static Map<String, Object> stored(Pod pod, String uid) {
        Map<String, Object> m = toCel(JSON.convertValue(pod, new TypeReference<Map<String, Object>>() { }));
        @SuppressWarnings("unchecked")
        Map<String, Object> md = (Map<String, Object>) m.get("metadata");
        md.put("uid", uid);
        md.put("resourceVersion", "4711");
        md.put("creationTimestamp", "2026-11-23T09:00:00Z");
        return m;
    }

    static Map<String, Object> runnerPod(int port) {
        return stored(new PodTemplates(config, Map.of()).runner("amd64", port), "a1b2c3d4-0000-4000-8000-0000000" + port);
    }

    static Map<String, Object> controlPlanePod(int port) {
        return stored(new PodTemplates(config, Map.of()).controlPlane(config.controlPlaneVersions().get(0), port),
                "c0c0c0c0-0000-4000-8000-0000000" + port);
    }

    /** A runner that has published its key and been claimed by the operator. */
    static Map<String, Object> claimedRunnerPod(int port) {
        Map<String, Object> pod = mergePatched(runnerPod(port), annotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, WG_KEY));
        return mergePatched(pod, Map.of("metadata", Map.of(
                "labels", Map.of(PlaypenKeys.ALLOCATED, "0123456789abcdef"),
                "annotations", Map.of(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ab".repeat(32),
                        PlaypenKeys.REQUEST_HASH, "cd".repeat(32),
                        PlaypenKeys.CLIENT_WIREGUARD_PUBLIC_KEY, WG_KEY,
                        PlaypenKeys.CLAIMED_AT, "2026-11-23T09:01:00Z"))));
    }

    @SuppressWarnings("unchecked")
    static String name(Map<String, Object> pod) {
        return (String) ((Map<String, Object>) pod.get("metadata")).get("name");
    }

    @SuppressWarnings("unchecked")
    static String namespace(Map<String, Object> pod) {
        return (String) ((Map<String, Object>) pod.get("metadata")).get("namespace");
    }

    @SuppressWarnings("unchecked")
    static String uid(Map<String, Object> pod) {
        return (String) ((Map<String, Object>) pod.get("metadata")).get("uid");
    }

    /** RFC 7386 JSON merge patch on a deep copy: null removes a key, maps merge, everything else replaces. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> mergePatched(Map<String, Object> target, Map<String, Object> patch) {
        Map<String, Object> out = (Map<String, Object>) toCel(JSON.convertValue(target, Map.class));
        for (Map.Entry<String, Object> e : patch.entrySet()) {
            if (e.getValue() == null) {
                out.remove(e.getKey());
            } else if (e.getValue() instanceof Map) {
                Object base = out.get(e.getKey());
                out.put(e.getKey(), mergePatched(base instanceof Map ? (Map<String, Object>) base : new LinkedHashMap<>(),
                        (Map<String, Object>) e.getValue()));
            } else {
                out.put(e.getKey(), toCel(JSON.convertValue(e.getValue(), Object.class)));
            }
        }
        return out;
    }

    /** JSON values as CEL sees them: integers are int64, objects maps with string keys. */
    @SuppressWarnings("unchecked")
    static <T> T toCel(T value) {
        if (value instanceof Map<?, ?> m) {
            Map<String, Object> out = new LinkedHashMap<>();
            m.forEach((k, v) -> out.put((String) k, toCel(v)));
            return (T) out;
        }
        if (value instanceof List<?> l) {
            List<Object> out = new ArrayList<>();
            l.forEach(v -> out.add(toCel(v)));
            return (T) out;
        }
        if (value instanceof Integer i) {
            return (T) Long.valueOf(i);
        }
        return value;
    }

    // ---------------------------------------------------------------- what the reference image does: allowed

    @Test
    void aRunnerPublishesItsKeyCertificateAndReadinessOnItsOwnPod() {
        Map<String, Object> pod = runnerPod(51820);
        Map<String, List<String>> token = boundTo(pod);
        assertThat(patch(runnerAccount(), token, pod, annotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, WG_KEY)))
                .isEqualTo(Decision.allow("every validation holds"));
        assertThat(patch(runnerAccount(), token, pod, annotations(PlaypenKeys.REDFISH_CERT_PEM,
                "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")).allowed()).isTrue();
        assertThat(patch(runnerAccount(), token, pod, annotations(NETWORK_READY, "true")).allowed()).isTrue();
        // after a restart it publishes a new key, and may take its own annotation away again
        Map<String, Object> published = mergePatched(pod, annotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, WG_KEY));
        assertThat(patch(runnerAccount(), token, published,
                annotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, "x" + WG_KEY.substring(1))).allowed()).isTrue();
        assertThat(patch(runnerAccount(), token, published,
                annotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, null)).allowed()).isTrue();
        // a claimed runner keeps publishing (the claim annotations ride along unchanged)
        Map<String, Object> claimed = claimedRunnerPod(51821);
        assertThat(patch(runnerAccount(), boundTo(claimed), claimed, annotations(NETWORK_READY, "true")).allowed()).isTrue();
    }

    @Test
    void theControlPlaneHelperPublishesItsKubeconfigOnItsOwnPod() {
        Map<String, Object> pod = controlPlanePod(16443);
        Decision d = patch(controlPlaneAccount(), boundTo(pod), pod, annotations(
                PlaypenKeys.CONTROL_PLANE_KUBECONFIG, "apiVersion: v1\nkind: Config\nclusters: []\n",
                PlaypenKeys.CONTROL_PLANE_GUEST_SERVER, "https://192.168.200.1:6443"));
        assertThat(d).isEqualTo(Decision.allow("every validation holds"));
    }

    @Test
    void theOperatorAndEveryoneElseAreNotMatched() {
        // the operator claims a runner: claim annotations and the allocated label, exactly what runners may not do
        Map<String, Object> pod = mergePatched(runnerPod(51820), annotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, WG_KEY));
        Map<String, Object> claim = Map.of("metadata", Map.of(
                "labels", Map.of(PlaypenKeys.ALLOCATED, "0123456789abcdef"),
                "annotations", Map.of(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ab".repeat(32))));
        Map<String, List<String>> operatorToken = Map.of(POD_NAME_EXTRA, List.of("playpen-operator-7d9f8b6c5-x2x9z"),
                POD_UID_EXTRA, List.of("0f0f0f0f-0000-4000-8000-000000000001"));
        String operator = "system:serviceaccount:" + config.namespace() + ":playpen-operator";
        assertThat(patch(operator, operatorToken, pod, claim))
                .isEqualTo(Decision.allow("matchCondition runner-or-control-plane-account is false"));
        assertThat(admit(request("DELETE", "", operator, operatorToken, pod), pod, null).allowed()).isTrue();
        assertThat(patch("kubernetes-admin", Map.of(), pod, claim).allowed()).isTrue();
        // an account of the same name in another namespace is not a runner
        assertThat(patch("system:serviceaccount:other:" + config.runnerServiceAccountName(), boundTo(pod), pod, claim)
                .allowed()).isTrue();
        // other resources are not matched at all
        Map<String, Object> onConfigMap = request("UPDATE", "", runnerAccount(), boundTo(pod), pod);
        onConfigMap.put("resource", Map.of("group", "", "version", "v1", "resource", "configmaps"));
        assertThat(matchesConstraints(onConfigMap)).isFalse();
    }

    // ---------------------------------------------------------------- denied

    @Test
    void aRunnerCannotWriteAnotherRunnersKeyNorTheOperatorsPod() {
        Map<String, Object> mine = runnerPod(51820);
        Map<String, Object> victim = claimedRunnerPod(51821);
        Decision mitm = patch(runnerAccount(), boundTo(mine), victim,
                annotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, "x" + WG_KEY.substring(1)));
        assertThat(mitm.allowed()).as("rewriting another runner's WireGuard key").isFalse();
        assertThat(mitm.message()).contains("bound to");

        Map<String, Object> operatorPod = new LinkedHashMap<>(Map.of(
                "apiVersion", "v1", "kind", "Pod",
                "metadata", new LinkedHashMap<>(Map.of("name", "playpen-operator-7d9f8b6c5-x2x9z",
                        "namespace", config.namespace(), "uid", "0f0f0f0f-0000-4000-8000-000000000001",
                        "labels", Map.of(PlaypenKeys.APP_NAME, "playpen-operator"))),
                "spec", Map.of("containers", List.of(Map.of("name", "operator",
                        "image", "ghcr.io/unbounded-cloud/playpen-operator:0.1.0")))));
        Map<String, Object> evilImage = Map.of("spec", Map.of("containers", List.of(Map.of("name", "operator",
                "image", "evil.example/operator:latest"))));
        assertThat(patch(runnerAccount(), boundTo(mine), operatorPod, evilImage).allowed())
                .as("patching the operator pod's image").isFalse();
        assertThat(patch(controlPlaneAccount(), boundTo(controlPlanePod(16443)), operatorPod,
                annotations("x", "y")).allowed()).isFalse();
    }

    @Test
    void aRunnerCannotClaimReleaseOrRelabelItself() {
        Map<String, Object> idle = mergePatched(runnerPod(51820), annotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, WG_KEY));
        Map<String, List<String>> token = boundTo(idle);
        for (String key : List.of(PlaypenKeys.IDEMPOTENCY_KEY_HASH, PlaypenKeys.REQUEST_HASH,
                PlaypenKeys.CLIENT_WIREGUARD_PUBLIC_KEY, PlaypenKeys.CLAIMED_AT, PlaypenKeys.CONTROL_PLANE_KUBECONFIG,
                "kubernetes.azure.com/set-kube-service-host-fqdn", "anything.example/else")) {
            Decision d = patch(runnerAccount(), token, idle, annotations(key, "x"));
            assertThat(d.allowed()).as("runner sets annotation %s on its own pod", key).isFalse();
            assertThat(d.message()).contains("may only change the annotations");
        }
        Map<String, Object> claimed = claimedRunnerPod(51821);
        Decision clear = patch(runnerAccount(), boundTo(claimed), claimed, annotations(
                PlaypenKeys.IDEMPOTENCY_KEY_HASH, null, PlaypenKeys.REQUEST_HASH, null, PlaypenKeys.CLAIMED_AT, null));
        assertThat(clear.allowed()).as("clearing its own claim").isFalse();
        assertThat(patch(runnerAccount(), boundTo(claimed), claimed,
                annotations(PlaypenKeys.CLAIMED_AT, "2099-01-01T00:00:00Z")).allowed()).as("postponing its TTL").isFalse();

        for (Map<String, Object> labels : List.<Map<String, Object>>of(
                Map.of(PlaypenKeys.ALLOCATED, "0123456789abcdef"),
                Map.of(PlaypenKeys.APP_NAME, "something-else"),
                Map.of(PlaypenKeys.ARCHITECTURE, "arm64"))) {
            Decision d = patch(runnerAccount(), token, idle, Map.of("metadata", Map.of("labels", labels)));
            assertThat(d.allowed()).as("label change %s", labels).isFalse();
            assertThat(d.message()).contains("labels");
        }
        Map<String, Object> unlabel = new LinkedHashMap<>();
        unlabel.put(PlaypenKeys.ALLOCATED, null);
        assertThat(patch(runnerAccount(), boundTo(claimed), claimed, Map.of("metadata", Map.of("labels", unlabel)))
                .allowed()).as("dropping the allocated label").isFalse();
        assertThat(patch(runnerAccount(), token, idle, Map.of("metadata", Map.of("finalizers", List.of("x.example/keep"))))
                .allowed()).as("adding a finalizer").isFalse();
    }

    @Test
    void aRunnerCannotChangeItsSpec() {
        Map<String, Object> pod = runnerPod(51820);
        @SuppressWarnings("unchecked")
        Map<String, Object> container = (Map<String, Object>) ((List<Object>) ((Map<String, Object>) pod.get("spec"))
                .get("containers")).get(0);
        Map<String, Object> evil = new LinkedHashMap<>(container);
        evil.put("image", "evil.example/runner:latest");
        Decision d = patch(runnerAccount(), boundTo(pod), pod, Map.of("spec", Map.of("containers", List.of(evil))));
        assertThat(d.allowed()).isFalse();
        assertThat(d.message()).contains("spec");
        assertThat(patch(runnerAccount(), boundTo(pod), pod, Map.of("spec", Map.of("activeDeadlineSeconds", 1)))
                .allowed()).isFalse();
    }

    @Test
    void eachKindOfPodWritesOnlyItsOwnAnnotations() {
        Map<String, Object> cp = controlPlanePod(16443);
        assertThat(patch(controlPlaneAccount(), boundTo(cp), cp,
                annotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, WG_KEY)).allowed()).isFalse();
        Map<String, Object> runner = runnerPod(51820);
        assertThat(patch(runnerAccount(), boundTo(runner), runner,
                annotations(PlaypenKeys.CONTROL_PLANE_KUBECONFIG, "apiVersion: v1\n")).allowed()).isFalse();
        // and a control plane cannot touch a runner, nor a runner a control plane
        assertThat(patch(controlPlaneAccount(), boundTo(cp), runner,
                annotations(PlaypenKeys.CONTROL_PLANE_KUBECONFIG, "apiVersion: v1\n")).allowed()).isFalse();
        assertThat(patch(runnerAccount(), boundTo(runner), cp,
                annotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, WG_KEY)).allowed()).isFalse();
    }

    @Test
    void aTokenNotBoundToThePodIsRefused() {
        Map<String, Object> pod = runnerPod(51820);
        Map<String, Object> publish = annotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, WG_KEY);
        // a legacy (Secret) token or a TokenRequest without a pod binding carries no pod name
        assertThat(patch(runnerAccount(), Map.of(), pod, publish).allowed()).isFalse();
        // a token of an earlier pod of the same name (names repeat: playpen-runner-<arch>-<port>)
        Map<String, List<String>> stale = Map.of(POD_NAME_EXTRA, List.of(name(pod)),
                POD_UID_EXTRA, List.of("deadbeef-0000-4000-8000-000000000000"));
        assertThat(patch(runnerAccount(), stale, pod, publish).allowed()).isFalse();
        assertThat(patch(runnerAccount(), Map.of(POD_NAME_EXTRA, List.of(name(pod))), pod, publish).allowed()).isFalse();
    }

    @Test
    void runnersMayNeitherCreateNorDeleteNorWriteSubresources() {
        Map<String, Object> pod = runnerPod(51820);
        Map<String, List<String>> token = boundTo(pod);
        assertThat(admit(request("DELETE", "", runnerAccount(), token, pod), pod, null).allowed()).as("delete").isFalse();
        Map<String, Object> twin = runnerPod(51822);
        assertThat(admit(request("CREATE", "", runnerAccount(), token, twin), null, twin).allowed()).as("create").isFalse();
        Decision status = admit(request("UPDATE", "status", runnerAccount(), token, pod), pod,
                mergePatched(pod, Map.of("status", Map.of("phase", "Failed"))));
        assertThat(status.allowed()).as("pods/status").isFalse();
        assertThat(admit(request("CREATE", "eviction", runnerAccount(), token, pod), null, Map.of()).allowed())
                .as("pods/eviction").isFalse();
    }

    @Test
    void policyFailsClosedAndIsBoundWithDeny() throws Exception {
        assertThat(policy.path("failurePolicy").asText()).isEqualTo("Fail");
        assertThat(binding.path("policyName").asText())
                .isEqualTo(RenderedDeploy.single("ValidatingAdmissionPolicy").path("metadata").path("name").asText());
        assertThat(binding.path("validationActions")).extracting(JsonNode::asText).containsExactly("Deny");
        assertThat(binding.has("paramRef")).isFalse();
        assertThat(binding.has("matchResources")).as("the binding must not narrow the policy").isFalse();
        assertThat(VALIDATIONS).isNotEmpty();
        // the evaluator above really turns a failed validation into a denial and an error into failurePolicy
        assertThat(bindingAction("m")).isEqualTo(Decision.deny("m"));
        assertThat(failurePolicy("e").allowed()).isFalse();
    }
}
