package io.unboundedcloud.playpen.chaos;

import java.net.URI;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.Watch;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * The cluster's own record of what happened to the playpen pods, from a watch straight on the simulated API (never
 * through the fault proxy, never from the operator's word), checked event by event against the suite's invariants:
 * no pod carries two keys, no key is on two pods, the pool never holds more ready idle pods of a kind than its target,
 * no two live pods share a node's hostPort. {@link #podsThatCarried} answers "did this claim land?" afterwards.
 */
public final class ClusterHistory implements AutoCloseable {
    private final KubernetesClient client;
    private final Watch watch;
    private volatile Map<String, Integer> targets;
    /** kind -> the hash of the template current pods carry (set by a scenario that rolls templates). */
    private final Map<String, String> currentHash = new java.util.concurrent.ConcurrentHashMap<>();
    /** Pods a rollout may add beyond the target (--pool-max-surge as a count for the target). */
    private volatile int surge;
    /** uid -> nanoTime since when the pod is continuously Running and Ready, as seen here. */
    private final Map<String, Long> healthySince = new HashMap<>();
    /** uid -> nanoTime since when the pod is continuously not Running-and-Ready (Failed, evicted, starting). */
    private final Map<String, Long> unhealthySince = new HashMap<>();
    /** How long a state must have been visible here before a claim that contradicts it counts: caches lag. */
    static final long CLAIM_GRACE_NANOS = 1_000_000_000L;
    private long claimGraceNanos = CLAIM_GRACE_NANOS;
    private java.time.Duration doubleGrace = DOUBLE_GRACE;
    private long claims;
    private long staleClaims;
    /** uid -> latest state of live pods. */
    private final Map<String, Pod> live = new HashMap<>();
    /** uid -> every key hash the pod ever carried (in order). */
    private final Map<String, List<String>> keysByUid = new HashMap<>();
    /**
     * uid -> the key hashes taken off the pod while it lived (a claim that lost to an earlier claim of its key and
     * was rolled back, never answered): the pod may then carry another key.
     */
    private final Map<String, Set<String>> takenBackByUid = new HashMap<>();
    /** pod name + " " + key hash -> nanoTimes at which that key was taken off a pod of that name. */
    private final Map<String, List<Long>> takenBackAt = new HashMap<>();
    /**
     * pod name + " " + key hash -> nanoTimes at which a pod of that name carried that key again after it had been
     * taken off it (a claim that lost and was rolled back, then a new claim of the key on the same pod that stood).
     */
    private final Map<String, List<Long>> reclaimedAt = new HashMap<>();
    private final Map<String, String> nameByUid = new HashMap<>();
    private final Map<String, String> templateByUid = new HashMap<>();
    /** uid -> nanoTime of deletion. */
    private final Map<String, Long> deletedAt = new HashMap<>();
    /** uid -> nanoTime of creation as seen here. */
    private final Map<String, Long> addedAt = new HashMap<>();
    private final Set<String> violations = new java.util.LinkedHashSet<>();
    /**
     * key hash -> nanoTime since when two live pods carry it. A claim that lost to an earlier claim of its key is
     * written, judged and rolled back within moments (by its writer, or by the leader's sweep when the writer
     * died): that is not a violation; two pods carrying one key for longer than {@link #DOUBLE_GRACE} is.
     */
    private final Map<String, Long> doubleSince = new HashMap<>();
    static final java.time.Duration DOUBLE_GRACE = java.time.Duration.ofSeconds(90);
    /** How long a pool may hold more ready idle pods than its target (six reconcile intervals of the suite). */
    static final java.time.Duration OVER_TARGET_GRACE = java.time.Duration.ofSeconds(30);
    private final Map<String, Long> overSince = new HashMap<>();
    private final Set<String> reportedOver = new HashSet<>();
    private long longestOverTargetNanos;
    private long doublesSeen;
    private long longestDoubleNanos;
    private long events;
    private final java.time.Duration ttl;
    /** uid -> claimed-at of claimed pods. */
    private final Map<String, java.time.Instant> claimedAt = new HashMap<>();
    /** [deletion wall ms, ms after claimed-at + ttl] of every claimed pod deleted past its expiry. */
    private final List<long[]> expiries = new ArrayList<>();

    /**
     * From now on, the pool of {@code kind} rolls to the template with this hash: claims of other templates while a
     * current pod has been ready (idle) for a second are stale answers, and only current pods count against the
     * target (older ones against target + surge).
     */
    public synchronized void currentTemplate(String kind, String hash) {
        currentHash.put(kind, hash);
    }

