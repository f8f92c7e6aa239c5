package io.unboundedcloud.playpen.model;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.ContainerPortBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarBuilder;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.ProbeBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import io.fabric8.kubernetes.api.model.ResourceRequirementsBuilder;
import io.fabric8.kubernetes.api.model.SecurityContextBuilder;
import io.fabric8.kubernetes.api.model.Toleration;
import io.fabric8.kubernetes.api.model.TolerationBuilder;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeBuilder;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.VolumeMountBuilder;
import io.unboundedcloud.playpen.config.OperatorConfig;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * Builds the runner and control-plane pods the pools create, field for field as the reference does.
 * Volumes {@code tun} and {@code kvm} are hostPath CharDevices mounted at their own paths (/dev/net/tun, /dev/kvm).
 */
public final class PodTemplates {
    static final String RUNNER_NAME_PREFIX = "playpen-runner-";
    static final String CONTROL_PLANE_NAME_PREFIX = "playpen-control-plane-";

    private static final String RUNNER_BINARY = "/unbounded/bin/playpen-runner";
    private static final String RUNNER_DATA_PATH = "/var/lib/playpen-runner";
    private static final String RUNNER_WIREGUARD_PATH = "/etc/playpen/wireguard";
    private static final String TUN_PATH = "/dev/net/tun";
    private static final String KVM_PATH = "/dev/kvm";
    private static final int RUNNER_HTTPS_PORT = 8443;
    private static final String K3S_KUBECONFIG = "/etc/rancher/k3s/k3s.yaml";
    private static final String K3S_KUBECONFIG_DIR = "/etc/rancher/k3s";
    private static final String K3S_DATA_PATH = "/var/lib/rancher/k3s";
    private static final int K3S_API_PORT = 6443;
    /** Copied from the operator's environment so pods reach the API server the way the operator does. */
    private static final List<String> SERVICE_ENV =
            List.of("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "KUBERNETES_SERVICE_PORT_HTTPS");

    private final OperatorConfig config;
    private final List<EnvVar> serviceEnv;

    /**
     * @param operatorEnv the operator's own environment (normally {@code System.getenv()}); only the
     *                    KUBERNETES_SERVICE_* entries are read, and blank values are skipped like the reference does
     */
    public PodTemplates(OperatorConfig config, Map<String, String> operatorEnv) {
        this.config = Objects.requireNonNull(config, "config");
        List<EnvVar> env = new ArrayList<>();
        for (String name : SERVICE_ENV) {
            String value = operatorEnv == null ? null : operatorEnv.get(name);
            if (value != null && !value.trim().isEmpty()) {
                env.add(new EnvVarBuilder().withName(name).withValue(value.trim()).build());
            }
        }
        this.serviceEnv = List.copyOf(env);
    }

    /** {@code playpen-runner-<arch>-<port>}. */
    public static String runnerName(String architecture, int hostPort) {
        return RUNNER_NAME_PREFIX + architecture + "-" + hostPort;
    }

    /**
     * {@code playpen-control-plane-<version without v>-<port>}. Characters a pod name cannot hold ('+', '_',
     * upper case) are mapped like the version label; plain versions such as v1.33.0 are unaffected.
     */
    public static String controlPlaneName(String version, int hostPort) {
        String bare = withV(version).substring(1).toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9.-]", "-");
        return CONTROL_PLANE_NAME_PREFIX + bare + "-" + hostPort;
    }

    /** The kubernetes-version label value: '+' and '_' become '-', leading/trailing '-' and '.' are trimmed. */
    public static String kubernetesVersionLabel(String version) {
        String v = withV(version).replace('+', '-').replace('_', '-');
        int start = 0;
        int end = v.length();
        while (start < end && (v.charAt(start) == '-' || v.charAt(start) == '.')) {
            start++;
        }
        while (end > start && (v.charAt(end - 1) == '-' || v.charAt(end - 1) == '.')) {
            end--;
        }
        return v.substring(start, end);
    }

    /** The pod for one member of a pool at the given hostPort. */
    public Pod forTarget(PoolTarget target, int hostPort) {
        return target.type() == ResourceType.RUNNER
                ? runner(target.variant(), hostPort)
                : controlPlane(target.variant(), hostPort);
    }

