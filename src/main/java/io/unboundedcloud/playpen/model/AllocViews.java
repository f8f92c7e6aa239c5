package io.unboundedcloud.playpen.model;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.Function;
import java.util.regex.Pattern;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.api.Status;

/**
 * Allocations as a read-only kubectl resource ({@code kind: Alloc}): one per claimed managed pod, named by the
 * allocation id of its {@code allocated} label. Builds the objects, lists and server-side Tables kubectl prints, and
 * parses the list options (limit, continue, fieldSelector, labelSelector). Never exposes the idempotency key or its
 * hash.
 */
public final class AllocViews {
    public static final String KIND = "Alloc";
    public static final String LIST_KIND = "AllocList";
    /** Bounds on list options: longer values are refused with 400 before anything is parsed. */
    public static final int MAX_OPTION_CHARS = 1024;
    private static final Pattern ID = Pattern.compile("[0-9a-f]{16}");

    private AllocViews() {
    }

    /**
     * One allocation as its owner sees it. {@code expiresAt} is null when it never expires; {@code deletionTimestamp}
     * is null unless its pod is being deleted.
     */
    public record Alloc(String name, String uid, String resourceVersion, Instant claimedAt, String resourceType,
            String architecture, String kubernetesVersion, String pod, String node, String endpoint, Instant expiresAt,
            String ownerHash, String keyHash, Instant deletionTimestamp) {
        /** The same allocation as of another resourceVersion (a watch's DELETED event carries the deletion's). */
        public Alloc atVersion(String version) {
            return new Alloc(name, uid, version, claimedAt, resourceType, architecture, kubernetesVersion, pod, node,
                    endpoint, expiresAt, ownerHash, keyHash, deletionTimestamp);
        }
    }

    /**
     * The options of one read: a name (get/delete) or none (list), and how to render. {@code exactVersion}: the
     * resourceVersion a list asked for exactly (resourceVersionMatch=Exact; null: none), which only a list read at
     * that very version may answer.
     */
    public record Query(String name, long limit, String continueAfter, List<String[]> fieldTerms,
            LabelSelector labelSelector, boolean table, String tableVersion, String includeObject, Watch watch,
            String exactVersion) {
        /**
         * The name kube-apiserver authorizes this read with: the one allocation's, or the one a list's
         * {@code fieldSelector} requires (see {@link #listReview}), read from the terms already parsed.
         */
        public String reviewedName() {
            if (name != null) {
                return name;
            }
            for (String[] t : fieldTerms) {
                if (!t[1].equals("!=")) {
                    return nameOrNull(t[2]);
                }
            }
            return null;
        }
    }

    /** Whether an id looks like an allocation id: 16 lowercase hex characters. */
    public static boolean validName(String name) {
        return name != null && ID.matcher(name).matches();
    }

    /**
     * The allocation of a pod: claimed (key hash and {@code allocated} label) and managed; empty otherwise. A pod being
     * deleted (a deletionTimestamp, still there) is still its allocation, with that deletionTimestamp, as
     * kube-apiserver shows an object being deleted. {@code externalIp} maps a node name to its ExternalIP; {@code leases} give the allocation its
     * expiry (none when it never expires, and none shown for a claim already expired for want of a usable
     * claimed-at).
     */
    public static Optional<Alloc> of(Pod pod, Function<String, Optional<String>> externalIp, TtlPolicy leases) {
        if (!ManagedPods.isManaged(pod) || !ManagedPods.isClaimed(pod)) {
            return Optional.empty();
        }
        String id = ManagedPods.labels(pod).get(PlaypenKeys.ALLOCATED);
        if (id == null || id.isEmpty()) {
            return Optional.empty();
        }
        Map<String, String> ann = ManagedPods.annotations(pod);
        Instant claimed = TtlPolicy.claimedAt(pod).orElse(null);
        String node = pod.getSpec() == null || pod.getSpec().getNodeName() == null ? "" : pod.getSpec().getNodeName();
        OptionalInt port = ManagedPods.hostPort(pod);
        String ip = node.isEmpty() ? "" : externalIp.apply(node).orElse("");
        String endpoint = ip.isEmpty() || port.isEmpty() ? "" : GoStrings.joinHostPort(ip, port.getAsInt());
        String uid = pod.getMetadata().getUid() == null ? Hashes.sha256Hex(pod.getMetadata().getNamespace() + "/"
                + ManagedPods.name(pod) + "/" + ann.getOrDefault(PlaypenKeys.CLAIMED_AT, "")) : pod.getMetadata().getUid();
        String type = ManagedPods.resourceType(pod).map(ResourceType::wire).orElse("");
        return Optional.of(new Alloc(id, uid, nullToEmpty(pod.getMetadata().getResourceVersion()), claimed, type,
                ManagedPods.architecture(pod), ManagedPods.kubernetesVersion(pod), ManagedPods.name(pod), node,
                endpoint, leases.expiresAt(pod).filter(at -> !at.equals(TtlPolicy.ALREADY_EXPIRED)).orElse(null),
                ManagedPods.ownerHash(pod), ManagedPods.keyHash(pod), deletionTimestamp(pod)));
    }