    /**
     * Other graces than {@link #CLAIM_GRACE_NANOS} for a claim that contradicts what was visible and
     * {@link #DOUBLE_GRACE} for a key on two pods (the checks' own tests).
     */
    synchronized void graces(java.time.Duration claim, java.time.Duration doubled) {
        this.claimGraceNanos = claim.toNanos();
        this.doubleGrace = doubled;
    }

    /** New pool targets (a scenario restarted the replicas with other counts) and the rollout's surge. */
    public synchronized void targets(Map<String, Integer> newTargets, int newSurge) {
        this.targets = Map.copyOf(newTargets);
        this.surge = newSurge;
    }

    static String templateHash(Pod p) {
        Map<String, String> l = p.getMetadata().getLabels();
        return l == null ? "" : l.getOrDefault(PlaypenKeys.TEMPLATE_HASH, "");
    }

    static boolean runningReady(Pod p) {
        return p.getStatus() != null && "Running".equals(p.getStatus().getPhase()) && ready(p) && !terminating(p);
    }

    /** Claims seen, and how many of them went to a pod of an older template (allowed only without a current one). */
    public synchronized long[] claimCounts() {
        return new long[] {claims, staleClaims};
    }

    /** Ready, idle, not terminating pods of {@code kind} now, and how many carry the current template. */
    public synchronized int[] readyIdle(String kind) {
        int all = 0;
        int current = 0;
        String cur = currentHash.get(kind);
        for (Pod p : live.values()) {
            if (kind(p).equals(kind) && keyHash(p) == null && runningReady(p)) {
                all++;
                if (cur == null || cur.equals(templateHash(p))) {
                    current++;
                }
            }
        }
        return new int[] {all, current};
    }

    /** Watches pods in {@code namespace}; {@code targets} maps "runner/amd64" etc. to the pool's idle target. */
    public ClusterHistory(URI kubeApi, String namespace, Map<String, Integer> targets, java.time.Duration ttl) {
        this.targets = Map.copyOf(targets);
        this.ttl = ttl;
        Config config = new ConfigBuilder(Config.empty()).withMasterUrl(kubeApi.toString()).withNamespace(namespace)
                .withHttp2Disable(true).withRequestRetryBackoffLimit(3).build();
        client = new KubernetesClientBuilder().withConfig(config).build();
        // the list and the watch under one lock: events are applied in the order the API server sent them
        synchronized (this) {
            for (Pod p : client.pods().inNamespace(namespace).list().getItems()) {
                apply(Watcher.Action.ADDED, p);
            }
            watch = client.pods().inNamespace(namespace).watch(new Watcher<>() {
                @Override
                public void eventReceived(Action action, Pod pod) {
                    synchronized (ClusterHistory.this) {
                        apply(action, pod);
                    }
                }

                @Override
                public void onClose(WatcherException cause) {
                    if (cause != null) {
                        synchronized (ClusterHistory.this) {
                            violations.add("checker: the pod watch on the simulated API broke: " + cause.getMessage());
                        }
                    }
                }
            });
        }
    }

    static String kind(Pod p) {
        Map<String, String> l = p.getMetadata().getLabels() == null ? Map.of() : p.getMetadata().getLabels();
        String type = l.getOrDefault(PlaypenKeys.RESOURCE_TYPE, "?");
        return type.equals("runner") ? type + "/" + l.getOrDefault(PlaypenKeys.ARCHITECTURE, "?")
                : type + "/" + l.getOrDefault(PlaypenKeys.KUBERNETES_VERSION, "?");
    }

    static String keyHash(Pod p) {
        Map<String, String> a = p.getMetadata().getAnnotations();
        String h = a == null ? null : a.get(PlaypenKeys.IDEMPOTENCY_KEY_HASH);
        return h == null || h.isEmpty() ? null : h;
    }

    static boolean ready(Pod p) {
        if (p.getStatus() == null || p.getStatus().getConditions() == null) {
            return false;
        }
        for (PodCondition c : p.getStatus().getConditions()) {
            if ("Ready".equals(c.getType()) && "True".equals(c.getStatus())) {
                return true;
            }
        }
        return false;
    }

    static boolean terminating(Pod p) {
        return p.getMetadata().getDeletionTimestamp() != null && !p.getMetadata().getDeletionTimestamp().isEmpty();
    }

