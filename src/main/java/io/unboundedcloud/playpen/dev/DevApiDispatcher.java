package io.unboundedcloud.playpen.dev;

import java.net.HttpURLConnection;
import java.util.HashSet;
import java.util.Map;
import java.util.Queue;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.fabric8.mockwebserver.ServerRequest;
import io.fabric8.mockwebserver.ServerResponse;
import io.fabric8.mockwebserver.http.Dispatcher;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;

/**
 * The simulated API server's request router: discovery documents and the SubjectAccessReview decision are answered
 * here (matched on the path without its query, since kubectl appends {@code ?timeout=32s}); scripted expectations and
 * then the CRUD store answer everything else. Responses with a body and no Content-Type get application/json.
 */
final class DevApiDispatcher extends Dispatcher {
    static final String SAR_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    /** Groups the dev authorizer allows to do anything. */
    static final Set<String> ALLOWED_GROUPS = Set.of(DevCluster.USERS_GROUP, "system:masters");
    /** Groups the dev authorizer allows on allocs/all too: acting on every user's allocations. */
    static final Set<String> ADMIN_GROUPS = Set.of(DevCluster.ADMINS_GROUP, "system:masters");

    private static final ObjectMapper JSON = new ObjectMapper();

    /** kube-apiserver's OpenAPI v2 document, which kubectl reads (as protobuf) to validate what it sends. */
    static final String OPENAPI_V2 = "/openapi/v2";
    static final String OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

    /** kube-apiserver's health endpoints. */
    static final Set<String> HEALTH_PATHS = Set.of("/healthz", "/livez", "/readyz");

    private final Map<String, String> documents = DiscoveryDocuments.all();
    private final Dispatcher delegate;

    DevApiDispatcher(Map<ServerRequest, Queue<ServerResponse>> expectations) {
        this.delegate = ResumableCrudDispatcher.mixed(expectations, new ResumableCrudDispatcher());
    }

    @Override
    public MockResponse dispatch(RecordedRequest request) {
        String path = request.getPath();
        int q = path.indexOf('?');
        String bare = q < 0 ? path : path.substring(0, q);
        String method = request.getMethod();
        if ("GET".equals(method)) {
            String doc = documents.get(bare);
            if (doc != null) {
                return json(HttpURLConnection.HTTP_OK, doc);
            }
            if (bare.equals(OPENAPI_V2)) {
                return openApiV2(request.getHeader("Accept"));
            }
            if (HEALTH_PATHS.contains(bare)) {
                // what kube-apiserver answers (kubectl get --raw /readyz)
                return text(HttpURLConnection.HTTP_OK, "ok");
            }
            if (!bare.equals("/api") && !bare.startsWith("/api/") && !bare.equals("/apis")
                    && !bare.startsWith("/apis/") && !bare.startsWith("/openapi/")) {
                // the store would answer any other path with a list of everything it holds
                return text(HttpURLConnection.HTTP_NOT_FOUND, "404 page not found\n");
            }
        } else if ("POST".equals(method) && bare.equals(SAR_PATH)) {
            return subjectAccessReview(request.getUtf8Body());
        }
        MockResponse response = delegate.dispatch(request);
        if (response.getWebSocketListener() == null && response.getBody() != null && response.getBody().size() > 0
                && response.header("Content-Type") == null) {
            response.setHeader("Content-Type", "application/json");
        }
        return response;
    }

    @Override
    public void shutdown() {
        delegate.shutdown();
    }

    /** Allowed when spec.groups holds playpen-users or system:masters; the spec is echoed back with a status. */
    static MockResponse subjectAccessReview(String body) {
        JsonNode parsed;
        try {
            parsed = JSON.readTree(body == null ? "" : body);
        } catch (Exception e) {
            parsed = null;
        }
        if (!(parsed instanceof ObjectNode review) || !parsed.path("spec").isObject()) {
            return json(HttpURLConnection.HTTP_BAD_REQUEST, DiscoveryDocuments.json(Map.of("kind", "Status",
                    "apiVersion", "v1", "metadata", Map.of(), "status", "Failure",
                    "message", "SubjectAccessReview body must be a JSON object with a spec", "reason", "BadRequest",
                    "code", 400)));
        }
        Set<String> groups = new HashSet<>();
        review.path("spec").path("groups").forEach(g -> groups.add(g.asText()));
        String user = review.path("spec").path("user").asText("");
        boolean everyone = !review.path("spec").path("resourceAttributes").path("subresource").asText("").isEmpty();
        Set<String> allowedGroups = everyone ? ADMIN_GROUPS : ALLOWED_GROUPS;
        boolean allowed = groups.stream().anyMatch(allowedGroups::contains);
        review.put("apiVersion", "authorization.k8s.io/v1");
        review.put("kind", "SubjectAccessReview");
        if (!review.path("metadata").isObject()) {
            review.putObject("metadata");
        }
        ObjectNode status = review.putObject("status");
        status.put("allowed", allowed);
        status.put("reason", allowed
                ? "dev cluster: members of " + String.join(", ", allowedGroups.stream().filter(groups::contains).sorted().toList())
                        + " may do anything"
                : everyone ? "dev cluster: only members of \"" + DevCluster.ADMINS_GROUP
                        + "\" or \"system:masters\" act on every user's allocations"
                : "dev cluster: user \"" + user + "\" is in neither group \"" + DevCluster.USERS_GROUP
                        + "\" nor \"system:masters\"");
        return json(HttpURLConnection.HTTP_CREATED, review.toString());
    }

    /**
     * {@code /openapi/v2} as a Swagger 2.0 document without paths or definitions, as protobuf when asked (kubectl
     * asks so before replace, edit, apply and create -f, to learn whether the server validates fields itself), else
     * as JSON. kubectl validates nothing against it and sends the object, so the server's answer is the one the user
     * sees; {@code kubectl explain} reads the OpenAPI v3 documents instead.
     */
    static MockResponse openApiV2(String accept) {
        if (accept != null && accept.contains(OPENAPI_V2_PROTOBUF)) {
            // the gnostic openapi_v2.Document message with only field 1, swagger = "2.0"
            byte[] document = {0x0a, 0x03, '2', '.', '0'};
            return new MockResponse().setResponseCode(HttpURLConnection.HTTP_OK)
                    // kube-apiserver's answer type: the '@' of the one asked for is not valid in a Content-Type
                    .setHeader("Content-Type", "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
                    .setBody(document);
        }
        return json(HttpURLConnection.HTTP_OK, "{\"swagger\":\"2.0\",\"paths\":{}}");
    }

    private static MockResponse text(int code, String body) {
        return new MockResponse().setResponseCode(code).setHeader("Content-Type", "text/plain; charset=utf-8")
                .setBody(body);
    }

    private static MockResponse json(int code, String body) {
        return new MockResponse().setResponseCode(code).setHeader("Content-Type", "application/json").setBody(body);
    }
}
