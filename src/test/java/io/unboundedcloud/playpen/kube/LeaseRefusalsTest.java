package io.unboundedcloud.playpen.kube;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.api.model.coordination.v1.LeaseBuilder;

/**
 * What a replica that does not lead takes from the leader Lease: the refused creates the replica holding it published,
 * while its hold lasts; never those of an earlier holder, nor of one that stopped renewing.
 */
class LeaseRefusalsTest {
    static final Instant NOW = Instant.parse("2026-01-02T03:04:05Z");
    static final LeaseRefusals.Refusal REFUSED = new LeaseRefusals.Refusal(2, 403,
            "pods \"playpen-runner-amd64-51820\" is forbidden: exceeded quota: pods", NOW.plusSeconds(4));

    static Lease lease(String holder, Instant renewed, String annotation) {
        return new LeaseBuilder().withNewMetadata().withNamespace("playpen-system").withName("playpen-operator")
                .addToAnnotations(LeaseRefusals.ANNOTATION, annotation).endMetadata()
                .withNewSpec().withHolderIdentity(holder).withLeaseDurationSeconds(15)
                .withRenewTime(renewed.atZone(ZoneOffset.UTC)).endSpec().build();
    }

    @Test
    void theHoldersOwnRefusalsAreShownWithWhatToCheckAndWhoPublishedThem() {
        String published = LeaseRefusals.encode("replica-a", Map.of("runner-amd64", REFUSED));
        LeaseRefusals.Published p = LeaseRefusals.decode(lease("replica-a", NOW.minusSeconds(2), published), NOW);
        assertThat(p.pools()).containsOnly(Map.entry("runner-amd64", REFUSED));
        LeaseRefusals reader = new LeaseRefusals(null, "playpen-system", "playpen-operator", "playpen",
                new ApiCallCounter());
        assertThat(reader.condition(p, "runner-amd64", NOW)).isEqualTo("the API server refused the last 2 pod creates"
                + " in a row of pool runner-amd64 with HTTP 403 (pods \"playpen-runner-amd64-51820\" is forbidden: "
                + "exceeded quota: pods); the pool creates no pod until one succeeds, trying again in 4 s; check "
                + "ResourceQuota and admission webhooks in namespace playpen, and the pod template flags (each one "
                + "is a Warning Event CreateRefused on the operator); the leader replica-a publishes this on Lease "
                + "playpen-system/playpen-operator");
        assertThat(reader.condition(p, "runner-arm64", NOW)).as("a pool whose creates are not refused").isNull();
    }

    @Test
    void refusalsOfAnEarlierHolderAreNotShown() {
        // the Lease taken by a replica that does not write them (an older version, the Go operator): the annotation
        // is the earlier holder's
        String published = LeaseRefusals.encode("replica-a", Map.of("runner-amd64", REFUSED));
        assertThat(LeaseRefusals.decode(lease("replica-b", NOW.minusSeconds(2), published), NOW).pools()).isEmpty();
    }

    @Test
    void refusalsOfAHolderThatStoppedRenewingAreNotShown() {
        String published = LeaseRefusals.encode("replica-a", Map.of("runner-amd64", REFUSED));
        assertThat(LeaseRefusals.decode(lease("replica-a", NOW.minusSeconds(15), published), NOW).pools())
                .as("the hold ran out as the read was made").isEmpty();
        assertThat(LeaseRefusals.decode(lease("replica-a", NOW.minusSeconds(14), published), NOW).pools())
                .as("a second of the hold left").hasSize(1);
    }

    @Test
    void anAnnotationThatCannotBeReadShowsNothing() {
        assertThat(LeaseRefusals.decode(lease("replica-a", NOW, "{\"holder\":\"replica-a\",\"pools\":{\"x\":{}}}"),
                NOW).pools()).isEmpty();
        assertThat(LeaseRefusals.decode(lease("replica-a", NOW, "not json"), NOW).pools()).isEmpty();
        assertThat(LeaseRefusals.decode(null, NOW).pools()).isEmpty();
    }
}
