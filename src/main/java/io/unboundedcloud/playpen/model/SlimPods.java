package io.unboundedcloud.playpen.model;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.ContainerState;
import io.fabric8.kubernetes.api.model.ContainerStateRunning;
import io.fabric8.kubernetes.api.model.ContainerStateTerminated;
import io.fabric8.kubernetes.api.model.ContainerStateWaiting;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.PodStatus;

/**
 * A pod as the operator's watch cache keeps it: every field the operator reads, nothing else. A pod as the API
 * server sends it carries much the operator never looks at (managedFields, volumes, environment, probes, resources,
 * tolerations, most of its status), and the client's model spends memory even on what is absent (an empty list or
 * map for every collection field of every object). The slim copy keeps
 * <ul>
 * <li>metadata: name, namespace, uid, resourceVersion, generateName, creationTimestamp, deletionTimestamp,
 * deletionGracePeriodSeconds, generation, labels, annotations, ownerReferences, finalizers (not managedFields);</li>
 * <li>spec: nodeName, and each container's name, image and ports;</li>
 * <li>status: phase, reason (Evicted), conditions, and each container status's name, ready, started,
 * restartCount, image and state;</li>
 * </ul>
 * in insertion order, with empty collections shared and strings that recur from pod to pod (label and annotation
 * keys, kinds, architectures, node names, images, port names, phases, reasons) shared too. Its labels and annotations
 * cannot be changed (nobody changes a cached pod: every write is a patch built from fields). Every answer, view and
 * decision the operator derives from a pod is the same for the slim copy as for the pod itself
 * ({@code SlimPodsTest}).
 */
public final class SlimPods {
    /** Label values unique to one claim: sharing them would only fill {@link #COMMON}. */
    private static final Set<String> UNIQUE_LABELS = Set.of(PlaypenKeys.ALLOCATED, PlaypenKeys.KEY_HASH_LABEL);
    /** Strings that recur across pods, shared; bounded so that an unusual cluster cannot make it grow forever. */
    private static final Map<String, String> COMMON = new ConcurrentHashMap<>();
    private static final int COMMON_MAX = 16_384;

    private SlimPods() {
    }

    /**
     * A slim pod's additionalProperties: empty, as every pod's is that the API server sends, but this very instance,
     * so that {@link #slim} knows a pod it made already (the watch's reader makes them too, {@link SlimPodJson}).
     */
    private static final Map<String, Object> SLIM = java.util.Collections.unmodifiableMap(new java.util.HashMap<>());

    /**
     * The slim copy of {@code pod} (null for null); {@code pod} itself is left as it is. A pod that is slim already
     * is its own slim copy.
     */
    public static Pod slim(Pod pod) {
        if (pod == null || pod.getAdditionalProperties() == SLIM) {
            return pod;
        }
        Pod out = shareEmpties(new Pod());
        out.setAdditionalProperties(SLIM);
        out.setApiVersion(common(pod.getApiVersion()));
        out.setKind(common(pod.getKind()));
        out.setMetadata(metadata(pod.getMetadata()));
        out.setSpec(spec(pod.getSpec()));
        out.setStatus(status(pod.getStatus()));
        return out;
    }

    private static ObjectMeta metadata(ObjectMeta m) {
        if (m == null) {
            return null;
        }
        ObjectMeta out = shareEmpties(new ObjectMeta());
        out.setName(m.getName());
        out.setNamespace(common(m.getNamespace()));
        out.setUid(m.getUid());
        out.setResourceVersion(m.getResourceVersion());
        out.setGenerateName(common(m.getGenerateName()));
        out.setCreationTimestamp(m.getCreationTimestamp());
        out.setDeletionTimestamp(m.getDeletionTimestamp());
        out.setDeletionGracePeriodSeconds(m.getDeletionGracePeriodSeconds());
        out.setGeneration(m.getGeneration());
        out.setLabels(labels(m.getLabels()));
        out.setAnnotations(annotations(m.getAnnotations()));
        out.setOwnerReferences(list(m.getOwnerReferences()));
        out.setFinalizers(list(m.getFinalizers()));
        out.setManagedFields(List.of());
        return out;
    }

