package io.unboundedcloud.playpen.kube;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.fabric8.kubernetes.client.informers.cache.BasicItemStore;
import io.fabric8.kubernetes.client.informers.cache.Cache;
import io.fabric8.kubernetes.client.informers.cache.Indexer;
import io.fabric8.kubernetes.client.informers.cache.ItemStore;
import io.fabric8.kubernetes.client.informers.impl.cache.CacheImpl;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;

/**
 * Watch-fed view of the pods in the runner namespace, indexed by idempotency-key hash, so the request path
 * never LISTs. Pods this process has just written are kept in an overlay until the watch catches up, so a
 * claim is visible to the next request at once. Reads hold the watch store's lock: fabric8 updates a pod's entry
 * and its index entries one after the other, and a lookup between the two steps would miss a claim.
 */
public final class PodCache implements AutoCloseable {
    /** What happened to a pod, as seen by the watch. */
    public enum Change { ADDED, UPDATED, DELETED }

    /** A listener of watch events (pool refill, TTL scheduling, metrics). */
    public interface Listener {
        void onPodEvent(Change change, Pod pod);
    }

    private static final String KEY_INDEX = "keyHash";
    private static final String IDLE_KIND_INDEX = "idleKind";
    private static final String OWNER_INDEX = "ownerHash";
    private static final long OVERLAY_MAX_AGE_NANOS = TimeUnit.SECONDS.toNanos(60);

    private record Fresher(Pod pod, boolean deleted, long atNanos) {
    }

    /** A pod's place on a kind's consistent-hash ring: position unsigned, then name. */
    private record RingKey(long position, String name) implements Comparable<RingKey> {
        @Override
        public int compareTo(RingKey o) {
            int c = Long.compareUnsigned(position, o.position);
            return c != 0 ? c : name.compareTo(o.name);
        }
    }

    /**
     * Per kind ("runner/amd64"), the pods on its ring, sorted by {@link Hashes#ringPosition}. Maintained by the
     * watch store itself ({@link RingStore}, under the store's lock), so it never lags the store. A pod joins
     * its kind's ring when the watch first sees it idle and keeps its place once claimed (a walk must meet a
     * pod claimed for its own key since the walk began, to replay it); it leaves when deleted or when it is
     * idle but no longer of a kind.
     */
    private final Map<String, ConcurrentSkipListMap<RingKey, Boolean>> rings = new ConcurrentHashMap<>();
    private final Map<String, String> ringKindOf = new ConcurrentHashMap<>();

    private final KubernetesClient client;
    private final String namespace;
    private final java.util.function.Function<Pod, String> idleKind;
    private final Map<String, Fresher> overlay = new ConcurrentHashMap<>();
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();
    private volatile SharedIndexInformer<Pod> informer;
    /** The watch store's own lock once started (its writes hold it), so a read sees no half-applied event. */
    private volatile Object storeLock = new Object();

    /** {@code idleKind} maps an idle pod to the kind of request it can serve (null: none); see {@link #idleOfKind}. */
    public PodCache(KubernetesClient client, String namespace, java.util.function.Function<Pod, String> idleKind) {
        this.client = client;
        this.namespace = namespace;
        this.idleKind = idleKind;
    }

    /**
     * Adds a listener; only before {@link #start()}: the watch delivers the initial list's pods asynchronously,
     * and a listener added later would silently miss them.
     */
    public synchronized void addListener(Listener listener) {
        if (informer != null) {
            throw new IllegalStateException("PodCache listeners must be added before start(): the initial list's "
                    + "events would be missed");
        }
        listeners.add(listener);
    }

