package io.unboundedcloud.playpen.model;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.config.OperatorConfig.PortRange;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What one pool pass should do: the pods to create (each with a distinct hostPort), the pools whose port
 * range ran out, and per pool how many idle pods are missing.
 *
 * @param toCreate   pods to create, runners (amd64, arm64) first, then control planes in flag order
 * @param exhausted  pools that could not be refilled completely because their hostPort range is full
 * @param deficits   every configured pool → desired minus idle (never negative), in the same order
 * @param usedPorts  per kind, the ports in use after this plan (existing, expected and planned); a create that
 *                   answers AlreadyExists can pick its replacement with {@link HostPortPlanner#next}
 *                   (the sets are immutable: copy one to record the replacement ports)
 */
public record PoolPlan(List<PlannedPod> toCreate, List<Exhaustion> exhausted,
                       Map<PoolTarget, Integer> deficits, Map<ResourceType, Set<Integer>> usedPorts) {

    /** One pod to create for {@code target} on {@code hostPort}. */
    public record PlannedPod(PoolTarget target, int hostPort, Pod pod) {
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

    /** True when there is nothing to create and no range ran out. */
    public boolean isEmpty() {
        return toCreate.isEmpty() && exhausted.isEmpty();
    }
}
