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
     */
    static final Map<String, String> DEFAULTS = Map.of("io.netty.allocator.maxOrder", "7");

    private JvmDefaults() {
    }

    static void apply(Properties props) {
        DEFAULTS.forEach(props::putIfAbsent);
    }
}
