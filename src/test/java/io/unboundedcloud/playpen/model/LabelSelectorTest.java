package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import io.unboundedcloud.playpen.model.LabelSelector.Op;
import io.unboundedcloud.playpen.model.LabelSelector.Requirement;

/** The selector grammar of apimachinery's labels.Parse: what it accepts, what it refuses, and what matches. */
class LabelSelectorTest {

    /** Selectors labels.Parse accepts (its own TestSelectorParse good strings plus the set-based forms). */
    @ParameterizedTest
    @ValueSource(strings = {
        "", "   ", "x=a,y=b,z=c", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5",
        "x>1,z<5,a!=b", "x in (a)", "x in (a,b)", "x notin (a, b)", "x in ()", "x in (,)", "x in (a,,b)", "x",
        "x,!y", "example.com/x==a", "app.kubernetes.io/name=playpen-runner", "in=a", "notin in (in)",
        "x\tin\n(a)", "x==a,y!=b,z in (c),!w,v"})
    void accepts(String selector) {
        LabelSelector.parse(selector);
    }

    /** Selectors labels.Parse refuses, with the first words of its error. */
    @ParameterizedTest
    @CsvSource(delimiterString = " :: ", value = {
        "x=a||y=b :: unable to parse requirement: values: Invalid value: \"a||y\"",
        "x==a==b :: found '==', expected: ',' or 'end of string'",
        "!x=a :: found '=', expected: ',' or 'end of string'",
        "x<a :: unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer",
        "x>1.5 :: unable to parse requirement: values[0]: Invalid value: \"1.5\"",
        "x in (a :: unable to parse requirement: found '', expected: ',' or ')'",
        "x in a :: unable to parse requirement: found 'a' expected: '('",
        "x in :: unable to parse requirement: found '' expected: '('",
        "x=a b :: found 'b', expected: ',' or 'end of string'",
        "x=a,,y=b :: found ',', expected: identifier after ','",
        "x=a, :: found '', expected: identifier after ','",
        ",x=a :: found ',', expected: !, identifier, or 'end of string'",
        "=a :: found '=', expected: !, identifier, or 'end of string'",
        "x ! y :: unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt",
        "x=(a) :: unable to parse requirement: found '(', expected: identifier",
        "a/b/c=d :: unable to parse requirement: key: Invalid value: \"a/b/c\"",
        "Example.com/x=a :: unable to parse requirement: key: Invalid value: \"Example.com/x\"",
        "/x=a :: unable to parse requirement: key: Invalid value: \"/x\": prefix part must be non-empty",
        "-x=a :: unable to parse requirement: key: Invalid value: \"-x\"",
        "x=-a :: unable to parse requirement: values: Invalid value: \"-a\"",
        "x in (a b) :: unable to parse requirement: found 'b', expected: ',' or ')'",
        "x in (a,=) :: unable to parse requirement: found '=', expected: ',', or identifier",
        "x=a=b :: found '=', expected: ',' or 'end of string'",
        "x=~a :: unable to parse requirement: values: Invalid value: \"~a\""})
    void refuses(String selector, String messageStart) {
        assertThatThrownBy(() -> LabelSelector.parse(selector))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith(messageStart)
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
    }

    @Test
    void lengthLimitsOfKeysAndValues() {
        String key = "k".repeat(64);
        assertThatThrownBy(() -> LabelSelector.parse(key + "=a")).hasMessageContaining("no more than 63 characters");
        assertThatThrownBy(() -> LabelSelector.parse("x=" + "v".repeat(64))).hasMessageContaining("no more than 63 characters");
        LabelSelector.parse("k".repeat(63) + "=" + "v".repeat(63));
        LabelSelector.parse("a".repeat(253) + "/" + "k".repeat(63) + "=a");
        assertThatThrownBy(() -> LabelSelector.parse("a".repeat(254) + "/k=a")).hasMessageContaining("prefix part");
    }

    /** selector | labels (k=v;k=v, '-' = none) | matches */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "''                          | -                 | true",
        "env=prod                    | env=prod          | true",
        "env==prod                   | env=prod          | true",
        "env=prod                    | env=dev           | false",
        "env=prod                    | -                 | false",
        "env=                        | env=              | true",
        "env=                        | -                 | false",
        "env!=prod                   | env=dev           | true",
        "env!=prod                   | -                 | true",
        "env!=prod                   | env=prod          | false",
        "env in (prod, staging)      | env=staging       | true",
        "env in (prod, staging)      | env=dev           | false",
        "env in (prod, staging)      | -                 | false",
        "env notin (prod)            | -                 | true",
        "env notin (prod)            | env=prod          | false",
        "env notin (prod)            | env=dev           | true",
        "env in ()                   | env=              | true",
        "gpu                         | gpu=              | true",
        "gpu                         | -                 | false",
        "!gpu                        | -                 | true",
        "!gpu                        | gpu=a100          | false",
        "size>3                      | size=4            | true",
        "size>3                      | size=3            | false",
        "size>3                      | size=big          | false",
        "size>3                      | -                 | false",
        "size<3                      | size=2            | true",
        "size<3                      | size=-1           | true",
        "' a = b  ,  c != d '        | a=b;c=e           | true",
        "' a = b  ,  c != d '        | a=b;c=d           | false",
        "'a=b,!c,d in (x,y)'         | a=b;d=y           | true",
        "'a=b,!c,d in (x,y)'         | a=b;d=y;c=1       | false"})
    void matches(String selector, String labels, boolean expected) {
        Map<String, String> map = new HashMap<>();
        if (!labels.equals("-")) {
            for (String kv : labels.split(";")) {
                int eq = kv.indexOf('=');
                map.put(kv.substring(0, eq), kv.substring(eq + 1));
            }
        }
        assertThat(LabelSelector.parse(selector).matches(map)).isEqualTo(expected);
    }

    @ParameterizedTest
    @ValueSource(strings = {"b in (y,x,y), a", "a,b in (x,y)"})
    void requirementsAreSortedByKeyWithSortedValues(String selector) {
        assertThat(LabelSelector.parse(selector).requirements()).containsExactly(
                new Requirement("a", Op.EXISTS, List.of()), new Requirement("b", Op.IN, List.of("x", "y")));
    }
}
