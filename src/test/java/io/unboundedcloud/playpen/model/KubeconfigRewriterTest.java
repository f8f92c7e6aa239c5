package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
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

    /** What clientcmd.Load + clientcmd.Write make of THREE_CLUSTERS after the rewrite, worked out by hand. */
    private static final String THREE_CLUSTERS_WRITTEN = """
            apiVersion: v1
            clusters:
            - cluster:
                certificate-authority-data: Q0EtREFUQQ==
                server: https://203.0.113.10:16443
                tls-server-name: 192.168.200.1
              name: default
            - cluster:
                server: https://203.0.113.10:16443
                tls-server-name: 192.168.200.1
              name: internal
            - cluster:
                proxy-url: socks5://localhost:1080
                server: https://203.0.113.10:16443
                tls-server-name: 192.168.200.1
              name: proxied
            contexts:
            - context:
                cluster: default
                namespace: kube-system
                user: admin
              name: default
            current-context: default
            kind: Config
            preferences: {}
            users:
            - name: "1234"
              user:
                password: "1.5e3"
                token: "0644"
                username: "true"
            - name: admin
              user:
                client-certificate-data: Q0xJRU5ULUNFUlQ=
                client-key-data: Q0xJRU5ULUtFWQ==
            """;

    @Test
    void writtenLikeClientcmdWrite() {
        // keys sorted, sequences not indented, plain scalars unless they would read back as another type,
        // insecure-skip-tls-verify: false dropped (omitempty), users sorted by name
        assertThat(KubeconfigRewriter.rewrite(THREE_CLUSTERS, SERVER, "192.168.200.1")).isEqualTo(THREE_CLUSTERS_WRITTEN);
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
        // strings that look like numbers or booleans stay strings
        assertThat(out.path("users").get(0).path("name").isTextual()).isTrue();
        assertThat(out.path("users").get(0).path("user").path("token").textValue()).isEqualTo("0644");
        assertThat(out.path("users").get(0).path("user").path("username").textValue()).isEqualTo("true");
    }

    @Test
    void referenceTestKubeconfig() {
        // testKubeconfig() of operator_test.go, as clientcmd writes it back after the rewrite
        String in = """
                apiVersion: v1
                kind: Config
                clusters:
                - name: test
                  cluster:
                    server: https://127.0.0.1:6443
                    insecure-skip-tls-verify: true
                contexts:
                - name: test
                  context:
                    cluster: test
                    user: test
                current-context: test
                users:
                - name: test
                  user:
                    token: test-token
                """;
        assertThat(KubeconfigRewriter.rewrite(in, "https://20.30.40.50:16443", "192.168.200.1")).isEqualTo("""
                apiVersion: v1
                clusters:
                - cluster:
                    insecure-skip-tls-verify: true
                    server: https://20.30.40.50:16443
                    tls-server-name: 192.168.200.1
                  name: test
                contexts:
                - context:
                    cluster: test
                    user: test
                  name: test
                current-context: test
                kind: Config
                preferences: {}
                users:
                - name: test
                  user:
                    token: test-token
                """);
    }

    @Test
    void unknownFieldsAreDroppedAndExecIsWrittenInFull() {
        String in = """
                apiVersion: v1
                kind: Config
                clusters:
                - name: c
                  cluster: {server: "https://x:1", certificate-authority-data: "Q0Et\\nREFUQQ==", vendor-field: 1}
                users:
                - name: u
                  user:
                    exec:
                      apiVersion: client.authentication.k8s.io/v1beta1
                      command: get-token
                      args: ["--for", "a: b", "*star", "yes", ""]
                    as-user-extra: {scopes: [x, y]}
                contexts: []
                """;
        assertThat(KubeconfigRewriter.rewrite(in, SERVER, "gw")).isEqualTo("""
                apiVersion: v1
                clusters:
                - cluster:
                    certificate-authority-data: Q0EtREFUQQ==
                    server: https://203.0.113.10:16443
                    tls-server-name: gw
                  name: c
                contexts: null
                current-context: ""
                kind: Config
                preferences: {}
                users:
                - name: u
                  user:
                    as-user-extra:
                      scopes:
                      - x
                      - "y"
                    exec:
                      apiVersion: client.authentication.k8s.io/v1beta1
                      args:
                      - --for
                      - 'a: b'
                      - '*star'
                      - "yes"
                      - ""
                      command: get-token
                      env: null
                      interactiveMode: IfAvailable
                      provideClusterInfo: false
                """);
    }

    @Test
    void clustersWithoutAClusterBodyGetTheServerToo() throws Exception {
        // clientcmd turns a named entry without a body into an empty cluster, which the rewrite then fills
        String yaml = "clusters:\n- name: empty\n- name: ok\n  cluster:\n    server: https://x:1\n";
        JsonNode out = tree(KubeconfigRewriter.rewrite(yaml, SERVER, "gw"));
        java.util.List<String> names = new java.util.ArrayList<>();
        out.path("clusters").forEach(c -> names.add(c.path("name").asText()));
        assertThat(names).as("every cluster entry kept").containsExactly("empty", "ok");
        for (JsonNode c : out.path("clusters")) {
            assertThat(c.path("cluster").path("server").textValue()).isEqualTo(SERVER);
            assertThat(c.path("cluster").path("tls-server-name").textValue()).isEqualTo("gw");
        }
    }

    @Test
    void duplicateNamesAreAnError() {
        String yaml = "clusters:\n- name: a\n  cluster: {server: x}\n- name: a\n  cluster: {server: y}\n";
        assertThatThrownBy(() -> KubeconfigRewriter.rewrite(yaml, SERVER, "gw"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("duplicate name \"a\"");
    }

    @ParameterizedTest
    @ValueSource(strings = {"apiVersion: v1\nkind: Config\n", ""})
    void noClustersIsNotAnError(String yaml) {
        assertThat(KubeconfigRewriter.rewrite(yaml, SERVER, "gw")).isEqualTo("""
                apiVersion: v1
                clusters: null
                contexts: null
                current-context: ""
                kind: Config
                preferences: {}
                users: null
                """);
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
    @ValueSource(strings = {"- a\n- b\n", "just a string", "42"})
    void yamlThatIsNotAMappingIsIllegalArgument(String yaml) {
        assertThatThrownBy(() -> KubeconfigRewriter.rewrite(yaml, SERVER, "gw"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("kubeconfig is not a YAML mapping");
    }
}
