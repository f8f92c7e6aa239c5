package io.unboundedcloud.playpen.model;

import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

import io.fabric8.kubernetes.api.model.ContainerStateWaiting;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeCondition;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;

/**
 * Whether a pool pod is healthy: the facts the pool heals by. A pod is <em>ready</em> for the pool when it could be
 * handed out as far as the pod itself goes (Running, every container running and ready, and what the runner or the
 * control-plane helper publishes: the server key, the kubeconfig). A pod has a {@link Problem} when it will not serve
 * again: it ended (Failed, Succeeded, Evicted), its node is gone or NotReady past a grace, a container crash-loops,
 * or it has not been ready for the ready timeout.
 */
public final class PoolHealth {

    /** Why a pool pod is unhealthy; {@link #reason()} is the metric label and the Event's wording. */
    public enum Problem {
        FAILED("Failed"), SUCCEEDED("Succeeded"), EVICTED("Evicted"), NODE_GONE("NodeGone"),
        NODE_NOT_READY("NodeNotReady"), CRASH_LOOP("CrashLoopBackOff"), NOT_READY_IN_TIME("NotReadyInTime");

        private final String reason;

        Problem(String reason) {
            this.reason = reason;
        }

        public String reason() {
            return reason;
        }

        /** A pod on a node that is gone or unreachable is deleted at once (grace period 0): no kubelet will confirm. */
        public boolean forceDelete() {
            return this == NODE_GONE || this == NODE_NOT_READY;
        }
    }

    /**
     * How many times a container must have restarted, and be waiting in CrashLoopBackOff now, for its pod to be
     * crash-looping: the kubelet has waited 10, 20 and 40 s before those restarts, and a pod that crashed once or
     * twice on a bad moment (its node starting, a dependency not up yet) and then runs is not condemned for it.
     */
    public static final int CRASH_LOOP_RESTARTS = 3;

    /** The limits a check applies (from the --pool-* flags). */
    public record Limits(Duration readyTimeout, Duration nodeNotReadyGrace) {
    }

    private PoolHealth() {
    }

    /**
     * What is wrong with {@code pod} now, if anything. {@code nodes} finds a node by name; it is null when the node
     * cache is not synced, and then node checks are skipped (a node missing from a cold cache is not gone).
     */
    public static Optional<Problem> problem(Pod pod, Function<String, Optional<Node>> nodes, Instant now,
            Limits limits) {
        String phase = pod.getStatus() == null || pod.getStatus().getPhase() == null ? "" : pod.getStatus().getPhase();
        if (phase.equals("Failed")) {
            return Optional.of("Evicted".equals(pod.getStatus().getReason()) ? Problem.EVICTED : Problem.FAILED);
        }
        if (phase.equals("Succeeded")) {
            return Optional.of(Problem.SUCCEEDED);
        }
        String nodeName = pod.getSpec() == null ? null : pod.getSpec().getNodeName();
        if (nodes != null && nodeName != null && !nodeName.isEmpty()) {
            Optional<Node> node = nodes.apply(nodeName);
            if (node.isEmpty()) {
                // a node cache may show a new node a moment after the pods bound to it: only pods older than the
                // grace count as being on a node that is gone
                Optional<Instant> created = instant(pod.getMetadata().getCreationTimestamp());
                if (created.isPresent() && !created.get().plus(limits.nodeNotReadyGrace()).isAfter(now)) {
                    return Optional.of(Problem.NODE_GONE);
                }
                return Optional.empty();
            }
            Optional<Instant> notReady = nodeNotReadySince(node.get());
            if (notReady.isPresent() && !notReady.get().plus(limits.nodeNotReadyGrace()).isAfter(now)) {
                return Optional.of(Problem.NODE_NOT_READY);
            }
        }
        if (!limits.readyTimeout().isZero() && !ready(pod)) {
            // a crash loop is judged by its restarts, not by the time since the pod was last ready: a container
            // that passes its readiness check for a moment after each restart would otherwise restart the clock
            if (crashLooping(pod)) {
                return Optional.of(Problem.CRASH_LOOP);
            }
            Optional<Instant> since = unreadySince(pod);
            if (since.isPresent() && !since.get().plus(limits.readyTimeout()).isAfter(now)) {
                return Optional.of(Problem.NOT_READY_IN_TIME);
            }
        }
        return Optional.empty();
    }

