package io.unboundedcloud.playpen.model;

import java.util.Map;
import java.util.Optional;

import io.fabric8.kubernetes.api.model.Pod;

/** Facts read off a pod's metadata: managed or not, kind, architecture, claim (SPEC A1, A8). */
public final class PodFacts {
    private PodFacts() {
    }

    public static Map<String, String> labels(Pod pod) {
        Map<String, String> l = pod.getMetadata().getLabels();
        return l == null ? Map.of() : l;
    }

    public static Map<String, String> annotations(Pod pod) {
        Map<String, String> a = pod.getMetadata().getAnnotations();
        return a == null ? Map.of() : a;
    }

    /** The resource type from the resource-type label, else from app.kubernetes.io/name. */
    public static Optional<ResourceType> resourceType(Pod pod) {
        Map<String, String> labels = labels(pod);
        Optional<ResourceType> byLabel = ResourceType.fromLabel(labels.get(PlaypenKeys.RESOURCE_TYPE));
        if (byLabel.isPresent()) {
            return byLabel;
        }
        String app = labels.get(PlaypenKeys.APP_NAME);
        if (PlaypenKeys.RUNNER_APP_NAME.equals(app)) {
            return Optional.of(ResourceType.RUNNER);
        }
        if (PlaypenKeys.CONTROL_PLANE_APP_NAME.equals(app)) {
            return Optional.of(ResourceType.CONTROL_PLANE);
        }
        return Optional.empty();
    }

    public static boolean isManaged(Pod pod) {
        return resourceType(pod).isPresent();
    }

    /** The architecture label normalised: absent or empty → amd64. */
    public static String architecture(Pod pod) {
        String a = labels(pod).get(PlaypenKeys.ARCHITECTURE);
        return a == null || a.isBlank() ? "amd64" : a.trim();
    }

    public static String keyHash(Pod pod) {
        String h = annotations(pod).get(PlaypenKeys.IDEMPOTENCY_KEY_HASH);
        return h == null ? "" : h;
    }

    public static boolean isClaimed(Pod pod) {
        return !keyHash(pod).isEmpty();
    }

    public static boolean isTerminating(Pod pod) {
        return pod.getMetadata().getDeletionTimestamp() != null;
    }

    /** The kubernetes-version label value for a version: '+' and '_' become '-'. */
    public static String versionLabel(String version) {
        return version.replace('+', '-').replace('_', '-');
    }
}
