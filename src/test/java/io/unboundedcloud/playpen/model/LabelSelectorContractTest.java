package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The selector as a value: the everything selector, built equality selectors, equality, Gt/Lt edges, key limits. */
class LabelSelectorContractTest {

    @Test
    void everythingMatchesAnyLabelsAndIsEmpty() {
        LabelSelector all = LabelSelector.everything();
        assertThat(all.matches(Map.of("a", "b"))).isTrue();
        assertThat(all.matches(null)).isTrue();
        assertThat(all.isEmpty()).isTrue();
        assertThat(all.toString()).isEmpty();
        assertThat(all).isEqualTo(LabelSelector.parse(" "));
        assertThat(LabelSelector.parse("a").isEmpty()).isFalse();
    }

    @Test
    void equalitySelectorsAreSortedByKeyAndReadLikeTheirParsedForm() {
        Map<String, String> labels = new LinkedHashMap<>();
        labels.put("b", "2");
        labels.put("a", "1");
        LabelSelector s = LabelSelector.equality(labels);
        assertThat(s.toString()).isEqualTo("a=1,b=2");
        assertThat(s.requirements()).extracting(LabelSelector.Requirement::key).containsExactly("a", "b");
        assertThat(s).isEqualTo(LabelSelector.parse("b=2,a=1")).hasSameHashCodeAs(LabelSelector.parse("b=2,a=1"));
        assertThat(s.matches(Map.of("a", "1", "b", "2", "c", "3"))).isTrue();
        assertThat(s.matches(Map.of("a", "1"))).isFalse();
        assertThat(LabelSelector.equality(Map.of("k", "v")).toString()).isEqualTo("k=v");
    }

    @Test
    void selectorsAreEqualByRequirementsNotByText() {
        assertThat(LabelSelector.parse("a=1")).isNotEqualTo(LabelSelector.parse("a=2"));
        assertThat(LabelSelector.parse("a=1")).isNotEqualTo("a=1");
        assertThat(LabelSelector.parse(" a = 1 ")).isEqualTo(LabelSelector.parse("a=1"));
        assertThat(LabelSelector.parse(" a = 1 ").toString()).isEqualTo("a = 1");
    }

    @Test
    void greaterAndLessThanAreStrict() {
        assertThat(LabelSelector.parse("n>5").matches(Map.of("n", "5"))).isFalse();
        assertThat(LabelSelector.parse("n>5").matches(Map.of("n", "6"))).isTrue();
        assertThat(LabelSelector.parse("n<5").matches(Map.of("n", "5"))).isFalse();
        assertThat(LabelSelector.parse("n<5").matches(Map.of("n", "4"))).isTrue();
    }

    @Test
    void greaterAndLessThanTakeSixtyFourBitIntegersOnly() {
        assertThat(LabelSelector.parse("n>9223372036854775807").matches(Map.of("n", "9223372036854775807"))).isFalse();
        assertThat(LabelSelector.parse("n<9223372036854775807").matches(Map.of("n", "-9223372036854775808"))).isTrue();
        for (String tooBig : new String[] {"n>9223372036854775808", "n<99999999999999999999"}) {
            assertThatThrownBy(() -> LabelSelector.parse(tooBig)).as(tooBig)
                    .hasMessageContaining("for 'Gt', 'Lt' operators, the value must be an integer");
        }
    }

    @Test
    void anEmptyValueInASetIsAValue() {
        LabelSelector s = LabelSelector.parse("a in (x,)");
        assertThat(s.matches(Map.of("a", "x"))).isTrue();
        assertThat(s.matches(Map.of("a", ""))).isTrue();
        assertThat(s.matches(Map.of("a", "y"))).isFalse();
    }

    @Test
    void aKeyHasAtMostOneSlash() {
        assertThatThrownBy(() -> LabelSelector.parse("a//b"))
                .hasMessageContaining("a qualified name must consist of an optional prefix and a name separated by one '/'");
        assertThatThrownBy(() -> LabelSelector.parse("a/b/c"))
                .hasMessageContaining("a qualified name must consist of an optional prefix and a name separated by one '/'");
    }

    @Test
    void aKeyPrefixMayHave253Characters() {
        String prefix = "a".repeat(63) + "." + "b".repeat(63) + "." + "c".repeat(63) + "." + "d".repeat(61);
        assertThat(prefix).hasSize(253);
        assertThat(LabelSelector.parse(prefix + "/k").requirements()).hasSize(1);
        assertThatThrownBy(() -> LabelSelector.parse(prefix + "d/k"))
                .hasMessageContaining("prefix part must be a lowercase RFC 1123 subdomain of at most 253 characters");
    }
}
