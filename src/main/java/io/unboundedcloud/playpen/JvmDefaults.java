package io.unboundedcloud.playpen;

import java.util.Map;
import java.util.Properties;

/**
 * System-property defaults applied before any library class loads; a value given with {@code -D} (or
 * JAVA_TOOL_OPTIONS) wins.
 */
final class JvmDefaults {
    /**
     * Netty's pooled allocator (camel-netty-http's listener, the fabric8 Vert.x client) grabs its direct memory
     * in 4 MiB chunks per arena; 1 MiB chunks (maxOrder 7) cut the operator's RSS by ~25 MiB with 5000 pods
     * (NMT "Other": 29-37 MiB down to 8 MiB, measured with the benchmark's jar run). Our messages are small;
     * the rare larger buffer (an initial LIST) is allocated unpooled.
     * <p>
     * The JDK's HTTP server (the management listener, which Jolokia's handler needs) reads a request on one of its
     * few pool threads with a blocking read and, by default, no time limit: a connection that sends part of a request
     * head and then nothing holds a thread for as long as it stays open, and two of them stopped every {@code /metrics}
     * scrape and Jolokia request. {@code sun.net.httpserver.maxReqTime} (seconds, read once when the server's classes
     * load) closes a connection whose request head and body have not arrived within that time of its first byte,
     * which frees the thread. 5 s: a held-up scrape is still answered within Prometheus' default 10 s timeout.
     * <p>
     * The same server keeps every connection it accepts, idle ones included, with no limit on their number: one
     * client could hold thousands of sockets and file descriptors. {@code jdk.httpserver.maxConnections} (also read
     * once) caps them: a connection accepted beyond the cap is closed at once, unanswered. 256 is far more than
     * Prometheus, Hawtio and a few port-forwards use.
     */
    static final Map<String, String> DEFAULTS = Map.of("io.netty.allocator.maxOrder", "7",
            "sun.net.httpserver.maxReqTime", "5", "jdk.httpserver.maxConnections", "256");

    private JvmDefaults() {
    }

    static void apply(Properties props) {
        DEFAULTS.forEach(props::putIfAbsent);
    }
}
