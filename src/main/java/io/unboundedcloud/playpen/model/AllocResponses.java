package io.unboundedcloud.playpen.model;

import java.util.List;
import java.util.Map;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.api.AllocResponse;
import io.unboundedcloud.playpen.api.AllocResponse.ControlPlane;
import io.unboundedcloud.playpen.api.AllocResponse.Endpoint;
import io.unboundedcloud.playpen.api.AllocResponse.Network;
import io.unboundedcloud.playpen.api.AllocResponse.PodInfo;
import io.unboundedcloud.playpen.api.AllocResponse.Redfish;
import io.unboundedcloud.playpen.api.AllocResponse.Vxlan;
import io.unboundedcloud.playpen.api.AllocResponse.WireGuard;
import io.unboundedcloud.playpen.config.NetworkProfile;

/** Builds the alloc answer from a claimed pod and its node's ExternalIP (SPEC A5); replays rebuild the same body. */
public final class AllocResponses {
    private static final String HOST_PORT_POLICY = "HostPort";

    private final NetworkProfile net;
    private final String redfishBaseUrl;

    public AllocResponses(NetworkProfile net, String redfishBaseUrl) {
        this.net = net;
        this.redfishBaseUrl = redfishBaseUrl.endsWith("/")
                ? redfishBaseUrl.substring(0, redfishBaseUrl.length() - 1) : redfishBaseUrl;
    }

    public AllocResponse build(Pod pod, String externalIp) {
        ResourceType type = ManagedPods.resourceType(pod).orElse(ResourceType.RUNNER);
        Map<String, String> ann = ManagedPods.annotations(pod);
        String ns = pod.getMetadata().getNamespace();
        String name = pod.getMetadata().getName();
        String node = pod.getSpec() == null || pod.getSpec().getNodeName() == null ? "" : pod.getSpec().getNodeName();
        String ip = externalIp == null ? "" : externalIp;
        int hostPort = Candidates.hostPort(pod, type);
        String version = ManagedPods.labels(pod).getOrDefault(PlaypenKeys.KUBERNETES_VERSION, "");
        PodInfo podInfo = new PodInfo(ns, name, node, ip, type.wire(), version, ManagedPods.architecture(pod));
        if (type == ResourceType.RUNNER) {
            String deviceId = net.redfishDeviceId();
            return new AllocResponse(type.wire(), podInfo,
                    new Endpoint(ip, hostPort, 0, HOST_PORT_POLICY),
                    new WireGuard(net.wireGuardInterface(), ann.getOrDefault(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, ""),
                            net.wireGuardServerAddress(), net.wireGuardClientAddress(), net.wireGuardListenPort()),
                    new Vxlan(net.vxlanInterface(), net.vxlanVni(), net.vxlanUdpPort(), net.vxlanServerAddress(),
                            net.vxlanClientAddress()),
                    new Network(net.guestMAC(), net.guestIPv4(), net.subnetMask(), net.guestGateway(), List.copyOf(net.dns())),
                    new Redfish(redfishBaseUrl, net.redfishUsername(), net.redfishPassword(), ann.getOrDefault(PlaypenKeys.REDFISH_CERT_PEM, ""), deviceId,
                            redfishBaseUrl + "/redfish/v1/Systems/" + deviceId,
                            "/redfish/v1/Systems/" + deviceId + "/Oem/Unbounded/SerialConsole/Stream"),
                    ControlPlane.EMPTY);
        }
        String serverUrl = "https://" + ip + ":" + hostPort;
        String kubeconfig = ann.getOrDefault(PlaypenKeys.CONTROL_PLANE_KUBECONFIG, "");
        String rewritten = kubeconfig.isBlank() ? "" : KubeconfigRewriter.rewrite(kubeconfig, serverUrl, net.guestGateway());
        String guest = ann.get(PlaypenKeys.CONTROL_PLANE_GUEST_SERVER);
        return new AllocResponse(type.wire(), podInfo,
                new Endpoint(ip, 0, hostPort, HOST_PORT_POLICY),
                WireGuard.EMPTY, Vxlan.EMPTY, Network.EMPTY, null,
                new ControlPlane(version, rewritten, serverUrl,
                        guest == null || guest.isBlank() ? net.guestApiServerUrl() : guest));
    }
}
