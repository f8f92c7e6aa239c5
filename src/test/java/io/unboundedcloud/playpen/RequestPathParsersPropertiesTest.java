package io.unboundedcloud.playpen;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.constraints.StringLength;

import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.api.ApiPaths;
import io.unboundedcloud.playpen.api.RequestBodies;
import io.unboundedcloud.playpen.auth.GoCertificateNames;
import io.unboundedcloud.playpen.auth.GoCertificateNamesAccess;
import io.unboundedcloud.playpen.auth.Identity;
import io.unboundedcloud.playpen.auth.IdentityHeaders;
import io.unboundedcloud.playpen.camel.AllocsApi;
import io.unboundedcloud.playpen.camel.ManagementGuardAccess;
import io.unboundedcloud.playpen.config.GoDuration;
import io.unboundedcloud.playpen.config.LeaseLimits;
import io.unboundedcloud.playpen.model.AllocRequestParser;
import io.unboundedcloud.playpen.model.LabelSelector;

/**
 * Every parser a request reaches, fed arbitrary input: each either returns or fails with the API's own error
 * (an {@link ApiException} with a 4xx code on the API boundary; a parser's documented exception below it). Any
 * other exception (a NullPointerException, an IndexOutOfBounds, a NumberFormatException leaking out) is a
 * failure: it would be a 500, or a dropped connection, instead of a Status that says what to fix.
 */
class RequestPathParsersPropertiesTest {
    static final AllocRequestParser PARSER = new AllocRequestParser(List.of("v1.33.0", "v1.32.4"), LeaseLimits.DEFAULTS);
    static final AllocsApi ALLOCS = new AllocsApi(null, null, null, null, new io.unboundedcloud.playpen.model.TtlPolicy(Duration.ofHours(1)), 1, null, null, null);

    /** Runs a parser on the API boundary: any outcome but a 4xx ApiException is a failure. */
    static void apiOnly(Runnable parse) {
        try {
            parse.run();
        } catch (ApiException e) {
            assertThat(e.code()).as("%s", e.getMessage()).isBetween(400, 499);
            assertThat(e.getMessage()).isNotBlank();
        }
    }

    // ------------------------------------------------------------------ request JSON

    static final List<String> FIELDS = List.of("idempotencyKey", "wireGuardPublicKey", "architecture", "resourceType",
            "kubernetesVersion", "waitSeconds", "ttl", "IdempotencyKey", "idempotencykey", "", "\u0000", "extra");

    /** JSON values of every type, with the edge values a parser trips on. */
    @Provide
    Arbitrary<String> jsonValues() {
        Arbitrary<String> strings = Arbitraries.strings().ofMaxLength(60).map(RequestPathParsersPropertiesTest::jsonString);
        Arbitrary<String> numbers = Arbitraries.of("0", "-0", "1", "-1", "120", "3601", "1e3", "1E400", "-1e-400", "0.5",
                "9223372036854775807", "9223372036854775808", "-9223372036854775809", "1.0", "1e", "01", "NaN", "Infinity");
        Arbitrary<String> edge = Arbitraries.of("true", "false", "null", "[]", "{}", "[null]", "{\"a\":{}}", "30", "\"30\"",
                jsonString("control_plane"), jsonString("x86_64"), jsonString("aarch64"), jsonString("v1.32.4"),
                jsonString("1.33.0"), jsonString("30m"), jsonString("24h0m1s"), jsonString("0s"),
                "\"" + "k".repeat(5000) + "\"", jsonString("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="),
                jsonString("amd64"), jsonString("ARM64"), jsonString("control-plane"), jsonString("runner"),
                jsonString("v1.33"), jsonString("1h30m"), jsonString("-5s"), jsonString("9999999999h"), "\"\\ud800\"");
        return Arbitraries.oneOf(strings, numbers, edge);
    }

