package io.unboundedcloud.playpen.api;

import java.util.List;

import io.unboundedcloud.playpen.model.PlaypenKeys;

/** The discovery documents of the aggregated group (APIGroup and APIResourceList), rendered once. */
public final class Discovery {
    public static final String API_GROUP = Json.write(new Group("APIGroup", "v1", PlaypenKeys.GROUP,
            List.of(new GroupVersion(PlaypenKeys.GROUP_VERSION, PlaypenKeys.VERSION)),
            new GroupVersion(PlaypenKeys.GROUP_VERSION, PlaypenKeys.VERSION)));

    public static final String API_RESOURCE_LIST = Json.write(new ResourceList("APIResourceList", "v1", PlaypenKeys.GROUP_VERSION,
            List.of(new Resource("allocs", "alloc", false, "Alloc", List.of("create")),
                    new Resource("deallocs", "dealloc", false, "Dealloc", List.of("create")))));

    private Discovery() {
    }

    @com.fasterxml.jackson.annotation.JsonPropertyOrder({"kind", "apiVersion", "name", "versions", "preferredVersion"})
    record Group(String kind, String apiVersion, String name, List<GroupVersion> versions, GroupVersion preferredVersion) {
    }

    @com.fasterxml.jackson.annotation.JsonPropertyOrder({"groupVersion", "version"})
    record GroupVersion(String groupVersion, String version) {
    }

    @com.fasterxml.jackson.annotation.JsonPropertyOrder({"kind", "apiVersion", "groupVersion", "resources"})
    record ResourceList(String kind, String apiVersion, String groupVersion, List<Resource> resources) {
    }

    @com.fasterxml.jackson.annotation.JsonPropertyOrder({"name", "singularName", "namespaced", "kind", "verbs"})
    record Resource(String name, String singularName, boolean namespaced, String kind, List<String> verbs) {
    }
}
