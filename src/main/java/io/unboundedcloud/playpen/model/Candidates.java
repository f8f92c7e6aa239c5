package io.unboundedcloud.playpen.model;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.function.Function;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * Chooses which idle pods may serve an alloc and in which order to try them: usability per SPEC A4,
 * then a rendezvous order on (keyHash, podName) that every replica computes identically.
 */
public final class Candidates {
    private static final int MAX_REASONS = 10;

    /** A pod that can be claimed now, with the endpoint it would hand out. */
    public record Usable(Pod pod, int hostPort, String externalIp, long score) {
    }

    /** The ordered usable candidates, plus why the others of the right kind were skipped. */
    public record Selection(List<Usable> ordered, List<String> skipped, int ofKind) {
    }

    private final LabelSelector runnerSelector;

    /** Runners are handed out only when they carry every one of these labels with these values. */
    public Candidates(Map<String, String> runnerLabels) {
        this(LabelSelector.equality(runnerLabels));
    }

    /** Runners are handed out only when they match {@code runnerSelector} (--runner-label-selector), as in the reference. */
    public Candidates(LabelSelector runnerSelector) {
        this.runnerSelector = runnerSelector;
    }

    /** {@code externalIp} maps a node name to its ExternalIP (empty when the node is unknown or has none). */
    public Selection select(AllocCommand cmd, Collection<Pod> pods, Function<String, Optional<String>> externalIp) {
        long seed = Hashes.seed(cmd.keyHash());
        List<Usable> usable = new ArrayList<>();
        List<String> skipped = new ArrayList<>();
        int ofKind = 0;
        String want = idleKindKey(cmd);
        for (Pod pod : pods) {
            if (!want.equals(kindKey(pod)) || ManagedPods.isClaimed(pod)) {
                continue;
            }
            ofKind++;
            String why = unusableReason(cmd.resourceType(), pod);
            if (why == null) {
                String node = pod.getSpec().getNodeName();
                Optional<String> ip = externalIp.apply(node);
                if (ip.isEmpty()) {
                    why = "node \"" + node + "\" has no ExternalIP";
                } else {
                    String name = pod.getMetadata().getName();
                    usable.add(new Usable(pod, hostPort(pod, cmd.resourceType()), ip.get(), Hashes.rendezvous(seed, name)));
                    continue;
                }
            }
            skipped.add(pod.getMetadata().getName() + ": " + why);
        }
        usable.sort(Comparator.comparingLong(Usable::score).reversed()
                .thenComparing(u -> u.pod().getMetadata().getName()));
        return new Selection(usable, skipped, ofKind);
    }

    /**
     * The hot-path form of {@link #select}: the idle pods of the requested kind in rendezvous order, checked
     * for usability only as the walk reaches them (the first is nearly always usable, so a request pays for
     * the cheap label checks and a 64-bit score per pod, not for every pod's full usability check).
     */
    public Walk walk(AllocCommand cmd, Collection<Pod> pods, Function<String, Optional<String>> externalIp) {
        long seed = Hashes.seed(cmd.keyHash());
        List<Scored> scored = new ArrayList<>();
        String want = idleKindKey(cmd);
        for (Pod pod : pods) {
            if (want.equals(kindKey(pod)) && !ManagedPods.isClaimed(pod)) {
                scored.add(new Scored(Hashes.rendezvous(seed, pod.getMetadata().getName()), pod));
            }
        }
        return new Walk(cmd.resourceType(), new PriorityQueue<>(scored), externalIp);
    }

    private record Scored(long score, Pod pod) implements Comparable<Scored> {
        @Override
        public int compareTo(Scored o) {
            int c = Long.compare(o.score, score);
            return c != 0 ? c : pod.getMetadata().getName().compareTo(o.pod.getMetadata().getName());
        }
    }

    /** A lazy walk over candidates in rendezvous order. */
    public static final class Walk {
        private final ResourceType type;
        private final PriorityQueue<Scored> queue;
        private final Function<String, Optional<String>> externalIp;

        Walk(ResourceType type, PriorityQueue<Scored> queue, Function<String, Optional<String>> externalIp) {
            this.type = type;
            this.queue = queue;
            this.externalIp = externalIp;
        }

        /** The next usable candidate, or empty when the walk is over. */
        public Optional<Usable> next() {
            Scored s;
            while ((s = queue.poll()) != null) {
                if (unusableReason(type, s.pod()) != null) {
                    continue;
                }
                Optional<String> ip = externalIp.apply(s.pod().getSpec().getNodeName());
                if (ip.isPresent()) {
                    return Optional.of(new Usable(s.pod(), hostPort(s.pod(), type), ip.get(), s.score()));
                }
            }
            return Optional.empty();
        }
    }

