package io.unboundedcloud.playpen.model;

import java.time.Duration;

/** A validated renewal: the key hash of the allocation and the ttl asked for (null: --playpen-ttl). */
public record RenewalCommand(String keyHash, Duration ttl) {
}
