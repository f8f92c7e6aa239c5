package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.Pod;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** List options of the allocs resource: limit, label selectors on objects without labels, includeObject, query parsing. */
class AllocViewsQueryTest {
    private static final List<Pod> PODS = List.of(AllocViewsTest.claimed("p3", "alice", null),
            AllocViewsTest.claimed("p1", "alice", null), AllocViewsTest.claimed("p2", "alice", null));

    private static List<String> podsOf(String rawQuery) {
        AllocViews.Query q = AllocViews.parseQuery(null, rawQuery, null);
        return AllocViews.selectMatching(PODS, AllocViewsTest.IP, AllocViewsTest.NO_TTL, null, q).items().stream()
                .map(AllocViews.Alloc::pod).toList();
    }

    private static List<String> namesSorted() {
        return PODS.stream().map(p -> Hashes.allocationId("playpen", p.getMetadata().getName())).sorted().toList();
    }

    @Test
    void itemsComeSortedByNameWhateverThePodOrder() {
        List<String> names = AllocViews.selectMatching(PODS, AllocViewsTest.IP, AllocViewsTest.NO_TTL, null,
                AllocViews.parseQuery(null, "", null)).items().stream().map(AllocViews.Alloc::name).toList();
        assertThat(names).isEqualTo(namesSorted());
    }

    @Test
    void limitZeroMeansNoLimit() {
        assertThat(podsOf("limit=0")).hasSize(3);
        assertThat(podsOf("limit=3")).hasSize(3);
        assertThat(podsOf("limit=2")).hasSize(2);
    }

    @Test
    void aPageThatHoldsEverythingLeftHasNoContinueToken() {
        AllocViews.Query exact = AllocViews.parseQuery(null, "limit=3", null);
        assertThat(AllocViews.selectMatching(PODS, AllocViewsTest.IP, AllocViewsTest.NO_TTL, null, exact).continueToken())
                .isEmpty();
        AllocViews.Query shorter = AllocViews.parseQuery(null, "limit=2", null);
        assertThat(AllocViews.selectMatching(PODS, AllocViewsTest.IP, AllocViewsTest.NO_TTL, null, shorter).continueToken())
                .isNotEmpty();
    }

    @Test
    void aTableIsAskedForInTheAcceptHeader() {
        AllocViews.Query table = AllocViews.parseQuery(null, "", "application/json;as=Table;v=v1;g=meta.k8s.io");
        assertThat(table.table()).isTrue();
        assertThat(table.tableVersion()).isEqualTo("v1");
        AllocViews.Query plain = AllocViews.parseQuery(null, "", "application/json");
        assertThat(plain.table()).isFalse();
        assertThat(plain.tableVersion()).isNull();
    }

    @Test
    void aNegativeOrNonNumericLimitIsRefused() {
        assertThatThrownBy(() -> AllocViews.parseQuery(null, "limit=-1", null))
                .hasMessage("invalid value for limit: \"-1\": must be a non-negative 64-bit integer");
        assertThatThrownBy(() -> AllocViews.parseQuery(null, "limit=ten", null))
                .hasMessage("invalid value for limit: \"ten\": must be a non-negative 64-bit integer");
    }

    @Test
    void allocsHaveNoLabelsSoOnlySelectorsThatMatchAnEmptyLabelSetSelectThem() {
        assertThat(podsOf("labelSelector=team%3Dblue")).isEmpty();
        assertThat(podsOf("labelSelector=team")).isEmpty();
        assertThat(podsOf("labelSelector=%21team")).hasSize(3);
        assertThat(podsOf("labelSelector=team%21%3Dblue")).hasSize(3);
    }

    @Test
    void includeObjectDefaultsToMetadataAndTakesOnlyTheKnownValues() {
        assertThat(AllocViews.parseQuery(null, "", null).includeObject()).isEqualTo("Metadata");
        assertThat(AllocViews.parseQuery(null, "includeObject=", null).includeObject()).isEqualTo("Metadata");
        for (String v : List.of("None", "Metadata", "Object")) {
            assertThat(AllocViews.parseQuery(null, "includeObject=" + v, null).includeObject()).isEqualTo(v);
        }
        assertThatThrownBy(() -> AllocViews.parseQuery(null, "includeObject=All", null))
                .hasMessage("invalid value for includeObject: \"All\": must be None, Metadata or Object");
    }

