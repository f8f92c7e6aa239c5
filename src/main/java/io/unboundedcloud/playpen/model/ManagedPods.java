package io.unboundedcloud.playpen.model;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.Pod;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * Read-only facts about pooled pods, taken from their labels, annotations and spec.
 * Every helper is null-safe: a pod without metadata or spec simply has none of the facts.
 */
public final class ManagedPods {
    public static final String AMD64 = "amd64";
    public static final String ARM64 = "arm64";

    private ManagedPods() {
    }

    /** Managed = the resource-type label names a resource type, or app.kubernetes.io/name is one of ours. */
    public static boolean isManaged(Pod pod) {
        return resourceType(pod).isPresent();
    }

    /**
     * The pod's kind: the resource-type label when it names one (case-insensitively, like the reference),
     * otherwise the app.kubernetes.io/name label; empty for pods that are not managed.
     */
    public static Optional<ResourceType> resourceType(Pod pod) {
        String label = label(pod, PlaypenKeys.RESOURCE_TYPE);
        // An empty label is not "a valid resource type"; fromRequest would map it to runner.
        if (label != null && !label.isBlank()) {
            Optional<ResourceType> fromLabel = ResourceType.fromRequest(label);
            if (fromLabel.isPresent()) {
                return fromLabel;
            }
        }
        String app = label(pod, PlaypenKeys.APP_NAME);
        if (PlaypenKeys.RUNNER_APP_NAME.equals(app)) {
            return Optional.of(ResourceType.RUNNER);
        }
        if (PlaypenKeys.CONTROL_PLANE_APP_NAME.equals(app)) {
            return Optional.of(ResourceType.CONTROL_PLANE);
        }
        return Optional.empty();
    }

    /** True when the pod is managed and of the given kind. */
    public static boolean isKind(Pod pod, ResourceType type) {
        return resourceType(pod).filter(type::equals).isPresent();
    }

    /**
     * The architecture label normalised as the reference does: absent or empty → amd64 (control planes too),
     * amd64/arm64 in any case → lowercase; anything else is returned unchanged so it never matches a request.
     */
    public static String architecture(Pod pod) {
        String raw = label(pod, PlaypenKeys.ARCHITECTURE);
        String v = raw == null ? "" : GoStrings.trimSpace(raw).toLowerCase(Locale.ROOT);
        if (v.isEmpty() || v.equals(AMD64)) {
            return AMD64;
        }
        if (v.equals(ARM64)) {
            return ARM64;
        }
        return raw;
    }

    /** The kubernetes-version label with a leading {@code v} added when missing; "" when absent. */
    public static String kubernetesVersion(Pod pod) {
        String raw = label(pod, PlaypenKeys.KUBERNETES_VERSION);
        if (raw == null || GoStrings.trimSpace(raw).isEmpty()) {
            return raw == null ? "" : raw;
        }
        String v = GoStrings.trimSpace(raw);
        return v.startsWith("v") ? v : "v" + v;
    }

    /** Claimed = a non-empty idempotency-key-hash annotation. */
    public static boolean isClaimed(Pod pod) {
        String hash = annotation(pod, PlaypenKeys.IDEMPOTENCY_KEY_HASH);
        return hash != null && !hash.isEmpty();
    }

    /** Terminating = a deletionTimestamp is set. */
    public static boolean isTerminating(Pod pod) {
        String ts = pod == null || pod.getMetadata() == null ? null : pod.getMetadata().getDeletionTimestamp();
        return ts != null && !ts.isEmpty();
    }