    /** When the pod's delete was asked, in whole seconds as kube-apiserver writes it; null when it is not being deleted. */
    private static Instant deletionTimestamp(Pod pod) {
        if (!ManagedPods.isTerminating(pod)) {
            return null;
        }
        try {
            return Instant.parse(pod.getMetadata().getDeletionTimestamp()).truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
        } catch (java.time.format.DateTimeParseException e) {
            return null;
        }
    }

    /**
     * The allocations among {@code pods} the caller may see, told apart by their owner-hash annotation ({@code owner}
     * null = everyone's; an owner may be recorded in more than one form), with the expiry {@code leases} give them,
     * matching the query, sorted by name, at most {@code limit} after the continue point; returns them and the next
     * continue token ("" when complete).
     */
    public static Page selectMatching(Collection<Pod> pods, Function<String, Optional<String>> externalIp,
            TtlPolicy leases, java.util.function.Predicate<String> owner, Query q) {
        List<Alloc> all = new ArrayList<>();
        for (Pod p : pods) {
            of(p, externalIp, leases).filter(a -> owner == null || owner.test(a.ownerHash()))
                    .filter(a -> q.name() == null || q.name().equals(a.name()))
                    .filter(a -> fieldsMatch(q.fieldTerms(), a))
                    .filter(a -> q.labelSelector().matches(Map.of()))
                    .filter(a -> q.continueAfter().isEmpty() || a.name().compareTo(q.continueAfter()) > 0)
                    .ifPresent(all::add);
        }
        all.sort(Comparator.comparing(Alloc::name).thenComparing(Alloc::pod));
        if (q.limit() > 0 && all.size() > q.limit()) {
            List<Alloc> page = List.copyOf(all.subList(0, (int) q.limit()));
            return new Page(page, encodeContinue(page.get(page.size() - 1).name()));
        }
        return new Page(List.copyOf(all), "");
    }

    /**
     * One page of allocations, the token for the next ("" = none) and the resourceVersion of the pods' list it was
     * read from ("" = none), where a watch of what follows starts.
     */
    public record Page(List<Alloc> items, String continueToken, String resourceVersion) {
        public Page(List<Alloc> items, String continueToken) {
            this(items, continueToken, "");
        }

        public Page withResourceVersion(String version) {
            return new Page(items, continueToken, version == null ? "" : version);
        }
    }

    /** A watch event of one allocation: {@code type} ADDED, MODIFIED or DELETED, as a Table or the Alloc. */
    public static Map<String, Object> watchEvent(String type, Alloc a, Query q, Instant now) {
        Map<String, Object> event = new LinkedHashMap<>();
        event.put("type", type);
        event.put("object", q.table() ? table(new Page(List.of(a), "", a.resourceVersion()), q, now) : object(a));
        return event;
    }

    private static boolean fieldsMatch(List<String[]> terms, Alloc a) {
        for (String[] t : terms) {
            boolean eq = a.name().equals(t[2]);
            if (t[1].equals("!=") == eq) {
                return false;
            }
        }
        return true;
    }

    // ---- list options ----

