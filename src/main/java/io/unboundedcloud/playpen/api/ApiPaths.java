package io.unboundedcloud.playpen.api;

import io.unboundedcloud.playpen.model.PlaypenKeys;

/** Maps method and path to the flow that serves it; unknown paths are 404, wrong methods 405 with Allow. */
public final class ApiPaths {
    public static final String GROUP_PATH = "/apis/" + PlaypenKeys.GROUP;
    public static final String VERSION_PATH = GROUP_PATH + "/" + PlaypenKeys.VERSION;
    public static final String ALLOCS_PATH = VERSION_PATH + "/allocs";
    public static final String DEALLOCS_PATH = VERSION_PATH + "/deallocs";

    /** The flows behind the HTTPS listener; {@code authenticated} ones need a trusted front-proxy certificate. */
    public enum Flow {
        HEALTHZ(false), READYZ(false), DISCOVERY_GROUP(true), DISCOVERY_VERSION(true), ALLOC(true), DEALLOC(true);

        private final boolean authenticated;

        Flow(boolean authenticated) {
            this.authenticated = authenticated;
        }

        public boolean authenticated() {
            return authenticated;
        }

        /** Alloc and dealloc act on the cluster: they need a user and an authorization decision. */
        public boolean mutating() {
            return this == ALLOC || this == DEALLOC;
        }
    }

    private ApiPaths() {
    }

    /** The flow for a request path (query string removed); throws 404 or 405. */
    public static Flow route(String method, String rawPath) {
        String path = rawPath == null || rawPath.isEmpty() ? "/" : rawPath;
        int q = path.indexOf('?');
        if (q >= 0) {
            path = path.substring(0, q);
        }
        if (path.length() > 1 && path.endsWith("/")) {
            path = path.substring(0, path.length() - 1);
        }
        Flow flow;
        String allow;
        switch (path) {
            case "/healthz": flow = Flow.HEALTHZ; allow = "GET"; break;
            case "/readyz": flow = Flow.READYZ; allow = "GET"; break;
            case GROUP_PATH: flow = Flow.DISCOVERY_GROUP; allow = "GET"; break;
            case VERSION_PATH: flow = Flow.DISCOVERY_VERSION; allow = "GET"; break;
            case ALLOCS_PATH: flow = Flow.ALLOC; allow = "POST"; break;
            case DEALLOCS_PATH: flow = Flow.DEALLOC; allow = "POST"; break;
            default:
                throw ApiException.notFound("the server could not find the requested resource");
        }
        boolean ok = allow.equals(method) || ("GET".equals(allow) && "HEAD".equals(method));
        if (!ok) {
            throw ApiException.methodNotAllowed("method " + method + " is not allowed on " + path + "; use " + allow, allow);
        }
        return flow;
    }
}
