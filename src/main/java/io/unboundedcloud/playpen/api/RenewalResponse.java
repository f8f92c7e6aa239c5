package io.unboundedcloud.playpen.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;

/**
 * The 200 answer of a renewal: the new expiry (absent when the allocation never expires) and the cap renewals cannot
 * pass (absent without a cap).
 */
@JsonPropertyOrder({"expiresAt", "maxExpiresAt"})
public record RenewalResponse(@JsonInclude(JsonInclude.Include.NON_NULL) String expiresAt,
        @JsonInclude(JsonInclude.Include.NON_NULL) String maxExpiresAt) {
}
