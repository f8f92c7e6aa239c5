package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import org.junit.jupiter.api.Test;

/** The TYPE column of the allocs and pools Tables describes its cells with the resource types as the cells show them. */
class TableColumnTypesTest {

    private static String typeDescription(java.util.List<Map<String, Object>> columns) {
        return columns.stream().filter(c -> "Type".equals(c.get("name"))).findFirst().orElseThrow()
                .get("description").toString();
    }

    @Test
    void theTypeColumnNamesTheWireValues() {
        for (ResourceType t : ResourceType.values()) {
            assertThat(typeDescription(AllocViews.COLUMNS)).as("allocs").contains(t.wire()).doesNotContain(
                    "control-plane");
            assertThat(typeDescription(PoolViews.COLUMNS)).as("pools").contains(t.wire());
        }
    }
}
