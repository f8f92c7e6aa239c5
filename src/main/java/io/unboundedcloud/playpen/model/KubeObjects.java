package io.unboundedcloud.playpen.model;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.api.Status;

/**
 * What the allocs and pools read APIs share, so both answer kubectl alike: an object's and a list's envelope, the
 * list options both read the same way, and the meta.k8s.io Table that kubectl get asks for
 * ({@code Accept: application/json;as=Table}) with its column definitions and rows.
 */
final class KubeObjects {

    private KubeObjects() {
    }

    /** An object of this API group: kind, metadata, spec and status, in the order kubectl prints them. */
    static Map<String, Object> object(String kind, Map<String, Object> metadata, Map<String, Object> spec,
            Map<String, Object> status) {
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("apiVersion", PlaypenKeys.GROUP_VERSION);
        o.put("kind", kind);
        o.put("metadata", metadata);
        o.put("spec", spec);
        o.put("status", status);
        return o;
    }

    /** A list of this API group's objects. */
    static Map<String, Object> list(String kind, Map<String, Object> listMeta, List<?> items) {
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("apiVersion", PlaypenKeys.GROUP_VERSION);
        o.put("kind", kind);
        o.put("metadata", listMeta);
        o.put("items", items);
        return o;
    }

    /**
     * A list's {@code includeObject} option: what each row carries besides its cells ({@code Metadata}, kubectl's
     * default, when not given); anything but None, Metadata or Object throws IllegalArgumentException (a 400).
     */
    static String includeObject(Map<String, String> params) {
        String include = params.getOrDefault("includeObject", "");
        if (!include.isEmpty() && !List.of("None", "Metadata", "Object").contains(include)) {
            throw new IllegalArgumentException("invalid value for includeObject: " + AllocViews.quoteShort(include)
                    + ": must be None, Metadata or Object");
        }
        return include.isEmpty() ? "Metadata" : include;
    }

    /**
     * Whether a list's options ask for a watch, read as kube-apiserver reads a boolean parameter: present with any
     * value but {@code 0} or {@code false} (in any case), an empty one included.
     */
    static boolean asksWatch(Map<String, String> params) {
        return isTrue(params.get("watch"));
    }

    /** A boolean option as kube-apiserver reads one: true when present with any value but "0" or "false". */
    static boolean isTrue(String value) {
        return value != null && !value.equals("0") && !value.equalsIgnoreCase("false");
    }

    /**
     * Refuses the options a list cannot honour, as kube-apiserver's check of a list's options refuses them, with its
     * 422 Invalid and its words: a {@code resourceVersionMatch} without a {@code resourceVersion} or with a
     * {@code continue} token, other than Exact and NotOlderThan, or Exact for resourceVersion 0; and
     * {@code sendInitialEvents}, with any value, which only a watch can honour. The list is always the allocations
     * or pools as they are now, which meets a valid NotOlderThan; an Exact list of allocations is answered only at
     * that very version (see {@link AllocViews.Query#exactVersion}).
     */
    static void refuseOptionsAListCannotHonour(Map<String, String> params) {
        String match = params.getOrDefault("resourceVersionMatch", "");
        String version = params.getOrDefault("resourceVersion", "");
        List<Status.Cause> errors = new java.util.ArrayList<>();
        if (!match.isEmpty()) {
            if (version.isEmpty()) {
                errors.add(forbidden("resourceVersionMatch",
                        "resourceVersionMatch is forbidden unless resourceVersion is provided"));
            }
            if (!params.getOrDefault("continue", "").isEmpty()) {
                errors.add(forbidden("resourceVersionMatch",
                        "resourceVersionMatch is forbidden when continue is provided"));
            }
            if (!match.equals("Exact") && !match.equals("NotOlderThan")) {
                errors.add(new Status.Cause("FieldValueNotSupported", "Unsupported value: "
                        + AllocViews.quoteShort(match) + ": supported values: \"Exact\", \"NotOlderThan\", \"\"",
                        "resourceVersionMatch"));
            }
            if (match.equals("Exact") && version.equals("0")) {
                errors.add(forbidden("resourceVersionMatch",
                        "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""));
            }
        }
        if (params.containsKey("sendInitialEvents")) {
            errors.add(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
        }
        if (!errors.isEmpty()) {
            throw ApiException.invalid("meta.k8s.io", "ListOptions", errors);
        }
    }

    /** kube-apiserver's Forbidden error of a field, as its StatusCause has it. */
    static Status.Cause forbidden(String field, String detail) {
        return new Status.Cause("FieldValueForbidden", "Forbidden: " + detail, field);
    }

    /** The options only a list reads; a get or delete of one object ignores them, as kube-apiserver does. */
    private static final List<String> LIST_ONLY = List.of("limit", "continue", "fieldSelector", "labelSelector",
            "resourceVersionMatch", "sendInitialEvents");

    /**
     * The query's options as a read of {@code name} takes them: all of them for a list ({@code name} null), and
     * without the list-only ones for one object, which neither hide it nor make its read a 400.
     */
    static Map<String, String> optionsFor(String name, Map<String, String> params) {
        if (name == null) {
            return params;
        }
        Map<String, String> own = new LinkedHashMap<>(params);
        own.keySet().removeAll(LIST_ONLY);
        return own;
    }

    /** A list's {@code labelSelector} option (empty: everything); a bad one throws IllegalArgumentException. */
    static LabelSelector labelSelector(Map<String, String> params) {
        try {
            return LabelSelector.parse(params.getOrDefault("labelSelector", ""));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("invalid labelSelector: " + e.getMessage());
        }
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
