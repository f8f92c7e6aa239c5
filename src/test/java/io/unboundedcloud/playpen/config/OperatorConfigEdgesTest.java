package io.unboundedcloud.playpen.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.tls.ServingTls;

/** Flag values exactly at their limits: the last accepted value and the first refused one. */
class OperatorConfigEdgesTest {

    private static void refused(String flag, String messagePart) {
        assertThatThrownBy(() -> OperatorConfig.parse(flag)).as(flag)
                .isInstanceOf(ConfigException.class).hasMessageContaining(messagePart);
    }

    /**
     * The renew deadline must leave room for the Lease elector's tries: fabric8's waits the retry period plus up to
     * 1.2 times it between two, and refuses a deadline not greater than that, so the replica would never lead.
     */
    @Test
    void leaderElectionDurationsMustStrictlyDecrease() {
        refused("--leader-election-renew-deadline=4400ms", "must be greater than 2.2 times "
                + "--leader-election-retry-period (2s), 4.4s: the Lease elector waits up to that long between two tries");
        refused("--leader-election-retry-period=5s", "invalid value \"10s\" for flag --leader-election-renew-deadline: "
                + "must be greater than 2.2 times --leader-election-retry-period (5s), 11s");
        assertThat(OperatorConfig.parse("--leader-election-renew-deadline=4401ms").renewDeadline())
                .isEqualTo(Duration.ofMillis(4401));
        refused("--leader-election-lease-duration=10s", "must be greater than --leader-election-renew-deadline");
        assertThat(OperatorConfig.parse("--leader-election-lease-duration=11s").leaseDuration())
                .isEqualTo(Duration.ofSeconds(11));
    }

    /** pflag reads a duration flag with time.ParseDuration, which takes no white space around the value. */
    @Test
    void aDurationFlagWithWhiteSpaceAroundItIsRefused() {
        refused("--playpen-ttl= 5s", "invalid value \" 5s\" for flag --playpen-ttl: must be a duration such as 90s");
        refused("--reconcile-interval=30s ", "invalid value \"30s \" for flag --reconcile-interval: must be a duration");
        assertThat(OperatorConfig.parse("--playpen-ttl=5s").playpenTtl()).isEqualTo(Duration.ofSeconds(5));
    }

    /** pflag reads an integer flag with strconv.ParseInt, which takes no white space around the value either. */
    @Test
    void anIntegerFlagWithWhiteSpaceAroundItIsRefused() {
        refused("--runner-amd64-count= 2", "invalid value \" 2\" for flag --runner-amd64-count: must be an integer");
        refused("--runner-wireguard-listen-port=51820 ", "invalid value \"51820 \" for flag --runner-wireguard-listen-port:"
                + " must be an integer");
        assertThat(OperatorConfig.parse("--runner-amd64-count=2").runnerAmd64Count()).isEqualTo(2);
    }

