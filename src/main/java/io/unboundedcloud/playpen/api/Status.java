package io.unboundedcloud.playpen.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;

/** A Kubernetes meta/v1 Status (failure) as kubectl expects it. */
@JsonPropertyOrder({"kind", "apiVersion", "metadata", "status", "message", "reason", "code"})
@JsonInclude(JsonInclude.Include.NON_EMPTY)
public record Status(String kind, String apiVersion, Meta metadata, String status, String message, String reason, int code) {
    /** Empty list metadata, always present as {} like Kubernetes does. */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    public record Meta() {
    }

    public static Status failure(int code, String reason, String message) {
        return new Status("Status", "v1", new Meta(), "Failure", message, reason, code);
    }
}
