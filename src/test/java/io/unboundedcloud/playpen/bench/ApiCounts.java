package io.unboundedcloud.playpen.bench;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * API requests counted at the mock server between two snapshots of {@code TestCluster.requestSnapshot()},
 * grouped by verb the way kube-apiserver audit logs would: get / list / create / update / patch / delete, with
 * SubjectAccessReviews and Events apart (watches are long-lived and not counted).
 */
final class ApiCounts {
    final Map<String, Integer> byVerb = new TreeMap<>();
    final Map<String, Integer> byKey = new TreeMap<>();

    static ApiCounts between(Map<String, Integer> before, Map<String, Integer> after) {
        ApiCounts c = new ApiCounts();
        after.forEach((key, n) -> {
            int d = n - before.getOrDefault(key, 0);
            if (d <= 0 || key.contains(" WATCH ")) {
                return;
            }
            c.byKey.merge(key, d, Integer::sum);
            c.byVerb.merge(verb(key), d, Integer::sum);
        });
        return c;
    }

    /** "PATCH /api/v1/namespaces/playpen/pods/x" → "patch pods"; SARs → "create subjectaccessreviews". */
    static String verb(String key) {
        int sp = key.indexOf(' ');
        String method = key.substring(0, sp);
        String path = key.substring(sp + 1);
        String[] segs = path.replaceFirst("^/api/v1/?", "").replaceFirst("^/apis/[^/]+/[^/]+/?", "").split("/");
        String[] rest = segs;
        if (segs.length >= 3 && segs[0].equals("namespaces")) {
            rest = java.util.Arrays.copyOfRange(segs, 2, segs.length);
        }
        String resource = rest.length == 0 || rest[0].isEmpty() ? "?" : rest[0];
        boolean item = rest.length >= 2;
        String verb = switch (method) {
            case "GET" -> item ? "get" : "list";
            case "POST" -> "create";
            case "PUT" -> "update";
            case "PATCH" -> "patch";
            case "DELETE" -> item ? "delete" : "deletecollection";
            default -> method.toLowerCase();
        };
        return verb + " " + resource;
    }

    int get(String verbAndResource) {
        return byVerb.getOrDefault(verbAndResource, 0);
    }

    int total() {
        return byVerb.values().stream().mapToInt(Integer::intValue).sum();
    }

    /**
     * Periodic reads of the operator's timers that land in a measured window by chance, not per request: the
     * serving Secret's check (every 10 s), the APIService caBundle check and the front-proxy trust bundle's refresh.
     */
    static final java.util.Set<String> BACKGROUND_READS = java.util.Set.of("secrets", "apiservices", "configmaps");

    static boolean isBackgroundRead(String verb) {
        return verb.startsWith("get ") && BACKGROUND_READS.contains(verb.substring(4));
    }

    /** How many of the requests were background reads (see {@link #BACKGROUND_READS}). */
    int backgroundReads() {
        return byVerb.entrySet().stream().filter(e -> isBackgroundRead(e.getKey())).mapToInt(Map.Entry::getValue).sum();
    }

    /** Requests by verb (all resources): writes, reads, SARs, events and background reads apart. */
    Map<String, Object> perOperation(int operations) {
        int writes = 0;
        int lists = 0;
        int gets = 0;
        int sars = 0;
        int events = 0;
        int background = 0;
        for (Map.Entry<String, Integer> e : byVerb.entrySet()) {
            String v = e.getKey();
            int n = e.getValue();
            if (v.endsWith(" subjectaccessreviews")) {
                sars += n;
            } else if (v.endsWith(" events")) {
                events += n;
            } else if (isBackgroundRead(v)) {
                background += n;
            } else if (v.startsWith("list ")) {
                lists += n;
            } else if (v.startsWith("get ")) {
                gets += n;
            } else {
                writes += n;
            }
        }
        Map<String, Object> m = new LinkedHashMap<>();
        double ops = Math.max(1, operations);
        m.put("operations", operations);
        m.put("writesPerOp", Stats.round(writes / ops));
        m.put("listsPerOp", Stats.round(lists / ops));
        m.put("getsPerOp", Stats.round(gets / ops));
        m.put("subjectAccessReviewsPerOp", Stats.round(sars / ops));
        m.put("eventWritesPerOp", Stats.round(events / ops));
        m.put("backgroundReadsPerOp", Stats.round(background / ops));
        Map<String, Object> verbs = new LinkedHashMap<>();
        byVerb.forEach((k, n) -> verbs.put(k, Stats.round(n / ops)));
        m.put("byVerbPerOp", verbs);
        m.put("totals", new LinkedHashMap<>(byVerb));
        return m;
    }
}
