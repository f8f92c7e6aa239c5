package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/**
 * Every field of the kubeconfig v1 schema that the rewrite carries over, the way clientcmd.Load + clientcmd.Write
 * carry them: file paths, impersonation, auth providers, exec plugins with their defaulting, preferences and
 * extensions at every level (sorted by name, contents kept), empty optional fields left out.
 */
class KubeconfigRewriterFieldsTest {
    private static final String SERVER = "https://203.0.113.10:16443";

    private static final String EVERY_FIELD = """
            apiVersion: v1
            kind: Config
            preferences:
              colors: true
              extensions:
              - name: pref-ext
                extension: {a: b}
            clusters:
            - name: c
              cluster:
                server: https://old:6443
                certificate-authority: /etc/ca.crt
                disable-compression: true
                insecure-skip-tls-verify: true
                extensions:
                - name: z-ext
                  extension:
                    nested: {list: [x, "true", null, false], flag: true}
                - name: a-ext
                  extension: null
            users:
            - name: u
              user:
                client-certificate: /etc/client.crt
                client-key: /etc/client.key
                tokenFile: /var/run/token
                as: admin
                as-uid: "1000"
                as-groups: [system:masters, dev]
                as-user-extra: {b: [y2], a: []}
                auth-provider:
                  name: oidc
                  config: {idp-issuer-url: "https://issuer", client-id: kube}
                exec:
                  apiVersion: client.authentication.k8s.io/v1
                  command: get-token
                  env:
                  - {name: HOME, value: /root}
                  installHint: install get-token
                  provideClusterInfo: true
                extensions:
                - name: user-ext
                  extension: {k: v}
            - name: v
              user:
                as-groups: []
                auth-provider: {name: gcp}
                exec:
                  apiVersion: client.authentication.k8s.io/v1alpha1
                  command: old
                  interactiveMode: Never
            - name: w
              user:
                exec:
                  apiVersion: client.authentication.k8s.io/v1alpha1
                  command: older
            contexts:
            - name: ctx
              context:
                cluster: c
                user: u
                extensions:
                - name: ctx-ext
                  extension: {k: v}
            current-context: ctx
            extensions:
            - name: root-ext
              extension: {k: v}
            """;

    @Test
    void everyFieldIsWrittenBackInClientcmdsForm() {
        assertThat(KubeconfigRewriter.rewrite(EVERY_FIELD, SERVER, "gw")).isEqualTo("""
                apiVersion: v1
                clusters:
                - cluster:
                    certificate-authority: /etc/ca.crt
                    disable-compression: true
                    extensions:
                    - extension: null
                      name: a-ext
                    - extension:
                        nested:
                          flag: true
                          list:
                          - x
                          - "true"
                          - null
                          - false
                      name: z-ext
                    insecure-skip-tls-verify: true
                    server: https://203.0.113.10:16443
                    tls-server-name: gw
                  name: c
                contexts:
                - context:
                    cluster: c
                    extensions:
                    - extension:
                        k: v
                      name: ctx-ext
                    user: u
                  name: ctx
                current-context: ctx
                extensions:
                - extension:
                    k: v
                  name: root-ext
                kind: Config
                preferences:
                  colors: true
                  extensions:
                  - extension:
                      a: b
                    name: pref-ext
                users:
                - name: u
                  user:
                    as: admin
                    as-groups:
                    - system:masters
                    - dev
                    as-uid: "1000"
                    as-user-extra:
                      a: []
                      b:
                      - y2
                    auth-provider:
                      config:
                        client-id: kube
                        idp-issuer-url: https://issuer
                      name: oidc
                    client-certificate: /etc/client.crt
                    client-key: /etc/client.key
                    exec:
                      apiVersion: client.authentication.k8s.io/v1
                      args: null
                      command: get-token
                      env:
                      - name: HOME
                        value: /root
                      installHint: install get-token
                      provideClusterInfo: true
                    extensions:
                    - extension:
                        k: v
                      name: user-ext
                    tokenFile: /var/run/token
                - name: v
                  user:
                    auth-provider:
                      config: null
                      name: gcp
                    exec:
                      apiVersion: client.authentication.k8s.io/v1alpha1
                      args: null
                      command: old
                      env: null
                      interactiveMode: Never
                      provideClusterInfo: false
                - name: w
                  user:
                    exec:
                      apiVersion: client.authentication.k8s.io/v1alpha1
                      args: null
                      command: older
                      env: null
                      interactiveMode: IfAvailable
                      provideClusterInfo: false
                """);
    }

    @Test
    void withoutAGatewayNameTheClusterHasNoTlsServerName() {
        String in = "clusters:\n- name: c\n  cluster: {server: https://x:1, tls-server-name: old}\n";
        assertThat(KubeconfigRewriter.rewrite(in, SERVER, "")).contains("""
                - cluster:
                    server: https://203.0.113.10:16443
                  name: c
                """);
    }

    @Test
    void emptyOrFalseOptionalFieldsAreLeftOut() {
        String in = """
                preferences: {colors: false, extensions: []}
                clusters:
                - name: c
                  cluster: {certificate-authority: "", disable-compression: false, extensions: []}
                users:
                - name: u
                  user: {client-certificate: "", tokenFile: "", as: "", as-uid: "", as-user-extra: {}, extensions: []}
                contexts:
                - name: x
                  context: {cluster: c, user: u, namespace: "", extensions: []}
                extensions: []
                """;
        assertThat(KubeconfigRewriter.rewrite(in, SERVER, "gw")).isEqualTo("""
                apiVersion: v1
                clusters:
                - cluster:
                    server: https://203.0.113.10:16443
                    tls-server-name: gw
                  name: c
                contexts:
                - context:
                    cluster: c
                    user: u
                  name: x
                current-context: ""
                kind: Config
                preferences: {}
                users:
                - name: u
                  user: {}
                """);
    }

    @Test
    void certificateDataIsReEncodedWithoutLineBreaks() {
        String in = "users:\n- name: u\n  user:\n    client-key-data: \"Q0xJ\\r\\nRU5U\"\n    client-certificate-data: Q0V!\n";
        // Go's decoder skips CR and LF and nothing else
        assertThatThrownBy(() -> KubeconfigRewriter.rewrite(in, SERVER, "gw"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("client-certificate-data is not valid base64");
        String ok = "users:\n- name: u\n  user:\n    client-key-data: \"Q0xJ\\r\\nRU5U\"\n";
        assertThat(KubeconfigRewriter.rewrite(ok, SERVER, "gw")).contains("    client-key-data: Q0xJRU5U\n");
    }
}
