package io.unboundedcloud.playpen.model;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.stream.Collectors;

import io.unboundedcloud.playpen.config.Flag;

/**
 * Pools as a read-only kubectl resource ({@code kind: Pool}, cluster-scoped, named runner-amd64, runner-arm64,
 * control-plane-&lt;version&gt;): the objects, the list and the server-side Table kubectl prints, with the conditions
 * Ready, Progressing and Degraded. Condition transition times are this replica's: when it first computed the
 * condition's current status.
 */
public final class PoolViews {
    public static final String KIND = "Pool";
    public static final String LIST_KIND = "PoolList";

    private final String maxSurge;
    /**
     * No pool's pod creates refused: the views of the overloads without a read's refusals (what the refusals are is
     * a question for each read of the pools, see PoolStatuses.createRefusals).
     */
    private static final Function<PoolTarget, String> NONE_REFUSED = t -> null;
    private final Map<String, Instant> transitions = new ConcurrentHashMap<>();

    /** {@code maxSurge} is --pool-max-surge as given (shown in each pool's spec). */
    public PoolViews(String maxSurge) {
        this.maxSurge = maxSurge;
    }

    /** The options of one read: a name (get) or none (list), and how to render. */
    public record Query(String name, List<String[]> fieldTerms, LabelSelector labelSelector, boolean table,
            String tableVersion, String includeObject) {
    }

    /** Pools cannot be watched; what to do instead. */
    public static final String WATCH_UNSUPPORTED = "watch is not supported on pools: list them again instead"
            + " (kubectl get pools), for example every 2 seconds with: watch kubectl get pools";

    /** One condition as the object shows it. */
    public record Condition(String type, String status, String reason, String message) {
    }

    /**
     * Parses a read's query (list options) and Accept header; bad options are IllegalArgumentException (400), a watch
     * is UnsupportedOperationException (405).
     */
    public static Query parseQuery(String name, String rawQuery, String accept) {
        Map<String, String> params = KubeObjects.optionsFor(name, AllocViews.params(rawQuery));
        if (KubeObjects.asksWatch(params)) {
            throw new UnsupportedOperationException(WATCH_UNSUPPORTED);
        }
        KubeObjects.refuseOptionsAListCannotHonour(params);
        // one page holds every pool (a limit is met with all of them and no continue token), so a token can only
        // come from another list: answering the whole list again would repeat the pools to a client paging
        AllocViews.limit(params);
        if (!params.getOrDefault("continue", "").isEmpty()) {
            throw new IllegalArgumentException("invalid continue token: pools are listed in one page and never "
                    + "return one; list them again without continue");
        }
        List<String[]> terms = new ArrayList<>();
        String fields = params.getOrDefault("fieldSelector", "");
        if (!fields.isBlank()) {
            for (String term : fields.split(",", -1)) {
                String t = term.trim();
                if (t.isEmpty()) {
                    continue; // an empty term (a trailing comma) selects nothing more, as kube-apiserver reads it
                }
                String op = t.contains("!=") ? "!=" : t.contains("==") ? "==" : t.contains("=") ? "=" : null;
                if (op == null) {
                    throw new IllegalArgumentException("invalid fieldSelector: " + AllocViews.quoteShort(t)
                            + ": each term must be key=value, key==value or key!=value");
                }
                String key = t.substring(0, t.indexOf(op)).trim();
                if (!key.equals("metadata.name")) {
                    throw new IllegalArgumentException("field label not supported: " + AllocViews.quoteShort(key)
                            + " (pools support metadata.name only)");
                }
                terms.add(new String[] {key, op, t.substring(t.indexOf(op) + op.length()).trim()});
            }
        }
        LabelSelector labels = KubeObjects.labelSelector(params);
        String include = KubeObjects.includeObject(params);
        String tableVersion = AllocViews.tableVersion(accept);
        return new Query(name, terms, labels, tableVersion != null, tableVersion, include);
    }

    /** The pools the query asks for, in order (configured pools in flag order, then draining ones). */
    public static List<PoolStatus> select(Collection<PoolStatus> pools, Query q) {
        return pools.stream()
                .filter(p -> q.name() == null || q.name().equals(p.name()))
                .filter(p -> q.labelSelector().matches(labels(p)))
                .filter(p -> q.fieldTerms().stream().allMatch(t -> t[1].equals("!=") != p.name().equals(t[2])))
                .toList();
    }

