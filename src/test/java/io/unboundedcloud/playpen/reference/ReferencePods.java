package io.unboundedcloud.playpen.reference;

import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;

import io.fabric8.kubernetes.api.model.ContainerPortBuilder;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * The fixtures of the reference's operator_test.go (testPod, testControlPlanePod, testNode, testKubeconfig, ...),
 * rebuilt with the same values so the ported tests get the same inputs.
 */
final class ReferencePods {
    static final String NS = "playpen";
    private static final SecureRandom RANDOM = new SecureRandom();

    private ReferencePods() {
    }

    /** testPod: a Running, Ready runner with only the app name label, its server key and a name-derived hostPort. */
    static Pod testPod(String name, String nodeName, Map<String, String> annotations) {
        Map<String, String> ann = new LinkedHashMap<>(annotations == null ? Map.of() : annotations);
        ann.put(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, podServerPublicKey(name));
        return withWireGuardHostPort(testPodWithAnnotations(name, nodeName, ann), testHostPort(name));
    }

    static Pod testPodWithArchitecture(String name, String nodeName, String architecture) {
        return new PodBuilder(testPod(name, nodeName, null)).editMetadata()
                .addToLabels(PlaypenKeys.ARCHITECTURE, architecture).endMetadata().build();
    }

    static Pod testPodWithHostPort(String name, String nodeName, int hostPort) {
        return withWireGuardHostPort(testPod(name, nodeName, null), hostPort);
    }

    /** setPodWireGuardHostPort: one container "runner" with the UDP port "wireguard" on that hostPort. */
    static Pod withWireGuardHostPort(Pod pod, int hostPort) {
        return new PodBuilder(pod).editSpec().withContainers().addNewContainer().withName("runner").withImage("runner")
                .withPorts(new ContainerPortBuilder().withName("wireguard").withProtocol("UDP").withContainerPort(51820)
                        .withHostPort(hostPort).build())
                .endContainer().endSpec().build();
    }

    static Pod testPodWithAnnotations(String name, String nodeName, Map<String, String> annotations) {
        return new PodBuilder().withNewMetadata().withName(name).withNamespace(NS)
                .addToLabels(PlaypenKeys.APP_NAME, PlaypenKeys.RUNNER_APP_NAME)
                .withAnnotations(new LinkedHashMap<>(annotations == null ? Map.of() : annotations)).endMetadata()
                .withNewSpec().withNodeName(nodeName).addNewContainer().withName("runner").withImage("runner").endContainer()
                .endSpec()
                .withNewStatus().withPhase("Running")
                .addNewContainerStatus().withName("runner").withReady(true).withNewState().withNewRunning()
                .withStartedAt("2026-01-01T00:00:00Z").endRunning().endState().endContainerStatus()
                .endStatus().build();
    }

    static Pod testControlPlanePod(String name, String nodeName, String kubernetesVersion, int hostPort) {
        return new PodBuilder().withNewMetadata().withName(name).withNamespace(NS)
                .addToLabels(PlaypenKeys.APP_NAME, PlaypenKeys.CONTROL_PLANE_APP_NAME)
                .addToLabels(PlaypenKeys.APP_COMPONENT, PlaypenKeys.CONTROL_PLANE_COMPONENT)
                .addToLabels(PlaypenKeys.RESOURCE_TYPE, "controlPlane")
                .addToLabels(PlaypenKeys.KUBERNETES_VERSION, kubernetesVersion)
                .addToAnnotations(PlaypenKeys.CONTROL_PLANE_KUBECONFIG, testKubeconfig("https://127.0.0.1:6443"))
                .addToAnnotations(PlaypenKeys.CONTROL_PLANE_GUEST_SERVER, "https://192.168.200.1:6443")
                .endMetadata()
                .withNewSpec().withNodeName(nodeName)
                .addNewContainer().withName("k3s").withImage("k3s")
                .addNewPort().withName("apiserver").withProtocol("TCP").withContainerPort(6443).withHostPort(hostPort).endPort()
                .endContainer().endSpec()
                .withNewStatus().withPhase("Running")
                .addNewContainerStatus().withName("k3s").withReady(true).withNewState().withNewRunning()
                .withStartedAt("2026-01-01T00:00:00Z").endRunning().endState().endContainerStatus()
                .addNewContainerStatus().withName("helper").withReady(true).withNewState().withNewRunning()
                .withStartedAt("2026-01-01T00:00:00Z").endRunning().endState().endContainerStatus()
                .endStatus().build();
    }

    static String testKubeconfig(String server) {
        return "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: " + server + "\n"
                + "    insecure-skip-tls-verify: true\ncontexts:\n- name: test\n  context:\n    cluster: test\n    user: test\n"
                + "current-context: test\nusers:\n- name: test\n  user:\n    token: test-token\n";
    }

    /** testHostPort: 51000 + (sum of the name's runes) mod 1000. */
    static int testHostPort(String name) {
        int sum = name.codePoints().sum();
        return 51000 + sum % 1000;
    }

    /** podServerPublicKey: key[i] = name[i % len] + i, as a WireGuard key string (standard base64). */
    static String podServerPublicKey(String name) {
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        byte[] key = new byte[32];
        for (int i = 0; i < key.length; i++) {
            key[i] = (byte) (n[i % n.length] + i);
        }
        return Base64.getEncoder().encodeToString(key);
    }

    /** testPublicKey: a fresh random key (the reference derives it from a generated private key). */
    static String testPublicKey() {
        byte[] key = new byte[32];
        RANDOM.nextBytes(key);
        return Base64.getEncoder().encodeToString(key);
    }

    /** testNode: a node with an ExternalIP, or with no address at all when {@code externalIp} is empty. */
    static io.fabric8.kubernetes.api.model.Node testNode(String name, String externalIp) {
        NodeBuilder b = new NodeBuilder().withNewMetadata().withName(name).endMetadata().withNewStatus().endStatus();
        if (!externalIp.isEmpty()) {
            b.editStatus().addNewAddress().withType("ExternalIP").withAddress(externalIp).endAddress().endStatus();
        }
        return b.build();
    }
}
