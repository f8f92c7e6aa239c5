package io.unboundedcloud.playpen.kube;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.ObjectReader;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Status;
import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.http.HttpClient;
import io.fabric8.kubernetes.client.http.HttpRequest;
import io.fabric8.kubernetes.client.http.HttpResponse;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.TtlPolicy;

/** The single conditional write that claims a pod: a JSON merge patch carrying the resourceVersion precondition. */
public final class ClaimWriter {
    private static final String MERGE_PATCH_JSON = "application/merge-patch+json";
    /** The pod that answers a PATCH or a GET, read as its slim copy ({@link PodWatchEvents#slimPodReader}). */
    private static final ObjectReader SLIM_ANSWERS = PodWatchEvents.slimPodReader();

    private final KubernetesClient client;
    private final Clock clock;
    private final ApiCallCounter calls;
    private final TtlPolicy leases;
    /** What the claims carry as {@code claimed-by} (see {@link ReplicaLanes}); null: nothing. */
    private final String replica;

    /** A writer whose claims carry no expires-at (they expire at claimed-at + --playpen-ttl, as the reference's). */
    public ClaimWriter(KubernetesClient client, Clock clock, ApiCallCounter calls) {
        this(client, clock, calls, null);
    }

    /** A writer whose claims carry their expiry (expires-at) as {@code leases} decides it; null: none. */
    public ClaimWriter(KubernetesClient client, Clock clock, ApiCallCounter calls, TtlPolicy leases) {
        this(client, clock, calls, leases, null);
    }

    /** A writer whose claims also record {@code replica} ({@link ReplicaLanes#self()}) as the replica that wrote them. */
    public ClaimWriter(KubernetesClient client, Clock clock, ApiCallCounter calls, TtlPolicy leases, String replica) {
        this.client = client;
        this.clock = clock;
        this.calls = calls;
        this.leases = leases;
        this.replica = replica;
    }

    /**
     * Claims {@code pod} if it is still at {@code resourceVersion}; a KubernetesClientException with code 409
     * means it changed (404: gone).
     */
    public Pod claim(Pod pod, String resourceVersion, AllocCommand cmd) {
        return claim(pod, resourceVersion, cmd, null);
    }

    /** {@link #claim(Pod, String, AllocCommand)} recording the owner hash (null: none) in the same single write. */
    public Pod claim(Pod pod, String resourceVersion, AllocCommand cmd, String ownerHash) {
        return claim(pod, resourceVersion, cmd, ownerHash, 0);
    }

    /**
     * {@link #claim(Pod, String, AllocCommand, String)} that also records the owner quota it is made under
     * ({@code ownerQuota} &gt; 0 with an owner), so that every replica judges it against the same quota.
     */
    public Pod claim(Pod pod, String resourceVersion, AllocCommand cmd, String ownerHash, int ownerQuota) {
        return claim(pod, resourceVersion, cmd, ownerHash, ownerQuota, newClaimId());
    }

    /**
     * {@link #claim(Pod, String, AllocCommand, String, int)} carrying {@code claimId} ({@link #newClaimId}), which the
     * caller keeps: a write whose answer is lost is fenced off with it ({@link #fence}).
     */
    public Pod claim(Pod pod, String resourceVersion, AllocCommand cmd, String ownerHash, int ownerQuota,
            String claimId) {
        calls.count(KubeApiCall.PODS_PATCH);
        String ns = pod.getMetadata().getNamespace();
        String name = pod.getMetadata().getName();
        return mergePatch(client, ns, name,
                claimPatch(ns, name, resourceVersion, cmd, ownerHash, ownerQuota, claimId));
    }

    /** A new claim's claim-id: a random value of that one claim. */
    public static String newClaimId() {
        return Long.toHexString(java.util.concurrent.ThreadLocalRandom.current().nextLong());
    }

