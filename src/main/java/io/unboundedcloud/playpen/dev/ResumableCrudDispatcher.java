package io.unboundedcloud.playpen.dev;

import java.io.IOException;
import java.lang.reflect.Field;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReadWriteLock;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.server.mock.KubernetesAttributesExtractor;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.mockwebserver.ServerRequest;
import io.fabric8.mockwebserver.ServerResponse;
import io.fabric8.mockwebserver.crud.Attribute;
import io.fabric8.mockwebserver.crud.AttributeSet;
import io.fabric8.mockwebserver.dsl.HttpMethod;
import io.fabric8.mockwebserver.http.Dispatcher;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import io.fabric8.mockwebserver.http.Response;
import io.fabric8.mockwebserver.http.WebSocket;
import io.fabric8.mockwebserver.http.WebSocketListener;
import io.fabric8.mockwebserver.internal.MockDispatcher;
import io.fabric8.mockwebserver.internal.SimpleRequest;

/**
 * The simulated API server's store: fabric8's CRUD mock plus the kube-apiserver guarantees the operator's
 * exactly-once argument rests on, which the plain mock lacks.
 * <ul>
 * <li>A watch from a resourceVersion delivers every change after it, in commit order, and nothing before it
 * (the plain mock re-sends the whole current state as ADDED events in no order whenever a watch opens, so a
 * watch that reconnects after a dropped connection silently loses deletes and reorders changes). A watch from a
 * version older than the kept history gets the API server's "410 Gone" ERROR event, and the client relists.</li>
 * <li>A delete's DELETED event carries a resourceVersion of its own, newer than every earlier change (the plain
 * mock sends the object's last version, older than events already delivered).</li>
 * <li>DELETE honours {@code preconditions} (resourceVersion, uid) with a 409 Conflict.</li>
 * <li>A JSON merge patch removes the fields it sets to null (RFC 7386); the plain mock stored the nulls.</li>
 * <li>A request for one object by name (GET, PATCH, PUT, a create's existence check, a DELETE's precondition) finds
 * it through an index by name instead of matching every stored object (the plain mock does that, and copies the
 * whole store for a GET), so the cost of such a request does not grow with the number of objects stored.</li>
 * <li>A LIST with {@code limit} answers in pages, each with a {@code continue} token for the next, all pages from one
 * snapshot at one resourceVersion (the plain mock ignores {@code limit} and sends everything at once); a token
 * older than the kept snapshots answers "410 Gone", as kube-apiserver's expired continue tokens do.</li>
 * <li>A LIST or watch whose {@code labelSelector} has set-based requirements ({@code key in (a,b)},
 * {@code key notin (a,b)}) selects by them (the plain mock splits the selector at every comma and drops what it
 * cannot read, so it selected everything); one watch of such a selector sees each object's changes in commit
 * order, a change from one listed value to another as MODIFIED.</li>
 * <li>A LIST or watch whose {@code labelSelector} names a value no label can have (over 63 characters, or other
 * characters than letters, digits, '-', '_' and '.' inside, not alphanumeric at either end) is refused 400
 * BadRequest, as kube-apiserver refuses it (the plain mock matched it against nothing).</li>
 * </ul>
 * Used by the {@code --dev} playground and by the tests' mock cluster.
 */
public class ResumableCrudDispatcher extends KubernetesCrudDispatcher {
    /** Changes kept for watches that resume; older ones answer 410 Gone (kube-apiserver keeps a window too). */
    public static final int DEFAULT_HISTORY = 20_000;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonFactory FACTORY = JSON.getFactory();

    /** One committed change: its resourceVersion, the object after it (before it, for deletes) and where it lives. */
    private record Change(long rv, String object, AttributeSet before, AttributeSet after) {
    }

    private final int historyLimit;
    private final ArrayDeque<Change> history = new ArrayDeque<>();
    /** The newest resourceVersion that is no longer in {@link #history} (watches from before it get 410). */
    private long forgottenUpTo;
    private final Set<Watch> watches = ConcurrentHashMap.newKeySet();
    private final ReadWriteLock storeLock;
    /**
     * The attributes each stored object is filed under, by its name (objects of different kinds or namespaces may
     * share one): kept in step with the store by {@link #processEvent}, under the store's write lock.
     */
    private final Map<String, List<AttributeSet>> byName = new HashMap<>();
    /** The CRUD mock's resourceVersion counter (a LIST answers with its current value, as the plain mock's do). */
    private final java.util.concurrent.atomic.AtomicLong versions;
    /** LIST snapshots being paged through, by continue-token id (see {@link #page}). */
    private final Map<String, Snapshot> snapshots = new ConcurrentHashMap<>();
    /** Snapshots kept at most (the oldest go first) and for at most this long. */
    private static final int MAX_SNAPSHOTS = 64;
    private static final long SNAPSHOT_NANOS = java.util.concurrent.TimeUnit.MINUTES.toNanos(5);

