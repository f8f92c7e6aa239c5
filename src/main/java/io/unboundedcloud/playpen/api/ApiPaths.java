package io.unboundedcloud.playpen.api;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * Maps method and raw request path to the flow that serves it, with the reference's exact paths: anything else
 * (trailing slash, {@code %2F}, empty or dot segments) is 404, a bad %-escape 400; a wrong method on an API path
 * is 405 with Allow.
 */
public final class ApiPaths {
    public static final String GROUP_PATH = "/apis/" + PlaypenKeys.GROUP;
    public static final String VERSION_PATH = GROUP_PATH + "/" + PlaypenKeys.VERSION;
    public static final String ALLOCS_PATH = VERSION_PATH + "/allocs";
    public static final String DEALLOCS_PATH = VERSION_PATH + "/deallocs";
    public static final String RENEWALS_PATH = VERSION_PATH + "/renewals";
    public static final String POOLS_PATH = VERSION_PATH + "/pools";
    public static final String NOT_FOUND = "the server could not find the requested resource";
    /** The reference's text for a wrong method (its handlers call http.Error with it). */
    public static final String METHOD_NOT_ALLOWED = "method not allowed";
    /** The 405 of a write to pools (kubectl delete, edit or patch of a pool): where a pool's size comes from. */
    public static final String POOLS_READ_ONLY = "pools are read-only: the operator's flags --runner-amd64-count, "
            + "--runner-arm64-count and --control-plane-count (one pool per --control-plane-versions entry) set how "
            + "many idle pods each keeps; change those and restart the operator to resize a pool";
    /**
     * The 405 of a write to one allocation (kubectl label, annotate, edit, patch or replace): what it takes instead.
     */
    public static final String ALLOC_READ_ONLY = "allocations cannot be changed: renew one for more time with "
            + "kubectl create --raw /apis/" + PlaypenKeys.GROUP_VERSION + "/renewals -f <file> (its idempotencyKey "
            + "and a ttl), release it with kubectl delete alloc <id>, or allocate another with kubectl create --raw "
            + "/apis/" + PlaypenKeys.GROUP_VERSION + "/allocs -f <file>";
    /** What a bad %-escape is, and how to write a % that is meant (the paths served hold none). */
    public static final String BAD_ESCAPE = "invalid URL escape (a % not followed by two hexadecimal digits); write %"
            + " itself as %25";
    public static final String MALFORMED = "malformed request path: " + BAD_ESCAPE;
    public static final String OPENAPI_V2_PATH = "/openapi/v2";
    public static final String OPENAPI_V3_PATH = "/openapi/v3";
    public static final String OPENAPI_V3_GROUP_PATH = OPENAPI_V3_PATH + "/apis/" + PlaypenKeys.GROUP_VERSION;
    /** Allow on the allocs collection: POST (the reference's alloc) and GET (list, ours). */
    public static final String ALLOCS_ALLOW = "GET, POST";
    /** Allow on one allocation. */
    public static final String ALLOC_ITEM_ALLOW = "DELETE, GET";

    /** The flows behind the HTTPS listener; {@code authenticated} ones need a trusted front-proxy certificate. */
    public enum Flow {
        HEALTHZ(false, null), READYZ(false, null), DISCOVERY_GROUP(true, "GET"), DISCOVERY_VERSION(true, "GET"),
        ALLOC(true, "POST"), DEALLOC(true, "POST"),
        // ours only: allocations as a kubectl resource, and the OpenAPI documents the aggregator merges
        ALLOCS_LIST(true, "GET"), ALLOCS_GET(true, "GET"), ALLOCS_DELETE(true, "DELETE"),
        OPENAPI_V2(true, "GET"), OPENAPI_V3(true, "GET"), OPENAPI_V3_GROUP(true, "GET"),
        // ours only: lease renewal
        RENEWAL(true, "POST"),
        // ours only: the pools, read-only
        POOLS_LIST(true, "GET"), POOLS_GET(true, "GET");

        private final boolean authenticated;
        private final String method;

        Flow(boolean authenticated, String method) {
            this.authenticated = authenticated;
            this.method = method;
        }

        public boolean authenticated() {
            return authenticated;
        }

        /** Alloc and dealloc act on the cluster: they need a user and an authorization decision. */
        public boolean mutating() {
            return this == ALLOC || this == DEALLOC || this == RENEWAL;
        }

        /** Flows that act for a user (X-Remote-User required): alloc, dealloc and the allocs reads and delete. */
        public boolean forUser() {
            return mutating() || this == ALLOCS_LIST || this == ALLOCS_GET || this == ALLOCS_DELETE
                    || this == POOLS_LIST || this == POOLS_GET;
        }

        /** The one method served, or null when any method is (the probes answer whatever is asked). */
        public String method() {
            return method;
        }
    }

    private ApiPaths() {
    }

