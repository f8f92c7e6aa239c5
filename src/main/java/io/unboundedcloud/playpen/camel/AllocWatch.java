package io.unboundedcloud.playpen.camel;

import java.time.Clock;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.model.AllocViews;
import io.unboundedcloud.playpen.model.ManagedPods;

/**
 * A watch of allocations, made from a watch of their pods on the API server: each pod event becomes the event of the
 * allocation it shows, as the watch's caller may see it ({@code view}: the caller's own, matching its selectors).
 * A pod that comes to show an allocation is ADDED, one that shows it still MODIFIED (so is the first change of a pod
 * this watch has not seen: the client may have its allocation from the list it started from); one whose allocation goes
 * (the pod deleted, released, or showing another allocation now) DELETED with the allocation it showed, at the
 * version of the change. The API server's order of committed writes is the events' order, and its resourceVersions
 * theirs, so a client goes on from the last one it saw, on any replica; the API server's BOOKMARKs are passed on
 * (as an Alloc with only its resourceVersion) when the client asked for them, so a quiet watch's client goes on from
 * a recent version.
 */
final class AllocWatch implements Watcher<Pod> {
    private final WatchStream stream;
    private final Function<Pod, Optional<AllocViews.Alloc>> view;
    /** The allocation a pod names that the caller may see, shown or not (a lost claim too): what a delete names. */
    private final Function<Pod, Optional<AllocViews.Alloc>> named;
    private final AllocViews.Query query;
    private final Clock clock;
    /** What this watch has shown of each pod (by name), so its going can be told. */
    private final Map<String, AllocViews.Alloc> shown = new HashMap<>();
    /**
     * The pods this watch has had an event of (and not their delete): a change of one it has not is one the client
     * may know from the list it started from.
     */
    private final java.util.Set<String> seen = new java.util.HashSet<>();

    AllocWatch(WatchStream stream, Function<Pod, Optional<AllocViews.Alloc>> view,
            Function<Pod, Optional<AllocViews.Alloc>> named, AllocViews.Query query, Clock clock) {
        this.stream = stream;
        this.view = view;
        this.named = named;
        this.query = query;
        this.clock = clock;
    }

    /** A pod of the list the watch starts with: its allocation, if the caller may see it, as ADDED. */
    synchronized void initial(Pod pod) {
        seen.add(ManagedPods.name(pod));
        view.apply(pod).ifPresent(a -> {
            shown.put(ManagedPods.name(pod), a);
            send("ADDED", a);
        });
    }

    @Override
    public synchronized void eventReceived(Action action, Pod pod) {
        if (action == Action.BOOKMARK) {
            // the API server's mark of a version its watch has reached: every change up to it was sent
            String version = pod == null || pod.getMetadata() == null ? null : pod.getMetadata().getResourceVersion();
            if (query.watch() != null && query.watch().bookmarks() && version != null && !version.isEmpty()) {
                stream.emit(AllocsApi.bookmark(version, false));
            }
            return;
        }
        if (action != Action.ADDED && action != Action.MODIFIED && action != Action.DELETED) {
            return;
        }
        String name = ManagedPods.name(pod);
        String version = pod.getMetadata().getResourceVersion();
        Optional<AllocViews.Alloc> now = action == Action.DELETED ? Optional.empty() : view.apply(pod);
        AllocViews.Alloc before = shown.get(name);
        if (before == null && action == Action.DELETED) {
            // shown by the list the client started from, not by this watch: its last state names it (a claim
            // judged lost since may have been listed while undecided)
            before = named.apply(pod).orElse(null);
        }
        if (before != null && (now.isEmpty() || !now.get().name().equals(before.name()))) {
            shown.remove(name);
            send("DELETED", before.atVersion(version));
        }
        boolean seenBefore = action == Action.DELETED ? seen.remove(name) : !seen.add(name);
        if (now.isPresent()) {
            boolean known = shown.put(name, now.get()) != null;
            // a change of a pod this watch has not seen may be of an allocation the client listed
            send(known || !seenBefore && action == Action.MODIFIED ? "MODIFIED" : "ADDED", now.get());
        }
    }

    private void send(String type, AllocViews.Alloc a) {
        stream.emit(AllocViews.watchEvent(type, a, query, clock.instant()));
    }

    /**
     * The pods' watch ended: a version the API server no longer keeps is 410 Expired for the client too (it lists
     * and watches again), anything else ends the stream, which the client opens again from its last version.
     */
    @Override
    public void onClose(WatcherException cause) {
        if (cause != null && cause.isHttpGone()) {
            stream.end(WatchStream.error(WatchStream.tooOld(null)));
        } else {
            stream.end(cause == null ? null : WatchStream.error(ApiException.internal("the watch of the allocations'"
                    + " pods on the Kubernetes API server ended: " + cause.getMessage() + "; watch again")));
        }
    }

    @Override
    public void onClose() {
        stream.end(null);
    }

    @Override
    public boolean reconnecting() {
        return true;
    }
}
