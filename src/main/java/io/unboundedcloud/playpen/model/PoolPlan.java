package io.unboundedcloud.playpen.model;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.config.OperatorConfig.PortRange;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What one pool pass should do: the idle pods to delete (unhealthy, stale once replaced, surplus), the pods to
 * create (each with a distinct hostPort), the allocated pods to report as unhealthy, the pools whose port range ran
 * out, and each pool as the pass saw it.
 *
 * @param toCreate   pods to create, runners (amd64, arm64) first, then control planes in flag order
 * @param exhausted  pools that could not be refilled completely because their hostPort range is full
 * @param usedPorts  per kind, the ports in use after this plan (existing, expected and planned); a create that
 *                   answers AlreadyExists can pick its replacement with {@link HostPortPlanner#next}
 *                   (the sets are immutable: {@link #portsInUse} gives one to record the replacement ports in)
 * @param toDelete   idle pods to delete, unhealthy ones first
 * @param unhealthyAllocated allocated pods that are unhealthy: never deleted by the pool, reported
 * @param statuses   every pool (configured ones first, in flag order)
 */
public record PoolPlan(List<PlannedPod> toCreate, List<Exhaustion> exhausted,
                       Map<ResourceType, Set<Integer>> usedPorts,
                       List<Deletion> toDelete, List<Unhealthy> unhealthyAllocated,
                       Map<PoolTarget, PoolStatus> statuses) {

    /** One pod to create for {@code target} on {@code hostPort}. */
    public record PlannedPod(PoolTarget target, int hostPort, Pod pod) {
    }

    /** Why an idle pod is deleted. */
    public enum Why {
        /** it will not serve again ({@link PoolHealth.Problem}) */
        UNHEALTHY,
        /** it was built from another template and a current pod is ready to take its place */
        STALE,
        /** the pool holds more idle pods than it wants (count lowered, demand fell, a pool no flag asks for) */
        SURPLUS
    }

    /**
     * An idle pod to delete; {@code problem} is set for {@link Why#UNHEALTHY}. {@code keepReady}: how many of the
     * pool's other ready idle pods, among {@code ready} (those the plan counted ready), must still be idle for the
     * delete to go ahead (0: it does not depend on them); one of them claimed since the plan can leave too few.
     */
    public record Deletion(PoolTarget target, Pod pod, Why why, PoolHealth.Problem problem, int keepReady,
            List<Pod> ready) {
        public Deletion(PoolTarget target, Pod pod, Why why, PoolHealth.Problem problem) {
            this(target, pod, why, problem, 0, List.of());
        }

        /** Grace period 0 for pods whose node is gone or unreachable: no kubelet will confirm a graceful delete. */
        public boolean force() {
            return problem != null && problem.forceDelete();
        }

        /** The Event reason: the problem's (Evicted, NotReadyInTime, ...), Stale or Surplus. */
        public String reason() {
            return switch (why) {
                case UNHEALTHY -> problem.reason();
                case STALE -> "Stale";
                case SURPLUS -> "Surplus";
            };
        }

        /** One line for the log and the Event. */
        public String message() {
            return switch (why) {
                case UNHEALTHY -> "idle pod of pool " + PoolStatus.name(target) + " is unhealthy (" + problem.reason()
                        + "); deleted and replaced";
                case STALE -> "idle pod of pool " + PoolStatus.name(target) + " runs an older template; deleted, as enough "
                        + "ready pods remain without it";
                case SURPLUS -> "idle pod of pool " + PoolStatus.name(target) + " is beyond the desired count; deleted";
            };
        }
    }

    /**
     * An allocated pod that is unhealthy: its allocation is the user's (TTL and dealloc own it), so it is reported.
     * {@code since}: when the problem began ({@link PoolHealth#problemSince}; null when unknown).
     */
    public record Unhealthy(PoolTarget target, Pod pod, PoolHealth.Problem problem, java.time.Instant since) {
        public Unhealthy(PoolTarget target, Pod pod, PoolHealth.Problem problem) {
            this(target, pod, problem, null);
        }

        /**
         * The same for every replica while the problem lasts, and new when it comes back after the pod was well:
         * the pod's uid, the problem and when it began.
         */
        public String key() {
            return pod.getMetadata().getUid() + "/" + problem.reason() + "/" + (since == null ? "" : since.toString());
        }

        public String message() {
            return "allocated pod of pool " + PoolStatus.name(target) + " is unhealthy (" + problem.reason()
                    + "); left to its allocation (dealloc or TTL deletes it)";
        }
    }

    /** {@code unplanned} pods of {@code target} could not be planned because {@code range} has no free port. */
    public record Exhaustion(PoolTarget target, PortRange range, int unplanned) {
        /** One line for the log and the Kubernetes event. */
        public String message() {
            String what = target.type() == ResourceType.RUNNER
                    ? "WireGuard" : "control-plane API server";
            return "no free " + what + " hostPorts are available in range " + range.start() + "-" + range.end()
                    + "; " + unplanned + " " + target.key() + " pod(s) not created";
        }
    }

    /** The pods of {@link #toCreate()} alone. */
    public List<Pod> pods() {
        return toCreate.stream().map(PlannedPod::pod).toList();
    }

    /** The ports of {@code type} this plan saw held, as a set the caller may add to (the plan's own stays as it is). */
    public Set<Integer> portsInUse(ResourceType type) {
        return new Overlaid(usedPorts.getOrDefault(type, Set.of()));
    }

    /**
     * A set of ports over another that is not changed: contains and adds in constant time, however many ports the
     * underlying set holds.
     */
    static final class Overlaid extends java.util.AbstractSet<Integer> {
        private final Set<Integer> base;
        private final Set<Integer> added = new java.util.TreeSet<>();

        Overlaid(Set<Integer> base) {
            this.base = base;
        }

        @Override
        public boolean contains(Object o) {
            return base.contains(o) || added.contains(o);
        }

        @Override
        public boolean add(Integer port) {
            return !base.contains(port) && added.add(port);
        }

        @Override
        public int size() {
            return base.size() + added.size();
        }

        @Override
        public java.util.Iterator<Integer> iterator() {
            return java.util.stream.Stream.concat(base.stream(), added.stream()).iterator();
        }
    }

    /** True when there is nothing to create or delete and no range ran out. */
    public boolean isEmpty() {
        return toCreate.isEmpty() && exhausted.isEmpty() && toDelete.isEmpty();
    }
}