    private static PodSpec spec(PodSpec s) {
        if (s == null) {
            return null;
        }
        PodSpec out = shareEmpties(new PodSpec());
        out.setNodeName(common(s.getNodeName()));
        out.setContainers(each(s.getContainers(), SlimPods::container));
        return out;
    }

    /**
     * The slim copy of each element of {@code list} (null for a null list; a null element stays null, which
     * {@code List.copyOf} would refuse), in a list that cannot be changed.
     */
    private static <T, R> List<R> each(List<T> list, java.util.function.Function<T, R> slim) {
        if (list == null) {
            return null;
        }
        List<R> out = new ArrayList<>(list.size());
        for (T t : list) {
            out.add(t == null ? null : slim.apply(t));
        }
        return java.util.Collections.unmodifiableList(out);
    }

    /** Of a container that is there ({@link #each} keeps a null element null). */
    private static Container container(Container c) {
        Container out = shareEmpties(new Container());
        out.setName(common(c.getName()));
        out.setImage(common(c.getImage()));
        out.setPorts(each(c.getPorts(), p -> shareEmpties(new ContainerPort(p.getContainerPort(), common(p.getHostIP()),
                p.getHostPort(), common(p.getName()), common(p.getProtocol())))));
        return out;
    }

    private static PodStatus status(PodStatus s) {
        if (s == null) {
            return null;
        }
        PodStatus out = shareEmpties(new PodStatus());
        out.setPhase(common(s.getPhase()));
        out.setReason(common(s.getReason()));
        out.setConditions(each(s.getConditions(), c -> shareEmpties(new PodCondition(c.getLastProbeTime(),
                c.getLastTransitionTime(), c.getMessage(), c.getObservedGeneration(), common(c.getReason()),
                common(c.getStatus()), common(c.getType())))));
        out.setContainerStatuses(each(s.getContainerStatuses(), SlimPods::containerStatus));
        return out;
    }

    /** Of a container status that is there ({@link #each} keeps a null element null). */
    private static ContainerStatus containerStatus(ContainerStatus c) {
        ContainerStatus out = shareEmpties(new ContainerStatus());
        out.setName(common(c.getName()));
        out.setReady(c.getReady());
        out.setStarted(c.getStarted());
        out.setRestartCount(c.getRestartCount());
        out.setImage(common(c.getImage()));
        out.setState(state(c.getState()));
        return out;
    }

    private static ContainerState state(ContainerState s) {
        if (s == null) {
            return null;
        }
        ContainerStateRunning r = s.getRunning() == null ? null
                : shareEmpties(new ContainerStateRunning(s.getRunning().getStartedAt()));
        ContainerStateTerminated t = s.getTerminated();
        ContainerStateTerminated tOut = t == null ? null : shareEmpties(new ContainerStateTerminated(t.getContainerID(),
                t.getExitCode(), t.getFinishedAt(), t.getMessage(), common(t.getReason()), t.getSignal(), t.getStartedAt()));
        ContainerStateWaiting w = s.getWaiting();
        ContainerStateWaiting wOut = w == null ? null
                : shareEmpties(new ContainerStateWaiting(w.getMessage(), common(w.getReason())));
        return shareEmpties(new ContainerState(r, tOut, wOut));
    }

    private static Map<String, String> labels(Map<String, String> m) {
        if (m == null || m.isEmpty()) {
            return m == null ? null : Map.of();
        }
        String[] kv = new String[2 * m.size()];
        int i = 0;
        for (Map.Entry<String, String> e : m.entrySet()) {
            kv[i++] = common(e.getKey());
            kv[i++] = UNIQUE_LABELS.contains(e.getKey()) ? e.getValue() : common(e.getValue());
        }
        return new FixedMap(kv);
    }

    private static Map<String, String> annotations(Map<String, String> m) {
        if (m == null || m.isEmpty()) {
            return m == null ? null : Map.of();
        }
        String[] kv = new String[2 * m.size()];
        int i = 0;
        for (Map.Entry<String, String> e : m.entrySet()) {
            kv[i++] = common(e.getKey());
            kv[i++] = e.getValue();
        }
        return new FixedMap(kv);
    }

