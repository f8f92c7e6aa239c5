package io.unboundedcloud.playpen.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fabric8.kubernetes.api.model.APIService;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.kube.KubeApiCall;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** deploy/ renders with the real kubectl, parses strictly into the fabric8 model, and agrees with the operator's flags. */
class DeployManifestsTest {

    static Deployment deployment() throws Exception {
        return StrictModel.read(RenderedDeploy.single("Deployment"), Deployment.class);
    }

    static Container operatorContainer(Deployment d) {
        List<Container> containers = d.getSpec().getTemplate().getSpec().getContainers();
        assertThat(containers).as("containers of the operator Deployment").hasSize(1);
        return containers.get(0);
    }

    /** The operator's configuration exactly as the Deployment starts it. */
    static OperatorConfig deployedConfig() throws Exception {
        Container c = operatorContainer(deployment());
        List<String> args = new ArrayList<>(c.getArgs() == null ? List.of() : c.getArgs());
        return OperatorConfig.parse(args.toArray(String[]::new));
    }

    @Test
    void kubectlKustomizeRendersTheWholeInstallation() throws Exception {
        List<ObjectNode> docs = RenderedDeploy.documents();
        Map<String, Long> kinds = docs.stream()
                .collect(Collectors.groupingBy(d -> d.path("kind").asText(), Collectors.counting()));
        assertThat(kinds).containsEntry("Namespace", 2L)
                .containsEntry("ServiceAccount", 3L)
                .containsEntry("Deployment", 1L)
                .containsEntry("Service", 1L)
                .containsEntry("APIService", 1L)
                .containsEntry("PodDisruptionBudget", 1L)
                .containsEntry("ValidatingAdmissionPolicy", 1L)
                .containsEntry("ValidatingAdmissionPolicyBinding", 1L)
                .containsKeys("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "NetworkPolicy")
                // the routes come from the image; deploy/components/route-override adds a ConfigMap
                .doesNotContainKey("ConfigMap");
        for (ObjectNode d : docs) {
            assertThat(d.path("metadata").path("name").asText()).as("name of %s", RenderedDeploy.describe(d)).isNotEmpty();
        }
    }

    @Test
    void everyRenderedDocumentParsesIntoTheFabric8ModelWithUnknownFieldsRejected() throws Exception {
        for (ObjectNode doc : RenderedDeploy.documents()) {
            HasMetadata parsed;
            try {
                parsed = StrictModel.read(doc);
            } catch (Exception e) {
                throw new AssertionError(RenderedDeploy.describe(doc) + " does not parse strictly: " + e.getMessage(), e);
            }
            assertThat(parsed.getKind()).isEqualTo(doc.path("kind").asText());
            assertThat(parsed.getApiVersion()).isEqualTo(doc.path("apiVersion").asText());
            assertThat(parsed.getMetadata().getName()).isEqualTo(doc.path("metadata").path("name").asText());
        }
    }

    @Test
    void theStrictParserReallyRejectsUnknownFieldsAndKinds() throws Exception {
        ObjectNode misspelt = RenderedDeploy.single("Deployment").deepCopy();
        ((ObjectNode) misspelt.path("spec").path("template").path("spec").path("containers").get(0))
                .put("imagePulPolicy", "Always");
        assertThatThrownBy(() -> StrictModel.read(misspelt)).isInstanceOf(UnrecognizedPropertyException.class)
                .hasMessageContaining("imagePulPolicy");

        ObjectNode unknownKind = RenderedDeploy.single("Service").deepCopy();
        unknownKind.put("kind", "Servic");
        assertThatThrownBy(() -> StrictModel.read(unknownKind)).isInstanceOf(AssertionError.class)
                .hasMessageContaining("v1/Servic");
    }

    @Test
    void deploymentArgsAreAcceptedByTheOperatorsFlagParser() throws Exception {
        Container c = operatorContainer(deployment());
        assertThat(c.getCommand()).as("command must stay the image ENTRYPOINT").isNullOrEmpty();
        List<String> args = c.getArgs();
        assertThat(args).isNotEmpty().allSatisfy(a -> assertThat(a).startsWith("--").contains("="));
        assertThatCode(() -> OperatorConfig.parse(args.toArray(String[]::new))).doesNotThrowAnyException();
    }

    @Test
    void theOperatorRunsTheRoutesItsImageCarries() throws Exception {
        Deployment d = deployment();
        OperatorConfig config = deployedConfig();
        // the Dockerfile copies routes/ there (DockerfileTest); nothing in deploy/ hides that copy
        assertThat(config.routesDir()).isEqualTo("/opt/playpen/routes");
        assertThat(operatorContainer(d).getVolumeMounts()).as("mounts of the operator container")
                .noneSatisfy(m -> assertThat(m.getMountPath()).startsWith(config.routesDir()));
        // one source of truth: no second copy of routes/ under deploy/ (it used to need a sync script)
        try (var files = java.nio.file.Files.walk(RenderedDeploy.deployDir())) {
            assertThat(files.map(p -> RenderedDeploy.deployDir().relativize(p).toString())
                    .filter(p -> p.endsWith(".camel.yaml") && !p.startsWith("components/route-override/")))
                    .as("route files under deploy/ outside the route-override component").isEmpty();
        }
        assertThat(RenderedDeploy.deployDir().resolve("sync-routes.sh")).doesNotExist();
    }

    @Test
    void theOperatorHasANamespaceOfItsOwnApartFromTheRunners() throws Exception {
        Deployment d = deployment();
        OperatorConfig config = deployedConfig();
        assertThat(config.namespace()).as("--namespace").isNotEqualTo(config.runnerNamespace());
        assertThat(config.leaderElectionNamespace()).as("--leader-election-namespace").isEqualTo(config.namespace());
        assertThat(d.getMetadata().getNamespace()).isEqualTo(config.namespace());
        Map<String, ObjectNode> namespaces = RenderedDeploy.ofKind("Namespace").stream()
                .collect(Collectors.toMap(n -> n.path("metadata").path("name").asText(), n -> n));
        assertThat(namespaces).containsOnlyKeys(config.namespace(), config.runnerNamespace());
        // the operator passes Pod Security "restricted"; only the runner namespace admits privileged pods
        assertThat(namespaces.get(config.namespace()).path("metadata").path("labels")
                .path("pod-security.kubernetes.io/enforce").asText()).isEqualTo("restricted");
        assertThat(namespaces.get(config.runnerNamespace()).path("metadata").path("labels")
                .path("pod-security.kubernetes.io/enforce").asText()).isEqualTo("privileged");
        // in the runner namespace the operator owns only RBAC and the policies that fence the runners
        for (ObjectNode doc : RenderedDeploy.documents()) {
            if (config.runnerNamespace().equals(doc.path("metadata").path("namespace").asText())) {
                assertThat(doc.path("kind").asText()).as("kind of %s", RenderedDeploy.describe(doc))
                        .isIn("ServiceAccount", "Role", "RoleBinding", "NetworkPolicy");
            }
        }
    }

    @Test
    void managementPortIsNamedJolokiaAndListensOnThePodAddress() throws Exception {
        Container c = operatorContainer(deployment());
        OperatorConfig config = deployedConfig();
        ContainerPort jolokia = c.getPorts().stream().filter(p -> "jolokia".equals(p.getName())).findFirst()
                .orElseThrow(() -> new AssertionError("container port \"jolokia\" missing (Hawtio Online finds pods by it)"));
        assertThat(jolokia.getContainerPort()).isEqualTo(config.managementPort());
        assertThat(jolokia.getProtocol()).isEqualTo("TCP");
        // a loopback listener would make the named port useless (and an empty host disables the listener);
        // the NetworkPolicy keeps it private
        assertThat(config.managementHost()).as("host of --management-addr").isIn("0.0.0.0", "::");
    }

    @Test
    void deploymentIsHardenedAndHighlyAvailable() throws Exception {
        Deployment d = deployment();
        assertThat(d.getSpec().getReplicas()).isEqualTo(2);
        PodSpec pod = d.getSpec().getTemplate().getSpec();
        Container c = operatorContainer(d);

        assertThat(pod.getSecurityContext().getRunAsNonRoot()).isTrue();
        assertThat(pod.getSecurityContext().getRunAsUser()).isEqualTo(65534L);
        assertThat(pod.getSecurityContext().getRunAsGroup()).isEqualTo(65534L);
        assertThat(pod.getSecurityContext().getSeccompProfile().getType()).isEqualTo("RuntimeDefault");
        assertThat(pod.getHostNetwork()).isNotEqualTo(Boolean.TRUE);
        assertThat(c.getSecurityContext().getAllowPrivilegeEscalation()).isFalse();
        assertThat(c.getSecurityContext().getReadOnlyRootFilesystem()).isTrue();
        assertThat(c.getSecurityContext().getPrivileged()).isNotEqualTo(Boolean.TRUE);
        assertThat(c.getSecurityContext().getCapabilities().getDrop()).containsExactly("ALL");
        assertThat(c.getSecurityContext().getCapabilities().getAdd()).isNullOrEmpty();

        // with a read-only root filesystem every writable path must be an emptyDir mount
        Set<String> emptyDirs = pod.getVolumes().stream().filter(v -> v.getEmptyDir() != null)
                .map(Volume::getName).collect(Collectors.toSet());
        assertThat(c.getVolumeMounts()).anySatisfy(m -> {
            assertThat(m.getMountPath()).isEqualTo("/tmp");
            assertThat(emptyDirs).contains(m.getName());
        });

        assertThat(c.getResources().getRequests()).containsKeys("cpu", "memory");
        assertThat(c.getResources().getLimits()).containsKey("memory");

        assertThat(pod.getTopologySpreadConstraints()).isNotEmpty().allSatisfy(t -> assertThat(
                t.getLabelSelector().getMatchLabels()).isEqualTo(d.getSpec().getSelector().getMatchLabels()));
        assertThat(d.getSpec().getTemplate().getMetadata().getLabels())
                .containsAllEntriesOf(d.getSpec().getSelector().getMatchLabels());
    }

    /**
     * A rollout or drain must not turn requests into 503s: the endpoint of a terminating replica is removed from the
     * Service a moment after the pod starts terminating, so the replica keeps serving for a few seconds (a preStop
     * sleep, which needs no shell in the image) before SIGTERM, and still has time to stop cleanly within its grace
     * period (the Camel shutdown allows in-flight requests 5 s).
     */
    @Test
    void aStoppingReplicaKeepsServingWhileItsEndpointIsRemoved() throws Exception {
        Deployment d = deployment();
        Container c = operatorContainer(d);
        assertThat(c.getLifecycle()).as("lifecycle with a preStop hook").isNotNull();
        var preStop = c.getLifecycle().getPreStop();
        assertThat(preStop).as("preStop hook").isNotNull();
        assertThat(preStop.getExec()).as("the image has no shell: a sleep action, not a command").isNull();
        assertThat(preStop.getSleep()).as("preStop sleep action").isNotNull();
        long sleep = preStop.getSleep().getSeconds();
        assertThat(sleep).isBetween(3L, 15L);
        long grace = d.getSpec().getTemplate().getSpec().getTerminationGracePeriodSeconds();
        assertThat(grace - sleep).as("time left for the shutdown after the sleep").isGreaterThanOrEqualTo(15L);
    }

    /**
     * The operator's Events about itself name its pod by name, namespace and uid, from the downward API: kubectl
     * describe pod shows only the Events whose involvedObject.uid is the pod's.
     */
    @Test
    void theOperatorKnowsItsPodsNameNamespaceAndUid() throws Exception {
        Container c = operatorContainer(deployment());
        Map<String, String> fields = new java.util.HashMap<>();
        for (var e : c.getEnv()) {
            if (e.getValueFrom() != null && e.getValueFrom().getFieldRef() != null) {
                fields.put(e.getName(), e.getValueFrom().getFieldRef().getFieldPath());
            }
        }
        assertThat(fields).containsEntry("POD_NAME", "metadata.name").containsEntry("POD_NAMESPACE", "metadata.namespace")
                .containsEntry("POD_UID", "metadata.uid");
    }

    @Test
    void theRedfishPasswordComesFromASecretNeverFromTheCommandLine() throws Exception {
        Container c = operatorContainer(deployment());
        assertThat(c.getArgs()).noneMatch(a -> a.startsWith("--runner-redfish-password="))
                .noneMatch(a -> a.equals("--runner-redfish-password"));
        var env = c.getEnv().stream().filter(e -> e.getName().equals(OperatorConfig.REDFISH_PASSWORD_ENV)).findFirst()
                .orElseThrow(() -> new AssertionError(OperatorConfig.REDFISH_PASSWORD_ENV + " not set from a Secret"));
        assertThat(env.getValue()).as("no literal value").isNull();
        assertThat(env.getValueFrom().getSecretKeyRef().getName()).isEqualTo("playpen-operator-redfish");
        assertThat(env.getValueFrom().getSecretKeyRef().getKey()).isEqualTo("password");
        assertThat(env.getValueFrom().getSecretKeyRef().getOptional()).as("installs without the Secret").isTrue();
    }

    @Test
    void probesUseTheirOwnListenerNotTheApiPort() throws Exception {
        Container c = operatorContainer(deployment());
        OperatorConfig config = deployedConfig();
        assertThat(config.healthPort()).as("--health-addr is set").isPositive();
        ContainerPort health = c.getPorts().stream().filter(p -> "health".equals(p.getName())).findFirst()
                .orElseThrow(() -> new AssertionError("container port \"health\" missing"));
        assertThat(health.getContainerPort()).isEqualTo(config.healthPort()).isNotEqualTo(config.listenPort());
        ContainerPort https = c.getPorts().stream().filter(p -> "https".equals(p.getName())).findFirst()
                .orElseThrow(() -> new AssertionError("container port \"https\" missing"));
        assertThat(https.getContainerPort()).isEqualTo(config.listenPort());

        assertProbe(c.getLivenessProbe(), "/healthz");
        assertProbe(c.getReadinessProbe(), "/readyz");
        if (c.getStartupProbe() != null) {
            assertProbe(c.getStartupProbe(), "/healthz");
        }
    }

    private static void assertProbe(Probe probe, String path) {
        assertThat(probe).as("probe on %s", path).isNotNull();
        assertThat(probe.getHttpGet().getScheme()).isEqualTo("HTTP");
        assertThat(probe.getHttpGet().getPath()).isEqualTo(path);
        assertThat(probe.getHttpGet().getPort().getStrVal()).isEqualTo("health");
    }

    @Test
    void serviceAccountsNamedByTheFlagsExist() throws Exception {
        Deployment d = deployment();
        OperatorConfig config = deployedConfig();
        String ns = d.getMetadata().getNamespace();
        Set<String> accounts = new java.util.HashSet<>();
        for (ObjectNode doc : RenderedDeploy.ofKind("ServiceAccount")) {
            ServiceAccount sa = StrictModel.read(doc, ServiceAccount.class);
            accounts.add(sa.getMetadata().getNamespace() + "/" + sa.getMetadata().getName());
        }
        assertThat(config.namespace()).isEqualTo(ns);
        assertThat(accounts).contains(
                ns + "/" + d.getSpec().getTemplate().getSpec().getServiceAccountName(),
                config.runnerNamespace() + "/" + config.runnerServiceAccountName(),
                config.runnerNamespace() + "/" + config.controlPlaneServiceAccountName());
        assertThat(RenderedDeploy.ofKind("Namespace")).extracting(n -> n.path("metadata").path("name").asText())
                .contains(ns, config.runnerNamespace());
    }

    @Test
    void serviceAndApiServiceLeadToTheOperatorsHttpsPort() throws Exception {
        Deployment d = deployment();
        OperatorConfig config = deployedConfig();
        Service svc = StrictModel.read(RenderedDeploy.single("Service"), Service.class);
        assertThat(svc.getMetadata().getName()).isEqualTo(config.serviceName());
        assertThat(svc.getMetadata().getNamespace()).isEqualTo(config.namespace());
        assertThat(d.getSpec().getTemplate().getMetadata().getLabels()).containsAllEntriesOf(svc.getSpec().getSelector());
        assertThat(svc.getSpec().getPorts()).hasSize(1);
        assertThat(svc.getSpec().getPorts().get(0).getPort()).isEqualTo(443);
        assertThat(svc.getSpec().getPorts().get(0).getTargetPort().getStrVal()).isEqualTo("https");

        APIService api = StrictModel.read(RenderedDeploy.single("APIService"), APIService.class);
        assertThat(api.getMetadata().getName()).isEqualTo(KubeApiCall.API_SERVICE_NAME);
        assertThat(api.getSpec().getGroup()).isEqualTo("playpen.unbounded-cloud.io");
        assertThat(api.getSpec().getVersion()).isEqualTo("v1alpha1");
        assertThat(api.getSpec().getGroupPriorityMinimum()).isEqualTo(1000);
        assertThat(api.getSpec().getVersionPriority()).isEqualTo(100);
        assertThat(api.getSpec().getInsecureSkipTLSVerify()).as("insecureSkipTLSVerify").isNotEqualTo(Boolean.TRUE);
        assertThat(api.getSpec().getService().getName()).isEqualTo(svc.getMetadata().getName());
        assertThat(api.getSpec().getService().getNamespace()).isEqualTo(svc.getMetadata().getNamespace());
        assertThat(api.getSpec().getService().getPort()).isEqualTo(443);
    }

    @Test
    void podDisruptionBudgetCoversTheOperatorPods() throws Exception {
        Deployment d = deployment();
        PodDisruptionBudget pdb = StrictModel.read(RenderedDeploy.single("PodDisruptionBudget"), PodDisruptionBudget.class);
        assertThat(pdb.getMetadata().getNamespace()).isEqualTo(d.getMetadata().getNamespace());
        assertThat(pdb.getSpec().getSelector().getMatchLabels()).isEqualTo(d.getSpec().getSelector().getMatchLabels());
        // with 2 replicas, at most one may be voluntarily evicted at a time
        if (pdb.getSpec().getMaxUnavailable() != null) {
            assertThat(pdb.getSpec().getMaxUnavailable().getIntVal()).isEqualTo(1);
        } else {
            assertThat(pdb.getSpec().getMinAvailable().getIntVal()).isEqualTo(1);
        }
    }
}
