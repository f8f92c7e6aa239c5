package io.unboundedcloud.playpen.camel;

import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Who may reach the management listener from a browser: the origins whose pages may call it
 * ({@code --management-allowed-origins}, compared as scheme://host[:port], case-insensitively, a default port
 * the same as none) and the extra host names it answers to ({@code --management-allowed-hosts}; IP addresses,
 * localhost and cluster-internal names always). Empty lists: no web page at all, and only those built-in names.
 */
public record ManagementAccess(Set<String> origins, Set<String> hosts) {
    public static final ManagementAccess NONE = new ManagementAccess(Set.of(), Set.of());

    public ManagementAccess {
        origins = origins.stream().map(ManagementAccess::normalizeOrigin).collect(Collectors.toUnmodifiableSet());
        hosts = hosts.stream().map(h -> h.trim().toLowerCase(Locale.ROOT)).collect(Collectors.toUnmodifiableSet());
    }

    public static ManagementAccess of(List<String> origins, List<String> hosts) {
        return new ManagementAccess(Set.copyOf(origins), Set.copyOf(hosts));
    }

    public boolean allowsOrigin(String origin) {
        return !origins.isEmpty() && origins.contains(normalizeOrigin(origin));
    }

    public boolean allowsHost(String host) {
        return hosts.contains(host.toLowerCase(Locale.ROOT));
    }

    /**
     * scheme://host[:port] in lower case without a trailing slash or the scheme's default port: a browser never
     * sends {@code :443} for https or {@code :80} for http, so a flag value written with it still matches.
     */
    static String normalizeOrigin(String origin) {
        String o = origin.trim().toLowerCase(Locale.ROOT);
        o = o.endsWith("/") ? o.substring(0, o.length() - 1) : o;
        String defaultPort = o.startsWith("https://") ? ":443" : o.startsWith("http://") ? ":80" : null;
        return defaultPort != null && o.endsWith(defaultPort) ? o.substring(0, o.length() - defaultPort.length()) : o;
    }
}
