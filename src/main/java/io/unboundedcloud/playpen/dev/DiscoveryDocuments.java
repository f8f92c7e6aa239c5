package io.unboundedcloud.playpen.dev;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * The legacy discovery documents the simulated API server answers ({@code /version}, {@code /api}, {@code /api/v1},
 * {@code /apis}, {@code /apis/<group>/<version>}), enough for kubectl and the fabric8 client. The playpen group is
 * listed in {@code /apis}; its own documents come from the operator through the aggregator shim.
 */
final class DiscoveryDocuments {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<String> ALL_VERBS = List.of("create", "delete", "deletecollection", "get", "list", "patch",
            "update", "watch");
    private static final List<String> STATUS_VERBS = List.of("get", "patch", "update");

    private DiscoveryDocuments() {
    }

    /** Path (without query) → JSON body, for every GET the dispatcher answers itself. */
    static Map<String, String> all() {
        Map<String, String> docs = new LinkedHashMap<>();
        docs.put("/version", json(version()));
        docs.put("/api", json(Map.of("kind", "APIVersions", "versions", List.of("v1"),
                "serverAddressByClientCIDRs", List.of(Map.of("clientCIDR", "0.0.0.0/0", "serverAddress", "127.0.0.1:6443")))));
        docs.put("/api/v1", json(resourceList("v1", List.of(
                resource("pods", "pod", "Pod", true, ALL_VERBS, List.of("po"), List.of("all")),
                resource("pods/status", "", "Pod", true, STATUS_VERBS, List.of(), List.of()),
                resource("nodes", "node", "Node", false, ALL_VERBS, List.of("no"), List.of()),
                resource("nodes/status", "", "Node", false, STATUS_VERBS, List.of(), List.of()),
                resource("configmaps", "configmap", "ConfigMap", true, ALL_VERBS, List.of("cm"), List.of()),
                resource("secrets", "secret", "Secret", true, ALL_VERBS, List.of(), List.of()),
                resource("events", "event", "Event", true, ALL_VERBS, List.of("ev"), List.of()),
                resource("namespaces", "namespace", "Namespace", false,
                        List.of("create", "delete", "get", "list", "patch", "update", "watch"), List.of("ns"), List.of()),
                resource("namespaces/status", "", "Namespace", false, STATUS_VERBS, List.of(), List.of()),
                resource("services", "service", "Service", true, ALL_VERBS, List.of("svc"), List.of("all")),
                resource("services/status", "", "Service", true, STATUS_VERBS, List.of(), List.of())))));
        docs.put("/apis/coordination.k8s.io/v1", json(resourceList("coordination.k8s.io/v1", List.of(
                resource("leases", "lease", "Lease", true, ALL_VERBS, List.of(), List.of())))));
        docs.put("/apis/authorization.k8s.io/v1", json(resourceList("authorization.k8s.io/v1", List.of(
                resource("subjectaccessreviews", "subjectaccessreview", "SubjectAccessReview", false,
                        List.of("create"), List.of(), List.of())))));
        docs.put("/apis/apiregistration.k8s.io/v1", json(resourceList("apiregistration.k8s.io/v1", List.of(
                resource("apiservices", "apiservice", "APIService", false, ALL_VERBS, List.of(), List.of("api-extensions")),
                resource("apiservices/status", "", "APIService", false, STATUS_VERBS, List.of(), List.of())))));
        docs.put("/apis/events.k8s.io/v1", json(resourceList("events.k8s.io/v1", List.of(
                resource("events", "event", "Event", true, ALL_VERBS, List.of("ev"), List.of())))));

        List<Object> groups = new ArrayList<>();
        for (String gv : List.of("apiregistration.k8s.io/v1", "events.k8s.io/v1", "authorization.k8s.io/v1",
                "coordination.k8s.io/v1", PlaypenKeys.GROUP_VERSION)) {
            String[] parts = gv.split("/");
            Map<String, String> version = Map.of("groupVersion", gv, "version", parts[1]);
            groups.add(Map.of("name", parts[0], "versions", List.of(version), "preferredVersion", version));
            if (!gv.equals(PlaypenKeys.GROUP_VERSION)) {
                docs.put("/apis/" + parts[0], json(Map.of("kind", "APIGroup", "apiVersion", "v1", "name", parts[0],
                        "versions", List.of(version), "preferredVersion", version)));
            }
        }
        docs.put("/apis", json(Map.of("kind", "APIGroupList", "apiVersion", "v1", "groups", groups)));
        // the OpenAPI v3 index names only the operator's group (kubectl explain allocs); its document is the
        // operator's own, reached through the shim like the aggregator would merge it
        docs.put("/openapi/v3", io.unboundedcloud.playpen.api.OpenApi.V3_ROOT);
        return docs;
    }

    private static Map<String, Object> version() {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("major", "1");
        v.put("minor", "32");
        v.put("gitVersion", "v1.32.0-playpen-dev");
        v.put("gitCommit", "0000000000000000000000000000000000000000");
        v.put("gitTreeState", "clean");
        v.put("buildDate", "2025-01-01T00:00:00Z");
        v.put("goVersion", "go1.23.0");
        v.put("compiler", "gc");
        v.put("platform", "linux/amd64");
        return v;
    }

    private static Map<String, Object> resourceList(String groupVersion, List<Map<String, Object>> resources) {
        Map<String, Object> list = new LinkedHashMap<>();
        list.put("kind", "APIResourceList");
        list.put("apiVersion", "v1");
        list.put("groupVersion", groupVersion);
        list.put("resources", resources);
        return list;
    }

    private static Map<String, Object> resource(String name, String singular, String kind, boolean namespaced,
            List<String> verbs, List<String> shortNames, List<String> categories) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("name", name);
        r.put("singularName", singular);
        r.put("namespaced", namespaced);
        r.put("kind", kind);
        r.put("verbs", verbs);
        if (!shortNames.isEmpty()) {
            r.put("shortNames", shortNames);
        }
        if (!categories.isEmpty()) {
            r.put("categories", categories);
        }
        return r;
    }

    static String json(Object value) {
        try {
            return JSON.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
