package io.unboundedcloud.playpen.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyIngressRule;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPeer;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPort;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.PodTemplates;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The rendered NetworkPolicies select the pods the Deployment and the operator's pod templates really make, and
 * open exactly the ports those pods serve: the operator's HTTPS port to all, its management port to labelled
 * namespaces only; runners their WireGuard port, control planes their API server port; nothing else in the runner
 * namespace.
 */
class DeployNetworkPolicyTest {
    static final String MANAGEMENT_ACCESS_LABEL = PlaypenKeys.GROUP + "/management-access";

    private OperatorConfig config;
    private Deployment deployment;
    private Pod runner;
    private Pod controlPlane;
    private final List<NetworkPolicy> policies = new ArrayList<>();

    @BeforeEach
    void load() throws Exception {
        config = DeployManifestsTest.deployedConfig();
        deployment = DeployManifestsTest.deployment();
        PodTemplates templates = new PodTemplates(config, Map.of());
        runner = templates.runner("amd64", config.runnerPorts().start());
        controlPlane = templates.controlPlane(config.controlPlaneVersions().get(0), config.controlPlanePorts().start());
        for (ObjectNode doc : RenderedDeploy.ofKind("NetworkPolicy")) {
            policies.add(StrictModel.read(doc, NetworkPolicy.class));
        }
    }

    /** matchLabels semantics; matchExpressions are not used here and would need their own evaluation. */
    static boolean selects(LabelSelector selector, Map<String, String> labels) {
        assertThat(selector.getMatchExpressions()).as("matchExpressions in %s", selector).isNullOrEmpty();
        Map<String, String> want = selector.getMatchLabels() == null ? Map.of() : selector.getMatchLabels();
        return want.entrySet().stream().allMatch(e -> e.getValue().equals(labels.get(e.getKey())));
    }

    /** The policies of a namespace that select a pod with these labels. */
    List<NetworkPolicy> selecting(String namespace, Map<String, String> labels) {
        return policies.stream().filter(p -> p.getMetadata().getNamespace().equals(namespace))
                .filter(p -> selects(p.getSpec().getPodSelector(), labels)).toList();
    }

    /** The container port a policy port refers to (by name or number), if the pod has it. */
    static Optional<ContainerPort> resolve(NetworkPolicyPort port, List<Container> containers) {
        String protocol = port.getProtocol() == null ? "TCP" : port.getProtocol();
        return containers.stream().flatMap(c -> c.getPorts().stream())
                .filter(cp -> protocol.equals(cp.getProtocol() == null ? "TCP" : cp.getProtocol()))
                .filter(cp -> port.getPort() != null && (port.getPort().getStrVal() != null
                        ? port.getPort().getStrVal().equals(cp.getName())
                        : port.getPort().getIntVal().equals(cp.getContainerPort())))
                .findFirst();
    }

    static List<NetworkPolicyIngressRule> ingress(List<NetworkPolicy> ps) {
        List<NetworkPolicyIngressRule> out = new ArrayList<>();
        ps.forEach(p -> {
            if (p.getSpec().getIngress() != null) {
                out.addAll(p.getSpec().getIngress());
            }
        });
        return out;
    }

    @Test
    void operatorAcceptsHttpsFromAnywhereAndManagementOnlyFromLabelledNamespaces() {
        Map<String, String> podLabels = deployment.getSpec().getTemplate().getMetadata().getLabels();
        List<NetworkPolicy> mine = selecting(config.namespace(), podLabels);
        assertThat(mine).as("policies selecting the operator pods").hasSize(1);
        assertThat(mine.get(0).getSpec().getPolicyTypes()).contains("Ingress");
        List<Container> containers = deployment.getSpec().getTemplate().getSpec().getContainers();

        List<NetworkPolicyIngressRule> rules = ingress(mine);
        for (NetworkPolicyIngressRule rule : rules) {
            assertThat(rule.getPorts()).as("an ingress rule without ports opens every port").isNotEmpty();
            for (NetworkPolicyPort p : rule.getPorts()) {
                ContainerPort cp = resolve(p, containers)
                        .orElseThrow(() -> new AssertionError("policy port " + p.getPort() + " is no port of the operator"));
                if (cp.getContainerPort() == config.listenPort()) {
                    // kube-apiserver's aggregator must reach it; it cannot be selected by label
                    assertThat(rule.getFrom()).as("sources of the HTTPS port").isNullOrEmpty();
                } else {
                    assertThat(cp.getContainerPort()).isEqualTo(config.managementPort());
                    assertThat(rule.getFrom()).as("sources of the management port").isNotEmpty();
                    for (NetworkPolicyPeer peer : rule.getFrom()) {
                        assertThat(peer.getIpBlock()).isNull();
                        assertThat(peer.getPodSelector()).isNull();
                        assertThat(peer.getNamespaceSelector().getMatchLabels())
                                .containsExactly(Map.entry(MANAGEMENT_ACCESS_LABEL, "true"));
                    }
                }
            }
        }
        // both ports are covered: nothing the operator serves is left closed by mistake
        assertThat(rules.stream().flatMap(r -> r.getPorts().stream()).map(p -> resolve(p, containers).orElseThrow()
                .getContainerPort())).containsExactlyInAnyOrder(config.listenPort(), config.managementPort());
    }

