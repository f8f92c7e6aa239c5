package io.unboundedcloud.playpen.model;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;

/**
 * One pool as a pass saw it: what the {@code pools} resource, the metrics and the conditions show.
 *
 * @param target          the pool
 * @param configured      false for a pool no flag asks for any more (a removed control-plane version): it drains
 * @param minimum         the count flag
 * @param maximum         --pool-max-idle when the demand-aware buffer is on, else the minimum
 * @param desired         the idle pods wanted now (the minimum, or the buffer's size)
 * @param ready           idle pods ready to be handed out (any template)
 * @param idle            unclaimed pods that are not being deleted (starting, ready, stale, unhealthy)
 * @param allocated       claimed pods that are not being deleted
 * @param stale           idle healthy pods of another template
 * @param unhealthy       unhealthy pods, idle and allocated
 * @param starting        current-template idle pods not ready yet (created but not yet seen included)
 * @param unhealthyByReason unhealthy idle pods per {@link PoolHealth.Problem#reason()}
 * @param unhealthyAllocatedByReason unhealthy allocated pods per reason (reported, never deleted by the pool)
 * @param templateHash    the hash current pods carry
 * @param image           the image of the template's first container
 * @param backoff         the pool's back-off
 * @param portsExhausted  a pod the pool wanted could not be planned: its hostPort range is full
 * @param oldest          creation of the pool's oldest live pod (null when it has none)
 * @param allocationRate  allocations per second (the buffer's rate; 0 when nobody measures it)
 * @param timeToReady     the pool's recent time-to-ready (null until one was seen)
 * @param noExternalIp    healthy idle pods ready as far as the pod goes but on a node without an ExternalIP: never
 *                        handed out, so not in {@code ready} (nor in {@code starting})
 * @param onNodesInDoubt  healthy idle pods ready in themselves on a node that is gone or not Ready: never handed out,
 *                        so neither in {@code ready} nor in {@code starting}; replaced after the node grace
 */
public record PoolStatus(PoolTarget target, boolean configured, int minimum, int maximum, int desired, int ready,
        int idle, int allocated, int stale, int unhealthy, int starting, Map<String, Integer> unhealthyByReason, Map<String, Integer> unhealthyAllocatedByReason,
        String templateHash, String image, PoolBackoff.View backoff, boolean portsExhausted, Instant oldest,
        double allocationRate, Duration timeToReady, int noExternalIp, int onNodesInDoubt) {

    /** The pool's name in the {@code pools} resource: runner-amd64, control-plane-v1.33.0. */
    public String name() {
        return name(target);
    }

    public static String name(PoolTarget target) {
        return target.type() == ResourceType.RUNNER ? "runner-" + target.variant()
                : "control-plane-" + PodTemplates.kubernetesVersionLabel(target.variant()).toLowerCase(java.util.Locale.ROOT);
    }
}
