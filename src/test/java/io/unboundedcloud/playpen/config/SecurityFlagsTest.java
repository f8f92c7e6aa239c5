package io.unboundedcloud.playpen.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;

import org.junit.jupiter.api.Test;

/** The flags that bound waiting, place the probe listener and open the management listener to web pages. */
class SecurityFlagsTest {
    @Test
    void waitingCapsDefaultBelowTheConnectionLimit() {
        OperatorConfig c = OperatorConfig.parse();
        assertThat(c.waitingLimits()).isEqualTo(OperatorConfig.WaitingLimits.DEFAULTS);
        assertThat(c.waitingLimits().total()).isLessThan(c.maxConnections());
        assertThat(c.waitingLimits().perUser()).isLessThan(c.waitingLimits().total());
        OperatorConfig set = OperatorConfig.parse("--max-waiting-per-user=5", "--max-waiting=99", "--max-connections=100");
        assertThat(set.waitingLimits()).isEqualTo(new OperatorConfig.WaitingLimits(5, 99));
    }

    @Test
    void theWaitingTotalMustLeaveConnectionsForEverythingElse() {
        assertThatThrownBy(() -> OperatorConfig.parse("--max-waiting=1024"))
                .isInstanceOf(ConfigException.class).hasMessageContaining("--max-waiting")
                .hasMessageContaining("below --max-connections (1024)");
        assertThatThrownBy(() -> OperatorConfig.parse("--max-connections=100"))
                .as("the default total is above a lowered connection limit").isInstanceOf(ConfigException.class)
                .hasMessageContaining("--max-waiting");
        assertThatThrownBy(() -> OperatorConfig.parse("--max-waiting-per-user=0")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("--max-waiting-per-user");
        assertThatThrownBy(() -> OperatorConfig.parse("--max-waiting=0")).isInstanceOf(ConfigException.class);
    }

    /**
     * 0 turns the idle timeout off, as a zero idle and read timeout does in Go's HTTP server; a positive value
     * below a second is refused, since the idle closer counts a request busy on API calls as idle and would cut
     * handshakes and requests mid-way.
     */
    @Test
    void theIdleTimeoutIsZeroForNoneOrAtLeastASecond() {
        assertThat(OperatorConfig.parse().idleTimeout()).isEqualTo(java.time.Duration.ofSeconds(60));
        assertThat(OperatorConfig.parse("--idle-timeout=0").idleTimeout()).isZero();
        assertThat(OperatorConfig.parse("--idle-timeout=1s").idleTimeout()).isEqualTo(java.time.Duration.ofSeconds(1));
        assertThatThrownBy(() -> OperatorConfig.parse("--idle-timeout=1ms")).isInstanceOf(ConfigException.class)
                .hasMessage("invalid value \"1ms\" for flag --idle-timeout: must be 0 (no idle timeout) or at least 1s:"
                        + " a connection is idle while its request waits on the API server, so a shorter one would"
                        + " close connections in the middle of their handshake or request");
    }

    @Test
    void theProbeListenerIsOffUnlessGiven() {
        assertThat(OperatorConfig.parse().healthPort()).isEqualTo(-1);
        OperatorConfig c = OperatorConfig.parse("--health-addr=:8081");
        assertThat(c.healthHost()).isEmpty();
        assertThat(c.healthPort()).isEqualTo(8081);
        assertThat(OperatorConfig.parse("--health-addr=127.0.0.1:0").healthHost()).isEqualTo("127.0.0.1");
        assertThatThrownBy(() -> OperatorConfig.parse("--health-addr=8081")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("--health-addr");
    }

    /**
     * Two listeners on one port would fail the second bind only after the HTTPS listener is up and the Lease
     * elector has started, with the JDK's words alone ("Address already in use"): refused at start instead, naming
     * both flags and the port. Hosts overlap when they are the same or either is every interface; port 0 (a free
     * port for each) never clashes.
     */
    @Test
    void twoListenersOnOnePortAreRefusedAtStart() {
        assertThatThrownBy(() -> OperatorConfig.parse("--health-addr=:8443")).isInstanceOf(ConfigException.class)
                .hasMessage("--listen-addr (:8443) and --health-addr (:8443) both listen on port 8443: give one of"
                        + " them another port");
        assertThatThrownBy(() -> OperatorConfig.parse("--health-addr=:9876", "--management-addr=0.0.0.0:9876"))
                .isInstanceOf(ConfigException.class)
                .hasMessage("--health-addr (:9876) and --management-addr (0.0.0.0:9876) both listen on port 9876: give"
                        + " one of them another port");
        assertThatThrownBy(() -> OperatorConfig.parse("--listen-addr=127.0.0.1:9876"))
                .as("the default --management-addr is 127.0.0.1:9876").isInstanceOf(ConfigException.class)
                .hasMessageContaining("--listen-addr (127.0.0.1:9876) and --management-addr (127.0.0.1:9876)");
        assertThatThrownBy(() -> OperatorConfig.parse("--health-addr=[::1]:8443")).as("--listen-addr is every interface")
                .isInstanceOf(ConfigException.class).hasMessageContaining("port 8443");
        // different hosts, a disabled listener, or free ports: no clash
        assertThat(OperatorConfig.parse("--listen-addr=127.0.0.1:8443", "--health-addr=127.0.0.2:8443").healthPort())
                .isEqualTo(8443);
        assertThat(OperatorConfig.parse("--listen-addr=127.0.0.1:9876", "--management-addr=").managementPort())
                .isEqualTo(-1);
        assertThat(OperatorConfig.parse("--listen-addr=:0", "--health-addr=:0", "--management-addr=127.0.0.1:0")
                .healthPort()).isZero();
    }

    @Test
    void managementOriginsAreOriginsAndHostsAreHostNames() {
        OperatorConfig c = OperatorConfig.parse("--management-allowed-origins=https://hawtio.example:8443,http://localhost:8080",
                "--management-allowed-origins=http://[::1]:9000", "--management-allowed-hosts=ops.example,10.0.0.5");
        assertThat(c.managementAllowedOrigins()).containsExactly("https://hawtio.example:8443", "http://localhost:8080",
                "http://[::1]:9000");
        assertThat(c.managementAllowedHosts()).containsExactly("ops.example", "10.0.0.5");
        assertThat(OperatorConfig.parse().managementAllowedOrigins()).isEmpty();
        for (String bad : List.of("*", "null", "hawtio.example", "https://hawtio.example/path", "file://x", "https://a b")) {
            assertThatThrownBy(() -> OperatorConfig.parse("--management-allowed-origins=" + bad)).as(bad)
                    .isInstanceOf(ConfigException.class).hasMessageContaining("--management-allowed-origins");
        }
        for (String bad : List.of("https://ops.example", "ops.example:9876", "*.example")) {
            assertThatThrownBy(() -> OperatorConfig.parse("--management-allowed-hosts=" + bad)).as(bad)
                    .isInstanceOf(ConfigException.class).hasMessageContaining("--management-allowed-hosts");
        }
    }
}
