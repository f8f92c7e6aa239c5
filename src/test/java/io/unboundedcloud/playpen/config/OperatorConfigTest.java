package io.unboundedcloud.playpen.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import io.unboundedcloud.playpen.model.LabelSelector;
import io.unboundedcloud.playpen.model.LabelSelector.Op;
import io.unboundedcloud.playpen.model.LabelSelector.Requirement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

public class OperatorConfigTest {

    @Test
    void specA10Defaults() {
        OperatorConfig c = OperatorConfig.parse();
        assertThat(c.listenHost()).isEmpty();
        assertThat(c.listenPort()).isEqualTo(8443);
        assertThat(c.namespace()).isEqualTo("playpen");
        assertThat(c.serviceName()).isEqualTo("playpen-operator");
        assertThat(c.tlsSecretName()).isEqualTo("playpen-operator-tls");
        assertThat(c.runnerNamespace()).isEqualTo("playpen");
        assertThat(c.runnerLabelSelector()).isEqualTo(LabelSelector.parse("app.kubernetes.io/name=playpen-runner"));
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
                "10.88.0.2", "https://10.88.0.1:8443", "1", "", ""));
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
        assertThat(c.runnerLabelSelector().requirements()).containsExactly(
                new Requirement("app.kubernetes.io/name", Op.EQUALS, List.of("playpen-runner")),
                new Requirement("pool", Op.DOUBLE_EQUALS, List.of("blue")));
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
        LabelSelector all = OperatorConfig.parse("--runner-label-selector=").runnerLabelSelector();
        assertThat(all.isEmpty()).isTrue();
        assertThat(all.matches(Map.of())).isTrue();
    }

    @Test
    void selectorWithAnEmptyValue() {
        assertThat(OperatorConfig.parse("--runner-label-selector=pool=").runnerLabelSelector().requirements())
                .containsExactly(new Requirement("pool", Op.EQUALS, List.of("")));
        assertThat(OperatorConfig.parse("--runner-label-selector=pool==").runnerLabelSelector().requirements())
                .containsExactly(new Requirement("pool", Op.DOUBLE_EQUALS, List.of("")));
    }

    @Test
    void setBasedSelectorIsAccepted() {
        LabelSelector s = OperatorConfig.parse(
                "--runner-label-selector=app.kubernetes.io/name in (playpen-runner), pool notin (green), !quarantined, tier")
                .runnerLabelSelector();
        assertThat(s.matches(Map.of("app.kubernetes.io/name", "playpen-runner", "tier", "a"))).isTrue();
        assertThat(s.matches(Map.of("app.kubernetes.io/name", "playpen-runner", "tier", "a", "pool", "green"))).isFalse();
        assertThat(s.matches(Map.of("app.kubernetes.io/name", "playpen-runner", "tier", "a", "quarantined", ""))).isFalse();
        assertThat(s.matches(Map.of("app.kubernetes.io/name", "playpen-runner"))).isFalse();
    }

    /** The reference's flags, in its main.go order, with DefaultConfig()'s defaults (operator and runner config.go). */
    public static final String[][] REFERENCE_DEFAULTS = {
        {"listen-addr", ":8443"}, {"namespace", "playpen"}, {"service-name", "playpen-operator"},
        {"tls-secret-name", "playpen-operator-tls"}, {"runner-namespace", "playpen"},
        {"runner-label-selector", "app.kubernetes.io/name=playpen-runner"}, {"runner-image", "ghcr.io/azure/playpen:latest"},
        {"runner-image-pull-policy", "Always"}, {"runner-service-account-name", "playpen-runner"},
        {"runner-amd64-count", "1"}, {"runner-arm64-count", "1"},
        {"runner-wireguard-host-port-start", "51820"}, {"runner-wireguard-host-port-end", "51899"},
        {"runner-require-kvm", "true"}, {"runner-control-plane-tolerations", "false"},
        {"external-client-site", "playpen-external"}, {"control-plane-count", "0"}, {"control-plane-versions", "v1.33.0"},
        {"control-plane-image", "rancher/k3s:{version}-k3s1"}, {"control-plane-service-account-name", "playpen-control-plane"},
        {"control-plane-apiserver-host-port-start", "16443"}, {"control-plane-apiserver-host-port-end", "16499"},
        {"playpen-ttl", "1h"}, {"reconcile-interval", "30s"},
        {"runner-listen-addr", "10.88.0.1:8443"}, {"runner-public-redfish-url", ""},
        {"runner-wireguard-interface", "wg0"}, {"runner-wireguard-server-address", "10.88.0.1/24"},
        {"runner-wireguard-client-address", "10.88.0.2/32"}, {"runner-wireguard-listen-port", "51820"},
        {"runner-vxlan-interface", "vxlan0"}, {"runner-vxlan-vni", "12001"}, {"runner-vxlan-port", "4789"},
        {"runner-guest-mac", "52:54:00:aa:bb:01"}, {"runner-guest-ipv4", "192.168.200.10"},
        {"runner-guest-subnet-mask", "255.255.255.0"}, {"runner-guest-gateway", "192.168.200.1"},
        {"runner-guest-dns", "8.8.8.8"}, {"runner-redfish-username", ""}, {"runner-redfish-password", ""},
        {"runner-redfish-device-id", "1"},
    };

    @Test
    void everyReferenceFlagExistsWithTheReferenceDefaultAndComesFirst() {
        List<Flag> expected = new ArrayList<>();
        for (String[] nameDefault : REFERENCE_DEFAULTS) {
            Flag f = Flag.byName(nameDefault[0]);
            assertThat(f).as(nameDefault[0]).isNotNull();
            assertThat(f.defaultValue()).as(nameDefault[0]).isEqualTo(nameDefault[1]);
            expected.add(f);
        }
        assertThat(Flag.REFERENCE).containsExactlyElementsOf(expected);
        assertThat(List.of(Flag.values()).subList(0, expected.size())).containsExactlyElementsOf(expected);
    }

    /**
     * The args of the reference's own Deployment (deploy/playpen/03-operator.yaml.tmpl of Azure/unbounded, commit
     * edd7b3d, rendered with its template defaults), exactly as it passes them.
     */
    public static final String[] REFERENCE_DEPLOYMENT_ARGS = {
        "--listen-addr=:8443",
        "--namespace=playpen",
        "--service-name=playpen-operator",
        "--runner-namespace=playpen",
        "--runner-label-selector=app.kubernetes.io/name=playpen-runner",
        "--runner-image=ghcr.io/azure/playpen:latest",
        "--runner-image-pull-policy=Always",
        "--runner-service-account-name=playpen-runner",
        "--runner-amd64-count=2",
        "--runner-arm64-count=2",
        "--runner-wireguard-host-port-start=51820",
        "--runner-wireguard-host-port-end=51899",
        "--runner-require-kvm=true",
        "--runner-control-plane-tolerations=false",
        "--playpen-ttl=1h",
    };

    @Test
    void theReferenceDeploymentArgsMeanTheSameHere() {
        assertThat(OperatorConfig.request(REFERENCE_DEPLOYMENT_ARGS)).isEqualTo(OperatorConfig.Request.RUN);
        OperatorConfig c = OperatorConfig.parse(REFERENCE_DEPLOYMENT_ARGS);
        assertThat(c.listenHost()).isEmpty();
        assertThat(c.listenPort()).isEqualTo(8443);
        assertThat(c.namespace()).isEqualTo("playpen");
        assertThat(c.serviceName()).isEqualTo("playpen-operator");
        assertThat(c.runnerNamespace()).isEqualTo("playpen");
        assertThat(c.runnerLabelSelector()).isEqualTo(LabelSelector.equality(Map.of("app.kubernetes.io/name", "playpen-runner")));
        assertThat(c.runnerImage()).isEqualTo("ghcr.io/azure/playpen:latest");
        assertThat(c.runnerImagePullPolicy()).isEqualTo("Always");
        assertThat(c.runnerServiceAccountName()).isEqualTo("playpen-runner");
        assertThat(c.runnerAmd64Count()).isEqualTo(2);
        assertThat(c.runnerArm64Count()).isEqualTo(2);
        assertThat(c.runnerPorts()).isEqualTo(new OperatorConfig.PortRange(51820, 51899));
        assertThat(c.runnerRequireKvm()).isTrue();
        assertThat(c.runnerControlPlaneTolerations()).isFalse();
        assertThat(c.playpenTtl()).isEqualTo(Duration.ofHours(1));
        // everything it does not pass keeps the reference's default
        assertThat(c.tlsSecretName()).isEqualTo("playpen-operator-tls");
        assertThat(c.reconcileInterval()).isEqualTo(Duration.ofSeconds(30));
        assertThat(c.network()).isEqualTo(OperatorConfig.parse().network());
    }

    @Test
    void runnerFlagsReachTheAllocAnswerValues() {
        OperatorConfig c = OperatorConfig.parse(
                "--runner-guest-mac=52:54:00:00:00:02", "--runner-guest-ipv4=10.1.0.10", "--runner-guest-subnet-mask=255.255.0.0",
                "--runner-guest-gateway=10.1.0.1", "--runner-guest-dns=1.1.1.1,9.9.9.9",
                "--runner-wireguard-interface=wg9", "--runner-wireguard-server-address=10.77.0.1/16",
                "--runner-wireguard-client-address=10.77.0.9/32", "--runner-wireguard-listen-port=51000",
                "--runner-vxlan-interface=vx1", "--runner-vxlan-vni=42", "--runner-vxlan-port=8472",
                "--runner-listen-addr=10.77.0.1:9443",
                "--runner-redfish-username=admin", "--runner-redfish-password=s3cret", "--runner-redfish-device-id=7",
                "--external-client-site=edge-1");
        assertThat(c.network()).isEqualTo(new NetworkProfile("10.1.0.1", "10.1.0.10", "255.255.0.0", "52:54:00:00:00:02",
                List.of("1.1.1.1", "9.9.9.9"), "wg9", "10.77.0.1/16", "10.77.0.9/32", 51000, "vx1", 42, 8472, "10.77.0.1",
                "10.77.0.9", "https://10.77.0.1:9443", "7", "admin", "s3cret"));
        assertThat(c.redfishBaseUrl()).isEqualTo("https://10.77.0.1:9443");
        assertThat(c.network().toString()).doesNotContain("s3cret").contains("redfishUsername=admin");
        assertThat(c.network().guestApiServerUrl()).isEqualTo("https://10.1.0.1:6443");
    }

    /** listen addr | wireguard server address | default Redfish URL (the reference's defaultRunnerPublicRedfishURL) */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "10.88.0.1:8443 | 10.88.0.1/24    | https://10.88.0.1:8443",
        ":9000          | 10.88.0.1/24    | https://10.88.0.1:9000",
        "10.88.0.1      | 10.88.0.1/24    | https://10.88.0.1:8443",
        "'10.88.0.1:'   | 10.88.0.1/24    | https://10.88.0.1:8443",
        "[fd00::1]:7443 | fd00::1/64      | https://[fd00::1]:7443",
        "fd00::1:7443   | 10.88.0.1       | https://10.88.0.1:8443"})
    void defaultRedfishUrl(String listen, String server, String url) {
        OperatorConfig c = OperatorConfig.parse("--runner-listen-addr=" + listen, "--runner-wireguard-server-address=" + server);
        assertThat(c.network().redfishUrl()).isEqualTo(url);
        assertThat(c.redfishBaseUrl()).isEqualTo(url);
        assertThat(OperatorConfig.parse("--runner-listen-addr=" + listen, "--runner-public-redfish-url=https://bmc.example")
                .redfishBaseUrl()).isEqualTo("https://bmc.example");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {"0 | 0", "-1h | 0", "-1ns | 0", "1h30m | 5400"})
    void nonPositiveTtlDisablesExpiry(String ttl, long seconds) {
        assertThat(OperatorConfig.parse("--playpen-ttl=" + ttl).playpenTtl()).isEqualTo(Duration.ofSeconds(seconds));
    }

    @Test
    void repeatedListFlagsAccumulate() {
        OperatorConfig c = OperatorConfig.parse("--control-plane-versions=v1.33.0", "--control-plane-versions", "v1.34.0,1.35.1",
                "--runner-guest-dns=1.1.1.1", "--runner-guest-dns=9.9.9.9");
        assertThat(c.controlPlaneVersions()).containsExactly("v1.33.0", "v1.34.0", "v1.35.1");
        assertThat(c.network().dns()).containsExactly("1.1.1.1", "9.9.9.9");
        // the first occurrence replaces the default rather than appending to it
        assertThat(OperatorConfig.parse("--control-plane-versions=v1.34.0").controlPlaneVersions()).containsExactly("v1.34.0");
        assertThat(OperatorConfig.parse("--runner-guest-dns=").network().dns()).isEmpty();
        // a repeated scalar flag: the last one wins
        assertThat(OperatorConfig.parse("--namespace=a", "--namespace=b").namespace()).isEqualTo("b");
    }

    @Test
    void versionsWhosePodsKubernetesTakesAreAccepted() {
        String longest = "v1.33.0-" + "a".repeat(55);
        assertThat(OperatorConfig.parse("--control-plane-versions=" + longest + ",v1.34.0+k3s1,1.35.0-rc.1,v1.36.0-")
                .controlPlaneVersions()).containsExactly(longest, "v1.34.0+k3s1", "v1.35.0-rc.1", "v1.36.0-");
    }

    @Test
    void emptyValuesTheReferenceTakesAsItsDefaults() {
        // the reference trims these and uses its default when nothing is left (runnerPod, controlPlanePod,
        // EnsureTLSSecret), so a Deployment that passes them empty starts it
        OperatorConfig c = OperatorConfig.parse("--runner-image-pull-policy=", "--control-plane-image= ", "--service-name=");
        assertThat(c.runnerImagePullPolicy()).isEqualTo("Always");
        assertThat(c.controlPlaneImage()).isEqualTo("rancher/k3s:{version}-k3s1");
        assertThat(c.serviceName()).isEqualTo("playpen-operator");
        assertThat(OperatorConfig.parse("--runner-image-pull-policy= IfNotPresent ").runnerImagePullPolicy())
                .isEqualTo("IfNotPresent");
    }

    @Test
    void goBooleansAndIntegers() {
        assertThat(OperatorConfig.parse("--runner-require-kvm=F").runnerRequireKvm()).isFalse();
        assertThat(OperatorConfig.parse("--runner-require-kvm=FALSE").runnerRequireKvm()).isFalse();
        assertThat(OperatorConfig.parse("--runner-control-plane-tolerations=t").runnerControlPlaneTolerations()).isTrue();
        assertThat(OperatorConfig.parse("--runner-control-plane-tolerations=True").runnerControlPlaneTolerations()).isTrue();
        assertThat(OperatorConfig.parse("--runner-amd64-count=0x10").runnerAmd64Count()).isEqualTo(16);
        assertThat(OperatorConfig.parse("--runner-amd64-count=010").runnerAmd64Count()).isEqualTo(8);
        assertThat(OperatorConfig.parse("--runner-amd64-count=1_0").runnerAmd64Count()).isEqualTo(10);
        assertThat(OperatorConfig.parse("--runner-vxlan-vni=+12").network().vxlanVni()).isEqualTo(12);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "--help | HELP", "-h | HELP", "-help | HELP", "--help=true | HELP", "--help=false | RUN", "--version | VERSION",
        "-v | VERSION", "--version=1 | VERSION", "--namespace=x | RUN"})
    void helpAndVersionRequests(String arg, OperatorConfig.Request expected) {
        assertThat(OperatorConfig.request(arg)).isEqualTo(expected);
        assertThat(OperatorConfig.request("--namespace=x", arg, "--runner-amd64-count=2")).isEqualTo(expected);
    }

    @Test
    void helpWinsOverVersionButNotOverABadFlag() {
        assertThat(OperatorConfig.request("--version", "--help")).isEqualTo(OperatorConfig.Request.HELP);
        assertThatThrownBy(() -> OperatorConfig.request("--help", "--no-such-flag")).hasMessage("unknown flag --no-such-flag");
        assertThatThrownBy(() -> OperatorConfig.request("--help=maybe")).hasMessageContaining("--help: must be true or false");
        // help and version are not configuration: parse ignores them
        assertThat(OperatorConfig.parse("--help", "--version").namespace()).isEqualTo("playpen");
    }

    /** A flag that takes a duration says so in the usage, whatever its default (pflag's "duration" column). */
    @Test
    void everyFlagThatTakesADurationIsLabelledDuration() {
        String usage = OperatorConfig.usage();
        int durations = 0;
        for (Flag f : Flag.values()) {
            String refusal;
            try {
                OperatorConfig.parse("--" + f.flagName() + "=7");
                refusal = "";
            } catch (RuntimeException e) {
                refusal = String.valueOf(e.getMessage());
            }
            if (refusal.contains("must be a duration")) {
                durations++;
                assertThat(usage).as(f.flagName()).containsPattern("(?m)^      --" + Pattern.quote(f.flagName())
                        + " duration ");
            }
        }
        assertThat(durations).as("flags found to take a duration").isGreaterThan(5);
    }

    @Test
    void usageListsEveryFlagWithItsDefault() {
        String usage = OperatorConfig.usage();
        assertThat(usage).startsWith("Aggregated Kubernetes API allocator for playpen runner pods\n\nUsage:\n  playpen-operator [flags]\n");
        for (Flag f : Flag.values()) {
            assertThat(usage).as(f.flagName()).containsPattern("(?m)^      --" + Pattern.quote(f.flagName()) + "[ a-z0-9]*   "
                    + Pattern.quote(f.help()));
        }
        assertThat(usage).contains("  -h, --help ").contains("  -v, --version ")
                .contains("--playpen-ttl duration ").contains("(default 1h)")
                .contains("--control-plane-versions strings ").contains("(default [v1.33.0])")
                .contains("--namespace string ").contains("(default \"playpen\")")
                .contains("--runner-amd64-count int ");
        // sorted by name, like pflag
        List<String> names = usage.lines().filter(l -> l.contains("--")).map(l -> l.trim().replaceFirst("^-., ", "").split(" ")[0])
                .toList();
        assertThat(names).isSorted().hasSize(Flag.values().length + 2);
        // one column for the descriptions, three spaces after the longest flag, as cobra prints them
        List<String> rows = usage.lines().filter(l -> l.trim().startsWith("-")).toList();
        assertThat(rows).hasSize(Flag.values().length + 2);
        java.util.function.ToIntFunction<String> flagEnd = row -> row.indexOf("   ", row.indexOf('-'));
        int longest = rows.stream().mapToInt(flagEnd).max().orElseThrow();
        for (String row : rows) {
            assertThat(row.substring(flagEnd.applyAsInt(row), longest + 3)).as(row).isBlank();
            assertThat(row.charAt(longest + 3)).as(row).isNotEqualTo(' ');
        }
    }

    @Test
    void unknownFlagIsNamed() {
        assertThatThrownBy(() -> OperatorConfig.parse("--namespace=x", "--runner-amd64-cuont=2"))
                .isInstanceOf(ConfigException.class)
                .hasMessage("unknown flag --runner-amd64-cuont");
        assertThatThrownBy(() -> OperatorConfig.parse("--bogus"))
                .isInstanceOf(ConfigException.class)
                .hasMessage("unknown flag --bogus");
        for (String nameless : new String[] {"--=playpen", "---namespace=playpen", "-=x"}) {
            assertThatThrownBy(() -> OperatorConfig.parse(nameless)).as(nameless).isInstanceOf(ConfigException.class)
                    .hasMessage("bad flag syntax: " + nameless);
        }
    }

    /**
     * A flag and its value given as one argument ("--name value" quoted, or one item of a manifest's args) names no
     * flag; the refusal says so without repeating the value, which can be the Redfish password.
     */
    @Test
    void aFlagAndItsValueInOneArgumentAreRefusedWithoutTheValue() {
        assertThatThrownBy(() -> OperatorConfig.parse("--runner-redfish-password s3cret-value"))
                .isInstanceOf(ConfigException.class)
                .hasMessage("flag --runner-redfish-password and its value are one argument, with white space between"
                        + " them: give them as --runner-redfish-password=<value>, or as two arguments");
        assertThatThrownBy(() -> OperatorConfig.parse("-runner-redfish-password\ts3cret-value"))
                .isInstanceOf(ConfigException.class).message().doesNotContain("s3cret");
        assertThatThrownBy(() -> OperatorConfig.parse("--no-such-flag s3cret-value"))
                .isInstanceOf(ConfigException.class)
                .hasMessage("unknown flag --no-such-flag (the argument goes on after white space, not shown here)");
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
            "--playpen-ttl=500ms | invalid value \"500ms\" for flag --playpen-ttl: must be 0 (no expiry) or at least 1s: expiry is kept in whole seconds, so a shorter one would end every allocation at its claim",
            "--reconcile-interval=-1s | invalid value \"-1s\" for flag --reconcile-interval: must not be negative",
            "--reconcile-interval=0 | invalid value \"0\" for flag --reconcile-interval: must be greater than 0",
            "--reconcile-interval=soon | invalid value \"soon\" for flag --reconcile-interval: must be a duration such as 90s, 30m or 1h30m",
            "--control-plane-versions=1.x | invalid value \"1.x\" for flag --control-plane-versions: \"1.x\" is not a version like v1.33.0",
            "--control-plane-versions=v1.33.0,latest | invalid value \"v1.33.0,latest\" for flag --control-plane-versions: \"latest\" is not a version like v1.33.0",
            "--control-plane-versions=, | invalid value \",\" for flag --control-plane-versions: must list at least one version",
            "--control-plane-versions=v1.33.0-rc.-1 | invalid value \"v1.33.0-rc.-1\" for flag --control-plane-versions: \"v1.33.0-rc.-1\" would name its pods playpen-control-plane-1.33.0-rc.-1-<port>, which Kubernetes refuses: each part between dots must start and end with a letter or digit",
            "--control-plane-versions=v1.33.0,1.34.0-x..1 | invalid value \"v1.33.0,1.34.0-x..1\" for flag --control-plane-versions: \"1.34.0-x..1\" would name its pods playpen-control-plane-1.34.0-x..1-<port>, which Kubernetes refuses: each part between dots must start and end with a letter or digit",
            "--control-plane-versions=v1.33.0-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa | invalid value \"v1.33.0-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\" for flag --control-plane-versions: \"v1.33.0-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\" is 64 characters as its pods' kubernetes-version label, which Kubernetes refuses over 63",
            "--runner-image-pull-policy=always | invalid value \"always\" for flag --runner-image-pull-policy: must be Always, IfNotPresent or Never",
            "--runner-require-kvm=yes | invalid value \"yes\" for flag --runner-require-kvm: must be true or false",
            "--runner-control-plane-tolerations= | invalid value \"\" for flag --runner-control-plane-tolerations: must be true or false",
            "--namespace=Playpen | invalid value \"Playpen\" for flag --namespace: must be a Kubernetes object name",
            "--runner-image= | invalid value \"\" for flag --runner-image: must not be empty",
            "--listen-addr=8443 | invalid value \"8443\" for flag --listen-addr: must be host:port",
            "--listen-addr=:http | invalid value \":http\" for flag --listen-addr: must be host:port",
            "--runner-label-selector=env=a b | invalid value \"env=a b\" for flag --runner-label-selector: found 'b', expected: ',' or 'end of string'",
            "--runner-label-selector=env in (a | invalid value \"env in (a\" for flag --runner-label-selector: unable to parse requirement: found '', expected: ',' or ')'",
            "--runner-label-selector=x<a | invalid value \"x<a\" for flag --runner-label-selector: unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer",
            "--runner-wireguard-server-address=wg-server | invalid value \"wg-server\" for flag --runner-wireguard-server-address: \"wg-server\" is not an IP address",
            "--runner-wireguard-client-address=10.88.0.256/32 | invalid value \"10.88.0.256/32\" for flag --runner-wireguard-client-address: \"10.88.0.256\" is not an IP address",
            "--runner-wireguard-listen-port=0 | invalid value \"0\" for flag --runner-wireguard-listen-port: must be between 1 and 65535",
            "--runner-vxlan-vni=16777216 | invalid value \"16777216\" for flag --runner-vxlan-vni: must be between 0 and 16777215",
            "--runner-vxlan-port=udp | invalid value \"udp\" for flag --runner-vxlan-port: must be an integer",
            "--runner-guest-gateway= | invalid value \"\" for flag --runner-guest-gateway: must not be empty",
            "--runner-redfish-device-id= | invalid value \"\" for flag --runner-redfish-device-id: must not be empty",
            "--external-client-site=not a label | invalid value \"not a label\" for flag --external-client-site: must be a label value",
            "--runner-amd64-count=08 | invalid value \"08\" for flag --runner-amd64-count: must be an integer",
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
    /**
     * Expiry is kept in whole seconds and a ttl is at least 1s: a lifetime cap under a second would end every
     * allocation at its claim, and a longest ttl under a second would refuse every ttl asked for. Refused at startup.
     */
    @Test
    void aLifetimeCapOrLongestTtlUnderASecondIsRefusedAtStartup() {
        assertThatThrownBy(() -> OperatorConfig.parse("--playpen-max-lifetime=500ms"))
                .isInstanceOf(ConfigException.class)
                .hasMessage("invalid value \"500ms\" for flag --playpen-max-lifetime: must be 0 (no cap) or at least 1s:"
                        + " expiry is kept in whole seconds, so a shorter cap would end every allocation at its claim");
        assertThatThrownBy(() -> OperatorConfig.parse("--playpen-ttl=0", "--playpen-max-ttl=999ms"))
                .isInstanceOf(ConfigException.class)
                .hasMessage("invalid value \"999ms\" for flag --playpen-max-ttl: must be at least 1s, the shortest ttl an"
                        + " alloc or renewal may ask for");
        assertThat(OperatorConfig.parse("--playpen-max-lifetime=1s").leases().maxLifetime()).isEqualTo(Duration.ofSeconds(1));
        assertThat(OperatorConfig.parse("--playpen-max-lifetime=0").leases().maxLifetime()).isZero();
        assertThat(OperatorConfig.parse("--playpen-ttl=0", "--playpen-max-ttl=1s").leases().maxTtl())
                .isEqualTo(Duration.ofSeconds(1));
    }

    @Test
    void theDefaultTtlIsNeverAboveTheLongestTtlAnAllocMayAskFor() {
        // the Go operator's flag alone: allocations last as long as they did under it, and asking for that ttl
        // (or renewing for it) is not refused
        assertThat(OperatorConfig.parse("--playpen-ttl=48h").leases().maxTtl()).isEqualTo(Duration.ofHours(48));
        assertThat(OperatorConfig.parse("--playpen-ttl=2h").leases().maxTtl()).isEqualTo(Duration.ofHours(24));
        // both given, the default above the maximum: refused at startup, not silently past the maximum
        assertThatThrownBy(() -> OperatorConfig.parse("--playpen-ttl=4h", "--playpen-max-ttl=2h"))
                .isInstanceOf(ConfigException.class)
                .hasMessage("invalid value \"2h\" for flag --playpen-max-ttl: must not be less than --playpen-ttl (4h),"
                        + " the ttl of an alloc or renewal that asks for none; raise it or lower --playpen-ttl");
        assertThat(OperatorConfig.parse("--playpen-ttl=2h", "--playpen-max-ttl=2h").leases().maxTtl())
                .isEqualTo(Duration.ofHours(2));
        // expiry off by default: nothing to compare
        assertThat(OperatorConfig.parse("--playpen-ttl=0", "--playpen-max-ttl=2h").leases().maxTtl())
                .isEqualTo(Duration.ofHours(2));
    }
}
