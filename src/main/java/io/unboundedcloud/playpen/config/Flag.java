package io.unboundedcloud.playpen.config;

import java.util.Collections;
import java.util.EnumSet;
import java.util.Set;

/**
 * Every command-line flag the operator accepts, with its default and one line of help; the reference operator's
 * flags come first ({@link #REFERENCE}). docs/configuration.md (generated from this list) and the deploy manifests are checked
 * against this list.
 */
public enum Flag {
    // --- the reference operator's flags (cmd/playpen-operator/main.go), same names, defaults and meaning ---
    LISTEN_ADDR("listen-addr", ":8443", "HTTPS listen address host:port (empty host = all interfaces)"),
    NAMESPACE("namespace", "playpen", "operator namespace: its TLS Secret, Service and leader Lease"),
    SERVICE_NAME("service-name", "playpen-operator", "operator Service name used by the aggregated APIService; CN and SANs of the self-signed serving certificate"),
    TLS_SECRET_NAME("tls-secret-name", "playpen-operator-tls", "kubernetes.io/tls Secret storing the operator HTTPS serving certificate (created when absent)"),
    RUNNER_NAMESPACE("runner-namespace", "playpen", "namespace containing playpen-runner and control-plane pods"),
    RUNNER_LABEL_SELECTOR("runner-label-selector", "app.kubernetes.io/name=playpen-runner", "label selector (Kubernetes syntax, set-based too) a runner pod must match to be handed out"),
    RUNNER_IMAGE("runner-image", "ghcr.io/azure/playpen:latest", "container image of operator-managed runner pods (also the control-plane helper image)"),
    RUNNER_IMAGE_PULL_POLICY("runner-image-pull-policy", "Always", "imagePullPolicy of operator-managed pods (Always|IfNotPresent|Never)"),
    RUNNER_SERVICE_ACCOUNT_NAME("runner-service-account-name", "playpen-runner", "ServiceAccount of operator-managed runner pods"),
    RUNNER_AMD64_COUNT("runner-amd64-count", "1", "desired number of idle amd64 runner pods"),
    RUNNER_ARM64_COUNT("runner-arm64-count", "1", "desired number of idle arm64 runner pods"),
    RUNNER_WIREGUARD_HOST_PORT_START("runner-wireguard-host-port-start", "51820", "first UDP hostPort for runner WireGuard endpoints"),
    RUNNER_WIREGUARD_HOST_PORT_END("runner-wireguard-host-port-end", "51899", "last UDP hostPort for runner WireGuard endpoints"),
    RUNNER_REQUIRE_KVM("runner-require-kvm", "true", "mount /dev/kvm into runner pods"),
    RUNNER_CONTROL_PLANE_TOLERATIONS("runner-control-plane-tolerations", "false", "let runner pods schedule on control-plane/master nodes"),
    EXTERNAL_CLIENT_SITE("external-client-site", "playpen-external", "unbounded-net site label of synthetic client Nodes; accepted and checked, no effect here (no synthetic Nodes)"),
    CONTROL_PLANE_COUNT("control-plane-count", "0", "desired number of idle k3s control-plane pods per Kubernetes version"),
    CONTROL_PLANE_VERSIONS("control-plane-versions", "v1.33.0", "Kubernetes versions offered as control planes (comma list; repeating the flag appends)"),
    CONTROL_PLANE_IMAGE("control-plane-image", "rancher/k3s:{version}-k3s1", "k3s image template; {version} is replaced by the Kubernetes version"),
    CONTROL_PLANE_SERVICE_ACCOUNT_NAME("control-plane-service-account-name", "playpen-control-plane", "ServiceAccount of operator-managed control-plane pods"),
    CONTROL_PLANE_APISERVER_HOST_PORT_START("control-plane-apiserver-host-port-start", "16443", "first TCP hostPort for control-plane API servers"),
    CONTROL_PLANE_APISERVER_HOST_PORT_END("control-plane-apiserver-host-port-end", "16499", "last TCP hostPort for control-plane API servers"),
    PLAYPEN_TTL("playpen-ttl", "1h", "lifetime of an allocation whose request names no ttl (Go duration, 0 or at least 1s); expiry disabled when not positive; --playpen-max-ttl bounds a requested ttl, --playpen-max-lifetime renewals"),
    RECONCILE_INTERVAL("reconcile-interval", "30s", "interval of the pool and TTL backstop passes (Go duration, > 0)"),
    RUNNER_LISTEN_ADDR("runner-listen-addr", "10.88.0.1:8443", "runner HTTPS listen address; its port is the port of the default Redfish URL"),
    RUNNER_PUBLIC_REDFISH_URL("runner-public-redfish-url", "", "Redfish URL returned in allocs; empty = https://<runner WireGuard server IP>:<runner-listen-addr port>"),
    RUNNER_WIREGUARD_INTERFACE("runner-wireguard-interface", "wg0", "runner WireGuard interface returned in allocs"),
    RUNNER_WIREGUARD_SERVER_ADDRESS("runner-wireguard-server-address", "10.88.0.1/24", "runner WireGuard address with prefix; its IP is the VXLAN server address"),
    RUNNER_WIREGUARD_CLIENT_ADDRESS("runner-wireguard-client-address", "10.88.0.2/32", "client WireGuard address with prefix; its IP is the VXLAN client address"),
    RUNNER_WIREGUARD_LISTEN_PORT("runner-wireguard-listen-port", "51820", "runner WireGuard UDP listen port (container port of runner pods)"),
    RUNNER_VXLAN_INTERFACE("runner-vxlan-interface", "vxlan0", "runner VXLAN interface returned in allocs"),
    RUNNER_VXLAN_VNI("runner-vxlan-vni", "12001", "runner VXLAN network identifier"),
    RUNNER_VXLAN_PORT("runner-vxlan-port", "4789", "runner VXLAN UDP destination port"),
    RUNNER_GUEST_MAC("runner-guest-mac", "52:54:00:aa:bb:01", "guest MAC returned in allocs"),
    RUNNER_GUEST_IPV4("runner-guest-ipv4", "192.168.200.10", "guest IPv4 returned in allocs"),
    RUNNER_GUEST_SUBNET_MASK("runner-guest-subnet-mask", "255.255.255.0", "guest subnet mask returned in allocs"),
    RUNNER_GUEST_GATEWAY("runner-guest-gateway", "192.168.200.1", "guest gateway returned in allocs; also the control-plane TLS SAN and tls-server-name"),
    RUNNER_GUEST_DNS("runner-guest-dns", "8.8.8.8", "guest DNS servers returned in allocs (comma list; repeating the flag appends)"),
    RUNNER_REDFISH_USERNAME("runner-redfish-username", "", "Redfish username returned in allocs"),
    RUNNER_REDFISH_PASSWORD("runner-redfish-password", "", "Redfish password returned in allocs (never logged)"),
    RUNNER_REDFISH_DEVICE_ID("runner-redfish-device-id", "1", "Redfish device ID returned in allocs"),

