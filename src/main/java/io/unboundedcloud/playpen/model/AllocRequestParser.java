package io.unboundedcloud.playpen.model;

import java.time.Duration;
import java.util.HashMap;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import com.fasterxml.jackson.core.JsonToken;

import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.api.Status;
import io.unboundedcloud.playpen.config.GoDuration;
import io.unboundedcloud.playpen.config.LeaseLimits;

/**
 * Decodes, validates and normalises alloc and dealloc request bodies in the reference's order: the
 * body is read like Go's json.Decoder (see {@link GoJson}), and the request hash covers what the reference hashes.
 */
public final class AllocRequestParser {
    /** The reference's words for a body that does not decode; the message goes on with what is wrong and what to send. */
    public static final String INVALID_JSON = "invalid JSON request";
    public static final String ALLOC_SHAPE = "one JSON object of string fields, such as {\"idempotencyKey\":\"job-42\","
            + "\"resourceType\":\"runner\",\"architecture\":\"amd64\",\"wireGuardPublicKey\":\"<your WireGuard public key>\"}";
    public static final String DEALLOC_SHAPE = "one JSON object such as {\"idempotencyKey\":\"job-42\"}, or no body and an"
            + " Idempotency-Key header";
    public static final String RENEWAL_SHAPE = "one JSON object such as {\"idempotencyKey\":\"job-42\",\"ttl\":\"1h\"}";
    public static final String KEY_REQUIRED = "Idempotency-Key header or idempotencyKey body field is required";
    /** An alloc without a key: the reference's words, then what a key is. */
    public static final String ALLOC_KEY_REQUIRED = KEY_REQUIRED + ": any string that names this request, such as a"
            + " UUID (uuidgen); the same key again returns the same allocation";
    /** A dealloc or renewal without a key: the reference's words, then which key. */
    public static final String RELEASE_KEY_REQUIRED = KEY_REQUIRED + ": the key the allocation was made with";
    /** A runner alloc without a WireGuard key (the reference says it "must be a valid" one). */
    public static final String WIREGUARD_KEY_REQUIRED = "wireGuardPublicKey is required for runners: the base64 public"
            + " key of your WireGuard peer, as \"wg genkey | wg pubkey\" prints it";
    /** At most this many unknown or case-folded field names are reported per request. */
    static final int MAX_FIELD_WARNINGS = 5;
    public static final String BAD_RESOURCE_TYPE = "resourceType must be \"runner\" or \"controlPlane\"";
    public static final String BAD_WIREGUARD_KEY = "wireGuardPublicKey must be a valid WireGuard public key";
    public static final String BAD_ARCHITECTURE = "architecture must be \"amd64\" or \"arm64\"";

    private static final List<String> ALLOC_FIELDS =
            List.of("idempotencyKey", "resourceType", "kubernetesVersion", "wireGuardPublicKey", "architecture");
    private static final List<String> DEALLOC_FIELDS = List.of("idempotencyKey");
    /** This implementation's additions: validated after the reference's fields, with their own messages. */
    private static final List<String> LEASE_FIELDS = List.of("ttl", "waitSeconds");
    public static final String BAD_TTL = "ttl must be a duration string such as \"30m\" or \"2h\"";
    public static final String TTL_NOT_POSITIVE = "ttl must be greater than 0: send how long the allocation should"
            + " last, such as \"30m\" or \"2h\" (at least 1s)";
    /** Expiry is written in whole seconds (RFC 3339 without a fraction): a shorter ttl would end at the claim. */
    public static final String TTL_UNDER_A_SECOND = "ttl must be at least 1s (expiry is kept in whole seconds): send"
            + " how long the allocation should last, such as \"30m\" or \"2h\"";

    private final List<String> controlPlaneVersions;
    private final LeaseLimits limits;

    public AllocRequestParser(List<String> controlPlaneVersions) {
        this(controlPlaneVersions, LeaseLimits.DEFAULTS);
    }

    public AllocRequestParser(List<String> controlPlaneVersions, LeaseLimits limits) {
        this.controlPlaneVersions = List.copyOf(controlPlaneVersions);
        this.limits = limits;
    }