    /**
     * Parses the raw query string of a read ({@code name} null for a list). Bad or oversized options are 400 with
     * the reason; unknown options are ignored like Kubernetes does, and so are the list options on a read of one
     * allocation.
     */
    public static Query parseQuery(String name, String rawQuery, String accept) {
        Map<String, String> params = KubeObjects.optionsFor(name, params(rawQuery));
        long limit = limit(params);
        String cont = params.getOrDefault("continue", "");
        String after = cont.isEmpty() ? "" : decodeContinue(cont);
        List<String[]> terms = fieldTerms(params.getOrDefault("fieldSelector", ""));
        LabelSelector labels = KubeObjects.labelSelector(params);
        String include = KubeObjects.includeObject(params);
        Watch watch = null;
        String exact = null;
        if (KubeObjects.asksWatch(params)) {
            watch = watchOptions(params);
        } else {
            KubeObjects.refuseOptionsAListCannotHonour(params);
            if ("Exact".equals(params.get("resourceVersionMatch"))) {
                exact = params.get("resourceVersion");
            }
        }
        String tableVersion = tableVersion(accept);
        return new Query(name, limit, after, terms, labels, tableVersion != null, tableVersion, include, watch, exact);
    }

    /**
     * A watch's options, as kube-apiserver reads them. {@code resourceVersion} is where it starts: after that
     * version, or (empty or "0") with every allocation there is now as an ADDED event first, as kube-apiserver
     * starts a watch without one. {@code initialEvents} says whether those come; {@code bookmarkInitialEnd} whether
     * a BOOKMARK marks their end ({@code sendInitialEvents=true}, which kube-apiserver takes only beside
     * {@code resourceVersionMatch=NotOlderThan} and {@code allowWatchBookmarks=true}). {@code timeoutSeconds} ends
     * the watch (0: the server's own limit). {@code bookmarks}: the client asked for BOOKMARK events
     * ({@code allowWatchBookmarks=true}), which move its version on while nothing it watches changes.
     */
    public record Watch(String resourceVersion, long timeoutSeconds, boolean initialEvents, boolean bookmarkInitialEnd,
            boolean bookmarks) {
    }

