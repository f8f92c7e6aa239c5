package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * GoJson decodes bodies as Go's encoding/json does: UTF-8 through utf8.DecodeRune (each byte of a bad sequence is
 * one U+FFFD), unpaired surrogates from escapes become U+FFFD, keys fold like Go's, and {@code quote} is strconv.Quote.
 */
class GoJsonTest {
    private static final String FFFD = "\ufffd";

    private static byte[] hex(String hex) {
        return HexFormat.of().parseHex(hex.replace(" ", ""));
    }

    @ParameterizedTest(name = "[{index}] {0}")
    @CsvSource({
        // one byte
        "00, 0000", "7f, 007f",
        // two bytes: U+0080 to U+07FF
        "c2 80, 0080", "c3 a9, 00e9", "df bf, 07ff",
        // three bytes: U+0800 to U+FFFF without the surrogates
        "e0 a0 80, 0800", "e1 80 80, 1000", "ec bf bf, cfff", "ed 80 80, d000", "ed 9f bf, d7ff", "ee 80 80, e000",
        "ef bf bd, fffd", "ef bf bf, ffff",
        // four bytes: U+10000 to U+10FFFF
        "f0 90 80 80, 10000", "f0 9f 98 80, 1f600", "f1 80 80 80, 40000", "f3 bf bf bf, fffff", "f4 80 80 80, 100000",
        "f4 8f bf bf, 10ffff"})
    void validSequencesDecodeToTheirCodePoint(String bytes, String codePoint) {
        assertThat(GoJson.decodeUtf8(hex(bytes))).isEqualTo(Character.toString(Integer.parseInt(codePoint, 16)));
    }

    @ParameterizedTest(name = "[{index}] {0}")
    @CsvSource({
        // a continuation byte or a lead byte that no valid sequence starts with (R: one U+FFFD)
        "80, R", "bf, R", "c0 80, RR", "c1 bf, RR", "f5 80 80 80, RRRR", "ff, R",
        // overlong forms and surrogates: the second byte is outside the lead byte's range
        "e0 80 80, RRR", "e0 9f bf, RRR", "ed a0 80, RRR", "ed bf bf, RRR", "f0 80 80 80, RRRR", "f0 8f bf bf, RRRR",
        "f4 90 80 80, RRRR", "f4 bf bf bf, RRRR",
        // a later byte that is not a continuation byte: the bytes after the lead decode on their own
        "c2 41, RA", "c2 c0, RR", "e1 80 41, RRA", "e1 80 c0, RRR", "e1 41 80, RAR", "f1 80 80 41, RRRA",
        "f1 80 80 c0, RRRR", "f1 80 41 80, RRAR",
        // truncated at the end of the input
        "c2, R", "e1 80, RR", "e1, R", "f1 80 80, RRR", "f4 8f, RR"})
    void everyByteOfABadSequenceIsOneReplacementCharacter(String bytes, String expected) {
        assertThat(GoJson.decodeUtf8(hex(bytes))).isEqualTo(expected.replace("R", FFFD));
    }

    @Test
    void decodingGoesOnAfterABadSequence() {
        assertThat(GoJson.decodeUtf8(hex("61 e1 80 62 c3 a9 ff 63"))).isEqualTo("a" + FFFD + FFFD + "bé" + FFFD + "c");
        assertThat(GoJson.decodeUtf8(hex("f0 9f 98 80 f0 9f 98"))).isEqualTo("\ud83d\ude00" + FFFD + FFFD + FFFD);
    }

    @Property(tries = 500)
    void validUtf8DecodesAsJavaDecodesIt(@ForAll("text") String s) {
        assertThat(GoJson.decodeUtf8(s.getBytes(StandardCharsets.UTF_8))).isEqualTo(s);
    }

    @Property(tries = 1000)
    void bytesThatJavaAcceptsDecodeTheSameAndAnyOthersGetReplacements(@ForAll("bytes") byte[] b) {
        String decoded = GoJson.decodeUtf8(b);
        String strict;
        try {
            strict = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString();
        } catch (CharacterCodingException e) {
            strict = null;
        }
        if (strict != null) {
            assertThat(decoded).isEqualTo(strict);
        } else {
            assertThat(decoded).contains(FFFD);
        }
        // never more characters than bytes, never a lone surrogate
        assertThat(decoded.length()).isLessThanOrEqualTo(b.length);
        assertThat(GoJson.withoutLoneSurrogates(decoded)).isEqualTo(decoded);
    }

    @Provide
    Arbitrary<String> text() {
        return Arbitraries.oneOf(
                Arbitraries.integers().between(0, 0x7f),
                Arbitraries.integers().between(0x80, 0x7ff),
                Arbitraries.integers().between(0x800, 0xffff).filter(c -> c < 0xd800 || c > 0xdfff),
                Arbitraries.integers().between(0x10000, 0x10ffff))
                .list().ofMaxSize(8)
                .map(cps -> cps.stream().map(Character::toString).reduce("", String::concat));
    }

    @Provide
    Arbitrary<byte[]> bytes() {
        // lead bytes at every range boundary, continuation bytes at theirs, and ASCII
        return Arbitraries.of(0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1,
                0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff)
                .list().ofMaxSize(8)
                .map(l -> {
                    byte[] b = new byte[l.size()];
                    for (int i = 0; i < b.length; i++) {
                        b[i] = (byte) (int) l.get(i);
                    }
                    return b;
                });
    }