    @Provide
    Arbitrary<byte[]> requestBodies() {
        Arbitrary<String> member = Combinators.combine(Arbitraries.of(FIELDS), jsonValues())
                .as((k, v) -> jsonString(k) + ":" + v);
        Arbitrary<String> object = member.list().ofMaxSize(9).map(m -> "{" + String.join(",", m) + "}");
        // a valid request with up to four fields set to anything: the checks past the first ones are reached too
        Arbitrary<String> optional = Combinators.combine(Arbitraries.of("architecture", "resourceType", "kubernetesVersion",
                "waitSeconds", "ttl"), jsonValues()).as((k, v) -> "," + jsonString(k) + ":" + v);
        Arbitrary<String> nearlyValid = optional.list().ofMaxSize(4).map(o -> "{\"idempotencyKey\":\"k-1\","
                + "\"wireGuardPublicKey\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"" + String.join("", o) + "}");
        Arbitrary<String> mangled = Combinators.combine(object, Arbitraries.integers().between(0, 200),
                Arbitraries.of("", "\ufeff", " ", "\n", "]", "}", ",", "x", "{", "\u0000"))
                .as((o, cut, tail) -> o.substring(0, Math.min(cut, o.length())) + tail);
        Arbitrary<String> nested = Arbitraries.integers().between(1, 3000).map(n -> "[".repeat(n) + "]".repeat(n / 2));
        Arbitrary<byte[]> text = Arbitraries.oneOf(object, nearlyValid, nearlyValid, mangled, nested,
                object.map(o -> "[" + o + "]"), object.map(o -> o + o))
                .map(s -> s.getBytes(StandardCharsets.UTF_8));
        Arbitrary<byte[]> raw = Arbitraries.bytes().array(byte[].class).ofMaxSize(200);
        Arbitrary<byte[]> utf16 = object.map(s -> s.getBytes(StandardCharsets.UTF_16));
        return Arbitraries.oneOf(text, text, text, raw, utf16);
    }

    @Provide
    Arbitrary<String> headerKeys() {
        return Arbitraries.oneOf(Arbitraries.just(null), Arbitraries.strings().ofMaxLength(40),
                Arbitraries.of("", " ", "\t", "k", " k ", "\u00a0", "k".repeat(300)));
    }

    @Property(tries = 3000)
    void allocBodiesEndInACommandOrAStatus(@ForAll("requestBodies") byte[] body, @ForAll("headerKeys") String key) {
        apiOnly(() -> PARSER.parseAlloc(body, key));
        String outcome;
        try {
            PARSER.parseAlloc(body, key);
            outcome = "accepted";
        } catch (ApiException e) {
            outcome = String.valueOf(e.code());
        }
        net.jqwik.api.statistics.Statistics.collect(outcome);
    }

    @Property(tries = 1500)
    void deallocAndRenewalBodiesEndInAKeyOrAStatus(@ForAll("requestBodies") byte[] body, @ForAll("headerKeys") String key) {
        apiOnly(() -> PARSER.parseDealloc(body, key));
        apiOnly(() -> PARSER.parseRenewal(body, key));
    }

    @Property(tries = 1500)
    void contentTypesAndBodiesAreAdmittedOrRefusedWithAStatus(@ForAll("contentTypes") String contentType,
            @ForAll @Size(max = 70_000) byte[] body) {
        apiOnly(() -> RequestBodies.admit(contentType, body));
    }

    @Provide
    Arbitrary<String> contentTypes() {
        return Arbitraries.oneOf(Arbitraries.just(null), Arbitraries.strings().ofMaxLength(60),
                Arbitraries.of("application/json", "application/json; charset=utf-8", "text/plain;charset=UTF-16",
                        "application/json; charset=", "application/json; charset=\"utf-8\"", ";;;", "charset=latin1",
                        "application/json; charset=utf-8; charset=latin1", "application/x-www-form-urlencoded"));
    }

    // ------------------------------------------------------------------ headers and identity

