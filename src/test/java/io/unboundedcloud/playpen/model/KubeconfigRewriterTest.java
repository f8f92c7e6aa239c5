package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class KubeconfigRewriterTest {
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    private static final String SERVER = "https://203.0.113.10:16443";

    private static final String THREE_CLUSTERS = """
            apiVersion: v1
            kind: Config
            clusters:
            - name: default
              cluster:
                certificate-authority-data: Q0EtREFUQQ==
                server: https://127.0.0.1:6443
            - name: internal
              cluster:
                server: https://10.43.0.1:443
                tls-server-name: kubernetes.default.svc
                insecure-skip-tls-verify: false
            - name: proxied
              cluster:
                server: https://10.0.0.5:6443
                proxy-url: socks5://localhost:1080
            contexts:
            - name: default
              context: {cluster: default, user: admin, namespace: kube-system}
            current-context: default
            users:
            - name: admin
              user:
                client-certificate-data: Q0xJRU5ULUNFUlQ=
                client-key-data: Q0xJRU5ULUtFWQ==
            - name: "1234"
              user:
                token: "0644"
                username: "true"
                password: "1.5e3"
            """;

    private static JsonNode tree(String yaml) throws Exception {
        return YAML.readTree(yaml);
    }

    @Test
    void everyClusterPointsAtTheServerWithTheGatewayName() throws Exception {
        JsonNode out = tree(KubeconfigRewriter.rewrite(THREE_CLUSTERS, SERVER, "192.168.200.1"));
        assertThat(out.path("clusters")).hasSize(3);
        for (JsonNode c : out.path("clusters")) {
            assertThat(c.path("cluster").path("server").textValue()).as(c.path("name").textValue()).isEqualTo(SERVER);
            assertThat(c.path("cluster").path("tls-server-name").textValue()).as(c.path("name").textValue())
                    .isEqualTo("192.168.200.1");
        }
        assertThat(out.path("clusters").get(0).path("cluster").path("certificate-authority-data").textValue())
                .isEqualTo("Q0EtREFUQQ==");
        assertThat(out.path("clusters").get(1).path("cluster").path("insecure-skip-tls-verify").isBoolean()).isTrue();
        assertThat(out.path("clusters").get(2).path("cluster").path("proxy-url").textValue()).isEqualTo("socks5://localhost:1080");
    }

    @Test
    void everythingElseIsPreserved() throws Exception {
        JsonNode in = tree(THREE_CLUSTERS);
        JsonNode out = tree(KubeconfigRewriter.rewrite(THREE_CLUSTERS, SERVER, "192.168.200.1"));
        // users, contexts and top-level fields are unchanged, including strings that look like numbers
        ((ObjectNode) in).remove("clusters");
        ((ObjectNode) out).remove("clusters");
        assertThat(out).isEqualTo(in);
        assertThat(out.path("users").get(1).path("name").isTextual()).isTrue();
        assertThat(out.path("users").get(1).path("user").path("token").textValue()).isEqualTo("0644");
        assertThat(out.path("users").get(1).path("user").path("username").textValue()).isEqualTo("true");
        assertThat(out.path("users").get(1).path("user").path("password").textValue()).isEqualTo("1.5e3");
        // names of the clusters too
        JsonNode rewritten = tree(KubeconfigRewriter.rewrite(THREE_CLUSTERS, SERVER, "192.168.200.1"));
        assertThat(rewritten.path("clusters").findValuesAsText("name")).containsExactly("default", "internal", "proxied");
    }

    @Test
    void clustersWithoutAClusterBodyAreLeftAlone() throws Exception {
        String yaml = "clusters:\n- name: empty\n- name: ok\n  cluster:\n    server: https://x:1\n";
        JsonNode out = tree(KubeconfigRewriter.rewrite(yaml, SERVER, "gw"));
        assertThat(out.path("clusters").get(0).has("cluster")).isFalse();
        assertThat(out.path("clusters").get(1).path("cluster").path("server").textValue()).isEqualTo(SERVER);
        assertThat(out.path("clusters").get(1).path("cluster").path("tls-server-name").textValue()).isEqualTo("gw");
    }

    @Test
    void noClustersIsNotAnError() throws Exception {
        JsonNode out = tree(KubeconfigRewriter.rewrite("apiVersion: v1\nkind: Config\n", SERVER, "gw"));
        assertThat(out.toString()).isEqualTo("{\"apiVersion\":\"v1\",\"kind\":\"Config\"}");
    }

    @ParameterizedTest
    @ValueSource(strings = {"clusters: [", "a: b\n c: d\n", "key: \"unterminated\n", "\tclusters: - x"})
    void invalidYamlIsIllegalArgument(String yaml) {
        assertThatThrownBy(() -> KubeconfigRewriter.rewrite(yaml, SERVER, "gw"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("kubeconfig is not valid YAML (line ")
                .hasNoCause()
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
    }

    @Test
    void invalidYamlErrorDoesNotQuoteTheKubeconfig() {
        String yaml = "users:\n- name: a\n  user:\n    client-key-data: \"SECRETKEYDATA\n    token: x\n";
        assertThatThrownBy(() -> KubeconfigRewriter.rewrite(yaml, SERVER, "gw"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("kubeconfig is not valid YAML (line 4, column 20)")
                .hasNoCause();
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "- a\n- b\n", "just a string", "42"})
    void yamlThatIsNotAMappingIsIllegalArgument(String yaml) {
        assertThatThrownBy(() -> KubeconfigRewriter.rewrite(yaml, SERVER, "gw"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("kubeconfig is not a YAML mapping");
    }
}