    /** The largest waitSeconds an alloc may ask for (--max-wait; 0: waiting is off). */
    public int maxWaitSeconds() {
        return limits.maxWaitSeconds();
    }

    /**
     * Parses an alloc body; {@code headerKey} is the Idempotency-Key header as it came off the wire, one char per
     * byte (null when absent).
     */
    public AllocCommand parseAlloc(byte[] body, String headerKey) {
        return parseAlloc(body, headerKey, new java.util.ArrayList<>());
    }

    /**
     * Parses an alloc body, and adds to {@code warnings} one line per field name that names no field exactly
     * (accepted as the reference accepts it: ignored, or read through Go's case-insensitive match), also when the
     * request is then refused.
     */
    public AllocCommand parseAlloc(byte[] body, String headerKey, List<String> warnings) {
        return parseAlloc(body, headerKey, warnings, FieldValidation.WARN);
    }

    /**
     * Like {@link #parseAlloc(byte[], String, List)}, with the field names checked as {@code validation} says:
     * warned about, ignored, or refused before anything else is looked at.
     */
    public AllocCommand parseAlloc(byte[] body, String headerKey, List<String> warnings, FieldValidation validation) {
        Map<String, String> req;
        Map<String, GoJson.Value> lease = new HashMap<>();
        List<GoJson.FieldNote> notes = new java.util.ArrayList<>();
        try {
            req = GoJson.decode(body, ALLOC_FIELDS, LEASE_FIELDS, lease, notes);
        } catch (GoJson.EndOfInput e) {
            throw invalidJson("the body is empty", ALLOC_SHAPE);
        } catch (GoJson.DecodeError e) {
            throw invalidJson(e.getMessage(), ALLOC_SHAPE);
        } finally {
            validation.warn(notes, "an alloc", ALLOC_BODY_FIELDS, warnings);
        }
        refuseAnObject(notes, req, headerKey);
        validation.refuse(notes, "an alloc", ALLOC_BODY_FIELDS, "nothing was allocated");
        AllocCommand cmd = parseReferenceFields(req, headerKey);
        return cmd.withLease(ttl(lease.get("ttl")), waitSeconds(lease.get("waitSeconds")));
    }

    /** An alloc body that is a Kubernetes object (kubectl create -f alloc.yaml) rather than an alloc request. */
    public static final String AN_OBJECT = "this body is a Kubernetes object (it has kind or apiVersion), and allocations"
            + " are not made from one: send an alloc request with kubectl create --raw /apis/" + PlaypenKeys.GROUP_VERSION
            + "/allocs -f request.json, the file holding " + ALLOC_SHAPE;

    /**
     * A body without a key that has a top-level kind or apiVersion is an object, such as an Alloc kubectl create -f
     * sent: "key required" would send its user to add a field kubectl's schema refuses. With a key it is read as the
     * reference reads it (the object fields ignored).
     */
    private static void refuseAnObject(List<GoJson.FieldNote> notes, Map<String, String> req, String headerKey) {
        if (Hashes.headerKeyHash(headerKey) != null || !GoStrings.trimSpace(req.getOrDefault("idempotencyKey", "")).isEmpty()) {
            return;
        }
        for (GoJson.FieldNote n : notes) {
            if (n.matched() == null && (n.sent().equals("kind") || n.sent().equals("apiVersion"))) {
                throw ApiException.badRequest(AN_OBJECT);
            }
        }
    }

    /** {@value #INVALID_JSON}, then what is wrong with the body and what to send instead ({@code shape}). */
    public static String invalidJsonMessage(String whatIsWrong, String shape) {
        return INVALID_JSON + ": " + whatIsWrong + "; send " + shape;
    }

    private static ApiException invalidJson(String whatIsWrong, String shape) {
        return ApiException.badRequest(invalidJsonMessage(whatIsWrong, shape));
    }

    /**
     * How the field names of a body are checked, as kube-apiserver reads its {@code fieldValidation} option: Warn
     * (the default) accepts a name that names no field exactly, or a field sent twice, the way the Go operator does,
     * with a warning; Ignore accepts them silently; Strict refuses the request (400) before anything is done.
     */
    public enum FieldValidation {
        IGNORE, WARN, STRICT;