    /** pflag reads a boolean flag with strconv.ParseBool, which takes no white space around the value either. */
    @Test
    void aBooleanFlagWithWhiteSpaceAroundItIsRefused() {
        refused("--leader-elect= false", "invalid value \" false\" for flag --leader-elect: must be true or false");
        refused("--runner-require-kvm=true ", "invalid value \"true \" for flag --runner-require-kvm: must be true or false");
        assertThatThrownBy(() -> OperatorConfig.request("--help= true")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("--help: must be true or false");
        assertThat(OperatorConfig.parse("--leader-elect=false").leaderElect()).isFalse();
    }

    /**
     * The renewal share is this operator's own flag: only a decimal number strictly between 0 and 1 is taken. White
     * space, a Java type suffix, a hexadecimal float, NaN, Infinity and any value outside the range are refused at
     * startup, each saying what is allowed.
     */
    @Test
    void aRenewFractionIsADecimalNumberBetweenZeroAndOne() {
        for (String bad : new String[] {" 0.5", "0.5 ", "0.5d", "0.5f", "0.5D", "0x1p-1", "0x0.8p0", "NaN", "Infinity",
                "-Infinity", "0", "1", "1.0", "-0.5", "1.5", "1e-400", "0.99999999999999999999", "", ".", "0.5.1",
                "0_5", "5e-1x"}) {
            assertThatThrownBy(() -> OperatorConfig.parse("--serving-cert-renew-fraction=" + bad)).as("[%s]", bad)
                    .isInstanceOf(ConfigException.class).hasMessage("invalid value \"" + bad + "\" for flag"
                            + " --serving-cert-renew-fraction: must be a decimal number greater than 0 and less than 1,"
                            + " such as 0.667 (renewal after two thirds of the certificate's lifetime)");
        }
        assertThat(OperatorConfig.parse("--serving-cert-renew-fraction=0.5").servingCertRenewal().renewFraction())
                .isEqualTo(0.5);
        assertThat(OperatorConfig.parse("--serving-cert-renew-fraction=.25").servingCertRenewal().renewFraction())
                .isEqualTo(0.25);
        assertThat(OperatorConfig.parse("--serving-cert-renew-fraction=7.5e-1").servingCertRenewal().renewFraction())
                .isEqualTo(0.75);
    }

    @Test
    void aServingCertificateLivesAtLeastTwoSeconds() {
        assertThat(OperatorConfig.parse("--serving-cert-validity=2s").servingCertRenewal().validity())
                .isEqualTo(Duration.ofSeconds(2));
        refused("--serving-cert-validity=1999ms", "must be at least 2s");
    }

    @Test
    void objectNamesMayHave253Characters() {
        String name = "a".repeat(253);
        assertThat(OperatorConfig.parse("--leader-election-lease-name=" + name).leaderElectionLeaseName()).isEqualTo(name);
        refused("--leader-election-lease-name=" + name + "a", "must be a Kubernetes object name");
    }

    /** An empty --listen-addr binds nothing: refused at startup, saying what to give, in --dev too. */
    @Test
    void anEmptyListenAddressIsRefusedWithWhatToGive() throws Exception {
        String want = "give host:port, e.g. :8443 (every interface) or 127.0.0.1:8443";
        refused("--listen-addr=", want);
        refused("--listen-addr= ", want);
        assertThatThrownBy(() -> OperatorConfig.parse(io.unboundedcloud.playpen.dev.DevMode.devArgs(
                new String[] {"--dev", "--listen-addr="}))).isInstanceOf(ConfigException.class).hasMessageContaining(want);
    }

    @Test
    void listenPortsRunFromZeroTo65535AndBracketsAreStrippedFromTheHost() {
        assertThat(OperatorConfig.parse("--listen-addr=:0").listenPort()).isZero();
        assertThat(OperatorConfig.parse("--listen-addr=:65535").listenPort()).isEqualTo(65535);
        refused("--listen-addr=:65536", "port must be between 0 and 65535");
        refused("--listen-addr=:-1", "port must be between 0 and 65535");
        OperatorConfig v6 = OperatorConfig.parse("--listen-addr=[::1]:8443");
        assertThat(v6.listenHost()).isEqualTo("::1");
        refused("--listen-addr=8443", "must be host:port");
    }

    /**
     * Go's net.Listen (net.SplitHostPort) refuses an IPv6 host without its brackets, a bracket left open and text
     * around the brackets; such a value would otherwise reach the bind as a host name ("[::1").
     */
    @Test
    void malformedIpv6AddressesAreRefusedSayingToBracketTheHost() {
        String want = "put an IPv6 host in brackets, e.g. [::1]:8443";
        for (String bad : new String[] {"[::1:8443", "::1:8443", "[::1]x:8443", "[::1]:[8443", "x[::1]:8443",
                "[::1]]:8443", "[[::1]:8443"}) {
            refused("--listen-addr=" + bad, want);
            refused("--health-addr=" + bad, want);
            refused("--management-addr=" + bad, want);
        }
        assertThat(OperatorConfig.parse("--listen-addr=[::]:8443").listenHost()).isEqualTo("::");
        assertThat(OperatorConfig.parse("--listen-addr=[fe80::1%eth0]:8443").listenHost()).isEqualTo("fe80::1%eth0");
        assertThat(OperatorConfig.parse("--management-addr=[::1]:9876").managementHost()).isEqualTo("::1");
    }

    @Test
    void devOperatorAddressesTakeRangesOfAtMost64Replicas() {
        assertThat(OperatorConfig.parse("--dev-operator-addrs=h:1-64").devOperatorAddrs()).hasSize(64).startsWith("h:1")
                .endsWith("h:64");
        assertThat(OperatorConfig.parse("--dev-operator-addrs=h:65535,h:7-7").devOperatorAddrs())
                .containsExactly("h:65535", "h:7");
        for (String bad : new String[] {"h:1-65", "h:0", "h:65536", "h:5-4", "h:65535-65536", "h:1-60,h:100-104"}) {
            refused("--dev-operator-addrs=" + bad, "ports must be 1-65535, ranges ascending, at most 64 replicas");
        }
    }

    @Test
    void labelValuesMayHave63Characters() {
        OperatorConfig.parse("--external-client-site=" + "a".repeat(63));
        refused("--external-client-site=" + "a".repeat(64), "must be a label value");
    }

    @Test
    void wireGuardAddressesAreIpv4OrIpv6WithAnOptionalPrefix() {
        assertThat(OperatorConfig.parse("--runner-wireguard-server-address=fe80::1/64").network()).isNotNull();
        assertThat(OperatorConfig.parse("--runner-wireguard-server-address=::ffff:10.88.0.1/24").network()).isNotNull();
        assertThat(OperatorConfig.parse("--runner-wireguard-server-address=10.88.0.9").network()).isNotNull();
        refused("--runner-wireguard-server-address=::g/64", "runner-wireguard-server-address");
        refused("--runner-wireguard-server-address=/24", "runner-wireguard-server-address");
    }

    @Test
    void integersTakeGoSyntaxWithUnderscoresBetweenDigits() {
        assertThat(OperatorConfig.parse("--runner-amd64-count=1_0").runnerAmd64Count()).isEqualTo(10);
        assertThat(OperatorConfig.parse("--runner-amd64-count=0x_a").runnerAmd64Count()).isEqualTo(10);
        assertThat(OperatorConfig.parse("--runner-amd64-count=0b1_0").runnerAmd64Count()).isEqualTo(2);
        assertThat(OperatorConfig.parse("--runner-amd64-count=0o1_2").runnerAmd64Count()).isEqualTo(10);
        assertThat(OperatorConfig.parse("--runner-amd64-count=012").runnerAmd64Count()).isEqualTo(10);
        for (String bad : new String[] {"1__0", "_1", "1_", "0x__a", "0_x"}) {
            assertThatThrownBy(() -> OperatorConfig.parse("--runner-amd64-count=" + bad)).as(bad)
                    .isInstanceOf(ConfigException.class).hasMessageContaining("runner-amd64-count");
        }
    }

    @Test
    void logLinesAreTextOrJson() {
        assertThat(OperatorConfig.parse().logFormat()).isEqualTo("text");
        assertThat(OperatorConfig.parse("--log-format=json").logFormat()).isEqualTo("json");
        refused("--log-format=yaml", "must be text or json");
    }

    @Test
    void imageFaultsAreImageEqualsModePairs() {
        assertThat(OperatorConfig.parse().devImageFaults()).isEmpty();
        assertThat(OperatorConfig.parse("--dev-image-faults=registry:5000/runner:v2=crash,example.com/k3s=evict",
                "--dev-image-faults=never=never-ready").devImageFaults())
                .as("the image's own colons and '=' split at the last; the flag repeated appends")
                .containsExactly("registry:5000/runner:v2=crash", "example.com/k3s=evict", "never=never-ready");
        for (String bad : new String[] {"example.com/runner", "=crash", "example.com/runner=", "example.com/runner=explode",
            "example.com/runner=Crash"}) {
            refused("--dev-image-faults=" + bad, "\"" + bad + "\" is not image=mode with mode never-ready, crash or evict");
        }
    }

    @Test
    void theTlsProviderIsAutoJdkOrOpenssl() {
        assertThat(OperatorConfig.parse().tlsProvider()).isEqualTo(ServingTls.Provider.AUTO);
        assertThat(OperatorConfig.parse("--tls-provider=jdk").tlsProvider()).isEqualTo(ServingTls.Provider.JDK);
        assertThat(OperatorConfig.parse("--tls-provider=OpenSSL").tlsProvider()).isEqualTo(ServingTls.Provider.OPENSSL);
        refused("--tls-provider=gnutls", "must be auto, jdk or openssl");
    }

    @Test
    void theRedfishPasswordIsNeverPrinted() {
        String shown = OperatorConfig.parse("--runner-redfish-password=s3cr3t-pw").network().toString();
        assertThat(shown).contains("redfishPassword=(redacted)").doesNotContain("s3cr3t-pw");
        assertThat(OperatorConfig.parse().network().toString()).contains("redfishPassword=]");
    }

    @Test
    void oneSecondIsWrittenInSeconds() {
        assertThat(GoDuration.format(java.time.Duration.ofSeconds(1))).isEqualTo("1s");
        assertThat(GoDuration.format(java.time.Duration.ofMillis(999))).isEqualTo("999ms");
    }

    @Test
    void portRangesContainBothEnds() {
        OperatorConfig.PortRange r = new OperatorConfig.PortRange(10, 20);
        assertThat(r.contains(10)).isTrue();
        assertThat(r.contains(20)).isTrue();
        assertThat(r.contains(9)).isFalse();
        assertThat(r.contains(21)).isFalse();
        assertThat(r.size()).isEqualTo(11);
    }
}
