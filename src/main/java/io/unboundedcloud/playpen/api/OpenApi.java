package io.unboundedcloud.playpen.api;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * The OpenAPI documents of the group (ours; the reference serves none): {@code /openapi/v2} and {@code /openapi/v3}
 * with its group document, so kube-apiserver's aggregator merges them and {@code kubectl explain allocs} (and
 * pools) prints field docs. Schemas only describe what the read API returns; alloc and dealloc bodies are documented in docs/api.md.
 */
public final class OpenApi {
    public static final String ALLOC_SCHEMA = "io.unboundedcloud.playpen.v1alpha1.Alloc";
    public static final String ALLOC_LIST_SCHEMA = "io.unboundedcloud.playpen.v1alpha1.AllocList";
    public static final String POOL_SCHEMA = "io.unboundedcloud.playpen.v1alpha1.Pool";
    public static final String POOL_LIST_SCHEMA = "io.unboundedcloud.playpen.v1alpha1.PoolList";

    /** The Swagger 2.0 document (definitions keyed like Kubernetes' own). */
    public static final String V2 = Json.write(v2());
    /** The OpenAPI 3.0 document of playpen.unbounded-cloud.io/v1alpha1. */
    public static final String V3_GROUP = Json.write(v3Group());
    /** Its hash, as kube-apiserver puts it in the v3 index so clients can cache the document. */
    public static final String V3_GROUP_HASH = Hashes.sha256Hex(V3_GROUP).toUpperCase(Locale.ROOT);
    /** The v3 index: where the group's document is. */
    public static final String V3_ROOT = Json.write(Map.of("paths", Map.of("apis/" + PlaypenKeys.GROUP_VERSION,
            Map.of("serverRelativeURL", "/openapi/v3/apis/" + PlaypenKeys.GROUP_VERSION + "?hash=" + V3_GROUP_HASH))));

    private OpenApi() {
    }

    private static Map<String, Object> gvk(String kind) {
        return props("group", PlaypenKeys.GROUP, "version", PlaypenKeys.VERSION, "kind", kind);
    }