    @Test
    void theRunnerNamespaceDeniesEverythingNotAllowedExplicitly() {
        NetworkPolicy deny = policies.stream().filter(p -> p.getMetadata().getNamespace().equals(config.runnerNamespace()))
                .filter(p -> selects(p.getSpec().getPodSelector(), Map.of()))
                .findFirst().orElseThrow(() -> new AssertionError("no default-deny policy in " + config.runnerNamespace()));
        assertThat(deny.getSpec().getPolicyTypes()).containsExactlyInAnyOrder("Ingress", "Egress");
        assertThat(deny.getSpec().getIngress()).isNullOrEmpty();
        assertThat(deny.getSpec().getEgress()).isNullOrEmpty();
    }

    @Test
    void runnersAcceptOnlyWireGuardAndControlPlanesOnlyTheirApiServer() {
        assertOnlyPublishedPortOpen(runner, PlaypenKeys.WIREGUARD_PORT_NAME, "UDP");
        assertOnlyPublishedPortOpen(controlPlane, PlaypenKeys.APISERVER_PORT_NAME, "TCP");
    }

    private void assertOnlyPublishedPortOpen(Pod pod, String portName, String protocol) {
        Map<String, String> labels = pod.getMetadata().getLabels();
        List<NetworkPolicy> mine = selecting(pod.getMetadata().getNamespace(), labels).stream()
                .filter(p -> !selects(p.getSpec().getPodSelector(), Map.of())).toList();
        assertThat(mine).as("policies selecting %s", pod.getMetadata().getName()).hasSize(1);
        assertThat(mine.get(0).getSpec().getPolicyTypes()).containsExactlyInAnyOrder("Ingress", "Egress");
        List<NetworkPolicyIngressRule> rules = ingress(mine);
        assertThat(rules).hasSize(1);
        assertThat(rules.get(0).getPorts()).hasSize(1);
        ContainerPort port = resolve(rules.get(0).getPorts().get(0), pod.getSpec().getContainers())
                .orElseThrow(() -> new AssertionError("the open port is no port of " + pod.getMetadata().getName()));
        assertThat(port.getName()).isEqualTo(portName);
        assertThat(port.getProtocol()).isEqualTo(protocol);
        assertThat(port.getHostPort()).as("the port clients reach through the node").isNotNull();
        // the API server stays reachable: runner and helper get and patch their own pod
        assertThat(mine.get(0).getSpec().getEgress()).anySatisfy(e -> {
            assertThat(e.getTo()).isNullOrEmpty();
            assertThat(e.getPorts()).extracting(p -> p.getPort().getIntVal()).contains(443, 6443);
        });
    }

    @Test
    void everyPolicyButTheDefaultDenySelectsExactlyOneKindOfPod() {
        Map<String, String> operatorLabels = deployment.getSpec().getTemplate().getMetadata().getLabels();
        for (NetworkPolicy p : policies) {
            LabelSelector sel = p.getSpec().getPodSelector();
            if (selects(sel, Map.of())) {
                continue;
            }
            String ns = p.getMetadata().getNamespace();
            int kinds = (ns.equals(config.namespace()) && selects(sel, operatorLabels) ? 1 : 0)
                    + (ns.equals(runner.getMetadata().getNamespace()) && selects(sel, runner.getMetadata().getLabels()) ? 1 : 0)
                    + (ns.equals(controlPlane.getMetadata().getNamespace())
                            && selects(sel, controlPlane.getMetadata().getLabels()) ? 1 : 0);
            assertThat(kinds).as("kinds of pod NetworkPolicy %s/%s selects", ns, p.getMetadata().getName()).isEqualTo(1);
        }
    }
}
