package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class TtlPolicyTest {
    private static final Instant CLAIMED = Instant.parse("2026-01-02T03:04:05Z");

    @ParameterizedTest(name = "claimed-at {0}, now {1} → expired {2}")
    @CsvSource(nullValues = "-", value = {
            "2026-01-02T03:04:05Z,        2026-01-02T04:04:04Z, false",  // one second before expiry
            "2026-01-02T03:04:05Z,        2026-01-02T04:04:05Z, true",   // exactly at expiry: <= now
            "2026-01-02T03:04:05Z,        2026-01-02T05:00:00Z, true",
            "2026-01-02T05:04:05+02:00,   2026-01-02T04:04:04Z, false",  // an offset is honoured
            "2026-01-02T03:04:05.5Z,      2026-01-02T04:04:05Z, false",  // fractions are accepted
            "not-a-time,                  2026-01-02T03:04:05Z, true",
            "2026-01-02 03:04:05Z,        2026-01-02T03:04:05Z, true",   // RFC 3339 needs the T
            "2026-01-02T03:04Z,           2026-01-02T03:04:05Z, true",   // and the seconds
            "'',                          2026-01-02T03:04:05Z, true",
            "-,                           2026-01-02T03:04:05Z, true",   // claimed without claimed-at
    })
    void expiryOfAClaimedPod(String claimedAt, String now, boolean expired) {
        Pod pod = TestPods.claimed(TestPods.runner("amd64", 51820), claimedAt);
        Instant at = Instant.parse(now);
        TtlPolicy ttl = new TtlPolicy(Duration.ofHours(1));
        assertThat(ttl.isExpired(pod, at)).isEqualTo(expired);
        assertThat(ttl.expired(List.of(pod), at)).hasSize(expired ? 1 : 0);
    }

    @Test
    void expiresAtIsClaimedAtPlusTtl() {
        TtlPolicy ttl = new TtlPolicy(Duration.ofMinutes(90));
        Pod pod = TestPods.claimed(TestPods.controlPlane("v1.33.0", 16443), "2026-01-02T03:04:05Z");
        assertThat(ttl.expiresAt(pod)).contains(Instant.parse("2026-01-02T04:34:05Z"));
    }

    @Test
    void unparsableClaimedAtExpiresAtTheEpoch() {
        TtlPolicy ttl = new TtlPolicy(Duration.ofHours(1));
        Pod pod = TestPods.claimed(TestPods.runner("amd64", 51820), "yesterday");
        assertThat(ttl.expiresAt(pod)).contains(TtlPolicy.ALREADY_EXPIRED);
    }

    @Test
    void zeroTtlDisablesExpiry() {
        Instant now = Instant.parse("2100-01-01T00:00:00Z");
        TtlPolicy ttl = new TtlPolicy(Duration.ZERO);
        Pod old = TestPods.claimed(TestPods.runner("amd64", 51820), "2000-01-01T00:00:00Z");
        Pod broken = TestPods.claimed(TestPods.runner("amd64", 51821), "garbage");
        assertThat(ttl.enabled()).isFalse();
        assertThat(ttl.expiresAt(old)).isEmpty();
        assertThat(ttl.expired(List.of(old, broken), now)).isEmpty();
    }

    /**
     * A claim without a usable expires-at (made by the Go operator, or edited by hand) still ends at claimed-at + the
     * lifetime cap when one is set, whatever the default ttl; without a cap, --playpen-ttl=0 keeps it for good, as
     * the Go operator does.
     */
    @Test
    void aClaimWithoutAUsableExpiryStillEndsAtTheLifetimeCap() {
        Pod bare = TestPods.claimed(TestPods.runner("amd64", 51820), "2026-01-02T03:04:05Z");
        Pod unparsable = new io.fabric8.kubernetes.api.model.PodBuilder(bare).editMetadata()
                .addToAnnotations(PlaypenKeys.EXPIRES_AT, "soon").endMetadata().build();
        Instant cap = Instant.parse("2026-01-02T11:04:05Z");
        TtlPolicy neverButCapped = new TtlPolicy(Duration.ZERO, Duration.ofHours(8));
        for (Pod pod : List.of(bare, unparsable)) {
            assertThat(neverButCapped.expiresAt(pod)).as("ttl 0, cap 8h").contains(cap);
            assertThat(neverButCapped.isExpired(pod, cap.minusSeconds(1))).isFalse();
            assertThat(neverButCapped.isExpired(pod, cap)).isTrue();
            assertThat(new TtlPolicy(Duration.ofDays(1), Duration.ofHours(8)).expiresAt(pod)).as("ttl past the cap")
                    .contains(cap);
            assertThat(new TtlPolicy(Duration.ofHours(1), Duration.ofHours(8)).expiresAt(pod)).as("ttl within the cap")
                    .contains(Instant.parse("2026-01-02T04:04:05Z"));
            assertThat(new TtlPolicy(Duration.ZERO).expiresAt(pod)).as("ttl 0, no cap").isEmpty();
        }
        // no claimed-at either: no lifetime to measure, so with a cap it is already expired, as with a ttl
        Pod unmeasurable = TestPods.claimed(TestPods.runner("amd64", 51821), null);
        assertThat(neverButCapped.expiresAt(unmeasurable)).contains(TtlPolicy.ALREADY_EXPIRED);
        assertThat(new TtlPolicy(Duration.ZERO).expiresAt(unmeasurable)).isEmpty();
    }

    @Test
    void onlyClaimedManagedPodsExpire() {
        Instant now = Instant.parse("2100-01-01T00:00:00Z");
        TtlPolicy ttl = new TtlPolicy(Duration.ofSeconds(1));
        Pod idle = TestPods.runner("amd64", 51820);
        Pod unmanaged = TestPods.claimed(TestPods.runner("amd64", 51821), "2000-01-01T00:00:00Z");
        unmanaged.getMetadata().getLabels().clear();
        Pod expired = TestPods.claimed(TestPods.runner("arm64", 51822), "2000-01-01T00:00:00Z");

        assertThat(ttl.expiresAt(idle)).isEmpty();
        assertThat(ttl.expiresAt(unmanaged)).isEmpty();
        assertThat(ttl.expired(List.of(idle, unmanaged, expired), now)).containsExactly(expired);
    }

    @Test
    void claimedAtIsWrittenInUtcSeconds() {
        assertThat(TtlPolicy.formatClaimedAt(Instant.parse("2026-01-02T03:04:05.987Z"))).isEqualTo("2026-01-02T03:04:05Z");
        assertThat(TtlPolicy.claimedAt(TestPods.claimed(TestPods.runner("amd64", 51820),
                TtlPolicy.formatClaimedAt(CLAIMED)))).contains(CLAIMED);
    }

    @ParameterizedTest
    @CsvSource({"2026-01-02T03:04:05Z", "2024-02-29T23:59:59Z", "2026-02-29T00:00:00Z", "2026-04-31T00:00:00Z",
        "2026-13-01T00:00:00Z", "2026-00-10T00:00:00Z", "2026-01-00T00:00:00Z", "2026-01-01T24:00:00Z",
        "2026-01-01T23:60:00Z", "2026-12-31T23:59:60Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
        "2026-01-02t03:04:05Z", "2026-01-02T03:04:05z", "2026-01-02T03:04:05+00:00", "2026-01-02T03:04:05.5Z",
        "2026-01-02T03:04:05-07:00", "2026-1-02T03:04:05Z", "2026-01-02 03:04:05Z", "2026-01-02T03:04:5aZ",
        "+026-01-02T03:04:05Z", "2026-01-02T03:04:05", "''"})
    void theFastPathAnswersLikeTheGeneralParser(String raw) {
        assertThat(TtlPolicy.parse(raw)).isEqualTo(TtlPolicy.parseGeneral(raw));
    }

    @Test
    void theFormWeWriteTakesTheFastPathAtEverySecondOfAYear() {
        Instant at = Instant.parse("2027-12-31T23:59:59Z");
        for (Instant t = Instant.parse("2027-01-01T00:00:00Z"); !t.isAfter(at); t = t.plusSeconds(9_973)) {
            String written = TtlPolicy.formatClaimedAt(t);
            assertThat(TtlPolicy.parseWholeSecondsUtc(written)).as(written).isEqualTo(t);
            assertThat(TtlPolicy.parseGeneral(written)).as(written).contains(t);
        }
        assertThat(TtlPolicy.parseWholeSecondsUtc("2026-01-02T03:04:05+00:00")).isNull();
        assertThat(TtlPolicy.parseWholeSecondsUtc("2026-02-29T00:00:00Z")).isNull();
    }
}
