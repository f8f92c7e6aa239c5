package io.unboundedcloud.playpen.kube;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

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

    private final KubernetesClient client;
    private final Clock clock;
    private final ApiCallCounter calls;
    private final TtlPolicy leases;

    /** A writer whose claims carry no expires-at (they expire at claimed-at + --playpen-ttl, as the reference's). */
    public ClaimWriter(KubernetesClient client, Clock clock, ApiCallCounter calls) {
        this(client, clock, calls, null);
    }

    /** A writer whose claims carry their expiry (expires-at) as {@code leases} decides it; null: none. */
    public ClaimWriter(KubernetesClient client, Clock clock, ApiCallCounter calls, TtlPolicy leases) {
        this.client = client;
        this.clock = clock;
        this.calls = calls;
        this.leases = leases;
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
        calls.count(KubeApiCall.PODS_PATCH);
        String ns = pod.getMetadata().getNamespace();
        String name = pod.getMetadata().getName();
        return mergePatch(client, ns, name, claimPatch(ns, name, resourceVersion, cmd, ownerHash));
    }

    /**
     * One merge PATCH of a pod, sent through the fabric8 client's own HTTP client (its authentication, TLS, retry
     * of transport failures and request timeout), without the resource DSL: {@code resource(pod).patch(...)}
     * clones the whole pod through JSON before it sends anything, and {@code withName(...).patch(...)} GETs it
     * first. The claim is the hot path (one write per allocation, DESIGN §2), so it pays for the request and the
     * answer's parse only. Failures are the DSL's: a KubernetesClientException with the answer's code and Status.
     */
    static Pod mergePatch(KubernetesClient client, String ns, String name, String patch) {
        HttpClient http = client.getHttpClient();
        HttpRequest request = http.newHttpRequestBuilder()
                .uri(podUrl(client, ns, name))
                .method("PATCH", MERGE_PATCH_JSON, patch)
                .timeout(client.getConfiguration().getRequestTimeout(), TimeUnit.MILLISECONDS)
                .build();
        HttpResponse<byte[]> response;
        try {
            response = http.sendAsync(request, byte[].class).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KubernetesClientException("interrupted while patching pod " + ns + "/" + name, e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            if (cause instanceof KubernetesClientException k) {
                throw k;
            }
            throw new KubernetesClientException("PATCH of pod " + ns + "/" + name + " failed: " + cause, cause);
        }
        KubernetesSerialization json = client.getKubernetesSerialization();
        byte[] body = response.body() == null ? new byte[0] : response.body();
        if (response.isSuccessful()) {
            return json.unmarshal(new ByteArrayInputStream(body), Pod.class);
        }
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
        throw new KubernetesClientException("PATCH of pod " + ns + "/" + name + " answered " + response.code() + ": "
                + status.getMessage(), response.code(), status);
    }

    private static String podUrl(KubernetesClient client, String ns, String name) {
        String master = client.getMasterUrl().toString();
        return master + (master.endsWith("/") ? "" : "/") + "api/v1/namespaces/" + ns + "/pods/" + name;
    }

    String claimPatch(String namespace, String name, String resourceVersion, AllocCommand cmd) {
        return claimPatch(namespace, name, resourceVersion, cmd, null);
    }

    String claimPatch(String namespace, String name, String resourceVersion, AllocCommand cmd, String ownerHash) {
        Map<String, Object> annotations = new LinkedHashMap<>();
        annotations.put(PlaypenKeys.IDEMPOTENCY_KEY_HASH, cmd.keyHash());
        annotations.put(PlaypenKeys.REQUEST_HASH, cmd.requestHash());
        annotations.put(PlaypenKeys.CLIENT_WIREGUARD_PUBLIC_KEY, cmd.wireGuardPublicKey());
        Instant now = clock.instant();
        annotations.put(PlaypenKeys.CLAIMED_AT, TtlPolicy.formatClaimedAt(now));
        if (leases != null) {
            // the expiry goes in the same single write as the claim: there is never a claim without its lease
            leases.claimExpiry(now, cmd.ttl())
                    .ifPresent(at -> annotations.put(PlaypenKeys.EXPIRES_AT, TtlPolicy.formatClaimedAt(at)));
        }
        if (ownerHash != null) {
            annotations.put(PlaypenKeys.OWNER_HASH, ownerHash);
        }
        Map<String, Object> metadata = new LinkedHashMap<>();
        metadata.put("resourceVersion", resourceVersion);
        metadata.put("labels", Map.of(PlaypenKeys.ALLOCATED, Hashes.allocationId(namespace, name)));
        metadata.put("annotations", annotations);
        return Json.write(Map.of("metadata", metadata));
    }

    /** A fresh read after a conflict (null when gone). */
    public Pod read(String namespace, String name) {
        calls.count(KubeApiCall.PODS_GET);
        return client.pods().inNamespace(namespace).withName(name).get();
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
