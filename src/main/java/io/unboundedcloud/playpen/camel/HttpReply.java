package io.unboundedcloud.playpen.camel;

import java.util.Map;

import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.api.Status;

/** What goes back on the wire: status code, content type, body and extra headers. */
public record HttpReply(int code, String contentType, String body, Map<String, String> headers, String result) {
    public static final String JSON = "application/json";

    public static HttpReply json(String body) {
        return json(body, "ok");
    }

    /** A 200 JSON answer with the outcome recorded in metrics (e.g. allocated, replayed). */
    public static HttpReply json(String body, String result) {
        return new HttpReply(200, JSON, body, Map.of(), result);
    }

    /** A 204 with the outcome recorded in metrics (e.g. deallocated, unknown-key). */
    public static HttpReply noContent(String result) {
        return new HttpReply(204, null, null, Map.of(), result);
    }

    public static HttpReply text(String body) {
        return new HttpReply(200, "text/plain; charset=utf-8", body, Map.of(), "ok");
    }

    public static HttpReply status(ApiException e) {
        return new HttpReply(e.code(), JSON, Json.write(Status.failure(e.code(), e.reason(), e.getMessage(),
                e.details())), e.headers(),
                e.result());
    }
}
