package io.unboundedcloud.playpen.dev;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

class FreePortsTest {

    /**
     * A replica binds its port seconds after the playground picked it; a port from the ephemeral range may be taken
     * by any outgoing connection meanwhile, so the playground picks below that range.
     */
    @Test
    void picksBelowTheEphemeralRangeWhereNoConnectionTakesAPortUnasked() throws Exception {
        Path range = Path.of("/proc/sys/net/ipv4/ip_local_port_range");
        int start = FreePorts.ephemeralStart(Files.isReadable(range) ? Files.readString(range) : null);
        for (int i = 0; i < 20; i++) {
            int port = FreePorts.pick();
            if (start - FreePorts.LOWEST >= 1000) {
                assertThat(port).isBetween(FreePorts.LOWEST, start - 1);
            }
            try (ServerSocket s = new ServerSocket()) {
                s.bind(new InetSocketAddress(port)); // free when picked
            }
        }
    }

    @Test
    void skipsAPortSomeoneListensOn() throws Exception {
        try (ServerSocket held = new ServerSocket(0)) {
            int taken = held.getLocalPort();
            int free;
            try (ServerSocket probe = new ServerSocket(0)) {
                free = probe.getLocalPort();
            }
            int[] offered = {taken, free};
            AtomicInteger next = new AtomicInteger();
            // a range that holds both: the taken port is offered first and passed over
            assertThat(FreePorts.pick(65536, () -> offered[Math.min(next.getAndIncrement(), 1)])).isEqualTo(free);
            assertThat(next).hasValue(2);
        }
    }

    @Test
    void withNoRoomBelowTheRangeAnyFreePortWillDo() throws Exception {
        AtomicInteger asked = new AtomicInteger();
        int port = FreePorts.pick(FreePorts.LOWEST + 10, () -> {
            asked.incrementAndGet();
            return FreePorts.LOWEST;
        });
        assertThat(asked).hasValue(0);
        assertThat(port).isPositive();
    }

    @Test
    void readsTheKernelsRangeAndFallsBackToTheIanaOne() {
        assertThat(FreePorts.ephemeralStart("32768\t60999\n")).isEqualTo(32768);
        assertThat(FreePorts.ephemeralStart("  1024 65535")).isEqualTo(1024);
        assertThat(FreePorts.ephemeralStart(null)).isEqualTo(FreePorts.IANA_EPHEMERAL_START);
        assertThat(FreePorts.ephemeralStart("garbage")).isEqualTo(FreePorts.IANA_EPHEMERAL_START);
        assertThat(FreePorts.ephemeralStart("0 0")).isEqualTo(FreePorts.IANA_EPHEMERAL_START);
    }
}
