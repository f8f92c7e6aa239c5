package io.unboundedcloud.playpen.docs;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The tables of docs/performance.md and docs/reliability.md, made from the bench's {@code target/bench/results.json}
 * and the chaos suite's {@code target/chaos/report.json}: what was measured, against which target, met or not, and
 * how the run was configured; nothing about who ran it when.
 */
final class ReportTables {
    private ReportTables() {
    }

    /** How each bench target reads in the document; a target not listed here shows under its own key. */
    private static final Map<String, String> TARGETS = new LinkedHashMap<>();

    static {
        // longer keys before the keys they start with
        TARGETS.put("replicasScaleOut", "several replicas of the jar: conflicts per new allocation, operator CPU against one replica's");
        TARGETS.put("hotPathSelectionWith", "hot-path candidate selection, CPU per call");
        TARGETS.put("allocOverBarePatchAt", "alloc p50 / bare PATCH p50, c=1, against the same ratio");
        TARGETS.put("startupToReadyWithin5s", "startup to ready with the large pool");
        TARGETS.put("startupToReadyWith", "packaged jar, startup to ready");
        TARGETS.put("newAllocationApiCalls", "API calls on the request path per new allocation");
        TARGETS.put("writesInAllPerNewAlloc", "API writes per new allocation, Events included");
        TARGETS.put("conflictsPerNewAlloc", "self-inflicted conflicts per new allocation");
        TARGETS.put("selectionCpuFlatInN", "hot-path candidate selection, CPU per call, largest over the pool sizes");
        TARGETS.put("p50VsFloorPlusBaseline", "alloc p50 / (TLS floor p50 + bare PATCH p50)");
        TARGETS.put("replayP50VsFloor", "replay p50 / TLS floor p50");
        TARGETS.put("p50VsBaseline", "alloc p50 / bare PATCH p50");
        TARGETS.put("throughputVsBaseline", "alloc / bare PATCH throughput");
        TARGETS.put("throughputVsReference", "ours / the Go operator's request pattern, throughput");
        TARGETS.put("gapGrowsWithN", "the lead over the Go pattern grows with the pool size");
        TARGETS.put("refillCreateWithin1s", "claim answered to replacement pod created");
        TARGETS.put("ttlLatenessWithin1s", "TTL expiry lateness");
        TARGETS.put("idleReconcile", "idle reconcile pass");
        TARGETS.put("rssWith", "resident memory of the packaged jar");
        TARGETS.put("memoryPerCachedPod", "memory per cached pod");
    }

    /** Fields that describe a target rather than measure it. */
    private static final List<String> NOT_MEASURED = List.of("limit", "pass", "note", "floorNote", "source");

    static String benchTables(JsonNode results) {
        StringBuilder sb = new StringBuilder();
        JsonNode config = results.path("config");
        sb.append("Run: ").append(config.path("pods").asText("?")).append(" ready runner pods, concurrency ")
                .append(join(config.path("concurrency"))).append(", ").append(config.path("availableProcessors").asText("?"))
                .append(" CPUs, ").append(config.path("java").asText("?")).append(", ")
                .append(results.path("benchSeconds").asLong()).append(" s in all.\n\n");
        sb.append("| target | measured | limit | result |\n| --- | --- | --- | --- |\n");
        for (Iterator<Map.Entry<String, JsonNode>> it = results.path("targets").fields(); it.hasNext();) {
            Map.Entry<String, JsonNode> t = it.next();
            sb.append("| ").append(targetName(t.getKey())).append(" | ").append(measured(t.getValue())).append(" | ")
                    .append(limit(t.getValue())).append(" | ").append(result(t.getValue().path("pass"))).append(" |\n");
        }
        sb.append("\n| scenario | pods | concurrency | p50 ms | p99 ms | per second | errors |\n")
                .append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
        for (JsonNode r : results.path("runs")) {
            sb.append("| ").append(r.path("scenario").asText()).append(" | ").append(r.path("pods").asText()).append(" | ")
                    .append(r.path("concurrency").asText()).append(" | ").append(num(r.path("p50Ms"))).append(" | ")
                    .append(num(r.path("p99Ms"))).append(" | ").append(num(r.path("throughputPerSec"))).append(" | ")
                    .append(r.path("errors").asText("0")).append(" |\n");
        }
        JsonNode jar = results.path("operatorProcessAllocs");
        if (jar.isObject() && jar.size() > 0) {
            sb.append("\n| packaged jar | allocations per second | operator CPU per allocation (us) | of it JIT (us) | p50 ms |\n")
                    .append("| --- | ---: | ---: | ---: | ---: |\n");
            for (Iterator<Map.Entry<String, JsonNode>> it = jar.fields(); it.hasNext();) {
                Map.Entry<String, JsonNode> e = it.next();
                JsonNode m = e.getValue();
                sb.append("| ").append(jarRun(e.getKey())).append(" | ").append(num(m.path("perSec"))).append(" | ")
                        .append(num(m.path("operatorCpuMicrosPerAlloc"))).append(" | ")
                        .append(num(m.path("jitCpuMicrosPerAlloc"))).append(" | ").append(num(m.path("p50Ms"))).append(" |\n");
            }
        }
        return sb.toString();
    }

    /**
     * "replicas2_c32_warm" reads "2 replicas, c=32, steady state"; "_oneServing" adds "every request to one of them"
     * and "_again" (a replica count the bench measured a second time) "measured again".
     */
    static String jarRun(String key) {
        java.util.regex.Matcher m = java.util.regex.Pattern
                .compile("replicas(\\d+)_c(\\d+)(_warm)?(_oneServing)?(_again)?").matcher(key);
        if (!m.matches()) {
            return key;
        }
        return m.group(1) + (m.group(1).equals("1") ? " replica" : " replicas") + ", c=" + m.group(2)
                + (m.group(3) != null ? ", steady state" : ", fresh process")
                + (m.group(4) != null ? ", every request to one of them" : "")
                + (m.group(5) != null ? ", measured again" : "");
    }