    public synchronized void start() {
        if (informer != null) {
            return;
        }
        SharedIndexInformer<Pod> inf = Informers.keepRetrying(client.pods().inNamespace(namespace).runnableInformer(0), "pods");
        inf.itemStore(new RingStore());
        inf.addIndexers(Map.of(KEY_INDEX, pod -> {
            String h = ManagedPods.keyHash(pod);
            return h.isEmpty() ? List.of() : List.of(h);
        }, OWNER_INDEX, pod -> {
            String h = ManagedPods.ownerHash(pod);
            return h.isEmpty() ? List.of() : List.of(h);
        }, IDLE_KIND_INDEX, pod -> {
            String k = idleKind.apply(pod);
            return k == null ? List.of() : List.of(k);
        }));
        inf.addEventHandler(new ResourceEventHandler<>() {
            @Override
            public void onAdd(Pod pod) {
                caughtUp(pod, false);
                fire(Change.ADDED, pod);
            }

            @Override
            public void onUpdate(Pod oldPod, Pod newPod) {
                caughtUp(newPod, false);
                fire(Change.UPDATED, newPod);
            }

            @Override
            public void onDelete(Pod pod, boolean finalStateUnknown) {
                caughtUp(pod, true);
                fire(Change.DELETED, pod);
            }
        });
        Indexer<Pod> indexer = inf.getIndexer();
        storeLock = indexer instanceof CacheImpl<Pod> cache ? cache.getLockObject() : indexer;
        informer = inf;
        inf.start();
    }

    public String namespace() {
        return namespace;
    }

    /** Synced and the watch is connected now: false while the API server is unreachable (readiness). */
    public boolean isWatching() {
        SharedIndexInformer<Pod> inf = informer;
        return inf != null && inf.hasSynced() && inf.isWatching();
    }

    public boolean hasSynced() {
        SharedIndexInformer<Pod> inf = informer;
        return inf != null && inf.hasSynced() && inf.isRunning();
    }

    /** Every pod as this process knows it now (watch state, overridden by its own fresher writes). */
    public Collection<Pod> pods() {
        SharedIndexInformer<Pod> inf = informer;
        if (inf == null) {
            return List.of();
        }
        synchronized (storeLock) {
            return podsLocked(inf);
        }
    }

    private Collection<Pod> podsLocked(SharedIndexInformer<Pod> inf) {
        List<Pod> watched = inf.getStore().list();
        if (overlay.isEmpty()) {
            return watched;
        }
        Map<String, Pod> byName = new HashMap<>(watched.size() * 2);
        for (Pod p : watched) {
            byName.put(p.getMetadata().getName(), p);
        }
        for (String name : overlay.keySet()) {
            Fresher f = live(name);
            if (f == null) {
                continue;
            }
            if (f.deleted()) {
                byName.remove(name);
            } else {
                byName.put(name, f.pod());
            }
        }
        return byName.values();
    }

    public Optional<Pod> get(String name) {
        synchronized (storeLock) {
            return getLocked(name);
        }
    }

    private Optional<Pod> getLocked(String name) {
        Fresher f = live(name);
        if (f != null) {
            return f.deleted() ? Optional.empty() : Optional.of(f.pod());
        }
        return Optional.ofNullable(watched(name));
    }

    /** The pod as the watch last reported it, or null. */
    private Pod watched(String name) {
        SharedIndexInformer<Pod> inf = informer;
        return inf == null ? null : inf.getStore().getByKey(namespace + "/" + name);
    }

    /**
     * The idle pods of one kind (the hot path walks only these), in their freshest known version: pods this
     * process has just claimed or deleted are left out even before the watch reports it.
     */
    public List<Pod> idleOfKind(String kindKey) {
        synchronized (storeLock) {
            return idleOfKindLocked(kindKey);
        }
    }

    private List<Pod> idleOfKindLocked(String kindKey) {
        SharedIndexInformer<Pod> inf = informer;
        if (inf == null) {
            return List.of();
        }
        List<Pod> watched = inf.getIndexer().byIndex(IDLE_KIND_INDEX, kindKey);
        if (overlay.isEmpty()) {
            return watched;
        }
        List<Pod> out = new ArrayList<>(watched.size());
        for (Pod p : watched) {
            Fresher f = live(p.getMetadata().getName());
            if (f == null) {
                out.add(p);
            } else if (!f.deleted() && kindKey.equals(idleKind.apply(f.pod()))) {
                out.add(f.pod());
            }
        }
        return out;
    }

