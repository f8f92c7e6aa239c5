package io.unboundedcloud.playpen.model;

import static io.unboundedcloud.playpen.model.AllocRequestParser.BAD_ARCHITECTURE;
import static io.unboundedcloud.playpen.model.AllocRequestParser.BAD_RESOURCE_TYPE;
import static io.unboundedcloud.playpen.model.AllocRequestParser.BAD_WIREGUARD_KEY;
import static io.unboundedcloud.playpen.model.AllocRequestParser.INVALID_JSON;
import static io.unboundedcloud.playpen.model.AllocRequestParser.ALLOC_KEY_REQUIRED;
import static io.unboundedcloud.playpen.model.AllocRequestParser.RELEASE_KEY_REQUIRED;
import static io.unboundedcloud.playpen.model.AllocRequestParser.WIREGUARD_KEY_REQUIRED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.unboundedcloud.playpen.api.ApiException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

/** The reference's validation rules one by one, in order: when a body breaks several rules the first one in the list is reported. */
class AllocRequestParserTest {
    /** base64 of bytes 0..31. */
    static final String WG = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    static final String WG_31_BYTES = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==";
    static final String WG_33_BYTES = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8g";
    /** printf abc | sha256sum */
    static final String HASH_ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    /** printf hdr | sha256sum */
    static final String HASH_HDR = "fd8ae45e5ecb4e0d880ec94769c1da47fa8740dad756e4a1e797d980a8b547b0";
    /** printf body-key | sha256sum */
    static final String HASH_BODY_KEY = "154b2dbe7bbb74b7872d6fbd4f6ab476efed219e01041ea8ff7cb26933e75e5e";
    /** The Go operator's words, then what to send instead (the parser below offers three versions). */
    static final String OFFERED = "; send one this operator offers, v1.31.2, v1.33.0 or v1.32.9-rc.1, or leave kubernetesVersion out for the newest, v1.33.0";
    static final String NOT_CONFIGURED = "kubernetes version \"v1.99.0\" is not configured for control-plane allocation"
            + OFFERED;

    private final AllocRequestParser parser = new AllocRequestParser(List.of("v1.31.2", "v1.33.0", "v1.32.9-rc.1"));

    private static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    private static ApiException badRequest(Runnable r) {
        ApiException e = catchThrowableOfType(ApiException.class, r::run);
        assertThat(e).as("expected a 400").isNotNull();
        assertThat(e.code()).isEqualTo(400);
        assertThat(e.reason()).isEqualTo("BadRequest");
        return e;
    }

    /** The Go operator's words for an invalid WireGuard key, then what a valid one is and what is wrong with this one. */
    static String badKey(String thisOne) {
        return BAD_WIREGUARD_KEY + "; send the 44 characters of standard base64 (A-Z, a-z, 0-9, + and /, then \"=\") that"
                + " \"wg genkey | wg pubkey\" prints for your peer; this one " + thisOne;
    }

    @Test
    void anInvalidWireGuardKeySaysWhatAValidOneIs() {
        ApiException e = badRequest(() -> parser.parseAlloc(utf8("{\"idempotencyKey\":\"k\",\"wireGuardPublicKey\":\""
                + "ab".repeat(32) + "\"}"), null));
        assertThat(e.getMessage()).startsWith(BAD_WIREGUARD_KEY + "; ").contains("44 characters of standard base64")
                .contains("wg genkey | wg pubkey").endsWith("this one is 64 characters long").doesNotContain("abab");
    }

