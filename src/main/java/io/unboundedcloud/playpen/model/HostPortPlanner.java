package io.unboundedcloud.playpen.model;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.config.OperatorConfig.PortRange;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeSet;

/**
 * Picks hostPorts for one kind of pod: always the lowest free port of the range.
 * A full range is an ordinary result ({@link Allocation#shortfall()} &gt; 0), never an exception.
 */
public final class HostPortPlanner {
    private final PortRange range;

    public HostPortPlanner(PortRange range) {
        this.range = Objects.requireNonNull(range, "range");
    }

    /** The planner for runner WireGuard ports or control-plane API server ports. */
    public static HostPortPlanner forKind(OperatorConfig config, ResourceType type) {
        return new HostPortPlanner(type == ResourceType.RUNNER ? config.runnerPorts() : config.controlPlanePorts());
    }

    public PortRange range() {
        return range;
    }

    /** The lowest port of the range not in {@code used}; empty when the range is full. */
    public OptionalInt lowestFree(Set<Integer> used) {
        return next(used, range.start() - 1);
    }

    /**
     * The lowest free port above {@code after}: a create that answered AlreadyExists for port p moves on with
     * {@code next(used, p)}. Empty when no free port is left above {@code after}.
     */
    public OptionalInt next(Set<Integer> used, int after) {
        for (int port = Math.max(after + 1, range.start()); port <= range.end(); port++) {
            if (!used.contains(port)) {
                return OptionalInt.of(port);
            }
        }
        return OptionalInt.empty();
    }

    /** The {@code count} lowest free ports, ascending; when the range runs out, the rest is the shortfall. */
    public Allocation allocate(Set<Integer> used, int count) {
        List<Integer> ports = new ArrayList<>();
        int after = range.start() - 1;
        while (ports.size() < count) {
            OptionalInt port = next(used, after);
            if (port.isEmpty()) {
                break;
            }
            ports.add(port.getAsInt());
            after = port.getAsInt();
        }
        return new Allocation(List.copyOf(ports), Math.max(0, count - ports.size()), range);
    }

    /**
     * Ports taken by managed pods of {@code type}, terminating and claimed ones included: the named container
     * port's hostPort and the host-port label (both, should an edited label disagree with the spec).
     */
    public static Set<Integer> usedPorts(Collection<Pod> pods, ResourceType type) {
        Set<Integer> used = new TreeSet<>();
        for (Pod pod : pods) {
            if (!ManagedPods.isKind(pod, type)) {
                continue;
            }
            ManagedPods.containerHostPort(pod).ifPresent(used::add);
            ManagedPods.labelHostPort(pod).ifPresent(used::add);
        }
        return used;
    }

    /** The outcome of {@link #allocate}: the ports found and how many could not be found in {@code range}. */
    public record Allocation(List<Integer> ports, int shortfall, PortRange range) {
        public boolean exhausted() {
            return shortfall > 0;
        }
    }
}
