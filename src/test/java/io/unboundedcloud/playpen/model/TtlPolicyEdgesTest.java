package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The configured TTL as given, and the fast timestamp reader at the first year it can write. */
class TtlPolicyEdgesTest {

    @Test
    void theDefaultTtlIsTheOneConfigured() {
        assertThat(new TtlPolicy(Duration.ofMinutes(90)).ttl()).isEqualTo(Duration.ofMinutes(90));
        assertThat(new TtlPolicy(Duration.ZERO).ttl()).isZero();
    }

    @Test
    void yearZeroIsReadLikeAnyOtherYear() {
        assertThat(TtlPolicy.parseWholeSecondsUtc("0000-01-01T00:00:00Z")).isEqualTo(Instant.parse("0000-01-01T00:00:00Z"));
        assertThat(TtlPolicy.parseWholeSecondsUtc("0001-12-31T23:59:59Z")).isEqualTo(Instant.parse("0001-12-31T23:59:59Z"));
    }
}
