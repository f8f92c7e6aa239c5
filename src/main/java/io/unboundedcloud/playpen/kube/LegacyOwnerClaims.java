package io.unboundedcloud.playpen.kube;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.OwnerHashes;
import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * Moves claims written before the owner-hash key existed (legacy owner hash, unkeyed) to the keyed hash, the first
 * time their owner asks for an allocation: one conditional merge patch per such pod (its resourceVersion as the
 * precondition; a claim whose version moved on meanwhile is read again and written again while it is still the
 * owner's live legacy claim, a few times at most, else left for the next time), and the written pod goes into the
 * cache at once. The owner index, and with it the per-user quota, then count those claims too; the unkeyed hash
 * leaves the pod (annotation and owner label). Reads (lists, gets, deletes) accept both forms anyway, so nothing
 * depends on this happening. The same write marks the claim as moved ({@link PlaypenKeys#OWNER_HASH_MOVED}): its
 * writer counted the owner's legacy claims only, so the owner's claims under the keyed hash were never counted
 * against it, nor it against them, and what was proven by counting one hash's claims says nothing across the two
 * (see LostClaimSweeper and ClaimResolver).
 */
public final class LegacyOwnerClaims {
    private static final Logger LOG = LoggerFactory.getLogger(LegacyOwnerClaims.class);

    private final KubernetesClient client;
    private final PodCache pods;
    private final ApiCallCounter calls;

    public LegacyOwnerClaims(KubernetesClient client, PodCache pods, ApiCallCounter calls) {
        this.client = client;
        this.pods = pods;
        this.calls = calls;
    }

    /**
     * Rewrites this owner's live claims that carry the legacy hash; returns how many were rewritten now. The link of
     * the owner's two hashes is held for the request from here on: call {@link #release} once it is done.
     */
    public int adopt(OwnerHashes.Owner owner) {
        if (!linked(owner)) {
            return 0;
        }
        // the owner's claims this cache has not delivered yet are not moved here: the writer of the owner's next
        // claim counts them once its watch has delivered that claim (Allocator), by this link
        pods.recordLegacyOwnerHash(owner.current(), owner.legacy());
        List<Pod> legacy = pods.byOwnerHash(owner.legacy());
        int moved = 0;
        for (Pod pod : legacy) {
            if (!ManagedPods.isClaimed(pod) || ManagedPods.isTerminating(pod)) {
                continue;
            }
            String ns = pod.getMetadata().getNamespace() == null ? pods.namespace() : pod.getMetadata().getNamespace();
            String name = pod.getMetadata().getName();
            String rv = pod.getMetadata().getResourceVersion();
            for (int attempt = 1; rv != null; attempt++) {
                try {
                    calls.count(KubeApiCall.PODS_PATCH);
                    Pod written = ClaimWriter.mergePatch(client, ns, name, patch(rv, owner.current()));
                    pods.observe(written);
                    moved++;
                    LOG.info("owner hash rewritten pod={}/{} outcome=keyed", ns, name);
                    break;
                } catch (KubernetesClientException e) {
                    if (e.getCode() != 409 && e.getCode() != 404) {
                        throw e;
                    }
                    // changed or gone meanwhile (the cache's version was behind: a renewal, say): read it again,
                    // and move it if it is still this owner's legacy claim, else the quota would not count it
                    LOG.debug("owner hash not rewritten pod={}/{} code={}", ns, name, e.getCode());
                    rv = e.getCode() == 409 && attempt < MAX_ATTEMPTS ? stillLegacy(ns, name, owner) : null;
                }
            }
        }
        return moved;
    }

    /**
     * The request that called {@link #adopt} for {@code owner} is done (answered or failed): it no longer holds the
     * link of the owner's two hashes, which the cache keeps only while it still matters
     * ({@link PodCache#releaseLegacyOwnerHash}).
     */
    public void release(OwnerHashes.Owner owner) {
        if (linked(owner)) {
            pods.releaseLegacyOwnerHash(owner.current());
        }
    }

    /**
     * Drops the links of owners no request holds and whose legacy claims have left the cache (moved, released or
     * expired) since: run periodically ({@link PodCache#pruneLegacyOwnerHashes}); returns how many went.
     */
    public int prune() {
        return pods.pruneLegacyOwnerHashes();
    }

    /** The owner has two hashes to link (the same test in adopt and release, so each hold is released once). */
    private static boolean linked(OwnerHashes.Owner owner) {
        return owner != null && !owner.legacy().equals(owner.current());
    }

    /** Writes tried per claim before it is left for a later request (reads accept it meanwhile). */
    static final int MAX_ATTEMPTS = 3;

    /**
     * The resourceVersion of the pod as the API server has it when it is still this owner's live legacy claim (a
     * consistent GET, read as the slim pod: its labels, annotations, deletionTimestamp and resourceVersion are all
     * this looks at).
     */
    private String stillLegacy(String ns, String name, OwnerHashes.Owner owner) {
        calls.count(KubeApiCall.PODS_GET);
        Pod now = ClaimWriter.read(client, ns, name);
        if (now == null || !ManagedPods.isManaged(now) || !ManagedPods.isClaimed(now) || ManagedPods.isTerminating(now)
                || !owner.legacy().equals(ManagedPods.ownerHash(now))) {
            return null;
        }
        return now.getMetadata().getResourceVersion();
    }

    static String patch(String resourceVersion, String ownerHash) {
        Map<String, Object> annotations = new LinkedHashMap<>();
        Map<String, Object> labels = new LinkedHashMap<>();
        // annotation and owner label move together, as a claim writes them, with the mark of the move
        ClaimWriter.putOwner(annotations, labels, ownerHash);
        annotations.put(PlaypenKeys.OWNER_HASH_MOVED, "true");
        Map<String, Object> metadata = new LinkedHashMap<>();
        metadata.put("resourceVersion", resourceVersion);
        metadata.put("annotations", annotations);
        metadata.put("labels", labels);
        return Json.write(Map.of("metadata", metadata));
    }
}
