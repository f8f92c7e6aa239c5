package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.config.OperatorConfig;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The alloc answer byte for byte against golden files in src/test/resources/golden/ written by
 * generate.py from the reference's rules: struct field order, sorted redfish keys, zero values present, optional
 * fields only when set, nulls for control planes, clientcmd-style kubeconfig, Go escaping and the trailing newline.
 */
class AllocResponsesGoldenTest {
    static final String WG = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    static final String PEM = "-----BEGIN CERTIFICATE-----\nTUlJQmZha2U=\n-----END CERTIFICATE-----\n";
    static final String IP = "203.0.113.10";
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    static String resource(String path) {
        try (InputStream in = AllocResponsesGoldenTest.class.getResourceAsStream(path)) {
            assertThat(in).as(path).isNotNull();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static AllocResponses responses(String... flags) {
        OperatorConfig config = OperatorConfig.parse(flags);
        return new AllocResponses(config.network(), config.redfishBaseUrl());
    }

    static Pod runner(String arch, int port, String node, boolean withCert) {
        PodBuilder b = new PodBuilder(TestPods.runner(arch, port))
                .editMetadata().addToAnnotations(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, WG).endMetadata()
                .editSpec().withNodeName(node).endSpec();
        if (withCert) {
            b.editMetadata().addToAnnotations(PlaypenKeys.REDFISH_CERT_PEM, PEM).endMetadata();
        }
        return b.build();
    }

    static Pod controlPlanePod() {
        return new PodBuilder(TestPods.controlPlane("v1.33.0", 16443))
                .editMetadata()
                    .addToAnnotations(PlaypenKeys.CONTROL_PLANE_KUBECONFIG, resource("/kubeconfig/k3s-two-clusters.yaml"))
                .endMetadata()
                .editSpec().withNodeName("node-a").endSpec()
                .build();
    }

    @Test
    void runner() {
        String json = Json.encode(responses().build(runner("amd64", 51820, "node-a", true), IP));
        assertThat(json).isEqualTo(resource("/golden/alloc-runner.json"));
    }

    @Test
    void claimedRunnerAnswersTheSame() {
        // a replay rebuilds the answer from the claimed pod: claim annotations and the allocated label change nothing
        Pod claimed = new PodBuilder(TestPods.claimed(runner("amd64", 51820, "node-a", true)))
                .editMetadata().addToLabels(PlaypenKeys.ALLOCATED, "39bfc0942e903926")
                .addToAnnotations(PlaypenKeys.CLIENT_WIREGUARD_PUBLIC_KEY, WG).endMetadata().build();
        assertThat(Json.encode(responses().build(claimed, IP))).isEqualTo(resource("/golden/alloc-runner.json"));
    }

    /** With an expiry: the reference's bytes, then one trailing field; absent when the allocation never expires. */
    @Test
    void expiresAtIsAppendedAfterTheReferenceFields() {
        Pod claimed = new PodBuilder(TestPods.claimed(runner("amd64", 51820, "node-a", true), "2026-01-02T03:04:05Z"))
                .editMetadata().addToAnnotations(PlaypenKeys.EXPIRES_AT, "2026-01-02T05:04:05Z").endMetadata().build();
        OperatorConfig config = OperatorConfig.parse();
        String golden = resource("/golden/alloc-runner.json");
        String withExpiry = golden.substring(0, golden.length() - 2) + ",\"expiresAt\":\"2026-01-02T05:04:05Z\"}\n";
        AllocResponses leased = new AllocResponses(config.network(), config.redfishBaseUrl(), 1,
                new TtlPolicy(java.time.Duration.ofHours(1)));
        assertThat(golden).endsWith("}}\n");
        assertThat(Json.encode(leased.build(claimed, IP))).isEqualTo(withExpiry);
        // a pod claimed without expires-at (by the reference) answers claimed-at + --playpen-ttl
        Pod reference = TestPods.claimed(runner("amd64", 51820, "node-a", true), "2026-01-02T03:04:05Z");
        assertThat(Json.encode(leased.build(reference, IP)))
                .isEqualTo(withExpiry.replace("05:04:05Z", "04:04:05Z"));
        // expiry disabled and no expires-at: the reference's bytes exactly
        AllocResponses unleased = new AllocResponses(config.network(), config.redfishBaseUrl(), 1,
                new TtlPolicy(java.time.Duration.ZERO));
        assertThat(Json.encode(unleased.build(reference, IP))).isEqualTo(golden);
        String cp = resource("/golden/alloc-control-plane.json");
        Pod cpClaimed = new PodBuilder(TestPods.claimed(controlPlanePod(), "2026-01-02T03:04:05Z")).build();
        assertThat(Json.encode(leased.build(cpClaimed, IP)))
                .isEqualTo(cp.substring(0, cp.length() - 2) + ",\"expiresAt\":\"2026-01-02T04:04:05Z\"}\n");
    }

    @Test
    void runnerWithPublicRedfishUrl() {
        String golden = resource("/golden/alloc-runner-public-redfish.json");
        Pod pod = runner("arm64", 51821, "node-b", false);
        assertThat(Json.encode(responses("--runner-public-redfish-url=https://redfish.example.com:9443").build(pod, "198.51.100.7")))
                .isEqualTo(golden);
        // the URL is used as given, like the reference: a trailing slash doubles up in systemURL there too
        assertThat(Json.encode(responses("--runner-public-redfish-url=https://redfish.example.com:9443/").build(pod, "198.51.100.7")))
                .isEqualTo(golden.replace("https://redfish.example.com:9443", "https://redfish.example.com:9443/"));
    }

    @Test
    void controlPlane() throws IOException {
        String json = Json.encode(responses().build(controlPlanePod(), IP));
        assertThat(json).isEqualTo(resource("/golden/alloc-control-plane.json"));

        // and semantically: every cluster points at the public endpoint, verified against the guest gateway name
        JsonNode kubeconfig = YAML.readTree(Json.MAPPER.readTree(json).path("controlPlane").path("kubeconfig").textValue());
        assertThat(kubeconfig.path("clusters")).hasSize(2);
        for (JsonNode c : kubeconfig.path("clusters")) {
            assertThat(c.path("cluster").path("server").textValue()).isEqualTo("https://203.0.113.10:16443");
            assertThat(c.path("cluster").path("tls-server-name").textValue()).isEqualTo("192.168.200.1");
        }
        assertThat(kubeconfig.path("users").get(0).path("user").path("client-key-data").textValue()).isEqualTo("Q0xJRU5ULUtFWQ==");
    }

    @Test
    void controlPlaneGuestServerComesFromTheAnnotation() throws IOException {
        Pod pod = new PodBuilder(controlPlanePod()).editMetadata()
                .addToAnnotations(PlaypenKeys.CONTROL_PLANE_GUEST_SERVER, "https://192.168.200.1:7443").endMetadata().build();
        JsonNode cp = Json.MAPPER.readTree(Json.encode(responses().build(pod, IP))).path("controlPlane");
        assertThat(cp.path("guestAPIServerURL").textValue()).isEqualTo("https://192.168.200.1:7443");
        assertThat(cp.path("apiServerURL").textValue()).isEqualTo("https://203.0.113.10:16443");
    }

    @Test
    void controlPlaneGuestServerDefaultsToTheGateway() throws IOException {
        Pod pod = new PodBuilder(controlPlanePod()).editMetadata()
                .removeFromAnnotations(PlaypenKeys.CONTROL_PLANE_GUEST_SERVER).endMetadata().build();
        assertThat(pod.getMetadata().getAnnotations()).doesNotContainKey(PlaypenKeys.CONTROL_PLANE_GUEST_SERVER);

        JsonNode cp = Json.MAPPER.readTree(Json.encode(responses().build(pod, IP))).path("controlPlane");
        assertThat(cp.path("guestAPIServerURL").textValue()).isEqualTo("https://192.168.200.1:6443");

        JsonNode other = Json.MAPPER.readTree(Json.encode(responses("--runner-guest-gateway=10.1.0.1").build(pod, IP))).path("controlPlane");
        assertThat(other.path("guestAPIServerURL").textValue()).isEqualTo("https://10.1.0.1:6443");
        JsonNode kubeconfig = YAML.readTree(other.path("kubeconfig").textValue());
        for (JsonNode c : kubeconfig.path("clusters")) {
            assertThat(c.path("cluster").path("tls-server-name").textValue()).isEqualTo("10.1.0.1");
        }
    }

    @Test
    void controlPlaneWithoutVersionLabelOmitsPodKubernetesVersion() throws IOException {
        Pod pod = new PodBuilder(controlPlanePod()).editMetadata()
                .removeFromLabels(PlaypenKeys.KUBERNETES_VERSION).endMetadata().build();
        JsonNode body = Json.MAPPER.readTree(Json.encode(responses().build(pod, IP)));
        assertThat(body.path("pod").has("kubernetesVersion")).isFalse();
        assertThat(body.path("controlPlane").path("kubernetesVersion").textValue()).isEmpty();
        assertThat(body.path("endpoint").toString())
                .isEqualTo("{\"host\":\"203.0.113.10\",\"wireGuardUDPPort\":0,\"apiServerTCPPort\":16443,\"externalTrafficPolicy\":\"HostPort\"}");
    }

    /** An IPv6 ExternalIP goes in brackets in the URLs (else the port reads as part of the address); the host stays bare. */
    @Test
    void controlPlaneOnAnIpv6NodeBracketsTheAddressInItsUrls() throws IOException {
        JsonNode body = Json.MAPPER.readTree(Json.encode(responses().build(controlPlanePod(), "2001:db8::10")));
        assertThat(body.path("endpoint").path("host").textValue()).isEqualTo("2001:db8::10");
        assertThat(body.path("controlPlane").path("apiServerURL").textValue()).isEqualTo("https://[2001:db8::10]:16443");
        assertThat(java.net.URI.create(body.path("controlPlane").path("apiServerURL").textValue()).getPort()).isEqualTo(16443);
        JsonNode kubeconfig = YAML.readTree(body.path("controlPlane").path("kubeconfig").textValue());
        assertThat(kubeconfig.path("clusters")).hasSize(2);
        for (JsonNode c : kubeconfig.path("clusters")) {
            assertThat(c.path("cluster").path("server").textValue()).isEqualTo("https://[2001:db8::10]:16443");
        }
    }
}
