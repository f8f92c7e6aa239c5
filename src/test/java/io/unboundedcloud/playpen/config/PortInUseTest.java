package io.unboundedcloud.playpen.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.ServerSocket;

import org.junit.jupiter.api.Test;

/** The failure of a listener whose port is taken: found in a cause chain, and told with its address and flag. */
class PortInUseTest {
    @Test
    void aBindFailureIsFoundAnywhereInTheCauseChain() throws Exception {
        BindException bind;
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                ServerSocket second = new ServerSocket()) {
            try {
                second.bind(taken.getLocalSocketAddress());
                throw new AssertionError("a second bind of a held port succeeded");
            } catch (BindException e) {
                bind = e;
            }
        }
        assertThat(PortInUse.is(bind)).isTrue();
        assertThat(PortInUse.is(new IllegalStateException("start", new RuntimeException("wrapped", bind)))).isTrue();
        assertThat(PortInUse.is(new IOException("Connection refused"))).isFalse();
        assertThat(PortInUse.is(null)).isFalse();
    }

    @Test
    void theMessageNamesTheAddressTheFlagAndWhatToDo() {
        BindException cause = new BindException("Address already in use");
        IOException e = PortInUse.of("--management-addr", "127.0.0.1", 9876, false, cause);
        assertThat(e).hasMessage("cannot listen on 127.0.0.1:9876 (--management-addr): another process already listens "
                + "on that port; stop it, or give --management-addr another port").hasCause(cause);
        assertThat(PortInUse.of("--listen-addr", "", 8443, false, cause))
                .hasMessageStartingWith("cannot listen on *:8443 (--listen-addr)");
        assertThat(PortInUse.of("--listen-addr", "::1", 8443, false, cause))
                .hasMessageStartingWith("cannot listen on [::1]:8443 (--listen-addr)");
        assertThat(PortInUse.of("--dev-shim-port", "127.0.0.1", 41163, true, cause)).hasMessage("cannot listen on "
                + "127.0.0.1:41163 (--dev-shim-port): another process already listens on that port (another "
                + "playground?); stop it, or give --dev-shim-port another port, or leave --dev-shim-port out for a "
                + "free one");
    }

    @Test
    void aListenerIsOpenedAsItIsAndOnlyATakenPortIsToldAgain() throws Exception {
        assertThat(PortInUse.listening("--listen-addr", "", 1, false, () -> "opened")).isEqualTo("opened");
        BindException taken = new BindException("Address already in use");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> PortInUse.listening("--health-addr", "0.0.0.0", 8081,
                false, () -> {
                    throw new IllegalStateException("bind", taken);
                })).isInstanceOf(IOException.class).hasRootCause(taken)
                .hasMessageStartingWith("cannot listen on 0.0.0.0:8081 (--health-addr)");
        IOException other = new IOException("Permission denied");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> PortInUse.listening("--health-addr", "", 80, false,
                () -> {
                    throw other;
                })).isSameAs(other);
    }
}