    @Provide
    Arbitrary<List<Map.Entry<String, String>>> headerLines() {
        Arbitrary<String> names = Arbitraries.oneOf(
                Arbitraries.of("X-Remote-User", "x-remote-user", "X-Remote-Group", "X-REMOTE-GROUP", "X-Remote-Uid",
                        "X-Remote-Extra-", "X-Remote-Extra-Scopes", "X-Remote-Extra-a%2Fb", "X-Remote-Extra-%", "X-Remote-Extra-%zz",
                        "X-Remote-Extra-%E2%82", "Host", "X-Remote"),
                Arbitraries.strings().withCharRange('!', '~').ofMaxLength(30).map(s -> "X-Remote-Extra-" + s));
        // values as the wire delivers them: one char per byte
        Arbitrary<String> bytesAsChars = Arbitraries.strings().withCharRange('\u0000', '\u00ff').ofMaxLength(30);
        Arbitrary<String> utf8 = Arbitraries.strings().ofMaxLength(20)
                .map(s -> new String(s.getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1));
        Arbitrary<Map.Entry<String, String>> line = Combinators.combine(names, Arbitraries.oneOf(bytesAsChars, utf8))
                .as(Map::entry);
        return line.list().ofMaxSize(12);
    }

    @Property(tries = 3000)
    void identityHeadersGiveAnIdentityOrAStatus(@ForAll("headerLines") List<Map.Entry<String, String>> lines) {
        try {
            Identity id = IdentityHeaders.parse(lines);
            assertThat(id.user()).isNotEmpty();
            // every group is one whole line, as sent (no split, no trim)
            List<String> sentGroups = new ArrayList<>();
            for (Map.Entry<String, String> l : lines) {
                if (l.getKey().equalsIgnoreCase("X-Remote-Group") && !l.getValue().isEmpty()) {
                    sentGroups.add(new String(l.getValue().getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8));
                }
            }
            assertThat(id.groups()).containsExactlyElementsOf(sentGroups);
        } catch (ApiException e) {
            assertThat(e.code()).isIn(400, 403);
        }
    }

    @Property(tries = 2000)
    void extraKeysFromHeaderNamesAreLowerCasedAndDecoded(
            @ForAll @StringLength(max = 40) @net.jqwik.api.constraints.CharRange(from = '!', to = '~') String encoded) {
        // header names are tokens (ASCII): what has no escape is only lower-cased
        String key = IdentityHeaders.extraKey(encoded);
        if (!encoded.contains("%")) {
            assertThat(key).isEqualTo(encoded.toLowerCase(java.util.Locale.ROOT));
        }
        // what a proxy escaped (as kube-apiserver escapes extra keys) comes back as it was
        String escaped = URLEncoder.encode(key, StandardCharsets.UTF_8).replace("+", "%20");
        assertThat(IdentityHeaders.extraKey(escaped)).isEqualTo(key.toLowerCase(java.util.Locale.ROOT));
    }

    @Property(tries = 2000)
    void anyExtraKeyTextDecodesToSomething(@ForAll @StringLength(max = 40) String encoded) {
        assertThat(IdentityHeaders.extraKey(encoded)).isNotNull();
    }

    @Provide
    Arbitrary<String> requestTargets() {
        Arbitrary<String> segment = Arbitraries.oneOf(Arbitraries.of("apis", "playpen.unbounded-cloud.io", "v1alpha1",
                "allocs", "deallocs", "renewals", "openapi", "v2", "v3", "healthz", "readyz", "", ".", "..", "%2F", "%",
                "%zz", "0123456789abcdef", "%E2%82%AC", "?", "#", ";x"), Arbitraries.strings().ofMaxLength(12));
        Arbitrary<String> path = segment.list().ofMaxSize(6).map(s -> "/" + String.join("/", s));
        Arbitrary<String> query = Arbitraries.strings().ofMaxLength(40);
        return Arbitraries.oneOf(path, Combinators.combine(path, query).as((p, q) -> p + "?" + q),
                Arbitraries.strings().ofMaxLength(60), Arbitraries.of("*", "", "http://x/apis", "//", "/apis//"));
    }

