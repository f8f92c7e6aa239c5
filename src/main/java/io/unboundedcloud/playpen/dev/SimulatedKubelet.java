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
 * annotations.
 */
final class SimulatedKubelet implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SimulatedKubelet.class);
    private static final String ARCH_LABEL = "kubernetes.io/arch";
    private static final int MAX_ATTEMPTS = 5;

    private final KubernetesClient client;
    private final String namespace;
    private final Duration readyDelay;
    private final Map<String, DevNode> nodesByArch;
    private final Pki.Issued controlPlaneCa;
    private final ScheduledExecutorService scheduler;
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
        int n = nextIp.getAndIncrement();
        String podIp = "10.244." + ((n >> 8) & 0xff) + "." + (n & 0xff);
        List<Map<String, Object>> containerStatuses = new ArrayList<>();
        for (Container c : pod.getSpec().getContainers()) {
            Map<String, Object> cs = new LinkedHashMap<>();
            cs.put("name", c.getName());
            cs.put("image", c.getImage());
            cs.put("imageID", c.getImage() + "@sha256:" + randomHex(32));
            cs.put("containerID", "containerd://" + randomHex(32));
            cs.put("ready", true);
            cs.put("started", true);
            cs.put("restartCount", 0);
            cs.put("state", Map.of("running", Map.of("startedAt", now)));
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
                condition("Ready", "True", now, null, null),
                condition("ContainersReady", "True", now, null, null),
                condition("PodScheduled", "True", now, null, null)));
        status.put("containerStatuses", containerStatuses);

        Map<String, String> annotations = new LinkedHashMap<>();
        if (isControlPlane(pod)) {
            annotations.put(PlaypenKeys.CONTROL_PLANE_KUBECONFIG, controlPlaneKubeconfig());
        } else {
            annotations.put(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, WireGuardKeys.newPublicKey());
            annotations.put(PlaypenKeys.REDFISH_CERT_PEM, redfishCertificatePem(pod.getMetadata().getName()));
        }
        Map<String, Object> patch = new LinkedHashMap<>();
        patch.put("metadata", Map.of("annotations", annotations));
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
