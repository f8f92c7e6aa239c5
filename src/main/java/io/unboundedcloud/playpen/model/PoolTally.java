package io.unboundedcloud.playpen.model;

import java.time.Instant;
import java.util.AbstractSet;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Collection;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.function.Predicate;

import io.fabric8.kubernetes.api.model.Pod;

/**
 * What a pool pass needs to know about the pods, kept up to date pod by pod as the watch reports them, so that a
 * pass costs time in proportion to the pools' idle pods and not to every pod (each claim asks for a pass, and most
 * pods of a busy cluster are allocated). Kept:
 * <ul>
 * <li>the host ports each kind of pod holds: managed pods of the kind, terminating and claimed ones included, the
 *     named container port's hostPort and the host-port label (as {@link HostPortPlanner#usedPorts});</li>
 * <li>per pool: its idle pods, how many of its pods are allocated, when its live pods were created (for the oldest),
 *     and the allocated pods a pass must judge.</li>
 * </ul>
 * Idle pods are judged in full on every pass. An allocated pod can only be unhealthy ({@link PoolHealth#problem})
 * when it ended (Failed, Succeeded), when it is not ready, or when its node is gone or not Ready: the first two are
 * facts of the pod, kept here as it changes; for the third the pass names the nodes in doubt and gets the
 * allocated pods on them. Every other allocated pod is only counted.
 * <p>
 * Pods keep the order in which they were first counted; {@link PoolPlanner#plan(Collection, Set,
 * PoolPlanner.Context)} counts a collection in its order with this same code, so planning from a collection and
 * planning from a tally kept change by change agree (PoolTallyTest).
 * <p>
 * Thread-safe: changes and reads are serialized on this object.
 */
public final class PoolTally {
    /** The largest port a port set holds in its bit set; others (not valid ports, but a spec may say so) apart. */
    private static final int MAX_PORT = 65_535;

    /** How a pod of a pool counts in it. */
    private enum Role {
        /** terminating: only the pool's existence and place */
        TERMINATING,
        /** unclaimed without a hostPort on the named port: not a member, only its creation time */
        OUTSIDE,
        /** unclaimed with a hostPort: judged on every pass */
        IDLE,
        /** claimed, running and ready: counted, judged only when its node is in doubt */
        ALLOCATED,
        /** claimed, and ended or not ready: judged on every pass */
        ALLOCATED_IN_DOUBT
    }

    /**
     * What one pod contributes: its ports (-1: none), and, for a pod of a pool, the pool, its role, its creation
     * (EPOCH when unknown) and node (null: none).
     */
    private record Counted(long seq, Pod pod, ResourceType type, int specPort, int labelPort, PoolTarget pool,
            Role role, Instant created, String node) {
    }

    /** One pool's pods as counted. */
    private static final class Pool {
        /** A pool no flag asks for: the sequence numbers of its pods, the first of which gives its place. */
        final TreeSet<Long> seqs;
        final TreeMap<Long, Pod> idle = new TreeMap<>();
        final Map<Long, Pod> inDoubt = new HashMap<>();
        final Map<String, Map<Long, Pod>> allocatedOn = new HashMap<>();
        final TreeMap<Instant, Integer> created = new TreeMap<>();
        int allocated;

        Pool(boolean configured) {
            this.seqs = configured ? null : new TreeSet<>();
        }

        boolean empty() {
            return seqs != null && seqs.isEmpty();
        }
    }

    /**
     * One pool as a pass reads it.
     *
     * @param allocated        its claimed pods that are not being deleted
     * @param oldest           creation of its oldest pod that is not being deleted (null: none)
     * @param idle             its unclaimed pods with a hostPort that are not being deleted, in counting order
     * @param allocatedToJudge its claimed pods that ended, are not ready or are on a node in doubt, in counting order
     */
    public record PoolView(PoolTarget target, boolean configured, int allocated, Instant oldest, List<Pod> idle,
            List<Pod> allocatedToJudge) {
    }

    /**
     * The pods as counted at one moment.
     *
     * @param used   per kind, the host ports held (sets that do not change afterwards)
     * @param pools  every configured pool in flag order, then every other pool with pods in the order its first pod
     *               was counted
     * @param unseen the expected names no counted pod has
     */
    public record Snapshot(Map<ResourceType, Set<Integer>> used, List<PoolView> pools, Set<String> unseen) {
    }

    private final Function<Pod, Optional<PoolTarget>> targetOf;
    private final Map<String, Counted> pods = new HashMap<>();
    private final Map<ResourceType, Ports> used = new EnumMap<>(ResourceType.class);
    private final Map<PoolTarget, Pool> pools = new LinkedHashMap<>();
    private long nextSeq;

