package io.unboundedcloud.playpen.kube;

import java.util.List;

/**
 * Every Kubernetes API call the operator makes (API group, resource, verb and where).
 * The RBAC in deploy/ is tested against this list: add a line here when code starts a new kind of call.
 */
public enum KubeApiCall {
    PODS_GET("", "pods", "get", Scope.RUNNER_NAMESPACE),
    PODS_LIST("", "pods", "list", Scope.RUNNER_NAMESPACE),
    PODS_WATCH("", "pods", "watch", Scope.RUNNER_NAMESPACE),
    PODS_CREATE("", "pods", "create", Scope.RUNNER_NAMESPACE),
    PODS_PATCH("", "pods", "patch", Scope.RUNNER_NAMESPACE),
    PODS_DELETE("", "pods", "delete", Scope.RUNNER_NAMESPACE),
    NODES_LIST("", "nodes", "list", Scope.CLUSTER),
    NODES_WATCH("", "nodes", "watch", Scope.CLUSTER),
    SECRETS_GET("", "secrets", "get", Scope.OPERATOR_NAMESPACE),
    /** The owner-hash key (--owner-hash-secret-name), read at start (created with SECRETS_CREATE when absent). */
    OWNER_HASH_SECRET_GET("", "secrets", "get", Scope.OPERATOR_NAMESPACE),
    SECRETS_CREATE("", "secrets", "create", Scope.OPERATOR_NAMESPACE),
    /** Renewing the self-signed serving certificate (the leader, at --serving-cert-renew-fraction of its lifetime). */
    SECRETS_UPDATE("", "secrets", "update", Scope.OPERATOR_NAMESPACE),
    CONFIGMAPS_GET("", "configmaps", "get", Scope.KUBE_SYSTEM),
    CONFIGMAPS_LIST("", "configmaps", "list", Scope.KUBE_SYSTEM),
    CONFIGMAPS_WATCH("", "configmaps", "watch", Scope.KUBE_SYSTEM),
    EVENTS_CREATE("", "events", "create", Scope.RUNNER_NAMESPACE),
    OPERATOR_EVENTS_CREATE("", "events", "create", Scope.OPERATOR_NAMESPACE),
    LEASES_GET("coordination.k8s.io", "leases", "get", Scope.LEADER_NAMESPACE),
    LEASES_CREATE("coordination.k8s.io", "leases", "create", Scope.LEADER_NAMESPACE),
    /** fabric8's LeaseLock writes renewals and takeovers as a JSON merge patch (not a PUT): RBAC needs patch. */
    LEASES_PATCH("coordination.k8s.io", "leases", "patch", Scope.LEADER_NAMESPACE),
    SUBJECT_ACCESS_REVIEWS_CREATE("authorization.k8s.io", "subjectaccessreviews", "create", Scope.CLUSTER),
    API_SERVICES_GET("apiregistration.k8s.io", "apiservices", "get", Scope.CLUSTER),
    API_SERVICES_UPDATE("apiregistration.k8s.io", "apiservices", "update", Scope.CLUSTER),
    API_SERVICES_PATCH("apiregistration.k8s.io", "apiservices", "patch", Scope.CLUSTER);

    /** Where a call lands. */
    public enum Scope { CLUSTER, RUNNER_NAMESPACE, OPERATOR_NAMESPACE, LEADER_NAMESPACE, KUBE_SYSTEM }

    /** The only object names the operator touches for these resources (empty = any name). */
    public static final String API_SERVICE_NAME = "v1alpha1.playpen.unbounded-cloud.io";
    public static final String TRUST_CONFIGMAP_NAME = "extension-apiserver-authentication";

    private final String apiGroup;
    private final String resource;
    private final String verb;
    private final Scope scope;

    KubeApiCall(String apiGroup, String resource, String verb, Scope scope) {
        this.apiGroup = apiGroup;
        this.resource = resource;
        this.verb = verb;
        this.scope = scope;
    }

    public String apiGroup() {
        return apiGroup;
    }

    public String resource() {
        return resource;
    }

    public String verb() {
        return verb;
    }

    public Scope scope() {
        return scope;
    }

    public static List<KubeApiCall> all() {
        return List.of(values());
    }
}
