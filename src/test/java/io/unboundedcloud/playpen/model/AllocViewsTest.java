package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;

/** Alloc objects from pods, owner filtering, expiry (annotation first, then the TTL), list options and Table cells. */
class AllocViewsTest {
    static final Instant CLAIMED = Instant.parse("2026-01-02T03:04:05Z");

    static Pod claimed(String name, String owner, String expiresAt) {
        PodBuilder b = new PodBuilder().withNewMetadata().withName(name).withNamespace("playpen").withUid("uid-" + name)
                .withResourceVersion("7")
                .addToLabels(PlaypenKeys.APP_NAME, PlaypenKeys.RUNNER_APP_NAME)
                .addToLabels(PlaypenKeys.APP_COMPONENT, PlaypenKeys.RUNNER_COMPONENT)
                .addToLabels(PlaypenKeys.RESOURCE_TYPE, "runner").addToLabels(PlaypenKeys.ARCHITECTURE, "arm64")
                .addToLabels(PlaypenKeys.HOST_PORT, "51821")
                .addToLabels(PlaypenKeys.ALLOCATED, Hashes.allocationId("playpen", name))
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, Hashes.keyHash("k-" + name))
                .addToAnnotations(PlaypenKeys.CLAIMED_AT, CLAIMED.toString())
                .addToAnnotations(PlaypenKeys.OWNER_HASH, Hashes.ownerHash(owner))
                .endMetadata().withNewSpec().withNodeName("n1").endSpec();
        if (expiresAt != null) {
            b.editMetadata().addToAnnotations(PlaypenKeys.EXPIRES_AT, expiresAt).endMetadata();
        }
        return b.build();
    }

    static final java.util.function.Function<String, Optional<String>> IP = n -> Optional.of("198.51.100.7");
    /** Leases of no default TTL, and of a one-hour one (no maximum lifetime). */
    static final TtlPolicy NO_TTL = new TtlPolicy(Duration.ZERO);
    static final TtlPolicy HOUR_TTL = new TtlPolicy(Duration.ofHours(1));

    @Test
    void objectCarriesSpecStatusAndNeverTheKey() {
        Pod p = claimed("playpen-runner-arm64-51821", "alice", null);
        AllocViews.Alloc a = AllocViews.of(p, IP, HOUR_TTL).orElseThrow();
        Map<String, Object> o = AllocViews.object(a);
        assertThat(o.toString()).isEqualTo("{apiVersion=playpen.unbounded-cloud.io/v1alpha1, kind=Alloc, metadata={name="
                + Hashes.allocationId("playpen", "playpen-runner-arm64-51821") + ", uid=uid-playpen-runner-arm64-51821, "
                + "resourceVersion=7, creationTimestamp=2026-01-02T03:04:05Z}, spec={resourceType=runner, "
                + "architecture=arm64}, status={pod=playpen-runner-arm64-51821, node=n1, endpoint=198.51.100.7:51821, "
                + "claimedAt=2026-01-02T03:04:05Z, expiresAt=2026-01-02T04:04:05Z}}");
        assertThat(o.toString()).doesNotContain(Hashes.keyHash("k-playpen-runner-arm64-51821"));
    }

    /** An IPv6 ExternalIP goes in brackets in status.endpoint, as in the answer's URLs: else the port reads as part of it. */
    @Test
    void endpointOnAnIpv6NodeBracketsTheAddress() {
        Pod p = claimed("playpen-runner-arm64-51821", "alice", null);
        AllocViews.Alloc a = AllocViews.of(p, n -> Optional.of("2001:db8::10"), HOUR_TTL).orElseThrow();
        assertThat(a.endpoint()).isEqualTo("[2001:db8::10]:51821");
        assertThat(java.net.URI.create("udp://" + a.endpoint()).getPort()).isEqualTo(51821);
        assertThat(AllocViews.of(p, IP, HOUR_TTL).orElseThrow().endpoint()).isEqualTo("198.51.100.7:51821");
    }

    @Test
    void expiresAtAnnotationWinsOverTheTtlAndNoTtlMeansNone() {
        Pod renewed = claimed("p1", "alice", "2026-01-02T09:00:00Z");
        assertThat(AllocViews.of(renewed, IP, HOUR_TTL).orElseThrow().expiresAt())
                .isEqualTo(Instant.parse("2026-01-02T09:00:00Z"));
        Pod bad = claimed("p2", "alice", "tomorrow");
        assertThat(AllocViews.of(bad, IP, HOUR_TTL).orElseThrow().expiresAt())
                .isEqualTo(CLAIMED.plus(Duration.ofHours(1)));
        assertThat(AllocViews.of(claimed("p3", "alice", null), IP, NO_TTL).orElseThrow().expiresAt()).isNull();
    }

    /** kubectl get allocs shows the expiry the operator keeps: a claim without expires-at ends at the lifetime cap. */
    @Test
    void aClaimWithoutExpiresAtShowsTheLifetimeCap() {
        Pod bare = claimed("p4", "alice", null);
        assertThat(AllocViews.of(bare, IP, new TtlPolicy(Duration.ZERO, Duration.ofHours(8))).orElseThrow().expiresAt())
                .isEqualTo(CLAIMED.plus(Duration.ofHours(8)));
        assertThat(AllocViews.of(bare, IP, NO_TTL).orElseThrow().expiresAt()).isNull();
    }

    @Test
    void idleAndUnlabelledPodsAreNoAllocations() {
        Pod idle = new PodBuilder(claimed("p1", "a", null)).editMetadata().removeFromAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH)
                .endMetadata().build();
        Pod noLabel = new PodBuilder(claimed("p3", "a", null)).editMetadata().removeFromLabels(PlaypenKeys.ALLOCATED)
                .endMetadata().build();
        for (Pod p : List.of(idle, noLabel)) {
            assertThat(AllocViews.of(p, IP, NO_TTL)).as(p.getMetadata().getName()).isEmpty();
        }
    }

    /**
     * A claimed pod being deleted is still its allocation until it is gone, with the deletionTimestamp in whole
     * seconds, as kube-apiserver shows an object being deleted; one not being deleted has none.
     */
    @Test
    void aPodBeingDeletedIsAnAllocationWithItsDeletionTimestamp() {
        Pod terminating = new PodBuilder(claimed("p2", "a", null)).editMetadata()
                .withDeletionTimestamp("2026-01-02T05:00:00.250Z").endMetadata().build();
        AllocViews.Alloc a = AllocViews.of(terminating, IP, NO_TTL).orElseThrow();
        assertThat(a.deletionTimestamp()).isEqualTo(Instant.parse("2026-01-02T05:00:00Z"));
        assertThat(AllocViews.object(a)).extractingByKey("metadata").asInstanceOf(
                org.assertj.core.api.InstanceOfAssertFactories.MAP).containsEntry("deletionTimestamp",
                        "2026-01-02T05:00:00Z");
        AllocViews.Alloc live = AllocViews.of(claimed("p1", "a", null), IP, NO_TTL).orElseThrow();
        assertThat(live.deletionTimestamp()).isNull();
        assertThat(AllocViews.object(live)).extractingByKey("metadata").asInstanceOf(
                org.assertj.core.api.InstanceOfAssertFactories.MAP).doesNotContainKey("deletionTimestamp");
    }

    @Test
    void selectFiltersByOwnerNameAndPages() {
        List<Pod> pods = List.of(claimed("a1", "alice", null), claimed("a2", "alice", null), claimed("b1", "bob", null));
        AllocViews.Query all = AllocViews.parseQuery(null, "", null);
        assertThat(AllocViews.selectMatching(pods, IP, NO_TTL, Hashes.ownerHash("alice")::equals, all).items())
                .extracting(AllocViews.Alloc::pod).containsExactlyInAnyOrder("a1", "a2");
        assertThat(AllocViews.selectMatching(pods, IP, NO_TTL, null, all).items()).hasSize(3);
        String b1 = Hashes.allocationId("playpen", "b1");
        assertThat(AllocViews.selectMatching(pods, IP, NO_TTL, Hashes.ownerHash("alice")::equals,
                AllocViews.parseQuery(b1, "", null)).items()).isEmpty();
        AllocViews.Page p1 = AllocViews.selectMatching(pods, IP, NO_TTL, null,
                AllocViews.parseQuery(null, "limit=2", null));
        assertThat(p1.items()).hasSize(2);
        AllocViews.Page p2 = AllocViews.selectMatching(pods, IP, NO_TTL, null,
                AllocViews.parseQuery(null, "limit=2&continue=" + p1.continueToken(), null));
        assertThat(p2.items()).hasSize(1);
        assertThat(p2.continueToken()).isEmpty();
        assertThat(p2.items().get(0).name()).isGreaterThan(p1.items().get(1).name());
        assertThat(AllocViews.selectMatching(pods, IP, NO_TTL, null,
                AllocViews.parseQuery(null, "fieldSelector=metadata.name!%3D" + b1, null)).items()).hasSize(2);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "limit=-5|invalid value for limit: \"-5\": must be a non-negative 64-bit integer",
            "limit=9223372036854775808|invalid value for limit: \"9223372036854775808\": must be a non-negative 64-bit integer",
            "continue=abc|invalid continue token: it is not one this server returned for allocs; list them again without continue (kubectl get allocs starts from the first page itself)",
            "fieldSelector=status.pod%3Dx|field label not supported: \"status.pod\" (allocs support metadata.name only)",
            "fieldSelector=metadata.name|invalid fieldSelector: \"metadata.name\": each term must be key=value, key==value or key!=value",
            "includeObject=Everything|invalid value for includeObject: \"Everything\": must be None, Metadata or Object",
            "limit=%zz|malformed query: invalid URL escape (a % not followed by two hexadecimal digits); write % itself as %25",
    })
    void badOptionsAreRefusedWithTheReason(String query, String message) {
        assertThatThrownBy(() -> AllocViews.parseQuery(null, query, null)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
    }

    /**
     * A continue token this server never gave for allocs (kube-apiserver's, another list's, or a damaged one) is a
     * 400 that says what to do: page again from the start.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({
            // kube-apiserver's own form: {"v":"meta.k8s.io/v1","rv":123,"start":"x"}
            "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzLCJzdGFydCI6IngifQ",
            // a pool's name where an allocation id belongs
            "YWxsb2M6cnVubmVyLWFtZDY0",
            "%21%21",
    })
    void aForeignContinueTokenSaysToListAgainWithoutIt(String token) {
        assertThatThrownBy(() -> AllocViews.parseQuery(null, "limit=1&continue=" + token, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("invalid continue token: it is not one this server returned for allocs; list them again "
                        + "without continue (kubectl get allocs starts from the first page itself)");
    }

    @Test
    void oversizedOptionsAreRefusedBeforeParsing() {
        assertThatThrownBy(() -> AllocViews.parseQuery(null, "labelSelector=" + "a".repeat(1025), null))
                .hasMessage("query parameter \"labelSelector\" is too long: 1025 characters, at most 1024");
    }

    @Test
    void tableOnlyWhenAskedForMetaV1OrV1beta1() {
        assertThat(AllocViews.tableVersion("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;"
                + "v=v1beta1;g=meta.k8s.io,application/json")).isEqualTo("v1");
        assertThat(AllocViews.tableVersion("application/json;as=Table;v=v1beta1;g=meta.k8s.io")).isEqualTo("v1beta1");
        assertThat(AllocViews.tableVersion("application/json")).isNull();
        assertThat(AllocViews.tableVersion(null)).isNull();
        assertThat(AllocViews.tableVersion("application/json;as=Table;v=v1;g=other.io")).isNull();
    }

    @Test
    void tableCellsAndColumns() {
        AllocViews.Alloc a = AllocViews.of(claimed("p1", "alice", null), IP, HOUR_TTL).orElseThrow();
        AllocViews.Page page = new AllocViews.Page(List.of(a), "");
        AllocViews.Query q = AllocViews.parseQuery(null, "includeObject=None", "application/json;as=Table;v=v1;g=meta.k8s.io");
        Map<String, Object> t = AllocViews.table(page, q, CLAIMED.plusSeconds(125));
        assertThat(t.get("rows").toString()).isEqualTo("[{cells=[" + a.name()
                + ", runner, arm64, <none>, p1, 2m5s, 57m, n1, 198.51.100.7:51821]}]");
        assertThat(AllocViews.expires(CLAIMED, CLAIMED.plusSeconds(1))).isEqualTo("expired");
        assertThat(AllocViews.expires(null, CLAIMED)).isEqualTo("<none>");
    }

    @ParameterizedTest
    @CsvSource({"0,0s", "119,119s", "120,2m", "125,2m5s", "600,10m", "10799,179m", "10800,3h", "10860,3h1m",
            "28800,8h", "172800,2d", "176400,2d1h", "691200,8d", "63072000,2y", "63158400,2y1d", "252288000,8y"})
    void humanDurationIsKubernetes(long seconds, String expected) {
        assertThat(AllocViews.humanDuration(Duration.ofSeconds(seconds))).isEqualTo(expected);
    }
}
