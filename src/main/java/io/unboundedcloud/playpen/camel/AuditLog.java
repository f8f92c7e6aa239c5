package io.unboundedcloud.playpen.camel;

import java.time.Clock;
import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.camel.Body;
import org.apache.camel.Exchange;

import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.auth.Identity;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.ManagedPods;

/**
 * The audit line of an allocation decision (bean {@code auditLog}, step of the {@code audit-line} route): one JSON
 * object with time, user, verb, allocation id, key hash prefix and outcome, built only from the exchange properties
 * below, so it can never carry an idempotency key, a kubeconfig or a private key. kube-apiserver audits requests
 * proxied to an aggregated API at Metadata level only; this is the record of what the operator decided.
 *
 * <p>A flow audits with one step, {@code - to: direct:audit}, after setting:
 * <ul>
 * <li>{@value #VERB}: allocate, deallocate, expire, ... (every auditing flow sets it; a line without one says {@code "verb":""} rather than being lost)</li>
 * <li>{@value #OUTCOME}: allocated, replayed, deallocated, wait-cancelled, unknown-key, being-deleted, expired, ...;
 * when the exchange failed, the answer's result (forbidden, conflict, serviceUnavailable, ...) that {@link ReplyWriter} leaves in
 * {@value ReplyWriter#RESULT} is used instead</li>
 * <li>{@value #ALLOCATION_ID}: the pod name(s), comma separated (optional)</li>
 * <li>{@value #KEY_HASH_PREFIX}: the first 8 hex characters of the key hash (optional; never the key)</li>
 * <li>{@value #USER}: who (optional; default: the authenticated {@code playpenIdentity}'s user, else
 * {@value #OPERATOR_USER}); {@value #UNAUTHENTICATED_USER} when nobody was authenticated</li>
 * <li>{@value #REASON}: why a request was refused before any flow took it (optional; the line's {@code reason}
 * field is written only when it is set)</li>
 * </ul>
 */
public final class AuditLog {
    public static final String VERB = "playpenAuditVerb";
    public static final String OUTCOME = "playpenOutcome";
    public static final String ALLOCATION_ID = "playpenAllocationId";
    public static final String KEY_HASH_PREFIX = "playpenKeyHashPrefix";
    public static final String USER = "playpenAuditUser";
    public static final String OPERATOR_USER = "system:playpen-operator";
    public static final String REASON = "playpenAuditReason";
    /** Who a refused request came from when nobody was authenticated (no, or an untrusted, certificate; no user). */
    public static final String UNAUTHENTICATED_USER = "system:anonymous";
    /** The verb and outcome of an expired claim's line (ttl-expired.camel.yaml sets the same). */
    static final String EXPIRE = "expire";
    static final String EXPIRED = "expired";

    private final Clock clock;

    public AuditLog(Clock clock) {
        this.clock = clock;
    }

    /** The JSON line (no trailing newline) for this exchange. */
    public String line(Exchange exchange) {
        return line(user(exchange), exchange.getProperty(VERB, "", String.class),
                exchange.getProperty(ALLOCATION_ID, "", String.class),
                exchange.getProperty(KEY_HASH_PREFIX, "", String.class), outcome(exchange),
                exchange.getProperty(REASON, String.class));
    }

    /** The line of an expired claim (the pod deleted), as the ttl-expired route writes it, without an exchange. */
    String expiredLine(Pod pod) {
        return line(OPERATOR_USER, EXPIRE, pod.getMetadata().getName(), keyHashPrefix(pod), EXPIRED, null);
    }

