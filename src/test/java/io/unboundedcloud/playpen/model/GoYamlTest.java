package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What go-yaml v2 (sigs.k8s.io/yaml, behind client-go's {@code clientcmd.Write}) writes, case by case: the scalar
 * style it picks (plain, single quoted, double quoted, literal block), how it nests block collections and in which
 * order it writes mapping keys. Expected texts follow go-yaml's resolver (what a plain scalar would read back as)
 * and libyaml's scalar analysis, which GoYaml mirrors.
 */
class GoYamlTest {

    private static String value(String s) {
        return GoYaml.scalar(s, 0, false);
    }

    private static String key(String s) {
        return GoYaml.scalar(s, 0, true);
    }

    @ParameterizedTest(name = "[{index}] {0}")
    @ValueSource(strings = {"abc", "a b", "-a", "--for", "--", "?a", ":a", "a:b", "a#b", "a,b", "a[b]{c}", ".a", ".", "+",
        "0xZZ", "1.2.3", "1-2", "v1.33.0", "<<", "=", "a~", "é", "Σ", "\u00a0", "\ud7ff", "\ue000", "\ufffd",
        "2001-1-", "192.168.200.1", "https://127.0.0.1:6443", "e1", "0x", "1e", "+-1", "-_", "true1", "nulls"})
    void plainWhenItReadsBackAsTheSameString(String s) {
        assertThat(value(s)).isEqualTo(s);
        assertThat(key(s)).isEqualTo(s);
    }

    @Test
    void aScalarStartingWithADotIsAFloatWhenGoParsesItAsOne() {
        // strconv.ParseFloat takes underscores between digits, in the fraction and in the exponent
        for (String f : new String[] {".5_0", ".1_2_3", ".5e1_0", ".5E+1_0"}) {
            assertThat(value(f)).as(f).isEqualTo("\"" + f + "\"");
        }
        // and nothing else: an underscore at an end or next to another, or a dot without a digit after it
        for (String s : new String[] {".5_", "._5", ".5__0", ".5e_1", ".5e1_", ".e5", ".5e"}) {
            assertThat(value(s)).as(s).isEqualTo(s);
        }
    }

    @ParameterizedTest(name = "[{index}] {0}")
    @ValueSource(strings = {"", "~", "null", "Null", "NULL", "y", "Y", "yes", "n", "NO", "true", "False", "on", "OFF",
        ".nan", ".inf", "-.Inf", "+.INF",
        "0", "1", "+1", "-1", "0644", "08", "0x1F", "-0x1f", "0X1F", "0o17", "0O17", "0b101", "-0b101", "0B1", "1_000",
        "1e3", "1E3", "1e+3", "-1.5", "1.", "1.e3", ".5", "-.5", "+.5e-3", "99999999999999999999",
        "1:20", "-1:20", "190:20:30", "1:2", "1:20.5",
        "2001-12-14", "2001-1-2", "2001-12-14t21:59:43.10-05:00", "2001-12-14T21:59:43Z", "2001-12-14 21:59:43.10"})
    void doubleQuotedWhenAPlainScalarWouldReadBackAsAnotherType(String s) {
        assertThat(value(s)).isEqualTo("\"" + s + "\"");
        assertThat(key(s)).isEqualTo("\"" + s + "\"");
    }

    /** Input and go-yaml's output, pair by pair. */
    private static final String[][] SINGLE_QUOTED = {
        // indicators a plain scalar cannot start with
        {"#a", "'#a'"}, {",a", "',a'"}, {"[a", "'[a'"}, {"]a", "']a'"}, {"{a", "'{a'"}, {"}a", "'}a'"},
        {"&a", "'&a'"}, {"*a", "'*a'"}, {"!a", "'!a'"}, {"|a", "'|a'"}, {">a", "'>a'"}, {"%a", "'%a'"},
        {"@a", "'@a'"}, {"`a", "'`a'"}, {"\"a", "'\"a'"},
        // a quote inside single quotes is doubled
        {"'a", "'''a'"}, {"'", "''''"},
        // ? : - open a key, a value or an item only when followed by a space or the end
        {"?", "'?'"}, {"? a", "'? a'"}, {":", "':'"}, {": a", "': a'"}, {"-", "'-'"}, {"- a", "'- a'"},
        // ': ' and ' #' anywhere
        {"a: b", "'a: b'"}, {"a:", "'a:'"}, {"a #b", "'a #b'"},
        // document markers
        {"---", "'---'"}, {"---a", "'---a'"}, {"...", "'...'"}, {"...a", "'...a'"},
        // leading and trailing spaces
        {" a", "' a'"}, {"a ", "'a '"}, {" ", "' '"}};

    @Test
    void singleQuotedWhenOnlyTheIndicatorsStandInTheWay() {
        for (String[] pair : SINGLE_QUOTED) {
            assertThat(value(pair[0])).as(pair[0]).isEqualTo(pair[1]);
            assertThat(key(pair[0])).as(pair[0]).isEqualTo(pair[1]);
        }
    }

    @ParameterizedTest(name = "[{index}] {0}")
    @ValueSource(strings = {"it's", "a  b", "a'b", "a\"b", "a-", "a?", "a#", "a,", "a[", "a}", "a&*!|>%@`"})
    void indicatorsInsideAScalarNeedNoQuotes(String s) {
        assertThat(value(s)).isEqualTo(s);
    }

    @Test
    void aTabBeforeAHashMakesItDoubleQuoted() {
        // the tab is not printable to YAML, which alone forces double quotes
        assertThat(value("a\t#b")).isEqualTo("\"a\\t#b\"");
    }

    @ParameterizedTest(name = "[{index}] U+{0}")
    @CsvSource({
        "0000, \\0", "0007, \\a", "0008, \\b", "0009, \\t", "000B, \\v", "000C, \\f", "000D, \\r", "001B, \\e",
        "0001, \\x01", "001F, \\x1F", "007F, \\x7F", "0080, \\x80", "0085, \\N", "009F, \\x9F",
        "D800, \\uD800", "DFFF, \\uDFFF", "FEFF, \\uFEFF", "FFFE, \\uFFFE", "FFFF, \\uFFFF",
        // go-yaml's is_printable stops at U+FFFD: characters beyond the BMP are escaped too
        "1F600, \\U0001F600", "10000, \\U00010000", "10FFFF, \\U0010FFFF"})
    void charactersOutsideYamlsPrintableSetAreEscapedInDoubleQuotes(String hex, String escape) {
        String c = Character.toString(Integer.parseInt(hex, 16));
        assertThat(value("a" + c + "b")).isEqualTo("\"a" + escape + "b\"");
        assertThat(key("a" + c + "b")).isEqualTo("\"a" + escape + "b\"");
    }

    @Test
    void aCharacterBeyondTheBmpKeepsAMultiLineStringOutOfABlock() {
        assertThat(value("a\n\ud83d\ude00")).isEqualTo("\"a\\n\\U0001F600\"");
    }

    @Test
    void quotesAndBackslashesAreEscapedInDoubleQuotes() {
        // a tab makes the scalar double quoted; the quote and the backslash inside it are escaped
        assertThat(value("\t\"\\")).isEqualTo("\"\\t\\\"\\\\\"");
        // plain or single quoted when nothing else forces double quotes: a backslash needs no escape there
        assertThat(value("a\\b")).isEqualTo("a\\b");
        assertThat(value("'\\")).isEqualTo("'''\\'");
    }

    @Test
    void printableUnicodeIsWrittenAsIs() {
        // go-yaml's emitter allows Unicode: the Latin-1 letters, CJK and the no-break space stay as they are
        assertThat(value("héllo wörld")).isEqualTo("héllo wörld");
        assertThat(value("日本")).isEqualTo("日本");
        assertThat(value("a\u00a0b")).isEqualTo("a\u00a0b");
        assertThat(value("\"é\t")).isEqualTo("\"\\\"é\\t\"");
    }

    @Test
    void literalBlocksExactly() {
        assertThat(value("a\nb")).isEqualTo("|-\n  a\n  b");
        assertThat(value("a\nb\n")).isEqualTo("|\n  a\n  b");
        assertThat(value("a\n\n")).isEqualTo("|+\n  a\n");
        assertThat(value("\n")).isEqualTo("|2+\n");
        assertThat(value(" a\nb")).isEqualTo("|2-\n   a\n  b");
        assertThat(value("\na")).isEqualTo("|2-\n\n  a");
        assertThat(value("a\n b")).isEqualTo("|-\n  a\n   b");
        assertThat(value("a\n\nb")).isEqualTo("|-\n  a\n\n  b");
        // the block's lines are indented two more than the key that holds it
        assertThat(GoYaml.scalar("a\nb", 4, false)).isEqualTo("|-\n      a\n      b");
        // values that read as other types when plain still go in a block: a block is never resolved
        assertThat(value("true\n")).isEqualTo("|\n  true");
    }

    @Test
    void lineBreaksThatALiteralBlockCannotHoldAreDoubleQuoted() {
        // a space before a line break, a trailing space, a carriage return, a non-printable character
        assertThat(value("a \nb")).isEqualTo("\"a \\nb\"");
        assertThat(value("a\nb ")).isEqualTo("\"a\\nb \"");
        assertThat(value("a\r\nb")).isEqualTo("\"a\\r\\nb\"");
        assertThat(value("a\nb\u0001")).isEqualTo("\"a\\nb\\x01\"");
        // keys never take a block
        assertThat(key("a\nb")).isEqualTo("\"a\\nb\"");
        assertThat(key("\n")).isEqualTo("\"\\n\"");
    }

    @Test
    void spacesBeforeAndAfterBreaksDecideBetweenSingleQuotesAndDoubleQuotes() {
        // a space after a line break rules out single quotes (the break would fold) but not a block
        assertThat(key("a\u2028 b")).isEqualTo("\"a\\L b\"");
        // a space before a line break rules out single quotes and blocks
        assertThat(key("a \u2028b")).isEqualTo("\"a \\Lb\"");
        assertThat(value("a \u2028b")).isEqualTo("\"a \\Lb\"");
    }

    @Test
    void nestedCollectionsAreWrittenInGoYamlsBlockStyle() {
        Map<String, Object> root = new LinkedHashMap<>();
        Map<String, Object> inner = new LinkedHashMap<>();
        inner.put("deep", Map.of("leaf", "v"));
        inner.put("empty", Map.of());
        inner.put("none", null);
        inner.put("flag", false);
        inner.put("seq", List.of("a"));
        inner.put("text", "a\nb");
        Map<String, Object> item = new LinkedHashMap<>();
        item.put("k", "v");
        item.put("j", List.of("x", "z"));
        item.put("text", "c\nd");
        root.put("map", inner);
        root.put("list", Arrays.asList("x", List.of("p", List.of("q", "r"), "s"), item, List.of(), Map.of(), null, true,
                "e\nf", List.of(Map.of("m", "w"))));
        root.put("empty list", List.of());
        assertThat(GoYaml.write(root)).isEqualTo("""
                empty list: []
                list:
                - x
                - - p
                  - - q
                    - r
                  - s
                - j:
                  - x
                  - z
                  k: v
                  text: |-
                    c
                    d
                - []
                - {}
                - null
                - true
                - |-
                  e
                  f
                - - m: w
                map:
                  deep:
                    leaf: v
                  empty: {}
                  flag: false
                  none: null
                  seq:
                  - a
                  text: |-
                    a
                    b
                """);
    }

    @Test
    void emptyMappingWritesNothing() {
        assertThat(GoYaml.write(Map.of())).isEmpty();
    }

    @Test
    void keysAreQuotedLikeValues() {
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("yes", "no");
        root.put("a: b", "#c");
        assertThat(GoYaml.write(root)).isEqualTo("'a: b': '#c'\n\"yes\": \"no\"\n");
    }

    private static List<String> sorted(String... keys) {
        List<String> l = new ArrayList<>(Arrays.asList(keys));
        l.sort(GoYaml::keyLess);
        return l;
    }

    @Test
    void keysSortLettersByCodePointAfterEverythingElse() {
        assertThat(sorted("b", "a", "B")).containsExactly("B", "a", "b");
        assertThat(sorted("a", "1", "_", "-")).containsExactly("-", "_", "1", "a");
        assertThat(sorted("é", "z")).containsExactly("z", "é");
        // code points, not UTF-16 units: U+FF01 sorts before U+1F600
        assertThat(sorted("\ud83d\ude00", "\uff01")).containsExactly("\uff01", "\ud83d\ude00");
    }

    @Test
    void keysThatShareAPrefixSortShorterFirst() {
        assertThat(sorted("client-certificate-data", "client-certificate", "client-key"))
                .containsExactly("client-certificate", "client-certificate-data", "client-key");
        assertThat(sorted("as-user-extra", "as-uid", "as-groups", "as"))
                .containsExactly("as", "as-groups", "as-uid", "as-user-extra");
        assertThat(sorted("ab", "a")).containsExactly("a", "ab");
    }

    @Test
    void digitRunsSortByValue() {
        assertThat(sorted("a10", "a9", "a2")).containsExactly("a2", "a9", "a10");
        assertThat(sorted("10", "9", "100")).containsExactly("9", "10", "100");
        // the same value: the shorter run first
        assertThat(sorted("a01", "a1")).containsExactly("a1", "a01");
        assertThat(sorted("a00", "a01", "a0")).containsExactly("a0", "a00", "a01");
        // the runs differ after a leading non-zero digit: the rest is compared as part of the whole number
        assertThat(sorted("a100", "a19")).containsExactly("a19", "a100");
        assertThat(sorted("100", "19")).containsExactly("19", "100");
        assertThat(sorted("x1009", "x1019")).containsExactly("x1009", "x1019");
        // after zeros only, the run after them counts alone
        assertThat(sorted("a0010", "a002")).containsExactly("a002", "a0010");
        // a digit against a non-letter: the digit's run has the larger value
        assertThat(sorted("a1", "a-")).containsExactly("a-", "a1");
        assertThat(sorted("a0", "a-")).containsExactly("a-", "a0");
        assertThat(sorted("a-", "a.")).containsExactly("a-", "a.");
    }

    @Test
    void keyLessAnswersTheSameWhicheverKeyComesFirst() {
        String[][] ordered = {{"1", "a"}, {"-", "a"}, {"a19", "a100"}, {"a15", "a100"}, {"a1", "a01"}, {"a-", "a0"},
            {"a", "ab"}, {"B", "a"}, {"z", "\u00e9"}};
        for (String[] pair : ordered) {
            assertThat(GoYaml.keyLess(pair[0], pair[1])).as("%s before %s", pair[0], pair[1]).isNegative();
            assertThat(GoYaml.keyLess(pair[1], pair[0])).as("%s after %s", pair[1], pair[0]).isPositive();
        }
    }

    @Test
    void keyLessIsZeroOnlyForEqualKeys() {
        assertThat(GoYaml.keyLess("a", "a")).isZero();
        assertThat(GoYaml.keyLess("a", "b")).isNegative();
        assertThat(GoYaml.keyLess("b", "a")).isPositive();
        assertThat(GoYaml.keyLess("a", "ab")).isNegative();
        assertThat(GoYaml.keyLess("ab", "a")).isPositive();
    }
}
