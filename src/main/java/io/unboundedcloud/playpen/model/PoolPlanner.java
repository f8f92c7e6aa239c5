package io.unboundedcloud.playpen.model;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.config.PoolPolicy;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * Plans one pool pass: per runner architecture and per control-plane version, which idle pods to delete and how many
 * to create on the lowest free hostPorts. The rules, per pool (D = desired idle pods, S = --pool-max-surge):
 * <ol>
 * <li>Idle pods with a {@link PoolHealth.Problem} are deleted; allocated ones are only reported.</li>
 * <li>A stale pod (another template) is deleted once enough ready pods remain without it: a ready stale pod when
 *     ready idle pods &gt; D, a stale pod still starting when ready idle pods &gt;= D.</li>
 * <li>Beyond D + (S while stale pods remain), current pods are surplus: the youngest not-ready one first, a ready
 *     one only while ready idle pods &gt; D. Stale pods always go before current ones. Only pods the pool made (they
 *     carry the template-hash label) are ever surplus: a pod made by the Go operator, by hand or by a version
 *     without the label is used, healed and rolled, never removed to lower the count.</li>
 * <li>Creates: min(D − current pods, D + (S while stale pods remain) − all healthy idle pods), never negative; a
 *     pool whose replacements keep failing ({@link PoolBackoff}) creates nothing while paused and then one pod at a
 *     time. A pool that needs no create, every idle pod it keeps ready, shows no back-off.</li>
 * </ol>
 * Pods created earlier but not seen yet ("expectations") count as current starting pods and keep their ports, so a
 * quick second pass does not create twice. While the node cache has not synced ({@link Context#nodesPending}), rules
 * 2 and 3 delete nothing: a pod ready in itself may be on a node that is not Ready, and they count on the ready pods.
 * Pure: the clock, the nodes, the back-off and the demand come in.
 * <p>
 * The pods come counted ({@link PoolTally}): a pass judges each pool's idle pods in full, but of the allocated pods
 * only those that could be unhealthy, so that its cost does not grow with the pods handed out.
 */
public final class PoolPlanner {
    private final OperatorConfig config;
    private final PodTemplates templates;
    private final PoolPolicy policy;
    private final PoolHealth.Limits limits;
    private final Map<PoolTarget, Integer> desired;
    private final Map<PoolTarget, Template> current = new java.util.concurrent.ConcurrentHashMap<>();

    /** A pool's template: one member (any port) and its hash. */
    public record Template(Pod sample, String hash) {
    }

    /**
     * What a pass knows besides the pods.
     *
     * @param now     the time health is judged at (null: no ready timeout, no node grace)
     * @param nodes   finds a node by name; null when the node cache is not synced (node checks are skipped)
     * @param backoff per pool, its back-off (absent: none)
     * @param desired per pool, the demand-aware buffer's size (absent: the count flag)
     * @param rates   per pool, allocations per second (for the status only)
     * @param readyTimes per pool, the recent time-to-ready (for the status only)
     * @param nodesPending the nodes are checked, but their cache has not synced yet ({@code nodes} is null): which
     *                pods are on a node that is gone or not Ready is unknown, so a pod ready in itself may be cut
     *                off, and no stale or surplus pod is deleted (a rollout or a scale-down counts on the ready
     *                pods); unhealthy pods are deleted and creates go on
     */
    public record Context(Instant now, Function<String, Optional<Node>> nodes, Map<PoolTarget, PoolBackoff.View> backoff,
            Map<PoolTarget, Integer> desired, Map<PoolTarget, Double> rates, Map<PoolTarget, Duration> readyTimes,
            boolean nodesPending) {
        public static final Context NONE = new Context(null, null, Map.of(), Map.of(), Map.of(), Map.of());

        /** Nodes known, or not checked at all ({@code nodes} null). */
        public Context(Instant now, Function<String, Optional<Node>> nodes, Map<PoolTarget, PoolBackoff.View> backoff,
                Map<PoolTarget, Integer> desired, Map<PoolTarget, Double> rates, Map<PoolTarget, Duration> readyTimes) {
            this(now, nodes, backoff, desired, rates, readyTimes, false);
        }
    }

    public PoolPlanner(OperatorConfig config, PodTemplates templates) {
        this.config = Objects.requireNonNull(config, "config");
        this.templates = Objects.requireNonNull(templates, "templates");
        this.policy = config.pools();
        this.limits = new PoolHealth.Limits(policy.readyTimeout(), policy.nodeNotReadyGrace());
        Map<PoolTarget, Integer> d = new LinkedHashMap<>();
        d.put(PoolTarget.runner(ManagedPods.AMD64), config.runnerAmd64Count());
        d.put(PoolTarget.runner(ManagedPods.ARM64), config.runnerArm64Count());
        for (String version : config.controlPlaneVersions()) {
            d.put(PoolTarget.controlPlane(version), config.controlPlaneCount());
        }
        this.desired = Collections.unmodifiableMap(d);
    }

    /**
     * The pods a rollout of a pool that wants {@code desired} idle pods may create beyond them (--pool-max-surge);
     * 0: the pool rolls nothing out, its stale pods stay until they are allocated (rolling replacement is off) or
     * go as surplus (a pool that wants none replaces nothing).
     */
    public int surge(int desired) {
        return desired > 0 ? policy.surge(desired) : 0;
    }

    /** Every configured pool with its desired idle count (the count flags), runners first, then versions in flag order. */
    public Map<PoolTarget, Integer> desired() {
        return desired;
    }

    /**
     * Whether this operator keeps pods of {@code target} at all: its count flag is above 0, or the demand-aware
     * buffer may grow it from 0. Otherwise only pods made outside the operator are ever handed out of that kind.
     */
    public boolean keeps(PoolTarget target) {
        Integer count = desired.get(target);
        return count != null && (count > 0 || policy.demandBuffer());
    }

    /** The limits health is judged by. */
    public PoolHealth.Limits limits() {
        return limits;
    }

    /** The template of a pool (built once per pool). */
    public Template template(PoolTarget target) {
        return current.computeIfAbsent(target, t -> {
            Pod sample = templates.forTarget(t, HostPortPlanner.forKind(config, t.type()).range().start());
            return new Template(sample, TemplateHashes.of(sample));
        });
    }

    /** The pod the pool creates for {@code target} on {@code hostPort}: the template, with its hash recorded. */
    public Pod podFor(PoolTarget target, int hostPort) {
        return TemplateHashes.stamp(templates.forTarget(target, hostPort), template(target).hash());
    }

    /** {@link #plan(Collection, Set, Context)} without health, back-off or demand: only the counts and templates. */
    public PoolPlan plan(Collection<Pod> pods, Set<String> expected) {
        return plan(pods, expected, Context.NONE);
    }

    /**
     * @param pods     the pods of the runner namespace as the cache sees them (unmanaged pods are ignored)
     * @param expected names of pods this process created that {@code pods} does not show yet
     */
    public PoolPlan plan(Collection<Pod> pods, Set<String> expected, Context ctx) {
        PoolTally tally = newTally();
        for (Pod pod : pods) {
            tally.put(pod);
        }
        return plan(tally, expected, ctx);
    }

    /** An empty tally of pods for this planner's pools (the pool reconciler keeps one up to date from the watch). */
    public PoolTally newTally() {
        return new PoolTally(this::targetOf, desired.keySet());
    }

    /**
     * The pass for the pods {@code tally} counts now: the same plan as {@link #plan(Collection, Set, Context)} over
     * those pods, in time that grows with the pools' idle pods, not with all pods.
     */
    public PoolPlan plan(PoolTally tally, Set<String> expected, Context ctx) {
        return plan(tally, expected, Map.of(), ctx);
    }

    /**
     * As {@link #plan(PoolTally, Set, Context)}, with ports known to be held by pods {@code tally} does not count
     * (the pool reconciler's creates met them taken): used like the tally's own.
     */
    public PoolPlan plan(PoolTally tally, Set<String> expected, Map<ResourceType, Set<Integer>> heldElsewhere,
            Context ctx) {
        return plan(tally, expected, heldElsewhere, Map.of(), ctx);
    }

    /**
     * As {@link #plan(PoolTally, Set, Map, Context)}, with ports {@code inDoubt}: a create on them failed without a
     * clear answer (a 5xx, a 429, no answer) and was not there when read back, so the API server may still commit it.
     * They steer: no pod is planned on them. They do not fill the range: a pool that finds no other port is not told
     * exhausted (the range is not what stops it, and the doubt lapses).
     */
    public PoolPlan plan(PoolTally tally, Set<String> expected, Map<ResourceType, Set<Integer>> heldElsewhere,
            Map<ResourceType, Set<Integer>> inDoubt, Context ctx) {
        PoolTally.Snapshot counted = tally.snapshot(expected, nodeInDoubt(ctx));
        Map<ResourceType, Set<Integer>> used = new EnumMap<>(ResourceType.class);
        counted.used().forEach((type, ports) -> used.put(type, new PoolPlan.Overlaid(ports)));
        Map<PoolTarget, Members> members = new LinkedHashMap<>();
        for (PoolTally.PoolView view : counted.pools()) {
            Members m = new Members(view.target(), view.configured());
            m.allocated = view.allocated();
            m.oldest = view.oldest();
            view.idle().forEach(pod -> m.addIdle(pod, ctx));
            view.allocatedToJudge().forEach(pod -> m.judgeAllocated(pod, ctx));
            members.put(view.target(), m);
        }
        for (String name : counted.unseen()) {
            countExpected(name, used, members);
        }
        heldElsewhere.forEach((type, ports) -> used.get(type).addAll(ports));
        Map<ResourceType, Set<Integer>> doubtOnly = new EnumMap<>(ResourceType.class);
        inDoubt.forEach((type, ports) -> {
            Set<Integer> kindUsed = used.get(type);
            Set<Integer> only = new java.util.HashSet<>();
            for (int port : ports) {
                if (kindUsed.add(port)) {
                    only.add(port);
                }
            }
            doubtOnly.put(type, only);
        });

        List<PoolPlan.PlannedPod> toCreate = new ArrayList<>();
        List<PoolPlan.Exhaustion> exhausted = new ArrayList<>();
        List<PoolPlan.Deletion> toDelete = new ArrayList<>();
        List<PoolPlan.Unhealthy> reports = new ArrayList<>();
        Map<PoolTarget, PoolStatus> statuses = new LinkedHashMap<>();
        for (Members m : members.values()) {
            PoolTarget target = m.target;
            int min = m.configured ? desired.get(target) : 0;
            int max = m.configured && policy.demandBuffer() ? Math.max(min, policy.maxIdle()) : min;
            int want = m.configured ? Math.max(min, Math.min(max, ctx.desired().getOrDefault(target, min))) : 0;
            PoolBackoff.View remembered = ctx.backoff().getOrDefault(target, PoolBackoff.View.NONE);
            Decision d = decide(m, want, surge(want), remembered, ctx.now(), ctx.nodesPending());
            PoolBackoff.View backoff = d.settled() ? PoolBackoff.View.NONE : remembered;
            m.unhealthy.forEach(u -> toDelete.add(new PoolPlan.Deletion(target, u.pod, PoolPlan.Why.UNHEALTHY, u.problem)));
            d.deletions.forEach(x -> toDelete.add(x));
            reports.addAll(m.reports);
            boolean short_ = false;
            if (d.creates > 0) {
                // one shared used-set per kind, so no two pods of one pass get the same port
                Set<Integer> kindUsed = used.get(target.type());
                HostPortPlanner ports = HostPortPlanner.forKind(config, target.type());
                HostPortPlanner.Allocation allocation = ports.allocate(kindUsed, d.creates);
                for (int port : allocation.ports()) {
                    kindUsed.add(port);
                    toCreate.add(new PoolPlan.PlannedPod(target, port, podFor(target, port)));
                }
                int shortfall = allocation.shortfall();
                Set<Integer> doubted = doubtOnly.getOrDefault(target.type(), Set.of());
                if (shortfall > 0 && !doubted.isEmpty()) {
                    // judged on the ports pods hold: the ports in doubt only steer
                    Set<Integer> held = new java.util.HashSet<>(kindUsed);
                    held.removeAll(doubted);
                    shortfall = ports.allocate(held, d.creates).shortfall();
                }
                if (shortfall > 0) {
                    short_ = true;
                    exhausted.add(new PoolPlan.Exhaustion(target, allocation.range(), shortfall));
                }
            }
            Template tpl = template(target);
            statuses.put(target, new PoolStatus(target, m.configured, min, max, want, m.readyCount(), m.idle,
                    m.allocated, m.stale.size(), m.unhealthy.size() + m.reports.size(),
                    m.startingCount(), Map.copyOf(m.byReason), Map.copyOf(m.allocatedByReason), tpl.hash(),
                    tpl.sample().getSpec().getContainers().get(0).getImage(), backoff, short_, m.oldest,
                    ctx.rates().getOrDefault(target, 0.0), ctx.readyTimes().get(target), m.onNodesWithoutExternalIp,
                    m.onNodesInDoubt));
        }

        Map<ResourceType, Set<Integer>> usedOut = new EnumMap<>(ResourceType.class);
        used.forEach((type, set) -> usedOut.put(type, Collections.unmodifiableSet(set)));
        return new PoolPlan(List.copyOf(toCreate), List.copyOf(exhausted), Collections.unmodifiableMap(usedOut),
                List.copyOf(toDelete), List.copyOf(reports),
                Collections.unmodifiableMap(statuses));
    }

    /**
     * What the rules decide for one pool besides the unhealthy pods (always deleted); {@code settled}: the pool needs
     * no new pod and every idle pod it keeps is ready, so no back-off applies to it.
     */
    record Decision(List<PoolPlan.Deletion> deletions, int creates, boolean settled) {
    }

    /**
     * Rules 2 to 4 of the class comment over one pool's healthy idle pods; {@code keepAll}: the ready pods are not
     * known for sure (the nodes are not known yet), so rules 2 and 3 delete nothing and the creates count every pod.
     */
    static Decision decide(Members m, int want, int surge, PoolBackoff.View backoff, Instant now, boolean keepAll) {
        List<PoolPlan.Deletion> out = new ArrayList<>();
        int ready = m.readyCount();
        // the ready pods the rules count on: a stale or surplus delete that leaves enough of them goes ahead only if
        // enough of them are still idle when it is sent (PoolReconciler); listed when the first such delete is
        // planned, so only for a pool that deletes one
        List<Pod> readyNow = null;
        int total = m.healthyIdle();
        int stale = m.stale.size();
        // stale pods first: not-ready ones, then ready ones, oldest first
        List<Member> staleOrder = new ArrayList<>(m.stale);
        staleOrder.sort(Comparator.comparing((Member x) -> x.ready).thenComparing(OLDEST_FIRST));
        for (Member s : keepAll ? List.<Member>of() : staleOrder) {
            if ((surge == 0 || want == 0) && TemplateHashes.recorded(s.pod).isEmpty()) {
                // a pod the pool did not make goes only when a current pod takes its place: never as surplus
                continue;
            }
            if (s.ready ? ready - 1 >= want : ready >= want) {
                if (readyNow == null && want > 0) {
                    readyNow = readyPods(m);
                }
                // with rolling off (S = 0) this only happens when the pool holds more than it wants; a pool that
                // wants none (draining, or a count of 0) replaces nothing: its pods go as surplus, whatever the surge
                out.add(new PoolPlan.Deletion(m.target, s.pod, surge > 0 && want > 0 ? PoolPlan.Why.STALE
                        : PoolPlan.Why.SURPLUS, null, want, want > 0 ? readyNow : List.of()));
                stale--;
                total--;
                if (s.ready) {
                    ready--;
                }
            }
        }
        // then surplus current pods: not-ready ones youngest first, then ready ones youngest first
        List<Member> currentOrder = new ArrayList<>(m.currentStarting);
        currentOrder.sort(OLDEST_FIRST.reversed());
        List<Member> readyOrder = new ArrayList<>(m.currentReady);
        readyOrder.sort(OLDEST_FIRST.reversed());
        currentOrder.addAll(readyOrder);
        for (Member c : keepAll ? List.<Member>of() : currentOrder) {
            int cap = want + (stale > 0 ? surge : 0);
            if (total <= cap) {
                break;
            }
            if (c.ready && ready - 1 < want || TemplateHashes.recorded(c.pod).isEmpty()) {
                continue; // a pod the pool did not make (no template hash) is used, never removed as surplus
            }
            if (readyNow == null && c.ready && want > 0) {
                readyNow = readyPods(m);
            }
            out.add(new PoolPlan.Deletion(m.target, c.pod, PoolPlan.Why.SURPLUS, null, c.ready ? want : 0,
                    c.ready && want > 0 ? readyNow : List.of()));
            total--;
            if (c.ready) {
                ready--;
            }
        }
        int currentLeft = total - stale;
        int creates = Math.max(0, Math.min(want - currentLeft, want + (stale > 0 ? surge : 0) - total));
        // starting as the status counts it: not a pod only lacking an ExternalIP, nor one ready in itself on a node
        // that is gone or not Ready (it never becomes ready there: the node grace replaces it)
        boolean starting = m.expected > 0 || m.currentStarting.stream()
                .anyMatch(x -> !x.noExternalIp() && !x.cutOff() && out.stream().noneMatch(d -> d.pod() == x.pod));
        boolean cutOffKept = m.currentStarting.stream()
                .anyMatch(x -> x.cutOff() && out.stream().noneMatch(d -> d.pod() == x.pod));
        // a pool that needs no new pod, every idle pod it keeps ready and none being replaced, has nothing to back
        // off from: its back-off is not shown (nor does it wake a pass); a pod still starting may yet fail, and a pod
        // on a node in doubt is replaced once the grace is over
        boolean settled = creates == 0 && !starting && !cutOffKept && m.unhealthy.isEmpty() && m.stale.stream()
                .allMatch(x -> x.ready || out.stream().anyMatch(d -> d.pod() == x.pod));
        if (creates > 0 && backoff.backingOff()) {
            // paused: nothing; after the pause one pod at a time, and none while one is still starting
            creates = backoff.pausedAt(now) || starting ? 0 : 1;
        }
        return new Decision(out, creates, settled);
    }

    /** The pool's ready idle pods, current and stale, as the rules count them. */
    private static List<Pod> readyPods(Members m) {
        List<Pod> pods = new ArrayList<>();
        m.currentReady.forEach(x -> pods.add(x.pod));
        m.stale.stream().filter(Member::ready).forEach(x -> pods.add(x.pod));
        return List.copyOf(pods);
    }

    private static final Comparator<Member> OLDEST_FIRST = Comparator.comparing((Member x) -> x.created)
            .thenComparingInt(Member::hostPort).thenComparing(x -> ManagedPods.name(x.pod));

    /**
     * One healthy idle pod as the rules see it; {@code cutOff}: ready in itself, but on a node that is gone or not
     * Ready (not handed out, not starting either); {@code hostPort}: its host port (0 if none), read once for the
     * sorts, which compare pods created in the same second by it.
     */
    record Member(Pod pod, boolean ready, Instant created, boolean noExternalIp, boolean cutOff, int hostPort) {
    }

    record Sick(Pod pod, PoolHealth.Problem problem) {
    }

    /** One pool's pods, sorted into what the rules count. */
    final class Members {
        final PoolTarget target;
        final boolean configured;
        final List<Member> currentReady = new ArrayList<>();
        final List<Member> currentStarting = new ArrayList<>();
        final List<Member> stale = new ArrayList<>();
        final List<Sick> unhealthy = new ArrayList<>();
        final List<PoolPlan.Unhealthy> reports = new ArrayList<>();
        final Map<String, Integer> byReason = new TreeMap<>();
        final Map<String, Integer> allocatedByReason = new TreeMap<>();
        int expected;
        int idle;
        /** healthy idle pods ready but on a node without an ExternalIP: never handed out, not counted ready */
        int onNodesWithoutExternalIp;
        /** healthy idle pods ready in themselves on a node that is gone or not Ready: neither ready nor starting */
        int onNodesInDoubt;
        int allocated;
        Instant oldest;

        Members(PoolTarget target, boolean configured) {
            this.target = target;
            this.configured = configured;
        }

        /** An idle pod of the pool (unclaimed, not terminating, a hostPort on the named port). */
        void addIdle(Pod pod, Context ctx) {
            idle++;
            Optional<PoolHealth.Problem> problem = problem(pod, ctx);
            if (problem.isPresent()) {
                unhealthy.add(new Sick(pod, problem.get()));
                byReason.merge(problem.get().reason(), 1, Integer::sum);
                return;
            }
            Template tpl = template(target);
            Instant created = PoolHealth.instant(pod.getMetadata().getCreationTimestamp()).orElse(Instant.EPOCH);
            // a pod on a node that is gone or not Ready is never handed out (PoolHandOut, Candidates), whatever the
            // grace: until the grace replaces it, it is not ready capacity a rollout or a scale-down may count on
            String node = pod.getSpec() == null ? null : pod.getSpec().getNodeName();
            boolean onNodeInDoubt = node != null && !node.isEmpty() && nodeInDoubt(ctx).test(node);
            boolean ready = PoolHealth.ready(pod) && !onNodeInDoubt;
            // nor is a ready pod on a node without an ExternalIP (the endpoint is that address): counted apart
            boolean noExternalIp = ready && node != null && !node.isEmpty() && ctx.now() != null && ctx.nodes() != null
                    && ctx.nodes().apply(node).map(n -> !hasExternalIp(n)).orElse(false);
            if (noExternalIp) {
                onNodesWithoutExternalIp++;
            }
            boolean cutOff = onNodeInDoubt && PoolHealth.ready(pod);
            if (cutOff) {
                onNodesInDoubt++;
            }
            Member member = new Member(pod, ready && !noExternalIp, created, noExternalIp, cutOff,
                    ManagedPods.hostPort(pod).orElse(0));
            if (!TemplateHashes.isCurrent(pod, tpl.hash(), tpl.sample())) {
                stale.add(member);
            } else if (member.ready()) {
                currentReady.add(member);
            } else {
                currentStarting.add(member);
            }
        }

        /** An allocated pod of the pool (already counted) that may be unhealthy: reported when it is. */
        void judgeAllocated(Pod pod, Context ctx) {
            problem(pod, ctx).ifPresent(p -> {
                reports.add(new PoolPlan.Unhealthy(target, pod, p,
                        PoolHealth.problemSince(pod, p, ctx.nodes()).orElse(null)));
                allocatedByReason.merge(p.reason(), 1, Integer::sum);
            });
        }

        /**
         * Current-template idle pods not ready yet, expected ones included (not those only lacking an ExternalIP, nor
         * those ready in themselves on a node that is gone or not Ready).
         */
        int startingCount() {
            return (int) currentStarting.stream().filter(x -> !x.noExternalIp() && !x.cutOff()).count() + expected;
        }

        int readyCount() {
            return currentReady.size() + (int) stale.stream().filter(Member::ready).count();
        }

        /** Healthy idle pods, expected ones included. */
        int healthyIdle() {
            return currentReady.size() + currentStarting.size() + stale.size() + expected;
        }
    }

    /** What is wrong with a pool pod at the pass's time, if anything (without a time: only how it ended). */
    private Optional<PoolHealth.Problem> problem(Pod pod, Context ctx) {
        return ctx.now() == null
                ? PoolHealth.problem(pod, null, Instant.MIN, new PoolHealth.Limits(Duration.ZERO, limits.nodeNotReadyGrace()))
                : PoolHealth.problem(pod, ctx.nodes(), ctx.now(), limits);
    }

    /** Whether the node has an ExternalIP, the address an allocation's endpoint is published on (as NodeCache reads it). */
    static boolean hasExternalIp(Node node) {
        return node.getStatus() != null && node.getStatus().getAddresses() != null && node.getStatus().getAddresses()
                .stream().anyMatch(a -> "ExternalIP".equals(a.getType()) && a.getAddress() != null
                        && !a.getAddress().isBlank());
    }

    /**
     * Whether a node could make the pods on it unhealthy (gone, or its Ready condition not True): the allocated pods
     * on it are judged on this pass. None without a time or a synced node cache (no node checks then).
     */
    private static java.util.function.Predicate<String> nodeInDoubt(Context ctx) {
        if (ctx.now() == null || ctx.nodes() == null) {
            return node -> false;
        }
        return node -> ctx.nodes().apply(node).map(n -> !PoolHealth.nodeReady(n)).orElse(true);
    }

    /**
     * The pool a managed pod belongs to: a configured one, or (control planes) the pool of a version no flag asks
     * for any more, which then drains.
     */
    public Optional<PoolTarget> poolOf(Pod pod) {
        return targetOf(pod);
    }

    private Optional<PoolTarget> targetOf(Pod pod) {
        Optional<ResourceType> type = ManagedPods.resourceType(pod);
        if (type.isEmpty()) {
            return Optional.empty();
        }
        if (type.get() == ResourceType.RUNNER) {
            PoolTarget t = PoolTarget.runner(ManagedPods.architecture(pod));
            return desired.containsKey(t) ? Optional.of(t) : Optional.empty();
        }
        // The label holds the sanitised version ('+' → '-'), so compare against the sanitised configured one.
        String label = ManagedPods.kubernetesVersion(pod);
        for (PoolTarget t : desired.keySet()) {
            if (t.type() == ResourceType.CONTROL_PLANE && PodTemplates.kubernetesVersionLabel(t.variant()).equals(label)) {
                return Optional.of(t);
            }
        }
        if (label.isEmpty() || !label.matches("v\\d+\\.\\d+\\.\\d+([-.][0-9A-Za-z.-]*)?")) {
            return Optional.empty();
        }
        return Optional.of(PoolTarget.controlPlane(label));
    }

    /**
     * An expected pod is known only by its name, which encodes kind, variant and port. Its port is used even
     * when the name matches no configured pool any more (e.g. a version just removed from the flags).
     */
    private void countExpected(String name, Map<ResourceType, Set<Integer>> used, Map<PoolTarget, Members> members) {
        ResourceType type;
        if (name.startsWith(PodTemplates.RUNNER_NAME_PREFIX)) {
            type = ResourceType.RUNNER;
        } else if (name.startsWith(PodTemplates.CONTROL_PLANE_NAME_PREFIX)) {
            type = ResourceType.CONTROL_PLANE;
        } else {
            return;
        }
        int dash = name.lastIndexOf('-');
        int port;
        try {
            port = Integer.parseInt(name.substring(dash + 1));
        } catch (NumberFormatException e) {
            return;
        }
        used.get(type).add(port);
        for (PoolTarget t : desired.keySet()) {
            if (t.type() != type) {
                continue;
            }
            String expectedName = type == ResourceType.RUNNER
                    ? PodTemplates.runnerName(t.variant(), port)
                    : PodTemplates.controlPlaneName(t.variant(), port);
            if (expectedName.equals(name)) {
                members.get(t).expected++;
                return;
            }
        }
    }

}