    static Stream<Arguments> rejected() {
        return Stream.of(
                // rule 1: a JSON object
                Arguments.of("not JSON", "not json", null, invalid("the body is not valid JSON near line 1, column 1")),
                Arguments.of("JSON array", "[]", "hdr", invalid("the body is an array, not an object")),
                Arguments.of("JSON array of an object", "[{\"idempotencyKey\":\"abc\"}]", null, invalid("the body is an array, not an object")),
                Arguments.of("JSON string", "\"abc\"", "hdr", invalid("the body is a string, not an object")),
                Arguments.of("JSON number", "42", "hdr", invalid("the body is a number, not an object")),
                Arguments.of("number-typed field", "{\"idempotencyKey\":\"abc\",\"architecture\":1}", null,
                        invalid("field \"architecture\" is a number, not a string")),
                Arguments.of("number-typed key even with the header set", "{\"idempotencyKey\":5}", "hdr",
                        invalid("field \"idempotencyKey\" is a number, not a string")),
                Arguments.of("object-typed field", "{\"idempotencyKey\":\"abc\",\"resourceType\":{}}", null,
                        invalid("field \"resourceType\" is an object, not a string")),
                Arguments.of("boolean-typed field", "{\"idempotencyKey\":\"abc\",\"wireGuardPublicKey\":true}", null,
                        invalid("field \"wireGuardPublicKey\" is a boolean, not a string")),
                Arguments.of("empty body", "", "hdr", invalid("the body is empty")),
                Arguments.of("whitespace body", " \r\n\t", "hdr", invalid("the body is empty")),
                Arguments.of("garbage inside the first value", "{\"idempotencyKey\":\"abc\" x}", null,
                        invalid("the body is not valid JSON near line 1, column 25")),
                Arguments.of("a byte order mark", "\uFEFF{\"idempotencyKey\":\"abc\"}", null,
                        invalid("the body starts with a byte order mark (U+FEFF); save it as UTF-8 without one")),
                Arguments.of("string-typed key field in another case", "{\"IdempotencyKey\":[\"abc\"]}", "hdr",
                        invalid("field \"IdempotencyKey\" is an array, not a string")),
                // Go's decoder reads the first value only: null is an empty request, what follows is never read
                Arguments.of("JSON null is an empty request", "null", null, ALLOC_KEY_REQUIRED),
                Arguments.of("JSON null with a header key", "null x", "hdr", WIREGUARD_KEY_REQUIRED),
                Arguments.of("trailing garbage is never read", "{\"idempotencyKey\":\"abc\"} x", null, WIREGUARD_KEY_REQUIRED),
                Arguments.of("only the first of two objects", "{}{\"idempotencyKey\":\"abc\"}", null, ALLOC_KEY_REQUIRED),
                Arguments.of("truncated, also no key", "{\"resourceType\":", null,
                        invalid("the body ends before its JSON value does")),
                // rule 2: idempotency key
                Arguments.of("no key anywhere", "{}", null, ALLOC_KEY_REQUIRED),
                Arguments.of("missing key before bad resourceType", "{\"resourceType\":\"vm\"}", null, ALLOC_KEY_REQUIRED),
                Arguments.of("blank body key before bad everything",
                        "{\"idempotencyKey\":\"  \",\"resourceType\":\"vm\",\"wireGuardPublicKey\":\"x\",\"architecture\":\"x86\"}",
                        null, ALLOC_KEY_REQUIRED),
                Arguments.of("blank header, no body key", "{\"resourceType\":\"vm\"}", "   ", ALLOC_KEY_REQUIRED),
                Arguments.of("null body key", "{\"idempotencyKey\":null}", null, ALLOC_KEY_REQUIRED),
                // rule 3: resourceType
                Arguments.of("bad resourceType before bad WireGuard key and arch",
                        "{\"idempotencyKey\":\"abc\",\"resourceType\":\"vm\",\"wireGuardPublicKey\":\"x\",\"architecture\":\"x86\"}",
                        null, BAD_RESOURCE_TYPE),
                Arguments.of("resourceType control_plane", "{\"resourceType\":\"control_plane\"}", "hdr", BAD_RESOURCE_TYPE),
                Arguments.of("resourceType runners", "{\"resourceType\":\"runners\",\"wireGuardPublicKey\":\"" + WG + "\"}",
                        "hdr", BAD_RESOURCE_TYPE),
                // rule 4: runner WireGuard key
                Arguments.of("runner without WireGuard key", "{\"idempotencyKey\":\"abc\"}", null, WIREGUARD_KEY_REQUIRED),
                Arguments.of("runner bad WireGuard key before bad arch",
                        "{\"idempotencyKey\":\"abc\",\"wireGuardPublicKey\":\"x\",\"architecture\":\"x86\"}", null, badKey("is 1 character long")),
                Arguments.of("WireGuard key of 31 bytes", "{\"wireGuardPublicKey\":\"" + WG_31_BYTES + "\"}", "hdr", badKey("has an \"=\" before its end, so it holds fewer than 32 bytes")),
                Arguments.of("WireGuard key of 33 bytes", "{\"wireGuardPublicKey\":\"" + WG_33_BYTES + "\"}", "hdr", badKey("does not end in \"=\"")),
                Arguments.of("WireGuard key without padding",
                        "{\"wireGuardPublicKey\":\"" + WG.substring(0, 43) + "\"}", "hdr", badKey("is 43 characters long")),
                Arguments.of("WireGuard key in URL-safe base64",
                        "{\"wireGuardPublicKey\":\"" + "-_" + WG.substring(2) + "\"}", "hdr", badKey("has a character outside that alphabet")),
                Arguments.of("WireGuard key not base64",
                        "{\"wireGuardPublicKey\":\"" + "!!" + WG.substring(2) + "\"}", "hdr", badKey("has a character outside that alphabet")),
                Arguments.of("WireGuard key with an inner space",
                        "{\"wireGuardPublicKey\":\"" + WG.substring(0, 20) + " " + WG.substring(21) + "\"}", "hdr", badKey("has a character outside that alphabet")),
                Arguments.of("WireGuard key hex", "{\"wireGuardPublicKey\":\"" + "ab".repeat(32) + "\"}", "hdr", badKey("is 64 characters long")),
                // rule 5: architecture
                Arguments.of("runner arch x86", "{\"wireGuardPublicKey\":\"" + WG + "\",\"architecture\":\"x86\"}", "hdr", BAD_ARCHITECTURE),
                Arguments.of("runner arch x86_64", "{\"wireGuardPublicKey\":\"" + WG + "\",\"architecture\":\"x86_64\"}", "hdr", BAD_ARCHITECTURE),
                Arguments.of("control plane ignores bad WireGuard key, bad arch reported",
                        "{\"resourceType\":\"controlPlane\",\"wireGuardPublicKey\":\"x\",\"architecture\":\"arm\"}", "hdr", BAD_ARCHITECTURE),
                Arguments.of("control plane bad arch before unconfigured version",
                        "{\"resourceType\":\"controlPlane\",\"kubernetesVersion\":\"v1.99.0\",\"architecture\":\"s390x\"}", "hdr",
                        BAD_ARCHITECTURE),
                // rule 6: control-plane version
                Arguments.of("unconfigured version", "{\"resourceType\":\"controlPlane\",\"kubernetesVersion\":\"v1.99.0\"}", "hdr",
                        NOT_CONFIGURED),
                Arguments.of("unconfigured version gets its v",
                        "{\"resourceType\":\"control-plane\",\"kubernetesVersion\":\"1.99.0\",\"wireGuardPublicKey\":\"x\"}", "hdr",
                        NOT_CONFIGURED),
                Arguments.of("partial version is not a configured one",
                        "{\"resourceType\":\"controlPlane\",\"kubernetesVersion\":\"v1.33\"}", "hdr",
                        "kubernetes version \"v1.33\" is not configured for control-plane allocation" + OFFERED));
    }

