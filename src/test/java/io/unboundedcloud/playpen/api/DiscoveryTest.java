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

    @Test
    void apiResourceList() throws IOException {
        assertThat(Discovery.API_RESOURCE_LIST).isEqualTo(golden("discovery-api-resource-list.json"));
    }
}
