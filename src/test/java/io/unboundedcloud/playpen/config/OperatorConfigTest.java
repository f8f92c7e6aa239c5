package io.unboundedcloud.playpen.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class OperatorConfigTest {

    @Test
    void specA10Defaults() {
        OperatorConfig c = OperatorConfig.parse();
        assertThat(c.listenHost()).isEmpty();
        assertThat(c.listenPort()).isEqualTo(8443);
        assertThat(c.namespace()).isEqualTo("playpen");
        assertThat(c.serviceName()).isEqualTo("playpen-operator");
        assertThat(c.tlsSecretName()).isEqualTo("playpen-operator-tls");
        assertThat(c.runnerNamespace()).isEqualTo("playpen");
        assertThat(c.runnerLabelSelector()).isEqualTo(Map.of("app.kubernetes.io/name", "playpen-runner"));
        assertThat(c.runnerImage()).isEqualTo("ghcr.io/azure/playpen:latest");
        assertThat(c.runnerImagePullPolicy()).isEqualTo("Always");
        assertThat(c.runnerServiceAccountName()).isEqualTo("playpen-runner");
        assertThat(c.runnerAmd64Count()).isEqualTo(1);
        assertThat(c.runnerArm64Count()).isEqualTo(1);
        assertThat(c.runnerPorts()).isEqualTo(new OperatorConfig.PortRange(51820, 51899));
        assertThat(c.runnerPorts().size()).isEqualTo(80);
        assertThat(c.runnerRequireKvm()).isTrue();
        assertThat(c.runnerControlPlaneTolerations()).isFalse();
        assertThat(c.runnerPublicRedfishUrl()).isEmpty();
        assertThat(c.controlPlaneCount()).isZero();
        assertThat(c.controlPlaneVersions()).containsExactly("v1.33.0");
        assertThat(c.controlPlaneImage()).isEqualTo("rancher/k3s:{version}-k3s1");
        assertThat(c.controlPlaneServiceAccountName()).isEqualTo("playpen-control-plane");
        assertThat(c.controlPlanePorts()).isEqualTo(new OperatorConfig.PortRange(16443, 16499));
        assertThat(c.playpenTtl()).isEqualTo(Duration.ofHours(1));
        assertThat(c.reconcileInterval()).isEqualTo(Duration.ofSeconds(30));
    }

    @Test
    void specA5NetworkDefaults() {
        NetworkProfile n = OperatorConfig.parse().network();
        assertThat(n).isEqualTo(new NetworkProfile("192.168.200.1", "192.168.200.10", "255.255.255.0", "52:54:00:aa:bb:01",
                List.of("8.8.8.8"), "wg0", "10.88.0.1/24", "10.88.0.2/32", 51820, "vxlan0", 12001, 4789, "10.88.0.1",
                "10.88.0.2", "https://10.88.0.1:8443", "1"));
        assertThat(n.guestApiServerUrl()).isEqualTo("https://192.168.200.1:6443");
        assertThat(OperatorConfig.parse().redfishBaseUrl()).isEqualTo("https://10.88.0.1:8443");
    }

    @Test
    void additionalDefaults() {
        OperatorConfig c = OperatorConfig.parse();
        assertThat(c.kubeconfig()).isEmpty();
        assertThat(c.leaderElect()).isTrue();
        assertThat(c.leaderElectionNamespace()).isEqualTo("playpen");
        assertThat(c.leaderElectionLeaseName()).isEqualTo("playpen-operator");
        assertThat(c.managementHost()).isEqualTo("127.0.0.1");
        assertThat(c.managementPort()).isEqualTo(9876);
        assertThat(c.sarAllowedTtl()).isEqualTo(Duration.ofSeconds(10));
        assertThat(c.sarDeniedTtl()).isEqualTo(Duration.ofSeconds(5));
        assertThat(c.retryAfterSeconds()).isEqualTo(1);
        assertThat(c.dev()).isFalse();
    }

    @Test
    void nameEqualsValue() {
        OperatorConfig c = OperatorConfig.parse(
                "--listen-addr=127.0.0.1:9443", "--namespace=ops", "--runner-namespace=pool",
                "--runner-label-selector=app.kubernetes.io/name=playpen-runner, pool==blue",
                "--runner-image=registry.example.com/playpen:1.2", "--runner-image-pull-policy=IfNotPresent",
                "--runner-amd64-count=3", "--runner-arm64-count=0",
                "--runner-wireguard-host-port-start=40000", "--runner-wireguard-host-port-end=40000",
                "--runner-require-kvm=false", "--runner-control-plane-tolerations=true",
                "--runner-public-redfish-url= https://redfish.example.com:9443 ",
                "--control-plane-count=2", "--control-plane-versions=v1.31.2,1.33.0, v1.32.9-rc.1,v1.31.2",
                "--control-plane-image=mirror/k3s:{version}",
                "--playpen-ttl=1h30m", "--reconcile-interval=90s");
        assertThat(c.listenHost()).isEqualTo("127.0.0.1");
        assertThat(c.listenPort()).isEqualTo(9443);
        assertThat(c.namespace()).isEqualTo("ops");
        assertThat(c.leaderElectionNamespace()).isEqualTo("ops");
        assertThat(c.runnerNamespace()).isEqualTo("pool");
        assertThat(c.runnerLabelSelector()).containsExactly(
                Map.entry("app.kubernetes.io/name", "playpen-runner"), Map.entry("pool", "blue"));
        assertThat(c.runnerImage()).isEqualTo("registry.example.com/playpen:1.2");
        assertThat(c.runnerImagePullPolicy()).isEqualTo("IfNotPresent");
        assertThat(c.runnerAmd64Count()).isEqualTo(3);
        assertThat(c.runnerArm64Count()).isZero();
        assertThat(c.runnerPorts()).isEqualTo(new OperatorConfig.PortRange(40000, 40000));
        assertThat(c.runnerRequireKvm()).isFalse();
        assertThat(c.runnerControlPlaneTolerations()).isTrue();
        assertThat(c.runnerPublicRedfishUrl()).isEqualTo("https://redfish.example.com:9443");
        assertThat(c.redfishBaseUrl()).isEqualTo("https://redfish.example.com:9443");
        assertThat(c.controlPlaneCount()).isEqualTo(2);
        assertThat(c.controlPlaneVersions()).containsExactly("v1.31.2", "v1.33.0", "v1.32.9-rc.1");
        assertThat(c.controlPlaneImage()).isEqualTo("mirror/k3s:{version}");
        assertThat(c.playpenTtl()).isEqualTo(Duration.ofMinutes(90));
        assertThat(c.reconcileInterval()).isEqualTo(Duration.ofSeconds(90));
    }

    @Test
    void otherFlagForms() {
        // Go's flag package also takes -name=value, --name value and a bare boolean flag
        OperatorConfig c = OperatorConfig.parse("-namespace=ops", "--service-name", "svc", "--runner-control-plane-tolerations",
                "--playpen-ttl=0");
        assertThat(c.namespace()).isEqualTo("ops");
        assertThat(c.serviceName()).isEqualTo("svc");
        assertThat(c.runnerControlPlaneTolerations()).isTrue();
        assertThat(c.playpenTtl()).isZero();
    }

    @Test
    void emptySelectorSelectsEveryRunner() {
        assertThat(OperatorConfig.parse("--runner-label-selector=").runnerLabelSelector()).isEmpty();
    }

    @Test
    void selectorWithAnEmptyValue() {
        assertThat(OperatorConfig.parse("--runner-label-selector=pool=").runnerLabelSelector()).isEqualTo(Map.of("pool", ""));
        assertThat(OperatorConfig.parse("--runner-label-selector=pool==").runnerLabelSelector()).isEqualTo(Map.of("pool", ""));
    }

    @Test
    void unknownFlagIsNamed() {
        assertThatThrownBy(() -> OperatorConfig.parse("--namespace=x", "--runner-amd64-cuont=2"))
                .isInstanceOf(ConfigException.class)
                .hasMessage("unknown flag --runner-amd64-cuont");
        assertThatThrownBy(() -> OperatorConfig.parse("--bogus"))
                .isInstanceOf(ConfigException.class)
                .hasMessage("unknown flag --bogus");
    }

    @Test
    void positionalArgumentIsRefused() {
        assertThatThrownBy(() -> OperatorConfig.parse("namespace=x"))
                .isInstanceOf(ConfigException.class)
                .hasMessage("unexpected argument \"namespace=x\": flags are written --name=value");
    }

    @Test
    void missingValueIsNamed() {
        assertThatThrownBy(() -> OperatorConfig.parse("--namespace"))
                .isInstanceOf(ConfigException.class)
                .hasMessage("flag --namespace needs a value");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "--runner-amd64-count=-1 | invalid value \"-1\" for flag --runner-amd64-count: must be between 0 and 10000",
            "--runner-arm64-count=two | invalid value \"two\" for flag --runner-arm64-count: must be an integer",
            "--control-plane-count=-3 | invalid value \"-3\" for flag --control-plane-count: must be between 0 and 10000",
            "--runner-wireguard-host-port-start=51900 | invalid value \"51899\" for flag --runner-wireguard-host-port-end: must not be lower than --runner-wireguard-host-port-start (51900)",
            "--control-plane-apiserver-host-port-end=16000 | invalid value \"16000\" for flag --control-plane-apiserver-host-port-end: must not be lower than --control-plane-apiserver-host-port-start (16443)",
            "--runner-wireguard-host-port-end=70000 | invalid value \"70000\" for flag --runner-wireguard-host-port-end: must be between 1 and 65535",
            "--playpen-ttl=1x | invalid value \"1x\" for flag --playpen-ttl: must be a duration such as 90s, 30m or 1h30m",
            "--playpen-ttl=60 | invalid value \"60\" for flag --playpen-ttl: must be a duration such as 90s, 30m or 1h30m",
            "--playpen-ttl=- | invalid value \"-\" for flag --playpen-ttl: must be a duration such as 90s, 30m or 1h30m",
            "--playpen-ttl=-1h | invalid value \"-1h\" for flag --playpen-ttl: must not be negative",
            "--reconcile-interval=0 | invalid value \"0\" for flag --reconcile-interval: must be greater than 0",
            "--reconcile-interval=soon | invalid value \"soon\" for flag --reconcile-interval: must be a duration such as 90s, 30m or 1h30m",
            "--control-plane-versions=1.x | invalid value \"1.x\" for flag --control-plane-versions: \"1.x\" is not a version like v1.33.0",
            "--control-plane-versions=v1.33.0,latest | invalid value \"v1.33.0,latest\" for flag --control-plane-versions: \"latest\" is not a version like v1.33.0",
            "--control-plane-versions=, | invalid value \",\" for flag --control-plane-versions: must list at least one version",
            "--runner-image-pull-policy=always | invalid value \"always\" for flag --runner-image-pull-policy: must be Always, IfNotPresent or Never",
            "--runner-require-kvm=yes | invalid value \"yes\" for flag --runner-require-kvm: must be true or false",
            "--runner-control-plane-tolerations= | invalid value \"\" for flag --runner-control-plane-tolerations: must be true or false",
            "--namespace=Playpen | invalid value \"Playpen\" for flag --namespace: must be a Kubernetes object name",
            "--runner-image= | invalid value \"\" for flag --runner-image: must not be empty",
            "--listen-addr=8443 | invalid value \"8443\" for flag --listen-addr: must be host:port",
            "--listen-addr=:http | invalid value \":http\" for flag --listen-addr: must be host:port",
            "--runner-label-selector=env!=prod | invalid value \"env!=prod\" for flag --runner-label-selector: only equality selectors key=value are supported",
            "--runner-label-selector=env in (a) | invalid value \"env in (a)\" for flag --runner-label-selector: only equality selectors key=value are supported",
            "--runner-label-selector=env=a b | invalid value \"env=a b\" for flag --runner-label-selector: \"a b\" is not a label value",
    })
    void badValueIsOneLineNamingTheFlag(String arg, String message) {
        assertThatThrownBy(() -> OperatorConfig.parse(arg))
                .isInstanceOf(ConfigException.class)
                .hasMessage(message)
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
    }

    @Test
    void everyFlagHasItsDefaultAndHelp() {
        for (Flag f : Flag.values()) {
            assertThat(Flag.byName(f.flagName())).isSameAs(f);
            assertThat(f.help()).as(f.flagName()).isNotBlank();
        }
        assertThat(Flag.byName("nope")).isNull();
        assertThat(Flag.PLAYPEN_TTL.defaultValue()).isEqualTo("1h");
        assertThat(Flag.RECONCILE_INTERVAL.defaultValue()).isEqualTo("30s");
    }

    @Test
    void devReplicaFlags() {
        OperatorConfig c = OperatorConfig.parse("--dev-operators=0", "--dev-operator-addrs=127.0.0.1:9441-9443, localhost:80");
        assertThat(c.devOperators()).isZero();
        assertThat(c.devOperatorAddrs()).containsExactly("127.0.0.1:9441", "127.0.0.1:9442", "127.0.0.1:9443", "localhost:80");
        assertThat(OperatorConfig.parse().devOperators()).isEqualTo(1);
        assertThat(OperatorConfig.parse().devOperatorAddrs()).isEmpty();
        for (String bad : new String[] {"--dev-operators=2", "--dev-operator-addrs=9441", "--dev-operator-addrs=h:9443-9441",
            "--dev-operator-addrs=h:0", "--dev-operator-addrs=h:1-100"}) {
            assertThatThrownBy(() -> OperatorConfig.parse(bad)).as(bad).isInstanceOf(ConfigException.class)
                    .hasMessageContaining("--dev-operator");
        }
    }
}