    // --- additions of this implementation ---
    KUBECONFIG("kubeconfig", "", "kubeconfig file; empty = KUBECONFIG env, ~/.kube/config or in-cluster"),
    ROUTES_DIR("routes-dir", "routes", "folder of YAML routes; the copy inside the jar is used when it is absent"),
    ROUTES_RELOAD("routes-reload", "false", "reload edited route files without restarting"),
    LEADER_ELECT("leader-elect", "true", "run pool, TTL and certificate work only on the Lease holder"),
    LEADER_ELECTION_NAMESPACE("leader-election-namespace", "", "namespace of the leader Lease (empty = --namespace)"),
    LEADER_ELECTION_LEASE_NAME("leader-election-lease-name", "playpen-operator", "name of the leader Lease"),
    LEADER_ELECTION_LEASE_DURATION("leader-election-lease-duration", "15s", "how long a Lease is valid without renewal"),
    LEADER_ELECTION_RENEW_DEADLINE("leader-election-renew-deadline", "10s", "the leader gives up if it cannot renew within this, also while a renewal hangs unanswered; more than 2.2 times --leader-election-retry-period"),
    LEADER_ELECTION_RETRY_PERIOD("leader-election-retry-period", "2s", "interval between Lease acquire/renew attempts"),
    MANAGEMENT_ADDR("management-addr", "127.0.0.1:9876", "plain-HTTP management listener (Jolokia, /metrics); empty disables"),
    LOG_FORMAT("log-format", "text", "log line format: text or json"),
    SAR_ALLOWED_TTL("sar-allowed-ttl", "10s", "how long an allowed SubjectAccessReview is cached (0 disables)"),
    SAR_DENIED_TTL("sar-denied-ttl", "5s", "how long a denied SubjectAccessReview is cached (0 disables)"),
    RETRY_AFTER_SECONDS("retry-after-seconds", "1", "Retry-After value on 503 answers (a \"no idle pod\" 503 while the pool backs off gives the pause left, when longer)"),
    IDLE_TIMEOUT("idle-timeout", "60s", "close HTTPS connections idle for this long (no bytes in or out while no request is being answered: a request waiting for the API server or for capacity, or a watch between events, is not idle); 0 = never, else at least 1s"),
    HTTP_WORKER_THREADS("http-worker-threads", "64", "threads that run the HTTP flows (each connection is served by one; alloc blocks on API calls)"),
    REFILL_DEBOUNCE("refill-debounce", "100ms", "delay that coalesces cache events before a pool pass"),
    EVENT_BURST("event-burst", "25", "Events of one reason and kind per namespace written at once before rate limiting (0 = no limit)"),
    EVENT_RATE_INTERVAL("event-rate-interval", "5s", "past the burst, one Event per reason and kind per namespace per interval; the others are aggregated into it"),
    DEV("dev", "false", "start the embedded simulated cluster and run against it"),
    DEV_DIR("dev-dir", "target/dev", "where --dev writes kubeconfigs, certificates and endpoints.env"),
    DEV_API_PORT("dev-api-port", "0", "--dev: port of the simulated API server (0 = free port)"),
    DEV_SHIM_PORT("dev-shim-port", "0", "--dev: port of the aggregator stand-in kubectl talks to (0 = free port)"),
    MAX_CONNECTIONS("max-connections", "1024", "HTTPS connections open at once; more are closed at accept"),
    MAX_UNAUTHENTICATED_CONNECTIONS("max-unauthenticated-connections", "256", "HTTPS connections without a trusted front-proxy certificate (handshakes and probes); the oldest is closed to make room"),
    REQUEST_HEADER_TIMEOUT("request-header-timeout", "10s", "time for the TLS handshake and request head of a new connection, and for each later request head"),
    REQUEST_BODY_TIMEOUT("request-body-timeout", "30s", "time for a request body once its head has arrived"),
    DEV_OPERATORS("dev-operators", "1", "--dev: operators run inside the dev process: 1, or 0 for the simulated cluster alone"),
    DEV_OPERATOR_ADDRS("dev-operator-addrs", "",
            "--dev: more operator replicas behind the aggregator stand-in, comma-separated host:port or host:port-port"
                    + " (with --dev-operators=0 the default is 127.0.0.1:9441-9448)"),
    MAX_ALLOCS_PER_USER("max-allocs-per-user", "0", "allocations one user may hold at once (owner counted from the pods' owner-hash annotation); a new one beyond it is 429 with Retry-After; 0 = unlimited"),
    SERVING_CERT_VALIDITY("serving-cert-validity", "8760h", "lifetime of the self-signed serving certificate the operator creates and renews"),
    SERVING_CERT_RENEW_FRACTION("serving-cert-renew-fraction", "0.667", "share of its lifetime after which the leader renews a self-signed serving certificate (between 0 and 1)"),
    SERVING_CERT_CHECK_INTERVAL("serving-cert-check-interval", "10s", "how often each replica re-reads the serving Secret (the leader also renews and publishes the caBundle)"),
    SERVING_CERT_PUBLISH_GRACE("serving-cert-publish-grace", "5s", "a new serving certificate is served only this long after the caBundle was seen trusting it"),
    PLAYPEN_MAX_TTL("playpen-max-ttl", "24h", "longest ttl an alloc or a renewal may ask for (Go duration, at least 1s); more is a 400. Never below a positive --playpen-ttl: not given, it rises to it; given below it, the operator does not start"),
    PLAYPEN_MAX_LIFETIME("playpen-max-lifetime", "0s", "no expiry, an alloc's or a renewal's, is set past claimed-at + this (Go duration; 0 = no cap, else at least 1s)"),
    MAX_WAIT("max-wait", "120", "largest waitSeconds an alloc may ask for (seconds, 0-3600; 0 turns waiting off); more is a 400"),
    MAX_WAITING_PER_USER("max-waiting-per-user", "32", "alloc requests one user may have waiting for capacity at once (retries of one key count each); more are 429 with Retry-After"),
    MAX_WAITING("max-waiting", "512", "alloc requests waiting for capacity at once, all users together (below --max-connections, so other requests keep connections); more are 429 with Retry-After"),
    HEALTH_ADDR("health-addr", "", "plain-HTTP listener serving only /healthz and /readyz, for kubelet probes that API traffic cannot crowd out; empty = probes use the HTTPS port"),
    MANAGEMENT_ALLOWED_ORIGINS("management-allowed-origins", "", "origins (scheme://host[:port]) whose web pages may call the management listener, e.g. a Hawtio console (comma list); empty = none"),
    MANAGEMENT_ALLOWED_HOSTS("management-allowed-hosts", "", "host names the management listener answers to besides IP addresses, localhost, *.svc and *.cluster.local (comma list)"),
    RUNNER_REDFISH_PASSWORD_FILE("runner-redfish-password-file", "", "file holding the Redfish password, e.g. a mounted Secret (one trailing newline ignored); keeps it off the command line"),
    OWNER_HASH_SECRET_NAME("owner-hash-secret-name", "playpen-operator-owner-hash", "Secret in --namespace holding the key of the owner hashes written on claimed pods; created with a random key when absent"),
    AUDIT_LOG_PATH("audit-log-path", "-", "where the audit log's JSON lines go: - for standard output (the operator's own log goes to standard error), or a file to append to (--dev: <dev-dir>/audit.log)"),
    DEV_REPLICAS("dev-replicas", "0", "--dev: start this many operator replicas as separate processes (on free ports, or the first --dev-operator-addrs) instead of the operator inside the dev process"),
    POOL_READY_TIMEOUT("pool-ready-timeout", "10m", "an idle pool pod not Ready this long after its creation (or since it last became unready) is replaced, as is one whose container crash-loops (0 disables both)"),
    POOL_NODE_NOT_READY_GRACE("pool-node-not-ready-grace", "2m", "an idle pool pod whose node has been NotReady this long is replaced (one on a deleted node once the pod is this old)"),
    POOL_MAX_SURGE("pool-max-surge", "25%", "pods a rollout may create beyond a pool's desired count: a number or a percentage rounded up; 0 turns rolling replacement off"),
    POOL_BACKOFF_BASE("pool-backoff-base", "10s", "pause before a pool creates again after a replacement failed (never became Ready); doubled per further failure"),
    POOL_BACKOFF_MAX("pool-backoff-max", "5m", "longest pause of a pool whose replacements keep failing"),
    POOL_MAX_IDLE("pool-max-idle", "0", "demand-aware buffer: keep idle >= recent allocation rate x time-to-ready, between the count flags and this many per pool (0 = off: the count flags are fixed)"),
    DEV_IMAGE_FAULTS("dev-image-faults", "", "--dev: image=mode pairs (comma list; repeating the flag appends); the simulated kubelet makes pods of that image never-ready, crash or evict"),
    TLS_PROVIDER("tls-provider", "auto", "TLS of the HTTPS listener: openssl (BoringSSL, inside the jar), jdk, or auto = openssl where its native library loads, else jdk");

