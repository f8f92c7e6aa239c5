package io.unboundedcloud.playpen.model;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.function.Function;

import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * Chooses which idle pods may serve an alloc and in which order to try them: usability as the reference judges it, then the
 * consistent-hash ring order (clockwise from the key's hash, {@link Hashes#ringPosition}) that every replica
 * computes identically. The pod cache keeps the ring sorted, so the hot path starts its walk in O(log N)
 * ({@link #classify} judges each pod it reaches); {@link #select} sorts a whole collection the same way.
 */
public final class Candidates {
    private static final int MAX_REASONS = 10;

    /** A pod that can be claimed now, with the endpoint it would hand out; score = its ring distance from the key. */
    public record Usable(Pod pod, int hostPort, String externalIp, long score) {
    }

    /** How the hot path's walk treats the freshest version of a pod it reaches on the ring. */
    public enum Verdict {
        /** Idle, of the requested kind and usable: try to claim it. */
        USABLE,
        /** Already claimed with this very key (another replica, or a claim the walk's start did not see): replay. */
        CLAIMED_BY_THIS_KEY,
        /** Anything else (claimed by another key, another kind, not usable): go on. */
        SKIP
    }

    /** The ordered usable candidates, plus why the others of the right kind were skipped. */
    public record Selection(List<Usable> ordered, List<String> skipped, int ofKind) {
    }

    /**
     * What decides, beyond a pod's own state, whether an idle pod may be handed out now: the pool's view of its
     * node (NotReady) and of its template (a stale pod is never handed out while a current one is usable).
     */
    @FunctionalInterface
    public interface HandOutPolicy {
        /** Nothing beyond the pod's own state. */
        HandOutPolicy NONE = (kindKey, pod, externalIp) -> null;

        /** Why {@code pod}, usable by its own state, must not be handed out now; null when it may. */
        String refuse(String kindKey, Pod pod, Function<String, Optional<String>> externalIp);
    }

    private final LabelSelector runnerSelector;
    private final HandOutPolicy policy;

    /** Runners are handed out only when they carry every one of these labels with these values. */
    public Candidates(Map<String, String> runnerLabels) {
        this(LabelSelector.equality(runnerLabels));
    }

    /** Runners are handed out only when they match {@code runnerSelector} (--runner-label-selector), as in the reference. */
    public Candidates(LabelSelector runnerSelector) {
        this(runnerSelector, HandOutPolicy.NONE);
    }

    /** As {@link #Candidates(LabelSelector)}, and a pod usable by its own state is handed out only if {@code policy} agrees. */
    public Candidates(LabelSelector runnerSelector, HandOutPolicy policy) {
        this.runnerSelector = runnerSelector;
        this.policy = policy;
    }

    /** {@code externalIp} maps a node name to its ExternalIP (empty when the node is unknown or has none). */
    public Selection select(AllocCommand cmd, Collection<Pod> pods, Function<String, Optional<String>> nodeIps) {
        Function<String, Optional<String>> externalIp = readOnce(nodeIps);
        long seed = Hashes.seed(cmd.keyHash());
        List<Usable> usable = new ArrayList<>();
        List<Pod> skippedPods = new ArrayList<>();
        Map<Pod, String> reasons = new java.util.IdentityHashMap<>();
        int ofKind = 0;
        String want = idleKindKey(cmd);
        for (Pod pod : pods) {
            if (!want.equals(kindKey(pod)) || ManagedPods.isClaimed(pod)) {
                continue;
            }
            ofKind++;
            String why = unusableReason(cmd.resourceType(), pod, externalIp);
            if (why == null) {
                why = policy.refuse(want, pod, externalIp);
            }
            if (why == null) {
                String node = pod.getSpec().getNodeName();
                String name = pod.getMetadata().getName();
                usable.add(new Usable(pod, hostPort(pod, cmd.resourceType()), externalIp.apply(node).orElseThrow(),
                        Hashes.ringDistance(seed, name)));
                continue;
            }
            skippedPods.add(pod);
            reasons.put(pod, why);
        }
        usable.sort(RING_ORDER);
        // the reference reports its reasons in the API server's list order, which is by pod name
        skippedPods.sort(Comparator.comparing(ManagedPods::name));
        return new Selection(usable, skippedPods.stream().map(reasons::get).toList(), ofKind);
    }

    /** Ring order: clockwise distance from the key (unsigned), then the pod name. */
    private static final Comparator<Usable> RING_ORDER = (a, b) -> {
        int c = Long.compareUnsigned(a.score(), b.score());
        return c != 0 ? c : a.pod().getMetadata().getName().compareTo(b.pod().getMetadata().getName());
    };

    /**
     * The lazy form of {@link #select} over a plain collection (tests, tools): the idle pods of the requested
     * kind in ring order, checked for usability only as the walk reaches them. The allocator walks the pod
     * cache's sorted ring instead and judges each pod with {@link #classify}.
     */
    public Walk walk(AllocCommand cmd, Collection<Pod> pods, Function<String, Optional<String>> externalIp) {
        long seed = Hashes.seed(cmd.keyHash());
        List<Scored> scored = new ArrayList<>();
        String want = idleKindKey(cmd);
        for (Pod pod : pods) {
            if (want.equals(kindKey(pod)) && !ManagedPods.isClaimed(pod)) {
                scored.add(new Scored(Hashes.ringDistance(seed, pod.getMetadata().getName()), pod));
            }
        }
        return new Walk(cmd.resourceType(), new PriorityQueue<>(scored), readOnce(externalIp), want, policy);
    }

    /**
     * {@code externalIp} asked once per node, its first answer kept: the node watch can change a node while a pod on
     * it is judged, and a pod judged usable must then be handed out with the address it was judged by (asking again
     * could find none). For one judgement or one walk, not to keep.
     */
    public static Function<String, Optional<String>> readOnce(Function<String, Optional<String>> externalIp) {
        Map<String, Optional<String>> seen = new java.util.HashMap<>();
        return node -> seen.computeIfAbsent(node, externalIp);
    }

    /**
     * How the hot path treats {@code pod} (its freshest known version) when its walk reaches it: claimed with
     * the request's key → replay; idle, of the kind and usable → try it; else skip. A pod being deleted that still
     * carries the key is skipped: its allocation was released or expired (a deletion is never undone), so the key
     * allocates anew elsewhere, as the claim ledger, which counts no terminating claim, then agrees.
     */
    public Verdict classify(AllocCommand cmd, Pod pod, Function<String, Optional<String>> externalIp) {
        if (ManagedPods.isClaimed(pod)) {
            return cmd.keyHash().equals(ManagedPods.keyHash(pod)) && !ManagedPods.isTerminating(pod)
                    ? Verdict.CLAIMED_BY_THIS_KEY : Verdict.SKIP;
        }
        if (!idleKindKey(cmd).equals(kindKey(pod))) {
            return Verdict.SKIP;
        }
        return unusableReason(cmd.resourceType(), pod, externalIp) == null
                && policy.refuse(idleKindKey(cmd), pod, externalIp) == null ? Verdict.USABLE : Verdict.SKIP;
    }

    /** Whether an idle pod of kind {@code type} could be handed out as far as its own state and its node's ExternalIP go. */
    public static boolean usableByItself(ResourceType type, Pod pod, Function<String, Optional<String>> externalIp) {
        return unusableReason(type, pod, externalIp) == null;
    }

    /** The candidate {@link #classify} found usable, with its endpoint. */
    public Usable usable(AllocCommand cmd, Pod pod, Function<String, Optional<String>> externalIp) {
        return new Usable(pod, hostPort(pod, cmd.resourceType()),
                externalIp.apply(pod.getSpec().getNodeName()).orElseThrow(),
                Hashes.ringDistance(Hashes.seed(cmd.keyHash()), pod.getMetadata().getName()));
    }

    private record Scored(long score, Pod pod) implements Comparable<Scored> {
        @Override
        public int compareTo(Scored o) {
            int c = Long.compareUnsigned(score, o.score);
            return c != 0 ? c : pod.getMetadata().getName().compareTo(o.pod.getMetadata().getName());
        }
    }

    /** A lazy walk over candidates in ring order. */
    public static final class Walk {
        private final ResourceType type;
        private final PriorityQueue<Scored> queue;
        private final Function<String, Optional<String>> externalIp;
        private final String kindKey;
        private final HandOutPolicy policy;

        Walk(ResourceType type, PriorityQueue<Scored> queue, Function<String, Optional<String>> externalIp,
                String kindKey, HandOutPolicy policy) {
            this.type = type;
            this.queue = queue;
            this.externalIp = externalIp;
            this.kindKey = kindKey;
            this.policy = policy;
        }

        /** The next usable candidate, or empty when the walk is over. */
        public Optional<Usable> next() {
            Scored s;
            while ((s = queue.poll()) != null) {
                if (unusableReason(type, s.pod(), externalIp) == null
                        && policy.refuse(kindKey, s.pod(), externalIp) == null) {
                    Optional<String> ip = externalIp.apply(s.pod().getSpec().getNodeName());
                    return Optional.of(new Usable(s.pod(), hostPort(s.pod(), type), ip.orElseThrow(), s.score()));
                }
            }
            return Optional.empty();
        }
    }

    /**
     * The 503 message when a selection has nothing to offer, in the reference's words: why each idle pod of the
     * kind was skipped (at most ten reasons, in pod-name order), else that there is no idle pod of the kind.
     */
    public static String unavailableMessage(AllocCommand cmd, Selection selection) {
        boolean runner = cmd.resourceType() == ResourceType.RUNNER;
        String kind = runner ? "runner" : "control-plane";
        if (!selection.skipped().isEmpty()) {
            List<String> reasons = new ArrayList<>(selection.skipped().stream().limit(MAX_REASONS).toList());
            if (selection.skipped().size() > MAX_REASONS) {
                reasons.add("and " + (selection.skipped().size() - MAX_REASONS) + " more");
            }
            return "no idle playpen " + kind + " pods are available with hostPort endpoints on ExternalIP nodes: "
                    + String.join("; ", reasons);
        }
        if (selection.ofKind() == 0) {
            return "no idle " + (runner ? cmd.architecture() : cmd.kubernetesVersion()) + " playpen " + kind
                    + " pods are available";
        }
        // idle pods of the kind existed and were usable, but others claimed them while we walked
        return "no idle playpen " + kind + " pods are available";
    }

    /**
     * The index key of an idle pod that could serve some alloc ("runner/amd64", "controlPlane/v1.33.0"), or
     * null for pods that never can (unmanaged, claimed, runners outside the selector). The watch cache keeps
     * pods indexed by it, so a request walks only the idle pods of its kind.
     */
    public String idleKindKey(Pod pod) {
        return ManagedPods.isClaimed(pod) ? null : kindKey(pod);
    }

    /**
     * The kind of request a pod could serve, claimed or not (null: none), from its labels alone: the pod cache
     * keeps every pod of a kind on that kind's ring, so replicas that know a pod agree on where it is.
     */
    public String kindKey(Pod pod) {
        ResourceType type = ManagedPods.resourceType(pod).orElse(null);
        if (type == ResourceType.RUNNER) {
            if (!runnerSelector.matches(ManagedPods.labels(pod))) {
                return null;
            }
            return "runner/" + ManagedPods.architecture(pod);
        }
        if (type == ResourceType.CONTROL_PLANE) {
            // the label compared with a "v" added when missing, as the reference's podKubernetesVersion does
            String v = ManagedPods.kubernetesVersion(pod);
            return v.isEmpty() ? null : "controlPlane/" + PodTemplates.kubernetesVersionLabel(v);
        }
        return null;
    }


    /** The {@link #idleKindKey(Pod)} of the pods that can serve this request. */
    public static String idleKindKey(AllocCommand cmd) {
        return cmd.resourceType() == ResourceType.RUNNER
                ? "runner/" + cmd.architecture()
                : "controlPlane/" + PodTemplates.kubernetesVersionLabel(cmd.kubernetesVersion());
    }

    boolean isOfKind(AllocCommand cmd, Pod pod) {
        return idleKindKey(cmd).equals(kindKey(pod));
    }


    /**
     * Why an unclaimed pod of the right kind cannot be handed out, in the reference's words and in the order it
     * checks (readiness, server key, hostPort, node, kubeconfig), or null when it can.
     */
    static String unusableReason(ResourceType type, Pod pod, Function<String, Optional<String>> externalIp) {
        String why = notReadyReason(pod);
        if (why != null) {
            return why;
        }
        String name = ManagedPods.name(pod);
        String ns = pod.getMetadata().getNamespace();
        Map<String, String> ann = ManagedPods.annotations(pod);
        if (type == ResourceType.RUNNER) {
            String serverKey = ann.get(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY);
            if (!AllocRequestParser.isWireGuardKey(serverKey == null ? "" : GoStrings.trimSpace(serverKey))) {
                return "runner pod \"" + name + "\" has no valid server WireGuard public key";
            }
            if (hostPort(pod, type) <= 0) {
                return "runner pod " + ns + "/" + name + " has no WireGuard hostPort";
            }
        } else if (hostPort(pod, type) <= 0) {
            return "control-plane pod " + ns + "/" + name + " has no API server hostPort";
        }
        why = nodeReason(pod, externalIp);
        if (why != null) {
            return why;
        }
        if (type == ResourceType.CONTROL_PLANE) {
            return kubeconfigReason(name, ann.get(PlaypenKeys.CONTROL_PLANE_KUBECONFIG));
        }
        return null;
    }

    /**
     * Why a control plane's published kubeconfig cannot be answered, or null when it can: judged as the alloc
     * answer ({@link AllocResponses}) judges it, blank after Go's TrimSpace or not rewritable, so that a pod is never
     * claimed only for its answer to be a 503 on every replay.
     */
    static String kubeconfigReason(String name, String kubeconfig) {
        String k = kubeconfig == null ? "" : GoStrings.trimSpace(kubeconfig);
        if (k.isEmpty()) {
            return "control-plane pod " + name + " has no kubeconfig annotation";
        }
        try {
            KubeconfigRewriter.rewrite(k, "https://0.0.0.0:1", "");
        } catch (IllegalArgumentException e) {
            return "control-plane pod " + name + " has a kubeconfig annotation that cannot be used: " + e.getMessage();
        }
        return null;
    }

    /** The reference's runnerPodUnavailableReason (worded "runner pod" for control planes too), or null. */
    static String notReadyReason(Pod pod) {
        String name = ManagedPods.name(pod);
        if (ManagedPods.isTerminating(pod)) {
            return "runner pod " + name + " is terminating";
        }
        String phase = pod.getStatus() == null || pod.getStatus().getPhase() == null ? "" : pod.getStatus().getPhase();
        if (phase.isEmpty()) {
            // the reference prints "is " and nothing after it here
            return "runner pod " + name + " has no phase yet (not started)";
        }
        if (!"Running".equals(phase)) {
            return "runner pod " + name + " is " + phase;
        }
        List<ContainerStatus> statuses = pod.getStatus().getContainerStatuses();
        if (statuses == null || statuses.isEmpty()) {
            return "runner pod " + name + " has no container status";
        }
        for (ContainerStatus s : statuses) {
            if (s.getState() == null || s.getState().getRunning() == null) {
                return "runner pod " + name + " container " + s.getName() + " is not running";
            }
            if (!Boolean.TRUE.equals(s.getReady())) {
                return "runner pod " + name + " container " + s.getName() + " is not ready";
            }
        }
        return null;
    }

    /** The reference's gatewayForPod failures: unscheduled, or a node without an ExternalIP (unknown nodes too). */
    static String nodeReason(Pod pod, Function<String, Optional<String>> externalIp) {
        String node = pod.getSpec() == null ? null : pod.getSpec().getNodeName();
        if (node == null || node.isEmpty()) {
            return "runner pod is not scheduled";
        }
        if (externalIp.apply(node).filter(ip -> !ip.isEmpty()).isEmpty()) {
            return "runner pod " + pod.getMetadata().getNamespace() + "/" + ManagedPods.name(pod) + " is on node "
                    + node + " with no ExternalIP";
        }
        return null;
    }

    static String portName(ResourceType type) {
        return type == ResourceType.RUNNER ? PlaypenKeys.WIREGUARD_PORT_NAME : PlaypenKeys.APISERVER_PORT_NAME;
    }

    /** The hostPort of the kind's named container port, 0 when there is none. */
    public static int hostPort(Pod pod, ResourceType type) {
        return ManagedPods.isKind(pod, type) ? ManagedPods.containerHostPort(pod).orElse(0) : 0;
    }
}