    private static <T> List<T> list(List<T> l) {
        return l == null ? null : l.isEmpty() ? List.of() : java.util.Collections.unmodifiableList(new ArrayList<>(l));
    }

    /** The shared instance of a string that recurs across pods. */
    static String common(String s) {
        if (s == null) {
            return null;
        }
        String shared = COMMON.get(s);
        if (shared != null) {
            return shared;
        }
        if (COMMON.size() >= COMMON_MAX) {
            return s;
        }
        shared = COMMON.putIfAbsent(s, s);
        return shared == null ? s : shared;
    }

    /**
     * The model's collection fields of one class (lists and maps, additionalProperties included), which a new model
     * object fills with fresh empty collections.
     */
    private static final ClassValue<List<VarHandle>> COLLECTIONS = new ClassValue<>() {
        @Override
        protected List<VarHandle> computeValue(Class<?> type) {
            List<VarHandle> out = new ArrayList<>();
            try {
                MethodHandles.Lookup lookup = MethodHandles.privateLookupIn(type, MethodHandles.lookup());
                for (Field f : type.getDeclaredFields()) {
                    if (!Modifier.isStatic(f.getModifiers()) && !Modifier.isFinal(f.getModifiers())
                            && (f.getType() == List.class || f.getType() == Map.class)) {
                        out.add(lookup.unreflectVarHandle(f));
                    }
                }
            } catch (IllegalAccessException e) {
                return List.of(); // not open to us: the object keeps its own empty collections
            }
            return List.copyOf(out);
        }
    };

    /** Replaces {@code o}'s empty lists and maps by the shared immutable empty ones. */
    private static <T> T shareEmpties(T o) {
        for (VarHandle h : COLLECTIONS.get(o.getClass())) {
            Object v = h.get(o);
            if (v instanceof List<?> l && l.isEmpty() && !(v == List.of())) {
                h.set(o, List.of());
            } else if (v instanceof Map<?, ?> m && m.isEmpty() && !(v == Map.of())) {
                h.set(o, Map.of());
            }
        }
        return o;
    }

    /**
     * An unmodifiable map of a few entries in their original order, in one array (keys at even, values at odd
     * indices): a pod's labels or annotations in a third of a LinkedHashMap's memory. Lookups scan the array, which
     * for the ten-odd entries of a pod costs no more than hashing.
     */
    static final class FixedMap extends AbstractMap<String, String> {
        private final String[] kv;

        FixedMap(String[] kv) {
            this.kv = kv;
        }

        @Override
        public int size() {
            return kv.length / 2;
        }

        @Override
        public String get(Object key) {
            int i = indexOf(key);
            return i < 0 ? null : kv[i + 1];
        }

        @Override
        public boolean containsKey(Object key) {
            return indexOf(key) >= 0;
        }

        private int indexOf(Object key) {
            for (int i = 0; i < kv.length; i += 2) {
                if (kv[i] == key) {
                    return i;
                }
            }
            if (key != null) {
                for (int i = 0; i < kv.length; i += 2) {
                    if (key.equals(kv[i])) {
                        return i;
                    }
                }
            }
            return -1;
        }

        @Override
        public Set<Map.Entry<String, String>> entrySet() {
            return new AbstractSet<>() {
                @Override
                public int size() {
                    return kv.length / 2;
                }

                @Override
                public Iterator<Map.Entry<String, String>> iterator() {
                    return new Iterator<>() {
                        private int i;

                        @Override
                        public boolean hasNext() {
                            return i < kv.length;
                        }

                        @Override
                        public Map.Entry<String, String> next() {
                            if (i >= kv.length) {
                                throw new NoSuchElementException();
                            }
                            Map.Entry<String, String> e = new AbstractMap.SimpleImmutableEntry<>(kv[i], kv[i + 1]);
                            i += 2;
                            return e;
                        }
                    };
                }
            };
        }
    }
}
