package io.unboundedcloud.playpen.api;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class DiscoveryTest {

    @Test
    void apiGroup() {
        assertThat(Discovery.API_GROUP).isEqualTo("{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\","
                + "\"name\":\"playpen.unbounded-cloud.io\","
                + "\"versions\":[{\"groupVersion\":\"playpen.unbounded-cloud.io/v1alpha1\",\"version\":\"v1alpha1\"}],"
                + "\"preferredVersion\":{\"groupVersion\":\"playpen.unbounded-cloud.io/v1alpha1\",\"version\":\"v1alpha1\"}}");
    }

    @Test
    void apiResourceList() {
        assertThat(Discovery.API_RESOURCE_LIST).isEqualTo("{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\","
                + "\"groupVersion\":\"playpen.unbounded-cloud.io/v1alpha1\",\"resources\":["
                + "{\"name\":\"allocs\",\"singularName\":\"alloc\",\"namespaced\":false,\"kind\":\"Alloc\",\"verbs\":[\"create\"]},"
                + "{\"name\":\"deallocs\",\"singularName\":\"dealloc\",\"namespaced\":false,\"kind\":\"Dealloc\",\"verbs\":[\"create\"]}]}");
    }
}
