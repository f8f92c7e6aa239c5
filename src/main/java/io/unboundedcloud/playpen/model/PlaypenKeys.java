package io.unboundedcloud.playpen.model;

/** Annotation and label keys shared with the reference operator and the runner. */
public final class PlaypenKeys {
    public static final String GROUP = "playpen.unbounded-cloud.io";
    public static final String VERSION = "v1alpha1";
    public static final String GROUP_VERSION = GROUP + "/" + VERSION;
    public static final String API_SERVICE = VERSION + "." + GROUP;
    private static final String P = GROUP + "/";

    // annotations
    public static final String CLIENT_WIREGUARD_PUBLIC_KEY = P + "client-wireguard-public-key";
    public static final String SERVER_WIREGUARD_PUBLIC_KEY = P + "server-wireguard-public-key";
    public static final String REDFISH_CERT_PEM = P + "redfish-cert-pem";
    public static final String IDEMPOTENCY_KEY_HASH = P + "idempotency-key-hash";
    public static final String REQUEST_HASH = P + "request-hash";
    /**
     * The owner hash of the user who made the claim (ours only; the reference writes no owner):
     * hex(HMAC-SHA256(installation key, user name)), or hex(sha256(user name)) on claims older than the key.
     */
    public static final String OWNER_HASH = P + "owner-hash";
    /**
     * "true" on a claim whose owner hash was moved from the legacy (unkeyed) form to the keyed one (ours only): its
     * writer, of a version before the keyed hash, counted the owner's claims under the legacy hash only when it
     * judged the claim against the owner's quota. Written with the move, in the same write; a claim or the rollback
     * of one takes it off.
     */
    public static final String OWNER_HASH_MOVED = P + "owner-hash-moved";
    public static final String CLAIMED_AT = P + "claimed-at";
    /** When the allocation expires (RFC 3339 UTC); written by the claim and moved by renewals (ours only). */
    public static final String EXPIRES_AT = P + "expires-at";
    /**
     * The owner quota (--max-allocs-per-user) a claim was made under (ours only): every replica judges the claim
     * against the quota its writer applied, whatever its own flag says.
     */
    public static final String OWNER_QUOTA = P + "owner-quota";
    /**
     * "true" once a write has confirmed a claim that a replica could not judge from the order of commits (ours
     * only): a claim carrying it stands and is never rolled back.
     */
    public static final String CLAIM_SETTLED = P + "claim-settled";
    /** Which replica wrote a claim (a hash of its identity): how replicas learn who else is allocating. */
    public static final String CLAIMED_BY = P + "claimed-by";
    /**
     * A random value written with each claim (ours only): what tells a writer's own claim from another claim of the
     * same key on the same pod made in the same second (claimed-at has whole seconds), after the first was taken back.
     */
    public static final String CLAIM_ID = P + "claim-id";
    /**
     * On an idle pod only (ours only): the claim-id of a claim whose write failed without an answer (a timeout, a
     * 500 or 504), written on the version that claim was conditional on so that the claim can never commit later.
     * Every claim removes it, so a claimed pod never carries it.
     */
    public static final String FENCED_CLAIM_ID = P + "fenced-claim-id";
    /**
     * A random value of the process that created a pool pod: a create answered AlreadyExists by a pod carrying its
     * own value met its own earlier try (an answer lost), one carrying another's met a pod another leader created.
     */
    public static final String CREATE_ID = P + "create-id";
    public static final String CONTROL_PLANE_KUBECONFIG = P + "control-plane-kubeconfig";
    public static final String CONTROL_PLANE_GUEST_SERVER = P + "control-plane-guest-server";
    public static final String SET_KUBE_SERVICE_HOST_FQDN = "kubernetes.azure.com/set-kube-service-host-fqdn";

    // labels
    public static final String ALLOCATED = P + "allocated";
    public static final String ARCHITECTURE = P + "architecture";
    /**
     * The first 63 characters (a label value's limit) of a claim's idempotency-key hash (ours only), so that the
     * claims of one key can be read straight from the API server with a label selector.
     */
    public static final String KEY_HASH_LABEL = P + "key-hash";
    /** The first 63 characters of a claim's owner hash (ours only): one user's claims, read from the API server. */
    public static final String OWNER_HASH_LABEL = P + "owner-hash";
    public static final String RESOURCE_TYPE = P + "resource-type";
    public static final String KUBERNETES_VERSION = P + "kubernetes-version";
    public static final String HOST_PORT = P + "host-port";
    /** Hash of the pool template that built the pod (ours only): pods with another hash are rolled. */
    public static final String TEMPLATE_HASH = P + "template-hash";
    public static final String APP_NAME = "app.kubernetes.io/name";
    public static final String APP_COMPONENT = "app.kubernetes.io/component";

    public static final String RUNNER_APP_NAME = "playpen-runner";
    public static final String CONTROL_PLANE_APP_NAME = "playpen-control-plane";
    public static final String RUNNER_COMPONENT = "runner";
    public static final String CONTROL_PLANE_COMPONENT = "control-plane";

    // container ports
    public static final String WIREGUARD_PORT_NAME = "wireguard";
    public static final String APISERVER_PORT_NAME = "apiserver";

    private PlaypenKeys() {
    }
}