    private void apply(Watcher.Action action, Pod pod) {
        events++;
        String uid = pod.getMetadata().getUid();
        String name = pod.getMetadata().getName();
        nameByUid.put(uid, name);
        templateByUid.putIfAbsent(uid, templateHash(pod));
        String hash = keyHash(pod);
        List<String> keys = keysByUid.computeIfAbsent(uid, u -> new ArrayList<>());
        Pod was = live.get(uid);
        String wasHash = was == null ? null : keyHash(was);
        if (wasHash != null && hash == null && action != Watcher.Action.DELETED) {
            takenBackByUid.computeIfAbsent(uid, u -> new HashSet<>()).add(wasHash);
            takenBackAt.computeIfAbsent(name + " " + wasHash, k -> new ArrayList<>()).add(System.nanoTime());
        }
        if (hash != null && !hash.equals(wasHash) && takenBackByUid.getOrDefault(uid, Set.of()).contains(hash)) {
            reclaimedAt.computeIfAbsent(name + " " + hash, k -> new ArrayList<>()).add(System.nanoTime());
        }
        if (hash != null && !keys.contains(hash)) {
            Set<String> takenBack = takenBackByUid.getOrDefault(uid, Set.of());
            if (keys.stream().anyMatch(k -> !takenBack.contains(k))) {
                violations.add("pod " + name + " carried two keys: " + abbreviate(keys) + " then "
                        + abbreviate(List.of(hash)));
            }
            keys.add(hash);
        }
        String claimed = pod.getMetadata().getAnnotations() == null ? null
                : pod.getMetadata().getAnnotations().get(PlaypenKeys.CLAIMED_AT);
        if (hash != null && claimed != null && !claimed.isEmpty()) {
            try {
                claimedAt.putIfAbsent(uid, java.time.Instant.parse(claimed));
            } catch (java.time.format.DateTimeParseException e) {
                violations.add("pod " + name + " has an unparsable claimed-at");
            }
        }
        if (action == Watcher.Action.DELETED) {
            java.time.Instant c = claimedAt.get(uid);
            long now = System.currentTimeMillis();
            if (c != null && now >= c.plus(ttl).toEpochMilli()) {
                expiries.add(new long[] {now, now - c.plus(ttl).toEpochMilli()});
            }
            live.remove(uid);
            healthySince.remove(uid);
            unhealthySince.remove(uid);
            deletedAt.putIfAbsent(uid, System.nanoTime());
            return;
        }
        long now = System.nanoTime();
        addedAt.putIfAbsent(uid, now);
        Pod before = live.get(uid);
        if (before != null && keyHash(before) == null && hash != null) {
            checkClaim(before, pod, now);
        }
        if (runningReady(pod)) {
            healthySince.putIfAbsent(uid, now);
            unhealthySince.remove(uid);
        } else {
            unhealthySince.putIfAbsent(uid, now);
            healthySince.remove(uid);
        }
        live.put(uid, pod);
        check();
    }

    /**
     * A claim just landed on {@code claimed} (its version before the claim: {@code before}): never on a pod that has
     * visibly been unhealthy (not Running and Ready) for a second, and never on a pod of an older template while a
     * current pod of the kind has been ready and idle for a second.
     */
    private void checkClaim(Pod before, Pod claimed, long now) {
        claims++;
        String uid = claimed.getMetadata().getUid();
        String name = claimed.getMetadata().getName();
        Long sick = unhealthySince.get(uid);
        if (!runningReady(before) && sick != null && now - sick > claimGraceNanos) {
            violations.add("pod " + name + " was claimed although it had not been Running and Ready for "
                    + (now - sick) / 1_000_000 + " ms (phase " + (before.getStatus() == null ? "?"
                            : before.getStatus().getPhase()) + ")");
        }
        String kind = kind(claimed);
        String cur = currentHash.get(kind);
        if (cur == null || cur.equals(templateHash(claimed))) {
            return;
        }
        staleClaims++;
        for (Map.Entry<String, Pod> e : live.entrySet()) {
            Pod q = e.getValue();
            Long healthy = healthySince.get(e.getKey());
            if (!e.getKey().equals(uid) && kind(q).equals(kind) && keyHash(q) == null && runningReady(q)
                    && cur.equals(templateHash(q)) && healthy != null && now - healthy > claimGraceNanos) {
                violations.add("stale answer: pod " + name + " (template " + templateHash(claimed) + ") was claimed while "
                        + "current pod " + q.getMetadata().getName() + " had been ready and idle for "
                        + (now - healthy) / 1_000_000 + " ms");
                return;
            }
        }
    }

