package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.config.LeaseLimits;

/** The alloc body's ttl and waitSeconds: accepted values, every bad input a 400, the hash untouched. */
class LeaseRequestTest {
    static final String WG = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    static final AllocRequestParser PARSER =
            new AllocRequestParser(List.of("v1.33.0"), new LeaseLimits(Duration.ofHours(24), Duration.ZERO, 120));

    static AllocCommand parse(String extra) {
        String body = "{\"idempotencyKey\":\"k\",\"wireGuardPublicKey\":\"" + WG + "\"" + extra + "}";
        return PARSER.parseAlloc(body.getBytes(StandardCharsets.UTF_8), null);
    }

    static String error(String extra) {
        try {
            parse(extra);
        } catch (ApiException e) {
            assertThat(e.code()).isEqualTo(400);
            return e.getMessage();
        }
        throw new AssertionError("no 400 for " + extra);
    }

    @Test
    void absentNullAndEmptyMeanTheDefaults() {
        for (String extra : List.of("", ",\"ttl\":null,\"waitSeconds\":null", ",\"ttl\":\"\"")) {
            AllocCommand cmd = parse(extra);
            assertThat(cmd.ttl()).as(extra).isNull();
            assertThat(cmd.waitSeconds()).as(extra).isZero();
        }
    }

    @Test
    void ttlAndWaitAreReadAsGoWouldNameThem() {
        AllocCommand cmd = parse(",\"ttl\":\"1h30m\",\"waitSeconds\":120");
        assertThat(cmd.ttl()).isEqualTo(Duration.ofMinutes(90));
        assertThat(cmd.waitSeconds()).isEqualTo(120);
        assertThat(parse(",\"waitSeconds\":0").waitSeconds()).as("both ends of the range").isZero();
        // Go's case-insensitive field match applies to the additions too
        assertThat(parse(",\"TTL\":\"2h\",\"WaitSeconds\":5").ttl()).isEqualTo(Duration.ofHours(2));
        assertThat(parse(",\"ttl\":\"24h\"").ttl()).isEqualTo(Duration.ofHours(24));
    }

    @Test
    void neitherIsPartOfTheRequestHash() {
        // a pod claimed by the reference (or by this operator without a ttl) replays for the same request with one
        assertThat(parse(",\"ttl\":\"2h\",\"waitSeconds\":30").requestHash()).isEqualTo(parse("").requestHash())
                .isEqualTo(Hashes.requestHash("runner", "", WG, "amd64"));
    }

    @ParameterizedTest
    @ValueSource(strings = {",\"ttl\":7200", ",\"ttl\":true", ",\"ttl\":{}", ",\"ttl\":[\"2h\"]", ",\"ttl\":\"2 hours\"",
        ",\"ttl\":\"h\""})
    void unparsableOrNonStringTtlIs400(String extra) {
        assertThat(error(extra)).isEqualTo("ttl must be a duration string such as \"30m\" or \"2h\"");
    }

    @ParameterizedTest
    @ValueSource(strings = {",\"ttl\":\"0s\"", ",\"ttl\":\"0\"", ",\"ttl\":\"-5m\""})
    void zeroOrNegativeTtlIs400(String extra) {
        // what to send instead, as every 400 says
        assertThat(error(extra)).isEqualTo("ttl must be greater than 0: send how long the allocation should last,"
                + " such as \"30m\" or \"2h\" (at least 1s)");
    }

    @ParameterizedTest
    @ValueSource(strings = {",\"ttl\":\"500ms\"", ",\"ttl\":\"1ns\"", ",\"ttl\":\"999ms\"", ",\"ttl\":\"0.5s\""})
    void ttlUnderOneSecondIs400(String extra) {
        // expiry is kept in whole seconds: a shorter ttl would expire at the claim itself
        // what is wrong, then what to send
        assertThat(error(extra)).isEqualTo("ttl must be at least 1s (expiry is kept in whole seconds): send how long"
                + " the allocation should last, such as \"30m\" or \"2h\"");
    }

    @Test
    void oneSecondIsTheLeastTtl() {
        assertThat(parse(",\"ttl\":\"1s\"").ttl()).isEqualTo(Duration.ofSeconds(1));
        assertThat(parse(",\"ttl\":\"1000ms\"").ttl()).isEqualTo(Duration.ofSeconds(1));
    }

