package io.unboundedcloud.playpen.config;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The whole configuration of one operator process, parsed once from {@code --name=value} flags.
 * Unknown flags and bad values throw {@link ConfigException} with one line naming the flag.
 */
public record OperatorConfig(
        String listenHost, int listenPort,
        String namespace, String serviceName, String tlsSecretName,
        String runnerNamespace, Map<String, String> runnerLabelSelector,
        String runnerImage, String runnerImagePullPolicy, String runnerServiceAccountName,
        int runnerAmd64Count, int runnerArm64Count,
        PortRange runnerPorts, boolean runnerRequireKvm, boolean runnerControlPlaneTolerations,
        String runnerPublicRedfishUrl,
        int controlPlaneCount, List<String> controlPlaneVersions, String controlPlaneImage,
        String controlPlaneServiceAccountName, PortRange controlPlanePorts,
        Duration playpenTtl, Duration reconcileInterval,
        String kubeconfig, String routesDir, boolean routesReload,
        boolean leaderElect, String leaderElectionNamespace, String leaderElectionLeaseName,
        Duration leaseDuration, Duration renewDeadline, Duration retryPeriod,
        String managementHost, int managementPort, String logFormat,
        Duration sarAllowedTtl, Duration sarDeniedTtl, int retryAfterSeconds, Duration idleTimeout, int httpWorkerThreads,
        Duration refillDebounce,
        NetworkProfile network,
        boolean dev, String devDir, int devApiPort, int devShimPort, int devOperators, List<String> devOperatorAddrs) {

    /** An inclusive hostPort range. */
    public record PortRange(int start, int end) {
        public int size() {
            return end - start + 1;
        }

        public boolean contains(int port) {
            return port >= start && port <= end;
        }
    }

    private static final Pattern VERSION = Pattern.compile("v\\d+\\.\\d+\\.\\d+([-+][0-9A-Za-z.+_-]*)?");
    private static final Pattern LABEL_VALUE = Pattern.compile("([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?");

    /** Parses flags; every flag not given takes its default. */
    public static OperatorConfig parse(String... args) {
        Map<Flag, String> values = new EnumMap<>(Flag.class);
        for (Flag f : Flag.values()) {
            values.put(f, f.defaultValue());
        }
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (!arg.startsWith("-") || arg.equals("-") || arg.equals("--")) {
                throw new ConfigException("unexpected argument \"" + arg + "\": flags are written --name=value");
            }
            String body = arg.startsWith("--") ? arg.substring(2) : arg.substring(1);
            String name = body;
            String value = null;
            int eq = body.indexOf('=');
            if (eq >= 0) {
                name = body.substring(0, eq);
                value = body.substring(eq + 1);
            }
            Flag flag = Flag.byName(name);
            if (flag == null) {
                throw new ConfigException("unknown flag --" + name);
            }
            if (value == null) {
                boolean bool = flag.defaultValue().equals("true") || flag.defaultValue().equals("false");
                if (bool) {
                    value = "true";
                } else if (i + 1 < args.length) {
                    value = args[++i];
                } else {
                    throw new ConfigException("flag --" + name + " needs a value");
                }
            }
            values.put(flag, value);
        }
        return build(new Values(values));
    }

    private static OperatorConfig build(Values v) {
        String[] listen = v.hostPort(Flag.LISTEN_ADDR, false);
        PortRange runnerPorts = v.range(Flag.RUNNER_WIREGUARD_HOST_PORT_START, Flag.RUNNER_WIREGUARD_HOST_PORT_END);
        PortRange cpPorts = v.range(Flag.CONTROL_PLANE_APISERVER_HOST_PORT_START, Flag.CONTROL_PLANE_APISERVER_HOST_PORT_END);
        String pull = v.str(Flag.RUNNER_IMAGE_PULL_POLICY);
        if (!List.of("Always", "IfNotPresent", "Never").contains(pull)) {
            throw v.bad(Flag.RUNNER_IMAGE_PULL_POLICY, "must be Always, IfNotPresent or Never");
        }
        String logFormat = v.str(Flag.LOG_FORMAT);
        if (!logFormat.equals("text") && !logFormat.equals("json")) {
            throw v.bad(Flag.LOG_FORMAT, "must be text or json");
        }
        Duration ttl = v.duration(Flag.PLAYPEN_TTL);
        Duration interval = v.duration(Flag.RECONCILE_INTERVAL);
        if (interval.isZero()) {
            throw v.bad(Flag.RECONCILE_INTERVAL, "must be greater than 0");
        }
        String mgmt = v.str(Flag.MANAGEMENT_ADDR);
        String[] mgmtHostPort = mgmt.isEmpty() ? new String[] {"", "-1"} : v.hostPort(Flag.MANAGEMENT_ADDR, true);
        String leNs = v.str(Flag.LEADER_ELECTION_NAMESPACE);
        Duration leaseDuration = v.duration(Flag.LEADER_ELECTION_LEASE_DURATION);
        Duration renewDeadline = v.duration(Flag.LEADER_ELECTION_RENEW_DEADLINE);
        Duration retryPeriod = v.duration(Flag.LEADER_ELECTION_RETRY_PERIOD);
        if (retryPeriod.isZero() || renewDeadline.compareTo(retryPeriod) <= 0) {
            throw v.bad(Flag.LEADER_ELECTION_RENEW_DEADLINE, "must be greater than --leader-election-retry-period");
        }
        if (leaseDuration.compareTo(renewDeadline) <= 0) {
            throw v.bad(Flag.LEADER_ELECTION_LEASE_DURATION, "must be greater than --leader-election-renew-deadline");
        }
        return new OperatorConfig(
                listen[0], Integer.parseInt(listen[1]),
                v.name(Flag.NAMESPACE), v.name(Flag.SERVICE_NAME), v.name(Flag.TLS_SECRET_NAME),
                v.name(Flag.RUNNER_NAMESPACE), v.selector(Flag.RUNNER_LABEL_SELECTOR),
                v.nonEmpty(Flag.RUNNER_IMAGE), pull, v.name(Flag.RUNNER_SERVICE_ACCOUNT_NAME),
                v.count(Flag.RUNNER_AMD64_COUNT), v.count(Flag.RUNNER_ARM64_COUNT),
                runnerPorts, v.bool(Flag.RUNNER_REQUIRE_KVM), v.bool(Flag.RUNNER_CONTROL_PLANE_TOLERATIONS),
                v.str(Flag.RUNNER_PUBLIC_REDFISH_URL).trim(),
                v.count(Flag.CONTROL_PLANE_COUNT), v.versions(Flag.CONTROL_PLANE_VERSIONS), v.nonEmpty(Flag.CONTROL_PLANE_IMAGE),
                v.name(Flag.CONTROL_PLANE_SERVICE_ACCOUNT_NAME), cpPorts,
                ttl, interval,
                v.str(Flag.KUBECONFIG), v.nonEmpty(Flag.ROUTES_DIR), v.bool(Flag.ROUTES_RELOAD),
                v.bool(Flag.LEADER_ELECT), leNs.isEmpty() ? v.name(Flag.NAMESPACE) : v.name(Flag.LEADER_ELECTION_NAMESPACE),
                v.name(Flag.LEADER_ELECTION_LEASE_NAME),
                leaseDuration, renewDeadline, retryPeriod,
                mgmtHostPort[0], Integer.parseInt(mgmtHostPort[1]), logFormat,
                v.duration(Flag.SAR_ALLOWED_TTL), v.duration(Flag.SAR_DENIED_TTL),
                v.intIn(Flag.RETRY_AFTER_SECONDS, 0, 3600), v.duration(Flag.IDLE_TIMEOUT),
                v.intIn(Flag.HTTP_WORKER_THREADS, 1, 1024),
                v.duration(Flag.REFILL_DEBOUNCE),
                new NetworkProfile(
                        v.nonEmpty(Flag.GUEST_GATEWAY), v.nonEmpty(Flag.GUEST_IPV4), v.nonEmpty(Flag.GUEST_SUBNET_MASK),
                        v.nonEmpty(Flag.GUEST_MAC), v.list(Flag.GUEST_DNS),
                        v.nonEmpty(Flag.WIREGUARD_INTERFACE), v.nonEmpty(Flag.WIREGUARD_SERVER_ADDRESS),
                        v.nonEmpty(Flag.WIREGUARD_CLIENT_ADDRESS), v.intIn(Flag.WIREGUARD_LISTEN_PORT, 1, 65535),
                        v.nonEmpty(Flag.VXLAN_INTERFACE), v.intIn(Flag.VXLAN_VNI, 0, 16_777_215),
                        v.intIn(Flag.VXLAN_UDP_PORT, 1, 65535), v.nonEmpty(Flag.VXLAN_SERVER_ADDRESS),
                        v.nonEmpty(Flag.VXLAN_CLIENT_ADDRESS),
                        v.nonEmpty(Flag.REDFISH_URL), v.nonEmpty(Flag.REDFISH_DEVICE_ID)),
                v.bool(Flag.DEV), v.nonEmpty(Flag.DEV_DIR),
                v.intIn(Flag.DEV_API_PORT, 0, 65535), v.intIn(Flag.DEV_SHIM_PORT, 0, 65535),
                v.intIn(Flag.DEV_OPERATORS, 0, 1), v.operatorAddrs(Flag.DEV_OPERATOR_ADDRS));
    }

    /** The Redfish base URL clients get: --runner-public-redfish-url when set, else the tunnel URL. */
    public String redfishBaseUrl() {
        return runnerPublicRedfishUrl.isEmpty() ? network.redfishUrl() : runnerPublicRedfishUrl;
    }

    private static final class Values {
        private final Map<Flag, String> values;

        Values(Map<Flag, String> values) {
            this.values = values;
        }

        String str(Flag f) {
            return values.get(f);
        }

        ConfigException bad(Flag f, String why) {
            return new ConfigException("invalid value \"" + str(f) + "\" for flag --" + f.flagName() + ": " + why);
        }

        String nonEmpty(Flag f) {
            String s = str(f).trim();
            if (s.isEmpty()) {
                throw bad(f, "must not be empty");
            }
            return s;
        }

        String name(Flag f) {
            String s = nonEmpty(f);
            if (!s.matches("[a-z0-9]([-a-z0-9.]*[a-z0-9])?") || s.length() > 253) {
                throw bad(f, "must be a Kubernetes object name");
            }
            return s;
        }

        boolean bool(Flag f) {
            String s = str(f).trim().toLowerCase();
            if (s.equals("true") || s.equals("1")) {
                return true;
            }
            if (s.equals("false") || s.equals("0")) {
                return false;
            }
            throw bad(f, "must be true or false");
        }

        int intIn(Flag f, int min, int max) {
            int n;
            try {
                n = Integer.parseInt(str(f).trim());
            } catch (NumberFormatException e) {
                throw bad(f, "must be an integer");
            }
            if (n < min || n > max) {
                throw bad(f, "must be between " + min + " and " + max);
            }
            return n;
        }

        int count(Flag f) {
            return intIn(f, 0, 10_000);
        }

        Duration duration(Flag f) {
            Duration d;
            try {
                d = GoDuration.parse(str(f));
            } catch (IllegalArgumentException e) {
                throw bad(f, "must be a duration such as 90s, 30m or 1h30m");
            }
            if (d.isNegative()) {
                throw bad(f, "must not be negative");
            }
            return d;
        }

        PortRange range(Flag start, Flag end) {
            int s = intIn(start, 1, 65535);
            int e = intIn(end, 1, 65535);
            if (e < s) {
                throw bad(end, "must not be lower than --" + start.flagName() + " (" + s + ")");
            }
            return new PortRange(s, e);
        }

        String[] hostPort(Flag f, boolean requireHost) {
            String s = str(f).trim();
            int colon = s.lastIndexOf(':');
            if (colon < 0) {
                throw bad(f, "must be host:port");
            }
            String host = s.substring(0, colon);
            if (host.startsWith("[") && host.endsWith("]")) {
                host = host.substring(1, host.length() - 1);
            }
            if (requireHost && host.isEmpty()) {
                throw bad(f, "must name a host, e.g. 127.0.0.1:9876");
            }
            int port;
            try {
                port = Integer.parseInt(s.substring(colon + 1));
            } catch (NumberFormatException e) {
                throw bad(f, "must be host:port");
            }
            if (port < 0 || port > 65535) {
                throw bad(f, "port must be between 0 and 65535");
            }
            return new String[] {host, String.valueOf(port)};
        }

        List<String> list(Flag f) {
            List<String> out = new ArrayList<>();
            for (String part : str(f).split(",")) {
                if (!part.trim().isEmpty()) {
                    out.add(part.trim());
                }
            }
            return Collections.unmodifiableList(out);
        }

        /** {@code host:port} or {@code host:port-port} items, expanded to one {@code host:port} per replica (at most 64). */
        List<String> operatorAddrs(Flag f) {
            List<String> out = new ArrayList<>();
            for (String item : list(f)) {
                java.util.regex.Matcher m = Pattern.compile("([A-Za-z0-9.-]+):(\\d{1,5})(?:-(\\d{1,5}))?").matcher(item);
                if (!m.matches()) {
                    throw bad(f, "\"" + item + "\" is not host:port or host:port-port");
                }
                int from = Integer.parseInt(m.group(2));
                int to = m.group(3) == null ? from : Integer.parseInt(m.group(3));
                if (from < 1 || to > 65535 || to < from || out.size() + (to - from + 1) > 64) {
                    throw bad(f, "ports must be 1-65535, ranges ascending, at most 64 replicas");
                }
                for (int p = from; p <= to; p++) {
                    out.add(m.group(1) + ":" + p);
                }
            }
            return Collections.unmodifiableList(out);
        }

        List<String> versions(Flag f) {
            List<String> out = new ArrayList<>();
            for (String raw : list(f)) {
                String ver = raw.startsWith("v") ? raw : "v" + raw;
                if (!VERSION.matcher(ver).matches()) {
                    throw bad(f, "\"" + raw + "\" is not a version like v1.33.0");
                }
                if (!out.contains(ver)) {
                    out.add(ver);
                }
            }
            if (out.isEmpty()) {
                throw bad(f, "must list at least one version");
            }
            return Collections.unmodifiableList(out);
        }

        Map<String, String> selector(Flag f) {
            Map<String, String> out = new LinkedHashMap<>();
            String s = str(f).trim();
            if (s.isEmpty()) {
                return Map.of();
            }
            for (String req : s.split(",")) {
                String r = req.trim();
                int eq = r.indexOf("==") >= 0 ? r.indexOf("==") : r.indexOf('=');
                if (eq <= 0 || r.contains("!=")) {
                    throw bad(f, "only equality selectors key=value are supported");
                }
                String key = r.substring(0, eq).trim();
                // "key=" (an empty value) is a valid selector; do not read past its end
                boolean doubleEq = eq + 1 < r.length() && r.charAt(eq + 1) == '=';
                String val = r.substring(doubleEq ? eq + 2 : eq + 1).trim();
                if (!LABEL_VALUE.matcher(val).matches()) {
                    throw bad(f, "\"" + val + "\" is not a label value");
                }
                out.put(key, val);
            }
            return Collections.unmodifiableMap(out);
        }
    }
}