    @ParameterizedTest(name = "{0} → {3}")
    @MethodSource("rejected")
    void rejectsWithTheFirstBrokenRule(String what, String body, String header, String message) {
        ApiException e = badRequest(() -> parser.parseAlloc(utf8(body), header));
        assertThat(e.getMessage()).isEqualTo(message);
    }

    /** The reference's words, what is wrong, and what an alloc body looks like. */
    private static String invalid(String whatIsWrong) {
        return INVALID_JSON + ": " + whatIsWrong + "; send one JSON object of string fields, such as"
                + " {\"idempotencyKey\":\"job-42\",\"resourceType\":\"runner\",\"architecture\":\"amd64\","
                + "\"wireGuardPublicKey\":\"<your WireGuard public key>\"}";
    }

    @Test
    void nullBodyIsInvalidJson() {
        assertThat(badRequest(() -> parser.parseAlloc(null, "hdr")).getMessage()).isEqualTo(invalid("the body is empty"));
    }

    @Test
    void aSyntaxErrorIsPlacedByLineAndColumnOfTheBodyAsSent() {
        // leading blank lines are skipped before the JSON is read, yet still count for the position reported
        String body = "\n\n{\n  \"idempotencyKey\": \"a\",\n  \"architecture\": amd64\n}";
        assertThat(badRequest(() -> parser.parseAlloc(utf8(body), null)).getMessage())
                .isEqualTo(invalid("the body is not valid JSON near line 5, column 19"));
        assertThat(badRequest(() -> parser.parseAlloc(utf8("{\"a\":1,}"), null)).getMessage())
                .isEqualTo(invalid("the body is not valid JSON near line 1, column 8"));
        // a refused word is placed at its start, also when the body ends with it
        assertThat(badRequest(() -> parser.parseAlloc(utf8("nope"), null)).getMessage())
                .isEqualTo(invalid("the body is not valid JSON near line 1, column 1"));
        // a wrong character inside a word is placed at itself: the G of a broken unicode escape
        assertThat(badRequest(() -> parser.parseAlloc(utf8("{\"idempotencyKey\":\"a\\u12G4\"}"), null)).getMessage())
                .isEqualTo(invalid("the body is not valid JSON near line 1, column 25"));
    }

    @Test
    void theFirstFieldOfAnotherTypeIsNamedAndTheBodyIsNeverQuoted() {
        String secret = "do-not-echo-" + "x".repeat(10);
        String body = "{\"idempotencyKey\":\"" + secret + "\",\"architecture\":1,\"resourceType\":[]}";
        String message = badRequest(() -> parser.parseAlloc(utf8(body), null)).getMessage();
        assertThat(message).isEqualTo(invalid("field \"architecture\" is a number, not a string"));
        String broken = "{\"idempotencyKey\":\"" + secret + "\" " + secret + "}";
        assertThat(badRequest(() -> parser.parseAlloc(utf8(broken), null)).getMessage()).doesNotContain(secret);
    }

    @Test
    void numberOfAnyLengthInAnUnknownFieldIsValidJsonLikeGo() {
        // Go's scanner takes a number literal of any length; Jackson's default stops at 1000 digits (hostile corpus)
        String digits = "9".repeat(20_000);
        AllocCommand cmd = parser.parseAlloc(utf8("{\"idempotencyKey\":\"abc\",\"x\":" + digits + ",\"y\":-0." + digits
                + "e-" + digits + ",\"wireGuardPublicKey\":\"" + WG + "\"}"), null);
        assertThat(cmd).isEqualTo(new AllocCommand(HASH_ABC, ResourceType.RUNNER, "", WG, "amd64"));
        assertThat(badRequest(() -> parser.parseAlloc(utf8("{\"idempotencyKey\":" + digits + "}"), null)).getMessage())
                .isEqualTo(invalid("field \"idempotencyKey\" is a number, not a string"));
    }

    @Test
    void runnerWithDefaults() {
        AllocCommand cmd = parser.parseAlloc(utf8("{\"idempotencyKey\":\"abc\",\"wireGuardPublicKey\":\"" + WG + "\"}\n"), null);
        assertThat(cmd).isEqualTo(new AllocCommand(HASH_ABC, ResourceType.RUNNER, "", WG, "amd64"));
        // printf 'runner\n\n<WG>\namd64' | sha256sum
        assertThat(cmd.requestHash()).isEqualTo("2eb23d0c38ab31537dcd055ab26ae9cf9168611e4406dd2bb702e3bac517ac2c");
        assertThat(cmd.keyHashPrefix()).isEqualTo("ba7816bf");
    }