    @Test
    void ttlAboveTheMaximumIs400() {
        String over = "ttl must not exceed 24h0m0s (--playpen-max-ttl): ask for 24h0m0s or less, and renew the"
                + " allocation (POST .../renewals) before it expires to keep it longer";
        assertThat(error(",\"ttl\":\"24h0m1s\"")).isEqualTo(over);
        // beyond what a Go duration holds (about 292 years): not a duration at all, as Go's time.ParseDuration says
        assertThat(error(",\"ttl\":\"9999999999999h\"")).isEqualTo(AllocRequestParser.BAD_TTL);
        // with a lifetime cap, renewals keep it no longer than that: the message says how long
        AllocRequestParser capped = new AllocRequestParser(List.of("v1.33.0"),
                new LeaseLimits(Duration.ofHours(2), Duration.ofHours(8), 120));
        assertThatThrownBy(() -> capped.checkTtl("3h")).isInstanceOf(ApiException.class).hasMessage(
                "ttl must not exceed 2h0m0s (--playpen-max-ttl): ask for 2h0m0s or less, and renew the allocation"
                        + " (POST .../renewals) before it expires to keep it longer, up to 8h0m0s after its claim"
                        + " (--playpen-max-lifetime)");
    }

    @ParameterizedTest
    @ValueSource(strings = {",\"waitSeconds\":-1", ",\"waitSeconds\":121", ",\"waitSeconds\":1.5", ",\"waitSeconds\":5.0",
        ",\"waitSeconds\":true", ",\"waitSeconds\":99999999999999999999999",
        ",\"waitSeconds\":[1]"})
    void badWaitSecondsIs400(String extra) {
        assertThat(error(extra)).isEqualTo("waitSeconds must be an integer from 0 to 120 (--max-wait)");
    }

    /** Every other field is a string: a waitSeconds sent as one is told that the quotes are what is wrong. */
    @Test
    void waitSecondsSentAsAStringSaysToSendANumber() {
        assertThat(error(",\"waitSeconds\":\"30\"")).isEqualTo("waitSeconds must be a JSON number, not a string: send"
                + " \"waitSeconds\": 30 (from 0 to 120, --max-wait)");
        assertThat(error(",\"waitSeconds\":\"soon\"")).isEqualTo("waitSeconds must be a JSON number, not a string:"
                + " send \"waitSeconds\": <seconds> (from 0 to 120, --max-wait)");
        AllocRequestParser off = new AllocRequestParser(List.of("v1.33.0"),
                new LeaseLimits(Duration.ofHours(24), Duration.ZERO, 0));
        String body = "{\"idempotencyKey\":\"k\",\"wireGuardPublicKey\":\"" + WG + "\",\"waitSeconds\":\"0\"}";
        assertThatThrownBy(() -> off.parseAlloc(body.getBytes(StandardCharsets.UTF_8), null))
                .isInstanceOf(ApiException.class).hasMessage(AllocRequestParser.WAITING_OFF
                        + " (waitSeconds is a JSON number, not a string: send it as a number or leave it out)");
    }

    /** With waiting off (--max-wait=0) the 400 says so, and what to send instead, not "from 0 to 0". */
    @Test
    void waitSecondsWhileWaitingIsOffIs400ThatSaysSo() {
        AllocRequestParser off = new AllocRequestParser(List.of("v1.33.0"),
                new LeaseLimits(Duration.ofHours(24), Duration.ZERO, 0));
        String body = "{\"idempotencyKey\":\"k\",\"wireGuardPublicKey\":\"" + WG + "\",\"waitSeconds\":30}";
        assertThatThrownBy(() -> off.parseAlloc(body.getBytes(StandardCharsets.UTF_8), null))
                .isInstanceOf(ApiException.class).hasMessage("waitSeconds must be 0 or left out: this operator does"
                        + " not wait for capacity (--max-wait is 0); send the request without it, and again after"
                        + " the Retry-After of its 503 should no pod be free");
        String zero = "{\"idempotencyKey\":\"k\",\"wireGuardPublicKey\":\"" + WG + "\",\"waitSeconds\":0}";
        assertThat(off.parseAlloc(zero.getBytes(StandardCharsets.UTF_8), null).waitSeconds()).isZero();
    }

    @Test
    void theReferenceFieldsAreStillCheckedFirst() {
        String body = "{\"idempotencyKey\":\"k\",\"wireGuardPublicKey\":\"bad\",\"ttl\":5}";
        assertThatThrownBy(() -> PARSER.parseAlloc(body.getBytes(StandardCharsets.UTF_8), null))
                .hasMessage(AllocRequestParserTest.badKey("is 3 characters long"));
        String typeError = "{\"idempotencyKey\":\"k\",\"architecture\":1,\"ttl\":5}";
        assertThatThrownBy(() -> PARSER.parseAlloc(typeError.getBytes(StandardCharsets.UTF_8), null))
                .hasMessage(AllocRequestParser.invalidJsonMessage("field \"architecture\" is a number, not a string",
                        AllocRequestParser.ALLOC_SHAPE));
    }

    static Pod claimed(String claimedAt, String expiresAt) {
        PodBuilder b = new PodBuilder(TestPods.claimed(TestPods.runner("amd64", 51820), claimedAt));
        if (expiresAt != null) {
            b.editMetadata().addToAnnotations(PlaypenKeys.EXPIRES_AT, expiresAt).endMetadata();
        }
        return b.build();
    }

