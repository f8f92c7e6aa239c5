package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.net.ServerSocket;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * A listener whose port another process holds stops the start with the address, the flag and what to do (the JDK and
 * Netty say only "Address already in use", which names neither).
 */
class ListenerPortInUseTest {
    static TestCluster cluster;

    @BeforeAll
    static void up() {
        cluster = TestCluster.start();
    }

    @AfterAll
    static void down() {
        cluster.close();
    }

    @Test
    void theManagementAndProbePortsNameTheirFlag() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            int port = taken.getLocalPort();
            for (String flag : new String[] {"--management-addr", "--health-addr"}) {
                assertThatThrownBy(() -> new OperatorHarness(cluster, flag + "=127.0.0.1:" + port).close()).as(flag)
                        .isInstanceOf(java.io.IOException.class)
                        .hasMessage("cannot listen on 127.0.0.1:" + port + " (" + flag + "): another process already "
                                + "listens on that port; stop it, or give " + flag + " another port");
            }
        }
    }

    @Test
    void theHttpsPortNamesListenAddr() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            int port = taken.getLocalPort();
            OperatorApp app = new OperatorApp(io.unboundedcloud.playpen.config.OperatorConfig.parse(
                    "--listen-addr=127.0.0.1:" + port, "--leader-elect=false", "--management-addr=",
                    "--routes-dir=" + System.getProperty("playpen.test.routesDir", "routes"), "--runner-amd64-count=0",
                    "--runner-arm64-count=0"), cluster.client, java.time.Clock.systemUTC(), java.util.Map.of());
            try {
                assertThatThrownBy(app::start).isInstanceOf(java.io.IOException.class)
                        .hasMessage("cannot listen on 127.0.0.1:" + port + " (--listen-addr): another process already "
                                + "listens on that port; stop it, or give --listen-addr another port");
            } finally {
                app.close();
            }
        }
    }
}