        /** The values kube-apiserver takes, as its 422 lists them. */
        static final String SUPPORTED = "\"\", \"Ignore\", \"Strict\", \"Warn\"";

        /**
         * The {@code fieldValidation} query option (null: not sent); any value but "", Ignore, Warn and Strict is
         * kube-apiserver's 422 Invalid on CreateOptions.
         */
        public static FieldValidation of(String option) {
            if (option == null || option.isEmpty() || option.equals("Warn")) {
                return WARN;
            }
            if (option.equals("Ignore")) {
                return IGNORE;
            }
            if (option.equals("Strict")) {
                return STRICT;
            }
            throw ApiException.invalid("meta.k8s.io", "CreateOptions", List.of(new Status.Cause(
                    "FieldValueNotSupported", "Unsupported value: " + AllocViews.quoteShort(option)
                            + ": supported values: " + SUPPORTED, "fieldValidation")));
        }

        void warn(List<GoJson.FieldNote> notes, String what, List<String> fields, List<String> warnings) {
            if (this == WARN) {
                warnings.addAll(fieldWarnings(notes, what, fields));
            }
        }

        /** Strict: kube-apiserver's "strict decoding error", then which names the body takes, and that {@code nothingDone}. */
        void refuse(List<GoJson.FieldNote> notes, String what, List<String> fields, String nothingDone) {
            if (this != STRICT || notes.isEmpty()) {
                return;
            }
            java.util.LinkedHashSet<String> errors = new java.util.LinkedHashSet<>();
            for (GoJson.FieldNote n : notes) {
                errors.add((n.duplicate() ? "duplicate field " : "unknown field ") + shortName(n.sent()));
            }
            List<String> list = new java.util.ArrayList<>(errors);
            if (list.size() > MAX_FIELD_WARNINGS) {
                int more = list.size() - MAX_FIELD_WARNINGS;
                list = new java.util.ArrayList<>(list.subList(0, MAX_FIELD_WARNINGS));
                list.add("and " + more + " more");
            }
            throw ApiException.badRequest("strict decoding error: " + String.join(", ", list) + "; " + what + " takes "
                    + String.join(", ", fields) + ", each once and spelled exactly: " + nothingDone);
        }
    }

    private static String shortName(String sent) {
        return GoJson.quote(sent.length() > 64 ? sent.substring(0, 64) + "..." : sent);
    }

    /** The alloc body fields as a user would list them (the "unknown field" warning, the API reference). */
    public static final List<String> ALLOC_BODY_FIELDS =
            List.of("idempotencyKey", "resourceType", "architecture", "wireGuardPublicKey", "kubernetesVersion", "ttl",
                    "waitSeconds");

    /**
     * One warning per field name the body used that names no field exactly, in the order sent, without repeats and
     * at most {@value #MAX_FIELD_WARNINGS} (then how many more). Names are cut at 64 characters.
     */
    static List<String> fieldWarnings(List<GoJson.FieldNote> notes, String what, List<String> fields) {
        java.util.LinkedHashSet<String> out = new java.util.LinkedHashSet<>();
        for (GoJson.FieldNote n : notes) {
            String sent = shortName(n.sent());
            out.add(n.duplicate() ? "duplicate field " + sent + ": the last value sent that is not null was read"
                    : n.matched() == null
                    ? "unknown field " + sent + " ignored; " + what + " takes " + String.join(", ", fields)
                    : "field " + sent + " was read as \"" + n.matched() + "\" (names are matched ignoring case)");
        }
        List<String> list = new java.util.ArrayList<>(out);
        if (list.size() > MAX_FIELD_WARNINGS) {
            int more = list.size() - MAX_FIELD_WARNINGS;
            list = new java.util.ArrayList<>(list.subList(0, MAX_FIELD_WARNINGS));
            list.add("and " + more + " more field" + (more == 1 ? "" : "s") + " not named exactly");
        }
        return list;
    }

