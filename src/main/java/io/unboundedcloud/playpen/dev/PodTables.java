package io.unboundedcloud.playpen.dev;

import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.unboundedcloud.playpen.model.AllocViews;

/**
 * kube-apiserver answers {@code kubectl get pods} with a server-side Table (NAME, READY, STATUS, RESTARTS, AGE, and
 * with {@code -o wide} IP, NODE, NOMINATED NODE, READINESS GATES); the simulated API server has no tables, so kubectl
 * would print only NAME and AGE. The stand-in builds the Table from the pods like kube-apiserver's pod printer does
 * for the states the simulated kubelet produces (no init containers, no ephemeral containers), rows in the order
 * kube-apiserver lists them (namespace, then name).
 */
final class PodTables {
    private static final ObjectMapper M = new ObjectMapper();
    /** GET of pods: every namespace, one namespace, or one pod. */
    private static final Pattern PODS = Pattern.compile("/api/v1(/namespaces/[^/]+)?/pods(/[^/]+)?");

    private PodTables() {
    }

    /** Whether kubectl asks for a Table of pods (GET with {@code as=Table} in Accept) that the stand-in must build. */
    static boolean wanted(String method, String rawPath, String query, String accept) {
        return "GET".equals(method) && PODS.matcher(rawPath).matches() && accept != null && accept.contains("as=Table")
                && !query.matches("(^|.*&)watch=(true|1)(&.*|$)");
    }

    /** The Table for a Pod or PodList as JSON, rows in the list's order; {@code includeObject} as the query said. */
    static String table(JsonNode podOrList, String includeObject, Instant now) {
        List<JsonNode> pods = new ArrayList<>();
        if (podOrList.has("items")) {
            podOrList.get("items").forEach(pods::add);
        } else {
            pods.add(podOrList);
        }
        // kube-apiserver lists in key order (namespace, then name); the simulated API server in no fixed order
        pods.sort(java.util.Comparator.comparing((JsonNode p) -> text(p.path("metadata"), "namespace"))
                .thenComparing(p -> text(p.path("metadata"), "name")));
        Map<String, Object> table = new LinkedHashMap<>();
        table.put("kind", "Table");
        table.put("apiVersion", "meta.k8s.io/v1");
        Map<String, Object> meta = new LinkedHashMap<>();
        JsonNode listMeta = podOrList.path("metadata");
        if (podOrList.has("items") && listMeta.has("resourceVersion")) {
            meta.put("resourceVersion", listMeta.get("resourceVersion").asText());
        }
        table.put("metadata", meta);
        table.put("columnDefinitions", List.of(
                column("Name", "name", 0, "Name must be unique within a namespace."),
                column("Ready", "", 0, "The aggregate readiness state of this pod for accepting traffic."),
                column("Status", "", 0, "The aggregate status of the containers in this pod."),
                column("Restarts", "", 0, "The number of times the containers in this pod have been restarted."),
                column("Age", "", 0, "CreationTimestamp is a timestamp representing the server time when this object was created."),
                column("IP", "", 1, "IP address allocated to the pod. Empty if not yet allocated."),
                column("Node", "", 1, "NodeName is the node the pod is bound to."),
                column("Nominated Node", "", 1, "The node the scheduler nominated for the pod, if any."),
                column("Readiness Gates", "", 1, "Readiness gates of the pod, if any.")));
        List<Map<String, Object>> rows = new ArrayList<>();
        for (JsonNode pod : pods) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("cells", cells(pod, now));
            if ("Object".equals(includeObject)) {
                row.put("object", pod);
            } else if (!"None".equals(includeObject)) {
                Map<String, Object> partial = new LinkedHashMap<>();
                partial.put("kind", "PartialObjectMetadata");
                partial.put("apiVersion", "meta.k8s.io/v1");
                partial.put("metadata", pod.path("metadata"));
                row.put("object", partial);
            }
            rows.add(row);
        }
        table.put("rows", rows);
        try {
            return M.writeValueAsString(table);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Map<String, Object> column(String name, String format, int priority, String description) {
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("name", name);
        c.put("type", "string");
        c.put("format", format);
        c.put("description", description);
        c.put("priority", priority);
        return c;
    }

    /** NAME, READY, STATUS, RESTARTS, AGE, IP, NODE, NOMINATED NODE, READINESS GATES, as kubectl prints them. */
    static List<Object> cells(JsonNode pod, Instant now) {
        JsonNode status = pod.path("status");
        JsonNode containers = pod.path("spec").path("containers");
        String reason = text(status, "phase");
        if (!text(status, "reason").isEmpty()) {
            reason = text(status, "reason");
        }
        int ready = 0;
        long restarts = 0;
        boolean running = false;
        for (JsonNode c : status.path("containerStatuses")) {
            restarts += c.path("restartCount").asLong(0);
            JsonNode state = c.path("state");
            if (!text(state.path("waiting"), "reason").isEmpty()) {
                reason = text(state.path("waiting"), "reason");
            } else if (!text(state.path("terminated"), "reason").isEmpty()) {
                reason = text(state.path("terminated"), "reason");
            } else if (state.has("terminated")) {
                int signal = state.path("terminated").path("signal").asInt(0);
                reason = signal != 0 ? "Signal:" + signal : "ExitCode:" + state.path("terminated").path("exitCode").asInt(0);
            } else if (c.path("ready").asBoolean(false) && state.has("running")) {
                running = true;
                ready++;
            }
        }
        if ("Completed".equals(reason) && running) {
            reason = "Running";
        }
        if (reason.isEmpty()) {
            reason = "Pending";
        }
        if (pod.path("metadata").has("deletionTimestamp")) {
            reason = "Terminating";
        }
        List<Object> cells = new ArrayList<>();
        cells.add(text(pod.path("metadata"), "name"));
        cells.add(ready + "/" + (containers.isArray() ? containers.size() : 0));
        cells.add(reason);
        cells.add(restarts);
        cells.add(age(text(pod.path("metadata"), "creationTimestamp"), now));
        cells.add(orNone(text(status, "podIP")));
        cells.add(orNone(text(pod.path("spec"), "nodeName")));
        cells.add(orNone(text(status, "nominatedNodeName")));
        int gates = pod.path("spec").path("readinessGates").size();
        cells.add(gates == 0 ? "<none>" : "0/" + gates);
        return cells;
    }

    private static String age(String created, Instant now) {
        try {
            return AllocViews.humanDuration(Duration.between(Instant.parse(created), now));
        } catch (DateTimeParseException e) {
            return "<unknown>";
        }
    }

    private static String text(JsonNode node, String field) {
        JsonNode v = node.path(field);
        return v.isValueNode() ? v.asText() : "";
    }

    private static String orNone(String s) {
        return s.isEmpty() ? "<none>" : s;
    }

    static JsonNode parse(byte[] json) throws java.io.IOException {
        return M.readTree(json);
    }
}