    /** {@code targetOf}: the pool a pod belongs to, if any; {@code configured}: the pools flags ask for, in order. */
    PoolTally(Function<Pod, Optional<PoolTarget>> targetOf, Collection<PoolTarget> configured) {
        this.targetOf = targetOf;
        for (ResourceType t : ResourceType.values()) {
            used.put(t, new Ports());
        }
        for (PoolTarget t : configured) {
            pools.put(t, new Pool(true));
        }
    }

    /** A pod's new state (added or changed, by name). */
    public synchronized void put(Pod pod) {
        String name = ManagedPods.name(pod);
        Counted before = pods.get(name);
        if (before != null) {
            subtract(before);
        }
        Counted now = count(pod, before == null ? nextSeq++ : before.seq());
        pods.put(name, now);
        add(now);
    }

    /** A pod is gone. */
    public synchronized void remove(String name) {
        Counted before = pods.remove(name);
        if (before != null) {
            subtract(before);
        }
    }

    /** How many pods are counted. */
    public synchronized int size() {
        return pods.size();
    }

    /**
     * What a pass reads, at one moment. {@code nodeInDoubt}: whether a node could make the pods on it unhealthy (it
     * is gone or not Ready); asked once per pool and node with allocated pods.
     */
    public synchronized Snapshot snapshot(Set<String> expected, Predicate<String> nodeInDoubt) {
        Map<ResourceType, Set<Integer>> ports = new EnumMap<>(ResourceType.class);
        used.forEach((type, p) -> ports.put(type, p.snapshot()));
        List<PoolView> views = new ArrayList<>();
        List<Map.Entry<PoolTarget, Pool>> others = new ArrayList<>();
        for (Map.Entry<PoolTarget, Pool> e : pools.entrySet()) {
            if (e.getValue().seqs == null) {
                views.add(view(e.getKey(), e.getValue(), nodeInDoubt));
            } else {
                others.add(e);
            }
        }
        others.sort(Comparator.comparing(e -> e.getValue().seqs.first()));
        others.forEach(e -> views.add(view(e.getKey(), e.getValue(), nodeInDoubt)));
        Set<String> unseen = new TreeSet<>();
        for (String name : expected) {
            if (!pods.containsKey(name)) {
                unseen.add(name);
            }
        }
        return new Snapshot(ports, List.copyOf(views), unseen);
    }

    private static PoolView view(PoolTarget target, Pool p, Predicate<String> nodeInDoubt) {
        TreeMap<Long, Pod> judge = new TreeMap<>(p.inDoubt);
        p.allocatedOn.forEach((node, on) -> {
            if (nodeInDoubt.test(node)) {
                judge.putAll(on);
            }
        });
        return new PoolView(target, p.seqs == null, p.allocated, p.created.isEmpty() ? null : p.created.firstKey(),
                List.copyOf(p.idle.values()), List.copyOf(judge.values()));
    }

    private Counted count(Pod pod, long seq) {
        ResourceType type = ManagedPods.resourceType(pod).orElse(null);
        int spec = type == null ? -1 : ManagedPods.containerHostPort(pod).orElse(-1);
        int label = type == null ? -1 : ManagedPods.labelHostPort(pod).orElse(-1);
        PoolTarget pool = targetOf.apply(pod).orElse(null);
        if (pool == null) {
            return new Counted(seq, pod, type, spec, label, null, null, null, null);
        }
        Role role;
        if (ManagedPods.isTerminating(pod)) {
            role = Role.TERMINATING;
        } else if (ManagedPods.isClaimed(pod)) {
            role = ended(pod) || !PoolHealth.ready(pod) ? Role.ALLOCATED_IN_DOUBT : Role.ALLOCATED;
        } else {
            role = spec < 0 ? Role.OUTSIDE : Role.IDLE;
        }
        Instant created = PoolHealth.instant(pod.getMetadata().getCreationTimestamp()).orElse(Instant.EPOCH);
        String node = pod.getSpec() == null || pod.getSpec().getNodeName() == null
                || pod.getSpec().getNodeName().isEmpty() ? null : pod.getSpec().getNodeName();
        return new Counted(seq, pod, type, spec, label, pool, role, created, node);
    }

    private static boolean ended(Pod pod) {
        String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
        return "Failed".equals(phase) || "Succeeded".equals(phase);
    }

