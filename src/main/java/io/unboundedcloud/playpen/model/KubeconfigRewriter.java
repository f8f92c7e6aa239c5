package io.unboundedcloud.playpen.model;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

/**
 * Points every cluster of a control-plane kubeconfig at the pod's public endpoint while keeping TLS
 * verification against the guest gateway name the k3s certificate was issued for. Like the
 * reference's {@code clientcmd.Load} + {@code clientcmd.Write}, the output is the kubeconfig v1 schema only
 * (unknown fields dropped, empty optional fields omitted, named lists sorted by name, certificate data
 * re-encoded) written in sigs.k8s.io/yaml's style (see {@link GoYaml}).
 */
public final class KubeconfigRewriter {
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    private KubeconfigRewriter() {
    }

    public static String rewrite(String kubeconfig, String serverUrl, String tlsServerName) {
        JsonNode root;
        try {
            root = YAML.readTree(kubeconfig);
        } catch (JsonProcessingException e) {
            // The parser's message (and so the cause) quotes the offending line, which may hold a client key or
            // token and ends up in the error log: report the position only.
            JsonLocation at = e.getLocation();
            throw new IllegalArgumentException("kubeconfig is not valid YAML"
                    + (at == null ? "" : " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")"));
        } catch (IOException e) {
            throw new IllegalArgumentException("kubeconfig is not valid YAML");
        }
        if (root == null || root.isNull() || root.isMissingNode()) {
            root = YAML.createObjectNode();
        }
        if (!root.isObject()) {
            throw new IllegalArgumentException("kubeconfig is not a YAML mapping");
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("apiVersion", "v1");
        out.put("kind", "Config");
        out.put("preferences", preferences(root.path("preferences")));
        out.put("clusters", named(root.path("clusters"), "cluster", c -> cluster(c, serverUrl, tlsServerName)));
        out.put("users", named(root.path("users"), "user", KubeconfigRewriter::authInfo));
        out.put("contexts", named(root.path("contexts"), "context", KubeconfigRewriter::context));
        out.put("current-context", text(root.path("current-context")));
        extensions(out, root.path("extensions"));
        return GoYaml.write(out);
    }

    private static Map<String, Object> preferences(JsonNode p) {
        Map<String, Object> out = new LinkedHashMap<>();
        bool(out, "colors", p.path("colors"));
        extensions(out, p.path("extensions"));
        return out;
    }

    private static Map<String, Object> cluster(JsonNode c, String serverUrl, String tlsServerName) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("server", serverUrl);
        optional(out, "tls-server-name", tlsServerName);
        bool(out, "insecure-skip-tls-verify", c.path("insecure-skip-tls-verify"));
        optional(out, "certificate-authority", text(c.path("certificate-authority")));
        bytes(out, "certificate-authority-data", c.path("certificate-authority-data"));
        optional(out, "proxy-url", text(c.path("proxy-url")));
        bool(out, "disable-compression", c.path("disable-compression"));
        extensions(out, c.path("extensions"));
        return out;
    }

    private static Map<String, Object> authInfo(JsonNode u) {
        Map<String, Object> out = new LinkedHashMap<>();
        optional(out, "client-certificate", text(u.path("client-certificate")));
        bytes(out, "client-certificate-data", u.path("client-certificate-data"));
        optional(out, "client-key", text(u.path("client-key")));
        bytes(out, "client-key-data", u.path("client-key-data"));
        optional(out, "token", text(u.path("token")));
        optional(out, "tokenFile", text(u.path("tokenFile")));
        optional(out, "as", text(u.path("as")));
        optional(out, "as-uid", text(u.path("as-uid")));
        List<Object> groups = strings(u.path("as-groups"));
        if (groups != null && !groups.isEmpty()) {
            out.put("as-groups", groups);
        }
        if (u.path("as-user-extra").isObject() && !u.path("as-user-extra").isEmpty()) {
            Map<String, Object> extra = new TreeMap<>();
            u.path("as-user-extra").fields().forEachRemaining(e -> extra.put(e.getKey(), strings(e.getValue())));
            out.put("as-user-extra", extra);
        }
        optional(out, "username", text(u.path("username")));
        optional(out, "password", text(u.path("password")));
        JsonNode provider = u.path("auth-provider");
        if (provider.isObject()) {
            Map<String, Object> p = new LinkedHashMap<>();
            p.put("name", text(provider.path("name")));
            Map<String, Object> config = null;
            if (provider.path("config").isObject()) {
                config = new TreeMap<>();
                for (Iterator<Map.Entry<String, JsonNode>> it = provider.path("config").fields(); it.hasNext();) {
                    Map.Entry<String, JsonNode> e = it.next();
                    config.put(e.getKey(), text(e.getValue()));
                }
            }
            p.put("config", config);
            out.put("auth-provider", p);
        }
        JsonNode exec = u.path("exec");
        if (exec.isObject()) {
            out.put("exec", exec(exec));
        }
        extensions(out, u.path("extensions"));
        return out;
    }

    private static Map<String, Object> exec(JsonNode e) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("command", text(e.path("command")));
        out.put("args", strings(e.path("args")));
        List<Object> env = null;
        if (e.path("env").isArray()) {
            env = new ArrayList<>();
            for (JsonNode v : e.path("env")) {
                Map<String, Object> var = new LinkedHashMap<>();
                var.put("name", text(v.path("name")));
                var.put("value", text(v.path("value")));
                env.add(var);
            }
        }
        out.put("env", env);
        String apiVersion = text(e.path("apiVersion"));
        optional(out, "apiVersion", apiVersion);
        optional(out, "installHint", text(e.path("installHint")));
        out.put("provideClusterInfo", e.path("provideClusterInfo").asBoolean(false));
        String mode = text(e.path("interactiveMode"));
        if (mode.isEmpty() && (apiVersion.equals("client.authentication.k8s.io/v1beta1")
                || apiVersion.equals("client.authentication.k8s.io/v1alpha1"))) {
            // client-go's defaulting for the older exec API versions
            mode = "IfAvailable";
        }
        optional(out, "interactiveMode", mode);
        return out;
    }

