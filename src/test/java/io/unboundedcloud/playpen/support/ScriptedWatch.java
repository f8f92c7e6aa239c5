package io.unboundedcloud.playpen.support;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import io.fabric8.kubernetes.api.model.ListOptions;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodList;
import io.fabric8.kubernetes.api.model.PodListBuilder;
import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.fabric8.kubernetes.client.dsl.MixedOperation;
import io.fabric8.kubernetes.client.dsl.NonNamespaceOperation;
import io.fabric8.kubernetes.client.dsl.internal.AbstractWatchManager;
import io.fabric8.kubernetes.client.informers.impl.ListerWatcher;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.mockwebserver.http.MockResponse;
import io.unboundedcloud.playpen.model.SlimPodList;

/**
 * A pod watch that a test drives event by event, for a {@link io.unboundedcloud.playpen.kube.PodCache} started with
 * {@link #client()}: the cache's informer lists and watches through it, and each event is applied to the cache's
 * store on the thread that delivers it, so a test knows exactly what the cache holds at every step, with no watch
 * connection to wait for.
 * <p>
 * {@link #follow} ties it to a {@link TestCluster}: its LIST answers the cluster's pods, and every pod write the
 * mock API server commits is delivered as the server commits it, before the writer gets its answer (so a claim is
 * in the cache when its PATCH returns), unless the watch is {@link #hold() held}, which keeps the events in commit
 * order until the test {@link #release() releases} them. Events whose delivery is left to the informer's own
 * threads (a relist after {@link #gone()}) are waited for through futures, never by sleeping.
 */
public final class ScriptedWatch implements ListerWatcher<Pod, SlimPodList> {
    /** One watch event. */
    public record Event(Watcher.Action action, Pod pod) {
    }

    private final String namespace;
    private volatile Supplier<PodList> lister;
    private volatile Watcher<Pod> watcher;
    private volatile CompletableFuture<Long> watchStarted = new CompletableFuture<>();
    private volatile TestCluster cluster;
    private final List<Event> held = new ArrayList<>();
    private final java.util.Map<String, Pod> mirror = new java.util.LinkedHashMap<>();
    private final List<Trigger> triggers = new java.util.concurrent.CopyOnWriteArrayList<>();
    private boolean holding;
    private int lists;
    /** The page size the cache asked for (null: one answer); the LIST being paged through. */
    private volatile Long limit;
    private PodList paging;

    public ScriptedWatch(String namespace) {
        this.namespace = namespace;
        this.lister = () -> list(0, List.of());
    }

    /** The next LIST answers these pods at resourceVersion {@code rv}. */
    public ScriptedWatch listing(long rv, List<Pod> items) {
        lister = () -> list(rv, items);
        return this;
    }

    /**
     * LISTs answer the cluster's pods at its newest resourceVersion, and the cluster's pod writes are delivered. The
     * pods a LIST answers are kept from the relayed writes (read once from the cluster), so a relist can be started
     * while the mock API server is answering a write ({@link #whenRelayed}).
     */
    public ScriptedWatch follow(TestCluster cluster) {
        this.cluster = cluster;
        for (Pod p : cluster.pods()) {
            mirror.put(p.getMetadata().getName(), p);
        }
        lister = () -> {
            synchronized (mirror) {
                return list(cluster.currentResourceVersion(), new ArrayList<>(mirror.values()));
            }
        };
        cluster.addAnswerListener(this::relay);
        return this;
    }

    /**
     * Runs {@code then} on the mock API server's thread right after the first relayed event that matches
     * {@code which} has been delivered (or kept, while held), before the writer gets its answer.
     */
    public void whenRelayed(java.util.function.Predicate<Event> which, java.util.function.Consumer<Event> then) {
        triggers.add(new Trigger(which, then));
    }

    private record Trigger(java.util.function.Predicate<Event> which, java.util.function.Consumer<Event> then) {
    }

    private static PodList list(long rv, List<Pod> items) {
        return new PodListBuilder().withNewMetadata().withResourceVersion(String.valueOf(rv)).endMetadata()
                .withItems(items).build();
    }

