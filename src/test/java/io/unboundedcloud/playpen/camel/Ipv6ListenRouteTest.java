package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** {@code --listen-addr=[::1]:port} serves HTTPS on the IPv6 loopback, and only there. */
class Ipv6ListenRouteTest {
    @Test
    void anIpv6ListenAddressIsBoundAndNoOtherInterfaceIs() throws Exception {
        try (TestCluster cluster = TestCluster.start()) {
            OperatorHarness.Started started = OperatorHarness.startOnFreePort(port -> new OperatorApp(
                    OperatorConfig.parse("--listen-addr=[::1]:" + port, "--leader-elect=false", "--management-addr=",
                            "--routes-dir=" + System.getProperty("playpen.test.routesDir", "routes"),
                            "--runner-amd64-count=0", "--runner-arm64-count=0", "--namespace=" + TestCluster.NS),
                    cluster.client, Clock.systemUTC(), Map.of()));
            try {
                OperatorHarness.awaitTrue(started.app()::ready, Duration.ofSeconds(60), "operator ready");
                try (Socket s = new Socket()) {
                    s.connect(new InetSocketAddress("::1", started.port()), 10_000);
                    assertThat(s.isConnected()).isTrue();
                }
                assertThatThrownBy(() -> {
                    try (Socket s = new Socket()) {
                        s.connect(new InetSocketAddress("127.0.0.1", started.port()), 10_000);
                    }
                }).as("the IPv4 loopback must not be served").isInstanceOf(ConnectException.class);
            } finally {
                started.app().close();
            }
        }
    }
}