    /**
     * The names on the ring of {@code kindKey} clockwise from {@code start} (a key's {@link Hashes#seed}), once
     * round: O(log N) to begin, then one step per pod, whatever the pool size. Weakly consistent (pods joining or
     * leaving meanwhile may or may not be met); callers judge each name by its freshest version ({@link #get}).
     */
    public Iterator<String> ring(String kindKey, long start) {
        ConcurrentSkipListMap<RingKey, Boolean> r = rings.get(kindKey);
        if (r == null) {
            return Collections.emptyIterator();
        }
        RingKey from = new RingKey(start, "");
        Iterator<RingKey> after = r.tailMap(from, true).keySet().iterator();
        Iterator<RingKey> before = r.headMap(from, false).keySet().iterator();
        return new Iterator<>() {
            @Override
            public boolean hasNext() {
                return after.hasNext() || before.hasNext();
            }

            @Override
            public String next() {
                return (after.hasNext() ? after.next() : before.next()).name();
            }
        };
    }

    /** How many pods are on the ring of a kind (idle ones and claimed ones that were idle here). */
    public int ringSize(String kindKey) {
        ConcurrentSkipListMap<RingKey, Boolean> r = rings.get(kindKey);
        return r == null ? 0 : r.size();
    }

    /** The watch store's item store: keeps the rings in step with every put and remove, under the store's lock. */
    private final class RingStore implements ItemStore<Pod> {
        private final BasicItemStore<Pod> items = new BasicItemStore<>(Cache::metaNamespaceKeyFunc);

        @Override
        public String getKey(Pod pod) {
            return items.getKey(pod);
        }

        @Override
        public Pod put(String key, Pod pod) {
            Pod old = items.put(key, pod);
            ringPut(pod);
            return old;
        }

        @Override
        public Pod remove(String key) {
            Pod old = items.remove(key);
            if (old != null) {
                ringRemove(old.getMetadata().getName());
            }
            return old;
        }

        @Override
        public java.util.stream.Stream<String> keySet() {
            return items.keySet();
        }

        @Override
        public java.util.stream.Stream<Pod> values() {
            return items.values();
        }

        @Override
        public int size() {
            return items.size();
        }

        @Override
        public Pod get(String key) {
            return items.get(key);
        }
    }

    private void ringPut(Pod pod) {
        String name = pod.getMetadata().getName();
        String kind = idleKind.apply(pod);
        String current = ringKindOf.get(name);
        if (kind == null) {
            if (current != null && !ManagedPods.isClaimed(pod)) {
                ringRemove(name);
            }
            return;
        }
        if (kind.equals(current)) {
            return;
        }
        if (current != null) {
            ringRemove(name);
        }
        rings.computeIfAbsent(kind, k -> new ConcurrentSkipListMap<>()).put(new RingKey(Hashes.ringPosition(name), name),
                Boolean.TRUE);
        ringKindOf.put(name, kind);
    }

    private void ringRemove(String name) {
        String kind = ringKindOf.remove(name);
        if (kind != null) {
            ConcurrentSkipListMap<RingKey, Boolean> r = rings.get(kind);
            if (r != null) {
                r.remove(new RingKey(Hashes.ringPosition(name), name));
            }
        }
    }

    /** Managed pods that carry this idempotency-key hash. */
    public List<Pod> byKeyHash(String keyHash) {
        synchronized (storeLock) {
            return byKeyHashLocked(keyHash);
        }
    }

    private List<Pod> byKeyHashLocked(String keyHash) {
        return byIndexLocked(KEY_INDEX, ManagedPods::keyHash, keyHash);
    }

    /**
     * Managed pods recorded with this owner hash (the owner annotation of their claim), from an index: the quota
     * check of {@code --max-allocs-per-user} costs the owner's own claims, not a scan of every pod.
     */
    public List<Pod> byOwnerHash(String ownerHash) {
        synchronized (storeLock) {
            return byIndexLocked(OWNER_INDEX, ManagedPods::ownerHash, ownerHash);
        }
    }