    @Property(tries = 3000)
    void requestTargetsRouteOrAnswerWithAStatus(@ForAll("requestTargets") String target,
            @ForAll("methods") String method) {
        apiOnly(() -> ApiPaths.route(method, target));
        apiOnly(() -> ApiPaths.allocName(target));
        apiOnly(() -> ApiPaths.rawQuery(target));
    }

    @Provide
    Arbitrary<String> methods() {
        return Arbitraries.oneOf(Arbitraries.of("GET", "POST", "DELETE", "HEAD", "PUT", "PATCH", "OPTIONS", "TRACE", "get", ""),
                Arbitraries.strings().ofMaxLength(8));
    }

    // ------------------------------------------------------------------ list options: label selectors, paging

    @Provide
    Arbitrary<String> labelSelectors() {
        Arbitrary<String> token = Arbitraries.oneOf(Arbitraries.of("a", "app", "example.com/x", "a.b-c_d", "!", "=", "==",
                "!=", "in", "notin", "(", ")", ",", " ", "x y", "-a", "a-", "A", "1", "k".repeat(70), "p/", "/x", "\u00e9",
                "exists", "\t"), Arbitraries.strings().withChars("abc=!(), /.-_inot\u00e9").ofMaxLength(6));
        return token.list().ofMaxSize(10).map(t -> String.join("", t));
    }

    @Property(tries = 3000)
    void labelSelectorsParseOrFailWithTheirOwnError(@ForAll("labelSelectors") String selector) {
        try {
            LabelSelector parsed = LabelSelector.parse(selector);
            // what parses once parses the same from its own text
            assertThat(LabelSelector.parse(parsed.toString())).isEqualTo(parsed);
        } catch (IllegalArgumentException e) {
            assertThat(e.getMessage()).isNotBlank();
        }
    }

    @Provide
    Arbitrary<String> listQueries() {
        Arbitrary<String> validToken = Arbitraries.strings().withCharRange('a', 'f').ofLength(16)
                .map(n -> java.util.Base64.getUrlEncoder().withoutPadding()
                        .encodeToString(("alloc:" + n).getBytes(StandardCharsets.UTF_8)));
        Arbitrary<String> value = Arbitraries.oneOf(Arbitraries.strings().ofMaxLength(30), labelSelectors(), validToken,
                validToken.map(t -> t.substring(0, t.length() - 1)), validToken.map(t -> t + "="),
                Arbitraries.of("-1", "0", "500", "9223372036854775808", "1e3", "", "true", "1", "None", "Object",
                        "metadata.name=x", "metadata.name!=0123456789abcdef", "spec.x=1", "a", "%", "%zz", "x".repeat(5000)));
        Arbitrary<String> key = Arbitraries.of("limit", "continue", "labelSelector", "fieldSelector", "includeObject",
                "watch", "resourceVersion", "", "x");
        Arbitrary<String> pair = Combinators.combine(key, value, Arbitraries.of(true, false))
                .as((k, v, encode) -> k + "=" + (encode ? URLEncoder.encode(v, StandardCharsets.UTF_8) : v));
        return pair.list().ofMaxSize(6).map(p -> String.join("&", p));
    }

    @Property(tries = 3000)
    void listOptionsAndPagingTokensGiveAQueryOrAStatus(@ForAll("listQueries") String query,
            @ForAll("accepts") String accept, @ForAll("itemNames") String name) {
        for (String flow : List.of("allocs_list", "allocs_get", "allocs_delete")) {
            String target = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs" + ("allocs_list".equals(flow) ? "" : "/" + name)
                    + "?" + query;
            apiOnly(() -> ALLOCS.parseQuery(target, flow, accept));
        }
    }