    static String targetName(String key) {
        for (Map.Entry<String, String> e : TARGETS.entrySet()) {
            if (key.startsWith(e.getKey())) {
                String rest = key.substring(e.getKey().length());
                java.util.regex.Matcher at = java.util.regex.Pattern.compile("AtC(\\d+)").matcher(rest);
                java.util.regex.Matcher n = java.util.regex.Pattern.compile("^(?:AtN|At|With)?(\\d+)").matcher(rest);
                java.util.regex.Matcher vs = java.util.regex.Pattern.compile("VsAt(\\d+)").matcher(rest);
                String where = at.find() ? ", c=" + at.group(1)
                        : n.find() ? ", " + num(n.group(1)) + " pods" + (vs.find() ? " against " + num(vs.group(1)) : "")
                        : "";
                return e.getValue() + where;
            }
        }
        return key;
    }

    /** The measured values of a target, nested ones (per concurrency) as "c1: ...". */
    static String measured(JsonNode target) {
        List<String> parts = new ArrayList<>();
        boolean nested = false;
        for (Iterator<Map.Entry<String, JsonNode>> it = target.fields(); it.hasNext();) {
            Map.Entry<String, JsonNode> f = it.next();
            if (NOT_MEASURED.contains(f.getKey())) {
                continue;
            }
            JsonNode v = f.getValue();
            if (v.isObject()) {
                nested = true;
                parts.add(f.getKey() + ": " + measured(v));
            } else if (v.isNumber()) {
                parts.add(f.getKey() + " " + num(v));
            } else if (!v.isNull()) {
                parts.add(f.getKey() + " " + v.asText());
            }
        }
        return ConfigurationDocTest.cell(String.join(nested ? "; " : ", ", parts));
    }

    private static String limit(JsonNode target) {
        return target.has("limit") ? ConfigurationDocTest.cell(target.get("limit").asText()) : "";
    }

    static String result(JsonNode pass) {
        if (pass.isBoolean()) {
            return pass.asBoolean() ? "met" : "**missed**";
        }
        return "report";
    }

    private static String num(String digits) {
        return num(new com.fasterxml.jackson.databind.node.LongNode(Long.parseLong(digits)));
    }

    static String num(JsonNode v) {
        if (!v.isNumber()) {
            return v.isMissingNode() || v.isNull() ? "-" : v.asText();
        }
        double d = v.asDouble();
        if (d == Math.rint(d) && Math.abs(d) < 1e15) {
            return String.format(Locale.ROOT, "%,d", (long) d);
        }
        return Math.abs(d) >= 100 ? String.format(Locale.ROOT, "%,.0f", d)
                : Math.abs(d) >= 10 ? String.format(Locale.ROOT, "%.1f", d) : String.format(Locale.ROOT, "%.2f", d);
    }

    private static String join(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(x -> out.add(x.asText()));
        return String.join(", ", out);
    }

    static String chaosTables(JsonNode report) {
        StringBuilder sb = new StringBuilder();
        sb.append("Run: seed ").append(report.path("seed").asText()).append(", ").append(report.path("totalSeconds").asLong())
                .append(" s in all, **").append(report.path("violations").asInt())
                .append(report.path("violations").asInt() == 1 ? " invariant violation" : " invariant violations").append("**.\n\n");
        sb.append("| scenario | load | faults | attempts | outcomes (attempts by status) | violations | recovery | s |\n")
                .append("| --- | --- | --- | ---: | --- | ---: | --- | ---: |\n");
        for (JsonNode s : report.path("scenarios")) {
            List<String> outcomes = new ArrayList<>();
            for (Iterator<Map.Entry<String, JsonNode>> it = s.path("outcomes").fields(); it.hasNext();) {
                Map.Entry<String, JsonNode> o = it.next();
                outcomes.add(o.getKey() + ": " + o.getValue().asText());
            }
            List<String> recovery = new ArrayList<>();
            for (Iterator<Map.Entry<String, JsonNode>> it = s.path("recovery").fields(); it.hasNext();) {
                Map.Entry<String, JsonNode> r = it.next();
                recovery.add(r.getKey() + ": " + r.getValue().asText());
            }
            sb.append("| ").append(ConfigurationDocTest.cell(s.path("scenario").asText())).append(" | ")
                    .append(ConfigurationDocTest.cell(s.path("load").asText())).append(" | ")
                    .append(ConfigurationDocTest.cell(s.path("faults").asText())).append(" | ")
                    .append(s.path("requests").asText()).append(" | ").append(String.join(", ", outcomes)).append(" | ")
                    .append(s.path("violations").size()).append(" | ")
                    .append(recovery.isEmpty() ? "-" : ConfigurationDocTest.cell(String.join(", ", recovery))).append(" | ")
                    .append(s.path("seconds").asText()).append(" |\n");
        }
        List<String> violations = new ArrayList<>();
        for (JsonNode s : report.path("scenarios")) {
            for (JsonNode v : s.path("violations")) {
                violations.add("- " + s.path("scenario").asText() + ": " + v.asText());
            }
        }
        if (!violations.isEmpty()) {
            sb.append("\nViolations:\n\n").append(String.join("\n", violations)).append('\n');
        }
        if (report.path("startupNotes").size() > 0) {
            sb.append("\nStartup notes:\n\n");
            report.path("startupNotes").forEach(n -> sb.append("- ").append(n.asText()).append('\n'));
        }
        return sb.toString();
    }
}