    private static Map<String, Object> str(String description) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("description", description);
        m.put("type", "string");
        return m;
    }

    private static Map<String, Object> obj(String description, Map<String, Object> properties) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("description", description);
        m.put("type", "object");
        m.put("properties", properties);
        return m;
    }

    /** A map whose keys are free and whose values are all of {@code valueType} (kubectl explain: map[string]...). */
    private static Map<String, Object> map(String description, String valueType) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("description", description);
        m.put("type", "object");
        m.put("additionalProperties", props("type", valueType));
        return m;
    }

    private static Map<String, Object> props(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    private static Map<String, Object> metadata() {
        return obj("Standard object metadata: the allocation id is the name.", props(
                "name", str("The allocation id: the first 16 hex characters of sha256(<namespace>/<pod>), also the "
                        + "value of the pod's playpen.unbounded-cloud.io/allocated label."),
                "uid", str("The UID of the pod serving the allocation."),
                "resourceVersion", str("The resourceVersion of the pod serving the allocation."),
                "creationTimestamp", str("When the allocation was made (the claimed-at annotation)."),
                "deletionTimestamp", str("When the delete of the pod serving the allocation was asked; only while "
                        + "that pod is being deleted and still there.")));
    }

    /** The Alloc schema; {@code ref} builds a reference to another schema of the same document. */
    private static Map<String, Object> alloc() {
        Map<String, Object> m = obj("Alloc is one allocation: a warm runner or control-plane pod claimed by an "
                + "idempotency key through POST allocs. Listed, read and deleted by its owner (or by users granted "
                + "the verb on allocs/all); created only through POST allocs.", props(
                "apiVersion", str("APIVersion: playpen.unbounded-cloud.io/v1alpha1."),
                "kind", str("Kind: Alloc."),
                "metadata", metadata(),
                "spec", obj("What was asked for.", props(
                        "resourceType", str("runner or controlPlane."),
                        "architecture", str("CPU architecture of the pod: amd64 or arm64."),
                        "kubernetesVersion", str("Kubernetes version of a control plane (absent for runners)."))),
                "status", obj("Where the allocation runs and until when.", props(
                        "pod", str("Name of the pod serving the allocation."),
                        "node", str("Node the pod runs on."),
                        "endpoint", str("The node's ExternalIP and the allocation's host port (WireGuard UDP for "
                                + "runners, the API server's TCP port for control planes)."),
                        "claimedAt", str("When the pod was claimed (RFC 3339)."),
                        "expiresAt", str("When the allocation expires and its pod is deleted (RFC 3339); absent "
                                + "when allocations do not expire."),
                        "kubeconfig", str("A control plane's kubeconfig, as the alloc answer gives it; only when its "
                                + "owner reads that one allocation.")))));
        m.put("x-kubernetes-group-version-kind", List.of(gvk("Alloc")));
        return m;
    }

    private static Map<String, Object> number(String description) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("description", description);
        m.put("type", "number");
        return m;
    }

    private static Map<String, Object> integer(String description) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("description", description);
        m.put("type", "integer");
        return m;
    }

    /** The Pool schema: what kubectl get pool -o yaml shows (docs/pools.md explains every field). */
    private static Map<String, Object> pool() {
        Map<String, Object> conditions = new LinkedHashMap<>();
        conditions.put("description", "Ready (enough ready idle pods), Progressing (a rollout or pods starting), "
                + "Degraded (pod creates refused, back-off, unhealthy pods, hostPort range full), each with status, "
                + "reason and message.");
        conditions.put("type", "array");
        conditions.put("items", obj("A condition.", props("type", str("Ready, Progressing or Degraded."),
                "status", str("True or False."), "lastTransitionTime", str("When the answering replica first saw "
                        + "this status (RFC 3339)."), "reason", str("One CamelCase word."), "message",
                str("What it means."))));
        Map<String, Object> m = obj("Pool is one warm pool: runners of one architecture, or control planes of one "
                + "Kubernetes version. Read-only: the operator's flags define the pools.", props(
                "apiVersion", str("APIVersion: playpen.unbounded-cloud.io/v1alpha1."),
                "kind", str("Kind: Pool."),
                "metadata", obj("Standard object metadata.", props(
                        "name", str("runner-<architecture> or control-plane-<version>."),
                        "resourceVersion", str("Always empty: the pool is computed from the operator's cache."),
                        "creationTimestamp", str("Creation of the pool's oldest live pod."),
                        "labels", map("The resource-type and architecture or kubernetes-version labels its pods "
                                + "carry.", "string"))),
                "spec", obj("What the flags ask for.", props(
                        "resourceType", str("runner or controlPlane."),
                        "architecture", str("amd64 or arm64 (runner pools)."),
                        "kubernetesVersion", str("The version (control-plane pools)."),
                        "minIdle", integer("The count flag: idle pods kept at least."),
                        "maxIdle", integer("--pool-max-idle when the demand-aware buffer is on, else minIdle."),
                        "maxSurge", str("--pool-max-surge: pods a rollout may add beyond the desired count."),
                        "templateHash", str("The hash current pods carry in their template-hash label."),
                        "image", str("The image of the template's first container."))),
                "status", obj("The pool as the answering replica's cache shows it.", props(
                        "desired", integer("Idle pods wanted now."),
                        "ready", integer("Idle pods ready to be handed out."),
                        "idle", integer("Unclaimed pods not being deleted."),
                        "allocated", integer("Claimed pods not being deleted."),
                        "stale", integer("Healthy idle pods of an older template."),
                        "starting", integer("Idle pods of the current template not ready yet."),
                        "unhealthy", integer("Unhealthy pods, idle and allocated."),
                        "readyWithoutExternalIP", integer("Idle pods ready as far as the pod goes on a node without "
                                + "an ExternalIP: never handed out, not counted in ready (present when above 0)."),
                        "unhealthyIdle", map("Unhealthy idle pods by reason (being replaced).", "integer"),
                        "unhealthyAllocated", map("Unhealthy allocated pods by reason (reported only).", "integer"),
                        "backoff", obj("Present while replacements keep failing.", props(
                                "failures", integer("Replacements in a row that never became ready."),
                                "delaySeconds", integer("The current pause."),
                                "nextCreateAt", str("When the pool creates again (RFC 3339)."))),
                        "allocationsPerSecond", number("Recent allocation rate (highest of 2, 10 and 60 s)."),
                        "timeToReadySeconds", number("Slowest of the last five pods from create to ready."),
                        "conditions", conditions))));
        m.put("x-kubernetes-group-version-kind", List.of(gvk("Pool")));
        return m;
    }

    private static Map<String, Object> poolList(String itemsRef) {
        Map<String, Object> items = new LinkedHashMap<>();
        items.put("description", "The pools.");
        items.put("type", "array");
        items.put("items", Map.of("$ref", itemsRef));
        Map<String, Object> m = obj("PoolList is a list of pools.", props(
                "apiVersion", str("APIVersion: playpen.unbounded-cloud.io/v1alpha1."),
                "kind", str("Kind: PoolList."),
                "metadata", obj("List metadata.", props("resourceVersion", str("Always empty: the list is computed "
                        + "from the operator's cache."))),
                "items", items));
        m.put("x-kubernetes-group-version-kind", List.of(gvk("PoolList")));
        return m;
    }

    private static Map<String, Object> allocList(String itemsRef) {
        Map<String, Object> items = new LinkedHashMap<>();
        items.put("description", "The allocations.");
        items.put("type", "array");
        items.put("items", Map.of("$ref", itemsRef));
        Map<String, Object> m = obj("AllocList is a list of allocations.", props(
                "apiVersion", str("APIVersion: playpen.unbounded-cloud.io/v1alpha1."),
                "kind", str("Kind: AllocList."),
                "metadata", obj("List metadata.", props("continue", str("Token for the next page."),
                        "resourceVersion", str("Always empty: the list is built from the claimed pods as the API server lists them when asked."))),
                "items", items));
        m.put("x-kubernetes-group-version-kind", List.of(gvk("AllocList")));
        return m;
    }

    private static Map<String, Object> paths(String prefix, boolean v3) {
        String base = "/apis/" + PlaypenKeys.GROUP_VERSION + "/allocs";
        Map<String, Object> paths = new LinkedHashMap<>();
        // ordered maps: the document (and its hash in the v3 index) must be the same bytes on every replica and run
        paths.put(base, props(
                "get", operation("listAllocs", "list your allocations (everyone's with list on allocs/all)",
                        prefix + ALLOC_LIST_SCHEMA, v3, "list"),
                "post", operation("createAlloc", "allocate a pod (body and answer: docs/api.md of playpen-operator)",
                        null, v3, "create")));
        paths.put(base + "/{name}", props(
                "get", operation("readAlloc", "read one of your allocations", prefix + ALLOC_SCHEMA, v3, "get"),
                "delete", operation("deleteAlloc", "deallocate: deletes the pod, like POST deallocs",
                        prefix + ALLOC_SCHEMA, v3, "delete")));
        String pools = "/apis/" + PlaypenKeys.GROUP_VERSION + "/pools";
        paths.put(pools, Map.of("get", operation("listPools", "list the pools (read-only; the flags define them)",
                prefix + POOL_LIST_SCHEMA, v3, "list", "Pool")));
        paths.put(pools + "/{name}", Map.of("get", operation("readPool", "read one pool", prefix + POOL_SCHEMA, v3,
                "get", "Pool")));
        return paths;
    }

    private static Map<String, Object> operation(String id, String description, String ref, boolean v3, String verb) {
        return operation(id, description, ref, v3, verb, "Alloc");
    }

    private static Map<String, Object> operation(String id, String description, String ref, boolean v3, String verb,
            String kind) {
        Map<String, Object> op = new LinkedHashMap<>();
        op.put("operationId", id);
        op.put("description", description);
        Map<String, Object> ok = new LinkedHashMap<>();
        ok.put("description", "OK");
        if (ref != null) {
            if (v3) {
                ok.put("content", Map.of("application/json", Map.of("schema", Map.of("$ref", ref))));
            } else {
                ok.put("schema", Map.of("$ref", ref));
            }
        }
        op.put("responses", Map.of("200", ok));
        op.put("x-kubernetes-action", verb.equals("create") ? "post" : verb);
        op.put("x-kubernetes-group-version-kind", gvk(kind));
        return op;
    }

    private static Map<String, Object> v2() {
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("swagger", "2.0");
        doc.put("info", props("title", "playpen-operator", "version", PlaypenKeys.VERSION));
        doc.put("paths", paths("#/definitions/", false));
        Map<String, Object> defs = new LinkedHashMap<>();
        defs.put(ALLOC_SCHEMA, alloc());
        defs.put(ALLOC_LIST_SCHEMA, allocList("#/definitions/" + ALLOC_SCHEMA));
        defs.put(POOL_SCHEMA, pool());
        defs.put(POOL_LIST_SCHEMA, poolList("#/definitions/" + POOL_SCHEMA));
        doc.put("definitions", defs);
        return doc;
    }

    private static Map<String, Object> v3Group() {
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("openapi", "3.0.0");
        doc.put("info", props("title", "playpen-operator", "version", PlaypenKeys.VERSION));
        doc.put("paths", paths("#/components/schemas/", true));
        Map<String, Object> schemas = new LinkedHashMap<>();
        schemas.put(ALLOC_SCHEMA, alloc());
        schemas.put(ALLOC_LIST_SCHEMA, allocList("#/components/schemas/" + ALLOC_SCHEMA));
        schemas.put(POOL_SCHEMA, pool());
        schemas.put(POOL_LIST_SCHEMA, poolList("#/components/schemas/" + POOL_SCHEMA));
        doc.put("components", Map.of("schemas", schemas));
        return doc;
    }
}
