package io.unboundedcloud.playpen.config;

/**
 * Every command-line flag the operator accepts, with its default and one line of help.
 * The README's configuration table and the deploy manifests are checked against this list.
 */
public enum Flag {
    // --- SPEC A10: compatible with the reference operator ---
    LISTEN_ADDR("listen-addr", ":8443", "HTTPS listen address host:port (empty host = all interfaces)"),
    NAMESPACE("namespace", "playpen", "namespace of the operator, its TLS Secret and Service"),
    SERVICE_NAME("service-name", "playpen-operator", "Service name; CN and SANs of the self-signed serving certificate"),
    TLS_SECRET_NAME("tls-secret-name", "playpen-operator-tls", "kubernetes.io/tls Secret holding the serving certificate (created when absent)"),
    RUNNER_NAMESPACE("runner-namespace", "playpen", "namespace where runner and control-plane pods live"),
    RUNNER_LABEL_SELECTOR("runner-label-selector", "app.kubernetes.io/name=playpen-runner", "equality label selector a runner pod must match to be handed out"),
    RUNNER_IMAGE("runner-image", "ghcr.io/azure/playpen:latest", "runner image (also the control-plane helper image)"),
    RUNNER_IMAGE_PULL_POLICY("runner-image-pull-policy", "Always", "imagePullPolicy of runner containers (Always|IfNotPresent|Never)"),
    RUNNER_SERVICE_ACCOUNT_NAME("runner-service-account-name", "playpen-runner", "serviceAccountName of runner pods"),
    RUNNER_AMD64_COUNT("runner-amd64-count", "1", "idle amd64 runners to keep warm"),
    RUNNER_ARM64_COUNT("runner-arm64-count", "1", "idle arm64 runners to keep warm"),
    RUNNER_WIREGUARD_HOST_PORT_START("runner-wireguard-host-port-start", "51820", "first UDP hostPort for runner WireGuard endpoints"),
    RUNNER_WIREGUARD_HOST_PORT_END("runner-wireguard-host-port-end", "51899", "last UDP hostPort for runner WireGuard endpoints"),
    RUNNER_REQUIRE_KVM("runner-require-kvm", "true", "mount /dev/kvm into runner pods"),
    RUNNER_CONTROL_PLANE_TOLERATIONS("runner-control-plane-tolerations", "false", "let runners schedule on control-plane/master nodes"),
    RUNNER_PUBLIC_REDFISH_URL("runner-public-redfish-url", "", "override the Redfish base URL in alloc responses"),
    CONTROL_PLANE_COUNT("control-plane-count", "0", "idle control-plane pods to keep per configured version"),
    CONTROL_PLANE_VERSIONS("control-plane-versions", "v1.33.0", "comma-separated Kubernetes versions offered as control planes"),
    CONTROL_PLANE_IMAGE("control-plane-image", "rancher/k3s:{version}-k3s1", "k3s image; {version} is replaced by the version"),
    CONTROL_PLANE_SERVICE_ACCOUNT_NAME("control-plane-service-account-name", "playpen-control-plane", "serviceAccountName of control-plane pods"),
    CONTROL_PLANE_APISERVER_HOST_PORT_START("control-plane-apiserver-host-port-start", "16443", "first TCP hostPort for control-plane API servers"),
    CONTROL_PLANE_APISERVER_HOST_PORT_END("control-plane-apiserver-host-port-end", "16499", "last TCP hostPort for control-plane API servers"),
    PLAYPEN_TTL("playpen-ttl", "1h", "lifetime of an allocation (Go duration); 0 disables expiry"),
    RECONCILE_INTERVAL("reconcile-interval", "30s", "interval of the pool and TTL backstop passes (Go duration)"),

