package io.unboundedcloud.playpen.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.unboundedcloud.playpen.api.ApiPaths.Flow;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ApiPathsTest {
    static final String V = "/apis/playpen.unbounded-cloud.io/v1alpha1";

    @ParameterizedTest(name = "{0} {1} → {2}")
    @CsvSource({
            "GET,     /healthz,                                       HEALTHZ",
            "HEAD,    /healthz,                                       HEALTHZ",
            "POST,    /healthz,                                       HEALTHZ",
            "OPTIONS, /readyz,                                        READYZ",
            "DELETE,  /readyz?verbose,                                READYZ",
            "GET,     /apis/playpen.unbounded-cloud.io,               DISCOVERY_GROUP",
            "GET,     /apis/playpen.unbounded-cloud.io/v1alpha1,      DISCOVERY_VERSION",
            "GET,     /apis/playpen.unbounded-cloud.io/v1alpha1?timeout=32s, DISCOVERY_VERSION",
            "POST,    /apis/playpen.unbounded-cloud.io/v1alpha1/allocs,       ALLOC",
            "POST,    /apis/playpen.unbounded-cloud.io/v1alpha1/allocs?dryRun=All, ALLOC",
            "POST,    /apis/playpen.unbounded-cloud.io/v1alpha1/%61llocs,     ALLOC",
            "POST,    https://playpen-operator.playpen.svc:443/apis/playpen.unbounded-cloud.io/v1alpha1/allocs, ALLOC",
            "POST,    /apis/playpen.unbounded-cloud.io/v1alpha1/deallocs,     DEALLOC",
            "GET,     /apis/playpen.unbounded-cloud.io/v1alpha1/allocs?limit=500, ALLOCS_LIST",
            "GET,     /apis/playpen.unbounded-cloud.io/v1alpha1/allocs/0123456789abcdef, ALLOCS_GET",
            "GET,     /apis/playpen.unbounded-cloud.io/v1alpha1/allocs/not-an-id, ALLOCS_GET",
            "DELETE,  /apis/playpen.unbounded-cloud.io/v1alpha1/allocs/0123456789abcdef, ALLOCS_DELETE",
            "GET,     /openapi/v2,                                    OPENAPI_V2",
            "GET,     /openapi/v3,                                    OPENAPI_V3",
            "GET,     /openapi/v3/apis/playpen.unbounded-cloud.io/v1alpha1?hash=AB, OPENAPI_V3_GROUP",
            "POST,    /apis/playpen.unbounded-cloud.io/v1alpha1/renewals,     RENEWAL",
            "GET,     /apis/playpen.unbounded-cloud.io/v1alpha1/pools,        POOLS_LIST",
            "GET,     /apis/playpen.unbounded-cloud.io/v1alpha1/pools?labelSelector=a, POOLS_LIST",
            "GET,     /apis/playpen.unbounded-cloud.io/v1alpha1/pools/runner-amd64, POOLS_GET",
            "GET,     /apis/playpen.unbounded-cloud.io/v1alpha1/pools/%72unner-arm64, POOLS_GET",
    })
    void routes(String method, String path, Flow flow) {
        assertThat(ApiPaths.route(method, path)).isEqualTo(flow);
    }

    /** The allocs flows act for a user; the name comes percent-decoded from the path, the query raw. */
    @Test
    void allocsFlowsActForAUserAndCarryNameAndQuery() {
        for (Flow f : new Flow[] {Flow.ALLOCS_LIST, Flow.ALLOCS_GET, Flow.ALLOCS_DELETE}) {
            assertThat(f.authenticated()).isTrue();
            assertThat(f.forUser()).isTrue();
            assertThat(f.mutating()).isFalse();
        }
        assertThat(Flow.OPENAPI_V2.authenticated()).isTrue();
        assertThat(Flow.OPENAPI_V2.forUser()).isFalse();
        assertThat(Flow.ALLOC.forUser()).isTrue();
        assertThat(ApiPaths.allocName(V + "/allocs/%30123456789abcdef?x=1")).isEqualTo("0123456789abcdef");
        assertThat(ApiPaths.allocName(V + "/allocs")).isNull();
        assertThat(ApiPaths.rawQuery(V + "/allocs?limit=5&continue=a%3D#frag")).isEqualTo("limit=5&continue=a%3D");
        assertThat(ApiPaths.rawQuery(V + "/allocs")).isEmpty();
        // a name with an encoded slash or a subresource is not an allocation path
        assertThat(catchThrowableOfType(ApiException.class, () -> ApiPaths.route("GET", V + "/allocs/a%2Fb")).code())
                .isEqualTo(404);
        assertThat(catchThrowableOfType(ApiException.class, () -> ApiPaths.route("GET", V + "/allocs/a/status")).code())
                .isEqualTo(404);
    }

    /** A request asks for a dry run when its query names dryRun, with any value, encoded or not. */
    @Test
    void aDryRunIsAskedByTheQueryParameterName() {
        for (String asks : List.of("?dryRun=All", "?dryRun=", "?dryRun", "?fieldManager=kubectl&dryRun=All",
                "?dry%52un=All", "?x=1&dryRun=All#frag")) {
            assertThat(ApiPaths.asksDryRun(V + "/allocs" + asks)).as(asks).isTrue();
        }
        for (String not : List.of("", "?", "?dryrun=All", "?xdryRun=All", "?dryRunX=All", "?pretty=dryRun",
                "?a=1&b=dryRun", "#dryRun=All", "?dry%ZZun=All")) {
            assertThat(ApiPaths.asksDryRun(V + "/allocs" + not)).as(not).isFalse();
        }
        assertThat(ApiPaths.asksDryRun(null)).isFalse();
    }

    /** A POST's fieldValidation: the first one in the query, name and value decoded; null when none is sent. */
    @Test
    void aQueryValueIsReadDecodedAndFirstWins() {
        assertThat(ApiPaths.queryValue(V + "/allocs?fieldManager=kubectl-create&fieldValidation=Strict", "fieldValidation"))
                .isEqualTo("Strict");
        assertThat(ApiPaths.queryValue(V + "/allocs?field%56alidation=%53trict&fieldValidation=Ignore", "fieldValidation"))
                .isEqualTo("Strict");
        assertThat(ApiPaths.queryValue(V + "/allocs?fieldValidation", "fieldValidation")).isEmpty();
        assertThat(ApiPaths.queryValue(V + "/allocs?fieldValidation=a+b", "fieldValidation")).isEqualTo("a b");
        assertThat(ApiPaths.queryValue(V + "/allocs?fieldValidation=%ZZ", "fieldValidation")).isEqualTo("%ZZ");
        assertThat(ApiPaths.queryValue(V + "/allocs?xfieldValidation=Strict#fieldValidation=Strict", "fieldValidation"))
                .isNull();
        assertThat(ApiPaths.queryValue(null, "fieldValidation")).isNull();
    }

    /**
     * A pool is read only, by name; the name comes percent-decoded; a deeper path is no pool. A write (kubectl delete,
     * edit or patch of a pool) is told where a pool's size comes from.
     */
    @Test
    void poolsAreReadOnlyAndNamedByTheirLastSegment() {
        String readOnly = "pools are read-only: the operator's flags --runner-amd64-count, --runner-arm64-count and "
                + "--control-plane-count (one pool per --control-plane-versions entry) set how many idle pods each "
                + "keeps; change those and restart the operator to resize a pool";
        assertThat(ApiPaths.poolName(V + "/pools/%72unner-amd64?x=1")).isEqualTo("runner-amd64");
        assertThat(ApiPaths.poolName(V + "/pools")).isNull();
        assertThat(ApiPaths.poolName(V + "/allocs/runner-amd64")).isNull();
        for (String method : new String[] {"POST", "PUT", "PATCH", "DELETE", "HEAD"}) {
            ApiException item = catchThrowableOfType(ApiException.class,
                    () -> ApiPaths.route(method, V + "/pools/runner-amd64"));
            assertThat(item.code()).as(method).isEqualTo(405);
            assertThat(item.headers()).containsEntry("Allow", "GET");
            ApiException list = catchThrowableOfType(ApiException.class, () -> ApiPaths.route(method, V + "/pools"));
            assertThat(list.code()).as(method).isEqualTo(405);
            assertThat(list.headers()).containsEntry("Allow", "GET");
            assertThat(item.getMessage()).as(method).isEqualTo(readOnly);
            assertThat(list.getMessage()).as(method).isEqualTo(readOnly);
        }
        assertThat(catchThrowableOfType(ApiException.class, () -> ApiPaths.route("GET", V + "/pools/a/status")).code())
                .isEqualTo(404);
        assertThat(catchThrowableOfType(ApiException.class, () -> ApiPaths.route("GET", V + "/pools/a%2Fb")).code())
                .isEqualTo(404);
        assertThat(catchThrowableOfType(ApiException.class, () -> ApiPaths.route("GET", V + "/poolsx")).code())
                .isEqualTo(404);
    }

    @Test
    void flowsThatNeedAuthentication() {
        assertThat(Flow.HEALTHZ.authenticated()).isFalse();
        assertThat(Flow.READYZ.authenticated()).isFalse();
        assertThat(Flow.DISCOVERY_GROUP.authenticated()).isTrue();
        assertThat(Flow.DISCOVERY_VERSION.authenticated()).isTrue();
        assertThat(Flow.ALLOC.authenticated()).isTrue();
        assertThat(Flow.DEALLOC.authenticated()).isTrue();
        assertThat(Flow.DISCOVERY_VERSION.mutating()).isFalse();
        assertThat(Flow.ALLOC.mutating()).isTrue();
        assertThat(Flow.DEALLOC.mutating()).isTrue();
    }

    @ParameterizedTest(name = "{0} {1} → 404")
    @CsvSource(nullValues = "-", value = {
            "GET,  /",
            "GET,  -",
            "GET,  ''",
            "GET,  /apis",
            "GET,  /apis/playpen.unbounded-cloud.io/v1",
            "GET,  /apis/playpen.unbounded-cloud.io/",
            "GET,  /readyz/",
            "POST, /healthz/",
            "POST, /apis/playpen.unbounded-cloud.io/v1alpha1/alloc",
            "POST, /apis/playpen.unbounded-cloud.io/v1alpha1/allocs/",
            "POST, /apis/playpen.unbounded-cloud.io/v1alpha1/allocs//",
            "POST, /apis/playpen.unbounded-cloud.io/v1alpha1%2Fallocs",
            "POST, /apis/playpen.unbounded-cloud.io/v1alpha1%2fdeallocs",
            "POST, /apis/playpen.unbounded-cloud.io/v1alpha1//allocs",
            "POST, //apis/playpen.unbounded-cloud.io/v1alpha1/allocs",
            "POST, /apis/playpen.unbounded-cloud.io/v1alpha1/./allocs",
            "POST, /apis/playpen.unbounded-cloud.io/v1alpha1/allocs/.",
            "POST, /apis/playpen.unbounded-cloud.io/v1alpha1/../v1alpha1/allocs",
            "POST, /apis/playpen.unbounded-cloud.io/v1alpha1/%2e%2E/v1alpha1/allocs",
            "POST, /apis/playpen.unbounded-cloud.io/v1alpha1/allocs%00",
            "POST, apis/playpen.unbounded-cloud.io/v1alpha1/allocs",
            "POST, https://host",
            "GET,  /apis/other.io/v1alpha1",
            "GET,  /healthzz",
            "GET,  /APIS/playpen.unbounded-cloud.io",
    })
    void unknownOrUncleanPathIs404(String method, String path) {
        ApiException e = catchThrowableOfType(ApiException.class, () -> ApiPaths.route(method, path));
        assertThat(e).isNotNull();
        assertThat(e.code()).isEqualTo(404);
        assertThat(e.reason()).isEqualTo("NotFound");
        assertThat(e.getMessage()).startsWith("the server could not find the requested resource");
        // under this API's group, what it serves follows (a typo such as .../alloc or a trailing slash)
        if (path != null && path.startsWith("/apis/playpen.unbounded-cloud.io/")) {
            assertThat(e.getMessage()).isEqualTo("the server could not find the requested resource; this API serves "
                    + "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs (POST to allocate, GET to list), "
                    + "/apis/playpen.unbounded-cloud.io/v1alpha1/deallocs and "
                    + "/apis/playpen.unbounded-cloud.io/v1alpha1/renewals (POST) and "
                    + "/apis/playpen.unbounded-cloud.io/v1alpha1/pools (GET): kubectl api-resources "
                    + "--api-group=playpen.unbounded-cloud.io lists them");
        } else {
            assertThat(e.getMessage()).isEqualTo("the server could not find the requested resource");
        }
        assertThat(e.headers()).isEmpty();
    }

    @ParameterizedTest(name = "{0} → 400")
    @CsvSource({
            "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs%",
            "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs%2",
            "/apis/playpen.unbounded-cloud.io/v1alpha1/al%zzlocs",
            "/nowhere/%g0",
    })
    void badEscapeIs400LikeGosServer(String path) {
        ApiException e = catchThrowableOfType(ApiException.class, () -> ApiPaths.route("POST", path));
        assertThat(e).isNotNull();
        assertThat(e.code()).isEqualTo(400);
        assertThat(e.getMessage()).isEqualTo("malformed request path: invalid URL escape (a % not followed by two"
                + " hexadecimal digits); write % itself as %25");
    }

    @ParameterizedTest(name = "{0} {1} → 405 Allow {2}")
    @CsvSource({
            // GET on allocs lists allocations (ours), so Allow names it next to the reference's POST
            "HEAD,    " + V + "/allocs,    'GET, POST'",
            "OPTIONS, " + V + "/allocs,    'GET, POST'",
            "DELETE,  " + V + "/allocs,    'GET, POST'",
            "PUT,     " + V + "/deallocs,  POST",
            "DELETE,  " + V + "/deallocs,  POST",
            "TRACE,   " + V + "/deallocs,  POST",
            "POST,    " + V + ",           GET",
            "HEAD,    " + V + ",           GET",
            "OPTIONS, /apis/playpen.unbounded-cloud.io, GET",
            "POST,    /apis/playpen.unbounded-cloud.io, GET",
    })
    void wrongMethodIs405WithAllow(String method, String path, String allow) {
        ApiException e = catchThrowableOfType(ApiException.class, () -> ApiPaths.route(method, path));
        assertThat(e).isNotNull();
        assertThat(e.code()).isEqualTo(405);
        assertThat(e.reason()).isEqualTo("MethodNotAllowed");
        assertThat(e.headers()).isEqualTo(Map.of("Allow", allow));
        assertThat(e.getMessage()).startsWith("method not allowed: ");
    }

    /** The reference's words, then what the path takes and the kubectl command that sends it. */
    @ParameterizedTest(name = "{0} {1} → {2}")
    @CsvSource(delimiter = '|', value = {
            "PUT    | " + V + "/allocs    | method not allowed: allocs take POST to allocate (kubectl create --raw"
                    + " /apis/playpen.unbounded-cloud.io/v1alpha1/allocs -f <file>) and GET to list (kubectl get"
                    + " allocs); release one with kubectl delete alloc <id>",
            "GET    | " + V + "/deallocs  | method not allowed: deallocs take POST only: kubectl create --raw"
                    + " /apis/playpen.unbounded-cloud.io/v1alpha1/deallocs -f <file> (its idempotencyKey) releases"
                    + " an allocation; kubectl get allocs lists yours",
            "GET    | " + V + "/renewals  | method not allowed: renewals take POST only: kubectl create --raw"
                    + " /apis/playpen.unbounded-cloud.io/v1alpha1/renewals -f <file> (its idempotencyKey and a ttl)"
                    + " renews an allocation; kubectl get allocs shows when each expires",
            "POST   | " + V + "           | method not allowed: API discovery is read with GET only (kubectl"
                    + " api-resources reads it)",
            "DELETE | /apis/playpen.unbounded-cloud.io | method not allowed: API discovery is read with GET only"
                    + " (kubectl api-resources reads it)",
            "POST   | /openapi/v3/apis/playpen.unbounded-cloud.io/v1alpha1 | method not allowed: the OpenAPI"
                    + " document is read with GET only (kubectl explain reads it)",
            "PUT    | /openapi/v2 | method not allowed: the OpenAPI document is read with GET only (kubectl explain"
                    + " reads it)",
    })
    void wrongMethodSaysWhatThePathTakes(String method, String path, String message) {
        ApiException e = catchThrowableOfType(ApiException.class, () -> ApiPaths.route(method, path));
        assertThat(e).isNotNull();
        assertThat(e.code()).isEqualTo(405);
        assertThat(e.getMessage()).isEqualTo(message);
    }

    /**
     * A write to one allocation (kubectl label, annotate, edit, patch or replace) is 405 with what an allocation
     * does take instead: a renewal for more time, kubectl delete to release it, a new alloc for another one.
     */
    @ParameterizedTest(name = "{0} allocs/<id> → 405 that says what to do")
    @CsvSource({"PATCH", "PUT", "POST"})
    void aWriteToOneAllocationSaysWhatToDoInstead(String method) {
        ApiException e = catchThrowableOfType(ApiException.class,
                () -> ApiPaths.route(method, V + "/allocs/0123456789abcdef"));
        assertThat(e).isNotNull();
        assertThat(e.code()).isEqualTo(405);
        assertThat(e.reason()).isEqualTo("MethodNotAllowed");
        assertThat(e.headers()).isEqualTo(Map.of("Allow", "DELETE, GET"));
        assertThat(e.getMessage()).isEqualTo(ApiPaths.ALLOC_READ_ONLY)
                .startsWith("allocations cannot be changed: ")
                .contains("/apis/playpen.unbounded-cloud.io/v1alpha1/renewals", "kubectl delete alloc <id>",
                        "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs");
    }
}
