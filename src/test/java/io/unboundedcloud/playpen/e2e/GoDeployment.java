package io.unboundedcloud.playpen.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Swap in place, on a real cluster: the installed operator's image run the way the Go operator's Deployment runs
 * its binary ({@code command: [/unbounded/bin/playpen-operator]} and the Go flag set) must start and become ready.
 * It runs in a namespace of its own with the Go operator's kind of RBAC and no pool (counts 0), so it touches
 * nothing of the installation: no APIService rights, its own Secret, Lease-less single-replica fallback.
 */
final class GoDeployment {
    static final String NS = "playpen-e2e-go";
    static final String NAME = "playpen-operator";
    static final String CLUSTER_WIDE = "playpen-e2e-go";
    static final ObjectMapper JSON = new ObjectMapper();

    /**
     * The Go Deployment's flags (cmd/playpen-operator/main.go's, as SwapInPlaceRouteTest starts them) with values
     * for a scratch namespace and an empty pool.
     */
    static List<String> goArgs() {
        return List.of("--listen-addr=:8443", "--namespace=" + NS, "--service-name=" + NAME,
                "--tls-secret-name=playpen-operator-tls", "--runner-namespace=" + NS,
                "--runner-label-selector=app.kubernetes.io/name=playpen-runner", "--runner-image=ghcr.io/azure/playpen:latest",
                "--runner-image-pull-policy=Always", "--runner-service-account-name=playpen-runner",
                "--runner-amd64-count=0", "--runner-arm64-count=0", "--runner-wireguard-host-port-start=51820",
                "--runner-wireguard-host-port-end=51899", "--runner-require-kvm=true",
                "--runner-control-plane-tolerations=false", "--control-plane-count=0",
                "--control-plane-versions=v1.33.0", "--playpen-ttl=1h", "--reconcile-interval=30s");
    }

    private GoDeployment() {
    }

    static void run(Target t) throws Exception {
        String image = installedImage(t);
        cleanUp(t);
        t.onClose(() -> cleanUp(t));
        apply(t, manifests(image));
        String[] state = {""};
        String[] pod = {null};
        Target.await(Duration.ofSeconds(180), "the pod started with the Go Deployment's command and args to be Ready", () -> {
            for (JsonNode p : t.admin.json("get", "pods", "-n", NS, "-l", "app=" + CLUSTER_WIDE, "-o", "json").path("items")) {
                state[0] = p.at("/status/containerStatuses/0/state").toString();
                for (JsonNode c : p.at("/status/conditions")) {
                    if (c.path("type").asText().equals("Ready") && c.path("status").asText().equals("True")) {
                        pod[0] = p.at("/metadata/name").asText();
                        return true;
                    }
                }
            }
            return false;
        }, () -> state[0] + "\n" + t.admin.run("logs", "-n", NS, "deployment/" + NAME, "--tail=30").out());
        JsonNode p = t.admin.json("get", "pod", pod[0], "-n", NS, "-o", "json");
        assertThat(p.at("/spec/containers/0/command/0").asText()).isEqualTo("/unbounded/bin/playpen-operator");
        assertThat(p.at("/spec/containers/0/image").asText()).isEqualTo(image);
        assertThat(p.at("/status/containerStatuses/0/restartCount").asInt()).isZero();
        String log = t.admin.ok("logs", "-n", NS, pod[0]);
        assertThat(log).doesNotContain("unknown flag").doesNotContain("startup failed");
        // its own self-signed serving certificate, in its own namespace
        assertThat(t.admin.run("get", "secret", "playpen-operator-tls", "-n", NS).ok()).isTrue();
    }

    /** The image the installed operator's ready pods run. */
    static String installedImage(Target t) {
        String pod = t.readyOperatorPods().get(0);
        JsonNode containers = t.admin.json("get", "pod", pod, "-n", t.operatorNamespace(), "-o", "json").at("/spec/containers");
        for (JsonNode c : containers) {
            if (c.path("name").asText().equals("operator")) {
                return c.path("image").asText();
            }
        }
        return containers.path(0).path("image").asText();
    }

    static void cleanUp(Target t) {
        t.admin.run("delete", "clusterrolebinding", CLUSTER_WIDE, "--ignore-not-found");
        t.admin.run("delete", "clusterrole", CLUSTER_WIDE, "--ignore-not-found");
        t.admin.run("delete", "rolebinding", CLUSTER_WIDE + "-authentication-reader", "-n", "kube-system", "--ignore-not-found");
        t.admin.run("delete", "namespace", NS, "--ignore-not-found", "--timeout=120s");
    }