    // --- additions of this implementation ---
    KUBECONFIG("kubeconfig", "", "kubeconfig file; empty = KUBECONFIG env, ~/.kube/config or in-cluster"),
    ROUTES_DIR("routes-dir", "routes", "folder of YAML routes; the copy inside the jar is used when it is absent"),
    ROUTES_RELOAD("routes-reload", "false", "reload edited route files without restarting"),
    LEADER_ELECT("leader-elect", "true", "run pool, TTL and certificate work only on the Lease holder"),
    LEADER_ELECTION_NAMESPACE("leader-election-namespace", "", "namespace of the leader Lease (empty = --namespace)"),
    LEADER_ELECTION_LEASE_NAME("leader-election-lease-name", "playpen-operator", "name of the leader Lease"),
    LEADER_ELECTION_LEASE_DURATION("leader-election-lease-duration", "15s", "how long a Lease is valid without renewal"),
    LEADER_ELECTION_RENEW_DEADLINE("leader-election-renew-deadline", "10s", "the leader gives up if it cannot renew within this"),
    LEADER_ELECTION_RETRY_PERIOD("leader-election-retry-period", "2s", "interval between Lease acquire/renew attempts"),
    MANAGEMENT_ADDR("management-addr", "127.0.0.1:9876", "plain-HTTP management listener (Jolokia, /metrics); empty disables"),
    LOG_FORMAT("log-format", "text", "log line format: text or json"),
    SAR_ALLOWED_TTL("sar-allowed-ttl", "10s", "how long an allowed SubjectAccessReview is cached (0 disables)"),
    SAR_DENIED_TTL("sar-denied-ttl", "5s", "how long a denied SubjectAccessReview is cached (0 disables)"),
    RETRY_AFTER_SECONDS("retry-after-seconds", "1", "Retry-After value on 503 answers"),
    IDLE_TIMEOUT("idle-timeout", "60s", "close HTTPS connections idle for this long"),
    HTTP_WORKER_THREADS("http-worker-threads", "64", "threads that run the HTTP flows (each connection is served by one; alloc blocks on API calls)"),
    REFILL_DEBOUNCE("refill-debounce", "100ms", "delay that coalesces cache events before a pool pass"),
    GUEST_GATEWAY("guest-gateway", "192.168.200.1", "guest network gateway; also the control-plane tls-server-name"),
    GUEST_IPV4("guest-ipv4", "192.168.200.10", "guest VM IPv4 address"),
    GUEST_SUBNET_MASK("guest-subnet-mask", "255.255.255.0", "guest subnet mask"),
    GUEST_MAC("guest-mac", "52:54:00:aa:bb:01", "guest VM MAC address"),
    GUEST_DNS("guest-dns", "8.8.8.8", "comma-separated guest DNS servers"),
    WIREGUARD_INTERFACE("wireguard-interface", "wg0", "WireGuard interface name reported to clients"),
    WIREGUARD_SERVER_ADDRESS("wireguard-server-address", "10.88.0.1/24", "runner-side WireGuard address"),
    WIREGUARD_CLIENT_ADDRESS("wireguard-client-address", "10.88.0.2/32", "client-side WireGuard address"),
    WIREGUARD_LISTEN_PORT("wireguard-listen-port", "51820", "WireGuard port inside the runner pod"),
    VXLAN_INTERFACE("vxlan-interface", "vxlan0", "VXLAN interface name"),
    VXLAN_VNI("vxlan-vni", "12001", "VXLAN network identifier"),
    VXLAN_UDP_PORT("vxlan-udp-port", "4789", "VXLAN UDP port"),
    VXLAN_SERVER_ADDRESS("vxlan-server-address", "10.88.0.1", "VXLAN runner-side address"),
    VXLAN_CLIENT_ADDRESS("vxlan-client-address", "10.88.0.2", "VXLAN client-side address"),
    REDFISH_URL("redfish-url", "https://10.88.0.1:8443", "Redfish base URL inside the tunnel"),
    REDFISH_DEVICE_ID("redfish-device-id", "1", "Redfish system id"),
    DEV("dev", "false", "start the embedded simulated cluster and run against it"),
    DEV_DIR("dev-dir", "target/dev", "where --dev writes kubeconfigs, certificates and endpoints.env"),
    DEV_API_PORT("dev-api-port", "0", "--dev: port of the simulated API server (0 = free port)"),
    DEV_SHIM_PORT("dev-shim-port", "0", "--dev: port of the aggregator stand-in kubectl talks to (0 = free port)"),
    DEV_OPERATORS("dev-operators", "1", "--dev: operators run inside the dev process: 1, or 0 for the simulated cluster alone"),
    DEV_OPERATOR_ADDRS("dev-operator-addrs", "",
            "--dev: more operator replicas behind the aggregator stand-in, comma-separated host:port or host:port-port"
                    + " (with --dev-operators=0 the default is 127.0.0.1:9441-9448)");

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

    public static Flag byName(String name) {
        for (Flag f : values()) {
            if (f.flagName.equals(name)) {
                return f;
            }
        }
        return null;
    }
}