    private final String flagName;
    private final String defaultValue;
    private final String help;

    Flag(String flagName, String defaultValue, String help) {
        this.flagName = flagName;
        this.defaultValue = defaultValue;
        this.help = help;
    }

    public String flagName() {
        return flagName;
    }

    public String defaultValue() {
        return defaultValue;
    }

    public String help() {
        return help;
    }

    /** The reference operator's flags, in the order its main.go declares them. */
    public static final Set<Flag> REFERENCE = Collections.unmodifiableSet(EnumSet.range(LISTEN_ADDR, RUNNER_REDFISH_DEVICE_ID));

    /** List flags: comma-separated values, and a repeated flag appends (pflag's StringSlice). */
    public static final Set<Flag> LISTS = Collections.unmodifiableSet(EnumSet.of(CONTROL_PLANE_VERSIONS, RUNNER_GUEST_DNS,
            MANAGEMENT_ALLOWED_ORIGINS, MANAGEMENT_ALLOWED_HOSTS, DEV_IMAGE_FAULTS));

    /** Boolean flags: a bare {@code --name} means true and never takes the next argument as its value. */
    public boolean isBoolean() {
        return defaultValue.equals("true") || defaultValue.equals("false");
    }

    public static Flag byName(String name) {
        for (Flag f : values()) {
            if (f.flagName.equals(name)) {
                return f;
            }
        }
        return null;
    }
}