    private static Map<String, String> labels(PoolStatus p) {
        Map<String, String> l = new LinkedHashMap<>();
        l.put(PlaypenKeys.RESOURCE_TYPE, p.target().type().wire());
        if (p.target().type() == ResourceType.RUNNER) {
            l.put(PlaypenKeys.ARCHITECTURE, p.target().variant());
        } else {
            l.put(PlaypenKeys.KUBERNETES_VERSION, PodTemplates.kubernetesVersionLabel(p.target().variant()));
        }
        return l;
    }

    /** Ready, Progressing and Degraded of a pool at {@code now}, no pod creates of it refused. */
    public List<Condition> conditions(PoolStatus p, Instant now) {
        return conditions(p, now, NONE_REFUSED);
    }

    /**
     * The same, with {@code refusals} saying why a pool's pod creates are refused (null: they are not) for this
     * read, in place of the function the views were made with.
     */
    public List<Condition> conditions(PoolStatus p, Instant now, Function<PoolTarget, String> refusals) {
        List<Condition> out = new ArrayList<>();
        String noIp = p.noExternalIp() > 0 ? ", " + p.noExternalIp() + " more ready on a node without an ExternalIP"
                + " (never handed out: give the node an ExternalIP, or cordon it and delete the pod)" : "";
        noIp += p.onNodesInDoubt() > 0 ? ", " + p.onNodesInDoubt() + " more on a node that is NotReady or gone (never"
                + " handed out; replaced once the node has been so for --pool-node-not-ready-grace)" : "";
        out.add(p.ready() >= p.desired()
                ? new Condition("Ready", "True", "Full", p.ready() + " of " + p.desired() + " idle pods ready" + noIp)
                : new Condition("Ready", "False", p.noExternalIp() > 0 ? "NoExternalIP" : "Short", p.ready() + " of "
                        + p.desired() + " idle pods ready" + (p.starting() > 0 ? ", " + p.starting() + " starting" : "")
                        + noIp));
        if (!p.configured()) {
            // healthy pods without a template hash are never surplus (PoolPlanner), and this operator hands out no
            // pod of a version it does not offer: only the Go operator or a person removes them
            out.add(new Condition("Progressing", "True", "Draining", "no flag asks for this pool any more: idle pods "
                    + "this operator made are deleted; healthy idle pods without a template hash (made by the Go "
                    + "operator) are never deleted: they stay until the Go operator hands them out or you delete them "
                    + "(kubectl delete pod); allocated ones stay until released"));
        } else if (p.stale() > 0 && p.desired() == 0) {
            // a pool that wants none rolls nothing out (its surge is 0 whatever the flag says)
            out.add(new Condition("Progressing", "True", "StaleInUse", p.stale() + " idle pod(s) run an older "
                    + "template; the pool wants no idle pods, so none is replaced: those the pool made go as surplus, "
                    + "others are handed out until none is left"));
        } else if (p.stale() > 0) {
            out.add(maxSurge.trim().matches("0+%?")
                    ? new Condition("Progressing", "True", "StaleInUse", p.stale() + " idle pod(s) run an older "
                            + "template; rolling replacement is off (--pool-max-surge=0), they are handed out only "
                            + "when no current pod is usable")
                    : new Condition("Progressing", "True", "RollingOut", p.stale() + " idle pod(s) run an older "
                            + "template; each is deleted once a current pod is ready (surge " + maxSurge + ")"));
        } else if (p.starting() > 0) {
            out.add(new Condition("Progressing", "True", "Starting", p.starting() + " pod(s) of template "
                    + p.templateHash() + " starting"));
        } else {
            out.add(new Condition("Progressing", "False", "Current", "every idle pod runs template " + p.templateHash()));
        }
        PoolBackoff.View b = p.backoff();
        String refused = refusals.apply(p.target());
        if (refused != null) {
            out.add(new Condition("Degraded", "True", "CreateRefused", refused));
        } else if (b.backingOff()) {
            out.add(new Condition("Degraded", "True", "BackOff", b.failures() + " replacement(s) in a row never became "
                    + "ready; " + (b.pausedAt(now) ? "the pool creates again in " + b.remainingSeconds(now) + " s"
                            : "the pool creates one pod at a time") + " until one is ready"));
        } else if (p.unhealthy() > 0) {
            Map<String, Integer> all = new java.util.TreeMap<>(p.unhealthyByReason());
            p.unhealthyAllocatedByReason().forEach((k, v) -> all.merge(k, v, Integer::sum));
            out.add(new Condition("Degraded", "True", "UnhealthyPods", p.unhealthy() + " unhealthy pod(s): "
                    + all.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(", "))
                    + " (idle ones are replaced, allocated ones left to their allocation)"
                    + (p.portsExhausted() ? "; the hostPort range has no free port for the pods the pool wants: "
                            + widenRange(p.target()) : "")));
        } else if (p.portsExhausted()) {
            out.add(new Condition("Degraded", "True", "HostPortsExhausted", "the pool wants more pods than its "
                    + "hostPort range has free ports; " + widenRange(p.target())));
        } else {
            out.add(new Condition("Degraded", "False", "Healthy", "no unhealthy pods, no back-off"));
        }
        return out;
    }

    /** What to do about a full hostPort range: the flags of the kind's range. */
    private static String widenRange(PoolTarget target) {
        boolean runner = target.type() == ResourceType.RUNNER;
        Flag start = runner ? Flag.RUNNER_WIREGUARD_HOST_PORT_START : Flag.CONTROL_PLANE_APISERVER_HOST_PORT_START;
        Flag end = runner ? Flag.RUNNER_WIREGUARD_HOST_PORT_END : Flag.CONTROL_PLANE_APISERVER_HOST_PORT_END;
        return "widen the range (--" + start.flagName() + ", --" + end.flagName() + ") or free the ports other pods hold";
    }

    /** The Pool object of {@code kubectl get pool <name> -o yaml}. */
    public Map<String, Object> object(PoolStatus p, Instant now) {
        return object(p, now, NONE_REFUSED);
    }

    /** The same, its CreateRefused condition from {@code refusals}. */
    public Map<String, Object> object(PoolStatus p, Instant now, Function<PoolTarget, String> refusals) {
        Map<String, Object> metadata = new LinkedHashMap<>();
        metadata.put("name", p.name());
        metadata.put("resourceVersion", "");
        if (p.oldest() != null) {
            metadata.put("creationTimestamp", p.oldest().toString());
        }
        metadata.put("labels", labels(p));
        Map<String, Object> spec = new LinkedHashMap<>();
        spec.put("resourceType", p.target().type().wire());
        if (p.target().type() == ResourceType.RUNNER) {
            spec.put("architecture", p.target().variant());
        } else {
            spec.put("kubernetesVersion", p.target().variant());
        }
        spec.put("minIdle", p.minimum());
        spec.put("maxIdle", p.maximum());
        spec.put("maxSurge", maxSurge);
        spec.put("templateHash", p.templateHash());
        spec.put("image", p.image());
        Map<String, Object> status = new LinkedHashMap<>();
        status.put("desired", p.desired());
        status.put("ready", p.ready());
        status.put("idle", p.idle());
        status.put("allocated", p.allocated());
        status.put("stale", p.stale());
        status.put("starting", p.starting());
        status.put("unhealthy", p.unhealthy());
        if (p.noExternalIp() > 0) {
            status.put("readyWithoutExternalIP", p.noExternalIp());
        }
        if (!p.unhealthyByReason().isEmpty()) {
            status.put("unhealthyIdle", new java.util.TreeMap<>(p.unhealthyByReason()));
        }
        if (!p.unhealthyAllocatedByReason().isEmpty()) {
            status.put("unhealthyAllocated", new java.util.TreeMap<>(p.unhealthyAllocatedByReason()));
        }
        if (p.backoff().backingOff()) {
            Map<String, Object> b = new LinkedHashMap<>();
            b.put("failures", p.backoff().failures());
            b.put("delaySeconds", p.backoff().delay().toSeconds());
            b.put("nextCreateAt", p.backoff().nextCreateAt().toString());
            status.put("backoff", b);
        }
        status.put("allocationsPerSecond", Math.round(p.allocationRate() * 100) / 100.0);
        if (p.timeToReady() != null) {
            status.put("timeToReadySeconds", Math.round(p.timeToReady().toMillis() / 10.0) / 100.0);
        }
        List<Object> conditions = new ArrayList<>();
        for (Condition c : conditions(p, now, refusals)) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("type", c.type());
            m.put("status", c.status());
            m.put("lastTransitionTime", transition(p.name(), c, now).toString());
            m.put("reason", c.reason());
            m.put("message", c.message());
            conditions.add(m);
        }
        status.put("conditions", conditions);
        return KubeObjects.object(KIND, metadata, spec, status);
    }

    /** When this replica first saw the condition with its current status (truncated to seconds). */
    private Instant transition(String pool, Condition c, Instant now) {
        String key = pool + "/" + c.type();
        Instant at = now.truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
        String k = key + "=" + c.status();
        Instant seen = transitions.computeIfAbsent(k, x -> at);
        transitions.remove(key + "=" + ("True".equals(c.status()) ? "False" : "True"));
        return seen;
    }

    /** The PoolList of {@code kubectl get pools -o yaml}. */
    public Map<String, Object> list(List<PoolStatus> pools, Instant now) {
        return list(pools, now, NONE_REFUSED);
    }

    /** The same, the CreateRefused conditions from {@code refusals}. */
    public Map<String, Object> list(List<PoolStatus> pools, Instant now, Function<PoolTarget, String> refusals) {
        return KubeObjects.list(LIST_KIND, Map.of("resourceVersion", ""), pools.stream()
                .map(p -> object(p, now, refusals)).toList());
    }

    /** The columns, in order; priority 1 ones show with -o wide only. */
    static final List<Map<String, Object>> COLUMNS = List.of(
            KubeObjects.column("Name", "string", "name", 0, "The pool: runner-<arch> or control-plane-<version>."),
            KubeObjects.column("Type", "string", "", 0, "The resource type: runner or controlPlane."),
            KubeObjects.column("Arch/Version", "string", "", 0, "The CPU architecture of a runner pool, the Kubernetes "
                    + "version of a control-plane pool."),
            KubeObjects.column("Desired", "integer", "", 0, "Idle pods the pool wants now."),
            KubeObjects.column("Ready", "integer", "", 0, "Idle pods ready to be handed out."),
            KubeObjects.column("Idle", "integer", "", 0, "Unclaimed pods: starting, ready, stale and unhealthy ones."),
            KubeObjects.column("Allocated", "integer", "", 0, "Claimed pods."),
            KubeObjects.column("Stale", "integer", "", 0, "Idle pods of an older template."),
            KubeObjects.column("Unhealthy", "integer", "", 0, "Unhealthy pods, idle and allocated."),
            KubeObjects.column("Age", "string", "", 0, "Age of the pool's oldest pod."),
            KubeObjects.column("Template", "string", "", 1, "The hash current pods carry in their template-hash label."),
            KubeObjects.column("Image", "string", "", 1, "The image of the template's first container."));

    /** A meta.k8s.io Table as kubectl get prints it. */
    public Map<String, Object> table(List<PoolStatus> pools, Query q, Instant now) {
        return table(pools, q, now, NONE_REFUSED);
    }

    /** The same, the objects it includes with their CreateRefused conditions from {@code refusals}. */
    public Map<String, Object> table(List<PoolStatus> pools, Query q, Instant now,
            Function<PoolTarget, String> refusals) {
        List<Object> rows = new ArrayList<>();
        for (PoolStatus p : pools) {
            List<Object> cells = List.of(p.name(), p.target().type().wire(), p.target().variant(), p.desired(),
                    p.ready(), p.idle(), p.allocated(), p.stale(), p.unhealthy(),
                    p.oldest() == null ? "<none>" : AllocViews.humanDuration(Duration.between(p.oldest(), now)),
                    p.templateHash(), p.image());
            rows.add(KubeObjects.row(cells, q.includeObject(), q.tableVersion(), () -> object(p, now, refusals)));
        }
        return KubeObjects.table(q.tableVersion(), Map.of("resourceVersion", ""), COLUMNS, rows);
    }
}
