package io.unboundedcloud.playpen.api;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * The discovery documents of the aggregated group (APIGroup and APIResourceList), rendered once. The reference
 * builds them from Go maps, so every object's keys are written sorted; {@link Json#encode} adds its newline.
 */
public final class Discovery {
    public static final String API_GROUP = Json.encode(sorted(Map.of(
            "kind", "APIGroup",
            "apiVersion", "v1",
            "name", PlaypenKeys.GROUP,
            "versions", List.of(groupVersion()),
            "preferredVersion", groupVersion())));

    public static final String API_RESOURCE_LIST = Json.encode(sorted(Map.of(
            "kind", "APIResourceList",
            "apiVersion", "v1",
            "groupVersion", PlaypenKeys.GROUP_VERSION,
            "resources", List.of(allocs(), resource("deallocs", "dealloc", "Dealloc"),
                    resource("renewals", "renewal", "Renewal"), pools()))));

    private Discovery() {
    }

    private static Map<String, Object> groupVersion() {
        return sorted(Map.of("groupVersion", PlaypenKeys.GROUP_VERSION, "version", PlaypenKeys.VERSION));
    }

    /**
     * allocs: the reference's create plus get, list, delete and watch (ours), with kubectl's short name and category;
     * the reference's keys stay, the new ones sort in among them.
     */
    private static Map<String, Object> allocs() {
        Map<String, Object> r = resource("allocs", "alloc", "Alloc");
        r.put("verbs", List.of("create", "delete", "get", "list", "watch"));
        r.put("shortNames", List.of("alloc"));
        r.put("categories", List.of("playpen"));
        return r;
    }

    /** pools (ours): read-only, cluster-scoped, in the playpen category (kubectl get pools, kubectl get playpen). */
    private static Map<String, Object> pools() {
        Map<String, Object> r = resource("pools", "pool", "Pool");
        r.put("verbs", List.of("get", "list"));
        r.put("categories", List.of("playpen"));
        return r;
    }

    private static Map<String, Object> resource(String name, String singular, String kind) {
        return sorted(Map.of("name", name, "singularName", singular, "namespaced", false, "kind", kind,
                "verbs", List.of("create")));
    }

    // Go's encoding/json sorts map keys by their bytes; the keys here are ASCII, so String order is the same
    private static Map<String, Object> sorted(Map<String, ?> map) {
        return new TreeMap<>(map);
    }
}