    /**
     * Makes a claim whose write failed without an answer unable to commit later: a write on the same version
     * ({@code resourceVersion}, the claim's precondition) that really changes the pod, recording the lost claim's
     * {@code claimId} as {@link PlaypenKeys#FENCED_CLAIM_ID}. Once it is in, the pod is at a newer version and the
     * claim's precondition can never hold again. A KubernetesClientException with code 409 means the pod changed
     * since (the claim may be what changed it; 404: gone).
     */
    public Pod fence(Pod pod, String resourceVersion, String claimId) {
        calls.count(KubeApiCall.PODS_PATCH);
        Map<String, Object> metadata = new LinkedHashMap<>();
        metadata.put("resourceVersion", resourceVersion);
        metadata.put("annotations", Map.of(PlaypenKeys.FENCED_CLAIM_ID, claimId));
        return mergePatch(client, pod.getMetadata().getNamespace(), pod.getMetadata().getName(),
                Json.write(Map.of("metadata", metadata)));
    }

    /**
     * One merge PATCH of a pod, sent through the fabric8 client's own HTTP client (its authentication, TLS, retry
     * of transport failures and request timeout), without the resource DSL: {@code resource(pod).patch(...)}
     * clones the whole pod through JSON before it sends anything, and {@code withName(...).patch(...)} GETs it
     * first. The claim is the hot path (one write per new allocation), so it pays for the request and the
     * answer's parse only, and reads the pod it answers with as its slim copy ({@link #SLIM_ANSWERS}). Failures
     * are the DSL's: a KubernetesClientException with the answer's code and Status.
     */
    static Pod mergePatch(KubernetesClient client, String ns, String name, String patch) {
        return slimPod(client, ns, name, "PATCH", send(client, ns, name, patch));
    }