    @Test
    void queryParametersSplitAtTheFirstEqualsSign() {
        assertThat(AllocViews.params("=v&a=1=2&flag&&b=%41")).containsExactly(Map.entry("", "v"), Map.entry("a", "1=2"),
                Map.entry("flag", ""), Map.entry("b", "A"));
        assertThat(AllocViews.params(null)).isEmpty();
        assertThat(AllocViews.params("")).isEmpty();
    }

    @Test
    void aValueOfTheMaximumLengthIsAcceptedAndOneMoreIsNot() {
        String max = "x".repeat(AllocViews.MAX_OPTION_CHARS);
        assertThat(AllocViews.params("fieldSelector=" + max)).containsEntry("fieldSelector", max);
        assertThatThrownBy(() -> AllocViews.params("fieldSelector=" + max + "x"))
                .hasMessage("query parameter \"fieldSelector\" is too long: " + (AllocViews.MAX_OPTION_CHARS + 1)
                        + " characters, at most " + AllocViews.MAX_OPTION_CHARS);
    }

    @Test
    void quoteShortCutsAfterSixtyFourCharacters() {
        String s64 = "a".repeat(64);
        assertThat(AllocViews.quoteShort(s64)).isEqualTo("\"" + s64 + "\"");
        assertThat(AllocViews.quoteShort(s64 + "b")).isEqualTo("\"" + s64 + "...\"");
        assertThat(AllocViews.quoteShort("a\"b\\c\nd")).isEqualTo("\"a?b?c?d\"");
    }

    @Test
    void validNamesAreSixteenLowercaseHexCharacters() {
        assertThat(AllocViews.validName("0123456789abcdef")).isTrue();
        assertThat(AllocViews.validName("0123456789ABCDEF")).isFalse();
        assertThat(AllocViews.validName("0123456789abcde")).isFalse();
        assertThat(AllocViews.validName("0123456789abcdefa")).isFalse();
        assertThat(AllocViews.validName("0123456789abcdeg")).isFalse();
        assertThat(AllocViews.validName(null)).isFalse();
    }

    @Test
    void aListCarriesItsContinueTokenOnlyWhenThereIsOne() {
        AllocViews.Alloc a = AllocViews.of(PODS.get(0), AllocViewsTest.IP, AllocViewsTest.NO_TTL).orElseThrow();
        Map<String, Object> last = AllocViews.list(new AllocViews.Page(List.of(a), ""));
        assertThat(last.get("apiVersion")).isEqualTo(PlaypenKeys.GROUP_VERSION);
        assertThat(last.get("kind")).isEqualTo("AllocList");
        assertThat(last.get("metadata")).isEqualTo(Map.of("resourceVersion", ""));
        assertThat(last.get("items")).isEqualTo(List.of(AllocViews.object(a)));
        Map<String, Object> more = AllocViews.list(new AllocViews.Page(List.of(a), "tok"));
        assertThat(more.get("metadata")).isEqualTo(Map.of("resourceVersion", "", "continue", "tok"));
    }

    private static List<io.unboundedcloud.playpen.api.Status.Cause> watchCauses(String rawQuery) {
        try {
            AllocViews.parseQuery(null, rawQuery, null);
        } catch (io.unboundedcloud.playpen.api.ApiException e) {
            assertThat(e.code()).as(rawQuery).isEqualTo(422);
            return e.details().causes();
        }
        throw new AssertionError("no 422 for " + rawQuery);
    }

    /** A watch's bad options are refused with the causes kube-apiserver's check of a watch's options gives. */
    @Test
    void watchOptionCausesAreKubeApiserversWords() {
        var forbiddenMatch = new io.unboundedcloud.playpen.api.Status.Cause("FieldValueForbidden",
                "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan", "resourceVersionMatch");
        assertThat(watchCauses("watch=1&sendInitialEvents=true&allowWatchBookmarks=true"))
                .containsExactly(forbiddenMatch);
        assertThat(watchCauses("watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=Exact"))
                .containsExactly(forbiddenMatch, new io.unboundedcloud.playpen.api.Status.Cause("FieldValueNotSupported",
                        "Unsupported value: \"Exact\": supported values: \"NotOlderThan\"", "resourceVersionMatch"));
        assertThat(watchCauses("watch=1&resourceVersionMatch=NotOlderThan&continue="
                + AllocViews.encodeContinue(namesSorted().get(0)))).containsExactly(
                new io.unboundedcloud.playpen.api.Status.Cause("FieldValueForbidden",
                        "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                        "resourceVersionMatch"),
                new io.unboundedcloud.playpen.api.Status.Cause("FieldValueForbidden",
                        "Forbidden: resourceVersionMatch is forbidden when continue is provided", "resourceVersionMatch"));
    }
}
