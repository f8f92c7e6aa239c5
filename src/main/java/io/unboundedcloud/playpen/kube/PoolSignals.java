package io.unboundedcloud.playpen.kube;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.config.PoolPolicy;
import io.unboundedcloud.playpen.model.DemandBuffer;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PoolBackoff;
import io.unboundedcloud.playpen.model.PoolHealth;
import io.unboundedcloud.playpen.model.PoolPlanner;
import io.unboundedcloud.playpen.model.PoolTarget;
import io.unboundedcloud.playpen.model.TemplateHashes;

/**
 * What every replica learns about the pools from the pod watch, so that each one (not only the leader) knows it and
 * a new leader starts with it: per pool, its back-off (a pod of the current template deleted while unhealthy without
 * ever having been ready, or deleted crash-looping after it was, is a failed replacement; a pod of that template that
 * becomes ready, a new one or one ready again after it was not with no container restarted since, ends the
 * back-off), its time-to-ready and its allocation rate (claims seen by the watch, whichever replica made them).
 */
public final class PoolSignals implements PodCache.Listener {

    /**
     * A pool started or went on backing off ({@code problem}: what the failed pod had), or recovered ({@code
     * problem} null: {@code pod} became ready).
     */
    public record BackoffChange(PoolTarget target, PoolBackoff.View view, PoolHealth.Problem problem, Pod pod) {
        public boolean recovered() {
            return problem == null;
        }

        /** One line for the log and the Event. */
        public String message() {
            String pool = io.unboundedcloud.playpen.model.PoolStatus.name(target);
            if (recovered()) {
                return "pool " + pool + " recovered: pod " + ManagedPods.name(pod) + " became ready; creates resume";
            }
            return "pool " + pool + ": " + view.failures() + " replacement(s) in a row "
                    + (problem == PoolHealth.Problem.CRASH_LOOP ? "never became ready or crash-looped"
                            : "never became ready")
                    + " (last: pod "
                    + ManagedPods.name(pod) + ", " + problem.reason() + "); the pool waits " + view.delay().toSeconds()
                    + " s, then creates one pod at a time until one is ready";
        }
    }

    /** Told when a pool starts or stops backing off, or backs off further. */
    public interface Observer {
        void backoffChanged(BackoffChange change);
    }

    private static final int MAX_TRACKED = 200_000;

    private final PoolPlanner planner;
    private final NodeCache nodes;
    private final Clock clock;
    private final PoolPolicy policy;
    private final Map<PoolTarget, PoolBackoff> backoffs = new ConcurrentHashMap<>();
    private final Map<PoolTarget, DemandBuffer> demand = new ConcurrentHashMap<>();
    /**
     * uids of the pods seen ready, while they live: a pod that was ready stays known as such however long it stays
     * and however many pods (of any pool) become ready meanwhile. Dropped when the watch shows the pod gone.
     */
    private final Set<String> liveReady = ConcurrentHashMap.newKeySet();
    /**
     * uids of pods seen ready that are gone, and (below) uids counted as failed: each pod is counted once either way.
     * Kept for a while after the pod is gone (bounded): the pool's own delete and the watch's DELETED event come in
     * either order.
     */
    private final Set<String> goneReady = recent();
    private final Set<String> failed = recent();
    /** uids first seen not ready: their time-to-ready is measured (pods already ready when first seen are not). */
    private final Set<String> starting = ConcurrentHashMap.newKeySet();
    /** uids seen ready and then not ready: becoming ready again ends a back-off as a first ready does. */
    private final Set<String> unreadyAgain = ConcurrentHashMap.newKeySet();
    /**
     * uid -> its containers' restarts when it was last seen becoming ready: a pod ready again after more restarts was
     * only restarted (a crash, then a moment's readiness), which ends no back-off.
     */
    private final Map<String, Integer> restartsWhenReady = new ConcurrentHashMap<>();
    /**
     * uid -> the failures of the back-off its becoming ready ended: should it then crash-loop, the back-off goes on
     * from there. Kept for a while after the pod is gone (bounded), as {@link #failed} is.
     */
    private final Map<String, Integer> endedBackoff = recentMap();
    /** uid -> claimed as last seen, so a claim is counted when it happens, not when a list shows it. */
    private final Map<String, Boolean> claimed = new ConcurrentHashMap<>();
    /**
     * uid -> what was wrong with a never-ready, unclaimed pod when its delete began (empty: nothing). Its end is judged
     * by that, not by the pod its DELETED event shows: the kubelet gives every pod it stops a terminal phase (Failed,
     * or Succeeded when its containers exit 0) before it is removed, and the grace period may run past the ready
     * timeout, so a pod scaled down or retired by a rollout while it started would otherwise end as a failure.
     */
    private final Map<String, Optional<PoolHealth.Problem>> atDelete = new ConcurrentHashMap<>();
    /** Per pool backing off, its last failed replacement as told (a later term as leader tells it again). */
    private final Map<PoolTarget, BackoffChange> lastFailure = new ConcurrentHashMap<>();
    /** pod name -> when this process created it (time-to-ready measured from the create call). */
    private final Map<String, Instant> createdHere = new ConcurrentHashMap<>();
    private final java.util.List<Observer> observers = new CopyOnWriteArrayList<>();