    /** A runner pod for {@code amd64} or {@code arm64} whose WireGuard port is published on {@code hostPort}. */
    public Pod runner(String architecture, int hostPort) {
        if (!ManagedPods.AMD64.equals(architecture) && !ManagedPods.ARM64.equals(architecture)) {
            throw new IllegalArgumentException("architecture must be amd64 or arm64, not " + architecture);
        }
        checkPort(hostPort);
        int listenPort = config.network().wireGuardListenPort();

        Map<String, String> labels = new LinkedHashMap<>();
        labels.put(PlaypenKeys.APP_NAME, PlaypenKeys.RUNNER_APP_NAME);
        labels.put(PlaypenKeys.APP_COMPONENT, PlaypenKeys.RUNNER_COMPONENT);
        labels.put(PlaypenKeys.RESOURCE_TYPE, ResourceType.RUNNER.wire());
        labels.put(PlaypenKeys.ARCHITECTURE, architecture);
        labels.put(PlaypenKeys.HOST_PORT, String.valueOf(hostPort));

        List<VolumeMount> mounts = new ArrayList<>(List.of(
                mount("data", RUNNER_DATA_PATH),
                mount("wireguard", RUNNER_WIREGUARD_PATH),
                mount("tun", TUN_PATH)));
        List<Volume> volumes = new ArrayList<>(List.of(
                emptyDir("data"),
                emptyDir("wireguard"),
                charDevice("tun", TUN_PATH)));
        if (config.runnerRequireKvm()) {
            mounts.add(mount("kvm", KVM_PATH));
            volumes.add(charDevice("kvm", KVM_PATH));
        }

        List<Toleration> tolerations = new ArrayList<>();
        if (config.runnerControlPlaneTolerations()) {
            tolerations.add(noSchedule("node-role.kubernetes.io/control-plane"));
            tolerations.add(noSchedule("node-role.kubernetes.io/master"));
        }

        Container runner = new ContainerBuilder()
                .withName("runner")
                .withImage(config.runnerImage())
                .withImagePullPolicy(config.runnerImagePullPolicy())
                .withCommand(RUNNER_BINARY)
                .withArgs(
                        "--architecture=" + architecture,
                        "--wireguard-private-key-file=" + RUNNER_WIREGUARD_PATH + "/privatekey",
                        "--wireguard-listen-port=" + listenPort)
                .withEnv(podEnv())
                .withPorts(
                        port("https", "TCP", RUNNER_HTTPS_PORT, null),
                        port(PlaypenKeys.WIREGUARD_PORT_NAME, "UDP", listenPort, hostPort))
                .withResources(resources("500m", "1Gi", "4", "8Gi"))
                .withLivenessProbe(httpsProbe("/healthz", "https", 10, 10))
                .withSecurityContext(new SecurityContextBuilder().withPrivileged(true).build())
                .withVolumeMounts(mounts)
                .build();

        return new PodBuilder()
                .withNewMetadata()
                    .withName(runnerName(architecture, hostPort))
                    .withNamespace(config.runnerNamespace())
                    .withLabels(labels)
                    .withAnnotations(Map.of(PlaypenKeys.SET_KUBE_SERVICE_HOST_FQDN, "true"))
                .endMetadata()
                .withNewSpec()
                    .withServiceAccountName(config.runnerServiceAccountName())
                    .withRestartPolicy("Always")
                    .withNodeSelector(Map.of("kubernetes.io/arch", architecture))
                    .withTolerations(tolerations.isEmpty() ? null : tolerations)
                    .withContainers(runner)
                    .withVolumes(volumes)
                .endSpec()
                .build();
    }

