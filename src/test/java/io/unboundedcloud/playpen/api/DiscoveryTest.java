package io.unboundedcloud.playpen.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

/** The discovery documents byte for byte as the reference writes them (maps: sorted keys; Encode: newline). */
class DiscoveryTest {

    static String golden(String name) throws IOException {
        try (InputStream in = DiscoveryTest.class.getResourceAsStream("/golden/" + name)) {
            assertThat(in).as(name).isNotNull();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @Test
    void apiGroup() throws IOException {
        assertThat(Discovery.API_GROUP).isEqualTo(golden("discovery-api-group.json"));
    }

    /**
     * The reference's document with allocs extended (ours): verbs get, list, delete and watch next to create, the
     * short name alloc and the category playpen; pools (ours, read-only) added last; every other byte (key order,
     * deallocs, the trailing newline) as the reference.
     */
    @Test
    void apiResourceList() throws IOException {
        String reference = golden("discovery-api-resource-list.json");
        String extended = reference.replace("\"singularName\":\"alloc\",\"verbs\":[\"create\"]}",
                "\"shortNames\":[\"alloc\"],\"singularName\":\"alloc\",\"verbs\":[\"create\",\"delete\",\"get\",\"list\",\"watch\"]}")
                .replace("{\"kind\":\"Alloc\",", "{\"categories\":[\"playpen\"],\"kind\":\"Alloc\",")
                .replace("\"verbs\":[\"create\"]}]}", "\"verbs\":[\"create\"]},{\"categories\":[\"playpen\"],"
                        + "\"kind\":\"Pool\",\"name\":\"pools\",\"namespaced\":false,\"singularName\":\"pool\","
                        + "\"verbs\":[\"get\",\"list\"]}]}");
        assertThat(extended).isNotEqualTo(reference);
        assertThat(Discovery.API_RESOURCE_LIST).isEqualTo(extended);
    }
}
