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
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.config.NetworkProfile;

/**
 * Builds the alloc answer from a claimed pod and its node's ExternalIP with the reference's rules;
 * replays rebuild the same body, and a pod that can no longer be described is a 503 in the reference's words,
 * followed by what to do.
 */
public final class AllocResponses {
    private static final String HOST_PORT_POLICY = "HostPort";
    /**
     * What to do, after the Go operator's reason, when a claimed pod's answer cannot be built now (its node has no
     * ExternalIP yet, a hostPort or annotation is missing): the claim stays with the key either way.
     */
    public static final String STANDS_ADVICE = "; the allocation stands: send the same request again with the same"
            + " idempotency key after the Retry-After for its answer, or release it with kubectl create --raw "
            + io.unboundedcloud.playpen.api.ApiPaths.DEALLOCS_PATH + " -f <file> (its idempotencyKey)";

    private final NetworkProfile net;
    private final String redfishBaseUrl;
    private final int retryAfterSeconds;
    private final TtlPolicy leases;

    public AllocResponses(NetworkProfile net, String redfishBaseUrl) {
        this(net, redfishBaseUrl, 1);
    }

    public AllocResponses(NetworkProfile net, String redfishBaseUrl, int retryAfterSeconds) {
        this(net, redfishBaseUrl, retryAfterSeconds, null);
    }

    /**
     * With {@code leases} (null: none) the answer ends with the pod's current expiry (expires-at, else claimed-at +
     * --playpen-ttl), so a replay tells the expiry as renewals have moved it.
     */
    public AllocResponses(NetworkProfile net, String redfishBaseUrl, int retryAfterSeconds, TtlPolicy leases) {
        this.leases = leases;
        this.net = net;
        // used as given, like the reference: a trailing slash shows up doubled in systemURL there too
        this.redfishBaseUrl = redfishBaseUrl;
        this.retryAfterSeconds = retryAfterSeconds;
    }

    public AllocResponse build(Pod pod, String externalIp) {
        AllocResponse answer = describe(pod, externalIp);
        if (leases == null) {
            return answer;
        }
        return answer.withExpiresAt(leases.expiresAt(pod).filter(at -> !at.equals(TtlPolicy.ALREADY_EXPIRED))
                .map(TtlPolicy::formatClaimedAt).orElse(null));
    }

    private AllocResponse describe(Pod pod, String externalIp) {
        ResourceType type = ManagedPods.resourceType(pod).orElse(ResourceType.RUNNER);
        Map<String, String> ann = ManagedPods.annotations(pod);
        String ns = pod.getMetadata().getNamespace();
        String name = pod.getMetadata().getName();
        String node = pod.getSpec() == null || pod.getSpec().getNodeName() == null ? "" : pod.getSpec().getNodeName();
        String ip = externalIp == null ? "" : externalIp;
        int hostPort = Candidates.hostPort(pod, type);
        if (type == ResourceType.RUNNER) {
            String serverKey = GoStrings.trimSpace(ann.getOrDefault(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, ""));
            if (!AllocRequestParser.isWireGuardKey(serverKey)) {
                throw unavailable("runner pod \"" + name + "\" has no valid server WireGuard public key");
            }
            requireNode(pod, ip);
            if (hostPort <= 0) {
                throw unavailable("runner pod " + ns + "/" + name + " has no WireGuard hostPort");
            }
            String deviceId = net.redfishDeviceId();
            return new AllocResponse(type.wire(),
                    new PodInfo(ns, name, node, ip, type.wire(), ManagedPods.architecture(pod), ""),
                    new Endpoint(ip, hostPort, 0, HOST_PORT_POLICY),
                    new WireGuard(net.wireGuardInterface(), serverKey, net.wireGuardServerAddress(),
                            net.wireGuardClientAddress(), net.wireGuardListenPort()),
                    new Vxlan(net.vxlanInterface(), net.vxlanVni(), net.vxlanUdpPort(), net.vxlanServerAddress(),
                            net.vxlanClientAddress()),
                    new Network(net.guestMAC(), net.guestIPv4(), net.subnetMask(), net.guestGateway(), List.copyOf(net.dns())),
                    new Redfish(redfishBaseUrl, net.redfishUsername(), net.redfishPassword(), ann.getOrDefault(PlaypenKeys.REDFISH_CERT_PEM, ""), deviceId,
                            redfishBaseUrl + "/redfish/v1/Systems/" + deviceId,
                            "/redfish/v1/Systems/" + deviceId + "/Oem/Unbounded/SerialConsole/Stream"),
                    ControlPlane.EMPTY);
        }
        requireNode(pod, ip);
        if (hostPort <= 0) {
            throw unavailable("control-plane pod " + ns + "/" + name + " has no API server hostPort");
        }
        String kubeconfig = GoStrings.trimSpace(ann.getOrDefault(PlaypenKeys.CONTROL_PLANE_KUBECONFIG, ""));
        if (kubeconfig.isEmpty()) {
            throw unavailable("control-plane pod " + ns + "/" + name + " has no kubeconfig annotation");
        }
        String version = ManagedPods.kubernetesVersion(pod);
        String serverUrl = "https://" + GoStrings.joinHostPort(ip, hostPort);
        String guest = GoStrings.trimSpace(ann.getOrDefault(PlaypenKeys.CONTROL_PLANE_GUEST_SERVER, ""));
        String rewritten;
        try {
            rewritten = KubeconfigRewriter.rewrite(kubeconfig, serverUrl, net.guestGateway());
        } catch (IllegalArgumentException e) {
            throw unavailable("parse control-plane kubeconfig: " + e.getMessage());
        }
        return new AllocResponse(type.wire(),
                new PodInfo(ns, name, node, ip, type.wire(), ManagedPods.architecture(pod), version),
                new Endpoint(ip, 0, hostPort, HOST_PORT_POLICY),
                WireGuard.EMPTY, Vxlan.EMPTY, Network.EMPTY, null,
                new ControlPlane(version, rewritten, serverUrl, guest.isEmpty() ? net.guestApiServerUrl() : guest));
    }

    private void requireNode(Pod pod, String ip) {
        String why = Candidates.nodeReason(pod, n -> ip.isEmpty() ? java.util.Optional.empty() : java.util.Optional.of(ip));
        if (why != null) {
            throw unavailable(why);
        }
    }

    private ApiException unavailable(String message) {
        return ApiException.unavailable(message + STANDS_ADVICE, retryAfterSeconds);
    }
}
