package io.unboundedcloud.playpen.api;

import java.util.Map;

/** An error the client sees as a Kubernetes Status with this HTTP code, reason and message. */
public class ApiException extends RuntimeException {
    private final int code;
    private final String reason;
    private final Map<String, String> headers;
    private final Status.Details details;

    public ApiException(int code, String reason, String message) {
        this(code, reason, message, Map.of());
    }

    public ApiException(int code, String reason, String message, Map<String, String> headers) {
        this(code, reason, message, headers, null);
    }

    private ApiException(int code, String reason, String message, Map<String, String> headers,
            Status.Details details) {
        super(message, null, false, false);
        this.code = code;
        this.reason = reason;
        this.headers = headers;
        this.details = details;
    }

    /** The Status details (null: none). */
    public Status.Details details() {
        return details;
    }

    /**
     * The same error with kube-apiserver's Status details: the object's {@code name} (null: the request named none),
     * the API {@code group} and the {@code resource}.
     */
    public ApiException withDetails(String name, String group, String resource) {
        return new ApiException(code, reason, getMessage(), headers, new Status.Details(name, group, resource));
    }

    public int code() {
        return code;
    }

    public String reason() {
        return reason;
    }

    /** The answer's result in metrics and the audit line: the reason, lower camel case (serviceUnavailable). */
    public String result() {
        return reason.substring(0, 1).toLowerCase() + reason.substring(1);
    }

    /** The same error (code, reason, headers) with {@code advice} after its message. */
    public ApiException withAdvice(String advice) {
        return new ApiException(code, reason, getMessage() + advice, headers, details);
    }

    /** The same error with {@code seconds} as its Retry-After header. */
    public ApiException withRetryAfter(long seconds) {
        Map<String, String> h = new java.util.LinkedHashMap<>(headers == null ? Map.of() : headers);
        h.put("Retry-After", String.valueOf(seconds));
        return new ApiException(code, reason, getMessage(), Map.copyOf(h), details);
    }

    /** Extra response headers (Allow, Retry-After). */
    public Map<String, String> headers() {
        return headers;
    }

    public static ApiException badRequest(String message) {
        return new ApiException(400, "BadRequest", message);
    }

    public static ApiException unauthorized(String message) {
        return new ApiException(401, "Unauthorized", message);
    }

    public static ApiException forbidden(String message) {
        return new ApiException(403, "Forbidden", message);
    }

    public static ApiException notFound(String message) {
        return new ApiException(404, "NotFound", message);
    }

    public static ApiException methodNotAllowed(String message, String allow) {
        return new ApiException(405, "MethodNotAllowed", message, Map.of("Allow", allow));
    }

    public static ApiException conflict(String message) {
        return new ApiException(409, "Conflict", message);
    }

    public static ApiException notAcceptable(String message) {
        return new ApiException(406, "NotAcceptable", message);
    }

    /**
     * 406 NotAcceptable, as kube-apiserver answers it, when an {@code Accept} header admits no JSON (only protobuf or
     * YAML, say): no range is {@code application/json}, {@code application/*} or {@code *}{@code /*} with a
     * quality above 0. No header, or a blank one, accepts anything. JSON is all this server writes.
     */
    public static void requireJsonAccepted(String accept) {
        if (accept == null || accept.isBlank()) {
            return;
        }
        for (String range : accept.split(",")) {
            String[] parts = range.split(";");
            String type = parts[0].trim().toLowerCase(java.util.Locale.ROOT);
            if (!type.equals("application/json") && !type.equals("application/*") && !type.equals("*/*")) {
                continue;
            }
            boolean refused = false;
            for (int i = 1; i < parts.length; i++) {
                String[] kv = parts[i].split("=", 2);
                if (kv.length == 2 && kv[0].trim().equalsIgnoreCase("q")) {
                    try {
                        refused = Double.parseDouble(kv[1].trim()) <= 0;
                    } catch (NumberFormatException e) {
                        refused = false;
                    }
                }
            }
            if (!refused) {
                return;
            }
        }
        throw notAcceptable("only the following media types are accepted: application/json; send Accept: "
                + "application/json, as kubectl and client-go do");
    }

    /**
     * kube-apiserver's 422 Invalid of an object of {@code group}/{@code kind} without a name: the message
     * {@code <Kind>.<group> "" is invalid: <errors>} and the details with one cause per error.
     */
    public static ApiException invalid(String group, String kind, java.util.List<Status.Cause> causes) {
        java.util.List<String> errors = causes.stream().map(c -> c.field() + ": " + c.message()).toList();
        return new ApiException(422, "Invalid", kind + "." + group + " \"\" is invalid: "
                + (errors.size() == 1 ? errors.get(0) : "[" + String.join(", ", errors) + "]"), Map.of(),
                new Status.Details(null, group, kind, causes));
    }

    public static ApiException tooLarge(String message) {
        return new ApiException(413, "RequestEntityTooLarge", message);
    }

    public static ApiException unsupportedMediaType(String message) {
        return new ApiException(415, "UnsupportedMediaType", message);
    }

    public static ApiException unavailable(String message, int retryAfterSeconds) {
        return new ApiException(503, "ServiceUnavailable", message, Map.of("Retry-After", String.valueOf(retryAfterSeconds)));
    }

    /**
     * The 503 of a request whose thread was interrupted while it waited (the replica is stopping): every wait that
     * ends so comes before any change, so the same request sent again is safe.
     */
    public static ApiException interrupted(int retryAfterSeconds) {
        return unavailable("interrupted: this operator replica is stopping; send the same request again, which is"
                + " safe: another replica answers it", retryAfterSeconds);
    }

    public static ApiException internal(String message) {
        return new ApiException(500, "InternalError", message);
    }
}
