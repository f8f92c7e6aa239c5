package io.unboundedcloud.playpen.model;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Pattern;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.unboundedcloud.playpen.api.ApiException;

/** Validates and normalises alloc and dealloc request bodies in the order SPEC A3 prescribes. */
public final class AllocRequestParser {
    public static final String INVALID_JSON = "invalid JSON request";
    public static final String KEY_REQUIRED = "Idempotency-Key header or idempotencyKey body field is required";
    public static final String BAD_RESOURCE_TYPE = "resourceType must be \"runner\" or \"controlPlane\"";
    public static final String BAD_WIREGUARD_KEY = "wireGuardPublicKey must be a valid WireGuard public key";
    public static final String BAD_ARCHITECTURE = "architecture must be \"amd64\" or \"arm64\"";

    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final Pattern WG_KEY = Pattern.compile("[A-Za-z0-9+/]{43}=");
    private static final List<String> FIELDS =
            List.of("idempotencyKey", "resourceType", "kubernetesVersion", "wireGuardPublicKey", "architecture");

    private final List<String> controlPlaneVersions;

    public AllocRequestParser(List<String> controlPlaneVersions) {
        this.controlPlaneVersions = List.copyOf(controlPlaneVersions);
    }

    /** Parses an alloc body; {@code headerKey} is the Idempotency-Key header (null when absent). */
    public AllocCommand parseAlloc(byte[] body, String headerKey) {
        JsonNode json = parseObject(body, false);
        String keyHash = Hashes.keyHash(idempotencyKey(json, headerKey));
        ResourceType type = ResourceType.fromRequest(field(json, "resourceType"))
                .orElseThrow(() -> ApiException.badRequest(BAD_RESOURCE_TYPE));
        String wgKey = "";
        if (type == ResourceType.RUNNER) {
            wgKey = GoStrings.trimSpace(field(json, "wireGuardPublicKey"));
            if (!isWireGuardKey(wgKey)) {
                throw ApiException.badRequest(BAD_WIREGUARD_KEY);
            }
        }
        String arch = normaliseArchitecture(field(json, "architecture"))
                .orElseThrow(() -> ApiException.badRequest(BAD_ARCHITECTURE));
        String version = "";
        if (type == ResourceType.CONTROL_PLANE) {
            version = resolveVersion(field(json, "kubernetesVersion"));
        }
        return new AllocCommand(keyHash, type, version, wgKey, arch);
    }

    /** Parses a dealloc body (may be empty when the header carries the key) and returns the key hash. */
    public String parseDealloc(byte[] body, String headerKey) {
        JsonNode json = parseObject(body, headerKey != null && !GoStrings.trimSpace(headerKey).isEmpty());
        return Hashes.keyHash(idempotencyKey(json, headerKey));
    }

    public static boolean isWireGuardKey(String key) {
        if (key == null || !WG_KEY.matcher(key).matches()) {
            return false;
        }
        try {
            return Base64.getDecoder().decode(key).length == 32;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /** empty/amd64 → amd64, arm64 → arm64 (trimmed, case-insensitive); anything else is invalid. */
    public static Optional<String> normaliseArchitecture(String raw) {
        String a = raw == null ? "" : GoStrings.trimSpace(raw).toLowerCase(Locale.ROOT);
        if (a.isEmpty() || a.equals("amd64")) {
            return Optional.of("amd64");
        }
        if (a.equals("arm64")) {
            return Optional.of("arm64");
        }
        return Optional.empty();
    }

    private String resolveVersion(String raw) {
        String v = GoStrings.trimSpace(raw);
        if (v.isEmpty()) {
            return highest(controlPlaneVersions);
        }
        if (!v.startsWith("v")) {
            v = "v" + v;
        }
        if (!controlPlaneVersions.contains(v)) {
            throw ApiException.badRequest("kubernetes version \"" + v + "\" is not configured for control-plane allocation");
        }
        return v;
    }

    /** The highest version by numeric major.minor.patch, ignoring pre-release and build suffixes. */
    public static String highest(List<String> versions) {
        return versions.stream().max(Comparator.comparing(AllocRequestParser::numeric, AllocRequestParser::compare))
                .orElseThrow();
    }

    private static int[] numeric(String version) {
        String core = version.startsWith("v") ? version.substring(1) : version;
        int cut = core.length();
        for (char c : new char[] {'-', '+'}) {
            int i = core.indexOf(c);
            if (i >= 0) {
                cut = Math.min(cut, i);
            }
        }
        String[] parts = core.substring(0, cut).split("\\.");
        int[] out = new int[3];
        for (int i = 0; i < 3 && i < parts.length; i++) {
            try {
                out[i] = Integer.parseInt(parts[i]);
            } catch (NumberFormatException e) {
                out[i] = 0;
            }
        }
        return out;
    }

    private static int compare(int[] a, int[] b) {
        for (int i = 0; i < 3; i++) {
            if (a[i] != b[i]) {
                return Integer.compare(a[i], b[i]);
            }
        }
        return 0;
    }

    private static String idempotencyKey(JsonNode json, String headerKey) {
        if (headerKey != null && !GoStrings.trimSpace(headerKey).isEmpty()) {
            return GoStrings.trimSpace(headerKey);
        }
        String body = GoStrings.trimSpace(field(json, "idempotencyKey"));
        if (body.isEmpty()) {
            throw ApiException.badRequest(KEY_REQUIRED);
        }
        return body;
    }

    private static String field(JsonNode json, String name) {
        JsonNode n = json.get(name);
        return n == null || n.isNull() ? "" : n.textValue();
    }

    /** One JSON object, nothing after it but whitespace; the known fields must be strings or null. */
    private static JsonNode parseObject(byte[] body, boolean emptyAllowed) {
        if (body == null || body.length == 0 || isBlank(body)) {
            if (emptyAllowed) {
                return MAPPER.createObjectNode();
            }
            throw ApiException.badRequest(INVALID_JSON);
        }
        try (JsonParser p = MAPPER.getFactory().createParser(body)) {
            JsonNode node = MAPPER.readTree(p);
            if (node == null || !node.isObject() || p.nextToken() != null) {
                throw ApiException.badRequest(INVALID_JSON);
            }
            List<String> bad = new ArrayList<>();
            for (String f : FIELDS) {
                JsonNode v = node.get(f);
                if (v != null && !v.isNull() && !v.isTextual()) {
                    bad.add(f);
                }
            }
            if (!bad.isEmpty()) {
                throw ApiException.badRequest(INVALID_JSON);
            }
            return node;
        } catch (IOException e) {
            throw ApiException.badRequest(INVALID_JSON);
        }
    }

    private static boolean isBlank(byte[] body) {
        for (byte b : body) {
            if (b != ' ' && b != '\n' && b != '\r' && b != '\t') {
                return false;
            }
        }
        return true;
    }

}