    public PoolSignals(PoolPlanner planner, NodeCache nodes, Clock clock, PoolPolicy policy) {
        this.planner = planner;
        this.nodes = nodes;
        this.clock = clock;
        this.policy = policy;
    }

    public void addObserver(Observer o) {
        observers.add(o);
    }

    public PoolBackoff backoff(PoolTarget target) {
        return backoffs.computeIfAbsent(target, t -> new PoolBackoff(policy.backoffBase(), policy.backoffMax()));
    }

    public DemandBuffer demand(PoolTarget target) {
        return demand.computeIfAbsent(target, t -> new DemandBuffer());
    }

    /** Every pool's back-off as of now. */
    public Map<PoolTarget, PoolBackoff.View> backoffs() {
        Map<PoolTarget, PoolBackoff.View> out = new LinkedHashMap<>();
        backoffs.forEach((t, b) -> out.put(t, b.view()));
        return out;
    }

    /**
     * An alloc for this pool was turned away here for lack of an idle pod: demand the claims do not show (they are
     * capped by the pods there are). Only the answering replica sees it.
     */
    public void unserved(PoolTarget target) {
        demand(target).claimed(clock.instant());
    }

    /** This process created {@code name} now (its time-to-ready is measured from here). */
    public void created(String name) {
        if (createdHere.size() < MAX_TRACKED) {
            createdHere.put(name, clock.instant());
        }
    }

    /**
     * The pool deleted an unhealthy idle pod: when it was never ready, that is a failed replacement (counted once
     * per pod, whether this call or the watch's DELETED event comes first). So is a pod that was ready and then
     * crash-looped (at least three restarts: the template's pods do not keep running); should its becoming ready have
     * ended a back-off, the back-off goes on from there. Not a pod that was ready and then failed otherwise (evicted),
     * and not when its node was lost (gone, or NotReady past the grace): the node failed the pod, not the template,
     * and the next pods go to other nodes.
     */
    public void deletedUnhealthy(PoolTarget target, Pod pod, PoolHealth.Problem problem) {
        String uid = pod.getMetadata().getUid();
        if (uid == null || problem.forceDelete() || seenReady(uid) && problem != PoolHealth.Problem.CRASH_LOOP
                || !ofCurrentTemplate(target, pod) || !failed.add(uid)) {
            return;
        }
        // the failure dates from when the pod's delete began (the leader's pass deleted it then), not from when a
        // watch showed it gone a grace period later: every replica pauses the pool from the same moment
        Instant now = clock.instant();
        Instant at = deleteBegan(pod).filter(t -> t.isBefore(now)).orElse(now);
        Integer ended = endedBackoff.remove(uid);
        PoolBackoff.View v = ended != null ? backoff(target).failedAfter(ended, at) : backoff(target).failed(at);
        BackoffChange c = new BackoffChange(target, v, problem, pod);
        lastFailure.put(target, c);
        observers.forEach(o -> o.backoffChanged(c));
    }

    /** The last failed replacement of {@code target} since its back-off began (empty: it is not backing off). */
    public Optional<BackoffChange> lastFailure(PoolTarget target) {
        return Optional.ofNullable(lastFailure.get(target));
    }