    /**
     * One request for a pod through the client's own HTTP client: its merge PATCH with {@code mergePatch}, a GET
     * without. Fails only when no answer came (a KubernetesClientException without a code).
     */
    private static HttpResponse<byte[]> send(KubernetesClient client, String ns, String name, String mergePatch) {
        String method = mergePatch == null ? "GET" : "PATCH";
        HttpClient http = client.getHttpClient();
        HttpRequest.Builder request = http.newHttpRequestBuilder()
                .uri(podUrl(client, ns, name))
                .timeout(client.getConfiguration().getRequestTimeout(), TimeUnit.MILLISECONDS);
        if (mergePatch != null) {
            request.method(method, MERGE_PATCH_JSON, mergePatch);
        }
        try {
            // a thread already interrupted sends nothing: get() on an answer that is in by then would not notice
            if (Thread.interrupted()) {
                throw new InterruptedException();
            }
            return http.sendAsync(request.build(), byte[].class).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KubernetesClientException("interrupted while " + (mergePatch == null ? "reading" : "patching")
                    + " pod " + ns + "/" + name, e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            if (cause instanceof KubernetesClientException k) {
                throw k;
            }
            throw new KubernetesClientException(method + " of pod " + ns + "/" + name + " failed: " + cause, cause);
        }
    }

    /**
     * The pod a successful answer carries, read as its slim copy; any other answer is the DSL's failure: a
     * KubernetesClientException with the answer's code and Status (one made of the code and body when the body is
     * no Status with a code, such as a proxy's error page).
     */
    private static Pod slimPod(KubernetesClient client, String ns, String name, String method,
            HttpResponse<byte[]> response) {
        byte[] body = response.body() == null ? new byte[0] : response.body();
        if (response.isSuccessful()) {
            try {
                return SLIM_ANSWERS.readValue(body);
            } catch (IOException e) {
                throw KubernetesClientException.launderThrowable(e);
            }
        }
        KubernetesSerialization json = client.getKubernetesSerialization();
        Status status = null;
        try {
            status = body.length == 0 ? null : json.unmarshal(new ByteArrayInputStream(body), Status.class);
        } catch (RuntimeException notAStatus) {
            // not a Status body (a proxy's error page): the code alone tells what happened
        }
        if (status == null || status.getCode() == null) {
            status = new StatusBuilder().withCode(response.code()).withStatus("Failure")
                    .withMessage(new String(body, StandardCharsets.UTF_8)).build();
        }
        throw new KubernetesClientException(method + " of pod " + ns + "/" + name + " answered " + response.code()
                + ": " + status.getMessage(), response.code(), status);
    }

    /**
     * A write that failed without a clear refusal may have landed: the API server wrote it and the answer was lost.
     * That is every failure without an answer (connection reset, timeout), and also every 429 and 5xx: the client
     * sends a request once more after no answer, a 429 or a 5xx ({@link KubeClients#create}), and the answer that
     * reaches the caller is the last one, so a 429 or 503 (API Priority and Fairness, overload), though a refusal
     * itself, may follow a first try that was written. Other 4xx answers refuse the write (a 409 of the second try
     * is read back like any conflict). The one rule for every write of this operator (a claim, a pool's create).
     */
    static boolean mayHaveLanded(KubernetesClientException e) {
        int code = e.getCode();
        return code <= 0 || code == 429 || code >= 500;
    }

    private static String podUrl(KubernetesClient client, String ns, String name) {
        String master = client.getMasterUrl().toString();
        return master + (master.endsWith("/") ? "" : "/") + "api/v1/namespaces/" + ns + "/pods/" + name;
    }

    String claimPatch(String namespace, String name, String resourceVersion, AllocCommand cmd) {
        return claimPatch(namespace, name, resourceVersion, cmd, null);
    }

    String claimPatch(String namespace, String name, String resourceVersion, AllocCommand cmd, String ownerHash) {
        return claimPatch(namespace, name, resourceVersion, cmd, ownerHash, 0);
    }

    String claimPatch(String namespace, String name, String resourceVersion, AllocCommand cmd, String ownerHash,
            int ownerQuota) {
        return claimPatch(namespace, name, resourceVersion, cmd, ownerHash, ownerQuota, newClaimId());
    }

    String claimPatch(String namespace, String name, String resourceVersion, AllocCommand cmd, String ownerHash,
            int ownerQuota, String claimId) {
        Map<String, Object> annotations = new LinkedHashMap<>();
        annotations.put(PlaypenKeys.IDEMPOTENCY_KEY_HASH, cmd.keyHash());
        annotations.put(PlaypenKeys.REQUEST_HASH, cmd.requestHash());
        annotations.put(PlaypenKeys.CLIENT_WIREGUARD_PUBLIC_KEY, cmd.wireGuardPublicKey());
        Instant now = clock.instant();
        annotations.put(PlaypenKeys.CLAIMED_AT, TtlPolicy.formatClaimedAt(now));
        annotations.put(PlaypenKeys.CLAIM_ID, claimId);
        // a fence left by an earlier lost claim (see fence) is for idle pods only: the claim takes it off, and the
        // mark of a moved owner hash, which is about an earlier claim of the pod (rollbacks take it off already)
        annotations.put(PlaypenKeys.FENCED_CLAIM_ID, null);
        annotations.put(PlaypenKeys.OWNER_HASH_MOVED, null);
        if (leases != null) {
            // the expiry goes in the same single write as the claim: there is never a claim without its lease
            leases.claimExpiry(now, cmd.ttl())
                    .ifPresent(at -> annotations.put(PlaypenKeys.EXPIRES_AT, TtlPolicy.formatClaimedAt(at)));
        }
        Map<String, Object> labels = new LinkedHashMap<>();
        labels.put(PlaypenKeys.ALLOCATED, Hashes.allocationId(namespace, name));
        labels.put(PlaypenKeys.KEY_HASH_LABEL, labelValue(cmd.keyHash()));
        if (replica != null) {
            annotations.put(PlaypenKeys.CLAIMED_BY, replica);
        }
        if (ownerHash != null) {
            putOwner(annotations, labels, ownerHash);
            if (ownerQuota > 0) {
                annotations.put(PlaypenKeys.OWNER_QUOTA, String.valueOf(ownerQuota));
            }
        }
        Map<String, Object> metadata = new LinkedHashMap<>();
        metadata.put("resourceVersion", resourceVersion);
        metadata.put("labels", labels);
        metadata.put("annotations", annotations);
        return Json.write(Map.of("metadata", metadata));
    }

    /**
     * Who holds a claim, written in both places it is read from, always together: the annotation (the owner index,
     * ownership checks) and the label an owner's claims are listed by from the API server (the quota's count when a
     * claim is settled). A claim labelled with one hash and annotated with another would be missed by that count.
     */
    static void putOwner(Map<String, Object> annotations, Map<String, Object> labels, String ownerHash) {
        annotations.put(PlaypenKeys.OWNER_HASH, ownerHash);
        labels.put(PlaypenKeys.OWNER_HASH_LABEL, labelValue(ownerHash));
    }

    /** A hash as a label value: its first 63 characters (the longest value a label may have). */
    public static String labelValue(String hash) {
        return hash.length() <= 63 ? hash : hash.substring(0, 63);
    }

    /** What undoing a claim came to. */
    public enum Rollback {
        /** The claim is off the pod: it is idle again. */
        ROLLED_BACK,
        /** The pod is gone or no longer carries this claim (deleted, deallocated): nothing to undo. */
        GONE,
        /** A write settled the claim first: it stands and must not be undone. */
        SETTLED,
        /** The pod changed since the version given: nothing was undone (only {@link #rollbackAsOf}). */
        CHANGED
    }

    /**
     * Takes a claim that lost (or could not be confirmed) off its pod with a conditional write, only while the pod
     * still carries this very claim (same pod uid, key, claimed-at and claim-id: the same key can be claimed again on
     * the same pod within the second, by another writer, once this claim was taken back) and nobody has settled it:
     * such a claim was never handed out, so the pod goes back to the pool as it was.
     */
    public Rollback rollback(Pod claimed, String keyHash) {
        return rollback(claimed, keyHash, true);
    }

    /**
     * {@link #rollback} in one conditional write on the version given, never on a version read after it: for a
     * claim judged from that very version (a LIST), since a later version of the pod may carry another claim of
     * the same key (taken back and made again meanwhile) that stands. {@link Rollback#CHANGED} when the pod changed.
     */
    public Rollback rollbackAsOf(Pod claimed, String keyHash) {
        return rollback(claimed, keyHash, false);
    }

    private Rollback rollback(Pod claimed, String keyHash, boolean reread) {
        String ns = claimed.getMetadata().getNamespace();
        String name = claimed.getMetadata().getName();
        String uid = claimed.getMetadata().getUid();
        String claimedAt = ManagedPods.annotations(claimed).get(PlaypenKeys.CLAIMED_AT);
        String claimId = ManagedPods.annotations(claimed).get(PlaypenKeys.CLAIM_ID);
        Pod current = claimed;
        for (int attempt = 0; attempt < 5; attempt++) {
            if (current == null || !java.util.Objects.equals(uid, current.getMetadata().getUid())
                    || !keyHash.equals(ManagedPods.keyHash(current))
                    || !java.util.Objects.equals(claimedAt, ManagedPods.annotations(current).get(PlaypenKeys.CLAIMED_AT))
                    || !java.util.Objects.equals(claimId, ManagedPods.annotations(current).get(PlaypenKeys.CLAIM_ID))
                    || ManagedPods.isTerminating(current)) {
                return Rollback.GONE;
            }
            if (ClaimLedger.isSettled(current)) {
                return Rollback.SETTLED;
            }
            try {
                calls.count(KubeApiCall.PODS_PATCH);
                mergePatch(client, ns, name, unclaimPatch(current.getMetadata().getResourceVersion()));
                return Rollback.ROLLED_BACK;
            } catch (KubernetesClientException e) {
                if (e.getCode() == 404) {
                    return Rollback.GONE;
                }
                if (e.getCode() != 409) {
                    throw e;
                }
                if (!reread) {
                    return Rollback.CHANGED;
                }
            }
            current = read(ns, name);
        }
        throw new KubernetesClientException("pod " + ns + "/" + name + " kept changing while its lost claim was undone");
    }

    private static String unclaimPatch(String resourceVersion) {
        Map<String, Object> annotations = new LinkedHashMap<>();
        for (String a : List.of(PlaypenKeys.IDEMPOTENCY_KEY_HASH, PlaypenKeys.REQUEST_HASH,
                PlaypenKeys.CLIENT_WIREGUARD_PUBLIC_KEY, PlaypenKeys.CLAIMED_AT, PlaypenKeys.CLAIM_ID,
                PlaypenKeys.EXPIRES_AT, PlaypenKeys.OWNER_HASH, PlaypenKeys.OWNER_QUOTA, PlaypenKeys.OWNER_HASH_MOVED,
                PlaypenKeys.CLAIMED_BY)) {
            annotations.put(a, null);
        }
        Map<String, Object> labels = new LinkedHashMap<>();
        for (String l : List.of(PlaypenKeys.ALLOCATED, PlaypenKeys.KEY_HASH_LABEL, PlaypenKeys.OWNER_HASH_LABEL)) {
            labels.put(l, null);
        }
        Map<String, Object> metadata = new LinkedHashMap<>();
        metadata.put("resourceVersion", resourceVersion);
        metadata.put("labels", labels);
        metadata.put("annotations", annotations);
        return Json.write(Map.of("metadata", metadata));
    }

    /**
     * Marks a claim as standing with a conditional write on the version read ({@code pod}); a
     * KubernetesClientException with code 409 means the pod changed since (404: gone).
     */
    public Pod settle(Pod pod) {
        calls.count(KubeApiCall.PODS_PATCH);
        Map<String, Object> metadata = new LinkedHashMap<>();
        metadata.put("resourceVersion", pod.getMetadata().getResourceVersion());
        metadata.put("annotations", Map.of(PlaypenKeys.CLAIM_SETTLED, "true"));
        return mergePatch(client, pod.getMetadata().getNamespace(), pod.getMetadata().getName(),
                Json.write(Map.of("metadata", metadata)));
    }

    /**
     * The managed pods that carry this key now, read from the API server itself (a consistent read, not the
     * watch cache): by the key-hash label, plus {@code alsoCheck} (pods the cache knows with the key, which may
     * predate the label) read fresh one by one.
     */
    public List<Pod> claimedWith(String namespace, String keyHash, java.util.Collection<String> alsoCheck) {
        List<Pod> out = new java.util.ArrayList<>();
        for (Pod p : listByLabel(namespace, PlaypenKeys.KEY_HASH_LABEL, labelValue(keyHash))) {
            if (keyHash.equals(ManagedPods.keyHash(p)) && ManagedPods.isManaged(p)) {
                out.add(p);
            }
        }
        for (String name : alsoCheck) {
            if (out.stream().noneMatch(p -> p.getMetadata().getName().equals(name))) {
                Pod p = read(namespace, name);
                if (p != null && keyHash.equals(ManagedPods.keyHash(p)) && ManagedPods.isManaged(p)) {
                    out.add(p);
                }
            }
        }
        return out;
    }

    /**
     * The live claims of an owner as the API server has them now (a consistent LIST by the owner label): claimed
     * pods carrying that owner hash that are not being deleted. What the quota counts against the API server.
     */
    public List<Pod> liveClaimsOf(String namespace, String ownerHash) {
        return listByLabel(namespace, io.unboundedcloud.playpen.model.PlaypenKeys.OWNER_HASH_LABEL,
                labelValue(ownerHash)).stream()
                .filter(p -> ownerHash.equals(ManagedPods.ownerHash(p)) && ManagedPods.isClaimed(p)
                        && !ManagedPods.isTerminating(p))
                .toList();
    }

    /** Pods with {@code label=value}, listed from the API server (a consistent read). */
    public List<Pod> listByLabel(String namespace, String label, String value) {
        return listPods(namespace, label, value).getItems();
    }

    /** Pods that carry {@code label} (any value), listed from the API server (a consistent read). */
    public List<Pod> listWithLabel(String namespace, String label) {
        return listPods(namespace, label, List.of()).getItems();
    }

    /**
     * Pods with {@code label=value} ({@code value} null: any value), listed from the API server (a consistent read),
     * with the list's resourceVersion: a watch from it sees every change after the list.
     */
    public io.fabric8.kubernetes.api.model.PodList listPods(String namespace, String label, String value) {
        return listPods(namespace, label, value == null ? List.of() : List.of(value));
    }

    /** {@link #listPods(String, String, String)} of the pods whose {@code label} has one of {@code values} (none: any). */
    public io.fabric8.kubernetes.api.model.PodList listPods(String namespace, String label, List<String> values) {
        calls.count(KubeApiCall.PODS_LIST);
        return labelled(namespace, label, values).list();
    }

    private io.fabric8.kubernetes.client.dsl.FilterWatchListDeletable<Pod, io.fabric8.kubernetes.api.model.PodList,
            io.fabric8.kubernetes.client.dsl.PodResource> labelled(String namespace, String label, List<String> values) {
        var pods = client.pods().inNamespace(namespace);
        return values.isEmpty() ? pods.withLabel(label) : values.size() == 1 ? pods.withLabel(label, values.get(0))
                : pods.withLabelIn(label, values.toArray(String[]::new));
    }

    /**
     * Watches the pods whose {@code label} has one of {@code values} (none: any value) from {@code resourceVersion}:
     * every change after it, in the order the API server committed them (a version it no longer keeps ends the watch
     * with a 410 Gone); one watch, so a pod whose label moves from one of the values to another is one MODIFIED, in
     * its place among the other changes. The client opens the watch again from the last version it delivered when
     * the connection drops. {@code bookmarks}: the watcher is also given the API server's BOOKMARK events (a pod
     * with only the version its watch has reached).
     */
    public io.fabric8.kubernetes.client.Watch watchPods(String namespace, String label, List<String> values,
            String resourceVersion, boolean bookmarks, io.fabric8.kubernetes.client.Watcher<Pod> watcher) {
        var options = new io.fabric8.kubernetes.api.model.ListOptionsBuilder().withResourceVersion(resourceVersion);
        if (bookmarks) {
            options.withAllowWatchBookmarks(true);
        }
        return labelled(namespace, label, values).watch(options.build(), watcher);
    }

    /**
     * The pod as the API server has it now (a consistent GET; null when gone, as the DSL's {@code get()} answers a
     * 404), read as its slim copy like a PATCH's answer ({@link #mergePatch}), with the same failures: every caller
     * (a replay, a read after a conflict or an unknown outcome) uses only what the cache keeps of a pod.
     */
    public Pod read(String namespace, String name) {
        calls.count(KubeApiCall.PODS_GET);
        return read(client, namespace, name);
    }

    /** {@link #read(String, String)} through {@code client}, not counted (the caller counts it, as for mergePatch). */
    static Pod read(KubernetesClient client, String namespace, String name) {
        HttpResponse<byte[]> response = send(client, namespace, name, null);
        return response.code() == 404 ? null : slimPod(client, namespace, name, "GET", response);
    }

    /**
     * Deletes {@code pod} only while it is still the one claimed with {@code keyHash}: the delete carries the
     * cached resourceVersion as precondition, and on a conflict the pod is read fresh and checked again.
     * Pod names are reused by the pool, so a stale cache must never delete a newer pod of another key.
     *
     * @return true when the pod is deleted or already gone, false when it no longer belongs to the key
     */
    public boolean deleteIfClaimedBy(Pod pod, String keyHash) {
        return delete(pod, keyHash) != Deletion.NOT_OURS;
    }

    /** What a conditional delete did. */
    public enum Deletion {
        /** this call deleted the pod */
        DELETED,
        /** the pod was already gone or being deleted: someone else's delete (the TTL timer's or the sweep's) */
        GONE,
        /** the pod now belongs to another key (or to none): left alone */
        NOT_OURS
    }

    /** {@link #deleteIfClaimedBy} telling apart whose delete it was, so an expiry is counted once. */
    public Deletion delete(Pod pod, String keyHash) {
        return delete(pod, keyHash, p -> true);
    }

    /**
     * {@link #delete(Pod, String)} that also re-checks {@code stillWanted} on the fresh pod after a conflict: the
     * TTL's delete must not remove a claim whose expiry a renewal has just moved.
     */
    public Deletion delete(Pod pod, String keyHash, java.util.function.Predicate<Pod> stillWanted) {
        String ns = pod.getMetadata().getNamespace();
        String name = pod.getMetadata().getName();
        Pod current = pod;
        for (int attempt = 0; attempt < 3; attempt++) {
            if (current == null) {
                return Deletion.GONE;
            }
            if (!keyHash.equals(ManagedPods.keyHash(current))) {
                return Deletion.NOT_OURS;
            }
            if (attempt > 0 && ManagedPods.isTerminating(current)) {
                return Deletion.GONE;
            }
            if (attempt > 0 && !stillWanted.test(current)) {
                return Deletion.NOT_OURS;
            }
            try {
                calls.count(KubeApiCall.PODS_DELETE);
                // fabric8 answers a delete of a missing pod with an empty list, not a 404 exception
                var deleted = client.pods().inNamespace(ns).resource(current)
                        .lockResourceVersion(current.getMetadata().getResourceVersion()).delete();
                return deleted == null || deleted.isEmpty() ? Deletion.GONE : Deletion.DELETED;
            } catch (KubernetesClientException e) {
                if (e.getCode() == 404) {
                    return Deletion.GONE;
                }
                if (e.getCode() != 409) {
                    throw e;
                }
            }
            current = read(ns, name);
        }
        return Deletion.NOT_OURS;
    }
}