    @Test
    void runnerArm64RequestHash() {
        AllocCommand cmd = parser.parseAlloc(utf8(
                "{\"resourceType\":\"runner\",\"wireGuardPublicKey\":\" " + WG + " \",\"architecture\":\"arm64\","
                        + "\"kubernetesVersion\":\"v1.33.0\"}"), "abc");
        // the WireGuard key is trimmed; a runner's kubernetesVersion is not used, yet the reference hashes it as sent
        assertThat(cmd).isEqualTo(new AllocCommand(HASH_ABC, ResourceType.RUNNER, "", WG, "arm64",
                // printf 'runner\nv1.33.0\n<WG>\narm64' | sha256sum
                "fbb98071269f4eb69053f4972c18b930b561a0307311560a60a7a0fe1f8ad8d1"));
        AllocCommand without = parser.parseAlloc(utf8(
                "{\"wireGuardPublicKey\":\"" + WG + "\",\"architecture\":\"arm64\"}"), "abc");
        // printf 'runner\n\n<WG>\narm64' | sha256sum
        assertThat(without.requestHash()).isEqualTo("2d7f8a7ac0ccb786afb40f2e91fa30dc700d57e5e5c5360ee9dc9b409970f418");
        AllocCommand untrimmed = parser.parseAlloc(utf8("{\"wireGuardPublicKey\":\"" + WG + "\",\"kubernetesVersion\":\"1.2 \"}"), "abc");
        // printf 'runner\n1.2 \n<WG>\namd64' | sha256sum
        assertThat(untrimmed.requestHash()).isEqualTo("d70536dd4635adb40478089719a34ea433d59c911f886fe4fcc37dce29474e59");
    }

    @Test
    void nullFieldsAreEmpty() {
        AllocCommand cmd = parser.parseAlloc(utf8("{\"idempotencyKey\":\"abc\",\"resourceType\":null,\"kubernetesVersion\":null,"
                + "\"wireGuardPublicKey\":\"" + WG + "\",\"architecture\":null,\"somethingElse\":7}"), null);
        assertThat(cmd).isEqualTo(new AllocCommand(HASH_ABC, ResourceType.RUNNER, "", WG, "amd64"));
    }

    @ParameterizedTest(name = "header {0}, body key {1} → {2}")
    @CsvSource(nullValues = "-", value = {
            "hdr,       body-key, " + HASH_HDR,
            "'  hdr  ', body-key, " + HASH_HDR,
            "-,         body-key, " + HASH_BODY_KEY,
            "'',        body-key, " + HASH_BODY_KEY,
            "'  ',      ' body-key ', " + HASH_BODY_KEY,
            "hdr,       -,        " + HASH_HDR,
    })
    void headerKeyWinsOverBodyKey(String header, String bodyKey, String expectedHash) {
        String key = bodyKey == null ? "" : "\"idempotencyKey\":\"" + bodyKey + "\",";
        AllocCommand cmd = parser.parseAlloc(utf8("{" + key + "\"wireGuardPublicKey\":\"" + WG + "\"}"), header);
        assertThat(cmd.keyHash()).isEqualTo(expectedHash);
    }

    @ParameterizedTest(name = "resourceType \"{0}\" → {1}")
    @CsvSource({
            "'',            RUNNER",
            "runner,        RUNNER",
            "RUNNER,        RUNNER",
            "Runner,        RUNNER",
            "controlPlane,  CONTROL_PLANE",
            "controlplane,  CONTROL_PLANE",
            "CONTROLPLANE,  CONTROL_PLANE",
            "control-plane, CONTROL_PLANE",
            "Control-Plane, CONTROL_PLANE",
    })
    void resourceTypeVariants(String type, ResourceType expected) {
        AllocCommand cmd = parser.parseAlloc(utf8("{\"resourceType\":\"" + type + "\",\"wireGuardPublicKey\":\"" + WG + "\"}"), "hdr");
        assertThat(cmd.resourceType()).isEqualTo(expected);
        assertThat(cmd.resourceType().wire()).isEqualTo(expected == ResourceType.RUNNER ? "runner" : "controlPlane");
    }

    @ParameterizedTest(name = "architecture \"{0}\" → {1}")
    @CsvSource({"'', amd64", "amd64, amd64", "arm64, arm64"})
    void architectureVariants(String arch, String expected) {
        AllocCommand runner = parser.parseAlloc(
                utf8("{\"wireGuardPublicKey\":\"" + WG + "\",\"architecture\":\"" + arch + "\"}"), "hdr");
        assertThat(runner.architecture()).isEqualTo(expected);
        AllocCommand cp = parser.parseAlloc(utf8("{\"resourceType\":\"controlPlane\",\"architecture\":\"" + arch + "\"}"), "hdr");
        assertThat(cp.architecture()).isEqualTo(expected);
    }