    /**
     * A k3s control-plane pod for {@code version} (with or without its {@code v}) whose API server is published
     * on {@code hostPort}. It carries no architecture label or nodeSelector: the reference sets neither, and
     * {@link ManagedPods#architecture} reads the absent label as amd64.
     */
    public Pod controlPlane(String version, int hostPort) {
        checkPort(hostPort);
        String v = withV(version);
        String gateway = config.network().guestGateway();
        String guestServer = config.network().guestApiServerUrl();

        Map<String, String> labels = new LinkedHashMap<>();
        labels.put(PlaypenKeys.APP_NAME, PlaypenKeys.CONTROL_PLANE_APP_NAME);
        labels.put(PlaypenKeys.APP_COMPONENT, PlaypenKeys.CONTROL_PLANE_COMPONENT);
        labels.put(PlaypenKeys.RESOURCE_TYPE, ResourceType.CONTROL_PLANE.wire());
        labels.put(PlaypenKeys.KUBERNETES_VERSION, kubernetesVersionLabel(v));
        labels.put(PlaypenKeys.HOST_PORT, String.valueOf(hostPort));

        // The k3s container gets no env, like the reference: only the helper talks to the outer API server.
        Container k3s = new ContainerBuilder()
                .withName("k3s")
                .withImage(config.controlPlaneImage().replace("{version}", v))
                .withImagePullPolicy(config.runnerImagePullPolicy())
                .withCommand("/bin/k3s")
                .withArgs(
                        "server",
                        "--disable-agent",
                        "--disable=traefik,servicelb,metrics-server,local-storage",
                        "--write-kubeconfig=" + K3S_KUBECONFIG,
                        "--write-kubeconfig-mode=0644",
                        "--tls-san=" + gateway,
                        "--advertise-address=127.0.0.1",
                        "--bind-address=0.0.0.0")
                .withPorts(port(PlaypenKeys.APISERVER_PORT_NAME, "TCP", K3S_API_PORT, hostPort))
                .withResources(resources("500m", "1Gi", "2", "4Gi"))
                .withLivenessProbe(httpsProbe("/readyz", PlaypenKeys.APISERVER_PORT_NAME, 30, 10))
                .withReadinessProbe(httpsProbe("/readyz", PlaypenKeys.APISERVER_PORT_NAME, 5, 5))
                .withSecurityContext(new SecurityContextBuilder().withPrivileged(true).build())
                .withVolumeMounts(mount("data", K3S_DATA_PATH), mount("kubeconfig", K3S_KUBECONFIG_DIR))
                .build();

        Container helper = new ContainerBuilder()
                .withName("helper")
                .withImage(config.runnerImage())
                .withImagePullPolicy(config.runnerImagePullPolicy())
                .withCommand(RUNNER_BINARY)
                .withArgs(
                        "control-plane",
                        "--kubeconfig=" + K3S_KUBECONFIG,
                        "--guest-server=" + guestServer,
                        "--kubernetes-version=" + v)
                .withEnv(podEnv())
                .withResources(resources("50m", "64Mi", "250m", "256Mi"))
                .withVolumeMounts(mount("kubeconfig", K3S_KUBECONFIG_DIR))
                .build();

        return new PodBuilder()
                .withNewMetadata()
                    .withName(controlPlaneName(v, hostPort))
                    .withNamespace(config.runnerNamespace())
                    .withLabels(labels)
                    .withAnnotations(Map.of(PlaypenKeys.CONTROL_PLANE_GUEST_SERVER, guestServer))
                .endMetadata()
                .withNewSpec()
                    .withServiceAccountName(config.controlPlaneServiceAccountName())
                    .withRestartPolicy("Always")
                    .withContainers(k3s, helper)
                    .withVolumes(emptyDir("data"), emptyDir("kubeconfig"))
                .endSpec()
                .build();
    }

    private List<EnvVar> podEnv() {
        List<EnvVar> env = new ArrayList<>();
        env.add(fieldRef("POD_NAME", "metadata.name"));
        env.add(fieldRef("POD_NAMESPACE", "metadata.namespace"));
        env.addAll(serviceEnv);
        return env;
    }

    private static String withV(String version) {
        Objects.requireNonNull(version, "version");
        String v = version.trim();
        if (v.isEmpty()) {
            throw new IllegalArgumentException("kubernetes version must not be empty");
        }
        return v.startsWith("v") ? v : "v" + v;
    }

    private static void checkPort(int hostPort) {
        if (hostPort < 1 || hostPort > 65535) {
            throw new IllegalArgumentException("hostPort must be between 1 and 65535, not " + hostPort);
        }
    }

    private static EnvVar fieldRef(String name, String path) {
        return new EnvVarBuilder().withName(name)
                .withNewValueFrom().withNewFieldRef().withFieldPath(path).endFieldRef().endValueFrom()
                .build();
    }

    private static ContainerPort port(String name, String protocol, int containerPort, Integer hostPort) {
        return new ContainerPortBuilder().withName(name).withProtocol(protocol)
                .withContainerPort(containerPort).withHostPort(hostPort).build();
    }

    private static ResourceRequirements resources(String cpuReq, String memReq, String cpuLim, String memLim) {
        return new ResourceRequirementsBuilder()
                .withRequests(quantities(cpuReq, memReq))
                .withLimits(quantities(cpuLim, memLim))
                .build();
    }

    private static Map<String, Quantity> quantities(String cpu, String memory) {
        Map<String, Quantity> q = new LinkedHashMap<>();
        q.put("cpu", new Quantity(cpu));
        q.put("memory", new Quantity(memory));
        return q;
    }

    private static Probe httpsProbe(String path, String portName, int initialDelay, int period) {
        return new ProbeBuilder()
                .withNewHttpGet().withPath(path).withPort(new IntOrString(portName)).withScheme("HTTPS").endHttpGet()
                .withInitialDelaySeconds(initialDelay)
                .withPeriodSeconds(period)
                .build();
    }

    private static VolumeMount mount(String name, String path) {
        return new VolumeMountBuilder().withName(name).withMountPath(path).build();
    }

    private static Volume emptyDir(String name) {
        return new VolumeBuilder().withName(name).withNewEmptyDir().endEmptyDir().build();
    }

    private static Volume charDevice(String name, String path) {
        return new VolumeBuilder().withName(name)
                .withNewHostPath().withPath(path).withType("CharDevice").endHostPath().build();
    }

    private static Toleration noSchedule(String key) {
        return new TolerationBuilder().withKey(key).withOperator("Exists").withEffect("NoSchedule").build();
    }
}
