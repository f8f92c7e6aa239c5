package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.config.OperatorConfig;
import org.junit.jupiter.api.Test;

/** The reference's --runner-* flags reach the runner alloc answer with the reference's meaning. */
class AllocAnswerFlagsTest {
    private static final String WG = "hSUFyS+ah2LxlNs5z+zKjNdDnzyUvE7T4WX6IRuU4zw=";

    static JsonNode answer(String... flags) throws Exception {
        OperatorConfig config = OperatorConfig.parse(flags);
        Pod pod = new PodBuilder(TestPods.runner("amd64", 51820))
                .editMetadata().addToAnnotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, WG).endMetadata()
                .editSpec().withNodeName("node-a").endSpec().build();
        return Json.MAPPER.readTree(Json.write(new AllocResponses(config.network(), config.redfishBaseUrl()).build(pod, "203.0.113.10")));
    }

    @Test
    void redfishCredentialsAndRunnerNetworkFlagsAreAnswered() throws Exception {
        JsonNode a = answer("--runner-redfish-username=admin", "--runner-redfish-password=s3cret", "--runner-redfish-device-id=7",
                "--runner-wireguard-interface=wg9", "--runner-wireguard-server-address=10.77.0.1/16",
                "--runner-wireguard-client-address=10.77.0.9/32", "--runner-wireguard-listen-port=51000",
                "--runner-vxlan-interface=vx1", "--runner-vxlan-vni=42", "--runner-vxlan-port=8472",
                "--runner-listen-addr=10.77.0.1:9443", "--runner-guest-mac=52:54:00:00:00:02", "--runner-guest-ipv4=10.1.0.10",
                "--runner-guest-subnet-mask=255.255.0.0", "--runner-guest-gateway=10.1.0.1",
                "--runner-guest-dns=1.1.1.1", "--runner-guest-dns=9.9.9.9");
        JsonNode redfish = a.path("redfish");
        assertThat(redfish.path("username").textValue()).isEqualTo("admin");
        assertThat(redfish.path("password").textValue()).isEqualTo("s3cret");
        assertThat(redfish.path("deviceID").textValue()).isEqualTo("7");
        assertThat(redfish.path("url").textValue()).isEqualTo("https://10.77.0.1:9443");
        assertThat(redfish.path("systemURL").textValue()).isEqualTo("https://10.77.0.1:9443/redfish/v1/Systems/7");
        assertThat(redfish.path("serialConsoleStreamURI").textValue())
                .isEqualTo("/redfish/v1/Systems/7/Oem/Unbounded/SerialConsole/Stream");
        JsonNode wg = a.path("wireGuard");
        assertThat(wg.path("interface").textValue()).isEqualTo("wg9");
        assertThat(wg.path("serverAddress").textValue()).isEqualTo("10.77.0.1/16");
        assertThat(wg.path("clientAddress").textValue()).isEqualTo("10.77.0.9/32");
        assertThat(wg.path("listenPort").intValue()).isEqualTo(51000);
        JsonNode vxlan = a.path("vxlan");
        assertThat(vxlan.path("interface").textValue()).isEqualTo("vx1");
        assertThat(vxlan.path("vni").intValue()).isEqualTo(42);
        assertThat(vxlan.path("udpPort").intValue()).isEqualTo(8472);
        assertThat(vxlan.path("serverAddress").textValue()).isEqualTo("10.77.0.1");
        assertThat(vxlan.path("clientAddress").textValue()).isEqualTo("10.77.0.9");
        JsonNode net = a.path("network");
        assertThat(net.path("guestMAC").textValue()).isEqualTo("52:54:00:00:00:02");
        assertThat(net.path("guestIPv4").textValue()).isEqualTo("10.1.0.10");
        assertThat(net.path("subnetMask").textValue()).isEqualTo("255.255.0.0");
        assertThat(net.path("gatewayIPv4").textValue()).isEqualTo("10.1.0.1");
        assertThat(net.path("dns").toString()).isEqualTo("[\"1.1.1.1\",\"9.9.9.9\"]");
    }

    @Test
    void byDefaultTheCredentialsAreEmptyStrings() throws Exception {
        JsonNode redfish = answer().path("redfish");
        assertThat(redfish.path("username").textValue()).isEmpty();
        assertThat(redfish.path("password").textValue()).isEmpty();
        assertThat(redfish.path("url").textValue()).isEqualTo("https://10.88.0.1:8443");
    }
}
