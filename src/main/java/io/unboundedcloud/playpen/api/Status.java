package io.unboundedcloud.playpen.api;

import java.util.List;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;

/** A Kubernetes meta/v1 Status (failure) as kubectl expects it. */
@JsonPropertyOrder({"kind", "apiVersion", "metadata", "status", "message", "reason", "details", "code"})
@JsonInclude(JsonInclude.Include.NON_EMPTY)
public record Status(String kind, String apiVersion, Meta metadata, String status, String message, String reason,
        Details details, int code) {
    /** Empty list metadata, always present as {} like Kubernetes does. */
    @JsonInclude(JsonInclude.Include.ALWAYS)
    public record Meta() {
    }

    /**
     * What the error is about, as kube-apiserver's NotFound and Forbidden carry it: the object's name (when the
     * request named one), the API group and the resource (as {@code kind}); an Invalid also carries its causes, one
     * per error (none: left out).
     */
    @JsonPropertyOrder({"name", "group", "kind", "causes"})
    @JsonInclude(JsonInclude.Include.NON_EMPTY)
    public record Details(String name, String group, String kind, List<Cause> causes) {
        public Details(String name, String group, String kind) {
            this(name, group, kind, null);
        }
    }

    /**
     * One error of an Invalid, as kube-apiserver's StatusCause has it: its type ({@code FieldValueForbidden}), its
     * message without the field, and the field.
     */
    @JsonPropertyOrder({"reason", "message", "field"})
    @JsonInclude(JsonInclude.Include.NON_EMPTY)
    public record Cause(String reason, String message, String field) {
    }

    public static Status failure(int code, String reason, String message) {
        return failure(code, reason, message, null);
    }

    /** A failure with its details (null: none, left out). */
    public static Status failure(int code, String reason, String message, Details details) {
        return new Status("Status", "v1", new Meta(), "Failure", message, reason, details, code);
    }
}
