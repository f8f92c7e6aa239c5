package io.unboundedcloud.playpen.auth;

import java.security.cert.X509Certificate;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.unboundedcloud.playpen.tls.Pki;

/** Turns the extension-apiserver-authentication ConfigMap data into a {@link TrustBundle}. */
public final class TrustBundleParser {
    public static final String CA_KEY = "requestheader-client-ca-file";
    public static final String NAMES_KEY = "requestheader-allowed-names";
    /**
     * The headers kube-apiserver puts the caller's uid in (1.32+, {@code --requestheader-uid-headers}). Without
     * {@code X-Remote-Uid} here the aggregator may pass that header on from the caller unchanged (up to 1.31 it
     * neither sets nor removes it), so it is read only when listed, as kube-apiserver's own authenticator does.
     */
    public static final String UID_HEADERS_KEY = "requestheader-uid-headers";
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final Pattern CERTIFICATE_BLOCK =
            Pattern.compile("-----BEGIN CERTIFICATE-----[^-]*-----END CERTIFICATE-----");

    private TrustBundleParser() {
    }

    public static TrustBundle parse(Map<String, String> data, long generation) {
        if (data == null) {
            return TrustBundle.invalid("ConfigMap kube-system/extension-apiserver-authentication not found", generation);
        }
        String pem = data.get(CA_KEY);
        if (pem == null || pem.isBlank()) {
            return TrustBundle.invalid(CA_KEY + " is missing or empty", generation);
        }
        // Only CERTIFICATE blocks count, like kube-apiserver's own parsing (client-go cert.ParseCertsPEM): other
        // PEM blocks in the file are skipped instead of making the whole bundle unusable.
        StringBuilder certificates = new StringBuilder();
        Matcher block = CERTIFICATE_BLOCK.matcher(pem);
        while (block.find()) {
            certificates.append(block.group()).append('\n');
        }
        List<X509Certificate> cas;
        try {
            cas = certificates.isEmpty() ? List.of() : Pki.parseCertificates(certificates.toString());
        } catch (IllegalArgumentException e) {
            return TrustBundle.invalid(CA_KEY + " is not a PEM certificate bundle", generation);
        }
        if (cas.isEmpty()) {
            return TrustBundle.invalid(CA_KEY + " holds no certificate", generation);
        }
        Set<String> names = new LinkedHashSet<>();
        String rawNames = data.get(NAMES_KEY);
        if (rawNames != null && !rawNames.isBlank()) {
            try {
                JsonNode arr = MAPPER.readTree(rawNames);
                if (!arr.isArray()) {
                    return TrustBundle.invalid(NAMES_KEY + " is not a JSON array", generation);
                }
                for (JsonNode n : arr) {
                    // fail closed: a name we cannot read must not turn into "any CN is allowed"
                    if (!n.isTextual() || n.textValue().isEmpty()) {
                        return TrustBundle.invalid(NAMES_KEY + " holds an empty or non-string name", generation);
                    }
                    names.add(n.textValue());
                }
            } catch (java.io.IOException e) {
                return TrustBundle.invalid(NAMES_KEY + " is not a JSON array", generation);
            }
        }
        return new TrustBundle(List.copyOf(cas), Set.copyOf(names), null, generation, sendsUid(data.get(UID_HEADERS_KEY)));
    }

    /** Whether the uid headers (a JSON array of names) list X-Remote-Uid; anything unreadable means no uid. */
    static boolean sendsUid(String rawHeaders) {
        if (rawHeaders == null || rawHeaders.isBlank()) {
            return false;
        }
        try {
            JsonNode arr = MAPPER.readTree(rawHeaders);
            if (arr == null || !arr.isArray()) {
                return false;
            }
            for (JsonNode n : arr) {
                if (n.isTextual() && n.textValue().equalsIgnoreCase(IdentityHeaders.UID)) {
                    return true;
                }
            }
        } catch (java.io.IOException e) {
            return false;
        }
        return false;
    }
}