    @Override
    public void onPodEvent(PodCache.Change change, Pod pod) {
        Optional<PoolTarget> target = planner.poolOf(pod);
        String uid = pod.getMetadata().getUid();
        if (target.isEmpty() || uid == null) {
            return;
        }
        if (change == PodCache.Change.DELETED) {
            createdHere.remove(ManagedPods.name(pod));
            Boolean wasClaimed = claimed.remove(uid);
            boolean wasReady = seenReady(uid);
            if (liveReady.remove(uid)) {
                goneReady.add(uid);
            }
            starting.remove(uid);
            unreadyAgain.remove(uid);
            restartsWhenReady.remove(uid);
            Optional<PoolHealth.Problem> whenDeleteBegan = atDelete.remove(uid);
            if (!ManagedPods.isClaimed(pod) && (wasClaimed == null || !wasClaimed)) {
                // a pod that was ready counts only when it crash-looped (deletedUnhealthy)
                (whenDeleteBegan != null ? whenDeleteBegan : problemAtDelete(pod))
                        .filter(p -> !wasReady || p == PoolHealth.Problem.CRASH_LOOP)
                        .ifPresent(p -> deletedUnhealthy(target.get(), pod, p));
            }
            return;
        }
        boolean isClaimed = ManagedPods.isClaimed(pod);
        Boolean was = claimed.put(uid, isClaimed);
        if (isClaimed && Boolean.FALSE.equals(was)) {
            demand(target.get()).claimed(clock.instant());
        }
        if (ManagedPods.isTerminating(pod)) {
            if (!isClaimed && !atDelete.containsKey(uid) && atDelete.size() < MAX_TRACKED) {
                Optional<PoolHealth.Problem> problem = problemAtDelete(pod);
                if (!seenReady(uid) || problem.filter(p -> p == PoolHealth.Problem.CRASH_LOOP).isPresent()) {
                    atDelete.put(uid, problem);
                }
            }
            return;
        }
        boolean ready = PoolHealth.ready(pod);
        if (!ready && !seenReady(uid) && starting.size() < MAX_TRACKED) {
            starting.add(uid);
        }
        if (!ready && seenReady(uid) && unreadyAgain.size() < MAX_TRACKED) {
            unreadyAgain.add(uid);
        }
        boolean firstReady = ready && !goneReady.contains(uid) && liveReady.add(uid);
        if (firstReady) {
            Instant made = createdHere.remove(ManagedPods.name(pod));
            Instant from = made != null ? made : created(pod);
            if (starting.remove(uid) && from != null) {
                demand(target.get()).readyAfter(Duration.between(from, clock.instant()));
            }
        }
        // a pod that becomes ready, for the first time or again after it was not: an update of a pod that stays
        // ready (a claim, a renewal) tells nothing new, nor does a pod ready again because its container was
        // restarted (a crash, then a moment's readiness: the runner has no readiness probe)
        boolean readyAgain = !firstReady && ready && unreadyAgain.remove(uid);
        boolean restartedSince = false;
        if (firstReady || readyAgain) {
            int restarts = restarts(pod);
            Integer before = restartsWhenReady.put(uid, restarts);
            restartedSince = readyAgain && before != null && restarts > before;
        }
        if (firstReady || readyAgain && !restartedSince) {
            // only a pod of the current template tells that the pods the pool creates now can get ready
            int ended = ofCurrentTemplate(target.get(), pod) ? backoff(target.get()).ended() : 0;
            if (ended > 0) {
                endedBackoff.put(uid, ended);
                lastFailure.remove(target.get());
                BackoffChange c = new BackoffChange(target.get(), PoolBackoff.View.NONE, null, pod);
                observers.forEach(o -> o.backoffChanged(c));
            }
        }
    }

    /** Whether the pod was seen ready: while it lives, or for a while after it is gone. */
    private boolean seenReady(String uid) {
        return liveReady.contains(uid) || goneReady.contains(uid);
    }

