package io.unboundedcloud.playpen.bench;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeAddress;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.unboundedcloud.playpen.kube.ClaimWriter;
import io.unboundedcloud.playpen.model.AllocCommand;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * The reference (Go) operator's request pattern for one allocation, issued with the fabric8 client:
 * LIST the namespace's pods (idempotency lookup over managed pods), LIST runner pods by the runner selector,
 * GET the chosen pod's node (ExternalIP), GET the pod fresh, PUT it with the claim annotations and label.
 * A 409 on the PUT starts over (counted). Candidates are tried in Candidates.select order (the ring order), which
 * is generous to the reference: it keeps concurrent allocations off the same pod.
 */
final class ReferencePattern {
    private static final int MAX_ATTEMPTS = 10;

    private final KubernetesClient client;
    private final String namespace;
    private final Candidates candidates = new Candidates(Map.of(PlaypenKeys.APP_NAME, PlaypenKeys.RUNNER_APP_NAME));
    final java.util.concurrent.atomic.LongAdder conflicts = new java.util.concurrent.atomic.LongAdder();

    ReferencePattern(KubernetesClient client, String namespace) {
        this.client = client;
        this.namespace = namespace;
    }

    /** Allocates for {@code cmd}; returns the claimed pod's name. */
    String allocate(AllocCommand cmd) {
        for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
            List<Pod> all = client.pods().inNamespace(namespace).list().getItems();
            for (Pod p : all) {
                if (ManagedPods.isManaged(p) && cmd.keyHash().equals(ManagedPods.keyHash(p))) {
                    return p.getMetadata().getName();
                }
            }
            List<Pod> runners = client.pods().inNamespace(namespace)
                    .withLabel(PlaypenKeys.APP_NAME, PlaypenKeys.RUNNER_APP_NAME).list().getItems();
            // usability without the node; the node is fetched for the chosen candidate only
            Candidates.Selection sel = candidates.select(cmd, runners, node -> Optional.of("unknown"));
            boolean conflict = false;
            for (Candidates.Usable u : sel.ordered()) {
                Pod pod = u.pod();
                Node node = client.nodes().withName(pod.getSpec().getNodeName()).get();
                if (externalIp(node).isEmpty()) {
                    continue;
                }
                Pod fresh = client.pods().inNamespace(namespace).withName(pod.getMetadata().getName()).get();
                if (fresh == null || ManagedPods.isClaimed(fresh)) {
                    continue;
                }
                Map<String, String> ann = new HashMap<>(ManagedPods.annotations(fresh));
                ann.put(PlaypenKeys.IDEMPOTENCY_KEY_HASH, cmd.keyHash());
                ann.put(PlaypenKeys.REQUEST_HASH, cmd.requestHash());
                ann.put(PlaypenKeys.CLIENT_WIREGUARD_PUBLIC_KEY, cmd.wireGuardPublicKey());
                ann.put(PlaypenKeys.CLAIMED_AT, io.unboundedcloud.playpen.model.TtlPolicy.formatClaimedAt(java.time.Instant.now()));
                Map<String, String> labels = new HashMap<>(ManagedPods.labels(fresh));
                labels.put(PlaypenKeys.ALLOCATED, Hashes.allocationId(namespace, fresh.getMetadata().getName()));
                fresh.getMetadata().setAnnotations(ann);
                fresh.getMetadata().setLabels(labels);
                try {
                    client.pods().inNamespace(namespace).resource(fresh).update();
                    return fresh.getMetadata().getName();
                } catch (KubernetesClientException e) {
                    if (e.getCode() != 409) {
                        throw e;
                    }
                    conflicts.increment();
                    conflict = true;
                    break;
                }
            }
            if (!conflict) {
                throw new IllegalStateException("reference pattern: no idle runner pod");
            }
        }
        throw new IllegalStateException("reference pattern: gave up after " + MAX_ATTEMPTS + " conflicts");
    }

    private static Optional<String> externalIp(Node node) {
        if (node == null || node.getStatus() == null || node.getStatus().getAddresses() == null) {
            return Optional.empty();
        }
        for (NodeAddress a : node.getStatus().getAddresses()) {
            if ("ExternalIP".equals(a.getType()) && a.getAddress() != null && !a.getAddress().isBlank()) {
                return Optional.of(a.getAddress());
            }
        }
        return Optional.empty();
    }
}
