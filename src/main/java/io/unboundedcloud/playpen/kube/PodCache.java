package io.unboundedcloud.playpen.kube;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import io.fabric8.kubernetes.api.model.ListOptions;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.fabric8.kubernetes.client.dsl.internal.AbstractWatchManager;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.fabric8.kubernetes.client.informers.cache.BasicItemStore;
import io.fabric8.kubernetes.client.informers.cache.Cache;
import io.fabric8.kubernetes.client.informers.cache.Indexer;
import io.fabric8.kubernetes.client.informers.cache.ItemStore;
import io.fabric8.kubernetes.client.informers.impl.DefaultSharedIndexInformer;
import io.fabric8.kubernetes.client.informers.impl.ListerWatcher;
import io.fabric8.kubernetes.client.informers.impl.cache.CacheImpl;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.SlimPodList;
import io.unboundedcloud.playpen.model.SlimPods;

/**
 * Watch-fed view of the pods in the runner namespace, indexed by idempotency-key hash, so the request path
 * never LISTs. It holds each pod as {@link SlimPods} makes it (what the operator reads, nothing else), whether it
 * came from the watch or from this process's own reads and writes. Pods this process has just written are kept in an overlay until the watch catches up, so a
 * claim is visible to the next request at once. Reads hold the watch store's lock: fabric8 updates a pod's entry
 * and its index entries one after the other, and a lookup between the two steps would miss a claim.
 * <p>
 * The store also keeps the {@link ClaimLedger}: as the watch applies each change in the order the API server
 * committed it, every new claim is judged against the state at that very moment, so that which claim of a key
 * stands is decided by the API server's order of writes, identically on every replica, whatever each one's lag.
 * Changes that arrive outside that order (the initial LIST, a relist after the watch expired) are applied too,
 * but the claims they reveal stay undecided here until settled.
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
    /** Pods per page of the watch's LIST (client-go's reflector pages by 500 too). */
    static final long LIST_PAGE = 500;

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
     * watch store itself ({@link RingStore}, under the store's lock), so it never lags the store. Every pod of a
     * kind is on its ring, claimed or not (a walk must meet a pod claimed for its own key, to replay it), and the
     * kind depends on the pod's labels only: every replica that knows a pod puts it at the same place, however and
     * whenever it first saw it.
     */
    private final Map<String, ConcurrentSkipListMap<RingKey, Boolean>> rings = new ConcurrentHashMap<>();
    private final Map<String, String> ringKindOf = new ConcurrentHashMap<>();
    private final ClaimLedger ledger = new ClaimLedger();
    /** Requests waiting for the watch to reach a version of a pod (see {@link #awaitClaim}), by pod name. */
    private final Map<String, List<Waiter>> waiters = new HashMap<>();
    /** The resourceVersion of the watch event being applied on this thread (absent: a LIST is being applied). */
    private static final ThreadLocal<Long> EVENT_RV = new ThreadLocal<>();
    /** The last watch event applied in commit order; a (re)started watch begins at its LIST's version. */
    private long appliedRv;
    /** An event arrived out of commit order: nothing is judged exactly until the next LIST. */
    private boolean outOfOrder;
    /** The resourceVersion of the LIST being applied, or last applied (0: none, or not a number). */
    private volatile long listedRv;

    private record Waiter(long atLeastRv, CompletableFuture<Optional<ClaimLedger.Claim>> result) {
    }

    private final KubernetesClient client;
    private final String namespace;
    private final java.util.function.Function<Pod, String> kindOf;
    private final Map<String, Fresher> overlay = new ConcurrentHashMap<>();
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();
    private volatile SharedIndexInformer<Pod> informer;
    private volatile RingStore store;
    /** Pods the listeners have been told of (added less deleted), counted after they were told. */
    private final java.util.concurrent.atomic.AtomicLong toldPods = new java.util.concurrent.atomic.AtomicLong();
    /**
     * Counts the changes of {@link #pods()}: watch events and this process's own writes. Counted under the store's
     * lock, in the same step as the change (the watch store's {@link RingStore}, the overlay's writes), never
     * after it: a reader that reads this count, then the pods, has pods at least as new as the count (see
     * {@link #changes()}). The listeners hear of a watch event later, on their own thread.
     */
    private final java.util.concurrent.atomic.AtomicLong changes = new java.util.concurrent.atomic.AtomicLong();
    /**
     * The legacy (unkeyed) owner hash of keyed owner hashes this process serves a request for: only the request
     * knows the user, and the two hashes cannot be linked from the pods (see {@link LegacyOwnerClaims}). Kept while
     * a request of the owner holds it, and afterwards while this cache holds a live claim under the legacy hash
     * (see {@link #releaseLegacyOwnerHash} and {@link #pruneLegacyOwnerHashes}): so it does not grow with every user
     * served.
     */
    private final Map<String, LegacyLink> legacyOwnerHashes = new ConcurrentHashMap<>();

    /**
     * A link of an owner's two hashes and how many requests hold it now. Replaced, never changed, on every hold and
     * release; compared by identity, so a link dropped is the very one found unheld (see releaseLegacyOwnerHash and
     * pruneLegacyOwnerHashes).
     */
    private static final class LegacyLink {
        final String legacy;
        final int holds;

        LegacyLink(String legacy, int holds) {
            this.legacy = legacy;
            this.holds = holds;
        }
    }
    /** Set once the listeners have been told of every pod of the initial list ({@link #listenersCaughtUp}). */
    private volatile boolean listenersSynced;
    /** The watch store's own lock once started (its writes hold it), so a read sees no half-applied event. */
    private volatile Object storeLock = new Object();

    /**
     * {@code kindOf} maps a pod to the kind of request it can serve, claimed or not, from its labels alone (null:
     * none); see {@link #ring} and {@link #idleOfKind}.
     */
    public PodCache(KubernetesClient client, String namespace, java.util.function.Function<Pod, String> kindOf) {
        this.client = client;
        this.namespace = namespace;
        this.kindOf = kindOf;
    }

    private String idleKind(Pod pod) {
        return ManagedPods.isClaimed(pod) ? null : kindOf.apply(pod);
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
        // the initial LIST (and any relist) in pages of slim pods: the operator's client reads a SlimPodList's
        // items straight into slim pods (a client without that reader decodes them whole, and each page is made
        // slim before the next arrives), so a large namespace's pods are never all held in the client's full model
        @SuppressWarnings("unchecked")
        ListerWatcher<Pod, SlimPodList> pods = (ListerWatcher<Pod, SlimPodList>) client
                .resources(Pod.class, SlimPodList.class).inNamespace(namespace).withLimit(LIST_PAGE);
        SharedIndexInformer<Pod> inf = Informers.keepRetrying(new DefaultSharedIndexInformer<>(Pod.class,
                new OrderTracking(pods), 0, java.util.concurrent.Executors.newSingleThreadExecutor(
                        DaemonThreads.named("pod-cache-events"))), "pods");
        RingStore ring = new RingStore();
        store = ring;
        inf.itemStore(ring);
        inf.addIndexers(Map.of(KEY_INDEX, pod -> {
            String h = ManagedPods.keyHash(pod);
            return h.isEmpty() ? List.of() : List.of(h);
        }, OWNER_INDEX, pod -> {
            String h = ManagedPods.ownerHash(pod);
            return h.isEmpty() ? List.of() : List.of(h);
        }, IDLE_KIND_INDEX, pod -> {
            String k = idleKind(pod);
            return k == null ? List.of() : List.of(k);
        }));
        inf.addEventHandler(new ResourceEventHandler<>() {
            @Override
            public void onAdd(Pod pod) {
                caughtUp(pod, false);
                fire(Change.ADDED, pod);
                toldPods.incrementAndGet();
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
                toldPods.decrementAndGet();
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

    /**
     * Records that claims with {@code legacy} as their owner hash are the owner's whose keyed hash is {@code keyed},
     * for a request of that owner: the link is held until {@link #releaseLegacyOwnerHash} is called for it.
     */
    public void recordLegacyOwnerHash(String keyed, String legacy) {
        if (!keyed.equals(legacy)) {
            legacyOwnerHashes.merge(keyed, new LegacyLink(legacy, 1),
                    (had, one) -> new LegacyLink(legacy, had.holds + 1));
        }
    }

    /**
     * The request that recorded the link of {@code keyed} is done. Its link, once no request holds it, is dropped
     * when this cache holds no live claim under its legacy hash: the owner's next request records it again before it
     * counts the owner's claims, and until then nothing here needs it. Only this owner's link is looked at (one
     * lookup in the owner index): the links of other owners that have come to that (their legacy claims moved,
     * released or expired since their last request) are dropped by {@link #pruneLegacyOwnerHashes}, which runs
     * periodically, not once per request.
     */
    public void releaseLegacyOwnerHash(String keyed) {
        LegacyLink link = legacyOwnerHashes.computeIfPresent(keyed,
                (k, had) -> new LegacyLink(had.legacy, Math.max(0, had.holds - 1)));
        if (link != null) {
            dropIfUnneeded(keyed, link);
        }
    }

    /**
     * Drops every link that no request holds and whose legacy hash has no live claim in this cache (one lookup in
     * the owner index per link kept): so the links kept are those of owners with a request in flight or a legacy
     * claim in the cache, though such an owner does not ask again. Run periodically on every replica (the
     * lost-claims-listed route); returns how many links went.
     */
    public int pruneLegacyOwnerHashes() {
        int dropped = 0;
        for (Map.Entry<String, LegacyLink> e : legacyOwnerHashes.entrySet()) {
            if (dropIfUnneeded(e.getKey(), e.getValue())) {
                dropped++;
            }
        }
        return dropped;
    }

    /**
     * Drops {@code link} when no request holds it and this cache holds no live claim under its legacy hash; only that
     * very link: a request that recorded it meanwhile replaced it, and keeps it. Returns whether it went.
     */
    private boolean dropIfUnneeded(String keyed, LegacyLink link) {
        return link.holds == 0 && !holdsLiveClaimOf(link.legacy) && legacyOwnerHashes.remove(keyed, link);
    }

    private boolean holdsLiveClaimOf(String ownerHash) {
        return byOwnerHash(ownerHash).stream().anyMatch(p -> ManagedPods.isClaimed(p) && !ManagedPods.isTerminating(p));
    }

    /**
     * The legacy owner hash of the owner whose keyed hash is {@code keyed}, while a request of that owner holds the
     * link or this cache holds a live claim of the owner under the legacy hash (empty: unknown here, or none).
     */
    public Optional<String> legacyOwnerHashOf(String keyed) {
        LegacyLink link = keyed == null ? null : legacyOwnerHashes.get(keyed);
        return link == null ? Optional.empty() : Optional.of(link.legacy);
    }

    /** Synced and the watch is connected now: false while the API server is unreachable (readiness). */
    public boolean isWatching() {
        SharedIndexInformer<Pod> inf = informer;
        return inf != null && inf.hasSynced() && inf.isWatching();
    }

    /** The initial list is in the store (what the request path reads: the store, its indexes and the ledger). */
    public boolean hasSynced() {
        SharedIndexInformer<Pod> inf = informer;
        return inf != null && inf.hasSynced() && inf.isRunning();
    }

    /**
     * The store has synced and the listeners have been told of every pod in it. The store has the initial list
     * first: the listeners hear of its pods afterwards, one event at a time on their own thread, and with 100,000
     * pods that takes seconds, in which a pool pass would count only the pods its tally has heard of so far,
     * create pods for the rest and delete them again as surplus. Once the listeners have caught up with the store,
     * this stays true (from then on they trail the watch by an event or two, as the pools' expectations allow for).
     */
    public boolean listenersCaughtUp() {
        if (!hasSynced()) {
            return false;
        }
        if (!listenersSynced) {
            RingStore ring = store;
            // the listeners hear of the pods in the order the store took them: during the initial list they trail
            // it, so the count they were told of is below the store's until the last pod has reached them
            listenersSynced = ring != null && toldPods.get() >= ring.size();
        }
        return listenersSynced;
    }

    /**
     * A number that changes whenever a watch event or one of this process's writes changes {@link #pods()} (an
     * overlay entry that outlives its wait only falls back to the watch's copy without it). It moves in the same
     * step as the pods do, so what is computed from {@link #pods()} read after this number shows every change up
     * to it (perhaps later ones too): a result kept under the number read first is at worst computed again, never
     * older than the pods a read could see.
     */
    public long changes() {
        return changes.get();
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
            } else if (!f.deleted() && kindKey.equals(idleKind(f.pod()))) {
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
        return new Iterator<>() {
            /** The pods before {@code start}, once those after it are walked (most walks end before that). */
            private Iterator<RingKey> before;

            @Override
            public boolean hasNext() {
                return after.hasNext() || before().hasNext();
            }

            @Override
            public String next() {
                return (after.hasNext() ? after.next() : before().next()).name();
            }

            private Iterator<RingKey> before() {
                if (before == null) {
                    before = r.headMap(from, false).keySet().iterator();
                }
                return before;
            }
        };
    }

    /** How many pods are on the ring of a kind (idle and claimed). */
    public int ringSize(String kindKey) {
        ConcurrentSkipListMap<RingKey, Boolean> r = rings.get(kindKey);
        return r == null ? 0 : r.size();
    }

    /**
     * The watch store's item store: keeps the rings, the claim ledger and the count of {@link #changes()} in step
     * with every put and remove, under the store's lock, in the order the store applies them.
     */
    private final class RingStore implements ItemStore<Pod> {
        private final BasicItemStore<Pod> items = new BasicItemStore<>(Cache::metaNamespaceKeyFunc);

        @Override
        public String getKey(Pod pod) {
            return items.getKey(pod);
        }

        @Override
        public Pod put(String key, Pod pod) {
            boolean exact = inCommitOrder();
            Pod old = items.put(key, pod);
            changes.incrementAndGet();
            ringPut(pod);
            ledger.put(pod, exact);
            wake(pod.getMetadata().getName(), ClaimLedger.resourceVersion(pod), false);
            return old;
        }

        @Override
        public Pod remove(String key) {
            inCommitOrder();
            Pod old = items.remove(key);
            if (old != null) {
                changes.incrementAndGet();
                String name = old.getMetadata().getName();
                ringRemove(name);
                ledger.remove(name);
                // gone as of the delete's version (or the LIST's that no longer has it): a wait for a later version
                // of the name waits on, for that is the pod the pool made again under the same name
                wake(name, goneAt(), true);
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

    /** The version at which the pod being removed now is known gone (unknown: any version). */
    private long goneAt() {
        Long rv = EVENT_RV.get();
        long at = rv != null ? rv : listedRv;
        return at > 0 ? at : Long.MAX_VALUE;
    }

    /**
     * Whether the change being applied now is a watch event that follows the last one in commit order (so the
     * store, and the ledger's judgement of a claim it carries, is exactly the committed state at its version).
     */
    private boolean inCommitOrder() {
        Long rv = EVENT_RV.get();
        if (rv == null) {
            return false; // a LIST: the store is not at one moment of the history until it is complete
        }
        if (outOfOrder || rv <= appliedRv) {
            if (!outOfOrder) {
                outOfOrder = true;
                org.slf4j.LoggerFactory.getLogger(PodCache.class).warn("pod watch delivered resourceVersion {} after {}: "
                        + "new claims are not judged from this watch until it relists", rv, appliedRv);
            }
            return false;
        }
        appliedRv = rv;
        return true;
    }

    /**
     * The informer's list-and-watch, observed: each watch event's resourceVersion is known while the store applies
     * it, and a watch that (re)starts after a LIST begins in commit order at the LIST's version.
     */
    private final class OrderTracking implements ListerWatcher<Pod, SlimPodList> {
        private final ListerWatcher<Pod, SlimPodList> delegate;

        OrderTracking(ListerWatcher<Pod, SlimPodList> delegate) {
            this.delegate = delegate;
        }

        @Override
        public java.util.concurrent.CompletableFuture<AbstractWatchManager<Pod>> submitWatch(ListOptions options,
                Watcher<Pod> watcher) {
            long from = parseRv(options.getResourceVersion());
            synchronized (storeLock) {
                appliedRv = from;
                outOfOrder = from <= 0;
            }
            return delegate.submitWatch(options, new Watcher<>() {
                @Override
                public void eventReceived(Action action, Pod resource) {
                    EVENT_RV.set(resource == null ? 0L : ClaimLedger.resourceVersion(resource));
                    try {
                        watcher.eventReceived(action, SlimPods.slim(resource));
                    } finally {
                        EVENT_RV.remove();
                    }
                }

                @Override
                public boolean reconnecting() {
                    return watcher.reconnecting();
                }

                @Override
                public void onClose() {
                    watcher.onClose();
                }

                @Override
                public void onClose(WatcherException cause) {
                    watcher.onClose(cause);
                }
            });
        }

        @Override
        public java.util.concurrent.CompletableFuture<SlimPodList> submitList(ListOptions options) {
            return delegate.submitList(options).thenApply(list -> {
                if (list != null && list.getMetadata() != null) {
                    // every page of one LIST is the same snapshot, so each carries its version
                    listedRv = parseRv(list.getMetadata().getResourceVersion());
                }
                if (list != null && list.getItems() != null) {
                    list.getItems().replaceAll(SlimPods::slim);
                }
                return list;
            });
        }

        @Override
        public Long getLimit() {
            return delegate.getLimit();
        }

        @Override
        public int getWatchReconnectInterval() {
            return delegate.getWatchReconnectInterval();
        }

        @Override
        public String getApiEndpointPath() {
            return delegate.getApiEndpointPath();
        }

        @Override
        public Config getConfig() {
            return delegate.getConfig();
        }
    }

    private static long parseRv(String rv) {
        try {
            return rv == null ? 0 : Long.parseLong(rv);
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    private void ringPut(Pod pod) {
        String name = pod.getMetadata().getName();
        String kind = kindOf.apply(pod);
        String current = ringKindOf.get(name);
        if (kind == null) {
            if (current != null) {
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

    /**
     * Under the store lock: resolves the waiters of a pod whose stored version has reached theirs, or (removed) that
     * is gone as of version {@code rv}, which answers the waits up to that version only.
     */
    private void wake(String name, long rv, boolean removed) {
        List<Waiter> ws = waiters.get(name);
        if (ws == null) {
            return;
        }
        Optional<ClaimLedger.Claim> claim = removed ? Optional.empty() : ledger.on(name);
        ws.removeIf(w -> {
            if (rv >= w.atLeastRv()) {
                w.result().complete(claim);
                return true;
            }
            return w.result().isDone();
        });
        if (ws.isEmpty()) {
            waiters.remove(name);
        }
    }

    /**
     * The claim the pod carries once this cache has applied its version {@code atLeastRv} or a later one (empty:
     * it carries none then, or is gone). Completes at once when the watch is already there.
     */
    public CompletableFuture<Optional<ClaimLedger.Claim>> awaitClaim(String podName, long atLeastRv) {
        CompletableFuture<Optional<ClaimLedger.Claim>> f = new CompletableFuture<>();
        SharedIndexInformer<Pod> inf = informer;
        synchronized (storeLock) {
            Pod stored = watched(podName);
            if (stored == null && inf != null && inf.hasSynced() && atLeastRv <= appliedRv) {
                f.complete(Optional.empty()); // gone by the time the watch got here
            } else if (stored != null && ClaimLedger.resourceVersion(stored) >= atLeastRv) {
                f.complete(ledger.on(podName));
            } else {
                waiters.computeIfAbsent(podName, n -> new ArrayList<>()).add(new Waiter(atLeastRv, f));
            }
        }
        return f;
    }

    /** Whether a request waits now for this cache's watch to reach a version of the pod (tests). */
    boolean awaited(String podName) {
        synchronized (storeLock) {
            List<Waiter> ws = waiters.get(podName);
            return ws != null && ws.stream().anyMatch(w -> !w.result().isDone());
        }
    }

    /**
     * Completes once the watch has applied a version of the pod newer than the one it holds now, or its delete
     * (at once when it holds none).
     */
    public CompletableFuture<Optional<ClaimLedger.Claim>> awaitChange(String podName) {
        long next;
        synchronized (storeLock) {
            Pod stored = watched(podName);
            if (stored == null) {
                return CompletableFuture.completedFuture(Optional.empty());
            }
            next = ClaimLedger.resourceVersion(stored) + 1;
        }
        return awaitClaim(podName, next);
    }

    /** The claims of a key as the watch has delivered them, earliest commit first. */
    public List<ClaimLedger.Claim> claimsOf(String keyHash) {
        synchronized (storeLock) {
            return ledger.ofKey(keyHash);
        }
    }

    /** The claim a pod carries as the watch has delivered it. */
    public Optional<ClaimLedger.Claim> claimOn(String podName) {
        synchronized (storeLock) {
            return ledger.on(podName);
        }
    }

    /** An owner's claims as the watch has delivered them. */
    public List<ClaimLedger.Claim> claimsOfOwner(String ownerHash) {
        synchronized (storeLock) {
            return ledger.ofOwner(ownerHash);
        }
    }

    /** A claim that lost and is still on its pod, with the version of the pod it was judged on. */
    public record LostClaim(ClaimLedger.Claim claim, Pod pod) {
    }

    /**
     * Claims that lost and are still on their pods, each with its pod as the watch has it, read with the verdict
     * under one lock (a version read after it may carry another claim of the same key, taken back and made again
     * meanwhile). A pod this process has since deleted, or seen without this very claim (the key taken off, or
     * claimed on the pod again: another claim-id), is left out.
     */
    public List<LostClaim> lostClaims() {
        synchronized (storeLock) {
            List<LostClaim> out = new ArrayList<>();
            for (ClaimLedger.Claim c : ledger.lost()) {
                Pod judged = watched(c.pod());
                boolean stillCarried = getLocked(c.pod()).filter(p -> c.keyHash().equals(ManagedPods.keyHash(p))
                        && c.uid().equals(ClaimLedger.uid(p)) && c.claimId().equals(ClaimLedger.claimId(p)))
                        .isPresent();
                if (judged != null && stillCarried) {
                    out.add(new LostClaim(c, judged));
                }
            }
            return out;
        }
    }

    /**
     * Claims seen in a LIST that no write has settled since (undecided here), of keys that also have a claim that
     * stands: see {@link ClaimLedger#undecidedBesideStanding}.
     */
    public List<ClaimLedger.Claim> undecidedClaimsBesideStanding() {
        synchronized (storeLock) {
            return ledger.undecidedBesideStanding();
        }
    }

    /**
     * Claims seen in a LIST that no write has settled since (undecided here), of owners that also have a standing
     * claim of another key: see {@link ClaimLedger#undecidedBesideOwnersStanding}.
     */
    public List<ClaimLedger.Claim> undecidedClaimsBesideOwnersStanding() {
        synchronized (storeLock) {
            return ledger.undecidedBesideOwnersStanding();
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
    public void observe(Pod full) {
        Pod pod = SlimPods.slim(full);
        String name = pod.getMetadata().getName();
        synchronized (storeLock) {
            Pod watched = watched(name);
            if (watched != null && !isNewer(pod, watched)) {
                return;
            }
            overlay.put(name, new Fresher(pod, false, System.nanoTime()));
            changes.incrementAndGet();
        }
    }

    /** Records that this process deleted (or found gone) a pod. */
    public void observeDeleted(String name) {
        synchronized (storeLock) {
            Pod watched = watched(name);
            if (watched == null) {
                if (overlay.remove(name) != null) {
                    changes.incrementAndGet();
                }
                return;
            }
            overlay.put(name, new Fresher(watched, true, System.nanoTime()));
            changes.incrementAndGet();
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
