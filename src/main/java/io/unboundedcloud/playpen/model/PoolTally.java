package io.unboundedcloud.playpen.model;

import java.util.AbstractSet;
import java.util.BitSet;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;

import io.fabric8.kubernetes.api.model.Pod;

/**
 * What a pool pass needs to know about the pods, kept up to date pod by pod: how many idle pods each pool has and
 * which host ports each kind of pod holds (SPEC A8: managed pods of the kind, terminating and claimed ones included,
 * the named container port's hostPort and the host-port label). A pass reads these in time independent of the
 * number of pods, where counting from the cache costs a walk over every pod (at 100,000 pods, 150 ms of CPU for
 * each pass, and a claim asks for a pass). {@link PoolPlanner#plan(java.util.Collection, Set)} counts a collection
 * with the same code, so both ways agree (PoolTallyTest).
 * <p>
 * Thread-safe: changes and reads are serialized on this object.
 */
public final class PoolTally {
    /** The largest port a port set holds in its bit set; others (not valid ports, but a spec may say so) apart. */
    private static final int MAX_PORT = 65_535;

    /** What one pod contributes: the pool it is idle in (null: none), its kind and its ports (-1: none). */
    private record Counted(boolean idle, PoolTarget idleIn, ResourceType type, int specPort, int labelPort) {
    }

    private final Function<Pod, java.util.Optional<PoolTarget>> targetOf;
    private final Map<String, Counted> pods = new HashMap<>();
    private final Map<PoolTarget, Integer> idle = new HashMap<>();
    private final Map<ResourceType, Ports> used = new EnumMap<>(ResourceType.class);

    /** {@code targetOf}: the configured pool a pod belongs to, if any. */
    PoolTally(Function<Pod, java.util.Optional<PoolTarget>> targetOf) {
        this.targetOf = targetOf;
        for (ResourceType t : ResourceType.values()) {
            used.put(t, new Ports());
        }
    }

    /** A pod's new state (added or changed, by name); returns whether it was idle before (null: not counted). */
    public synchronized Boolean put(Pod pod) {
        String name = ManagedPods.name(pod);
        Counted before = pods.remove(name);
        if (before != null) {
            subtract(before);
        }
        Counted now = count(pod);
        pods.put(name, now);
        add(now);
        return before == null ? null : before.idle();
    }

    /** A pod is gone; returns whether it was idle (null: it was not counted). */
    public synchronized Boolean remove(String name) {
        Counted before = pods.remove(name);
        if (before == null) {
            return null;
        }
        subtract(before);
        return before.idle();
    }

    /** Whether a pod of this name is counted. */
    public synchronized boolean contains(String name) {
        return pods.containsKey(name);
    }

    /** How many pods are counted. */
    public synchronized int size() {
        return pods.size();
    }

    /** Idle pods per pool, now. */
    public synchronized Map<PoolTarget, Integer> idle() {
        return Map.copyOf(idle);
    }

    /** The host ports pods of {@code type} hold now: a copy that does not change afterwards. */
    public synchronized Set<Integer> usedPorts(ResourceType type) {
        return used.get(type).snapshot();
    }

    private Counted count(Pod pod) {
        boolean isIdle = ManagedPods.isIdle(pod);
        PoolTarget in = isIdle ? targetOf.apply(pod).orElse(null) : null;
        ResourceType type = ManagedPods.resourceType(pod).orElse(null);
        int spec = type == null ? -1 : ManagedPods.containerHostPort(pod).orElse(-1);
        int label = type == null ? -1 : ManagedPods.labelHostPort(pod).orElse(-1);
        return new Counted(isIdle, in, type, spec, label);
    }

    private void add(Counted c) {
        if (c.idleIn() != null) {
            idle.merge(c.idleIn(), 1, Integer::sum);
        }
        if (c.type() != null) {
            used.get(c.type()).add(c.specPort());
            used.get(c.type()).add(c.labelPort());
        }
    }

    private void subtract(Counted c) {
        if (c.idleIn() != null) {
            idle.computeIfPresent(c.idleIn(), (t, n) -> n <= 1 ? null : n - 1);
        }
        if (c.type() != null) {
            used.get(c.type()).remove(c.specPort());
            used.get(c.type()).remove(c.labelPort());
        }
    }

    /** A multiset of ports: how many pods hold each (a port may be held twice: spec and label, or two pods). */
    private static final class Ports {
        private final int[] holders = new int[MAX_PORT + 1];
        private final BitSet held = new BitSet(MAX_PORT + 1);
        private final Map<Integer, Integer> outside = new TreeMap<>();

        void add(int port) {
            if (port < 0) {
                return;
            }
            if (port > MAX_PORT) {
                outside.merge(port, 1, Integer::sum);
            } else if (holders[port]++ == 0) {
                held.set(port);
            }
        }

        void remove(int port) {
            if (port < 0) {
                return;
            }
            if (port > MAX_PORT) {
                outside.computeIfPresent(port, (p, n) -> n <= 1 ? null : n - 1);
            } else if (holders[port] > 0 && --holders[port] == 0) {
                held.clear(port);
            }
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
            Iterator<Integer> beyond = new java.util.TreeSet<>(outside).iterator();
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