    private AllocCommand parseReferenceFields(Map<String, String> req, String headerKey) {
        String keyHash = keyHash(req.getOrDefault("idempotencyKey", ""), headerKey, ALLOC_KEY_REQUIRED);
        ResourceType type = ResourceType.fromRequest(req.getOrDefault("resourceType", ""))
                .orElseThrow(() -> ApiException.badRequest(BAD_RESOURCE_TYPE));
        // trimmed for both kinds: a control plane's key is not checked, but it is part of the request hash
        String wgKey = GoStrings.trimSpace(req.getOrDefault("wireGuardPublicKey", ""));
        if (type == ResourceType.RUNNER && !isWireGuardKey(wgKey)) {
            throw ApiException.badRequest(wgKey.isEmpty() ? WIREGUARD_KEY_REQUIRED : badWireGuardKey(wgKey));
        }
        String arch = normaliseArchitecture(req.getOrDefault("architecture", ""))
                .orElseThrow(() -> ApiException.badRequest(BAD_ARCHITECTURE));
        if (type == ResourceType.CONTROL_PLANE) {
            String sent = req.getOrDefault("kubernetesVersion", "");
            String version = resolveVersion(sent);
            AllocCommand cmd = new AllocCommand(keyHash, type, version, "", arch,
                    Hashes.requestHash(type.wire(), version, wgKey, arch));
            return GoStrings.trimSpace(sent).isEmpty() ? cmd.withVersionDefaulted() : cmd;
        }
        // a runner's kubernetesVersion is ignored, yet the reference hashes it exactly as sent
        return new AllocCommand(keyHash, type, "", wgKey, arch,
                Hashes.requestHash(type.wire(), req.getOrDefault("kubernetesVersion", ""), wgKey, arch));
    }

    /** The ttl an alloc asked for: null when absent, null or ""; else a Go duration in [1s, --playpen-max-ttl]. */
    Duration ttl(GoJson.Value v) {
        if (v == null || (v.isString() && GoStrings.trimSpace(v.text()).isEmpty())) {
            return null;
        }
        if (!v.isString()) {
            throw ApiException.badRequest(BAD_TTL);
        }
        return checkTtl(v.text());
    }

    /** A requested ttl (alloc or renewal) checked against --playpen-max-ttl. */
    public Duration checkTtl(String raw) {
        Duration ttl;
        try {
            ttl = GoDuration.parse(GoStrings.trimSpace(raw));
        } catch (IllegalArgumentException e) {
            throw ApiException.badRequest(BAD_TTL);
        }
        if (ttl.isNegative() || ttl.isZero()) {
            throw ApiException.badRequest(TTL_NOT_POSITIVE);
        }
        if (ttl.compareTo(Duration.ofSeconds(1)) < 0) {
            throw ApiException.badRequest(TTL_UNDER_A_SECOND);
        }
        if (ttl.compareTo(limits.maxTtl()) > 0) {
            String max = GoDuration.format(limits.maxTtl());
            // what to do: ask for less, and renew to keep the allocation longer (as far as the lifetime cap allows)
            String cap = limits.maxLifetime().isZero() ? "" : ", up to " + GoDuration.format(limits.maxLifetime())
                    + " after its claim (--playpen-max-lifetime)";
            throw ApiException.badRequest("ttl must not exceed " + max + " (--playpen-max-ttl): ask for " + max
                    + " or less, and renew the allocation (POST .../renewals) before it expires to keep it longer" + cap);
        }
        return ttl;
    }

    /** A waitSeconds other than 0 while waiting is off (--max-wait=0): what to send instead. */
    public static final String WAITING_OFF = "waitSeconds must be 0 or left out: this operator does not wait for"
            + " capacity (--max-wait is 0); send the request without it, and again after the Retry-After of its 503"
            + " should no pod be free";

    /**
     * waitSeconds: a JSON integer from 0 to --max-wait; absent or null is 0. Sent as a string, like every other
     * field, it is told to drop the quotes.
     */
    int waitSeconds(GoJson.Value v) {
        if (v == null) {
            return 0;
        }
        if (v.isString()) {
            if (limits.maxWaitSeconds() == 0) {
                throw ApiException.badRequest(WAITING_OFF
                        + " (waitSeconds is a JSON number, not a string: send it as a number or leave it out)");
            }
            String sent = GoStrings.trimSpace(v.text());
            String example = sent.matches("[0-9]{1,9}") ? String.valueOf(Integer.parseInt(sent)) : "<seconds>";
            throw ApiException.badRequest("waitSeconds must be a JSON number, not a string: send \"waitSeconds\": "
                    + example + " (from 0 to " + limits.maxWaitSeconds() + ", --max-wait)");
        }
        String bad = limits.maxWaitSeconds() == 0 ? WAITING_OFF
                : "waitSeconds must be an integer from 0 to " + limits.maxWaitSeconds() + " (--max-wait)";
        if (v.token() != JsonToken.VALUE_NUMBER_INT) {
            throw ApiException.badRequest(bad);
        }
        java.math.BigInteger n = new java.math.BigInteger(v.text());
        if (n.signum() < 0 || n.compareTo(java.math.BigInteger.valueOf(limits.maxWaitSeconds())) > 0) {
            throw ApiException.badRequest(bad);
        }
        return n.intValue();
    }