    @ParameterizedTest(name = "kubernetesVersion \"{0}\" → {1}")
    @CsvSource({
            // request hash: printf 'controlPlane\n<version>\n<WG>\namd64' | sha256sum
            "v1.33.0,      v1.33.0,      c78732a79532970953dd42b4b81ede9174ed3ef50b4069886067b01ac55de92b",
            "1.33.0,       v1.33.0,      c78732a79532970953dd42b4b81ede9174ed3ef50b4069886067b01ac55de92b",
            "v1.31.2,      v1.31.2,      3a550994630566e061b8a7943cee8548675c195f38f40481979e60cf79b1f589",
            "1.32.9-rc.1,  v1.32.9-rc.1, d8a20e0f9cce19555fffde466d35760ccc4730022967f1ca579f094ee3585acc",
            "'',           v1.33.0,      c78732a79532970953dd42b4b81ede9174ed3ef50b4069886067b01ac55de92b",
    })
    void controlPlaneVersion(String version, String expected, String requestHash) {
        AllocCommand cmd = parser.parseAlloc(utf8("{\"idempotencyKey\":\"abc\",\"resourceType\":\"controlPlane\","
                + "\"kubernetesVersion\":\"" + version + "\",\"wireGuardPublicKey\":\"" + WG + "\"}"), null);
        // a control plane's claim carries no client WireGuard key, but the one sent is part of the request hash
        AllocCommand want = new AllocCommand(HASH_ABC, ResourceType.CONTROL_PLANE, expected, "", "amd64", requestHash);
        // left out, the version is marked as the default of the moment (a 409 after it moves says so)
        assertThat(cmd).isEqualTo(version.isEmpty() ? want.withVersionDefaulted() : want);
    }

    @Test
    void controlPlaneRequestHash() {
        AllocCommand cmd = parser.parseAlloc(utf8("{\"resourceType\":\"controlPlane\"}"), "abc");
        assertThat(cmd).isEqualTo(new AllocCommand(HASH_ABC, ResourceType.CONTROL_PLANE, "v1.33.0", "", "amd64")
                .withVersionDefaulted());
        // printf 'controlPlane\nv1.33.0\n\namd64' | sha256sum
        assertThat(cmd.requestHash()).isEqualTo("10fd416c4eb66e48e1eaca1db7ddabdd42b2c58b141c717403d5957c5a1bd30e");
        AllocCommand rc = parser.parseAlloc(utf8("{\"resourceType\":\"controlPlane\",\"kubernetesVersion\":\"1.32.9-rc.1\"}"), "abc");
        // printf 'controlPlane\nv1.32.9-rc.1\n\namd64' | sha256sum
        assertThat(rc.requestHash()).isEqualTo("1a1d1bea9e61863b8db2960796bb0bf7af351787b62027a7878bcc938766172f");
        AllocCommand arm = parser.parseAlloc(utf8("{\"resourceType\":\"controlPlane\",\"architecture\":\"arm64\"}"), "abc");
        // printf 'controlPlane\nv1.33.0\n\narm64' | sha256sum
        assertThat(arm.requestHash()).isEqualTo("e9f677828a59097316654dcdadca53dc5698c0dc2d7c8f18caa2ded637681f49");
    }

    @Test
    void highestVersionComparesNumerically() {
        assertThat(AllocRequestParser.highest(List.of("v1.31.2", "v1.33.0", "v1.32.9-rc.1"))).isEqualTo("v1.33.0");
        assertThat(AllocRequestParser.highest(List.of("v1.9.0", "v1.10.0"))).isEqualTo("v1.10.0");
        assertThat(AllocRequestParser.highest(List.of("v1.10.0", "v1.9.0"))).isEqualTo("v1.10.0");
        assertThat(AllocRequestParser.highest(List.of("v1.33.9", "v1.33.10"))).isEqualTo("v1.33.10");
        assertThat(AllocRequestParser.highest(List.of("v1.32.10", "v1.33.0+k3s1"))).isEqualTo("v1.33.0+k3s1");
        assertThat(AllocRequestParser.highest(List.of("v1.33.0", "v1.33.1-rc.1"))).isEqualTo("v1.33.1-rc.1");
        assertThat(AllocRequestParser.highest(List.of("v2.0.0", "v1.99.99"))).isEqualTo("v2.0.0");

        AllocRequestParser nineTen = new AllocRequestParser(List.of("v1.9.0", "v1.10.0"));
        assertThat(nineTen.parseAlloc(utf8("{\"resourceType\":\"controlPlane\"}"), "abc").kubernetesVersion()).isEqualTo("v1.10.0");
    }

    @Test
    void wireGuardKeyCheck() {
        assertThat(AllocRequestParser.isWireGuardKey(WG)).isTrue();
        assertThat(AllocRequestParser.isWireGuardKey("ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM=")).isTrue();
        assertThat(AllocRequestParser.isWireGuardKey(null)).isFalse();
        assertThat(AllocRequestParser.isWireGuardKey("")).isFalse();
        assertThat(AllocRequestParser.isWireGuardKey(WG_31_BYTES)).isFalse();
        assertThat(AllocRequestParser.isWireGuardKey(WG_33_BYTES)).isFalse();
        assertThat(AllocRequestParser.isWireGuardKey(WG.substring(0, 43))).isFalse();
        assertThat(AllocRequestParser.isWireGuardKey(" " + WG)).isFalse();
    }

    // --- dealloc ---