    private void add(Counted c) {
        countPorts(c, 1);
        if (c.pool() == null) {
            return;
        }
        Pool p = pools.computeIfAbsent(c.pool(), t -> new Pool(false));
        if (p.seqs != null) {
            p.seqs.add(c.seq());
        }
        if (c.role() == Role.TERMINATING) {
            return;
        }
        if (!c.created().equals(Instant.EPOCH)) {
            p.created.merge(c.created(), 1, Integer::sum);
        }
        if (allocated(c)) {
            p.allocated++;
        }
        Map<Long, Pod> kept = keptIn(p, c);
        if (kept != null) {
            kept.put(c.seq(), c.pod());
        }
    }

    private void subtract(Counted c) {
        countPorts(c, -1);
        if (c.pool() == null) {
            return;
        }
        Pool p = pools.get(c.pool());
        if (p.seqs != null) {
            p.seqs.remove(c.seq());
        }
        if (c.role() != Role.TERMINATING) {
            if (!c.created().equals(Instant.EPOCH)) {
                p.created.computeIfPresent(c.created(), (t, n) -> n <= 1 ? null : n - 1);
            }
            if (allocated(c)) {
                p.allocated--;
            }
            Map<Long, Pod> kept = keptIn(p, c);
            if (kept != null) {
                kept.remove(c.seq());
                if (kept.isEmpty() && c.role() == Role.ALLOCATED) {
                    p.allocatedOn.remove(c.node());
                }
            }
        }
        if (p.empty()) {
            pools.remove(c.pool());
        }
    }

    private void countPorts(Counted c, int by) {
        if (c.type() != null) {
            used.get(c.type()).count(c.specPort(), by);
            used.get(c.type()).count(c.labelPort(), by);
        }
    }

    private static boolean allocated(Counted c) {
        return c.role() == Role.ALLOCATED || c.role() == Role.ALLOCATED_IN_DOUBT;
    }

    /** Where the pool keeps a pod of this role (null: only counted): idle, in doubt, or allocated on its node. */
    private static Map<Long, Pod> keptIn(Pool p, Counted c) {
        return switch (c.role()) {
            case IDLE -> p.idle;
            case ALLOCATED_IN_DOUBT -> p.inDoubt;
            case ALLOCATED -> c.node() == null ? null : p.allocatedOn.computeIfAbsent(c.node(), n -> new HashMap<>());
            default -> null;
        };
    }

    /** A multiset of ports: how many pods hold each (a port may be held twice: spec and label, or two pods). */
    private static final class Ports {
        private int[] holders;
        private final BitSet held = new BitSet();
        private final Map<Integer, Integer> outside = new TreeMap<>();

        /** One more ({@code by} 1) or one fewer ({@code by} -1) pod holds {@code port} (-1: none). */
        void count(int port, int by) {
            if (port < 0) {
                return;
            }
            if (port > MAX_PORT) {
                outside.merge(port, by, (n, d) -> n + d == 0 ? null : n + d);
                return;
            }
            if (holders == null) {
                holders = new int[MAX_PORT + 1];
            }
            holders[port] += by;
            held.set(port, holders[port] > 0);
        }

        Set<Integer> snapshot() {
            return new PortSet((BitSet) held.clone(), Set.copyOf(outside.keySet()));
        }
    }

    /** An unmodifiable set of ports in a bit set (plus any beyond 65535), ascending. */
    static final class PortSet extends AbstractSet<Integer> {
        private final BitSet bits;
        private final Set<Integer> outside;
        private final int size;

        PortSet(BitSet bits, Set<Integer> outside) {
            this.bits = bits;
            this.outside = outside;
            this.size = bits.cardinality() + outside.size();
        }

        @Override
        public boolean contains(Object o) {
            if (!(o instanceof Integer p) || p < 0) {
                return false;
            }
            return p <= MAX_PORT ? bits.get(p) : outside.contains(p);
        }

        @Override
        public int size() {
            return size;
        }

        @Override
        public Iterator<Integer> iterator() {
            Iterator<Integer> beyond = new TreeSet<>(outside).iterator();
            return new Iterator<>() {
                private int next = bits.nextSetBit(0);

                @Override
                public boolean hasNext() {
                    return next >= 0 || beyond.hasNext();
                }

                @Override
                public Integer next() {
                    if (next >= 0) {
                        int p = next;
                        next = p >= MAX_PORT ? -1 : bits.nextSetBit(p + 1);
                        return p;
                    }
                    if (!beyond.hasNext()) {
                        throw new NoSuchElementException();
                    }
                    return beyond.next();
                }
            };
        }
    }
}