    @Test
    void expiresAtWinsOverClaimedAtPlusTtlAndWorksWithTheDefaultDisabled() {
        TtlPolicy hour = new TtlPolicy(Duration.ofHours(1));
        TtlPolicy off = new TtlPolicy(Duration.ZERO);
        Pod reference = claimed("2026-01-01T00:00:00Z", null);
        Pod ours = claimed("2026-01-01T00:00:00Z", "2026-01-01T03:00:00Z");
        assertThat(hour.expiresAt(reference)).contains(Instant.parse("2026-01-01T01:00:00Z"));
        assertThat(hour.expiresAt(ours)).contains(Instant.parse("2026-01-01T03:00:00Z"));
        assertThat(off.expiresAt(reference)).isEmpty();
        assertThat(off.expiresAt(ours)).contains(Instant.parse("2026-01-01T03:00:00Z"));
        assertThat(off.isExpired(ours, Instant.parse("2026-01-01T03:00:00Z"))).isTrue();
        assertThat(off.isExpired(ours, Instant.parse("2026-01-01T02:59:59Z"))).isFalse();
        // an unusable expires-at falls back to the reference's rule
        assertThat(hour.expiresAt(claimed("2026-01-01T00:00:00Z", "soon"))).contains(Instant.parse("2026-01-01T01:00:00Z"));
    }

    @ParameterizedTest
    @CsvSource({
        // default ttl, max lifetime, requested, expected expiry (claimed at 2026-01-01T00:00:00.700Z)
        "1h, 0, , 2026-01-01T01:00:00Z",
        "1h, 0, 2h, 2026-01-01T02:00:00Z",
        "1h, 90m, 2h, 2026-01-01T01:30:00Z",
        "0s, 0, 30m, 2026-01-01T00:30:00Z",
        "0s, 0, , none",
        // no default ttl, but a cap: the allocation does not outlive it
        "0s, 8h, , 2026-01-01T08:00:00Z"})
    void theClaimWritesItsExpiry(String ttl, String maxLifetime, String requested, String expected) {
        TtlPolicy p = new TtlPolicy(io.unboundedcloud.playpen.config.GoDuration.parse(ttl),
                io.unboundedcloud.playpen.config.GoDuration.parse(maxLifetime));
        var at = p.claimExpiry(Instant.parse("2026-01-01T00:00:00.700Z"),
                requested == null ? null : io.unboundedcloud.playpen.config.GoDuration.parse(requested));
        assertThat(at.map(TtlPolicy::formatClaimedAt).orElse("none")).isEqualTo(expected);
    }

    @Test
    void renewalsOnlyExtendAndStopAtTheMaximumLifetime() {
        TtlPolicy p = new TtlPolicy(Duration.ofHours(1), Duration.ofHours(5));
        Pod pod = claimed("2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z");
        Instant now = Instant.parse("2026-01-01T00:30:00.400Z");
        assertThat(p.renewedExpiry(pod, now, Duration.ofHours(2))).isEqualTo(Instant.parse("2026-01-01T02:30:00Z"));
        // asking for less than is left keeps the current expiry (so racing renewals end with the later one)
        assertThat(p.renewedExpiry(pod, now, Duration.ofMinutes(10))).isEqualTo(Instant.parse("2026-01-01T01:00:00Z"));
        assertThat(p.renewedExpiry(pod, now, Duration.ofHours(24))).isEqualTo(Instant.parse("2026-01-01T05:00:00Z"));
        assertThat(p.maxExpiresAt(pod)).contains(Instant.parse("2026-01-01T05:00:00Z"));
        assertThat(new TtlPolicy(Duration.ofHours(1)).maxExpiresAt(pod)).isEmpty();
    }
    @Test
    void withoutAClaimedAtARenewalCannotGetPastTheMaximumLifetime() {
        // a claim edited by hand to keep its expires-at but lose its claimed-at: its lifetime cannot be measured,
        // so a renewal must not move it at all, or renewing again and again would keep it forever
        TtlPolicy p = new TtlPolicy(Duration.ofHours(1), Duration.ofHours(5));
        Pod pod = claimed(null, "2026-01-01T01:00:00Z");
        Instant now = Instant.parse("2026-01-01T00:30:00Z");
        assertThat(p.renewedExpiry(pod, now, Duration.ofHours(24))).isEqualTo(Instant.parse("2026-01-01T01:00:00Z"));
        assertThat(p.maxExpiresAt(pod)).contains(Instant.parse("2026-01-01T01:00:00Z"));
        // without a cap there is nothing to exceed: the renewal extends as usual
        assertThat(new TtlPolicy(Duration.ofHours(1)).renewedExpiry(pod, now, Duration.ofHours(2)))
                .isEqualTo(Instant.parse("2026-01-01T02:30:00Z"));
    }
}