    @Test
    void deallocHeaderOnlyWithEmptyBody() {
        assertThat(parser.parseDealloc(new byte[0], "hdr")).isEqualTo(HASH_HDR);
        assertThat(parser.parseDealloc(null, " hdr ")).isEqualTo(HASH_HDR);
        assertThat(parser.parseDealloc(utf8("\n"), "hdr")).isEqualTo(HASH_HDR);
        assertThat(parser.parseDealloc(utf8("{}"), "hdr")).isEqualTo(HASH_HDR);
    }

    @Test
    void deallocHeaderWinsOverBody() {
        assertThat(parser.parseDealloc(utf8("{\"idempotencyKey\":\"body-key\"}"), "hdr")).isEqualTo(HASH_HDR);
    }

    @Test
    void deallocBodyKey() {
        assertThat(parser.parseDealloc(utf8("{\"idempotencyKey\":\" body-key \"}\n"), null)).isEqualTo(HASH_BODY_KEY);
        assertThat(parser.parseDealloc(utf8("{\"idempotencyKey\":\"body-key\"}"), "  ")).isEqualTo(HASH_BODY_KEY);
    }

    @Test
    void deallocWithoutKeyNamesTheKeyItNeeds() {
        assertThat(badRequest(() -> parser.parseDealloc(utf8("{}"), null)).getMessage()).isEqualTo(RELEASE_KEY_REQUIRED);
        assertThat(badRequest(() -> parser.parseDealloc(utf8("{\"idempotencyKey\":\"\"}"), "")).getMessage())
                .isEqualTo(RELEASE_KEY_REQUIRED);
    }

    @Test
    void deallocEmptyBodyWithoutHeaderIsAnEmptyRequest() {
        // the reference tolerates io.EOF on dealloc, so the missing key is what is reported
        assertThat(badRequest(() -> parser.parseDealloc(new byte[0], null)).getMessage()).isEqualTo(RELEASE_KEY_REQUIRED);
        assertThat(badRequest(() -> parser.parseDealloc(null, " ")).getMessage()).isEqualTo(RELEASE_KEY_REQUIRED);
        assertThat(badRequest(() -> parser.parseDealloc(utf8(" \r\n"), null)).getMessage()).isEqualTo(RELEASE_KEY_REQUIRED);
        assertThat(badRequest(() -> parser.parseDealloc(utf8("null"), null)).getMessage()).isEqualTo(RELEASE_KEY_REQUIRED);
    }

    @Test
    void deallocWithAHeaderKeyNeverReadsTheBody() {
        assertThat(parser.parseDealloc(utf8("not json at all"), "hdr")).isEqualTo(HASH_HDR);
        assertThat(parser.parseDealloc(utf8("{\"idempotencyKey\":1}"), "hdr")).isEqualTo(HASH_HDR);
    }

    // --- decoding like Go's json.Decoder ---

    @Test
    void fieldNamesMatchCaseInsensitively() {
        AllocCommand cmd = parser.parseAlloc(utf8("{\"IDEMPOTENCYKEY\":\"abc\",\"ResourceType\":\"controlPlane\","
                + "\"kubernetesversion\":\"v1.31.2\",\"ARCHITECTURE\":\"arm64\"}"), null);
        assertThat(cmd.keyHash()).isEqualTo(HASH_ABC);
        assertThat(cmd.resourceType()).isEqualTo(ResourceType.CONTROL_PLANE);
        assertThat(cmd.kubernetesVersion()).isEqualTo("v1.31.2");
        assertThat(cmd.architecture()).isEqualTo("arm64");
        // Go folds the Kelvin sign to K and the long s to S, so these name the Go fields too
        AllocCommand folded = parser.parseAlloc(utf8("{\"idempotency\u212Aey\":\"abc\",\"wireGuardPublic\u212Aey\":\"" + WG + "\","
                + "\"re\u017Fourcetype\":\"runner\"}"), null);
        assertThat(folded.keyHash()).isEqualTo(HASH_ABC);
        assertThat(folded.wireGuardPublicKey()).isEqualTo(WG);
    }

    @Test
    void laterFieldsWinAndNullKeepsTheEarlierValue() {
        AllocCommand cmd = parser.parseAlloc(utf8("{\"idempotencyKey\":\"x\",\"IdempotencyKey\":\"abc\",\"idempotencyKey\":null,"
                + "\"wireGuardPublicKey\":\"" + WG + "\",\"unknown\":{\"deep\":[1,2,{\"a\":null}]}}"), null);
        assertThat(cmd.keyHash()).isEqualTo(HASH_ABC);
    }

    @Test
    void invalidUtf8BecomesReplacementCharactersOnePerByte() {
        byte[] body = {'{', '"', 'i', 'd', 'e', 'm', 'p', 'o', 't', 'e', 'n', 'c', 'y', 'K', 'e', 'y', '"', ':', '"',
            'a', (byte) 0xE2, (byte) 0x82, 'b', '"', '}'};
        // Go decodes the truncated sequence E2 82 as two U+FFFD: printf 'a\xef\xbf\xbd\xef\xbf\xbdb' | sha256sum
        assertThat(parser.parseDealloc(body, null)).isEqualTo("df6bc292638d56dc79730424c8c70e0b90271d0ee49a96462e3b1c2fbc37b810");
    }