    /** One paged LIST: the matching objects and the resourceVersion at the moment it was taken. */
    private record Snapshot(List<String> items, String resourceVersion, long takenNanos) {
    }

    public ResumableCrudDispatcher() {
        this(DEFAULT_HISTORY);
    }

    public ResumableCrudDispatcher(int historyLimit) {
        this.historyLimit = historyLimit;
        this.storeLock = storeLock(this);
        this.versions = versions(this);
    }

    private static java.util.concurrent.atomic.AtomicLong versions(KubernetesCrudDispatcher d) {
        try {
            Field f = KubernetesCrudDispatcher.class.getDeclaredField("resourceVersion");
            f.setAccessible(true);
            return (java.util.concurrent.atomic.AtomicLong) f.get(d);
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new IllegalStateException("the fabric8 mock's resourceVersion is not where this version expects it", e);
        }
    }

    /** The CRUD mock's own read-write lock (its writes hold the write lock), to make a conditional delete atomic. */
    private static ReadWriteLock storeLock(KubernetesCrudDispatcher d) {
        try {
            Field f = KubernetesCrudDispatcher.class.getDeclaredField("lock");
            f.setAccessible(true);
            return (ReadWriteLock) f.get(d);
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new IllegalStateException("the fabric8 mock's store lock is not where this version expects it", e);
        }
    }

    @Override
    public MockResponse dispatch(RecordedRequest request) {
        if ("DELETE".equalsIgnoreCase(request.getMethod())) {
            Lock write = storeLock.writeLock();
            write.lock();
            try {
                MockResponse refused = checkPreconditions(request.getPath(), request.getUtf8Body());
                return refused != null ? refused : super.dispatch(request);
            } finally {
                write.unlock();
            }
        }
        return super.dispatch(request);
    }

    /** 409 when the DeleteOptions' preconditions do not hold for the stored object; null to go on. */
    private MockResponse checkPreconditions(String path, String body) {
        if (body == null || body.isBlank()) {
            return null;
        }
        JsonNode pre;
        try {
            pre = JSON.readTree(body).path("preconditions");
        } catch (IOException e) {
            return null;
        }
        String wantRv = pre.path("resourceVersion").asText("");
        String wantUid = pre.path("uid").asText("");
        if (wantRv.isEmpty() && wantUid.isEmpty()) {
            return null;
        }
        Map.Entry<AttributeSet, String> stored = findResource(attributeExtractor.fromPath(path));
        if (stored == null) {
            return null; // the delete answers 404 itself
        }
        JsonNode meta;
        try {
            meta = JSON.readTree(stored.getValue()).path("metadata");
        } catch (IOException e) {
            return null;
        }
        String rv = meta.path("resourceVersion").asText("");
        String uid = meta.path("uid").asText("");
        String name = meta.path("name").asText("");
        String message = null;
        if (!wantUid.isEmpty() && !wantUid.equals(uid)) {
            message = "Precondition failed: UID in precondition: " + wantUid + ", UID in object meta: " + uid;
        } else if (!wantRv.isEmpty() && !wantRv.equals(rv)) {
            message = "Precondition failed: ResourceVersion in precondition: " + wantRv
                    + ", ResourceVersion in object meta: " + rv;
        }
        if (message == null) {
            return null;
        }
        ObjectNode status = JSON.createObjectNode().put("kind", "Status").put("apiVersion", "v1");
        status.putObject("metadata");
        status.put("status", "Failure").put("message", "Operation cannot be fulfilled on " + name + ": " + message)
                .put("reason", "Conflict").put("code", HttpURLConnection.HTTP_CONFLICT);
        return new MockResponse().setResponseCode(HttpURLConnection.HTTP_CONFLICT)
                .setHeader("Content-Type", "application/json").setBody(status.toString());
    }

