package io.unboundedcloud.playpen.model;

import java.util.HashMap;
import java.util.Map;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;

/**
 * The template hash a pool pod records in its {@code template-hash} label: sha256 of the pod the pool would create,
 * with what differs from member to member (name, hostPort, host-port label) left out, so every pod of one template
 * has the same hash and any change of the template (image, flags that shape the pod, a new operator version that
 * builds it differently) gives a new one. Pods with another hash are stale and are rolled.
 */
public final class TemplateHashes {
    /** Hex characters kept: 64 bits, far from colliding among the handful of templates a pool ever sees. */
    static final int LENGTH = 16;
    private static final ObjectMapper CANONICAL = JsonMapper.builder()
            .enable(MapperFeature.SORT_PROPERTIES_ALPHABETICALLY)
            .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS)
            .build();

    private TemplateHashes() {
    }

    /** The hash of a template pod (any member's port: the port-dependent parts are not hashed). */
    public static String of(Pod template) {
        Pod normal = new PodBuilder(template).editMetadata().withName(null).endMetadata().build();
        Map<String, String> labels = new HashMap<>(ManagedPods.labels(normal));
        labels.remove(PlaypenKeys.HOST_PORT);
        labels.remove(PlaypenKeys.TEMPLATE_HASH);
        normal.getMetadata().setLabels(labels);
        if (normal.getSpec() != null && normal.getSpec().getContainers() != null) {
            for (Container c : normal.getSpec().getContainers()) {
                if (c.getPorts() != null) {
                    for (ContainerPort p : c.getPorts()) {
                        if (p.getHostPort() != null) {
                            p.setHostPort(0);
                        }
                    }
                }
            }
        }
        try {
            return Hashes.sha256Hex(CANONICAL.writeValueAsString(normal)).substring(0, LENGTH);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot serialise a pod template", e);
        }
    }

    /** {@code pod} with its template hash label set (a copy; the argument is not changed). */
    public static Pod stamp(Pod pod, String hash) {
        return new PodBuilder(pod).editMetadata().addToLabels(PlaypenKeys.TEMPLATE_HASH, hash).endMetadata().build();
    }

    /** The template hash a pod recorded, "" when it has none (made by the Go operator or an older version). */
    public static String recorded(Pod pod) {
        String h = ManagedPods.label(pod, PlaypenKeys.TEMPLATE_HASH);
        return h == null ? "" : h;
    }

    /**
     * Whether {@code pod} was built from the template whose hash is {@code hash} ({@code template} is one member of
     * it). A pod without a recorded hash counts as current when every container of the template is there with the
     * same image: that is what a swap in place from the Go operator (which records no hash) finds, and the image is
     * what --runner-image and --control-plane-image change.
     */
    public static boolean isCurrent(Pod pod, String hash, Pod template) {
        String recorded = recorded(pod);
        if (!recorded.isEmpty()) {
            return recorded.equals(hash);
        }
        return sameImages(pod, template);
    }

    static boolean sameImages(Pod pod, Pod template) {
        if (pod.getSpec() == null || pod.getSpec().getContainers() == null || template.getSpec() == null) {
            return false;
        }
        Map<String, String> images = new HashMap<>();
        for (Container c : pod.getSpec().getContainers()) {
            images.put(c.getName(), c.getImage());
        }
        for (Container want : template.getSpec().getContainers()) {
            if (!want.getImage().equals(images.get(want.getName()))) {
                return false;
            }
        }
        return true;
    }
}