    @Provide
    Arbitrary<String> accepts() {
        return Arbitraries.oneOf(Arbitraries.just(null), Arbitraries.strings().ofMaxLength(40),
                Arbitraries.of("application/json;as=Table;v=v1;g=meta.k8s.io", "application/json;as=Table;g=meta.k8s.io;v=v1beta1",
                        ",,,", "application/json;"));
    }

    @Provide
    Arbitrary<String> itemNames() {
        return Arbitraries.oneOf(Arbitraries.strings().withCharRange('a', 'f').ofLength(16), Arbitraries.strings().ofMaxLength(20),
                Arbitraries.of("%", "%zz", "0123456789ABCDEF", ""));
    }

    // ------------------------------------------------------------------ Go durations

    @Provide
    Arbitrary<String> goDurations() {
        Arbitrary<String> unit = Arbitraries.of("ns", "us", "\u00b5s", "\u03bcs", "ms", "s", "m", "h", "", "d", "x", "S");
        Arbitrary<String> number = Arbitraries.oneOf(Arbitraries.strings().withChars("0123456789.").ofMaxLength(8),
                Arbitraries.of("9223372036854775807", "9223372036854775808", "99999999999999999999", "0.0000000001", "."));
        Arbitrary<String> part = Combinators.combine(number, unit).as((n, u) -> n + u);
        Arbitrary<String> sign = Arbitraries.of("", "-", "+", "--", " ");
        Arbitrary<String> after = Arbitraries.of("", "", "", " ", "\t", "\n");
        return Arbitraries.oneOf(Combinators.combine(sign, part.list().ofMaxSize(5), after)
                        .as((s, p, a) -> s + String.join("", p) + a),
                Arbitraries.strings().ofMaxLength(20));
    }

    @Property(tries = 5000)
    void goDurationsParseOrFailWithTheirOwnError(@ForAll("goDurations") String text) {
        try {
            Duration d = GoDuration.parse(text);
            // as Go's time.ParseDuration, no white space around a duration
            assertThat(text).isEqualTo(text.strip());
            // what it prints, it reads back
            assertThat(GoDuration.parse(GoDuration.format(d))).isEqualTo(d);
        } catch (IllegalArgumentException e) {
            assertThat(e.getMessage()).isNotBlank();
        }
    }

    @Property(tries = 3000)
    void requestedTtlsGiveADurationOrAStatus(@ForAll("goDurations") String text) {
        apiOnly(() -> PARSER.checkTtl(text));
    }

    /** A requested ttl is trimmed before it is read as a duration (docs/api.md), unlike a duration flag. */
    @Property(tries = 1000)
    void aRequestedTtlIsReadTrimmed(@ForAll("goDurations") String text) {
        assertThat(ttlOutcome(" \t" + text + "\n ")).isEqualTo(ttlOutcome(text));
    }

    private static String ttlOutcome(String text) {
        try {
            return "ttl " + PARSER.checkTtl(text);
        } catch (ApiException e) {
            return e.code() + " " + e.getMessage();
        }
    }

    // ------------------------------------------------------------------ the management listener and certificates

    @Property(tries = 2000)
    void jolokiaRequestsAreCheckedWithoutThrowing(@ForAll("requestBodies") byte[] body,
            @ForAll @StringLength(max = 60) String query) {
        Object checked = ManagementGuardAccess.checkPost(body);
        assertThat(checked).isNotNull();
        try {
            ManagementGuardAccess.parameters(query);
        } catch (IllegalArgumentException e) {
            // the guard answers 400 for it
        }
    }

    @Property(tries = 3000)
    void certificateNamesAreReadOrRefusedAsUnreadable(@ForAll @Size(max = 120) byte[] der) {
        try {
            GoCertificateNamesAccess.commonNameOf(der);
        } catch (GoCertificateNames.Unreadable e) {
            assertThat(e.getMessage()).isNotBlank();
        }
    }

    // ------------------------------------------------------------------ helpers

    static String jsonString(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
