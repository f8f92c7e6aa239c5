package io.unboundedcloud.playpen.config;

import java.util.List;

/** The guest network, VXLAN, WireGuard and Redfish constants reported in alloc responses (SPEC A5). */
public record NetworkProfile(
        String guestGateway, String guestIPv4, String subnetMask, String guestMAC, List<String> dns,
        String wireGuardInterface, String wireGuardServerAddress, String wireGuardClientAddress, int wireGuardListenPort,
        String vxlanInterface, int vxlanVni, int vxlanUdpPort, String vxlanServerAddress, String vxlanClientAddress,
        String redfishUrl, String redfishDeviceId) {

    /** The in-guest API server URL of a control plane: https://gateway:6443. */
    public String guestApiServerUrl() {
        return "https://" + guestGateway + ":6443";
    }
}