    /** A client whose only use is the pod cache's list-and-watch in {@link #namespace}. */
    public KubernetesClient client() {
        ListerWatcher<Pod, SlimPodList> self = this;
        Object pods = Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] { NonNamespaceOperation.class, ListerWatcher.class }, (proxy, m, args) -> {
                    if (m.getDeclaringClass() == ListerWatcher.class) {
                        return m.invoke(self, args);
                    }
                    if (m.getName().equals("withLimit") && args.length == 1) {
                        limit = args[0] == null ? null : ((Number) args[0]).longValue();
                        return proxy;
                    }
                    return objectMethod(proxy, m.getName(), args);
                });
        Object mixed = Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] { MixedOperation.class },
                (proxy, m, args) -> {
                    if (m.getName().equals("inNamespace") && namespace.equals(args[0])) {
                        return pods;
                    }
                    return objectMethod(proxy, m.getName(), args);
                });
        InvocationHandler client = (proxy, m, args) -> {
            if (m.getName().equals("resources") && args != null && args.length == 2 && args[0] == Pod.class
                    && args[1] == SlimPodList.class) {
                return mixed;
            }
            return objectMethod(proxy, m.getName(), args);
        };
        return (KubernetesClient) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] { KubernetesClient.class }, client);
    }

    private static Object objectMethod(Object proxy, String name, Object[] args) {
        return switch (name) {
            case "hashCode" -> System.identityHashCode(proxy);
            case "equals" -> proxy == args[0];
            case "toString" -> "scripted pod watch";
            case "close" -> null;
            default -> throw new UnsupportedOperationException(name + " is not scripted");
        };
    }

    @Override
    public CompletableFuture<AbstractWatchManager<Pod>> submitWatch(ListOptions options, Watcher<Pod> w) {
        long from = Long.parseLong(options.getResourceVersion());
        List<Event> later = new ArrayList<>();
        synchronized (held) {
            watcher = w;
            // events committed between the LIST and this watch (a write while the informer relisted)
            for (Event e : new ArrayList<>(held)) {
                if (rv(e.pod()) <= from) {
                    held.remove(e);
                }
            }
            if (!holding) {
                later.addAll(held);
                held.clear();
            }
        }
        later.forEach(e -> w.eventReceived(e.action(), e.pod()));
        watchStarted.complete(from);
        // no watch connection: the informer reports it is not watching, which nothing here asks
        return CompletableFuture.completedFuture(null);
    }

    /**
     * A LIST, in pages when the cache asks for them (as kube-apiserver answers: one snapshot, a continue token per
     * page).
     */
    @Override
    public CompletableFuture<SlimPodList> submitList(ListOptions options) {
        PodList all;
        int from;
        synchronized (held) {
            String token = options.getContinue();
            if (token == null || token.isEmpty()) {
                lists++;
                paging = lister.get();
                from = 0;
            } else {
                from = Integer.parseInt(token);
            }
            all = paging;
        }
        List<Pod> items = all.getItems();
        Long size = options.getLimit();
        int to = size == null || size <= 0 ? items.size() : (int) Math.min(items.size(), from + size);
        SlimPodList page = new SlimPodList();
        page.setMetadata(new io.fabric8.kubernetes.api.model.ListMetaBuilder()
                .withResourceVersion(all.getMetadata().getResourceVersion())
                .withContinue(to < items.size() ? String.valueOf(to) : null).build());
        page.setItems(new ArrayList<>(items.subList(from, to)));
        return CompletableFuture.completedFuture(page);
    }

    /** How many LISTs the informer has made. */
    public int lists() {
        synchronized (held) {
            return lists;
        }
    }

    @Override
    public Long getLimit() {
        return limit;
    }

    @Override
    public int getWatchReconnectInterval() {
        return 1;
    }

    @Override
    public String getApiEndpointPath() {
        return "scripted/pods";
    }

    @Override
    public Config getConfig() {
        return Config.empty();
    }

    public void added(Pod pod) {
        deliver(new Event(Watcher.Action.ADDED, pod));
    }

    public void modified(Pod pod) {
        deliver(new Event(Watcher.Action.MODIFIED, pod));
    }

    /** The pod's delete, committed at {@code rv}. */
    public void deleted(Pod pod, long rv) {
        deliver(new Event(Watcher.Action.DELETED, withRv(pod, rv)));
    }

    /** Delivers the event now (on this thread), or keeps it while the watch is held. */
    public void deliver(Event e) {
        Watcher<Pod> w;
        synchronized (held) {
            w = watcher;
            if (holding || w == null) {
                held.add(e);
                return;
            }
        }
        w.eventReceived(e.action(), e.pod());
    }

    /** From now on events are kept, in commit order, until {@link #release()}. */
    public void hold() {
        synchronized (held) {
            holding = true;
        }
    }

    /** The events kept while held. */
    public List<Event> held() {
        synchronized (held) {
            return List.copyOf(held);
        }
    }

    /** Drops the events kept so far (the watch never delivers them; a later LIST shows their outcome). */
    public void forget() {
        synchronized (held) {
            held.clear();
        }
    }

    /** Delivers the kept events in order, on this thread, and stops holding. */
    public void release() {
        List<Event> out;
        Watcher<Pod> w;
        synchronized (held) {
            holding = false;
            w = watcher;
            if (w == null) {
                return; // not watching (a relist under way): the next watch delivers them
            }
            out = new ArrayList<>(held);
            held.clear();
        }
        out.forEach(e -> w.eventReceived(e.action(), e.pod()));
    }

    /**
     * The watch ends with 410 Gone (the API server no longer has the events it would resume from): the informer
     * lists again and watches from the LIST's version. Returns once it watches again (the relist applied).
     */
    public void gone() throws Exception {
        CompletableFuture<Long> next = new CompletableFuture<>();
        Watcher<Pod> w;
        synchronized (held) {
            watchStarted = next;
            w = watcher;
            watcher = null;
        }
        w.onClose(new WatcherException("too old resource version",
                new KubernetesClientException(new StatusBuilder().withCode(410).withReason("Expired").build())));
        next.get(20, TimeUnit.SECONDS);
    }

    /** What the informer's watcher answers when a watch connection asks whether to reconnect. */
    public boolean watcherReconnecting() {
        return watcher.reconnecting();
    }

    /** Waits until the informer has listed and watches (after {@code start()}). */
    public long awaitWatching() throws Exception {
        return watchStarted.get(20, TimeUnit.SECONDS);
    }

    private void relay(String method, String path, MockResponse answer) {
        String prefix = "/api/v1/namespaces/" + namespace + "/pods";
        int q = path.indexOf('?');
        String p = q < 0 ? path : path.substring(0, q);
        if (!p.startsWith(prefix) || answer.code() / 100 != 2 || answer.getBody() == null) {
            return;
        }
        Watcher.Action action;
        switch (method) {
            case "POST" -> action = Watcher.Action.ADDED;
            case "PATCH", "PUT" -> action = Watcher.Action.MODIFIED;
            case "DELETE" -> action = Watcher.Action.DELETED;
            default -> {
                return;
            }
        }
        Pod pod;
        try {
            pod = Serialization.unmarshal(new String(answer.getBody().getBytes(), java.nio.charset.StandardCharsets.UTF_8),
                    Pod.class);
        } catch (RuntimeException notAPod) {
            return;
        }
        if (pod == null || pod.getMetadata() == null || !"Pod".equals(pod.getKind())) {
            return;
        }
        if (action == Watcher.Action.DELETED && pod.getMetadata().getFinalizers() != null
                && !pod.getMetadata().getFinalizers().isEmpty()) {
            // a finalizer holds it: the delete only marked it terminating
            action = Watcher.Action.MODIFIED;
            String at = pod.getMetadata().getDeletionTimestamp();
            pod = new PodBuilder(withRv(pod, cluster.currentResourceVersion())).editMetadata()
                    .withDeletionTimestamp(at != null ? at : java.time.Instant.now().toString()).endMetadata().build();
        } else if (action == Watcher.Action.DELETED) {
            pod = withRv(pod, cluster.currentResourceVersion());
        }
        synchronized (mirror) {
            if (action == Watcher.Action.DELETED) {
                mirror.remove(pod.getMetadata().getName());
            } else {
                mirror.put(pod.getMetadata().getName(), pod);
            }
        }
        Event e = new Event(action, pod);
        deliver(e);
        for (Trigger t : triggers) {
            if (t.which().test(e)) {
                triggers.remove(t);
                t.then().accept(e);
            }
        }
    }

    private static Pod withRv(Pod pod, long rv) {
        return new PodBuilder(pod).editMetadata().withResourceVersion(String.valueOf(rv)).endMetadata().build();
    }

    private static long rv(Pod p) {
        try {
            return Long.parseLong(p.getMetadata().getResourceVersion());
        } catch (RuntimeException e) {
            return 0;
        }
    }
}
