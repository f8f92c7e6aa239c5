package io.unboundedcloud.playpen.model;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The meta.k8s.io Table that kubectl get asks for ({@code Accept: application/json;as=Table}): its column
 * definitions, its rows (with the object or its metadata when kubectl asks with {@code includeObject}) and the
 * envelope. The allocs and pools lists fill them with their own columns and cells.
 */
final class KubeTables {

    private KubeTables() {
    }

    /** A column definition; priority 1 columns show with {@code -o wide} only. */
    static Map<String, Object> column(String name, String type, String format, int priority, String description) {
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("name", name);
        c.put("type", type);
        c.put("format", format);
        c.put("description", description);
        c.put("priority", priority);
        return c;
    }

    /**
     * A row: its cells and, as {@code includeObject} asks ({@code Object}, {@code Metadata} or {@code None}), the
     * whole object or a PartialObjectMetadata of its metadata; {@code object} is built only when asked for.
     */
    static Map<String, Object> row(List<?> cells, String includeObject, String tableVersion,
            Supplier<Map<String, Object>> object) {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("cells", cells);
        if ("Object".equals(includeObject)) {
            row.put("object", object.get());
        } else if ("Metadata".equals(includeObject)) {
            Map<String, Object> partial = new LinkedHashMap<>();
            partial.put("kind", "PartialObjectMetadata");
            partial.put("apiVersion", "meta.k8s.io/" + tableVersion);
            partial.put("metadata", object.get().get("metadata"));
            row.put("object", partial);
        }
        return row;
    }

    /** The Table itself, in the {@code meta.k8s.io} version kubectl asked for. */
    static Map<String, Object> table(String tableVersion, Map<String, Object> listMeta,
            List<Map<String, Object>> columns, List<Object> rows) {
        Map<String, Object> t = new LinkedHashMap<>();
        t.put("kind", "Table");
        t.put("apiVersion", "meta.k8s.io/" + tableVersion);
        t.put("metadata", listMeta);
        t.put("columnDefinitions", columns);
        t.put("rows", rows);
        return t;
    }
}