    @Test
    void wireGuardKeyMayHoldLineBreaksLikeGoBase64() {
        String split = WG.substring(0, 20) + "\\r\\n" + WG.substring(20);
        AllocCommand cmd = parser.parseAlloc(utf8("{\"wireGuardPublicKey\":\"" + split + "\"}"), "abc");
        // accepted, and claimed and hashed exactly as sent (after trimming), as the reference does
        assertThat(cmd.wireGuardPublicKey()).isEqualTo(WG.substring(0, 20) + "\r\n" + WG.substring(20));
    }

    @Test
    void anUnconfiguredVersionSaysWhichVersionsAreOfferedAndWhatLeavingItOutGives() {
        ApiException e = badRequest(() -> parser.parseAlloc(
                utf8("{\"resourceType\":\"controlPlane\",\"kubernetesVersion\":\"1.33\"}"), "abc"));
        assertThat(e.getMessage()).isEqualTo("kubernetes version \"v1.33\" is not configured for control-plane allocation;"
                + " send one this operator offers, v1.31.2, v1.33.0 or v1.32.9-rc.1, or leave kubernetesVersion out"
                + " for the newest, v1.33.0");
        ApiException one = badRequest(() -> new AllocRequestParser(List.of("v1.34.0")).parseAlloc(
                utf8("{\"resourceType\":\"controlPlane\",\"kubernetesVersion\":\"v1.33.0\"}"), "abc"));
        assertThat(one.getMessage()).isEqualTo("kubernetes version \"v1.33.0\" is not configured for control-plane"
                + " allocation; send the one this operator offers, v1.34.0, or leave kubernetesVersion out");
        // a parser given no versions (the flag itself refuses an empty list) keeps the Go words alone
        ApiException none = badRequest(() -> new AllocRequestParser(List.of()).parseAlloc(
                utf8("{\"resourceType\":\"controlPlane\",\"kubernetesVersion\":\"v1.33.0\"}"), "abc"));
        assertThat(none.getMessage()).isEqualTo("kubernetes version \"v1.33.0\" is not configured for control-plane"
                + " allocation");
    }

    @Test
    void unconfiguredVersionIsQuotedLikeGo() {
        ApiException e = badRequest(() -> parser.parseAlloc(
                utf8("{\"resourceType\":\"controlPlane\",\"kubernetesVersion\":\"1.99\\t\\\"x\"}"), "abc"));
        assertThat(e.getMessage()).isEqualTo("kubernetes version \"v1.99\\t\\\"x\" is not configured for control-plane allocation"
                + OFFERED);
    }

    @Test
    void deallocBodyMustBeAnObject() {
        String dealloc = "; send one JSON object such as {\"idempotencyKey\":\"job-42\"}, or no body and an Idempotency-Key"
                + " header";
        assertThat(badRequest(() -> parser.parseDealloc(utf8("[]"), null)).getMessage())
                .isEqualTo(INVALID_JSON + ": the body is an array, not an object" + dealloc);
        assertThat(badRequest(() -> parser.parseDealloc(utf8("{\"idempotencyKey\":1}"), null)).getMessage())
                .isEqualTo(INVALID_JSON + ": field \"idempotencyKey\" is a number, not a string" + dealloc);
    }

    @Test
    void fieldNamesThatNameNoFieldExactlyAreReportedAndAcceptedLikeGo() {
        List<String> warnings = new java.util.ArrayList<>();
        AllocCommand cmd = parser.parseAlloc(utf8("{\"IDEMPOTENCYKEY\":\"abc\",\"Architecture\":\"arm64\",\"wireGuardPublicKey\":\""
                + WG + "\",\"extra\":{\"a\":[1]},\"extra\":2}"), null, warnings);
        assertThat(cmd.architecture()).isEqualTo("arm64");
        assertThat(warnings).containsExactly(
                "field \"IDEMPOTENCYKEY\" was read as \"idempotencyKey\" (names are matched ignoring case)",
                "field \"Architecture\" was read as \"architecture\" (names are matched ignoring case)",
                "unknown field \"extra\" ignored; an alloc takes idempotencyKey, resourceType, architecture,"
                        + " wireGuardPublicKey, kubernetesVersion, ttl, waitSeconds");
    }

    @Test
    void aFieldSentTwiceIsWarnedAboutAndRefusedWhenStrict() {
        String body = "{\"idempotencyKey\":\"abc\",\"wireGuardPublicKey\":\"" + WG_31_BYTES + "\",\"wireGuardPublicKey\":\""
                + WG + "\"}";
        List<String> warnings = new java.util.ArrayList<>();
        AllocCommand cmd = parser.parseAlloc(utf8(body), null, warnings);
        assertThat(cmd.wireGuardPublicKey()).as("the last one is read, as Go reads it").isEqualTo(WG);
        assertThat(warnings).containsExactly(
                "duplicate field \"wireGuardPublicKey\": the last value sent that is not null was read");
        List<String> ignored = new java.util.ArrayList<>();
        parser.parseAlloc(utf8(body + " "), null, ignored, AllocRequestParser.FieldValidation.IGNORE);
        assertThat(ignored).isEmpty();
        List<String> strict = new java.util.ArrayList<>();
        ApiException e = badRequest(() -> parser.parseAlloc(utf8(body), null, strict,
                AllocRequestParser.FieldValidation.STRICT));
        assertThat(e.getMessage()).startsWith("strict decoding error: duplicate field \"wireGuardPublicKey\"; an alloc"
                + " takes idempotencyKey,").endsWith(": nothing was allocated");
        assertThat(strict).isEmpty();
        // a name matched only ignoring case is unknown to a strict decoder, as kube-apiserver's is case-sensitive
        ApiException folded = badRequest(() -> parser.parseAlloc(utf8("{\"idempotencyKey\":\"abc\",\"Architecture\":"
                + "\"arm64\",\"wireGuardPublicKey\":\"" + WG + "\"}"), null, strict, AllocRequestParser.FieldValidation.STRICT));
        assertThat(folded.getMessage()).startsWith("strict decoding error: unknown field \"Architecture\";");
        // a body that does not decode says so first
        ApiException broken = badRequest(() -> parser.parseAlloc(utf8("{\"x\":1,"), null, strict,
                AllocRequestParser.FieldValidation.STRICT));
        assertThat(broken.getMessage()).startsWith(INVALID_JSON);
    }

