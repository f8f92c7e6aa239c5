package io.unboundedcloud.playpen.config;

import java.util.List;

/**
 * The guest network, VXLAN, WireGuard and Redfish values reported in alloc responses, from the
 * {@code --runner-*} flags. The VXLAN addresses are the IPs of the WireGuard addresses, as in the reference.
 */
public record NetworkProfile(
        String guestGateway, String guestIPv4, String subnetMask, String guestMAC, List<String> dns,
        String wireGuardInterface, String wireGuardServerAddress, String wireGuardClientAddress, int wireGuardListenPort,
        String vxlanInterface, int vxlanVni, int vxlanUdpPort, String vxlanServerAddress, String vxlanClientAddress,
        String redfishUrl, String redfishDeviceId, String redfishUsername, String redfishPassword) {

    /** The in-guest API server URL of a control plane: https://gateway:6443. */
    public String guestApiServerUrl() {
        return "https://" + guestGateway + ":6443";
    }

    /** Like the generated one, but never prints the Redfish password (configs end up in logs and test reports). */
    @Override
    public String toString() {
        return "NetworkProfile[guestGateway=" + guestGateway + ", guestIPv4=" + guestIPv4 + ", subnetMask=" + subnetMask
                + ", guestMAC=" + guestMAC + ", dns=" + dns + ", wireGuardInterface=" + wireGuardInterface
                + ", wireGuardServerAddress=" + wireGuardServerAddress + ", wireGuardClientAddress=" + wireGuardClientAddress
                + ", wireGuardListenPort=" + wireGuardListenPort + ", vxlanInterface=" + vxlanInterface
                + ", vxlanVni=" + vxlanVni + ", vxlanUdpPort=" + vxlanUdpPort + ", vxlanServerAddress=" + vxlanServerAddress
                + ", vxlanClientAddress=" + vxlanClientAddress + ", redfishUrl=" + redfishUrl
                + ", redfishDeviceId=" + redfishDeviceId + ", redfishUsername=" + redfishUsername
                + ", redfishPassword=" + (redfishPassword.isEmpty() ? "" : "(redacted)") + "]";
    }
}
