package io.unboundedcloud.playpen.camel;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import java.util.function.Supplier;

import io.fabric8.kubernetes.api.model.Pod;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.kube.AccessReviewer;
import io.unboundedcloud.playpen.kube.ApiCallCounter;
import io.unboundedcloud.playpen.kube.EventRecorder;
import io.unboundedcloud.playpen.kube.KubeApiCall;
import io.unboundedcloud.playpen.kube.LeaderElection;
import io.unboundedcloud.playpen.kube.PodCache;
import io.unboundedcloud.playpen.kube.PoolReconciler;
import io.unboundedcloud.playpen.kube.TtlExpirer;
import io.unboundedcloud.playpen.model.HostPortPlanner;
import io.unboundedcloud.playpen.model.ManagedPods;
import io.unboundedcloud.playpen.model.PoolPlan;
import io.unboundedcloud.playpen.model.PoolStatus;
import io.unboundedcloud.playpen.model.PoolTarget;
import io.unboundedcloud.playpen.model.PoolPlanner;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.model.ResourceType;

/** The operator's Prometheus metrics (names prefixed playpen_); pool gauges are computed from the cache at scrape. */
public final class OperatorMetrics implements PoolReconciler.Observer, TtlExpirer.Observer,
        io.unboundedcloud.playpen.kube.Renewer.Observer, io.unboundedcloud.playpen.kube.CapacityQueue.Observer {
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final Timer allocLatency;
    private final Timer reconcileDuration;
    private final Counter reconcileRuns;
    private final Counter reconcileErrors;
    private final Counter ttlExpirations;
    private final Counter podsCreated;
    private final Counter rangeExhausted;
    private final Map<String, Counter> requestCounters = new ConcurrentHashMap<>();
    private final Map<String, Counter> deletedCounters = new ConcurrentHashMap<>();
    private final Map<String, Counter> refusedCounters = new ConcurrentHashMap<>();

    public OperatorMetrics() {
        allocLatency = Timer.builder("playpen_alloc_latency").description("alloc request latency, front door to reply")
                .publishPercentileHistogram().minimumExpectedValue(Duration.ofMillis(1))
                .maximumExpectedValue(Duration.ofSeconds(10)).register(registry);
        reconcileDuration = Timer.builder("playpen_reconcile_duration").description("pool pass duration").register(registry);
        reconcileRuns = Counter.builder("playpen_reconcile_runs").description("pool passes").register(registry);
        reconcileErrors = Counter.builder("playpen_reconcile_errors").description("failed pool passes").register(registry);
        ttlExpirations = Counter.builder("playpen_ttl_expirations").description("allocations deleted at TTL").register(registry);
        podsCreated = Counter.builder("playpen_pool_created_pods").description("pods created by the pool").register(registry);
        rangeExhausted = Counter.builder("playpen_host_port_range_exhausted").description("pool passes that found a hostPort range full")
                .register(registry);
    }

    public PrometheusMeterRegistry registry() {
        return registry;
    }

    /**
     * The text of one Prometheus scrape (the management server's /metrics): first the gauges of draining pools are
     * brought up to date ({@link #bindDrainingPools}).
     */
    public String scrape() {
        bindDrainingPools();
        return registry.scrape();
    }

    /** One HTTP answer of a flow (alloc, dealloc, ...), with its result and code. */
    public void request(String flow, String result, int code, long nanos) {
        if (count(flow, result, code) && "alloc".equals(flow)) {
            allocLatency.record(Duration.ofNanos(nanos));
        }
    }

    /**
     * A request refused for its client certificate before any flow took it (no reply through the routes, no
     * latency from the front door): counted by its answer like the flow's own refusals.
     */
    public void refusedAtTheDoor(String flow, String result, int code) {
        count(flow, result, code);
        if ("renewal".equals(flow)) {
            renewalRefused(code);
        }
    }

    /** Counts an alloc or dealloc answer; false for the other flows, which have no request counter. */
    private boolean count(String flow, String result, int code) {
        if (!"alloc".equals(flow) && !"dealloc".equals(flow)) {
            return false;
        }
        // a handful of (flow, result, code) series: look each up once, not through a new builder per request
        requestCounters.computeIfAbsent(flow + '|' + result + '|' + code, k -> Counter.builder("playpen_" + flow + "_requests")
                .description(flow + " requests by result and HTTP code").tag("result", result)
                .tag("code", String.valueOf(code)).register(registry)).increment();
        return true;
    }

    /** playpen_alloc_watches: watches of allocations this replica streams now (at most 500). */
    public void bindWatches(WatchStream.Registry watches) {
        Gauge.builder("playpen_alloc_watches", watches, WatchStream.Registry::openCount)
                .description("watches of allocations streamed now (kubectl get allocs -w, kubectl delete and wait)")
                .register(registry);
    }

    /** Binds the gauges and function counters that read live state. */
    public void bind(OperatorConfig config, PodCache pods, PodTemplates templates, AccessReviewer reviewer,
            ApiCallCounter calls, LeaderElection leader, EventRecorder events) {
        bindPods(new PoolPlanner(config, templates), pods::pods);
        for (ResourceType type : ResourceType.values()) {
            HostPortPlanner planner = HostPortPlanner.forKind(config, type);
            Gauge.builder("playpen_free_host_ports", () -> planner.range().size()
                    - (int) HostPortPlanner.usedPorts(pods.pods(), type).stream().filter(planner.range()::contains).count())
                    .description("free hostPorts per range").tag("resource_type", type.wire()).register(registry);
        }
        FunctionCounter.builder("playpen_sar_cache_hits", reviewer, AccessReviewer::cacheHits)
                .description("SubjectAccessReview decisions served from cache").register(registry);
        FunctionCounter.builder("playpen_sar_cache_misses", reviewer, AccessReviewer::cacheMisses)
                .description("SubjectAccessReviews sent to the API server").register(registry);
        for (KubeApiCall c : KubeApiCall.values()) {
            FunctionCounter.builder("playpen_api_requests", calls, x -> x.get(c))
                    .description("Kubernetes API requests made by the operator's code (watches excluded)")
                    .tag("verb", c.verb()).tag("resource", c.resource()).tag("call", c.name().toLowerCase())
                    .register(registry);
        }
        Gauge.builder("playpen_leader", leader, l -> l.isLeader() ? 1 : 0).description("1 while this replica holds the Lease")
                .register(registry);
        // 1 while the Lease API answers 403 and this replica runs the background work alone (reference-compatible
        // with the Go operator's RBAC, which grants no Lease access)
        Gauge.builder("playpen_leader_election_fallback", leader, l -> l.inFallback() ? 1 : 0)
                .description("1 while leader election is off because the Lease API is forbidden (single-replica mode)")
                .tag("reason", "lease_forbidden").register(registry);
        FunctionCounter.builder("playpen_leader_election_forbidden", leader, LeaderElection::forbiddenAnswers)
                .description("Lease API calls answered 403 Forbidden").register(registry);
        FunctionCounter.builder("playpen_events_dropped", events, EventRecorder::dropped)
                .description("Kubernetes events not recorded: queue full, forbidden by RBAC, or lost at shutdown")
                .tag("reason", "queue_full").register(registry);
        FunctionCounter.builder("playpen_events_dropped", events, EventRecorder::forbidden)
                .description("Kubernetes events not recorded: queue full, forbidden by RBAC, or lost at shutdown")
                .tag("reason", "forbidden").register(registry);
        FunctionCounter.builder("playpen_events_dropped", events, EventRecorder::lostAtClose)
                .description("Kubernetes events not recorded: queue full, forbidden by RBAC, or lost at shutdown")
                .tag("reason", "shutdown").register(registry);
        FunctionCounter.builder("playpen_events_aggregated", events, EventRecorder::aggregated)
                .description("Kubernetes events over their rate (--event-burst, --event-rate-interval) combined into a "
                        + "later Event instead of written on their own").register(registry);
        FunctionCounter.builder("playpen_events_failed", events, EventRecorder::failed)
                .description("Kubernetes events the API server refused for another reason than RBAC").register(registry);
    }

    /** playpen_claims_rolled_back: claims this replica wrote and took back. */
    public void bindAllocator(io.unboundedcloud.playpen.kube.Allocator allocator) {
        FunctionCounter.builder("playpen_claims_rolled_back", allocator, io.unboundedcloud.playpen.kube.Allocator::rollbacks)
                .description("claims this replica wrote and took back: they lost to an earlier claim of their key or "
                        + "to the owner quota, or could not be confirmed")
                .register(registry);
    }

    /**
     * playpen_waiting_requests{resource_type,variant}: alloc requests waiting for capacity now, per runner
     * architecture and configured control-plane version; each client counts, a retry of a key that joined its wait
     * too, as --max-waiting and --max-waiting-per-user count them.
     */
    public void bindWaiting(OperatorConfig config, PodTemplates templates,
            io.unboundedcloud.playpen.kube.CapacityQueue queue) {
        for (PoolTarget t : new PoolPlanner(config, templates).desired().keySet()) {
            Gauge.builder("playpen_waiting_requests", queue, q -> q.waitingClients(t.type(), t.variant()))
                    .description("alloc requests waiting for capacity (waitSeconds), each client counted")
                    .tag("resource_type", t.type().wire()).tag("variant", t.variant()).register(registry);
        }
    }

    private final Map<String, Timer> waitTimers = new ConcurrentHashMap<>();

    /**
     * playpen_wait_duration_seconds{outcome}: how long allocs waited (served, timeout, left, failed, deallocated,
     * shutdown).
     */
    @Override
    public void waited(io.unboundedcloud.playpen.model.AllocCommand cmd, Duration waited, String outcome) {
        waitTimers.computeIfAbsent(outcome, o -> Timer.builder("playpen_wait_duration")
                .description("time alloc requests waited for capacity, by outcome").tag("outcome", o)
                .publishPercentileHistogram().minimumExpectedValue(Duration.ofMillis(10))
                .maximumExpectedValue(Duration.ofSeconds(3600)).register(registry)).record(waited);
    }

    /**
     * The pools' health, rollout and back-off, read from {@code statuses} at scrape: desired, ready, stale and
     * starting pods, the rollout's surge, unhealthy pods by reason and state (idle: being replaced; allocated: reported), and the back-off. These are the configured pools'; a draining pool gets the same at a scrape
     * ({@link #bindDrainingPools}).
     */
    public void bindPools(PoolPlanner planner, Supplier<Map<PoolTarget, PoolStatus>> statuses) {
        synchronized (draining) {
            this.poolPlanner = planner;
            this.poolStatuses = statuses;
        }
        for (PoolTarget t : planner.desired().keySet()) {
            poolGauges(planner, statuses, t);
            deletedCounter(t, "Stale");
            deletedCounter(t, "Surplus");
            for (io.unboundedcloud.playpen.model.PoolHealth.Problem p
                    : io.unboundedcloud.playpen.model.PoolHealth.Problem.values()) {
                deletedCounter(t, p.reason());
            }
        }
    }

    /** The planner and statuses the pool gauges read (null until bound), and the pods playpen_pods counts. */
    private PoolPlanner poolPlanner;
    private Supplier<Map<PoolTarget, PoolStatus>> poolStatuses;
    private PoolPlanner podsPlanner;
    private Supplier<Collection<Pod>> poolPods;
    /** Per draining pool (one no flag asks for, with pods), its gauges; guards the fields above too. */
    private final Map<PoolTarget, List<Meter>> draining = new java.util.HashMap<>();

    /**
     * A pool no flag asks for any more (a removed control-plane version) drains: while the statuses show it (it has
     * pods) it has the gauges of a configured pool, playpen_pods included; once it is gone they are removed.
     */
    void bindDrainingPools() {
        synchronized (draining) {
            if (poolStatuses == null) {
                return;
            }
            Map<PoolTarget, PoolStatus> now = poolStatuses.get();
            for (PoolStatus s : now.values()) {
                PoolTarget t = s.target();
                if (s.configured() || poolPlanner.desired().containsKey(t) || draining.containsKey(t)) {
                    continue;
                }
                List<Meter> meters = new ArrayList<>(poolGauges(poolPlanner, poolStatuses, t));
                if (poolPods != null) {
                    meters.addAll(podGauges(podsPlanner, poolPods, t));
                }
                draining.put(t, meters);
            }
            draining.entrySet().removeIf(e -> {
                if (now.containsKey(e.getKey())) {
                    return false;
                }
                e.getValue().forEach(registry::remove);
                return true;
            });
        }
    }

    /** One pool's gauges, read from {@code statuses} at scrape (0 while the pool is not there). */
    private List<Meter> poolGauges(PoolPlanner planner, Supplier<Map<PoolTarget, PoolStatus>> statuses, PoolTarget t) {
        List<Meter> out = new ArrayList<>();
        out.add(poolGauge("playpen_pool_desired_pods", "idle pods the pool wants now (the count flag, or the "
                + "demand-aware buffer's size)", statuses, t, s -> s.desired()));
        out.add(poolGauge("playpen_pool_ready_pods", "idle pods ready to be handed out", statuses, t, s -> s.ready()));
        out.add(poolGauge("playpen_pool_no_external_ip_pods", "idle pods ready as far as the pod goes on a node without "
                + "an ExternalIP: never handed out, not in playpen_pool_ready_pods", statuses, t,
                s -> s.noExternalIp()));
        out.add(poolGauge("playpen_pool_stale_pods", "idle pods of an older template, replaced surge-first", statuses, t,
                s -> s.stale()));
        out.add(poolGauge("playpen_pool_max_surge_pods", "pods a rollout may create beyond the desired ones "
                + "(--pool-max-surge; 0: no rollout, with rolling replacement off or a pool that wants no pod)",
                statuses, t, s -> planner.surge(s.desired())));
        out.add(poolGauge("playpen_pool_starting_pods", "idle pods of the current template not ready yet", statuses, t,
                s -> s.starting()));
        out.add(poolGauge("playpen_pool_backoff_seconds", "pause between creates of a pool whose replacements keep "
                + "failing (0: not backing off)", statuses, t, s -> s.backoff().delay().toSeconds()));
        out.add(poolGauge("playpen_pool_backoff_failures", "replacements in a row that never became ready (0: none)",
                statuses, t, s -> s.backoff().failures()));
        out.add(poolGauge("playpen_pool_time_to_ready_seconds", "slowest of the pool's last five pods from create to "
                + "ready", statuses, t, s -> s.timeToReady() == null ? Double.NaN : s.timeToReady().toMillis() / 1000.0));
        for (io.unboundedcloud.playpen.model.PoolHealth.Problem p
                : io.unboundedcloud.playpen.model.PoolHealth.Problem.values()) {
            out.add(Gauge.builder("playpen_pool_unhealthy_pods", () -> {
                PoolStatus s = statuses.get().get(t);
                return s == null ? 0 : s.unhealthyByReason().getOrDefault(p.reason(), 0);
            }).description("unhealthy pool pods by reason; idle ones are deleted and replaced, allocated ones reported")
                    .tag("resource_type", t.type().wire()).tag("variant", t.variant()).tag("reason", p.reason())
                    .tag("state", "idle").register(registry));
            out.add(Gauge.builder("playpen_pool_unhealthy_pods", () -> {
                PoolStatus s = statuses.get().get(t);
                return s == null ? 0 : s.unhealthyAllocatedByReason().getOrDefault(p.reason(), 0);
            }).description("unhealthy pool pods by reason; idle ones are deleted and replaced, allocated ones reported")
                    .tag("resource_type", t.type().wire()).tag("variant", t.variant()).tag("reason", p.reason())
                    .tag("state", "allocated").register(registry));
        }
        return out;
    }

    private Meter poolGauge(String name, String help, Supplier<Map<PoolTarget, PoolStatus>> statuses, PoolTarget t,
            java.util.function.ToDoubleFunction<PoolStatus> value) {
        return Gauge.builder(name, () -> {
            PoolStatus s = statuses.get().get(t);
            return s == null ? 0 : value.applyAsDouble(s);
        }).description(help).tag("resource_type", t.type().wire()).tag("variant", t.variant()).register(registry);
    }

    /** playpen_pool_deleted_pods_total{resource_type,variant,reason}: idle pods the pools deleted, and why. */
    @Override
    public void deleted(PoolPlan.Deletion d) {
        deletedCounter(d.target(), d.reason()).increment();
    }

    /**
     * playpen_pool_create_refused_total{resource_type,variant}: pod creates the API server refused (a 4xx) or failed
     * (a 5xx, a 429, no answer; not there when read back).
     */
    @Override
    public void createRefused(PoolReconciler.CreateRefusal r) {
        refusedCounter(r.target()).increment();
    }

    private Counter refusedCounter(PoolTarget t) {
        return refusedCounters.computeIfAbsent(t.key(), k -> Counter.builder("playpen_pool_create_refused")
                .description("pod creates of the pool the API server refused (a 4xx other than 409: a ResourceQuota, "
                        + "an admission webhook, a bad template) or failed (a 5xx such as a webhook it cannot reach, a "
                        + "429, no answer); the pool's creates pause")
                .tag("resource_type", t.type().wire()).tag("variant", t.variant())
                .register(registry));
    }

    /**
     * playpen_pool_creates_refused{resource_type,variant}: 1 while the API server refuses the pool's pod creates (it
     * refused the last one and none has succeeded since, while the pool needs pods), on the leader; 0 otherwise and on
     * the other replicas. The counter playpen_pool_create_refused_total of each configured pool starts at 0.
     */
    public void bindCreateRefusals(PoolPlanner planner, PoolReconciler pool) {
        for (PoolTarget t : planner.desired().keySet()) {
            refusedCounter(t);
            Gauge.builder("playpen_pool_creates_refused", pool, r -> r.createsRefused(t) ? 1 : 0)
                    .description("1 while the API server refuses the pool's pod creates (the last one refused, none "
                            + "succeeded since; the leader's, 0 on the other replicas): see its condition Degraded")
                    .tag("resource_type", t.type().wire()).tag("variant", t.variant()).register(registry);
        }
    }

    private Counter deletedCounter(PoolTarget t, String reason) {
        return deletedCounters.computeIfAbsent(t.key() + '|' + reason, k -> Counter.builder("playpen_pool_deleted_pods")
                .description("idle pods the pools deleted: unhealthy (by problem), stale once replaced, surplus")
                .tag("resource_type", t.type().wire()).tag("variant", t.variant()).tag("reason", reason)
                .register(registry));
    }

    /**
     * playpen_pods{resource_type,variant,state}: each configured pool's idle and claimed pods among {@code pods}. A pod
     * belongs to a pool as the pools see it: a version's pods carry its label form (v1.33.0+k3s1 as v1.33.0-k3s1).
     */
    void bindPods(PoolPlanner planner, Supplier<Collection<Pod>> pods) {
        synchronized (draining) {
            this.podsPlanner = planner;
            this.poolPods = pods;
        }
        for (PoolTarget t : planner.desired().keySet()) {
            podGauges(planner, pods, t);
        }
    }

    /** playpen_pods{state} of one pool: its idle and its claimed pods. */
    private List<Meter> podGauges(PoolPlanner planner, Supplier<Collection<Pod>> pods, PoolTarget t) {
        Predicate<Pod> isTarget = p -> planner.poolOf(p).filter(t::equals).isPresent();
        return List.of(gauge("playpen_pods", "pods by resource type, variant and state", pods,
                isTarget.and(ManagedPods::isIdle), "idle", t),
                gauge("playpen_pods", "pods by resource type, variant and state", pods,
                        isTarget.and(ManagedPods::isClaimed).and(p -> !ManagedPods.isTerminating(p)), "claimed", t));
    }

    private Meter gauge(String name, String help, Supplier<Collection<Pod>> pods, Predicate<Pod> which, String state,
            PoolTarget t) {
        return Gauge.builder(name, () -> pods.get().stream().filter(which).count()).description(help)
                .tag("resource_type", t.type().wire()).tag("variant", t.variant()).tag("state", state).register(registry);
    }

    @Override
    public void created(Pod pod) {
        podsCreated.increment();
    }

    @Override
    public void exhausted(PoolPlan.Exhaustion exhaustion) {
        rangeExhausted.increment();
    }

    @Override
    public void pass(PoolReconciler.Result result, long nanos, boolean failed) {
        reconcileRuns.increment();
        reconcileDuration.record(Duration.ofNanos(nanos));
        if (failed) {
            reconcileErrors.increment();
        }
    }

    @Override
    public void expired(Pod pod, Duration lateness) {
        ttlExpirations.increment();
    }

    private final Map<String, Counter> renewalCounters = new ConcurrentHashMap<>();

    /**
     * playpen_renewals_total{result}, of a renewal the renewer ran: renewed, unchanged, not-found, gone, failed (any
     * other refusal: 5xx).
     */
    @Override
    public void renewal(String result, io.unboundedcloud.playpen.kube.Renewer.Renewal renewal) {
        renewalCounters.computeIfAbsent(result, r -> Counter.builder("playpen_renewals")
                .description("renewals by result").tag("result", r).register(registry)).increment();
    }

    /**
     * A renewal answered {@code code} before the renewer ran: invalid (400, 413, 415: the body, the ttl, a dry
     * run), forbidden (401, 403), failed (any other refusal). 405 is no renewal (a method other than POST).
     */
    public void renewalRefused(int code) {
        if (code == 405) {
            return;
        }
        renewal(code == 400 || code == 413 || code == 415 ? "invalid" : code == 401 || code == 403 ? "forbidden"
                : "failed", null);
    }

}
