package io.unboundedcloud.playpen.dev;

import java.nio.charset.StandardCharsets;
import java.util.Base64;

import io.unboundedcloud.playpen.tls.Pki;

/** Renders the small kubeconfig documents dev mode hands out (names and base64 data only, so no YAML quoting is needed). */
public final class Kubeconfigs {
    private Kubeconfigs() {
    }

    /** A kubeconfig with one cluster, one user with a client certificate, and one current context. */
    public static String withClientCertificate(String cluster, String server, String caPem, String user, Pki.Issued credentials,
            String namespace) {
        String context = cluster.equals(user) ? cluster : user + "@" + cluster;
        return "apiVersion: v1\n"
                + "kind: Config\n"
                + "clusters:\n"
                + "- name: " + cluster + "\n"
                + "  cluster:\n"
                + "    server: " + server + "\n"
                + "    certificate-authority-data: " + b64(caPem) + "\n"
                + "users:\n"
                + "- name: " + user + "\n"
                + "  user:\n"
                + "    client-certificate-data: " + b64(credentials.certificatePem()) + "\n"
                + "    client-key-data: " + b64(credentials.privateKeyPem()) + "\n"
                + "contexts:\n"
                + "- name: " + context + "\n"
                + "  context:\n"
                + "    cluster: " + cluster + "\n"
                + "    user: " + user + "\n"
                + (namespace == null ? "" : "    namespace: " + namespace + "\n")
                + "current-context: " + context + "\n"
                + "preferences: {}\n";
    }

    /** A kubeconfig for a plain-HTTP server without authentication (the operator talking to the simulated API). */
    public static String anonymous(String cluster, String server, String namespace) {
        return "apiVersion: v1\n"
                + "kind: Config\n"
                + "clusters:\n"
                + "- name: " + cluster + "\n"
                + "  cluster:\n"
                + "    server: " + server + "\n"
                + "users:\n"
                + "- name: operator\n"
                + "  user: {}\n"
                + "contexts:\n"
                + "- name: " + cluster + "\n"
                + "  context:\n"
                + "    cluster: " + cluster + "\n"
                + "    user: operator\n"
                + "    namespace: " + namespace + "\n"
                + "current-context: " + cluster + "\n"
                + "preferences: {}\n";
    }

    private static String b64(String pem) {
        return Base64.getEncoder().encodeToString(pem.getBytes(StandardCharsets.US_ASCII));
    }
}