    private void check() {
        Map<String, String> podByKey = new HashMap<>();
        Set<String> doubled = new java.util.HashSet<>();
        Map<String, String> podByPort = new HashMap<>();
        Map<String, Integer> idleReady = new HashMap<>();
        Map<String, Integer> idleReadyAll = new HashMap<>();
        for (Pod p : live.values()) {
            String name = p.getMetadata().getName();
            String hash = keyHash(p);
            if (hash != null) {
                String other = podByKey.putIfAbsent(hash, name);
                if (other != null && !other.equals(name) && !terminating(p)) {
                    doubled.add(hash);
                    if (doubleSince.putIfAbsent(hash, System.nanoTime()) == null) {
                        doublesSeen++;
                    }
                }
            } else if (!terminating(p) && ready(p)) {
                // with a rollout under way only current pods count against the target (all against target + surge)
                String cur = currentHash.get(kind(p));
                if (cur == null || cur.equals(templateHash(p))) {
                    idleReady.merge(kind(p), 1, Integer::sum);
                }
                idleReadyAll.merge(kind(p), 1, Integer::sum);
            }
            Map<String, String> l = p.getMetadata().getLabels();
            String port = l == null ? null : l.get(PlaypenKeys.HOST_PORT);
            if (port != null && !terminating(p)) {
                String node = p.getSpec() != null && p.getSpec().getNodeName() != null ? p.getSpec().getNodeName()
                        : kind(p);
                String other = podByPort.putIfAbsent(node + ":" + kind(p).split("/")[0] + ":" + port, name);
                if (other != null && !other.equals(name)) {
                    violations.add("hostPort " + port + " on " + node + " held by two pods: " + other + ", " + name);
                }
            }
        }
        long now = System.nanoTime();
        for (var it = doubleSince.entrySet().iterator(); it.hasNext();) {
            var e = it.next();
            longestDoubleNanos = Math.max(longestDoubleNanos, now - e.getValue());
            if (!doubled.contains(e.getKey())) {
                it.remove();
            } else if (now - e.getValue() > doubleGrace.toNanos()) {
                violations.add("key " + abbreviate(List.of(e.getKey())) + " on two pods for longer than "
                        + doubleGrace.toSeconds() + " s");
            }
        }
        Set<String> over = new HashSet<>();
        idleReady.forEach((kind, n) -> {
            Integer target = targets.get(kind);
            if (target != null && n > target) {
                overTarget(kind, now, over, "pool " + kind + " held " + n + " ready idle pods, target " + target);
            }
        });
        idleReadyAll.forEach((kind, n) -> {
            Integer target = targets.get(kind);
            if (target != null && currentHash.containsKey(kind) && n > target + surge) {
                overTarget(kind + " any template", now, over, "pool " + kind + " held " + n
                        + " ready idle pods of any template, target " + target + " + surge " + surge);
            }
        });
        overSince.keySet().retainAll(over);
    }

    /**
     * A pool above its target: a violation once it has lasted {@link #OVER_TARGET_GRACE}. A pod comes back idle when a
     * claim on it is taken back (it lost to an earlier claim of its key, or its client left before the answer), and
     * the pool may have replaced it already; the next pass deletes the surplus.
     */
    private void overTarget(String what, long now, Set<String> over, String message) {
        over.add(what);
        long since = overSince.computeIfAbsent(what, k -> now);
        longestOverTargetNanos = Math.max(longestOverTargetNanos, now - since);
        if (now - since > OVER_TARGET_GRACE.toNanos() && reportedOver.add(what + " " + since)) {
            violations.add(message + " for longer than " + OVER_TARGET_GRACE.toSeconds() + " s");
        }
    }

    /** The longest time a pool stayed above its target, in ms. */
    public synchronized long longestOverTargetMs() {
        return longestOverTargetNanos / 1_000_000;
    }

    private static String abbreviate(List<String> hashes) {
        return hashes.stream().map(h -> h.substring(0, Math.min(12, h.length()))).toList().toString();
    }

    /** Names of every pod (live or deleted) that ever carried this key hash. */
    public synchronized Set<String> podsThatCarried(String keyHash) {
        Set<String> out = new HashSet<>();
        keysByUid.forEach((uid, keys) -> {
            if (keys.contains(keyHash)) {
                out.add(nameByUid.get(uid));
            }
        });
        return out;
    }

    /**
     * True if {@code keyHash} was seen taken off a live pod of that name (rolled back) after {@code nanoTime} and the
     * pod did not carry the key again afterwards, with no pod of that name carrying the key deleted in between (pod
     * names recur: a later pod's claim is another claim). A request may see its first claim of a pod lose and be
     * rolled back, then claim the same pod again and answer with that claim: the pod holds the key as answered.
     */
    public synchronized boolean takenBackAfter(String podName, String keyHash, long nanoTime) {
        String k = podName + " " + keyHash;
        for (long t : takenBackAt.getOrDefault(k, List.of())) {
            if (t > nanoTime && !deletedBetween(podName, keyHash, nanoTime, t)
                    && reclaimedAt.getOrDefault(k, List.of()).stream().noneMatch(r -> r > t)) {
                return true;
            }
        }
        return false;
    }

