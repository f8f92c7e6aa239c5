package io.unboundedcloud.playpen.model;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.config.OperatorConfig;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * Plans one pool pass (SPEC A8): per runner architecture and per control-plane version, create desired − idle
 * pods on the lowest free hostPorts. Pods created earlier but not yet seen ("expectations") count as idle
 * and keep their ports, so a quick second pass does not create twice.
 */
public final class PoolPlanner {
    private final OperatorConfig config;
    private final PodTemplates templates;
    private final Map<PoolTarget, Integer> desired;

    public PoolPlanner(OperatorConfig config, PodTemplates templates) {
        this.config = Objects.requireNonNull(config, "config");
        this.templates = Objects.requireNonNull(templates, "templates");
        Map<PoolTarget, Integer> d = new LinkedHashMap<>();
        d.put(PoolTarget.runner(ManagedPods.AMD64), config.runnerAmd64Count());
        d.put(PoolTarget.runner(ManagedPods.ARM64), config.runnerArm64Count());
        for (String version : config.controlPlaneVersions()) {
            d.put(PoolTarget.controlPlane(version), config.controlPlaneCount());
        }
        this.desired = Collections.unmodifiableMap(d);
    }

    /** Every configured pool with its desired idle count, runners first, then versions in flag order. */
    public Map<PoolTarget, Integer> desired() {
        return desired;
    }

    /**
     * @param pods     the pods of the runner namespace as the cache sees them (unmanaged pods are ignored)
     * @param expected names of pods this process created that {@code pods} does not show yet
     */
    public PoolPlan plan(Collection<Pod> pods, Set<String> expected) {
        PoolTally tally = newTally();
        for (Pod pod : pods) {
            tally.put(pod);
        }
        return plan(tally, expected);
    }

    /** An empty tally of pods for this planner's pools (the pool reconciler keeps one up to date from the watch). */
    public PoolTally newTally() {
        return new PoolTally(this::targetOf);
    }

    /**
     * The pass for the pods {@code tally} counts now: the same plan as {@link #plan(Collection, Set)} over those
     * pods, in time independent of how many there are.
     */
    public PoolPlan plan(PoolTally tally, Set<String> expected) {
        Map<ResourceType, Set<Integer>> used = new EnumMap<>(ResourceType.class);
        Map<PoolTarget, Integer> idle;
        synchronized (tally) {
            for (ResourceType type : ResourceType.values()) {
                used.put(type, new PoolPlan.Overlaid(tally.usedPorts(type)));
            }
            idle = new HashMap<>(tally.idle());
            for (String name : expected) {
                if (!tally.contains(name)) {
                    countExpected(name, used, idle);
                }
            }
        }

        List<PoolPlan.PlannedPod> toCreate = new ArrayList<>();
        List<PoolPlan.Exhaustion> exhausted = new ArrayList<>();
        Map<PoolTarget, Integer> deficits = new LinkedHashMap<>();
        for (Map.Entry<PoolTarget, Integer> e : desired.entrySet()) {
            PoolTarget target = e.getKey();
            int deficit = Math.max(0, e.getValue() - idle.getOrDefault(target, 0));
            deficits.put(target, deficit);
            if (deficit == 0) {
                continue;
            }
            // One shared used-set per kind, so no two pods of one pass get the same port.
            Set<Integer> kindUsed = used.get(target.type());
            HostPortPlanner ports = HostPortPlanner.forKind(config, target.type());
            HostPortPlanner.Allocation allocation = ports.allocate(kindUsed, deficit);
            for (int port : allocation.ports()) {
                kindUsed.add(port);
                toCreate.add(new PoolPlan.PlannedPod(target, port, templates.forTarget(target, port)));
            }
            if (allocation.exhausted()) {
                exhausted.add(new PoolPlan.Exhaustion(target, allocation.range(), allocation.shortfall()));
            }
        }

        Map<ResourceType, Set<Integer>> usedOut = new EnumMap<>(ResourceType.class);
        used.forEach((type, set) -> usedOut.put(type, Collections.unmodifiableSet(set)));
        return new PoolPlan(List.copyOf(toCreate), List.copyOf(exhausted),
                Collections.unmodifiableMap(deficits), Collections.unmodifiableMap(usedOut));
    }

    /** The configured pool a visible pod belongs to, if any. */
    private Optional<PoolTarget> targetOf(Pod pod) {
        Optional<ResourceType> type = ManagedPods.resourceType(pod);
        if (type.isEmpty()) {
            return Optional.empty();
        }
        if (type.get() == ResourceType.RUNNER) {
            PoolTarget t = PoolTarget.runner(ManagedPods.architecture(pod));
            return desired.containsKey(t) ? Optional.of(t) : Optional.empty();
        }
        // The label holds the sanitised version ('+' → '-'), so compare against the sanitised configured one.
        String label = ManagedPods.kubernetesVersion(pod);
        for (PoolTarget t : desired.keySet()) {
            if (t.type() == ResourceType.CONTROL_PLANE && PodTemplates.kubernetesVersionLabel(t.variant()).equals(label)) {
                return Optional.of(t);
            }
        }
        return Optional.empty();
    }

    /**
     * An expected pod is known only by its name, which encodes kind, variant and port. Its port is used even
     * when the name matches no configured pool any more (e.g. a version just removed from the flags).
     */
    private void countExpected(String name, Map<ResourceType, Set<Integer>> used, Map<PoolTarget, Integer> idle) {
        ResourceType type;
        if (name.startsWith(PodTemplates.RUNNER_NAME_PREFIX)) {
            type = ResourceType.RUNNER;
        } else if (name.startsWith(PodTemplates.CONTROL_PLANE_NAME_PREFIX)) {
            type = ResourceType.CONTROL_PLANE;
        } else {
            return;
        }
        int dash = name.lastIndexOf('-');
        int port;
        try {
            port = Integer.parseInt(name.substring(dash + 1));
        } catch (NumberFormatException e) {
            return;
        }
        used.get(type).add(port);
        for (PoolTarget t : desired.keySet()) {
            if (t.type() != type) {
                continue;
            }
            String expectedName = type == ResourceType.RUNNER
                    ? PodTemplates.runnerName(t.variant(), port)
                    : PodTemplates.controlPlaneName(t.variant(), port);
            if (expectedName.equals(name)) {
                idle.merge(t, 1, Integer::sum);
                return;
            }
        }
    }
}