    /** RFC 7386 JSON merge patch: objects merge member by member, null removes a member, anything else replaces. */
    @Override
    public JsonNode merge(JsonNode existing, String patch)
            throws io.fabric8.kubernetes.client.server.mock.crud.KubernetesCrudDispatcherException {
        try {
            return mergePatch(existing.deepCopy(), JSON.readTree(patch));
        } catch (IOException e) {
            throw new io.fabric8.kubernetes.client.server.mock.crud.KubernetesCrudDispatcherException(
                    "the patch is not JSON: " + e.getMessage(), HttpURLConnection.HTTP_BAD_REQUEST);
        }
    }

    static JsonNode mergePatch(JsonNode target, JsonNode patch) {
        if (!patch.isObject()) {
            return patch;
        }
        ObjectNode out = target != null && target.isObject() ? (ObjectNode) target : JSON.createObjectNode();
        patch.fields().forEachRemaining(e -> {
            if (e.getValue().isNull()) {
                out.remove(e.getKey());
            } else {
                out.set(e.getKey(), mergePatch(out.get(e.getKey()), e.getValue()));
            }
        });
        return out;
    }

    /** Every write of the store ends here (under the store's write lock): record it and tell the open watches. */
    @Override
    public void processEvent(String path, AttributeSet pathAttributes, AttributeSet oldAttributes,
            GenericKubernetesResource resource, String newState) {
        String existing = oldAttributes == null ? null : map.get(oldAttributes);
        super.processEvent(path, pathAttributes, oldAttributes, resource, newState);
        AttributeSet newAttributes = newState == null ? null : attributesOf(pathAttributes, resource, newState);
        if (oldAttributes != null) {
            unindex(oldAttributes);
        }
        if (newAttributes != null) {
            index(newAttributes);
        }
        if (Objects.equals(existing, newState) || existing == null && newState == null) {
            return;
        }
        Change change;
        if (newState == null) {
            long rv = requestResourceVersion();
            change = new Change(rv, withResourceVersion(existing, rv), oldAttributes, null);
        } else {
            change = new Change(resourceVersionOf(newState), newState, existing == null ? null : oldAttributes,
                    newAttributes);
        }
        synchronized (history) {
            history.addLast(change);
            while (history.size() > historyLimit) {
                forgottenUpTo = history.removeFirst().rv();
            }
            for (Watch w : watches) {
                w.offer(change);
            }
        }
    }

    /** The name an object's (or a query's) attributes give, or null when they name no single object. */
    private static String nameOf(AttributeSet attributes) {
        Attribute name = attributes.getAttribute(KubernetesAttributesExtractor.NAME);
        if (name == null || name.getType() != io.fabric8.mockwebserver.crud.AttributeType.WITH
                || name.getValues().size() != 1) {
            return null;
        }
        return name.getValues().get(0).toString();
    }

    private void index(AttributeSet attributes) {
        String name = nameOf(attributes);
        if (name != null) {
            List<AttributeSet> filed = byName.computeIfAbsent(name, n -> new ArrayList<>(1));
            if (!filed.contains(attributes)) {
                filed.add(attributes);
            }
        }
    }

    private void unindex(AttributeSet attributes) {
        String name = nameOf(attributes);
        List<AttributeSet> filed = name == null ? null : byName.get(name);
        if (filed != null && filed.remove(attributes) && filed.isEmpty()) {
            byName.remove(name);
        }
    }

    /**
     * The stored object the query names, through the name index; the plain mock's scan of every object when the
     * query names none (a LIST). Called with the store's lock held, as the CRUD mock calls it.
     */
    @Override
    public Map.Entry<AttributeSet, String> findResource(AttributeSet query) {
        String name = nameOf(query);
        if (name == null) {
            return super.findResource(query);
        }
        List<AttributeSet> filed = byName.get(name);
        if (filed == null) {
            return null;
        }
        for (AttributeSet candidate : filed) {
            String stored = map.get(candidate);
            if (stored != null && candidate.matches(query)) {
                return new AbstractMap.SimpleImmutableEntry<>(candidate, stored);
            }
        }
        return null;
    }

