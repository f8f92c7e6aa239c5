package io.unboundedcloud.playpen.api;

import java.util.List;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;

/**
 * The 200 answer of an alloc, field for field and in the order of the reference's structs; written with
 * {@link Json#encode} it is byte-identical to the reference's answer up to its last field. Ours adds one trailing
 * field, {@code expiresAt} (RFC 3339 UTC), left out when the allocation never expires.
 */
@JsonPropertyOrder({"resourceType", "pod", "endpoint", "wireGuard", "vxlan", "network", "redfish", "controlPlane",
    "expiresAt"})
public record AllocResponse(String resourceType, PodInfo pod, Endpoint endpoint, WireGuard wireGuard, Vxlan vxlan,
        Network network, Redfish redfish, ControlPlane controlPlane,
        @JsonInclude(JsonInclude.Include.NON_NULL) String expiresAt) {

    /** The reference's answer, without an expiry. */
    public AllocResponse(String resourceType, PodInfo pod, Endpoint endpoint, WireGuard wireGuard, Vxlan vxlan,
            Network network, Redfish redfish, ControlPlane controlPlane) {
        this(resourceType, pod, endpoint, wireGuard, vxlan, network, redfish, controlPlane, null);
    }

    /** This answer with {@code expiresAt} (null: none) as its trailing field. */
    public AllocResponse withExpiresAt(String expiresAt) {
        return new AllocResponse(resourceType, pod, endpoint, wireGuard, vxlan, network, redfish, controlPlane,
                expiresAt);
    }

    // the reference's PodResponse declares architecture before the omitempty kubernetesVersion
    @JsonPropertyOrder({"namespace", "name", "nodeName", "nodePublicIP", "resourceType", "architecture", "kubernetesVersion"})
    public record PodInfo(String namespace, String name, String nodeName,
            @JsonProperty("nodePublicIP") String nodePublicIP, String resourceType, String architecture,
            @JsonInclude(JsonInclude.Include.NON_EMPTY) String kubernetesVersion) {
    }

    @JsonPropertyOrder({"host", "wireGuardUDPPort", "apiServerTCPPort", "externalTrafficPolicy"})
    public record Endpoint(String host, @JsonProperty("wireGuardUDPPort") int wireGuardUDPPort,
            @JsonProperty("apiServerTCPPort") @JsonInclude(JsonInclude.Include.NON_DEFAULT) int apiServerTCPPort,
            String externalTrafficPolicy) {
    }

    @JsonPropertyOrder({"interface", "serverPublicKey", "serverAddress", "clientAddress", "listenPort"})
    public record WireGuard(@JsonProperty("interface") String iface, String serverPublicKey, String serverAddress,
            String clientAddress, int listenPort) {
        public static final WireGuard EMPTY = new WireGuard("", "", "", "", 0);
    }

    @JsonPropertyOrder({"interface", "vni", "udpPort", "serverAddress", "clientAddress"})
    public record Vxlan(@JsonProperty("interface") String iface, int vni, int udpPort, String serverAddress,
            String clientAddress) {
        public static final Vxlan EMPTY = new Vxlan("", 0, 0, "", "");
    }

    @JsonPropertyOrder({"guestMAC", "guestIPv4", "subnetMask", "gatewayIPv4", "dns"})
    public record Network(@JsonProperty("guestMAC") String guestMAC, @JsonProperty("guestIPv4") String guestIPv4,
            String subnetMask, @JsonProperty("gatewayIPv4") String gatewayIPv4, List<String> dns) {
        public static final Network EMPTY = new Network("", "", "", "", null);
    }

    // the reference's redfish is a map[string]string, which encoding/json writes with its keys sorted
    @JsonPropertyOrder({"certPEM", "deviceID", "password", "serialConsoleStreamURI", "systemURL", "url", "username"})
    public record Redfish(String url, String username, String password, @JsonProperty("certPEM") String certPEM,
            @JsonProperty("deviceID") String deviceID, @JsonProperty("systemURL") String systemURL,
            @JsonProperty("serialConsoleStreamURI") String serialConsoleStreamURI) {
    }

    @JsonPropertyOrder({"kubernetesVersion", "kubeconfig", "apiServerURL", "guestAPIServerURL"})
    public record ControlPlane(String kubernetesVersion, String kubeconfig, @JsonProperty("apiServerURL") String apiServerURL,
            @JsonProperty("guestAPIServerURL") String guestAPIServerURL) {
        public static final ControlPlane EMPTY = new ControlPlane("", "", "", "");
    }
}