    /**
     * When {@code problem} of {@code pod} began, as the API server holds it (so that every replica reads the same):
     * for a node that is NotReady, when its Ready condition turned; for a node that is gone, nothing (the pod never
     * leaves it); else since when the pod has not been ready ({@link #unreadySince}). Empty when unknown.
     */
    public static Optional<Instant> problemSince(Pod pod, Problem problem, Function<String, Optional<Node>> nodes) {
        return switch (problem) {
            case NODE_GONE -> Optional.empty();
            case NODE_NOT_READY -> {
                String nodeName = pod.getSpec() == null ? null : pod.getSpec().getNodeName();
                yield nodes == null || nodeName == null || nodeName.isEmpty() ? Optional.empty()
                        : nodes.apply(nodeName).flatMap(PoolHealth::nodeNotReadySince);
            }
            default -> unreadySince(pod);
        };
    }

    /** A container waits in CrashLoopBackOff after at least {@link #CRASH_LOOP_RESTARTS} restarts. */
    static boolean crashLooping(Pod pod) {
        if (pod.getStatus() == null || pod.getStatus().getContainerStatuses() == null) {
            return false;
        }
        for (ContainerStatus c : pod.getStatus().getContainerStatuses()) {
            ContainerStateWaiting waiting = c.getState() == null ? null : c.getState().getWaiting();
            if (waiting != null && "CrashLoopBackOff".equals(waiting.getReason()) && c.getRestartCount() != null
                    && c.getRestartCount() >= CRASH_LOOP_RESTARTS) {
                return true;
            }
        }
        return false;
    }

    /** Ready as far as the pod goes: it could be handed out if its node has an ExternalIP. */
    public static boolean ready(Pod pod) {
        if (Candidates.notReadyReason(pod) != null) {
            return false;
        }
        Optional<ResourceType> type = ManagedPods.resourceType(pod);
        if (type.isEmpty() || ManagedPods.containerHostPort(pod).isEmpty()) {
            return false;
        }
        Map<String, String> ann = ManagedPods.annotations(pod);
        if (type.get() == ResourceType.RUNNER) {
            String key = ann.get(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY);
            return AllocRequestParser.isWireGuardKey(key == null ? "" : GoStrings.trimSpace(key));
        }
        return Candidates.kubeconfigReason(ManagedPods.name(pod), ann.get(PlaypenKeys.CONTROL_PLANE_KUBECONFIG)) == null;
    }

    /**
     * Since when a pod that is not ready has been so: when its Ready condition last turned False (a pod that was ready
     * and stopped being so), else its creation. Empty when neither is known.
     */
    static Optional<Instant> unreadySince(Pod pod) {
        Optional<Instant> created = instant(pod.getMetadata() == null ? null : pod.getMetadata().getCreationTimestamp());
        if (pod.getStatus() != null && pod.getStatus().getConditions() != null) {
            for (PodCondition c : pod.getStatus().getConditions()) {
                if ("Ready".equals(c.getType()) && "False".equals(c.getStatus())) {
                    Optional<Instant> t = instant(c.getLastTransitionTime());
                    if (t.isPresent() && (created.isEmpty() || t.get().isAfter(created.get()))) {
                        return t;
                    }
                }
            }
        }
        return created;
    }

    /** False when the node's Ready condition is False or Unknown (a node that reports no condition counts as ready). */
    public static boolean nodeReady(Node node) {
        return nodeNotReadySince(node).isEmpty();
    }

    /** When the node's Ready condition turned False or Unknown; empty while it is Ready (or reports no condition). */
    static Optional<Instant> nodeNotReadySince(Node node) {
        if (node.getStatus() == null || node.getStatus().getConditions() == null) {
            return Optional.empty();
        }
        for (NodeCondition c : node.getStatus().getConditions()) {
            if ("Ready".equals(c.getType()) && !"True".equals(c.getStatus())) {
                return Optional.of(instant(c.getLastTransitionTime()).orElse(Instant.EPOCH));
            }
        }
        return Optional.empty();
    }

    /**
     * A timestamp as the API server writes it ({@code yyyy-MM-ddTHH:mm:ssZ}, read without a DateTimeFormatter: the
     * pools read a pod's timestamps on every change of it), else any ISO-8601 instant or offset date-time; empty
     * when missing or invalid.
     */
    static Optional<Instant> instant(String rfc3339) {
        if (rfc3339 == null || rfc3339.isEmpty()) {
            return Optional.empty();
        }
        Instant utc = TtlPolicy.parseWholeSecondsUtc(rfc3339);
        if (utc != null) {
            return Optional.of(utc);
        }
        try {
            return Optional.of(Instant.parse(rfc3339));
        } catch (DateTimeParseException e) {
            try {
                return Optional.of(java.time.OffsetDateTime.parse(rfc3339).toInstant());
            } catch (DateTimeParseException e2) {
                return Optional.empty();
            }
        }
    }
}
