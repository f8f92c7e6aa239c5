package io.unboundedcloud.playpen.config;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import io.unboundedcloud.playpen.model.LabelSelector;
import io.unboundedcloud.playpen.model.PodTemplates;

/**
 * The whole configuration of one operator process, parsed once from flags written as the reference's
 * cobra/pflag command line takes them. Unknown flags and bad values throw {@link ConfigException} with one line
 * naming the flag.
 */
public record OperatorConfig(
        String listenHost, int listenPort,
        String namespace, String serviceName, String tlsSecretName,
        String runnerNamespace, LabelSelector runnerLabelSelector,
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
        int eventBurst, Duration eventRateInterval,
        NetworkProfile network,
        boolean dev, String devDir, int devApiPort, int devShimPort,
        int maxConnections, int maxUnauthenticatedConnections, Duration requestHeaderTimeout,
        Duration requestBodyTimeout, int devOperators, List<String> devOperatorAddrs,
        int maxAllocsPerUser, io.unboundedcloud.playpen.tls.CertificateRenewal servingCertRenewal,
        LeaseLimits leases, WaitingLimits waitingLimits, String healthHost, int healthPort,
        List<String> managementAllowedOrigins, List<String> managementAllowedHosts, String ownerHashSecretName,
        String auditLogPath, int devReplicas, PoolPolicy pools, List<String> devImageFaults,
        io.unboundedcloud.playpen.tls.ServingTls.Provider tlsProvider) {

    /** The environment variable that may hold the Redfish password (e.g. from a Secret via secretKeyRef). */
    public static final String REDFISH_PASSWORD_ENV = "PLAYPEN_RUNNER_REDFISH_PASSWORD";

    /**
     * Caps on alloc requests waiting for capacity: per user and for all users together (each is a held
     * connection; the total stays below --max-connections).
     */
    public record WaitingLimits(int perUser, int total) {
        public static final WaitingLimits DEFAULTS = new WaitingLimits(32, 512);
    }

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
    private static final Pattern DNS_SUBDOMAIN =
            Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
    private static final Pattern LABEL_VALUE = Pattern.compile("([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?");
    private static final Pattern IPV4 = Pattern.compile("((25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)\\.){3}(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)");
    private static final Pattern IPV6_CHARS = Pattern.compile("[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*");

    /** What the command line asks for: run the operator, or print usage / the version and exit 0 (cobra's -h, -v). */
    public enum Request { RUN, HELP, VERSION }

    /** The raw flag values (defaults filled in) and the help/version switches of one command line. */
    record Scan(Map<Flag, String> values, boolean help, boolean version, java.util.Set<Flag> given) {
    }

    /** Parses flags; every flag not given takes its default. The environment is not read. */
    public static OperatorConfig parse(String... args) {
        return parse(Map.of(), args);
    }

    /**
     * Parses flags, reading {@value #REDFISH_PASSWORD_ENV} from {@code env} (the process environment in
     * production) as one of the ways to give the Redfish password.
     */
    public static OperatorConfig parse(Map<String, String> env, String... args) {
        Scan scan = scan(args);
        return build(new Values(scan.values(), scan.given()), env);
    }

    /**
     * Whether the command line starts the --dev playground, read as {@link #parse} reads it ({@code -dev},
     * {@code --dev=1}, the last one given wins). False when the flags are malformed: {@link #parse} reports that.
     */
    public static boolean devRequested(String... args) {
        try {
            return goBool(scan(args).values().get(Flag.DEV), Flag.DEV.flagName());
        } catch (ConfigException e) {
            return false;
        }
    }

    /**
     * Whether the command line asks for usage or the version instead of a run. As with cobra, a malformed or
     * unknown flag is an error even then, and help wins over version.
     */
    public static Request request(String... args) {
        Scan scan = scan(args);
        return scan.help() ? Request.HELP : scan.version() ? Request.VERSION : Request.RUN;
    }

    /**
     * The pflag syntax: {@code --name=value}, {@code --name value}, a bare boolean {@code --name} (true; it never
     * takes the next argument), {@code -name=value} as Go's flag package also takes it. List flags split on commas,
     * and a repeated list flag appends to the values given before (the first one replaces the default).
     */
    static Scan scan(String... args) {
        Map<Flag, String> values = new EnumMap<>(Flag.class);
        for (Flag f : Flag.values()) {
            values.put(f, f.defaultValue());
        }
        EnumMap<Flag, Boolean> given = new EnumMap<>(Flag.class);
        boolean help = false;
        boolean version = false;
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (!arg.startsWith("-") || arg.equals("-") || arg.equals("--")) {
                throw new ConfigException("unexpected argument \"" + arg + "\": flags are written --name=value");
            }
            String body = arg.startsWith("--") ? arg.substring(2) : arg.substring(1);
            if (body.startsWith("-") || body.startsWith("=")) {
                // pflag's words for a flag without a name, such as ---name or --=value
                throw new ConfigException("bad flag syntax: " + arg);
            }
            String name = body;
            String value = null;
            int eq = body.indexOf('=');
            if (eq >= 0) {
                name = body.substring(0, eq);
                value = body.substring(eq + 1);
            }
            // cobra's own flags: --help/-h and --version/-v (booleans like any other)
            if (name.equals("help") || arg.equals("-h") || arg.startsWith("-h=")) {
                help = goBool(value == null ? "true" : value, "help");
                continue;
            }
            if (name.equals("version") || arg.equals("-v") || arg.startsWith("-v=")) {
                version = goBool(value == null ? "true" : value, "version");
                continue;
            }
            Flag flag = Flag.byName(name);
            if (flag == null) {
                throw new ConfigException(unknownFlag(name));
            }
            if (value == null) {
                if (flag.isBoolean()) {
                    value = "true";
                } else if (i + 1 < args.length) {
                    value = args[++i];
                } else {
                    throw new ConfigException("flag --" + name + " needs a value");
                }
            }
            if (Flag.LISTS.contains(flag) && given.containsKey(flag)) {
                value = values.get(flag) + "," + value;
            }
            given.put(flag, true);
            values.put(flag, value);
        }
        return new Scan(values, help, version, java.util.Collections.unmodifiableSet(given.keySet()));
    }

    /**
     * The refusal of a name that names no flag. One with white space in it is most likely a flag and its value given
     * as one argument ("--name value" quoted, or one item of a manifest's args): only the part before the white space
     * is repeated, since the rest is a value, and a value can be a password.
     */
    private static String unknownFlag(String name) {
        java.util.regex.Matcher space = java.util.regex.Pattern.compile("\\s").matcher(name);
        if (!space.find()) {
            return "unknown flag --" + name;
        }
        String head = name.substring(0, space.start());
        return Flag.byName(head) != null
                ? "flag --" + head + " and its value are one argument, with white space between them: give them as --"
                        + head + "=<value>, or as two arguments"
                : "unknown flag --" + head + " (the argument goes on after white space, not shown here)";
    }

    /** Go's strconv.ParseBool, which pflag uses for boolean flags: no white space around the value. */
    private static boolean goBool(String s, String flagName) {
        switch (s) {
            case "1", "t", "T", "TRUE", "true", "True":
                return true;
            case "0", "f", "F", "FALSE", "false", "False":
                return false;
            default:
                throw new ConfigException("invalid value \"" + s + "\" for flag --" + flagName + ": must be true or false");
        }
    }

    /** The usage text of --help: like cobra's, one line per flag, sorted by name, with non-empty defaults. */
    public static String usage() {
        StringBuilder sb = new StringBuilder("Aggregated Kubernetes API allocator for playpen runner pods\n\n")
                .append("Usage:\n  playpen-operator [flags]\n\nFlags:\n");
        List<String[]> rows = new ArrayList<>();
        for (Flag f : Flag.values()) {
            String def = f.defaultValue().isEmpty() || f.defaultValue().equals("false") ? ""
                    : Flag.LISTS.contains(f) ? " (default [" + f.defaultValue() + "])"
                    : f.isBoolean() || !typeOf(f).equals("string") ? " (default " + f.defaultValue() + ")"
                    : " (default \"" + f.defaultValue() + "\")";
            rows.add(new String[] {f.flagName(), "      --" + f.flagName() + (f.isBoolean() ? "" : " " + typeOf(f)),
                    f.help() + def});
        }
        rows.add(new String[] {"help", "  -h, --help", "help for playpen-operator"});
        rows.add(new String[] {"version", "  -v, --version", "version for playpen-operator"});
        rows.sort(java.util.Comparator.comparing((String[] r) -> r[0]));
        int width = rows.stream().mapToInt(r -> r[1].length()).max().orElse(0);
        for (String[] r : rows) {
            sb.append(r[1]).append(" ".repeat(width - r[1].length() + 3)).append(r[2]).append('\n');
        }
        return sb.toString();
    }

    /** The pflag type name shown in usage, derived from the default so the Flag enum needs no extra column. */
    private static String typeOf(Flag f) {
        if (Flag.LISTS.contains(f)) {
            return "strings";
        }
        String d = f.defaultValue();
        if (d.matches("-?\\d+")) {
            return "int";
        }
        if (d.matches("[0-9.]+(ns|us|ms|s|m|h)([0-9.]+(ns|us|ms|s|m|h))*")) {
            return "duration";
        }
        if (d.matches("\\d*\\.\\d+")) {
            return "float64";
        }
        return "string";
    }

    private static OperatorConfig build(Values v, Map<String, String> env) {
        String[] listen = v.hostPort(Flag.LISTEN_ADDR, false);
        PortRange runnerPorts = v.range(Flag.RUNNER_WIREGUARD_HOST_PORT_START, Flag.RUNNER_WIREGUARD_HOST_PORT_END);
        PortRange cpPorts = v.range(Flag.CONTROL_PLANE_APISERVER_HOST_PORT_START, Flag.CONTROL_PLANE_APISERVER_HOST_PORT_END);
        String pull = v.orDefault(Flag.RUNNER_IMAGE_PULL_POLICY);
        if (!List.of("Always", "IfNotPresent", "Never").contains(pull)) {
            throw v.bad(Flag.RUNNER_IMAGE_PULL_POLICY, "must be Always, IfNotPresent or Never");
        }
        String logFormat = v.str(Flag.LOG_FORMAT);
        if (!logFormat.equals("text") && !logFormat.equals("json")) {
            throw v.bad(Flag.LOG_FORMAT, "must be text or json");
        }
        // like the reference, a non-positive --playpen-ttl disables expiry (TtlPolicy: zero = disabled)
        Duration ttl = v.signedDuration(Flag.PLAYPEN_TTL);
        if (ttl.isNegative()) {
            ttl = Duration.ZERO;
        }
        if (!ttl.isZero() && ttl.compareTo(Duration.ofSeconds(1)) < 0) {
            throw v.bad(Flag.PLAYPEN_TTL, "must be 0 (no expiry) or at least 1s: expiry is kept in whole seconds, so a"
                    + " shorter one would end every allocation at its claim");
        }
        v.labelValue(Flag.EXTERNAL_CLIENT_SITE);
        Duration interval = v.duration(Flag.RECONCILE_INTERVAL);
        if (interval.isZero()) {
            throw v.bad(Flag.RECONCILE_INTERVAL, "must be greater than 0");
        }
        String healthAddr = v.str(Flag.HEALTH_ADDR).trim();
        String[] health = healthAddr.isEmpty() ? new String[] {"", "-1"} : v.hostPort(Flag.HEALTH_ADDR, false);
        String mgmt = v.str(Flag.MANAGEMENT_ADDR);
        String[] mgmtHostPort = mgmt.isEmpty() ? new String[] {"", "-1"} : v.hostPort(Flag.MANAGEMENT_ADDR, true);
        refuseSharedPorts(v, List.of(Flag.LISTEN_ADDR, Flag.HEALTH_ADDR, Flag.MANAGEMENT_ADDR),
                List.of(listen, health, mgmtHostPort));
        String leNs = v.str(Flag.LEADER_ELECTION_NAMESPACE);
        Duration leaseDuration = v.duration(Flag.LEADER_ELECTION_LEASE_DURATION);
        Duration renewDeadline = v.duration(Flag.LEADER_ELECTION_RENEW_DEADLINE);
        Duration retryPeriod = v.duration(Flag.LEADER_ELECTION_RETRY_PERIOD);
        // fabric8's Lease elector waits the retry period plus up to 1.2 times it between two tries, and refuses a
        // renew deadline within that: the replica would never lead
        Duration triesApart = retryPeriod.plusMillis((long) Math.ceil(retryPeriod.toMillis() * 1.2));
        if (retryPeriod.isZero() || renewDeadline.compareTo(triesApart) <= 0) {
            throw v.bad(Flag.LEADER_ELECTION_RENEW_DEADLINE, "must be greater than 2.2 times "
                    + "--leader-election-retry-period (" + GoDuration.format(retryPeriod) + "), "
                    + GoDuration.format(triesApart) + ": the Lease elector waits up to that long between two tries");
        }
        if (leaseDuration.compareTo(renewDeadline) <= 0) {
            throw v.bad(Flag.LEADER_ELECTION_LEASE_DURATION, "must be greater than --leader-election-renew-deadline");
        }
        return new OperatorConfig(
                listen[0], Integer.parseInt(listen[1]),
                v.name(Flag.NAMESPACE), v.name(Flag.SERVICE_NAME, v.orDefault(Flag.SERVICE_NAME)), v.name(Flag.TLS_SECRET_NAME),
                v.name(Flag.RUNNER_NAMESPACE), v.selector(Flag.RUNNER_LABEL_SELECTOR),
                v.nonEmpty(Flag.RUNNER_IMAGE), pull, v.name(Flag.RUNNER_SERVICE_ACCOUNT_NAME),
                v.count(Flag.RUNNER_AMD64_COUNT), v.count(Flag.RUNNER_ARM64_COUNT),
                runnerPorts, v.bool(Flag.RUNNER_REQUIRE_KVM), v.bool(Flag.RUNNER_CONTROL_PLANE_TOLERATIONS),
                v.str(Flag.RUNNER_PUBLIC_REDFISH_URL).trim(),
                v.count(Flag.CONTROL_PLANE_COUNT), v.versions(Flag.CONTROL_PLANE_VERSIONS), v.orDefault(Flag.CONTROL_PLANE_IMAGE),
                v.name(Flag.CONTROL_PLANE_SERVICE_ACCOUNT_NAME), cpPorts,
                ttl, interval,
                v.str(Flag.KUBECONFIG), v.nonEmpty(Flag.ROUTES_DIR), v.bool(Flag.ROUTES_RELOAD),
                v.bool(Flag.LEADER_ELECT), leNs.isEmpty() ? v.name(Flag.NAMESPACE) : v.name(Flag.LEADER_ELECTION_NAMESPACE),
                v.name(Flag.LEADER_ELECTION_LEASE_NAME),
                leaseDuration, renewDeadline, retryPeriod,
                mgmtHostPort[0], Integer.parseInt(mgmtHostPort[1]), logFormat,
                v.duration(Flag.SAR_ALLOWED_TTL), v.duration(Flag.SAR_DENIED_TTL),
                v.intIn(Flag.RETRY_AFTER_SECONDS, 0, 3600), idleTimeout(v),
                v.intIn(Flag.HTTP_WORKER_THREADS, 1, 1024),
                v.duration(Flag.REFILL_DEBOUNCE),
                v.intIn(Flag.EVENT_BURST, 0, 1_000_000), positive(v, Flag.EVENT_RATE_INTERVAL),
                network(v, env),
                v.bool(Flag.DEV), v.nonEmpty(Flag.DEV_DIR),
                v.intIn(Flag.DEV_API_PORT, 0, 65535), v.intIn(Flag.DEV_SHIM_PORT, 0, 65535),
                v.intIn(Flag.MAX_CONNECTIONS, 1, 1_000_000), v.intIn(Flag.MAX_UNAUTHENTICATED_CONNECTIONS, 1, 1_000_000),
                positive(v, Flag.REQUEST_HEADER_TIMEOUT), positive(v, Flag.REQUEST_BODY_TIMEOUT),
                v.intIn(Flag.DEV_OPERATORS, 0, 1), v.operatorAddrs(Flag.DEV_OPERATOR_ADDRS),
                v.intIn(Flag.MAX_ALLOCS_PER_USER, 0, 1_000_000),
                servingCertRenewal(v),
                new LeaseLimits(maxTtl(v, ttl), maxLifetime(v),
                        v.intIn(Flag.MAX_WAIT, 0, 3600)),
                waitingLimits(v), health[0], Integer.parseInt(health[1]),
                v.origins(Flag.MANAGEMENT_ALLOWED_ORIGINS), v.hostNames(Flag.MANAGEMENT_ALLOWED_HOSTS),
                v.name(Flag.OWNER_HASH_SECRET_NAME), v.nonEmpty(Flag.AUDIT_LOG_PATH), v.intIn(Flag.DEV_REPLICAS, 0, 8),
                pools(v), v.imageFaults(Flag.DEV_IMAGE_FAULTS), tlsProvider(v));
    }

    /**
     * Two listeners on one port whose hosts overlap (the same host, or either one every interface) are refused: the
     * second bind would fail only once the HTTPS listener is up and the Lease elector started, with no flag named.
     * A port below 1 is a disabled listener (-1) or a free port for each (0), which never clash.
     */
    private static void refuseSharedPorts(Values v, List<Flag> flags, List<String[]> hostPorts) {
        for (int i = 0; i < flags.size(); i++) {
            for (int j = i + 1; j < flags.size(); j++) {
                String[] a = hostPorts.get(i);
                String[] b = hostPorts.get(j);
                boolean overlap = a[0].equalsIgnoreCase(b[0]) || everyInterface(a[0]) || everyInterface(b[0]);
                if (Integer.parseInt(a[1]) > 0 && a[1].equals(b[1]) && overlap) {
                    throw new ConfigException("--" + flags.get(i).flagName() + " (" + v.str(flags.get(i)).trim()
                            + ") and --" + flags.get(j).flagName() + " (" + v.str(flags.get(j)).trim()
                            + ") both listen on port " + a[1] + ": give one of them another port");
                }
            }
        }
    }

    private static boolean everyInterface(String host) {
        return host.isEmpty() || host.equals("0.0.0.0") || host.equals("::") || host.equals("0:0:0:0:0:0:0:0");
    }

    private static io.unboundedcloud.playpen.tls.ServingTls.Provider tlsProvider(Values v) {
        try {
            return io.unboundedcloud.playpen.tls.ServingTls.Provider.parse(v.str(Flag.TLS_PROVIDER));
        } catch (IllegalArgumentException e) {
            throw v.bad(Flag.TLS_PROVIDER, e.getMessage());
        }
    }

    /** Per-user and total caps on waiting requests; the total must leave connections for everything else. */
    private static WaitingLimits waitingLimits(Values v) {
        int maxConnections = v.intIn(Flag.MAX_CONNECTIONS, 1, 1_000_000);
        int total = v.intIn(Flag.MAX_WAITING, 1, 1_000_000);
        if (total >= maxConnections) {
            throw v.bad(Flag.MAX_WAITING, "must be below --max-connections (" + maxConnections
                    + "), so requests that do not wait, and probes, still get a connection");
        }
        return new WaitingLimits(v.intIn(Flag.MAX_WAITING_PER_USER, 1, 1_000_000), total);
    }

    /**
     * The Redfish password, given one way at most: --runner-redfish-password, --runner-redfish-password-file or
     * the environment variable. The file's content is used as is, but for one trailing newline.
     */
    private static String redfishPassword(Values v, Map<String, String> env) {
        String flag = v.str(Flag.RUNNER_REDFISH_PASSWORD);
        String file = v.str(Flag.RUNNER_REDFISH_PASSWORD_FILE).trim();
        String fromEnv = env.getOrDefault(REDFISH_PASSWORD_ENV, "");
        int ways = (flag.isEmpty() ? 0 : 1) + (file.isEmpty() ? 0 : 1) + (fromEnv.isEmpty() ? 0 : 1);
        if (ways > 1) {
            throw new ConfigException("the Redfish password is given more than one way: use one of --"
                    + Flag.RUNNER_REDFISH_PASSWORD.flagName() + ", --" + Flag.RUNNER_REDFISH_PASSWORD_FILE.flagName()
                    + " and " + REDFISH_PASSWORD_ENV);
        }
        if (!file.isEmpty()) {
            String content;
            try {
                content = java.nio.file.Files.readString(java.nio.file.Path.of(file), java.nio.charset.StandardCharsets.UTF_8);
            } catch (java.io.IOException | RuntimeException e) {
                // the exception names the file, never its content
                throw v.bad(Flag.RUNNER_REDFISH_PASSWORD_FILE, "cannot read it as UTF-8 text ("
                        + e.getClass().getSimpleName() + ")");
            }
            return content.endsWith("\r\n") ? content.substring(0, content.length() - 2)
                    : content.endsWith("\n") ? content.substring(0, content.length() - 1) : content;
        }
        return flag.isEmpty() ? fromEnv : flag;
    }

    /** Lifetime and renewal point of the self-signed serving certificate, and how replicas pick up a new one. */
    private static io.unboundedcloud.playpen.tls.CertificateRenewal servingCertRenewal(Values v) {
        // this operator's own flag: a plain decimal number (an exponent allowed), nothing Java's parser alone would
        // take (white space, a d or f suffix, a hexadecimal float, NaN, Infinity), strictly between 0 and 1
        String share = v.str(Flag.SERVING_CERT_RENEW_FRACTION);
        double fraction = share.matches("[+]?(\\d+(\\.\\d*)?|\\.\\d+)([eE][-+]?\\d+)?") ? Double.parseDouble(share)
                : Double.NaN;
        if (!(fraction > 0 && fraction < 1)) {
            throw v.bad(Flag.SERVING_CERT_RENEW_FRACTION, "must be a decimal number greater than 0 and less than 1,"
                    + " such as 0.667 (renewal after two thirds of the certificate's lifetime)");
        }
        Duration validity = positive(v, Flag.SERVING_CERT_VALIDITY);
        if (validity.compareTo(Duration.ofSeconds(2)) < 0) {
            throw v.bad(Flag.SERVING_CERT_VALIDITY, "must be at least 2s");
        }
        return new io.unboundedcloud.playpen.tls.CertificateRenewal(validity, fraction,
                positive(v, Flag.SERVING_CERT_CHECK_INTERVAL), v.duration(Flag.SERVING_CERT_PUBLISH_GRACE));
    }

    /** The --pool-* flags: health checks, rollout surge, back-off and the demand-aware buffer's bound. */
    private static PoolPolicy pools(Values v) {
        String surge = v.str(Flag.POOL_MAX_SURGE).trim();
        if (!PoolPolicy.validSurge(surge)) {
            throw v.bad(Flag.POOL_MAX_SURGE, "must be a number of pods (e.g. 1) or a percentage of the desired count "
                    + "up to 1000% (e.g. 25%)");
        }
        Duration base = positive(v, Flag.POOL_BACKOFF_BASE);
        Duration max = positive(v, Flag.POOL_BACKOFF_MAX);
        if (max.compareTo(base) < 0) {
            throw v.bad(Flag.POOL_BACKOFF_MAX, "must not be shorter than --pool-backoff-base");
        }
        int maxIdle = v.count(Flag.POOL_MAX_IDLE);
        int counts = Math.max(Math.max(v.count(Flag.RUNNER_AMD64_COUNT), v.count(Flag.RUNNER_ARM64_COUNT)),
                v.count(Flag.CONTROL_PLANE_COUNT));
        if (maxIdle > 0 && maxIdle < counts) {
            throw v.bad(Flag.POOL_MAX_IDLE, "must be 0 (off) or at least the largest count flag (" + counts
                    + "): the count flags are the buffer's minimum");
        }
        return new PoolPolicy(v.duration(Flag.POOL_READY_TIMEOUT), v.duration(Flag.POOL_NODE_NOT_READY_GRACE), surge,
                base, max, maxIdle);
    }

    /**
     * --playpen-max-ttl, never below a positive --playpen-ttl (the ttl of an alloc or renewal that asks for none,
     * which would otherwise outlast the maximum and be refused when asked for by name): not given, it grows to
     * --playpen-ttl, so a deployment with the Go operator's flags alone keeps its allocations' lifetime; given
     * below it, the operator does not start.
     */
    private static Duration maxTtl(Values v, Duration ttl) {
        Duration max = positive(v, Flag.PLAYPEN_MAX_TTL);
        if (max.compareTo(Duration.ofSeconds(1)) < 0) {
            throw v.bad(Flag.PLAYPEN_MAX_TTL, "must be at least 1s, the shortest ttl an alloc or renewal may ask for");
        }
        if (ttl.compareTo(max) <= 0) {
            return max;
        }
        if (!v.given(Flag.PLAYPEN_MAX_TTL)) {
            return ttl;
        }
        throw v.bad(Flag.PLAYPEN_MAX_TTL, "must not be less than --playpen-ttl (" + v.str(Flag.PLAYPEN_TTL).trim()
                + "), the ttl of an alloc or renewal that asks for none; raise it or lower --playpen-ttl");
    }

    /**
     * --idle-timeout: 0 (no idle timeout, as a zero idle and read timeout in Go's HTTP server) or at least 1s. The
     * idle closer sees no I/O while a request waits on the API server, so a shorter timeout would cut handshakes and
     * requests.
     */
    private static Duration idleTimeout(Values v) {
        Duration idle = v.duration(Flag.IDLE_TIMEOUT);
        if (!idle.isZero() && idle.compareTo(Duration.ofSeconds(1)) < 0) {
            throw v.bad(Flag.IDLE_TIMEOUT, "must be 0 (no idle timeout) or at least 1s: a connection is idle while its"
                    + " request waits on the API server, so a shorter one would close connections in the middle of"
                    + " their handshake or request");
        }
        return idle;
    }

    /** --playpen-max-lifetime: 0 (no cap) or at least 1s (expiry is kept in whole seconds). */
    private static Duration maxLifetime(Values v) {
        Duration cap = v.duration(Flag.PLAYPEN_MAX_LIFETIME);
        if (!cap.isZero() && cap.compareTo(Duration.ofSeconds(1)) < 0) {
            throw v.bad(Flag.PLAYPEN_MAX_LIFETIME, "must be 0 (no cap) or at least 1s: expiry is kept in whole seconds,"
                    + " so a shorter cap would end every allocation at its claim");
        }
        return cap;
    }

    private static Duration positive(Values v, Flag f) {
        Duration d = v.duration(f);
        if (d.isZero() || d.isNegative()) {
            throw v.bad(f, "must be greater than 0");
        }
        return d;
    }

    /** The alloc answers' network values; the VXLAN addresses and default Redfish URL derive as in the reference. */
    private static NetworkProfile network(Values v, Map<String, String> env) {
        String serverAddress = v.nonEmpty(Flag.RUNNER_WIREGUARD_SERVER_ADDRESS);
        String clientAddress = v.nonEmpty(Flag.RUNNER_WIREGUARD_CLIENT_ADDRESS);
        String serverIp = v.addressIp(Flag.RUNNER_WIREGUARD_SERVER_ADDRESS);
        String clientIp = v.addressIp(Flag.RUNNER_WIREGUARD_CLIENT_ADDRESS);
        String host = serverIp.contains(":") ? "[" + serverIp + "]" : serverIp;
        return new NetworkProfile(
                v.nonEmpty(Flag.RUNNER_GUEST_GATEWAY), v.nonEmpty(Flag.RUNNER_GUEST_IPV4), v.nonEmpty(Flag.RUNNER_GUEST_SUBNET_MASK),
                v.nonEmpty(Flag.RUNNER_GUEST_MAC), v.list(Flag.RUNNER_GUEST_DNS),
                v.nonEmpty(Flag.RUNNER_WIREGUARD_INTERFACE), serverAddress, clientAddress,
                v.intIn(Flag.RUNNER_WIREGUARD_LISTEN_PORT, 1, 65535),
                v.nonEmpty(Flag.RUNNER_VXLAN_INTERFACE), v.intIn(Flag.RUNNER_VXLAN_VNI, 0, 16_777_215),
                v.intIn(Flag.RUNNER_VXLAN_PORT, 1, 65535), serverIp, clientIp,
                "https://" + host + ":" + listenPort(v.str(Flag.RUNNER_LISTEN_ADDR)),
                v.nonEmpty(Flag.RUNNER_REDFISH_DEVICE_ID),
                v.str(Flag.RUNNER_REDFISH_USERNAME), redfishPassword(v, env));
    }

    /** The port of a host:port as Go's net.SplitHostPort finds it; 8443 when there is none (the reference's fallback). */
    static String listenPort(String addr) {
        int colon = addr.lastIndexOf(':');
        if (colon < 0) {
            return "8443";
        }
        String host = addr.substring(0, colon);
        boolean bracketed = host.startsWith("[") && host.endsWith("]") && host.indexOf(']') == host.length() - 1;
        if (!bracketed && (host.contains(":") || host.contains("[") || host.contains("]"))) {
            return "8443";
        }
        String port = addr.substring(colon + 1);
        return port.isEmpty() ? "8443" : port;
    }

    /** The Redfish base URL clients get: --runner-public-redfish-url when set, else the tunnel URL. */
    public String redfishBaseUrl() {
        return runnerPublicRedfishUrl.isEmpty() ? network.redfishUrl() : runnerPublicRedfishUrl;
    }

    /** Go's strconv.ParseInt(s, 0, 64), which pflag's int flags use: sign, 0x/0o/0b or leading-0 octal, underscores. */
    static long goInt(String s) {
        String t = s;
        boolean negative = false;
        if (t.startsWith("+") || t.startsWith("-")) {
            negative = t.startsWith("-");
            t = t.substring(1);
        }
        int radix = 10;
        boolean prefixed = false;
        if (t.length() > 1 && t.charAt(0) == '0') {
            char c = Character.toLowerCase(t.charAt(1));
            radix = c == 'x' ? 16 : c == 'b' ? 2 : 8;
            t = c == 'x' || c == 'b' || c == 'o' ? t.substring(2) : t.substring(1);
            prefixed = true;
        }
        if (t.contains("_") && !t.matches((prefixed ? "_?" : "") + "[0-9A-Za-z]+(_[0-9A-Za-z]+)*")) {
            throw new NumberFormatException(s);
        }
        t = t.replace("_", "");
        if (t.isEmpty() || !t.matches("[0-9A-Za-z]+")) {
            throw new NumberFormatException(s);
        }
        long n = Long.parseLong(t, radix);
        return negative ? -n : n;
    }

    private static final class Values {
        private final Map<Flag, String> values;
        private final java.util.Set<Flag> given;

        Values(Map<Flag, String> values, java.util.Set<Flag> given) {
            this.values = values;
            this.given = given;
        }

        /** Whether the command line gave the flag (else it has its default). */
        boolean given(Flag f) {
            return given.contains(f);
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

        /**
         * The value trimmed, or the flag's default when nothing is left: how the reference reads the flags it
         * defaults itself when they are empty (--service-name, --runner-image-pull-policy, --control-plane-image).
         */
        String orDefault(Flag f) {
            String s = str(f).trim();
            return s.isEmpty() ? f.defaultValue() : s;
        }

        String name(Flag f) {
            return name(f, nonEmpty(f));
        }

        String name(Flag f, String s) {
            if (!s.matches("[a-z0-9]([-a-z0-9.]*[a-z0-9])?") || s.length() > 253) {
                throw bad(f, "must be a Kubernetes object name");
            }
            return s;
        }

        boolean bool(Flag f) {
            try {
                return goBool(str(f), f.flagName());
            } catch (ConfigException e) {
                throw bad(f, "must be true or false");
            }
        }

        int intIn(Flag f, int min, int max) {
            long n;
            try {
                // as strconv.ParseInt, which pflag uses: no white space around the value
                n = goInt(str(f));
            } catch (NumberFormatException e) {
                throw bad(f, "must be an integer");
            }
            if (n < min || n > max) {
                throw bad(f, "must be between " + min + " and " + max);
            }
            return (int) n;
        }

        int count(Flag f) {
            return intIn(f, 0, 10_000);
        }

        Duration signedDuration(Flag f) {
            try {
                return GoDuration.parse(str(f));
            } catch (IllegalArgumentException e) {
                throw bad(f, "must be a duration such as 90s, 30m or 1h30m");
            }
        }

        Duration duration(Flag f) {
            Duration d = signedDuration(f);
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
            if (s.isEmpty()) {
                throw bad(f, "must not be empty: give host:port, e.g. "
                        + (requireHost ? "127.0.0.1:9876" : ":8443 (every interface) or 127.0.0.1:8443"));
            }
            int colon = s.lastIndexOf(':');
            if (colon < 0) {
                throw bad(f, "must be host:port");
            }
            String host = s.substring(0, colon);
            // net.SplitHostPort's rules, which the Go operator's listeners apply: an IPv6 host only in brackets,
            // nothing around them, no other bracket anywhere
            boolean bracketed = host.startsWith("[") && host.indexOf(']') == host.length() - 1;
            if (bracketed) {
                host = host.substring(1, host.length() - 1);
            }
            String rest = s.substring(colon + 1);
            if ((!bracketed && host.contains(":")) || host.contains("[") || host.contains("]") || rest.contains("[")
                    || rest.contains("]")) {
                throw bad(f, "must be host:port; put an IPv6 host in brackets, e.g. [::1]:8443");
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

        /** Origins as browsers send them: http or https, a host, an optional port, nothing else. */
        List<String> origins(Flag f) {
            List<String> out = list(f);
            for (String o : out) {
                if (!o.matches("(?i)https?://[A-Za-z0-9._~-]+(:\\d{1,5})?/?") && !o.matches("(?i)https?://\\[[0-9A-Fa-f:.]+\\](:\\d{1,5})?/?")) {
                    throw bad(f, "\"" + o + "\" is not an origin like https://hawtio.example.com:8443");
                }
            }
            return out;
        }

        /** DNS names or IP addresses, no port. */
        List<String> hostNames(Flag f) {
            List<String> out = list(f);
            for (String h : out) {
                if (!h.matches("[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?")) {
                    throw bad(f, "\"" + h + "\" is not a host name (no scheme, no port)");
                }
            }
            return out;
        }

        /** --dev-image-faults: image=mode pairs, mode one of never-ready, crash, evict. */
        List<String> imageFaults(Flag f) {
            List<String> out = new ArrayList<>();
            for (String item : list(f)) {
                int eq = item.lastIndexOf('=');
                String mode = eq < 0 ? "" : item.substring(eq + 1);
                if (eq <= 0 || !List.of("never-ready", "crash", "evict").contains(mode)) {
                    throw bad(f, "\"" + item + "\" is not image=mode with mode never-ready, crash or evict");
                }
                out.add(item);
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
                // the version names the pool's pods and labels them: one Kubernetes refuses would fail every create
                String label = PodTemplates.kubernetesVersionLabel(ver);
                if (label.length() > 63) {
                    throw bad(f, "\"" + raw + "\" is " + label.length() + " characters as its pods' kubernetes-version"
                            + " label, which Kubernetes refuses over 63");
                }
                String name = PodTemplates.controlPlaneName(ver, 65535);
                if (name.length() > 253 || !DNS_SUBDOMAIN.matcher(name).matches()) {
                    throw bad(f, "\"" + raw + "\" would name its pods " + name.substring(0, name.length() - 5)
                            + "<port>, which Kubernetes refuses: each part between dots must start and end with a"
                            + " letter or digit");
                }
                if (out.contains(ver)) {
                    continue;
                }
                // a pool tells its pods by the version label, where '+' and '_' read as '-'
                for (String other : out) {
                    if (PodTemplates.kubernetesVersionLabel(other).equals(PodTemplates.kubernetesVersionLabel(ver))) {
                        throw bad(f, other + " and " + ver + " would share the pod label "
                                + PodTemplates.kubernetesVersionLabel(ver) + ", so their pools could not be told apart;"
                                + " list one of them");
                    }
                }
                out.add(ver);
            }
            if (out.isEmpty()) {
                throw bad(f, "must list at least one version");
            }
            return Collections.unmodifiableList(out);
        }

        LabelSelector selector(Flag f) {
            try {
                return LabelSelector.parse(str(f));
            } catch (IllegalArgumentException e) {
                throw bad(f, e.getMessage());
            }
        }

        String labelValue(Flag f) {
            String s = str(f);
            if (s.length() > 63 || !LABEL_VALUE.matcher(s).matches()) {
                throw bad(f, "must be a label value");
            }
            return s;
        }

        /** The IP of an address with an optional /prefix (the reference's runnerAddressIP); IPv4 or IPv6. */
        String addressIp(Flag f) {
            String s = str(f).trim();
            int slash = s.indexOf('/');
            String ip = slash >= 0 ? s.substring(0, slash) : s;
            boolean ok = IPV4.matcher(ip).matches();
            if (!ok && IPV6_CHARS.matcher(ip).matches()) {
                try {
                    // a literal with ':' never triggers a DNS lookup
                    ok = java.net.InetAddress.getByName(ip) instanceof java.net.Inet6Address || ip.contains(".");
                } catch (java.net.UnknownHostException e) {
                    ok = false;
                }
            }
            if (!ok) {
                throw bad(f, "\"" + ip + "\" is not an IP address");
            }
            return ip;
        }
    }
}