    /**
     * What was wrong with a pool pod when its delete began, if anything; for a pod not being deleted, now. A pod first
     * seen after the kubelet stopped it (a replica that starts, a relist after a watch gap, updates that came
     * together) shows the terminal phase the kubelet gives every pod it stops, and the time since its delete began:
     * neither is held against it. Its phase counts only when it has a reason (an eviction, a pod the kubelet
     * refused) or a container ended before the delete began.
     */
    private Optional<PoolHealth.Problem> problemAtDelete(Pod pod) {
        Instant now = clock.instant();
        Instant began = deleteBegan(pod).filter(t -> t.isBefore(now)).orElse(now);
        Pod judged = pod;
        if (ManagedPods.isTerminating(pod) && pod.getStatus() != null
                && ("Failed".equals(pod.getStatus().getPhase()) || "Succeeded".equals(pod.getStatus().getPhase()))
                && (pod.getStatus().getReason() == null || pod.getStatus().getReason().isEmpty())
                && !endedBefore(pod, began)) {
            judged = new io.fabric8.kubernetes.api.model.PodBuilder(pod).editStatus().withPhase("Running").endStatus()
                    .build();
        }
        return PoolHealth.problem(judged, nodes.hasSynced() ? nodes::node : null, began, planner.limits());
    }

    /**
     * Whether {@code pod} was built from the pool's current template: a never-ready pod of an older one (the broken
     * image a restart with a fixed one replaced) tells nothing about the pods the pool creates now.
     */
    private boolean ofCurrentTemplate(PoolTarget target, Pod pod) {
        PoolPlanner.Template tpl = planner.template(target);
        return TemplateHashes.isCurrent(pod, tpl.hash(), tpl.sample());
    }

    /** When a pod's delete began: its deletionTimestamp less its grace period (the API server adds that). */
    private static Optional<Instant> deleteBegan(Pod pod) {
        if (!ManagedPods.isTerminating(pod)) {
            return Optional.empty();
        }
        try {
            Instant end = Instant.parse(pod.getMetadata().getDeletionTimestamp());
            Long grace = pod.getMetadata().getDeletionGracePeriodSeconds();
            return Optional.of(grace == null ? end : end.minusSeconds(Math.max(0, grace)));
        } catch (RuntimeException e) {
            return Optional.empty();
        }
    }

    /** Whether a container of the pod had ended before {@code began}. */
    private static boolean endedBefore(Pod pod, Instant began) {
        if (pod.getStatus().getContainerStatuses() == null) {
            return false;
        }
        for (io.fabric8.kubernetes.api.model.ContainerStatus c : pod.getStatus().getContainerStatuses()) {
            var terminated = c.getState() == null ? null : c.getState().getTerminated();
            if (terminated == null || terminated.getFinishedAt() == null) {
                continue;
            }
            try {
                if (Instant.parse(terminated.getFinishedAt()).isBefore(began)) {
                    return true;
                }
            } catch (RuntimeException e) {
                // an unreadable time tells nothing
            }
        }
        return false;
    }

    /** A thread-safe set that forgets its oldest entries beyond {@value #RECENT} (pod uids are never reused). */
    private static Set<String> recent() {
        return java.util.Collections.synchronizedSet(java.util.Collections.newSetFromMap(
                new java.util.LinkedHashMap<String, Boolean>() {
                    @Override
                    protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
                        return size() > RECENT;
                    }
                }));
    }

    private static final int RECENT = 50_000;

    /** A thread-safe map that forgets its oldest entries beyond {@value #RECENT}. */
    private static Map<String, Integer> recentMap() {
        return java.util.Collections.synchronizedMap(new java.util.LinkedHashMap<String, Integer>() {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Integer> eldest) {
                return size() > RECENT;
            }
        });
    }

    /** The restarts of the pod's containers, together. */
    private static int restarts(Pod pod) {
        int n = 0;
        if (pod.getStatus() != null && pod.getStatus().getContainerStatuses() != null) {
            for (io.fabric8.kubernetes.api.model.ContainerStatus c : pod.getStatus().getContainerStatuses()) {
                n += c.getRestartCount() == null ? 0 : c.getRestartCount();
            }
        }
        return n;
    }

    private static Instant created(Pod pod) {
        try {
            return Instant.parse(pod.getMetadata().getCreationTimestamp());
        } catch (RuntimeException e) {
            return null;
        }
    }
}