    static void apply(Target t, ArrayNode items) throws Exception {
        ObjectNode list = JSON.createObjectNode().put("apiVersion", "v1").put("kind", "List");
        list.set("items", items);
        Path file = Files.createTempFile(t.work, "go-deployment-", ".json");
        try {
            Files.writeString(file, JSON.writerWithDefaultPrettyPrinter().writeValueAsString(list));
            t.admin.ok("apply", "-f", file.toString());
        } finally {
            Files.deleteIfExists(file);
        }
    }

    static ObjectNode object(ArrayNode items, String apiVersion, String kind, String name, String namespace) {
        ObjectNode o = items.addObject().put("apiVersion", apiVersion).put("kind", kind);
        ObjectNode md = o.putObject("metadata").put("name", name);
        if (namespace != null) {
            md.put("namespace", namespace);
        }
        md.putObject("labels").put("app.kubernetes.io/part-of", "playpen-e2e");
        return o;
    }

    static void rule(ArrayNode rules, String group, String resource, String... verbs) {
        ObjectNode r = rules.addObject();
        r.putArray("apiGroups").add(group);
        r.putArray("resources").add(resource);
        ArrayNode v = r.putArray("verbs");
        for (String verb : verbs) {
            v.add(verb);
        }
    }

    static ArrayNode manifests(String image) {
        ArrayNode items = JSON.createArrayNode();
        object(items, "v1", "Namespace", NS, null);
        object(items, "v1", "ServiceAccount", NAME, NS);

        ObjectNode role = object(items, "rbac.authorization.k8s.io/v1", "Role", NAME, NS);
        ArrayNode rules = role.putArray("rules");
        rule(rules, "", "pods", "get", "list", "watch", "create", "update", "patch", "delete");
        rule(rules, "", "secrets", "get", "create", "update");
        binding(object(items, "rbac.authorization.k8s.io/v1", "RoleBinding", NAME, NS), "Role", NAME);

        ObjectNode cr = object(items, "rbac.authorization.k8s.io/v1", "ClusterRole", CLUSTER_WIDE, null);
        ArrayNode crRules = cr.putArray("rules");
        rule(crRules, "", "nodes", "get", "list", "watch");
        rule(crRules, "authorization.k8s.io", "subjectaccessreviews", "create");
        binding(object(items, "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", CLUSTER_WIDE, null), "ClusterRole",
                CLUSTER_WIDE);
        binding(object(items, "rbac.authorization.k8s.io/v1", "RoleBinding", CLUSTER_WIDE + "-authentication-reader",
                "kube-system"), "Role", "extension-apiserver-authentication-reader");

        ObjectNode dep = object(items, "apps/v1", "Deployment", NAME, NS);
        ObjectNode spec = dep.putObject("spec").put("replicas", 1);
        spec.putObject("selector").putObject("matchLabels").put("app", CLUSTER_WIDE);
        ObjectNode tpl = spec.putObject("template");
        tpl.putObject("metadata").putObject("labels").put("app", CLUSTER_WIDE);
        ObjectNode ps = tpl.putObject("spec").put("serviceAccountName", NAME);
        ObjectNode c = ps.putArray("containers").addObject().put("name", "operator").put("image", image)
                .put("imagePullPolicy", "IfNotPresent");
        c.putArray("command").add("/unbounded/bin/playpen-operator");
        ArrayNode args = c.putArray("args");
        goArgs().forEach(args::add);
        c.putArray("ports").addObject().put("name", "https").put("containerPort", 8443);
        ObjectNode probe = c.putObject("readinessProbe").put("periodSeconds", 2).put("failureThreshold", 90);
        probe.putObject("httpGet").put("path", "/readyz").put("port", "https").put("scheme", "HTTPS");
        ObjectNode res = c.putObject("resources");
        res.putObject("requests").put("cpu", "100m").put("memory", "256Mi");
        res.putObject("limits").put("memory", "768Mi");
        return items;
    }

    static void binding(ObjectNode b, String roleKind, String roleName) {
        b.putObject("roleRef").put("apiGroup", "rbac.authorization.k8s.io").put("kind", roleKind).put("name", roleName);
        b.putArray("subjects").addObject().put("kind", "ServiceAccount").put("name", NAME).put("namespace", NS);
    }
}