    /**
     * Parses a renewal {@code {"idempotencyKey": "...", "ttl": "2h"}}; the Idempotency-Key header wins over the body
     * field, and with it the body may be empty. The ttl is checked as an alloc's.
     */
    public RenewalCommand parseRenewal(byte[] body, String headerKey) {
        return parseRenewal(body, headerKey, new java.util.ArrayList<>());
    }

    /** Like {@link #parseRenewal(byte[], String)}, with the field warnings of {@link #parseAlloc(byte[], String, List)}. */
    public RenewalCommand parseRenewal(byte[] body, String headerKey, List<String> warnings) {
        return parseRenewal(body, headerKey, warnings, FieldValidation.WARN);
    }

    private static final List<String> RENEWAL_FIELDS = List.of("idempotencyKey", "ttl");

    /** Like {@link #parseRenewal(byte[], String, List)}, with the field names checked as {@code validation} says. */
    public RenewalCommand parseRenewal(byte[] body, String headerKey, List<String> warnings,
            FieldValidation validation) {
        Map<String, String> req;
        Map<String, GoJson.Value> lease = new HashMap<>();
        List<GoJson.FieldNote> notes = new java.util.ArrayList<>();
        try {
            req = GoJson.decode(body, DEALLOC_FIELDS, List.of("ttl"), lease, notes);
        } catch (GoJson.EndOfInput e) {
            req = Map.of();
        } catch (GoJson.DecodeError e) {
            throw invalidJson(e.getMessage(), RENEWAL_SHAPE);
        } finally {
            validation.warn(notes, "a renewal", RENEWAL_FIELDS, warnings);
        }
        validation.refuse(notes, "a renewal", RENEWAL_FIELDS, "nothing was renewed");
        String keyHash = keyHash(req.getOrDefault("idempotencyKey", ""), headerKey, RELEASE_KEY_REQUIRED);
        return new RenewalCommand(keyHash, ttl(lease.get("ttl")));
    }

    /**
     * Parses a dealloc and returns the key hash. A non-blank header key means the body is never read (the
     * reference does not read it); otherwise an empty body is an empty request, and other bad JSON is a 400.
     */
    public String parseDealloc(byte[] body, String headerKey) {
        return parseDealloc(body, headerKey, new java.util.ArrayList<>());
    }

    /** Like {@link #parseDealloc(byte[], String)}, with the field warnings of {@link #parseAlloc(byte[], String, List)}. */
    public String parseDealloc(byte[] body, String headerKey, List<String> warnings) {
        return parseDealloc(body, headerKey, warnings, FieldValidation.WARN);
    }

    /**
     * Like {@link #parseDealloc(byte[], String, List)}, with the field names of a body it reads checked as
     * {@code validation} says.
     */
    public String parseDealloc(byte[] body, String headerKey, List<String> warnings, FieldValidation validation) {
        String fromHeader = Hashes.headerKeyHash(headerKey);
        if (fromHeader != null) {
            return fromHeader;
        }
        Map<String, String> req;
        List<GoJson.FieldNote> notes = new java.util.ArrayList<>();
        try {
            req = GoJson.decode(body, DEALLOC_FIELDS, List.of(), new HashMap<>(), notes);
        } catch (GoJson.EndOfInput e) {
            req = Map.of();
        } catch (GoJson.DecodeError e) {
            throw invalidJson(e.getMessage(), DEALLOC_SHAPE);
        } finally {
            validation.warn(notes, "a dealloc", DEALLOC_FIELDS, warnings);
        }
        validation.refuse(notes, "a dealloc", DEALLOC_FIELDS, "nothing was released");
        return keyHash(req.getOrDefault("idempotencyKey", ""), null, RELEASE_KEY_REQUIRED);
    }