    /**
     * The flow for a request target as sent (still percent-encoded; the query is ignored); throws 400, 404 or 405.
     * Like Go's ServeMux, each path segment is unescaped on its own, so {@code %2F} never joins two segments; where
     * the reference's mux would redirect (empty or dot segments) this answers 404, so a POST is never replayed
     * elsewhere. The method is checked here, before any authentication, as the reference's handlers do.
     */
    public static Flow route(String method, String rawTarget) {
        String path = path(rawTarget);
        if (path.equals(ALLOCS_PATH) && "GET".equals(method)) {
            return Flow.ALLOCS_LIST;
        }
        if (path.startsWith(ALLOCS_PATH + "/") && path.indexOf('/', ALLOCS_PATH.length() + 1) < 0) {
            if ("GET".equals(method)) {
                return Flow.ALLOCS_GET;
            }
            if ("DELETE".equals(method)) {
                return Flow.ALLOCS_DELETE;
            }
            throw ApiException.methodNotAllowed(ALLOC_READ_ONLY, ALLOC_ITEM_ALLOW);
        }
        if (path.startsWith(POOLS_PATH + "/") && path.indexOf('/', POOLS_PATH.length() + 1) < 0) {
            if ("GET".equals(method)) {
                return Flow.POOLS_GET;
            }
            throw ApiException.methodNotAllowed(POOLS_READ_ONLY, "GET");
        }
        Flow flow = flow(path);
        if (flow == Flow.ALLOC && !flow.method().equals(method)) {
            throw ApiException.methodNotAllowed(wrongMethod(flow), ALLOCS_ALLOW);
        }
        if (flow.method() != null && !flow.method().equals(method)) {
            // HEAD is not GET here either: the reference's discovery handlers compare the method exactly
            throw ApiException.methodNotAllowed(wrongMethod(flow), flow.method());
        }
        return flow;
    }

    /** The 405's message for a path whose flow takes another method: the reference's words, then what to send. */
    static String wrongMethod(Flow flow) {
        String api = "/apis/" + PlaypenKeys.GROUP_VERSION;
        return switch (flow) {
            case POOLS_LIST -> POOLS_READ_ONLY;
            case ALLOC -> METHOD_NOT_ALLOWED + ": allocs take POST to allocate (kubectl create --raw " + api
                    + "/allocs -f <file>) and GET to list (kubectl get allocs); release one with kubectl delete alloc"
                    + " <id>";
            case DEALLOC -> METHOD_NOT_ALLOWED + ": deallocs take POST only: kubectl create --raw " + api
                    + "/deallocs -f <file> (its idempotencyKey) releases an allocation; kubectl get allocs lists yours";
            case RENEWAL -> METHOD_NOT_ALLOWED + ": renewals take POST only: kubectl create --raw " + api
                    + "/renewals -f <file> (its idempotencyKey and a ttl) renews an allocation; kubectl get allocs"
                    + " shows when each expires";
            case DISCOVERY_GROUP, DISCOVERY_VERSION -> METHOD_NOT_ALLOWED + ": API discovery is read with GET only"
                    + " (kubectl api-resources reads it)";
            case OPENAPI_V2, OPENAPI_V3, OPENAPI_V3_GROUP -> METHOD_NOT_ALLOWED + ": the OpenAPI document is read"
                    + " with GET only (kubectl explain reads it)";
            default -> METHOD_NOT_ALLOWED;
        };
    }

    private static Flow flow(String path) {
        switch (path) {
            case "/healthz": return Flow.HEALTHZ;
            case "/readyz": return Flow.READYZ;
            case GROUP_PATH: return Flow.DISCOVERY_GROUP;
            case VERSION_PATH: return Flow.DISCOVERY_VERSION;
            case ALLOCS_PATH: return Flow.ALLOC;
            case DEALLOCS_PATH: return Flow.DEALLOC;
            case OPENAPI_V2_PATH: return Flow.OPENAPI_V2;
            case OPENAPI_V3_PATH: return Flow.OPENAPI_V3;
            case OPENAPI_V3_GROUP_PATH: return Flow.OPENAPI_V3_GROUP;
            case RENEWALS_PATH: return Flow.RENEWAL;
            case POOLS_PATH: return Flow.POOLS_LIST;
            default: throw notFound(path);
        }
    }

    /**
     * The 404 of a path no flow serves: kube-apiserver's words, and for a path under this API's group (a typo such
     * as .../alloc, .../allocs/ or v1) the paths it serves.
     */
    static ApiException notFound(String path) {
        if (!path.startsWith(GROUP_PATH + "/")) {
            return ApiException.notFound(NOT_FOUND);
        }
        return ApiException.notFound(NOT_FOUND + "; this API serves " + VERSION_PATH + "/allocs (POST to allocate, GET"
                + " to list), " + VERSION_PATH + "/deallocs and " + VERSION_PATH + "/renewals (POST) and " + VERSION_PATH
                + "/pools (GET): kubectl api-resources --api-group=" + PlaypenKeys.GROUP + " lists them");
    }

    /** The allocation name of {@code .../allocs/<name>} (percent-decoded), or null for any other target. */
    public static String allocName(String rawTarget) {
        String path = path(rawTarget);
        return path.startsWith(ALLOCS_PATH + "/") ? path.substring(ALLOCS_PATH.length() + 1) : null;
    }