    private static Map<String, Object> context(JsonNode c) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("cluster", text(c.path("cluster")));
        out.put("user", text(c.path("user")));
        optional(out, "namespace", text(c.path("namespace")));
        extensions(out, c.path("extensions"));
        return out;
    }

    /** A v1 named list: converted through a map keyed by name, so written sorted; duplicates are an error. */
    private static List<Object> named(JsonNode list, String field, java.util.function.Function<JsonNode, Map<String, Object>> convert) {
        if (!list.isArray() || list.isEmpty()) {
            return null;
        }
        TreeMap<String, Map<String, Object>> byName = new TreeMap<>();
        for (JsonNode entry : list) {
            String name = text(entry.path("name"));
            if (byName.containsKey(name)) {
                throw new IllegalArgumentException("duplicate name \"" + name + "\" in " + field + " list");
            }
            byName.put(name, convert.apply(entry.path(field)));
        }
        List<Object> out = new ArrayList<>();
        byName.forEach((name, value) -> {
            Map<String, Object> item = new LinkedHashMap<>();
            item.put("name", name);
            item.put(field, value);
            out.add(item);
        });
        return out;
    }

    private static void extensions(Map<String, Object> out, JsonNode list) {
        if (!list.isArray() || list.isEmpty()) {
            return;
        }
        TreeMap<String, Object> byName = new TreeMap<>();
        for (JsonNode e : list) {
            byName.put(text(e.path("name")), tree(e.path("extension")));
        }
        List<Object> items = new ArrayList<>();
        byName.forEach((name, ext) -> {
            Map<String, Object> item = new LinkedHashMap<>();
            item.put("name", name);
            item.put("extension", ext);
            items.add(item);
        });
        out.put("extensions", items);
    }

    private static Object tree(JsonNode n) {
        if (n.isObject()) {
            Map<String, Object> m = new LinkedHashMap<>();
            n.fields().forEachRemaining(e -> m.put(e.getKey(), tree(e.getValue())));
            return m;
        }
        if (n.isArray()) {
            List<Object> l = new ArrayList<>();
            n.forEach(v -> l.add(tree(v)));
            return l;
        }
        if (n.isBoolean()) {
            return n.booleanValue();
        }
        return n.isNull() || n.isMissingNode() ? null : n.asText();
    }

    private static String text(JsonNode n) {
        return n.isNull() || n.isMissingNode() || n.isContainerNode() ? "" : n.asText();
    }

    private static List<Object> strings(JsonNode n) {
        if (!n.isArray()) {
            return null;
        }
        List<Object> out = new ArrayList<>();
        n.forEach(v -> out.add(text(v)));
        return out;
    }

    private static void optional(Map<String, Object> out, String key, String value) {
        if (!value.isEmpty()) {
            out.put(key, value);
        }
    }

    private static void bool(Map<String, Object> out, String key, JsonNode n) {
        if (n.asBoolean(false)) {
            out.put(key, true);
        }
    }

    /** A []byte field: base64 in, canonical base64 out (Go's decoder skips CR and LF, as the MIME decoder does). */
    private static void bytes(Map<String, Object> out, String key, JsonNode n) {
        String raw = text(n).replace("\r", "").replace("\n", "");
        if (raw.isEmpty()) {
            return;
        }
        try {
            out.put(key, Base64.getEncoder().encodeToString(Base64.getDecoder().decode(raw)));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(key + " is not valid base64");
        }
    }
}