    /** The freshest version of each pod whose {@code valueOf} is {@code value}: the watch's index, then the overlay. */
    private List<Pod> byIndexLocked(String index, java.util.function.Function<Pod, String> valueOf, String value) {
        List<Pod> out = new ArrayList<>();
        SharedIndexInformer<Pod> inf = informer;
        if (inf != null) {
            for (Pod p : inf.getIndexer().byIndex(index, value)) {
                getLocked(p.getMetadata().getName()).filter(cur -> value.equals(valueOf.apply(cur))).ifPresent(out::add);
            }
        }
        for (String name : overlay.keySet()) {
            Fresher f = live(name);
            if (f != null && !f.deleted() && value.equals(valueOf.apply(f.pod()))
                    && out.stream().noneMatch(p -> p.getMetadata().getName().equals(name))) {
                out.add(f.pod());
            }
        }
        out.removeIf(p -> !ManagedPods.isManaged(p));
        return out;
    }

    /**
     * The overlay entry for a pod if it is still fresher than the watch; entries the watch has caught up with
     * (or that are too old to trust) are dropped here too, so a missed event can never pin an old version.
     * Only under the store lock: dropping an entry because the store holds the new version is safe only when
     * that version's index entries are complete too.
     */
    private Fresher live(String name) {
        Fresher f = overlay.get(name);
        if (f == null) {
            return null;
        }
        Pod watched = watched(name);
        boolean tooOld = System.nanoTime() - f.atNanos() > OVERLAY_MAX_AGE_NANOS;
        boolean caughtUp = watched != null && (f.deleted() ? isNewer(watched, f.pod()) : !isNewer(f.pod(), watched));
        if (tooOld || caughtUp) {
            overlay.remove(name, f);
            return null;
        }
        return f;
    }

    /** Records a pod version this process read or wrote that may be newer than the watch's. */
    public void observe(Pod pod) {
        String name = pod.getMetadata().getName();
        synchronized (storeLock) {
            Pod watched = watched(name);
            if (watched != null && !isNewer(pod, watched)) {
                return;
            }
            overlay.put(name, new Fresher(pod, false, System.nanoTime()));
        }
    }

    /** Records that this process deleted (or found gone) a pod. */
    public void observeDeleted(String name) {
        synchronized (storeLock) {
            Pod watched = watched(name);
            if (watched == null) {
                overlay.remove(name);
                return;
            }
            overlay.put(name, new Fresher(watched, true, System.nanoTime()));
        }
    }

    /** A watch event: overlay entries it has caught up with (or that are too old) go. */
    private void caughtUp(Pod event, boolean deleted) {
        String name = event.getMetadata().getName();
        synchronized (storeLock) {
            if (deleted) {
                // pod names are reused by the pool: a newer pod's claim recorded here outlives the old one's delete
                Fresher f = overlay.get(name);
                if (f != null && !isNewer(f.pod(), event)) {
                    overlay.remove(name, f);
                }
            } else {
                live(name);
            }
        }
        if (overlay.size() > 64) {
            long now = System.nanoTime();
            overlay.entrySet().removeIf(e -> now - e.getValue().atNanos() > OVERLAY_MAX_AGE_NANOS);
        }
    }


    /** True when a is a strictly newer resourceVersion than b (etcd revisions are numeric in practice). */
    static boolean isNewer(Pod a, Pod b) {
        try {
            return Long.parseLong(a.getMetadata().getResourceVersion()) > Long.parseLong(b.getMetadata().getResourceVersion());
        } catch (RuntimeException e) {
            return !a.getMetadata().getResourceVersion().equals(b.getMetadata().getResourceVersion());
        }
    }

    private void fire(Change change, Pod pod) {
        for (Listener l : listeners) {
            try {
                l.onPodEvent(change, pod);
            } catch (RuntimeException e) {
                org.slf4j.LoggerFactory.getLogger(PodCache.class).warn("pod event listener failed: {}", e.toString());
            }
        }
    }

    @Override
    public synchronized void close() {
        if (informer != null) {
            informer.close();
            informer = null;
        }
    }
}