    /** A GET of one object by name through the index; anything else (a LIST, a watch) as the CRUD mock does it. */
    @Override
    public MockResponse handleGet(String path) {
        MockResponse refused = invalidLabelValue(path);
        if (refused != null) {
            return refused;
        }
        AttributeSet query = selected(path);
        if (path.contains("watch=true")) {
            return super.handleGet(path);
        }
        if (nameOf(query) == null) {
            String raw = rawQuery(path);
            String limit = queryParam(raw, "limit");
            String token = queryParam(raw, "continue");
            boolean paged = limit != null && !limit.isEmpty() || token != null && !token.isEmpty();
            // the plain mock's LIST reads the selector itself: one with set-based requirements is listed here
            return paged || setBased(raw) ? page(query, limit, token) : super.handleGet(path);
        }
        Lock read = storeLock.readLock();
        read.lock();
        try {
            Map.Entry<AttributeSet, String> found = findResource(query);
            return found == null ? new MockResponse().setResponseCode(HttpURLConnection.HTTP_NOT_FOUND)
                    : new MockResponse().setResponseCode(HttpURLConnection.HTTP_OK).setBody(found.getValue());
        } finally {
            read.unlock();
        }
    }

    /**
     * One page of a LIST: the first {@code limit} matching objects of a new snapshot, or the next ones of the
     * snapshot {@code token} continues; with a continue token while more are left.
     */
    private MockResponse page(AttributeSet query, String limitParam, String token) {
        int limit;
        try {
            limit = limitParam == null || limitParam.isEmpty() ? Integer.MAX_VALUE : Integer.parseInt(limitParam);
        } catch (NumberFormatException e) {
            return status(HttpURLConnection.HTTP_BAD_REQUEST, "BadRequest", "limit must be a number: " + limitParam);
        }
        if (limit <= 0) {
            limit = Integer.MAX_VALUE;
        }
        String id;
        int from;
        Snapshot snap;
        if (token == null || token.isEmpty()) {
            List<String> items = new ArrayList<>();
            String rv;
            Lock read = storeLock.readLock();
            read.lock();
            try {
                for (Map.Entry<AttributeSet, String> e : new ArrayList<>(map.entrySet())) {
                    if (e.getKey().matches(query)) {
                        items.add(e.getValue());
                    }
                }
                rv = String.valueOf(versions.get());
            } finally {
                read.unlock();
            }
            snap = new Snapshot(items, rv, System.nanoTime());
            id = java.util.UUID.randomUUID().toString();
            from = 0;
        } else {
            int colon = token.lastIndexOf(':');
            id = colon < 0 ? token : token.substring(0, colon);
            snap = snapshots.get(id);
            try {
                from = colon < 0 ? -1 : Integer.parseInt(token.substring(colon + 1));
            } catch (NumberFormatException e) {
                from = -1;
            }
            if (snap == null || from < 0 || from > snap.items().size()) {
                return status(410, "Expired", "The provided continue parameter is too old to display a consistent list "
                        + "result. You can start a new list without the continue parameter.");
            }
        }
        int to = (int) Math.min((long) from + limit, snap.items().size());
        String next = null;
        if (to < snap.items().size()) {
            next = id + ":" + to;
            keep(id, snap);
        } else {
            snapshots.remove(id);
        }
        StringBuilder body = new StringBuilder("{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[");
        for (int i = from; i < to; i++) {
            body.append(i > from ? "," : "").append(snap.items().get(i));
        }
        body.append("],\"metadata\":{\"resourceVersion\":\"").append(snap.resourceVersion()).append('"');
        if (next != null) {
            body.append(",\"continue\":\"").append(next).append("\",\"remainingItemCount\":")
                    .append(snap.items().size() - to);
        }
        body.append("}}");
        return new MockResponse().setResponseCode(HttpURLConnection.HTTP_OK).setHeader("Content-Type", "application/json")
                .setBody(body.toString());
    }

    private void keep(String id, Snapshot snap) {
        if (snapshots.put(id, snap) != null) {
            return;
        }
        long now = System.nanoTime();
        snapshots.values().removeIf(s -> now - s.takenNanos() > SNAPSHOT_NANOS);
        while (snapshots.size() > MAX_SNAPSHOTS) {
            snapshots.entrySet().stream().min((a, b) -> Long.compare(a.getValue().takenNanos(), b.getValue().takenNanos()))
                    .ifPresent(oldest -> snapshots.remove(oldest.getKey(), oldest.getValue()));
        }
    }