    /** The pool name of {@code .../pools/<name>} (percent-decoded), or null for any other target. */
    public static String poolName(String rawTarget) {
        String path = path(rawTarget);
        return path.startsWith(POOLS_PATH + "/") ? path.substring(POOLS_PATH.length() + 1) : null;
    }

    /** The raw query string of a request target ("" when none); the fragment is dropped. */
    public static String rawQuery(String rawTarget) {
        if (rawTarget == null) {
            return "";
        }
        int q = rawTarget.indexOf('?');
        if (q < 0) {
            return "";
        }
        int hash = rawTarget.indexOf('#', q);
        return hash < 0 ? rawTarget.substring(q + 1) : rawTarget.substring(q + 1, hash);
    }

    /**
     * Whether a request target's query names a {@code dryRun} parameter, with any value or none. This server
     * carries out no dry run, so a request that asks for one is refused rather than done for real (kube-apiserver
     * reads {@code dryRun=All}; an empty value is refused too: the caller meant something by it).
     */
    public static boolean asksDryRun(String rawTarget) {
        for (String param : rawQuery(rawTarget).split("&", -1)) {
            int eq = param.indexOf('=');
            String name = eq < 0 ? param : param.substring(0, eq);
            if (name.equals("dryRun")) {
                return true;
            }
            if (name.indexOf('%') >= 0) {
                try {
                    if (unescape(name).equals("dryRun")) {
                        return true;
                    }
                } catch (ApiException malformed) {
                    // a malformed escape names no parameter of ours
                }
            }
        }
        return false;
    }

    /**
     * The value of the first query parameter named {@code name} (its name and value percent-decoded, "+" read as a
     * space, as Go reads a query), or null when the query names none. A value with a malformed escape is returned
     * as sent: the caller refuses it as a value it does not take.
     */
    public static String queryValue(String rawTarget, String name) {
        for (String param : rawQuery(rawTarget).split("&", -1)) {
            int eq = param.indexOf('=');
            String raw = eq < 0 ? param : param.substring(0, eq);
            String value = eq < 0 ? "" : param.substring(eq + 1);
            if (raw.equals(name) || raw.indexOf('%') >= 0 && name.equals(decodedOrNull(raw))) {
                String decoded = decodedOrNull(value);
                return decoded == null ? value : decoded;
            }
        }
        return null;
    }

    private static String decodedOrNull(String s) {
        try {
            return unescape(s.replace('+', ' '));
        } catch (ApiException malformed) {
            return null;
        }
    }

    /** A request target without its query and fragment, as sent (not decoded); "" for null. */
    public static String rawPath(String rawTarget) {
        String raw = rawTarget == null ? "" : rawTarget;
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            if (c == '?' || c == '#') {
                return raw.substring(0, i);
            }
        }
        return raw;
    }

    /** The decoded path when every segment is a plain name; 404 for anything a clean, exact path cannot be. */
    static String path(String rawTarget) {
        String raw = rawPath(rawTarget);
        if (raw.regionMatches(true, 0, "http://", 0, 7) || raw.regionMatches(true, 0, "https://", 0, 8)) {
            // absolute-form request target: the path starts after the authority
            int slash = raw.indexOf('/', raw.indexOf("//") + 2);
            raw = slash < 0 ? "" : raw.substring(slash);
        }
        if (!raw.startsWith("/") || raw.length() == 1) {
            throw ApiException.notFound(NOT_FOUND);
        }
        if (raw.indexOf('%') < 0 && raw.indexOf("//") < 0 && raw.indexOf("/.") < 0 && !raw.endsWith("/")) {
            // every segment a plain name already (none empty, none starting with a dot, nothing escaped): the path
            // decodes to itself, as every request the aggregator forwards does
            return raw;
        }
        StringBuilder out = new StringBuilder(raw.length());
        for (String segment : raw.substring(1).split("/", -1)) {
            String name = unescape(segment);
            if (name.isEmpty() || name.equals(".") || name.equals("..") || name.indexOf('/') >= 0) {
                throw notFound(raw);
            }
            out.append('/').append(name);
        }
        return out.toString();
    }

    /** Percent-decodes one segment (UTF-8); a malformed escape is 400, as Go's server answers it. */
    private static String unescape(String segment) {
        if (segment.indexOf('%') < 0) {
            return segment;
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(segment.length());
        for (int i = 0; i < segment.length(); i++) {
            char c = segment.charAt(i);
            if (c != '%') {
                bytes.writeBytes(String.valueOf(c).getBytes(StandardCharsets.UTF_8));
                continue;
            }
            int hi = i + 2 < segment.length() ? Character.digit(segment.charAt(i + 1), 16) : -1;
            int lo = hi >= 0 ? Character.digit(segment.charAt(i + 2), 16) : -1;
            if (lo < 0) {
                throw ApiException.badRequest(MALFORMED);
            }
            bytes.write(hi * 16 + lo);
            i += 2;
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }
}
