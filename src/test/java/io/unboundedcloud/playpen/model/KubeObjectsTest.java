package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

class KubeObjectsTest {


    static final Map<String, Object> OBJECT = Map.of("kind", "Alloc", "metadata", Map.of("name", "a1"), "spec", Map.of());

    @Test
    void aRowCarriesWhatIncludeObjectAsksForAndBuildsTheObjectOnlyThen() {
        AtomicInteger built = new AtomicInteger();
        Map<String, Object> none = KubeObjects.row(List.of("a1", 3), "None", "v1", () -> {
            built.incrementAndGet();
            return OBJECT;
        });
        assertThat(none).containsExactly(Map.entry("cells", List.of("a1", 3)));
        assertThat(KubeObjects.row(List.of("a1"), null, "v1", () -> {
            built.incrementAndGet();
            return OBJECT;
        })).doesNotContainKey("object");
        assertThat(built).hasValue(0);

        assertThat(KubeObjects.row(List.of("a1"), "Object", "v1", () -> OBJECT)).containsEntry("object", OBJECT);
        assertThat(KubeObjects.row(List.of("a1"), "Metadata", "v1beta1", () -> OBJECT).get("object"))
                .isEqualTo(Map.of("kind", "PartialObjectMetadata", "apiVersion", "meta.k8s.io/v1beta1",
                        "metadata", Map.of("name", "a1")));
    }

    @Test
    void objectsAndListsCarryTheGroupVersionAndKindFirst() {
        Map<String, Object> o = KubeObjects.object("Pool", Map.of("name", "p"), Map.of("minIdle", 1),
                Map.of("ready", 2));
        assertThat(o).containsExactly(Map.entry("apiVersion", PlaypenKeys.GROUP_VERSION), Map.entry("kind", "Pool"),
                Map.entry("metadata", Map.of("name", "p")), Map.entry("spec", Map.of("minIdle", 1)),
                Map.entry("status", Map.of("ready", 2)));
        assertThat(KubeObjects.list("PoolList", Map.of("resourceVersion", ""), List.of(o))).containsExactly(
                Map.entry("apiVersion", PlaypenKeys.GROUP_VERSION), Map.entry("kind", "PoolList"),
                Map.entry("metadata", Map.of("resourceVersion", "")), Map.entry("items", List.of(o)));
    }

    @Test
    void theListOptionsDefaultAsKubectlExpectsAndRefuseWhatTheyCannotMean() {
        assertThat(KubeObjects.includeObject(Map.of())).isEqualTo("Metadata");
        assertThat(KubeObjects.includeObject(Map.of("includeObject", ""))).isEqualTo("Metadata");
        for (String v : List.of("None", "Metadata", "Object")) {
            assertThat(KubeObjects.includeObject(Map.of("includeObject", v))).isEqualTo(v);
        }
        assertThatThrownBy(() -> KubeObjects.includeObject(Map.of("includeObject", "object")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("invalid value for includeObject: \"object\": must be None, Metadata or Object");
        assertThat(KubeObjects.labelSelector(Map.of()).matches(Map.of("any", "thing"))).isTrue();
        assertThat(KubeObjects.labelSelector(Map.of("labelSelector", "a=b")).matches(Map.of("a", "c"))).isFalse();
        assertThatThrownBy(() -> KubeObjects.labelSelector(Map.of("labelSelector", "a=(")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("invalid labelSelector: ");
    }

    @Test
    void theTableNamesItsVersionAndKeepsItsPartsInKubectlsOrder() {
        List<Map<String, Object>> columns = List.of(KubeObjects.column("Name", "string", "name", 0, "The id."),
                KubeObjects.column("Node", "string", "", 1, "Where."));
        assertThat(columns.get(1)).containsExactly(Map.entry("name", "Node"), Map.entry("type", "string"),
                Map.entry("format", ""), Map.entry("description", "Where."), Map.entry("priority", 1));
        List<Object> rows = List.of(KubeObjects.row(List.of("a1", "n1"), "None", "v1", () -> OBJECT));
        Map<String, Object> table = KubeObjects.table("v1", Map.of("resourceVersion", "7"), columns, rows);
        assertThat(table).containsExactly(Map.entry("kind", "Table"), Map.entry("apiVersion", "meta.k8s.io/v1"),
                Map.entry("metadata", Map.of("resourceVersion", "7")), Map.entry("columnDefinitions", columns),
                Map.entry("rows", rows));
    }
}