    /** The 503 message when a selection has nothing to offer (SPEC A4). */
    public static String unavailableMessage(AllocCommand cmd, Selection selection) {
        boolean runner = cmd.resourceType() == ResourceType.RUNNER;
        if (selection.ofKind() == 0) {
            return runner
                    ? "no idle " + cmd.architecture() + " playpen runner pods are available"
                    : "no idle " + cmd.kubernetesVersion() + " playpen control-plane pods are available";
        }
        List<String> reasons = new ArrayList<>(selection.skipped().stream().sorted().limit(MAX_REASONS).toList());
        if (selection.skipped().size() > MAX_REASONS) {
            reasons.add("and " + (selection.skipped().size() - MAX_REASONS) + " more");
        }
        return "no idle playpen " + (runner ? "runner" : "control-plane")
                + " pods are available with hostPort endpoints on ExternalIP nodes: " + String.join("; ", reasons);
    }

    /**
     * The index key of an idle pod that could serve some alloc ("runner/amd64", "controlPlane/v1.33.0"), or
     * null for pods that never can (unmanaged, claimed, runners outside the selector). The watch cache keeps
     * pods indexed by it, so a request walks only the idle pods of its kind.
     */
    public String idleKindKey(Pod pod) {
        return ManagedPods.isClaimed(pod) ? null : kindKey(pod);
    }

    /** The kind of request a pod could serve, claimed or not (null: none). */
    private String kindKey(Pod pod) {
        ResourceType type = ManagedPods.resourceType(pod).orElse(null);
        if (type == ResourceType.RUNNER) {
            if (!runnerSelector.matches(ManagedPods.labels(pod))) {
                return null;
            }
            return "runner/" + ManagedPods.architecture(pod);
        }
        if (type == ResourceType.CONTROL_PLANE) {
            String v = ManagedPods.labels(pod).get(PlaypenKeys.KUBERNETES_VERSION);
            return v == null ? null : "controlPlane/" + v;
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


    /** Why an unclaimed pod of the right kind cannot be handed out, or null when it can (node checked separately). */
    static String unusableReason(ResourceType type, Pod pod) {
        if (ManagedPods.isTerminating(pod)) {
            return "terminating";
        }
        String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
        if (!"Running".equals(phase)) {
            return "phase is " + (phase == null ? "unknown" : phase);
        }
        if (!allContainersReady(pod)) {
            return "containers are not all running and ready";
        }
        Map<String, String> ann = ManagedPods.annotations(pod);
        if (type == ResourceType.RUNNER && !AllocRequestParser.isWireGuardKey(ann.get(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY))) {
            return "no valid server WireGuard public key annotation";
        }
        if (type == ResourceType.CONTROL_PLANE && isBlank(ann.get(PlaypenKeys.CONTROL_PLANE_KUBECONFIG))) {
            return "control-plane kubeconfig not published yet";
        }
        if (hostPort(pod, type) <= 0) {
            return "no hostPort on port \"" + portName(type) + "\"";
        }
        String node = pod.getSpec() == null ? null : pod.getSpec().getNodeName();
        if (isBlank(node)) {
            return "not scheduled to a node";
        }
        return null;
    }

    private static boolean allContainersReady(Pod pod) {
        List<Container> containers = pod.getSpec() == null ? List.of() : pod.getSpec().getContainers();
        List<ContainerStatus> statuses = pod.getStatus().getContainerStatuses();
        if (containers.isEmpty() || statuses == null || statuses.size() < containers.size()) {
            return false;
        }
        for (ContainerStatus s : statuses) {
            if (!Boolean.TRUE.equals(s.getReady()) || s.getState() == null || s.getState().getRunning() == null) {
                return false;
            }
        }
        return true;
    }

    static String portName(ResourceType type) {
        return type == ResourceType.RUNNER ? PlaypenKeys.WIREGUARD_PORT_NAME : PlaypenKeys.APISERVER_PORT_NAME;
    }

    /** The hostPort of the kind's named container port, 0 when there is none. */
    public static int hostPort(Pod pod, ResourceType type) {
        return ManagedPods.isKind(pod, type) ? ManagedPods.containerHostPort(pod).orElse(0) : 0;
    }

    private static boolean isBlank(String s) {
        return s == null || s.isBlank();
    }
}
