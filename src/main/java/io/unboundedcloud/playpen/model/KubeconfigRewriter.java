package io.unboundedcloud.playpen.model;

import java.io.IOException;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;

/**
 * Points every cluster of a control-plane kubeconfig at the pod's public endpoint while keeping TLS
 * verification against the guest gateway name the k3s certificate was issued for (SPEC A5).
 */
public final class KubeconfigRewriter {
    // Every string value is written double-quoted: with MINIMIZE_QUOTES a string such as "1234" or "1.5e3" came
    // back bare and was read as a number, which kubectl's strict decoding of string fields rejects.
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory()
            .disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER));

    private KubeconfigRewriter() {
    }

    public static String rewrite(String kubeconfig, String serverUrl, String tlsServerName) {
        try {
            JsonNode root = YAML.readTree(kubeconfig);
            if (root == null || !root.isObject()) {
                throw new IllegalArgumentException("kubeconfig is not a YAML mapping");
            }
            JsonNode clusters = root.path("clusters");
            for (JsonNode entry : clusters) {
                JsonNode cluster = entry.get("cluster");
                if (cluster instanceof ObjectNode c) {
                    c.put("server", serverUrl);
                    c.put("tls-server-name", tlsServerName);
                }
            }
            return YAML.writeValueAsString(root);
        } catch (JsonProcessingException e) {
            // The parser's message (and so the cause) quotes the offending line, which may hold a client key or
            // token and ends up in the error log: report the position only.
            JsonLocation at = e.getLocation();
            throw new IllegalArgumentException("kubeconfig is not valid YAML"
                    + (at == null ? "" : " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")"));
        } catch (IOException e) {
            throw new IllegalArgumentException("kubeconfig is not valid YAML");
        }
    }
}
