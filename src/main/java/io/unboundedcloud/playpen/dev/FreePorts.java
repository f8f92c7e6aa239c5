package io.unboundedcloud.playpen.dev;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.IntSupplier;

/**
 * Ports for the playground's listeners that are bound some time after they are picked (a replica process binds its
 * port once its JVM has started, many seconds later). A port the kernel hands out for {@code bind(0)} comes from the
 * ephemeral range, the same range every outgoing connection takes its local port from, so on a busy machine
 * another connection may hold it by then and the replica fails with "Address already in use". Ports below that range
 * are never taken implicitly: a port picked there and free now stays free unless a program binds it by number.
 */
final class FreePorts {
    /** The lowest port picked: well above the ports well-known services listen on. */
    static final int LOWEST = 10000;
    /** The ephemeral range's start when the system does not say (the IANA range; macOS's default). */
    static final int IANA_EPHEMERAL_START = 49152;
    private static final Path LINUX_RANGE = Path.of("/proc/sys/net/ipv4/ip_local_port_range");
    private static final int ATTEMPTS = 64;

    private FreePorts() {
    }

    /** A port free now on every address, below the ephemeral range when it leaves room for that. */
    static int pick() {
        int start = ephemeralStart(readRange());
        return pick(start, () -> ThreadLocalRandom.current().nextInt(LOWEST, Math.max(LOWEST + 1, start)));
    }

    static int pick(int ephemeralStart, IntSupplier candidates) {
        if (ephemeralStart - LOWEST >= 1000) {
            for (int i = 0; i < ATTEMPTS; i++) {
                int port = candidates.getAsInt();
                if (port >= LOWEST && port < ephemeralStart && free(port)) {
                    return port;
                }
            }
        }
        // no room below the ephemeral range (or all tried were taken): any port the kernel gives
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The first port of the ephemeral range as {@code ip_local_port_range} gives it ("32768\t60999"). */
    static int ephemeralStart(String range) {
        if (range != null) {
            String[] parts = range.trim().split("\\s+");
            try {
                int start = Integer.parseInt(parts[0]);
                if (start > 0 && start <= 65535) {
                    return start;
                }
            } catch (NumberFormatException e) {
                // not the kernel's format: the default below
            }
        }
        return IANA_EPHEMERAL_START;
    }

    private static String readRange() {
        try {
            return Files.isReadable(LINUX_RANGE) ? Files.readString(LINUX_RANGE) : null;
        } catch (IOException e) {
            return null;
        }
    }

    private static boolean free(int port) {
        try (ServerSocket s = new ServerSocket()) {
            s.bind(new InetSocketAddress(port));
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