    private String line(String user, String verb, String allocation, String keyHashPrefix, String outcome,
            String reason) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("time", clock.instant().toString());
        line.put("user", user);
        line.put("verb", verb);
        line.put("allocation", allocation);
        line.put("keyHashPrefix", Hashes.keyHashPrefix(keyHashPrefix));
        line.put("outcome", outcome);
        if (reason != null) {
            line.put("reason", reason);
        }
        return write(line);
    }

    /**
     * The audit verb of a request from its method and path alone, for a refusal before any flow took it: the verb
     * its flow audits with, else the Kubernetes verb of the read ({@code get}, {@code list}), else {@code unknown}.
     */
    public static String verb(io.unboundedcloud.playpen.api.ApiPaths.Flow flow) {
        if (flow == null) {
            return "unknown";
        }
        return switch (flow) {
            case ALLOC -> "allocate";
            case DEALLOC -> "deallocate";
            case RENEWAL -> "renew";
            case ALLOCS_DELETE -> "delete";
            case ALLOCS_LIST, POOLS_LIST -> "list";
            case DISCOVERY_GROUP, DISCOVERY_VERSION, ALLOCS_GET, POOLS_GET, OPENAPI_V2, OPENAPI_V3, OPENAPI_V3_GROUP ->
                "get";
            default -> "unknown";
        };
    }

    /** Marks {@code exchange} as refused before any flow took it: the errors configuration writes its audit line. */
    static void refusedAtTheDoor(Exchange exchange, io.unboundedcloud.playpen.api.ApiPaths.Flow flow, String why) {
        exchange.setProperty(VERB, verb(flow));
        exchange.setProperty(USER, UNAUTHENTICATED_USER);
        exchange.setProperty(REASON, why);
    }

    /** One audit line's JSON: every character that could end or disguise a line is a {@code \\uXXXX} escape. */
    static String write(Map<String, Object> line) {
        try {
            return LINE_WRITER.writeValueAsString(line);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException("cannot write an audit line", e);
        }
    }

    private static final com.fasterxml.jackson.databind.ObjectWriter LINE_WRITER =
            Json.MAPPER.writer().with(new LineSafeEscapes());

    /**
     * JSON string escapes for a line-oriented log: besides JSON's own (quote, backslash, C0 controls), every
     * Unicode line or paragraph break (U+0085 NEL, U+2028, U+2029; VT, FF, CR and LF are C0), DEL and the C1
     * controls, format characters (bidirectional overrides, zero-width characters, which can make a line read
     * differently from what it holds) and surrogates (a lone one is not text) are written as six-character
     * escapes, so one decision is always exactly one line and reads as what it says.
     */
    static final class LineSafeEscapes extends com.fasterxml.jackson.core.io.CharacterEscapes {
        private static final long serialVersionUID = 1L;
        private final int[] ascii = standardAsciiEscapesForJSON();

        LineSafeEscapes() {
            ascii[0x7f] = ESCAPE_CUSTOM;
        }

        @Override
        public int[] getEscapeCodesForAscii() {
            return ascii;
        }

        @Override
        public com.fasterxml.jackson.core.SerializableString getEscapeSequence(int ch) {
            return escaped(ch) ? new com.fasterxml.jackson.core.io.SerializedString(String.format("\\u%04x", ch)) : null;
        }

        static boolean escaped(int ch) {
            int type = Character.getType(ch);
            return type == Character.CONTROL || type == Character.LINE_SEPARATOR
                    || type == Character.PARAGRAPH_SEPARATOR || type == Character.FORMAT
                    || type == Character.SURROGATE || type == Character.UNASSIGNED && ch >= 0xfdd0 && ch <= 0xfdef
                    || (ch & 0xfffe) == 0xfffe;
        }
    }

    private static String user(Exchange exchange) {
        String user = exchange.getProperty(USER, String.class);
        if (user != null) {
            return user;
        }
        Identity identity = exchange.getProperty(FrontDoor.IDENTITY, Identity.class);
        return identity != null ? identity.user() : OPERATOR_USER;
    }

    private static String outcome(Exchange exchange) {
        boolean failed = exchange.getProperty(Exchange.EXCEPTION_CAUGHT) != null || exchange.getException() != null;
        String result = exchange.getProperty(ReplyWriter.RESULT, String.class);
        if (failed && result != null) {
            return result;
        }
        String outcome = exchange.getProperty(OUTCOME, String.class);
        return outcome != null ? outcome : result != null ? result : "unknown";
    }

    /** The key hash prefix of a claimed pod (for flows whose body is the pod, e.g. ttl-expired). */
    public String keyHashPrefix(@Body Pod pod) {
        return Hashes.keyHashPrefix(ManagedPods.keyHash(pod));
    }

    /** At most 8 characters, whatever a route put there: a full hash (or a key by mistake) is cut. */
}
