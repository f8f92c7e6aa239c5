package io.unboundedcloud.playpen.camel;

import java.time.Duration;

import org.apache.camel.Body;
import org.apache.camel.Exchange;
import org.apache.camel.ExchangeProperty;
import org.apache.camel.Header;

import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.api.RenewalResponse;
import io.unboundedcloud.playpen.kube.Renewer;
import io.unboundedcloud.playpen.model.AllocRequestParser;
import io.unboundedcloud.playpen.model.GoStrings;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.model.RenewalCommand;
import io.unboundedcloud.playpen.model.TtlPolicy;

/** The renewal route's steps: read and validate the request, renew, answer the new expiry. */
public final class RenewalFlows {
    public static final String TTL_REQUIRED = "ttl is required: expiry has no default (--playpen-ttl is 0); send how"
            + " long the allocation should last from now, such as {\"idempotencyKey\":\"job-42\",\"ttl\":\"1h\"}";
    private static final byte[] NO_BODY = new byte[0];

    /**
     * Exchange property: the renewal reached the renewer, which counts it; an answer without it (refused before:
     * 400, 403, ...) is counted by {@link ReplyWriter}.
     */
    public static final String RENEWER_RAN = "playpenRenewerRan";

    private final AllocRequestParser parser;
    private final Renewer renewer;
    private final Duration defaultTtl;

    public RenewalFlows(AllocRequestParser parser, Renewer renewer, Duration defaultTtl) {
        this.parser = parser;
        this.renewer = renewer;
        this.defaultTtl = defaultTtl;
    }

    /** Key from the Idempotency-Key header or the body, ttl from the body; with the header an empty body is fine. */
    public RenewalCommand parseRenewal(@Body byte[] body, @Header("Idempotency-Key") String key,
            @ExchangeProperty(PlaypenHttpBinding.ORIGINAL_CONTENT_TYPE) String contentType,
            org.apache.camel.Exchange exchange) {
        byte[] admitted = body == null || body.length == 0 ? NO_BODY
                : io.unboundedcloud.playpen.api.RequestBodies.admit(contentType, body);
        RenewalCommand cmd = parser.parseRenewal(admitted, key != null && GoStrings.trimSpace(key).isEmpty() ? null : key,
                ReplyWriter.warnings(exchange), ApiFlows.fieldValidation(exchange));
        if (cmd.ttl() == null) {
            if (defaultTtl.isZero()) {
                throw ApiException.badRequest(TTL_REQUIRED);
            }
            return new RenewalCommand(cmd.keyHash(), defaultTtl);
        }
        return cmd;
    }

    /**
     * Moves the expiry (one conditional write, or none when nothing changes); sets the audit properties
     * ({@value AuditLog#OUTCOME} {@code renewed} or {@code unchanged}, the pod, the key hash prefix).
     */
    public Renewer.Renewal renew(@Body RenewalCommand cmd, Exchange exchange) {
        exchange.setProperty(AuditLog.KEY_HASH_PREFIX, Hashes.keyHashPrefix(cmd.keyHash()));
        // the renewer counts this renewal by its outcome (playpen_renewals_total), whichever way it ends
        exchange.setProperty(RENEWER_RAN, true);
        Renewer.Renewal r = renewer.renew(cmd.keyHash(), cmd.ttl());
        exchange.setProperty(AuditLog.ALLOCATION_ID, r.pod().getMetadata().getName());
        exchange.setProperty(AuditLog.OUTCOME, r.written() ? "renewed" : "unchanged");
        return r;
    }

    /** The answer: {"expiresAt": ..., "maxExpiresAt": ...}. */
    public HttpReply renewed(@Body Renewer.Renewal r) {
        return HttpReply.json(Json.encode(new RenewalResponse(
                r.expiresAt() == null ? null : TtlPolicy.formatClaimedAt(r.expiresAt()),
                r.maxExpiresAt() == null ? null : TtlPolicy.formatClaimedAt(r.maxExpiresAt()))),
                r.written() ? "renewed" : "unchanged");
    }
}
