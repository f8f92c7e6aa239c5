package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

class KubeTablesTest {

    static final Map<String, Object> OBJECT = Map.of("kind", "Alloc", "metadata", Map.of("name", "a1"), "spec", Map.of());

    @Test
    void aRowCarriesWhatIncludeObjectAsksForAndBuildsTheObjectOnlyThen() {
        AtomicInteger built = new AtomicInteger();
        Map<String, Object> none = KubeTables.row(List.of("a1", 3), "None", "v1", () -> {
            built.incrementAndGet();
            return OBJECT;
        });
        assertThat(none).containsExactly(Map.entry("cells", List.of("a1", 3)));
        assertThat(KubeTables.row(List.of("a1"), null, "v1", () -> {
            built.incrementAndGet();
            return OBJECT;
        })).doesNotContainKey("object");
        assertThat(built).hasValue(0);

        assertThat(KubeTables.row(List.of("a1"), "Object", "v1", () -> OBJECT)).containsEntry("object", OBJECT);
        assertThat(KubeTables.row(List.of("a1"), "Metadata", "v1beta1", () -> OBJECT).get("object"))
                .isEqualTo(Map.of("kind", "PartialObjectMetadata", "apiVersion", "meta.k8s.io/v1beta1",
                        "metadata", Map.of("name", "a1")));
    }

    @Test
    void theTableNamesItsVersionAndKeepsItsPartsInKubectlsOrder() {
        List<Map<String, Object>> columns = List.of(KubeTables.column("Name", "string", "name", 0, "The id."),
                KubeTables.column("Node", "string", "", 1, "Where."));
        assertThat(columns.get(1)).containsExactly(Map.entry("name", "Node"), Map.entry("type", "string"),
                Map.entry("format", ""), Map.entry("description", "Where."), Map.entry("priority", 1));
        List<Object> rows = List.of(KubeTables.row(List.of("a1", "n1"), "None", "v1", () -> OBJECT));
        Map<String, Object> table = KubeTables.table("v1", Map.of("resourceVersion", "7"), columns, rows);
        assertThat(table).containsExactly(Map.entry("kind", "Table"), Map.entry("apiVersion", "meta.k8s.io/v1"),
                Map.entry("metadata", Map.of("resourceVersion", "7")), Map.entry("columnDefinitions", columns),
                Map.entry("rows", rows));
    }
}