    private boolean deletedBetween(String podName, String keyHash, long from, long to) {
        for (Map.Entry<String, List<String>> e : keysByUid.entrySet()) {
            Long d = deletedAt.get(e.getKey());
            if (d != null && d > from && d < to && e.getValue().contains(keyHash)
                    && podName.equals(nameByUid.get(e.getKey()))) {
                return true;
            }
        }
        return false;
    }

    /** True if a pod of that name carrying that key hash was seen deleted at or before {@code nanoTime}. */
    public synchronized boolean deletedBefore(String podName, String keyHash, long nanoTime) {
        for (Map.Entry<String, List<String>> e : keysByUid.entrySet()) {
            Long t = deletedAt.get(e.getKey());
            if (t != null && t <= nanoTime && e.getValue().contains(keyHash) && podName.equals(nameByUid.get(e.getKey()))) {
                return true;
            }
        }
        return false;
    }

    /** Pods of the template with {@code hash} first seen between {@code fromNanos} and {@code toNanos}. */
    public synchronized int podsAddedWithTemplate(String hash, long fromNanos, long toNanos) {
        int n = 0;
        for (Map.Entry<String, Long> e : addedAt.entrySet()) {
            if (e.getValue() > fromNanos && e.getValue() <= toNanos && hash.equals(templateByUid.get(e.getKey()))) {
                n++;
            }
        }
        return n;
    }

    /** Pods created (first seen) after {@code nanoTime}. */
    public synchronized int podsAddedAfter(long nanoTime) {
        return (int) addedAt.values().stream().filter(t -> t > nanoTime).count();
    }

    /** nanoTime of the first pod first seen after {@code nanoTime}, or -1. */
    public synchronized long firstAddedAfter(long nanoTime) {
        return addedAt.values().stream().filter(t -> t > nanoTime).min(Long::compare).orElse(-1L);
    }

    /** nanoTime of the first deletion of a claimed pod after {@code nanoTime}, or -1. */
    public synchronized long firstClaimedDeletedAfter(long nanoTime) {
        long best = -1;
        for (Map.Entry<String, Long> e : deletedAt.entrySet()) {
            if (e.getValue() > nanoTime && !keysByUid.getOrDefault(e.getKey(), List.of()).isEmpty()
                    && (best < 0 || e.getValue() < best)) {
                best = e.getValue();
            }
        }
        return best;
    }

    /** Live claimed pods and their claimed-at annotation. */
    public synchronized Map<String, String> liveClaims() {
        Map<String, String> out = new LinkedHashMap<>();
        for (Pod p : live.values()) {
            if (keyHash(p) != null) {
                Map<String, String> a = p.getMetadata().getAnnotations();
                out.put(p.getMetadata().getName(), a.getOrDefault(PlaypenKeys.CLAIMED_AT, ""));
            }
        }
        return out;
    }

    /** Deletions of claimed pods at or after their expiry since {@code sinceWallMs}: [count, worst lateness ms]. */
    public synchronized long[] expiriesSince(long sinceWallMs) {
        long n = 0;
        long worst = 0;
        for (long[] e : expiries) {
            if (e[0] >= sinceWallMs) {
                n++;
                worst = Math.max(worst, e[1]);
            }
        }
        return new long[] {n, worst};
    }

    /** Claimed pods still alive although their expiry passed more than {@code grace} ago. */
    public synchronized List<String> overdue(java.time.Duration grace) {
        List<String> out = new ArrayList<>();
        long now = System.currentTimeMillis();
        live.forEach((uid, p) -> {
            java.time.Instant c = claimedAt.get(uid);
            if (c != null && keyHash(p) != null && now > c.plus(ttl).plus(grace).toEpochMilli()) {
                out.add(p.getMetadata().getName());
            }
        });
        return out;
    }

    public synchronized List<String> violations() {
        check();
        return new ArrayList<>(violations);
    }

    /** How many times a key was on two live pods at once (each time resolved within the grace, or a violation). */
    public synchronized long doublesSeen() {
        return doublesSeen;
    }

    /** The longest time a key spent on two live pods, in milliseconds. */
    public synchronized long longestDoubleMillis() {
        return longestDoubleNanos / 1_000_000;
    }

    public synchronized long events() {
        return events;
    }

    public KubernetesClient client() {
        return client;
    }

    @Override
    public void close() {
        watch.close();
        client.close();
    }
}