    @ParameterizedTest(name = "[{index}] {0}")
    @CsvSource({
        "a\\ud800b, a" + "\ufffd" + "b", "\\udc00, \ufffd", "\\ud800, \ufffd", "x\\udc00, x\ufffd",
        "\\ude00\\ud83d, \ufffd\ufffd", "\\ud83d\\ude00, \ud83d\ude00", "\\ud800\\ud800\\udc00, \ufffd\ud800\udc00",
        "plain, plain"})
    void unpairedSurrogatesInEscapesBecomeReplacementCharacters(String escaped, String expected) throws Exception {
        byte[] body = ("{\"f\":\"" + escaped + "\"}").getBytes(StandardCharsets.UTF_8);
        assertThat(GoJson.decode(body, List.of("f"))).containsEntry("f", expected);
        Map<String, GoJson.Value> loose = new HashMap<>();
        GoJson.decode(body, List.of(), List.of("f"), loose);
        assertThat(loose.get("f").text()).isEqualTo(expected);
    }

    @Test
    void withoutLoneSurrogatesLeavesPairsAndOtherTextAlone() {
        String s = "ok \ud83d\ude00 é";
        assertThat(GoJson.withoutLoneSurrogates(s)).isSameAs(s);
        assertThat(GoJson.withoutLoneSurrogates("ab\ud800")).isEqualTo("ab" + FFFD);
        assertThat(GoJson.withoutLoneSurrogates("\udc00ab")).isEqualTo(FFFD + "ab");
    }

    @ParameterizedTest(name = "[{index}] {0}")
    @CsvSource(delimiter = '|', value = {
        "0000|\"\\x00\"", "0001|\"\\x01\"", "001f|\"\\x1f\"", "007f|\"\\x7f\"",
        "0007|\"\\a\"", "0008|\"\\b\"", "000c|\"\\f\"", "000a|\"\\n\"", "000d|\"\\r\"", "0009|\"\\t\"", "000b|\"\\v\"",
        "0022|\"\\\"\"", "005c|\"\\\\\"",
        // not printable to Go: C1 controls, spaces other than U+0020, format characters, private use, unassigned
        "0080|\"\\u0080\"", "0085|\"\\u0085\"", "00a0|\"\\u00a0\"", "00ad|\"\\u00ad\"", "2028|\"\\u2028\"",
        "200b|\"\\u200b\"", "feff|\"\\ufeff\"", "e000|\"\\ue000\"", "ffff|\"\\uffff\"",
        "e0001|\"\\U000e0001\"", "f0000|\"\\U000f0000\"", "10ffff|\"\\U0010ffff\"",
        // printable: kept as they are
        "0020|\" \"", "0041|\"A\"", "007e|\"~\"", "00e9|\"\u00e9\"", "0301|\"\u0301\"", "20ac|\"\u20ac\"",
        "1f600|\"\ud83d\ude00\""})
    void quoteIsGosStrconvQuote(String codePoint, String expected) {
        assertThat(GoJson.quote(Character.toString(Integer.parseInt(codePoint, 16)))).isEqualTo(expected);
    }

    @Test
    void quoteEscapesALoneSurrogateAsTheReplacementCharacter() {
        // Go strings cannot hold one; strconv.Quote writes an invalid rune as \ufffd
        assertThat(GoJson.quote("a\ud800b")).isEqualTo("\"a\\ufffdb\"");
        assertThat(GoJson.quote("v1.33\u0000x")).isEqualTo("\"v1.33\\x00x\"");
    }

    @Test
    void foldUpperCasesAsciiLettersOnly() {
        assertThat(GoJson.fold("azAZ09_-@[`{")).isEqualTo("AZAZ09_-@[`{");
        assertThat(GoJson.match("resourcetype", List.of("resourceType"))).isEqualTo("resourceType");
        assertThat(GoJson.match("a", List.of("A"))).isEqualTo("A");
        assertThat(GoJson.match("z", List.of("Z"))).isEqualTo("Z");
        assertThat(GoJson.match("é", List.of("É"))).isEqualTo("É");
        // the exact name wins over a folded one listed first
        assertThat(GoJson.match("ab", List.of("AB", "ab"))).isEqualTo("ab");
        assertThat(GoJson.match("b", List.of("a"))).isNull();
    }

    @Test
    void topLevelNullLeavesEveryFieldEmpty() throws Exception {
        assertThat(GoJson.decode(" null ".getBytes(StandardCharsets.UTF_8), List.of("f"))).isEmpty();
    }

    @Test
    void onlyJsonWhitespaceBeforeTheValueIsSkipped() {
        assertThatThrownBy(() -> GoJson.decode(" \t\r\n".getBytes(StandardCharsets.UTF_8), List.of("f")))
                .isInstanceOf(GoJson.EndOfInput.class);
        assertThatThrownBy(() -> GoJson.decode(null, List.of("f"))).isInstanceOf(GoJson.EndOfInput.class);
        // a form feed is not JSON whitespace
        assertThatThrownBy(() -> GoJson.decode("\f{}".getBytes(StandardCharsets.UTF_8), List.of("f")))
                .isInstanceOf(GoJson.DecodeError.class);
    }
}
