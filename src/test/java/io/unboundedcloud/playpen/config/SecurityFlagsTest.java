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
