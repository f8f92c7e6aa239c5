package io.unboundedcloud.playpen.kube;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.model.Candidates;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.model.PoolHealth;
import io.unboundedcloud.playpen.model.PoolPlanner;
import io.unboundedcloud.playpen.model.PoolTarget;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.model.TemplateHashes;

/**
 * The pools' say in which idle pod an alloc may get: never one on a NotReady node, and never a stale pod (another
 * template) while a current pod of the same kind is usable. Stale pods are still handed out when no current pod is
 * usable (a rollout that has not produced a ready pod yet must not turn allocations away). Looking for a current
 * pod walks only the idle pods of the kind, and only when the pod at hand is stale.
 */
public final class PoolHandOut implements Candidates.HandOutPolicy {
    private final PoolPlanner planner;
    private final Function<String, Optional<Node>> nodes;
    private final Function<String, Collection<Pod>> idleOfKind;
    private final Map<String, PoolTarget> targets = new HashMap<>();

    public PoolHandOut(PoolPlanner planner, NodeCache nodes, PodCache pods) {
        this(planner, nodes::node, pods::idleOfKind);
    }

    /** {@code nodes} finds a node by name; {@code idleOfKind} gives the idle pods of a kind key (freshest versions). */
    public PoolHandOut(PoolPlanner planner, Function<String, Optional<Node>> nodes,
            Function<String, Collection<Pod>> idleOfKind) {
        this.planner = planner;
        this.nodes = nodes;
        this.idleOfKind = idleOfKind;
        for (PoolTarget t : planner.desired().keySet()) {
            targets.put(kindKey(t), t);
        }
    }

    /** The idle-kind key of a pool's pods (Candidates.idleKindKey). */
    static String kindKey(PoolTarget t) {
        return t.type() == ResourceType.RUNNER ? "runner/" + t.variant()
                : "controlPlane/" + PodTemplates.kubernetesVersionLabel(t.variant());
    }

    @Override
    public String refuse(String kindKey, Pod pod, Function<String, Optional<String>> externalIp) {
        String node = pod.getSpec() == null ? null : pod.getSpec().getNodeName();
        if (!nodeReady(node)) {
            return what(pod) + ManagedPods.name(pod) + " is on node " + node + ", which is NotReady";
        }
        PoolTarget target = targets.get(kindKey);
        if (target == null) {
            return null;
        }
        PoolPlanner.Template tpl = planner.template(target);
        if (TemplateHashes.isCurrent(pod, tpl.hash(), tpl.sample())) {
            return null;
        }
        String name = ManagedPods.name(pod);
        for (Pod other : idleOfKind.apply(kindKey)) {
            if (!name.equals(ManagedPods.name(other)) && !ManagedPods.isClaimed(other)
                    && TemplateHashes.isCurrent(other, tpl.hash(), tpl.sample())
                    && Candidates.usableByItself(target.type(), other, externalIp)
                    && nodeReady(other.getSpec().getNodeName())) {
                return what(pod) + name + " runs an older template and current pods are available";
            }
        }
        return null;
    }

    /** How a reason names the pod: "runner pod " or "control-plane pod ". */
    private static String what(Pod pod) {
        return ManagedPods.isKind(pod, ResourceType.CONTROL_PLANE) ? "control-plane pod " : "runner pod ";
    }

    private boolean nodeReady(String node) {
        return node == null || nodes.apply(node).map(PoolHealth::nodeReady).orElse(true);
    }
}