    private static MockResponse status(int code, String reason, String message) {
        ObjectNode status = JSON.createObjectNode().put("kind", "Status").put("apiVersion", "v1");
        status.putObject("metadata");
        status.put("status", "Failure").put("message", message).put("reason", reason).put("code", code);
        return new MockResponse().setResponseCode(code).setHeader("Content-Type", "application/json")
                .setBody(status.toString());
    }

    @Override
    public void reset() {
        Lock write = storeLock.writeLock();
        write.lock();
        try {
            super.reset();
            byName.clear();
        } finally {
            write.unlock();
        }
    }

    /** The attributes the CRUD mock files a new state under (the same computation as its own). */
    private AttributeSet attributesOf(AttributeSet pathAttributes, GenericKubernetesResource resource, String state) {
        KubernetesAttributesExtractor extractor = (KubernetesAttributesExtractor) attributeExtractor;
        AttributeSet attrs = resource != null ? extractor.extract(resource) : extractor.fromResource(state);
        if (!attrs.containsKey(KubernetesAttributesExtractor.PLURAL)) {
            attrs = AttributeSet.merge(pathAttributes, attrs);
        }
        return attrs;
    }

    static long resourceVersionOf(String json) {
        try (JsonParser p = FACTORY.createParser(json)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return 0;
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                p.nextToken();
                if (!"metadata".equals(field)) {
                    p.skipChildren();
                    continue;
                }
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String m = p.currentName();
                    p.nextToken();
                    if ("resourceVersion".equals(m)) {
                        return Long.parseLong(p.getValueAsString("0"));
                    }
                    p.skipChildren();
                }
                return 0;
            }
            return 0;
        } catch (IOException | NumberFormatException e) {
            return 0;
        }
    }

    private static String withResourceVersion(String json, long rv) {
        try {
            JsonNode node = JSON.readTree(json);
            if (node.path("metadata") instanceof ObjectNode meta) {
                meta.put("resourceVersion", String.valueOf(rv));
            }
            return JSON.writeValueAsString(node);
        } catch (IOException e) {
            return json;
        }
    }

    @Override
    public MockResponse handleWatch(String path) {
        String query = rawQuery(path);
        AttributeSet selector = selected(path);
        String name = queryParam(query, "fieldSelector");
        if (name != null && name.startsWith("metadata.name=")) {
            selector = selector.add(new Attribute(KubernetesAttributesExtractor.NAME,
                    name.substring("metadata.name=".length())));
        }
        String rv = queryParam(query, "resourceVersion");
        Long from = null;
        if (rv != null && !rv.isEmpty() && !"0".equals(rv)) {
            try {
                from = Long.parseLong(rv);
            } catch (NumberFormatException e) {
                return new MockResponse().setResponseCode(HttpURLConnection.HTTP_BAD_REQUEST);
            }
        }
        String listPath = listPathOf(path);
        return new MockResponse().withWebSocketUpgrade(new Watch(selector, from, listPath));
    }

    /** A set-based label requirement: {@code key in (a,b)} or {@code key notin (a,b)}. */
    private static final java.util.regex.Pattern SET_REQUIREMENT = java.util.regex.Pattern.compile(
            "\\s*([^\\s!=(),]+)\\s+(in|notin)\\s*\\(([^)]*)\\)\\s*");

    private static boolean setBased(String rawQuery) {
        String labels = queryParam(rawQuery, "labelSelector");
        return labels != null && labels.indexOf('(') >= 0;
    }

    /**
     * What a request's path selects: the CRUD mock's reading of it, with the set-based label requirements it cannot
     * read ({@code key in (a,b)}, {@code key notin (a,b)}) taken out of its selector and added as IN and NOT_IN
     * attributes, which its matching knows.
     */
    AttributeSet selected(String path) {
        String raw = rawQuery(path);
        if (!setBased(raw)) {
            return attributeExtractor.fromPath(path);
        }
        List<String> plain = new ArrayList<>();
        List<Attribute> sets = new ArrayList<>();
        for (String term : requirements(queryParam(raw, "labelSelector"))) {
            java.util.regex.Matcher m = SET_REQUIREMENT.matcher(term);
            if (!m.matches()) {
                plain.add(term);
                continue;
            }
            List<String> values = new ArrayList<>();
            for (String v : m.group(3).split(",")) {
                if (!v.isBlank()) {
                    values.add(v.trim());
                }
            }
            sets.add(new Attribute("labels:" + m.group(1), values, "in".equals(m.group(2))
                    ? io.fabric8.mockwebserver.crud.AttributeType.IN : io.fabric8.mockwebserver.crud.AttributeType.NOT_IN));
        }
        AttributeSet selected = attributeExtractor.fromPath(withLabelSelector(path, String.join(",", plain)));
        for (Attribute a : sets) {
            selected = selected.add(a);
        }
        return selected;
    }

    /** A label value kube-apiserver accepts: empty, or at most 63 characters of this shape. */
    private static final java.util.regex.Pattern LABEL_VALUE =
            java.util.regex.Pattern.compile("(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?");

    /** kube-apiserver's 400 for a labelSelector with a value no label can have; null when every value is one. */
    static MockResponse invalidLabelValue(String path) {
        String selector = queryParam(rawQuery(path), "labelSelector");
        if (selector == null || selector.isEmpty()) {
            return null;
        }
        for (String term : requirements(selector)) {
            java.util.regex.Matcher set = SET_REQUIREMENT.matcher(term);
            List<String> values = new ArrayList<>();
            String key;
            if (set.matches()) {
                key = set.group(1);
                for (String v : set.group(3).split(",")) {
                    values.add(v.trim());
                }
            } else {
                int eq = term.indexOf('=');
                if (eq < 0) {
                    continue; // "key" or "!key": no value
                }
                key = term.substring(0, term.charAt(Math.max(eq - 1, 0)) == '!' ? eq - 1 : eq).trim();
                values.add(term.substring(term.startsWith("==", eq) ? eq + 2 : eq + 1).trim());
            }
            for (int i = 0; i < values.size(); i++) {
                String v = values.get(i);
                if (v.length() > 63 || !LABEL_VALUE.matcher(v).matches()) {
                    return status(HttpURLConnection.HTTP_BAD_REQUEST, "BadRequest", "unable to parse requirement: "
                            + "values[" + i + "][" + key + "]: Invalid value: \"" + v + "\": a valid label must be an "
                            + "empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and "
                            + "end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex "
                            + "used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')");
                }
            }
        }
        return null;
    }

    /** A label selector's requirements: split at the commas that are not inside a value set's parentheses. */
    private static List<String> requirements(String selector) {
        List<String> out = new ArrayList<>();
        int depth = 0;
        int start = 0;
        for (int i = 0; i < selector.length(); i++) {
            char c = selector.charAt(i);
            if (c == '(') {
                depth++;
            } else if (c == ')') {
                depth = Math.max(0, depth - 1);
            } else if (c == ',' && depth == 0) {
                out.add(selector.substring(start, i));
                start = i + 1;
            }
        }
        out.add(selector.substring(start));
        out.removeIf(String::isBlank);
        return out;
    }

    /** {@code path} with its labelSelector replaced by {@code selector} (dropped when empty). */
    private static String withLabelSelector(String path, String selector) {
        int q = path.indexOf('?');
        List<String> kept = new ArrayList<>();
        for (String part : path.substring(q + 1).split("&")) {
            String k = part.contains("=") ? part.substring(0, part.indexOf('=')) : part;
            if (!k.equals("labelSelector") && !part.isEmpty()) {
                kept.add(part);
            }
        }
        if (!selector.isEmpty()) {
            kept.add("labelSelector=" + java.net.URLEncoder.encode(selector, StandardCharsets.UTF_8));
        }
        return path.substring(0, q) + (kept.isEmpty() ? "" : "?" + String.join("&", kept));
    }

    private static String rawQuery(String path) {
        try {
            String q = new URI(path).getRawQuery();
            return q == null ? "" : q;
        } catch (URISyntaxException e) {
            return "";
        }
    }

    private static String queryParam(String rawQuery, String key) {
        for (String part : rawQuery.split("&")) {
            int eq = part.indexOf('=');
            String k = eq < 0 ? part : part.substring(0, eq);
            if (k.equals(key)) {
                return eq < 0 ? "" : URLDecoder.decode(part.substring(eq + 1), StandardCharsets.UTF_8);
            }
        }
        return null;
    }

    /** The same path without the watch parameters: what a LIST of the watched objects would ask. */
    private static String listPathOf(String path) {
        int q = path.indexOf('?');
        if (q < 0) {
            return path;
        }
        List<String> kept = new ArrayList<>();
        for (String part : path.substring(q + 1).split("&")) {
            String k = part.contains("=") ? part.substring(0, part.indexOf('=')) : part;
            if (!k.equals("watch") && !k.equals("resourceVersion") && !k.equals("allowWatchBookmarks")
                    && !k.equals("timeoutSeconds") && !k.equals("resourceVersionMatch")) {
                kept.add(part);
            }
        }
        return path.substring(0, q) + (kept.isEmpty() ? "" : "?" + String.join("&", kept));
    }

    /** The newest resourceVersion written so far. */
    public long currentResourceVersion() {
        synchronized (history) {
            return history.isEmpty() ? forgottenUpTo : history.getLast().rv();
        }
    }

    /** How many watches are open now (tests). */
    public int openWatches() {
        return watches.size();
    }

    /** One open watch: replays the history after its resourceVersion, then follows new changes in order. */
    private final class Watch extends WebSocketListener {
        private final AttributeSet selector;
        private final Long from;
        private final String listPath;
        private final ExecutorService sender = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "mock-watch");
            t.setDaemon(true);
            return t;
        });
        private volatile WebSocket socket;

        Watch(AttributeSet selector, Long from, String listPath) {
            this.selector = selector;
            this.from = from;
            this.listPath = listPath;
        }

        @Override
        public void onOpen(WebSocket webSocket, Response response) {
            socket = webSocket;
            long start = from == null ? initialState() : from;
            synchronized (history) {
                if (start < forgottenUpTo) {
                    send("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                            + "\"status\":\"Failure\",\"message\":\"too old resource version: " + start + " ("
                            + forgottenUpTo + ")\",\"reason\":\"Expired\",\"code\":410}}");
                    sender.execute(() -> webSocket.close(1000, "410"));
                    sender.shutdown();
                    return;
                }
                for (Change c : history) {
                    if (c.rv() > start) {
                        offer(c);
                    }
                }
                watches.add(this);
            }
        }

        /** A watch without a resourceVersion starts with the current objects as ADDED events (as kube-apiserver's). */
        private long initialState() {
            MockResponse list = handleGet(listPath);
            try {
                JsonNode parsed = JSON.readTree(list.getBody().readUtf8());
                for (JsonNode item : parsed.path("items")) {
                    send("{\"type\":\"ADDED\",\"object\":" + JSON.writeValueAsString(item) + "}");
                }
                return Long.parseLong(parsed.path("metadata").path("resourceVersion").asText("0"));
            } catch (IOException | RuntimeException e) {
                return currentResourceVersion();
            }
        }

        void offer(Change c) {
            boolean before = c.before() != null && c.before().matches(selector);
            boolean after = c.after() != null && c.after().matches(selector);
            String type = before && after ? "MODIFIED" : before ? "DELETED" : after ? "ADDED" : null;
            if (type != null) {
                send("{\"type\":\"" + type + "\",\"object\":" + c.object() + "}");
            }
        }

        private void send(String event) {
            try {
                sender.execute(() -> {
                    WebSocket s = socket;
                    if (s != null && !s.send(event)) {
                        close();
                    }
                });
            } catch (RejectedExecutionException closed) {
                // the watch has ended
            }
        }

        private void close() {
            watches.remove(this);
            sender.shutdown();
        }

        @Override
        public void onClosing(WebSocket webSocket, int code, String reason) {
            close();
            webSocket.close(code, reason);
        }

        @Override
        public void onClosed(WebSocket webSocket, int code, String reason) {
            close();
        }

        @Override
        public void onFailure(WebSocket webSocket, Throwable t, Response response) {
            close();
        }
    }

    /**
     * Scripted expectations first (as fabric8's KubernetesMixedDispatcher answers them), then this store: the
     * mixed dispatcher with the store replaced.
     */
    public static Dispatcher mixed(Map<ServerRequest, Queue<ServerResponse>> expectations, ResumableCrudDispatcher store) {
        MockDispatcher scripted = new MockDispatcher(expectations);
        return new Dispatcher() {
            @Override
            public MockResponse dispatch(RecordedRequest request) {
                Queue<ServerResponse> q = expectations.get(new SimpleRequest(HttpMethod.valueOf(request.getMethod()),
                        request.getPath()));
                if (q != null && !q.isEmpty()) {
                    return scripted.dispatch(request);
                }
                return store.dispatch(request);
            }

            @Override
            public void shutdown() {
                scripted.shutdown();
                store.shutdown();
            }
        };
    }
}