    @Test
    void aKindBesideAKeyStillAllocatesAsTheReferenceDoes() {
        AllocCommand cmd = parser.parseAlloc(utf8("{\"kind\":\"Alloc\",\"idempotencyKey\":\"abc\",\"wireGuardPublicKey\":\""
                + WG + "\"}"), null);
        assertThat(cmd.keyHash()).isEqualTo(HASH_ABC);
        AllocCommand fromHeader = parser.parseAlloc(utf8("{\"apiVersion\":\"v1\",\"wireGuardPublicKey\":\"" + WG + "\"}"),
                "hdr");
        assertThat(fromHeader.keyHash()).isEqualTo(HASH_HDR);
    }

    @Test
    void fieldValidationTakesWhatKubeApiserverTakes() {
        assertThat(AllocRequestParser.FieldValidation.of(null)).isEqualTo(AllocRequestParser.FieldValidation.WARN);
        assertThat(AllocRequestParser.FieldValidation.of("")).isEqualTo(AllocRequestParser.FieldValidation.WARN);
        assertThat(AllocRequestParser.FieldValidation.of("Warn")).isEqualTo(AllocRequestParser.FieldValidation.WARN);
        assertThat(AllocRequestParser.FieldValidation.of("Ignore")).isEqualTo(AllocRequestParser.FieldValidation.IGNORE);
        assertThat(AllocRequestParser.FieldValidation.of("Strict")).isEqualTo(AllocRequestParser.FieldValidation.STRICT);
        ApiException e = catchThrowableOfType(ApiException.class, () -> AllocRequestParser.FieldValidation.of("strict"));
        assertThat(e.code()).isEqualTo(422);
        assertThat(e.getMessage()).isEqualTo("CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported"
                + " value: \"strict\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"");
    }

    @Test
    void fieldWarningsSurviveARefusalAndAreCapped() {
        List<String> warnings = new java.util.ArrayList<>();
        StringBuilder body = new StringBuilder("{");
        for (int i = 0; i < 8; i++) {
            body.append("\"f").append(i).append("\":").append(i).append(',');
        }
        body.append("\"").append("n".repeat(100)).append("\":0}");
        badRequest(() -> parser.parseAlloc(utf8(body.toString()), null, warnings));
        assertThat(warnings).hasSize(AllocRequestParser.MAX_FIELD_WARNINGS + 1);
        assertThat(warnings.get(0)).startsWith("unknown field \"f0\" ignored;");
        assertThat(warnings.get(AllocRequestParser.MAX_FIELD_WARNINGS)).isEqualTo("and 4 more fields not named exactly");
        List<String> longName = new java.util.ArrayList<>();
        badRequest(() -> parser.parseAlloc(utf8("{\"" + "n".repeat(100) + "\":0}"), null, longName));
        assertThat(longName).containsExactly("unknown field \"" + "n".repeat(64) + "...\" ignored; an alloc takes"
                + " idempotencyKey, resourceType, architecture, wireGuardPublicKey, kubernetesVersion, ttl, waitSeconds");
        List<String> notJson = new java.util.ArrayList<>();
        badRequest(() -> parser.parseAlloc(utf8("{\"x\":1,"), null, notJson));
        assertThat(notJson).as("what was read before the body turned out broken").hasSize(1);
    }

    @Test
    void deallocAndRenewalReportTheirOwnFields() {
        List<String> dealloc = new java.util.ArrayList<>();
        parser.parseDealloc(utf8("{\"idempotencyKey\":\"k\",\"ttl\":\"1h\"}"), null, dealloc);
        assertThat(dealloc).containsExactly("unknown field \"ttl\" ignored; a dealloc takes idempotencyKey");
        List<String> renewal = new java.util.ArrayList<>();
        parser.parseRenewal(utf8("{\"idempotencyKey\":\"k\",\"TTL\":\"1h\",\"waitSeconds\":1}"), null, renewal);
        assertThat(renewal).containsExactly(
                "field \"TTL\" was read as \"ttl\" (names are matched ignoring case)",
                "unknown field \"waitSeconds\" ignored; a renewal takes idempotencyKey, ttl");
        List<String> exact = new java.util.ArrayList<>();
        parser.parseAlloc(utf8("{\"idempotencyKey\":\"k\",\"wireGuardPublicKey\":\"" + WG + "\",\"ttl\":\"1h\"}"), null, exact);
        assertThat(exact).isEmpty();
    }
}