    /**
     * {@value #BAD_WIREGUARD_KEY} (the Go operator's words), then what a valid key looks like and what is wrong with
     * this one: its length, its end or its alphabet (the key is public, but the message never quotes it).
     */
    static String badWireGuardKey(String key) {
        String k = key.replace("\r", "").replace("\n", "");
        String thisOne;
        if (k.length() != 44) {
            thisOne = "is " + k.length() + (k.length() == 1 ? " character" : " characters") + " long";
        } else if (k.charAt(43) != '=') {
            thisOne = "does not end in \"=\"";
        } else if (k.substring(0, 43).indexOf('=') >= 0) {
            thisOne = "has an \"=\" before its end, so it holds fewer than 32 bytes";
        } else {
            thisOne = "has a character outside that alphabet";
        }
        return BAD_WIREGUARD_KEY + "; send the 44 characters of standard base64 (A-Z, a-z, 0-9, + and /, then \"=\")"
                + " that \"wg genkey | wg pubkey\" prints for your peer; this one " + thisOne;
    }

    /**
     * Go's wgtypes.ParseKey: standard base64 (CR and LF anywhere are skipped, as Go's decoder does) of 32 bytes.
     */
    public static boolean isWireGuardKey(String raw) {
        return raw != null && isBase64Of32Bytes(raw.replace("\r", "").replace("\n", ""));
    }

    /**
     * Whether {@code key} is 32 bytes in standard base64: 43 characters of its alphabet and one '=' (which always
     * decode to 32 bytes). Checked by hand rather than with a regular expression and a decoder: the pools ask it of
     * every pod change they see.
     */
    private static boolean isBase64Of32Bytes(String key) {
        if (key.length() != 44 || key.charAt(43) != '=') {
            return false;
        }
        for (int i = 0; i < 43; i++) {
            char c = key.charAt(i);
            if (!(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/')) {
                return false;
            }
        }
        return true;
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
            return highest(controlPlaneVersions.stream().map(AllocRequestParser::withV).toList());
        }
        String wanted = withV(v);
        for (String configured : controlPlaneVersions) {
            if (withV(configured).equals(wanted)) {
                return wanted;
            }
        }
        throw ApiException.badRequest("kubernetes version " + GoJson.quote(wanted)
                + " is not configured for control-plane allocation" + offeredVersions());
    }

    /**
     * What to send instead of a version this operator does not offer, after the Go operator's words: the versions
     * --control-plane-versions lists and the one an alloc without kubernetesVersion gets.
     */
    private String offeredVersions() {
        List<String> offered = controlPlaneVersions.stream().map(AllocRequestParser::withV).distinct().toList();
        if (offered.isEmpty()) {
            return "";
        }
        if (offered.size() == 1) {
            return "; send the one this operator offers, " + offered.get(0) + ", or leave kubernetesVersion out";
        }
        String listed = String.join(", ", offered.subList(0, offered.size() - 1)) + " or " + offered.get(offered.size() - 1);
        return "; send one this operator offers, " + listed + ", or leave kubernetesVersion out for the newest, "
                + highest(offered);
    }

    /** The reference's normalizeKubernetesVersionValue: trimmed, with a "v" added when missing. */
    private static String withV(String version) {
        String v = GoStrings.trimSpace(version);
        return v.startsWith("v") ? v : "v" + v;
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

    /**
     * The key hash of a request: the Idempotency-Key header's (the bytes sent, see {@link Hashes#headerKeyHash}) when
     * anything is left of it trimmed, else the body key's.
     */
    private static String keyHash(String bodyKey, String headerKey, String required) {
        String fromHeader = Hashes.headerKeyHash(headerKey);
        if (fromHeader != null) {
            return fromHeader;
        }
        String body = GoStrings.trimSpace(bodyKey);
        if (body.isEmpty()) {
            throw ApiException.badRequest(required);
        }
        return Hashes.keyHash(body);
    }
}
