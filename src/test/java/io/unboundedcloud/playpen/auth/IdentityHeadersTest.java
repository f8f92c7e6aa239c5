package io.unboundedcloud.playpen.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.api.ApiException;

/** The identity headers read the way kube-apiserver's request-header authenticator reads them. */
class IdentityHeadersTest {
    /** Header lines as the wire carries them: each value's UTF-8 bytes, one char per byte. */
    static List<Map.Entry<String, String>> lines(String... nameValue) {
        List<Map.Entry<String, String>> out = new ArrayList<>();
        for (int i = 0; i < nameValue.length; i += 2) {
            out.add(Map.entry(nameValue[i], new String(nameValue[i + 1].getBytes(StandardCharsets.UTF_8),
                    StandardCharsets.ISO_8859_1)));
        }
        return out;
    }

    static ApiException refused(List<Map.Entry<String, String>> lines) {
        ApiException e = catchThrowableOfType(ApiException.class, () -> IdentityHeaders.parse(lines));
        assertThat(e).as("refused: %s", lines).isNotNull();
        return e;
    }

    @Test
    void eachGroupLineIsOneGroupVerbatim() {
        Identity id = IdentityHeaders.parse(lines("X-Remote-User", "alice", "X-Remote-Group", "x,system:masters",
                "x-remote-group", "CN=Dev Team,OU=Groups,DC=example,DC=com", "X-Remote-Group", "",
                "X-REMOTE-GROUP", " spaced ", "X-Remote-Group", "system:authenticated"));
        assertThat(id.groups()).containsExactly("x,system:masters", "CN=Dev Team,OU=Groups,DC=example,DC=com",
                " spaced ", "system:authenticated");
    }

    @Test
    void theUserIsTakenAsSentInUtf8() {
        assertThat(IdentityHeaders.parse(lines("X-Remote-User", "Jos\u00e9")).user()).isEqualTo("Jos\u00e9");
        assertThat(IdentityHeaders.parse(lines("X-Remote-User", "\u5f20\u4f1f")).user()).isEqualTo("\u5f20\u4f1f");
        assertThat(IdentityHeaders.parse(lines("X-Remote-User", "alice ")).user()).isEqualTo("alice ");
        assertThat(IdentityHeaders.parse(lines("X-Remote-User", " alice")).user()).isEqualTo(" alice");
        assertThat(IdentityHeaders.parse(lines("X-Remote-User", "alice\u00a0")).user()).isEqualTo("alice\u00a0");
        assertThat(IdentityHeaders.parse(lines("X-Remote-User", "alice", "X-Remote-Uid", " uid-1 ")).uid()).isEqualTo(" uid-1 ");
    }

    @Test
    void theFirstUserLineWinsAndAnEmptyOneIsNoUser() {
        assertThat(IdentityHeaders.parse(lines("X-Remote-User", "alice", "X-Remote-User", "root")).user()).isEqualTo("alice");
        for (List<Map.Entry<String, String>> l : List.of(lines(), lines("X-Remote-User", ""),
                lines("X-Remote-User", "", "X-Remote-User", "root"), lines("X-Remote-Group", "g"))) {
            ApiException e = refused(l);
            assertThat(e.code()).isEqualTo(403);
            assertThat(e.getMessage()).isEqualTo("missing remote user");
        }
    }

    @Test
    void bytesThatAreNotUtf8AndControlCharactersAreRefused() {
        // "Jos\xe9": ISO-8859-1 bytes, not UTF-8
        ApiException latin1 = refused(List.of(Map.entry("X-Remote-User", "Jos\u00e9")));
        assertThat(latin1.code()).isEqualTo(400);
        assertThat(latin1.getMessage()).contains("X-Remote-User").contains("UTF-8");
        for (String bad : List.of("alice\u0000", "alice\u000b", "\u0001alice", "al\u001fice", "alice\u007f")) {
            ApiException e = refused(lines("X-Remote-User", bad));
            assertThat(e.code()).as(bad).isEqualTo(400);
        }
        assertThat(refused(lines("X-Remote-User", "a", "X-Remote-Group", "g\u0000")).getMessage()).contains("X-Remote-Group");
        assertThat(IdentityHeaders.parse(lines("X-Remote-User", "tab\there")).user()).isEqualTo("tab\there");
    }