    static Watch watchOptions(Map<String, String> params) {
        String version = params.getOrDefault("resourceVersion", "");
        if (!version.isEmpty() && !version.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new IllegalArgumentException("invalid value for resourceVersion: " + quoteShort(version)
                    + ": a watch starts from a resourceVersion a list of allocs answered (kubectl get allocs -o"
                    + " jsonpath='{.metadata.resourceVersion}'), or from none");
        }
        long timeout = nonNegative(params, "timeoutSeconds");
        String send = params.get("sendInitialEvents");
        String match = params.getOrDefault("resourceVersionMatch", "");
        boolean bookmarks = KubeObjects.isTrue(params.get("allowWatchBookmarks"));
        List<Status.Cause> errors = new ArrayList<>();
        // kube-apiserver's check of a watch's options, cause for cause and in its order
        if (send != null) {
            if (!match.equals("NotOlderThan")) {
                errors.add(KubeObjects.forbidden("resourceVersionMatch",
                        "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"));
            }
            if (!bookmarks) {
                errors.add(KubeObjects.forbidden("allowWatchBookmarks",
                        "sendInitialEvents requires setting allowWatchBookmarks to true"));
            }
        }
        if (!match.isEmpty()) {
            if (send == null) {
                errors.add(KubeObjects.forbidden("resourceVersionMatch",
                        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"));
            }
            if (!match.equals("NotOlderThan")) {
                errors.add(new Status.Cause("FieldValueNotSupported", "Unsupported value: " + quoteShort(match)
                        + ": supported values: \"NotOlderThan\"", "resourceVersionMatch"));
            }
            if (!params.getOrDefault("continue", "").isEmpty()) {
                errors.add(KubeObjects.forbidden("resourceVersionMatch",
                        "resourceVersionMatch is forbidden when continue is provided"));
            }
        }
        if (!errors.isEmpty()) {
            throw ApiException.invalid("meta.k8s.io", "ListOptions", errors);
        }
        boolean sendInitial = send != null && KubeObjects.isTrue(send);
        boolean initial = send != null ? sendInitial : version.isEmpty() || version.equals("0");
        return new Watch(version, timeout, initial, sendInitial, bookmarks);
    }

    /** A list's {@code limit} (0 when absent or empty); anything but a non-negative 64-bit integer is a 400. */
    static long limit(Map<String, String> params) {
        return nonNegative(params, "limit");
    }

    /** The option {@code name} (0 when absent or empty); anything but a non-negative 64-bit integer is a 400. */
    private static long nonNegative(Map<String, String> params, String name) {
        String raw = params.get(name);
        if (raw == null || raw.isEmpty()) {
            return 0;
        }
        long value;
        try {
            value = Long.parseLong(raw);
        } catch (NumberFormatException e) {
            value = -1;
        }
        if (value < 0) {
            throw new IllegalArgumentException("invalid value for " + name + ": " + quoteShort(raw)
                    + ": must be a non-negative 64-bit integer");
        }
        return value;
    }

    /** The verb and the name (null: none) kube-apiserver authorizes a list with. */
    public record ListReview(String verb, String name) {
    }

    /**
     * What kube-apiserver authorizes a list with, from one reading of its query: the verb watch when its options ask
     * for a watch, list otherwise; and the one name its {@code fieldSelector}
     * requires ({@code metadata.name=<name>} or {@code ==}), as it authorizes a get of that name, or null when there
     * is none or it could not be a name (".", "..", or with "/" or "%"). A query that cannot be read is reviewed as a
     * plain list (its 400 follows, from the parse). Never throws.
     */
    public static ListReview listReview(String rawQuery) {
        Map<String, String> params;
        try {
            params = params(rawQuery);
        } catch (RuntimeException e) {
            return new ListReview("list", null);
        }
        return new ListReview(KubeObjects.asksWatch(params) ? "watch" : "list",
                fieldSelectedName(params.getOrDefault("fieldSelector", "")));
    }

    private static String fieldSelectedName(String selector) {
        for (String term : selector.split(",")) {
            String t = term.trim();
            if (t.contains("!=")) {
                continue;
            }
            String op = t.contains("==") ? "==" : "=";
            int at = t.indexOf(op);
            if (at < 0 || !t.substring(0, at).trim().equals("metadata.name")) {
                continue;
            }
            return nameOrNull(t.substring(at + op.length()).trim());
        }
        return null;
    }

    /** {@code value} when it could be a name; null for "", ".", ".." and anything with "/" or "%". */
    private static String nameOrNull(String value) {
        return value.isEmpty() || value.equals(".") || value.equals("..") || value.contains("/") || value.contains("%")
                ? null : value;
    }

    /** "v1" or "v1beta1" when the Accept header asks for a meta.k8s.io Table (v1 preferred), else null. */
    static String tableVersion(String accept) {
        if (accept == null) {
            return null;
        }
        String found = null;
        for (String range : accept.split(",")) {
            String r = range.replace(" ", "").toLowerCase(Locale.ROOT);
            if (!r.startsWith("application/json;") || !r.contains(";as=table") || !r.contains(";g=meta.k8s.io")) {
                continue;
            }
            if (r.contains(";v=v1;") || r.endsWith(";v=v1")) {
                return "v1";
            }
            if (r.contains(";v=v1beta1")) {
                found = "v1beta1";
            }
        }
        return found;
    }

    private static List<String[]> fieldTerms(String selector) {
        List<String[]> out = new ArrayList<>();
        if (selector.isBlank()) {
            return out;
        }
        for (String term : selector.split(",", -1)) {
            String t = term.trim();
            if (t.isEmpty()) {
                continue; // an empty term (a trailing comma) selects nothing more, as kube-apiserver reads it
            }
            String op = t.contains("!=") ? "!=" : t.contains("==") ? "==" : t.contains("=") ? "=" : null;
            if (op == null) {
                throw new IllegalArgumentException("invalid fieldSelector: " + quoteShort(t)
                        + ": each term must be key=value, key==value or key!=value");
            }
            int at = t.indexOf(op);
            String key = t.substring(0, at).trim();
            String value = t.substring(at + op.length()).trim();
            if (!key.equals("metadata.name")) {
                throw new IllegalArgumentException("field label not supported: " + quoteShort(key)
                        + " (allocs support metadata.name only)");
            }
            out.add(new String[] {key, op, value});
        }
        return out;
    }

    static String encodeContinue(String lastName) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(("alloc:" + lastName).getBytes(StandardCharsets.UTF_8));
    }

    static String decodeContinue(String token) {
        String text;
        try {
            text = new String(Base64.getUrlDecoder().decode(token), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            text = "";
        }
        if (!text.startsWith("alloc:") || !validName(text.substring(6))) {
            throw new IllegalArgumentException("invalid continue token: it is not one this server returned for allocs; "
                    + "list them again without continue (kubectl get allocs starts from the first page itself)");
        }
        return text.substring(6);
    }

    /** The query's parameters, percent-decoded (last one wins); values longer than {@link #MAX_OPTION_CHARS} are 400. */
    static Map<String, String> params(String rawQuery) {
        Map<String, String> out = new LinkedHashMap<>();
        if (rawQuery == null || rawQuery.isEmpty()) {
            return out;
        }
        for (String pair : rawQuery.split("&")) {
            if (pair.isEmpty()) {
                continue;
            }
            int eq = pair.indexOf('=');
            String k = decode(eq < 0 ? pair : pair.substring(0, eq));
            String v = eq < 0 ? "" : decode(pair.substring(eq + 1));
            if (v.length() > MAX_OPTION_CHARS) {
                throw new IllegalArgumentException("query parameter " + quoteShort(k) + " is too long: "
                        + v.length() + " characters, at most " + MAX_OPTION_CHARS);
            }
            out.put(k, v);
        }
        return out;
    }

    private static String decode(String s) {
        try {
            return java.net.URLDecoder.decode(s, StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("malformed query: " + io.unboundedcloud.playpen.api.ApiPaths.BAD_ESCAPE);
        }
    }

    /** A user-supplied value for a message: quoted, cut to 64 characters. */
    public static String quoteShort(String s) {
        String v = s.length() > 64 ? s.substring(0, 64) + "..." : s;
        return "\"" + v.replaceAll("[\\p{Cntrl}\"\\\\]", "?") + "\"";
    }

    // ---- rendering ----

    /** The Alloc object kubectl shows with -o yaml|json. */
    public static Map<String, Object> object(Alloc a) {
        Map<String, Object> metadata = new LinkedHashMap<>();
        metadata.put("name", a.name());
        metadata.put("uid", a.uid());
        metadata.put("resourceVersion", a.resourceVersion());
        metadata.put("creationTimestamp", a.claimedAt() == null ? null : a.claimedAt().toString());
        if (a.deletionTimestamp() != null) {
            metadata.put("deletionTimestamp", a.deletionTimestamp().toString());
        }
        Map<String, Object> spec = new LinkedHashMap<>();
        spec.put("resourceType", a.resourceType());
        spec.put("architecture", a.architecture());
        if (!a.kubernetesVersion().isEmpty()) {
            spec.put("kubernetesVersion", a.kubernetesVersion());
        }
        Map<String, Object> status = new LinkedHashMap<>();
        status.put("pod", a.pod());
        status.put("node", a.node());
        status.put("endpoint", a.endpoint());
        status.put("claimedAt", a.claimedAt() == null ? null : a.claimedAt().toString());
        if (a.expiresAt() != null) {
            status.put("expiresAt", a.expiresAt().toString());
        }
        return KubeObjects.object(KIND, metadata, spec, status);
    }

    /** Adds a control plane's kubeconfig to an object's status (for its owner only: the caller decides). */
    @SuppressWarnings("unchecked")
    public static void withKubeconfig(Map<String, Object> object, String kubeconfig) {
        ((Map<String, Object>) object.get("status")).put("kubeconfig", kubeconfig);
    }

    /** The AllocList of a page. */
    public static Map<String, Object> list(Page page) {
        return KubeObjects.list(LIST_KIND, listMeta(page), page.items().stream().map(AllocViews::object).toList());
    }

    private static Map<String, Object> listMeta(Page page) {
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("resourceVersion", page.resourceVersion());
        if (!page.continueToken().isEmpty()) {
            meta.put("continue", page.continueToken());
        }
        return meta;
    }

    /** The columns, in order; priority 1 ones show with -o wide only. */
    static final List<Map<String, Object>> COLUMNS = List.of(
            KubeObjects.column("Name", "string", "name", 0, "The allocation id (also the pod's allocated label)."),
            KubeObjects.column("Type", "string", "", 0, "The resource type: runner or controlPlane."),
            KubeObjects.column("Arch", "string", "", 0, "The CPU architecture."),
            KubeObjects.column("Version", "string", "", 0, "The Kubernetes version of a control plane."),
            KubeObjects.column("Pod", "string", "", 0, "The pod serving the allocation."),
            KubeObjects.column("Age", "string", "", 0, "Time since the claim."),
            KubeObjects.column("Expires", "string", "", 0, "Time left until the allocation expires."),
            KubeObjects.column("Node", "string", "", 1, "The node running the pod."),
            KubeObjects.column("Endpoint", "string", "", 1, "The node's ExternalIP and the allocation's host port."));

    /** A meta.k8s.io Table of a page, as kubectl get prints it; {@code now} for the AGE and EXPIRES cells. */
    public static Map<String, Object> table(Page page, Query q, Instant now) {
        List<Object> rows = new ArrayList<>();
        for (Alloc a : page.items()) {
            List<Object> cells = List.of(a.name(), a.resourceType(), a.architecture(), orNone(a.kubernetesVersion()),
                    a.pod(), a.claimedAt() == null ? "<unknown>" : humanDuration(Duration.between(a.claimedAt(), now)),
                    expires(a.expiresAt(), now), orNone(a.node()), orNone(a.endpoint()));
            rows.add(KubeObjects.row(cells, q.includeObject(), q.tableVersion(), () -> object(a)));
        }
        return KubeObjects.table(q.tableVersion(), listMeta(page), COLUMNS, rows);
    }

    private static String orNone(String s) {
        return s == null || s.isEmpty() ? "<none>" : s;
    }

    static String expires(Instant at, Instant now) {
        if (at == null) {
            return "<none>";
        }
        Duration left = Duration.between(now, at);
        return left.isNegative() || left.isZero() ? "expired" : humanDuration(left);
    }

    /** Kubernetes' duration.HumanDuration, the AGE format of kubectl get. */
    public static String humanDuration(Duration d) {
        long seconds = d.getSeconds();
        if (seconds < 0 && d.getNano() > 0) {
            // Go's int(d.Seconds()) truncates toward zero where getSeconds() rounds down: -1.5 s is "0s" there
            seconds++;
        }
        if (seconds < -1) {
            return "<invalid>";
        } else if (seconds < 0) {
            return "0s";
        } else if (seconds < 60 * 2) {
            return seconds + "s";
        }
        long minutes = seconds / 60;
        if (minutes < 10) {
            long s = seconds % 60;
            return s == 0 ? minutes + "m" : minutes + "m" + s + "s";
        } else if (minutes < 60 * 3) {
            return minutes + "m";
        }
        long hours = seconds / 3600;
        if (hours < 8) {
            long m = minutes % 60;
            return m == 0 ? hours + "h" : hours + "h" + m + "m";
        } else if (hours < 48) {
            return hours + "h";
        } else if (hours < 24 * 8) {
            long h = hours % 24;
            return h == 0 ? (hours / 24) + "d" : (hours / 24) + "d" + h + "h";
        } else if (hours < 24 * 365 * 2) {
            return (hours / 24) + "d";
        } else if (hours < 24 * 365 * 8) {
            long dy = (hours / 24) % 365;
            return dy == 0 ? (hours / 24 / 365) + "y" : (hours / 24 / 365) + "y" + dy + "d";
        }
        return (hours / 24 / 365) + "y";
    }

    private static String nullToEmpty(String s) {
        return s == null ? "" : s;
    }
}