    /**
     * The hostPort of the kind's named container port ({@code wireguard}/UDP for runners, {@code apiserver}/TCP
     * for control planes). This is the port the kubelet binds, so it is what alloc hands out.
     */
    public static OptionalInt containerHostPort(Pod pod) {
        Optional<ResourceType> type = resourceType(pod);
        if (type.isEmpty() || pod.getSpec() == null || pod.getSpec().getContainers() == null) {
            return OptionalInt.empty();
        }
        boolean runner = type.get() == ResourceType.RUNNER;
        String name = runner ? PlaypenKeys.WIREGUARD_PORT_NAME : PlaypenKeys.APISERVER_PORT_NAME;
        String protocol = runner ? "UDP" : "TCP";
        // by index, not iterators: the pools and the walk ask this of every pod they judge
        List<Container> containers = pod.getSpec().getContainers();
        for (int i = 0; i < containers.size(); i++) {
            List<ContainerPort> ports = containers.get(i).getPorts();
            if (ports == null) {
                continue;
            }
            for (int j = 0; j < ports.size(); j++) {
                ContainerPort p = ports.get(j);
                // The API server defaults an absent protocol to TCP.
                String proto = p.getProtocol() == null || p.getProtocol().isEmpty() ? "TCP" : p.getProtocol();
                if (name.equals(p.getName()) && protocol.equals(proto) && p.getHostPort() != null && p.getHostPort() > 0) {
                    return OptionalInt.of(p.getHostPort());
                }
            }
        }
        return OptionalInt.empty();
    }

    /** The host-port label as a number in 1..65535; empty when absent or not a port. */
    public static OptionalInt labelHostPort(Pod pod) {
        String raw = label(pod, PlaypenKeys.HOST_PORT);
        if (raw == null) {
            return OptionalInt.empty();
        }
        try {
            int port = Integer.parseInt(raw.trim());
            return port >= 1 && port <= 65535 ? OptionalInt.of(port) : OptionalInt.empty();
        } catch (NumberFormatException e) {
            return OptionalInt.empty();
        }
    }

    /**
     * The pod's host port: the named container port's hostPort, falling back to the host-port label.
     * The spec wins over the label because labels can be edited but a pod's ports cannot.
     */
    public static OptionalInt hostPort(Pod pod) {
        OptionalInt fromSpec = containerHostPort(pod);
        return fromSpec.isPresent() ? fromSpec : labelHostPort(pod);
    }

    /**
     * Idle for pool accounting: managed, not terminating, unclaimed, and a hostPort on the named
     * container port. Readiness and node checks belong to the alloc path, not to the pool count.
     */
    public static boolean isIdle(Pod pod) {
        return isManaged(pod) && !isTerminating(pod) && !isClaimed(pod) && containerHostPort(pod).isPresent();
    }

    /** The pod name, or "" when it has none. */
    public static String name(Pod pod) {
        return pod == null || pod.getMetadata() == null || pod.getMetadata().getName() == null
                ? "" : pod.getMetadata().getName();
    }

    /** The pod's labels, never null. */
    public static Map<String, String> labels(Pod pod) {
        Map<String, String> l = pod == null || pod.getMetadata() == null ? null : pod.getMetadata().getLabels();
        return l == null ? Map.of() : l;
    }

    /** The pod's annotations, never null. */
    public static Map<String, String> annotations(Pod pod) {
        Map<String, String> a = pod == null || pod.getMetadata() == null ? null : pod.getMetadata().getAnnotations();
        return a == null ? Map.of() : a;
    }

    /** The idempotency-key-hash annotation, "" when unclaimed. */
    public static String keyHash(Pod pod) {
        String h = annotation(pod, PlaypenKeys.IDEMPOTENCY_KEY_HASH);
        return h == null ? "" : h;
    }

    /** The owner hash recorded with the pod's claim ("" when none: no claim, or claimed without an owner). */
    public static String ownerHash(Pod pod) {
        String h = annotation(pod, PlaypenKeys.OWNER_HASH);
        return h == null ? "" : h;
    }

    static String label(Pod pod, String key) {
        return entry(pod == null || pod.getMetadata() == null ? null : pod.getMetadata().getLabels(), key);
    }

    static String annotation(Pod pod, String key) {
        return entry(pod == null || pod.getMetadata() == null ? null : pod.getMetadata().getAnnotations(), key);
    }

    private static String entry(Map<String, String> map, String key) {
        return map == null ? null : map.get(key);
    }
}