    @Test
    void extraKeysAreLowerCasedAndPercentDecodedLikeKubeApiserver() {
        Identity id = IdentityHeaders.parse(lines("X-Remote-User", "u",
                "X-Remote-Extra-Scopes", "view", "x-remote-extra-scopes", "edit",
                "X-Remote-Extra-Acme.com%2Fproject", "p1",
                "X-Remote-Extra-A%2fB", "lower-hex",
                "X-Remote-Extra-Bad%zz", "kept",
                "X-Remote-Extra-Tail%2", "kept too",
                "X-Remote-Extra-Plus+Sign", "plus",
                "X-Remote-Extra-Utf%C3%A9", "\u00e9",
                "X-Remote-Extra-Empty", ""));
        assertThat(id.extra()).containsEntry("scopes", List.of("view", "edit"))
                .containsEntry("acme.com/project", List.of("p1"))
                .containsEntry("a/b", List.of("lower-hex"))
                .containsEntry("bad%zz", List.of("kept"))
                .containsEntry("tail%2", List.of("kept too"))
                .containsEntry("plus+sign", List.of("plus"))
                .containsEntry("utf\u00e9", List.of("\u00e9"))
                .containsEntry("empty", List.of(""));
    }

    /**
     * For ASCII header names, the extra key is what a URL decoder that leaves '+' alone makes of the lower-cased
     * name, and the lower-cased name itself where an escape is malformed (Go's url.PathUnescape fails there).
     */
    @net.jqwik.api.Property(tries = 2000)
    void anExtraKeyIsTheLowerCasedNamePercentDecoded(
            @net.jqwik.api.ForAll("asciiNames") String name) {
        String lower = name.toLowerCase(java.util.Locale.ROOT);
        String expected;
        try {
            expected = java.net.URLDecoder.decode(lower.replace("+", "%2b"), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException malformed) {
            expected = lower;
        }
        assertThat(IdentityHeaders.extraKey(name)).isEqualTo(expected);
    }

    @net.jqwik.api.Provide
    net.jqwik.api.Arbitrary<String> asciiNames() {
        // hex digits and their neighbours ('/' ':' '@' 'G' '`' 'g'), escapes of ASCII and of UTF-8 sequences
        // (some cut short), and lone or trailing '%'; no '-', which Java's decoder takes as a sign ("%-0")
        net.jqwik.api.Arbitrary<String> piece = net.jqwik.api.Arbitraries.oneOf(
                net.jqwik.api.Arbitraries.of("0", "9", "a", "f", "A", "F", "/", ":", "@", "G", "`", "g", "+", ".", "z", "%", "%2", "%2F", "%2f", "%41", "%7e", "%C3%A9", "%c3", "%E2%82%AC", "%e2%82",
                        "%ff", "%0", "%g1", "%1g", "%:0", "%/0", "%`a", "%@1"));
        return piece.list().ofMaxSize(8).map(l -> String.join("", l));
    }

    @Test
    void extraKeyEdges() {
        // an escape that ends the name exactly is whole; one cut short is not
        assertThat(IdentityHeaders.extraKey("A%2F")).isEqualTo("a/");
        assertThat(IdentityHeaders.extraKey("A%2")).isEqualTo("a%2");
        assertThat(IdentityHeaders.extraKey("%")).isEqualTo("%");
        // one char per byte as Netty hands header names over: U+00FF is a byte (not UTF-8 alone), U+0100 is text
        assertThat(IdentityHeaders.extraKey("k\u00ff")).isEqualTo("k\ufffd");
        assertThat(IdentityHeaders.extraKey("k\u0100")).isEqualTo("k\u0101");
        assertThat(IdentityHeaders.extraKey("k\u20ac%41")).isEqualTo("k\u20acA");
    }

    /**
     * A refused identity header is named, with why it was refused and that kube-apiserver's aggregator sent it (the
     * reader runs the cluster), and its value is never repeated: it may be hostile.
     */
    @Test
    void aRefusedHeaderIsNamedWithWhyAndWhoSentItButNotItsValue() {
        String from = ": the front proxy (kube-apiserver's aggregator) sent it, filled from the caller's identity, so the"
                + " request was refused (the value is not repeated here); check the user name, uid, groups and extra"
                + " values the cluster's authenticator (client certificate, token, OIDC or webhook) gives this caller";
        ApiException utf8 = catchThrowableOfType(ApiException.class, () -> IdentityHeaders.parse(List.of(
                Map.entry("X-Remote-User", "mal\u00ff\u00felory"))));
        assertThat(utf8.code()).isEqualTo(400);
        assertThat(utf8.getMessage()).isEqualTo("the X-Remote-User header is not valid UTF-8" + from)
                .doesNotContain("mal", "lory");
        ApiException control = refused(lines("X-Remote-User", "a", "X-Remote-Group", "evil\u0007group"));
        assertThat(control.code()).isEqualTo(400);
        assertThat(control.getMessage()).isEqualTo(
                "the X-Remote-Group header holds a control character (only tab is allowed)" + from)
                .doesNotContain("evil");
        ApiException extra = refused(lines("X-Remote-User", "a", "X-Remote-Extra-Scopes", "s\u001b[2J"));
        assertThat(extra.getMessage()).isEqualTo(
                "the X-Remote-Extra-Scopes header holds a control character (only tab is allowed)" + from);
    }

    @Test
    void aValueIsOneBytePerCharUnlessItIsTextAlready() {
        // U+00FF as one byte is not UTF-8; from U+0100 on the value is taken as decoded text
        assertThat(catchThrowableOfType(ApiException.class, () -> IdentityHeaders.value("X-Remote-User", "\u00ff"))
                .getMessage()).isEqualTo("the X-Remote-User header is not valid UTF-8" + IdentityHeaders.SENT_BY_THE_FRONT_PROXY);
        assertThat(IdentityHeaders.value("X-Remote-User", "\u0100\u00ff")).isEqualTo("\u0100\u00ff");
        assertThat(IdentityHeaders.value("X-Remote-User", "\u00c3\u00a9")).isEqualTo("\u00e9");
        assertThat(catchThrowableOfType(ApiException.class, () -> IdentityHeaders.value("X-Remote-User", "\u0100\u0007"))
                .getMessage()).isEqualTo("the X-Remote-User header holds a control character (only tab is allowed)"
                        + IdentityHeaders.SENT_BY_THE_FRONT_PROXY);
        // a header's name is quoted in the message only when it is short and printable (only an extra's name can be not)
        String eighty = "X-Remote-Extra-" + "k".repeat(65);
        assertThat(catchThrowableOfType(ApiException.class, () -> IdentityHeaders.value(eighty, "\u0007"))
                .getMessage()).isEqualTo("the " + eighty + " header holds a control character (only tab is allowed)"
                        + IdentityHeaders.SENT_BY_THE_FRONT_PROXY);
        assertThat(catchThrowableOfType(ApiException.class, () -> IdentityHeaders.value(eighty + "k", "\u0007"))
                .getMessage()).isEqualTo("an X-Remote-Extra-* header (its name not shown) holds a control character"
                        + " (only tab is allowed)" + IdentityHeaders.SENT_BY_THE_FRONT_PROXY);
        assertThat(catchThrowableOfType(ApiException.class, () -> IdentityHeaders.value("X-Remote-Extra-\u00e9", "\u0007"))
                .getMessage()).isEqualTo("an X-Remote-Extra-* header (its name not shown) holds a control character"
                        + " (only tab is allowed)" + IdentityHeaders.SENT_BY_THE_FRONT_PROXY);
    }
}
