package io.unboundedcloud.playpen.dev;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.unboundedcloud.playpen.kube.DaemonThreads;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.ResourceType;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * Plays scheduler, kubelet and runner for managed pods in the runner namespace: a pending pod is bound to the dev node
 * of its {@code kubernetes.io/arch} node selector (amd64 when it has none) and, after a short delay, becomes Running
 * and Ready with the annotations the runner (WireGuard key, Redfish certificate) or the control-plane helper
 * (kubeconfig) would publish. Everything happens in one JSON merge patch, so a pod is never seen Running without its
 * annotations. Pods with a container image listed in --dev-image-faults fail instead: never ready (running, readiness
 * failing), crash (CrashLoopBackOff, the restart count rising) or evict (ready, then Failed/Evicted a few seconds
 * later, as a node under memory pressure does).
 */
final class SimulatedKubelet implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SimulatedKubelet.class);
    private static final String ARCH_LABEL = "kubernetes.io/arch";
    private static final int MAX_ATTEMPTS = 5;
    /** How long an evict-mode pod runs before its eviction. */
    static final Duration EVICT_AFTER = Duration.ofSeconds(3);
    /** How often a crash-mode pod's container restarts. */
    static final Duration CRASH_EVERY = Duration.ofSeconds(5);

    /** What the kubelet makes of pods of an image (--dev-image-faults image=mode). */
    public enum Fault {
        NEVER_READY("never-ready"), CRASH("crash"), EVICT("evict");

        private final String flag;

        Fault(String flag) {
            this.flag = flag;
        }

        /** image=mode items (the config checked them) to a map. */
        static Map<String, Fault> parse(List<String> items) {
            Map<String, Fault> out = new LinkedHashMap<>();
            for (String item : items) {
                int eq = item.lastIndexOf('=');
                String mode = item.substring(eq + 1);
                for (Fault f : values()) {
                    if (f.flag.equals(mode)) {
                        out.put(item.substring(0, eq), f);
                    }
                }
            }
            return out;
        }
    }

    private final KubernetesClient client;
    private final String namespace;
    private final Duration readyDelay;
    private final Map<String, DevNode> nodesByArch;
    private final Pki.Issued controlPlaneCa;
    private final ScheduledExecutorService scheduler;
    private final Map<String, Fault> faults;
    /** Pods whose start is scheduled or running (by uid). */
    private final Set<String> starting = ConcurrentHashMap.newKeySet();
    /** Pods this kubelet already started or reported unschedulable (by uid); stale events must not start them twice. */
    private final Set<String> handled = ConcurrentHashMap.newKeySet();
    private final AtomicInteger nextIp = new AtomicInteger(10);
    private SharedIndexInformer<Pod> informer;

    /** A simulated node: name, architecture and its InternalIP (pod hostIP). */
    record DevNode(String name, String arch, String internalIp, String externalIp) {
    }

    SimulatedKubelet(KubernetesClient client, String namespace, Duration readyDelay, List<DevNode> nodes,
            Pki.Issued controlPlaneCa) {
        this(client, namespace, readyDelay, nodes, controlPlaneCa, Map.of());
    }

    SimulatedKubelet(KubernetesClient client, String namespace, Duration readyDelay, List<DevNode> nodes,
            Pki.Issued controlPlaneCa, Map<String, Fault> faults) {
        this.faults = Map.copyOf(faults);
        this.client = client;
        this.namespace = namespace;
        this.readyDelay = readyDelay;
        this.nodesByArch = new LinkedHashMap<>();
        nodes.forEach(n -> nodesByArch.putIfAbsent(n.arch(), n));
        this.controlPlaneCa = controlPlaneCa;
        this.scheduler = Executors.newScheduledThreadPool(2, DaemonThreads.named("dev-kubelet"));
    }

    void start() {
        informer = client.pods().inNamespace(namespace).inform(new ResourceEventHandler<>() {
            @Override
            public void onAdd(Pod pod) {
                consider(pod);
            }

            @Override
            public void onUpdate(Pod oldPod, Pod newPod) {
                consider(newPod);
            }

            @Override
            public void onDelete(Pod pod, boolean deletedFinalStateUnknown) {
                String uid = pod.getMetadata().getUid();
                if (uid != null) {
                    handled.remove(uid);
                }
            }
        }, 30_000L);
    }

    static boolean isManaged(Pod pod) {
        Map<String, String> labels = pod.getMetadata().getLabels();
        if (labels == null) {
            return false;
        }
        String app = labels.get(PlaypenKeys.APP_NAME);
        return ResourceType.fromLabel(labels.get(PlaypenKeys.RESOURCE_TYPE)).isPresent()
                || PlaypenKeys.RUNNER_APP_NAME.equals(app) || PlaypenKeys.CONTROL_PLANE_APP_NAME.equals(app);
    }

    static boolean isControlPlane(Pod pod) {
        Map<String, String> labels = pod.getMetadata().getLabels();
        return ResourceType.fromLabel(labels.get(PlaypenKeys.RESOURCE_TYPE)).map(t -> t == ResourceType.CONTROL_PLANE)
                .orElse(PlaypenKeys.CONTROL_PLANE_APP_NAME.equals(labels.get(PlaypenKeys.APP_NAME)));
    }

    private void consider(Pod pod) {
        String uid = pod.getMetadata().getUid();
        if (uid == null || !isManaged(pod) || pod.getMetadata().getDeletionTimestamp() != null) {
            return;
        }
        String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
        if (phase != null && !phase.equals("Pending")) {
            return;
        }
        if (handled.contains(uid) || !starting.add(uid)) {
            return;
        }
        scheduler.schedule(() -> run(pod, 1), readyDelay.toMillis(), TimeUnit.MILLISECONDS);
    }

    private void run(Pod pod, int attempt) {
        String name = pod.getMetadata().getName();
        String uid = pod.getMetadata().getUid();
        try {
            Map<String, Object> patch = startPatch(pod);
            client.pods().inNamespace(namespace).withName(name)
                    .patch(PatchContext.of(PatchType.JSON_MERGE), Serialization.asJson(patch));
            handled.add(uid);
            starting.remove(uid);
            LOG.debug("dev kubelet: pod {} started", name);
            Fault fault = faultOf(pod);
            if (fault == Fault.EVICT) {
                scheduler.schedule(() -> evict(pod), EVICT_AFTER.toMillis(), TimeUnit.MILLISECONDS);
            } else if (fault == Fault.CRASH) {
                scheduler.schedule(() -> crashAgain(pod, 2), CRASH_EVERY.toMillis(), TimeUnit.MILLISECONDS);
            }
        } catch (KubernetesClientException e) {
            if (e.getCode() == 404) {
                starting.remove(uid);
                return;
            }
            retry(pod, attempt, e);
        } catch (RuntimeException e) {
            retry(pod, attempt, e);
        }
    }

    private void retry(Pod pod, int attempt, Exception e) {
        String name = pod.getMetadata().getName();
        if (attempt >= MAX_ATTEMPTS || scheduler.isShutdown()) {
            LOG.warn("dev kubelet: giving up starting pod {} after {} attempts: {}", name, attempt, e.getMessage());
            starting.remove(pod.getMetadata().getUid());
            return;
        }
        LOG.info("dev kubelet: starting pod {} failed (attempt {}): {}", name, attempt, e.getMessage());
        scheduler.schedule(() -> run(pod, attempt + 1), 200L * attempt, TimeUnit.MILLISECONDS);
    }

    /** The fault configured for any of the pod's container images, or null. */
    Fault faultOf(Pod pod) {
        if (faults.isEmpty() || pod.getSpec() == null) {
            return null;
        }
        for (Container c : pod.getSpec().getContainers()) {
            Fault f = faults.get(c.getImage());
            if (f != null) {
                return f;
            }
        }
        return null;
    }

    /** What a node under memory pressure does to a pod: Failed, reason Evicted, every container terminated. */
    private void evict(Pod pod) {
        String now = Instant.now().truncatedTo(ChronoUnit.SECONDS).toString();
        List<Map<String, Object>> statuses = new ArrayList<>();
        for (Container c : pod.getSpec().getContainers()) {
            statuses.add(Map.of("name", c.getName(), "image", c.getImage(), "ready", false, "restartCount", 0,
                    "state", Map.of("terminated", Map.of("exitCode", 137, "reason", "Error", "startedAt", now,
                            "finishedAt", now))));
        }
        Map<String, Object> status = new LinkedHashMap<>();
        status.put("phase", "Failed");
        status.put("reason", "Evicted");
        status.put("message", "The node was low on resource: memory. (simulated)");
        status.put("conditions", List.of(condition("Ready", "False", now, "PodFailed", null)));
        status.put("containerStatuses", statuses);
        patchStatus(pod, status, "evicted");
    }

    /** A crash loop's next round: the container ran and exited again; the kubelet backs off before restarting it. */
    private void crashAgain(Pod pod, int restarts) {
        if (scheduler.isShutdown()) {
            return;
        }
        if (!patchStatus(pod, crashStatus(pod, restarts), "crashed again")) {
            return;
        }
        if (restarts < 1000) {
            scheduler.schedule(() -> crashAgain(pod, restarts + 1), CRASH_EVERY.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    private Map<String, Object> crashStatus(Pod pod, int restarts) {
        String now = Instant.now().truncatedTo(ChronoUnit.SECONDS).toString();
        List<Map<String, Object>> statuses = new ArrayList<>();
        for (Container c : pod.getSpec().getContainers()) {
            Map<String, Object> cs = new LinkedHashMap<>();
            cs.put("name", c.getName());
            cs.put("image", c.getImage());
            cs.put("ready", false);
            cs.put("started", false);
            cs.put("restartCount", restarts);
            cs.put("state", Map.of("waiting", Map.of("reason", "CrashLoopBackOff",
                    "message", "back-off restarting failed container " + c.getName() + " (simulated)")));
            cs.put("lastState", Map.of("terminated", Map.of("exitCode", 1, "reason", "Error", "startedAt", now,
                    "finishedAt", now)));
            statuses.add(cs);
        }
        Map<String, Object> status = new LinkedHashMap<>();
        status.put("containerStatuses", statuses);
        return status;
    }

    /** Merge-patches the pod's status; false when the pod is gone (or being deleted). */
    private boolean patchStatus(Pod pod, Map<String, Object> status, String what) {
        String name = pod.getMetadata().getName();
        try {
            Pod current = client.pods().inNamespace(namespace).withName(name).get();
            if (current == null || !pod.getMetadata().getUid().equals(current.getMetadata().getUid())
                    || current.getMetadata().getDeletionTimestamp() != null) {
                return false;
            }
            // a JSON patch: the mock API appends lists on a merge patch, and these lists must be replaced
            List<Map<String, Object>> ops = new ArrayList<>();
            status.forEach((k, v) -> ops.add(Map.of("op", "add", "path", "/status/" + k, "value", v)));
            client.pods().inNamespace(namespace).withName(name)
                    .patch(PatchContext.of(PatchType.JSON), Serialization.asJson(ops));
            LOG.info("dev kubelet: pod {} {}", name, what);
            return true;
        } catch (RuntimeException e) {
            LOG.debug("dev kubelet: pod {} not {}: {}", name, what, e.getMessage());
            return false;
        }
    }

    /** The merge patch that binds, starts and annotates the pod (or reports it unschedulable). */
    Map<String, Object> startPatch(Pod pod) {
        String now = Instant.now().truncatedTo(ChronoUnit.SECONDS).toString();
        DevNode node = nodeFor(pod);
        Map<String, Object> status = new LinkedHashMap<>();
        if (node == null) {
            status.put("phase", "Pending");
            status.put("conditions", List.of(condition("PodScheduled", "False", now, "Unschedulable",
                    "0/" + nodesByArch.size() + " nodes are available: node(s) didn't match Pod's node affinity/selector.")));
            LOG.info("dev kubelet: pod {} is unschedulable (nodeSelector {})", pod.getMetadata().getName(),
                    pod.getSpec().getNodeSelector());
            return Map.of("status", status);
        }
        Fault fault = faultOf(pod);
        boolean ready = fault == null || fault == Fault.EVICT;
        int n = nextIp.getAndIncrement();
        String podIp = "10.244." + ((n >> 8) & 0xff) + "." + (n & 0xff);
        List<Map<String, Object>> containerStatuses = new ArrayList<>();
        for (Container c : pod.getSpec().getContainers()) {
            Map<String, Object> cs = new LinkedHashMap<>();
            cs.put("name", c.getName());
            cs.put("image", c.getImage());
            cs.put("imageID", c.getImage() + "@sha256:" + randomHex(32));
            cs.put("containerID", "containerd://" + randomHex(32));
            cs.put("ready", ready);
            cs.put("started", fault != Fault.CRASH);
            cs.put("restartCount", fault == Fault.CRASH ? 1 : 0);
            cs.put("state", fault == Fault.CRASH
                    ? Map.of("waiting", Map.of("reason", "CrashLoopBackOff", "message",
                            "back-off restarting failed container " + c.getName() + " (simulated)"))
                    : Map.of("running", Map.of("startedAt", now)));
            containerStatuses.add(cs);
        }
        status.put("phase", "Running");
        status.put("hostIP", node.internalIp());
        status.put("hostIPs", List.of(Map.of("ip", node.internalIp())));
        status.put("podIP", podIp);
        status.put("podIPs", List.of(Map.of("ip", podIp)));
        status.put("startTime", now);
        status.put("qosClass", "Burstable");
        status.put("conditions", List.of(
                condition("PodReadyToStartContainers", "True", now, null, null),
                condition("Initialized", "True", now, null, null),
                ready ? condition("Ready", "True", now, null, null)
                        : condition("Ready", "False", now, "ContainersNotReady", "containers with unready status: [runner]"),
                ready ? condition("ContainersReady", "True", now, null, null)
                        : condition("ContainersReady", "False", now, "ContainersNotReady", null),
                condition("PodScheduled", "True", now, null, null)));
        status.put("containerStatuses", containerStatuses);

        Map<String, String> annotations = new LinkedHashMap<>();
        if (!ready) {
            // a runner that never gets ready publishes nothing either
        } else if (isControlPlane(pod)) {
            annotations.put(PlaypenKeys.CONTROL_PLANE_KUBECONFIG, controlPlaneKubeconfig());
        } else {
            annotations.put(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, WireGuardKeys.newPublicKey());
            annotations.put(PlaypenKeys.REDFISH_CERT_PEM, redfishCertificatePem(pod.getMetadata().getName()));
        }
        Map<String, Object> patch = new LinkedHashMap<>();
        if (!annotations.isEmpty()) {
            patch.put("metadata", Map.of("annotations", annotations));
        }
        patch.put("spec", Map.of("nodeName", node.name()));
        patch.put("status", status);
        return patch;
    }

    private DevNode nodeFor(Pod pod) {
        String bound = pod.getSpec().getNodeName();
        if (bound != null && !bound.isEmpty()) {
            return nodesByArch.values().stream().filter(n -> n.name().equals(bound)).findFirst()
                    .orElse(new DevNode(bound, "unknown", "10.0.0.99", ""));
        }
        Map<String, String> selector = pod.getSpec().getNodeSelector();
        String arch = selector == null ? null : selector.get(ARCH_LABEL);
        return nodesByArch.get(arch == null ? "amd64" : arch);
    }

    private static Map<String, Object> condition(String type, String status, String now, String reason, String message) {
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("type", type);
        c.put("status", status);
        c.put("lastTransitionTime", now);
        if (reason != null) {
            c.put("reason", reason);
            c.put("message", message);
        }
        return c;
    }

    private static String redfishCertificatePem(String podName) {
        return Pki.selfSigned(new Pki.Subject(podName, List.of(), List.of(podName), List.of("10.88.0.1")),
                Pki.Usage.SERVER, Instant.now().minus(1, ChronoUnit.MINUTES), Duration.ofDays(365)).certificatePem();
    }

    /** What the control-plane helper publishes: a k3s-style kubeconfig (only handed out, never contacted). */
    private String controlPlaneKubeconfig() {
        Pki.Issued admin = Pki.issue(controlPlaneCa, new Pki.Subject("system:admin", List.of("system:masters"),
                List.of(), List.of()), Pki.Usage.CLIENT, Instant.now().minus(1, ChronoUnit.MINUTES), Duration.ofDays(365));
        return Kubeconfigs.withClientCertificate("default", "https://127.0.0.1:6443", controlPlaneCa.certificatePem(),
                "default", admin, null);
    }

    private static String randomHex(int bytes) {
        byte[] b = new byte[bytes];
        ThreadLocalRandom.current().nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    @Override
    public void close() {
        if (informer != null) {
            informer.close();
        }
        scheduler.shutdownNow();
    }
}
