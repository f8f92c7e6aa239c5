package io.unboundedcloud.playpen.auth;

import static org.assertj.core.api.Assertions.assertThat;

import io.unboundedcloud.playpen.tls.Pki;
import io.unboundedcloud.playpen.tls.Pki.Subject;
import io.unboundedcloud.playpen.tls.Pki.Usage;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class TrustBundleParserTest {
    static final Instant NOW = Instant.parse("2026-03-01T12:00:00Z");
    static final Pki.Issued CA_1 = Pki.selfSigned(Subject.cn("front-proxy-ca"), Usage.CA, NOW.minus(Duration.ofDays(1)), Duration.ofDays(365));
    static final Pki.Issued CA_2 = Pki.selfSigned(Subject.cn("front-proxy-ca-2"), Usage.CA, NOW.minus(Duration.ofDays(1)), Duration.ofDays(365));

    static Map<String, String> data(String ca, String names) {
        Map<String, String> d = new HashMap<>();
        if (ca != null) {
            d.put(TrustBundleParser.CA_KEY, ca);
        }
        if (names != null) {
            d.put(TrustBundleParser.NAMES_KEY, names);
        }
        return d;
    }

    /** X-Remote-Uid is vouched for only when requestheader-uid-headers lists it; anything else means no uid. */
    @Test
    void theUidHeaderCountsOnlyWhenTheConfigMapListsIt() {
        Map<String, String> d = data(CA_1.certificatePem(), null);
        assertThat(TrustBundleParser.parse(d, 1).sendsUid()).isFalse();
        for (String listed : new String[] {"[\"X-Remote-Uid\"]", "[\"x-remote-uid\"]", "[\"X-Other\",\"X-Remote-Uid\"]"}) {
            d.put(TrustBundleParser.UID_HEADERS_KEY, listed);
            assertThat(TrustBundleParser.parse(d, 1).sendsUid()).as(listed).isTrue();
        }
        for (String not : new String[] {"[]", "[\"X-Other-Uid\"]", "\"X-Remote-Uid\"", "not json", "[1]", ""}) {
            d.put(TrustBundleParser.UID_HEADERS_KEY, not);
            TrustBundle tb = TrustBundleParser.parse(d, 1);
            assertThat(tb.valid()).as(not).isTrue();
            assertThat(tb.sendsUid()).as(not).isFalse();
        }
    }

    @Test
    void bundleWithNames() {
        TrustBundle tb = TrustBundleParser.parse(
                data(CA_1.certificatePem() + CA_2.certificatePem(), "[\"front-proxy-client\",\"aggregator\"]"), 7);
        assertThat(tb.valid()).isTrue();
        assertThat(tb.invalidReason()).isNull();
        assertThat(tb.generation()).isEqualTo(7);
        assertThat(tb.cas()).containsExactly(CA_1.certificate(), CA_2.certificate());
        assertThat(tb.allowedNames()).containsExactlyInAnyOrder("front-proxy-client", "aggregator");
        assertThat(tb.anchors()).hasSize(2);
    }

    @ParameterizedTest(name = "names {0} → any CN")
    @ValueSource(strings = {"[]", "", "  "})
    void emptyNamesAllowAnyCn(String names) {
        TrustBundle tb = TrustBundleParser.parse(data(CA_1.certificatePem(), names), 1);
        assertThat(tb.valid()).isTrue();
        assertThat(tb.allowedNames()).isEmpty();
    }

    @ParameterizedTest(name = "names {0} → invalid bundle (fail closed)")
    @ValueSource(strings = {"[\"\"]", "[123]", "[\"front-proxy-client\", null]"})
    void unreadableNamesInvalidateTheBundle(String names) {
        TrustBundle tb = TrustBundleParser.parse(data(CA_1.certificatePem(), names), 1);
        assertThat(tb.valid()).isFalse();
        assertThat(tb.invalidReason()).isEqualTo("requestheader-allowed-names holds an empty or non-string name");
    }

    @Test
    void missingNamesAllowAnyCn() {
        TrustBundle tb = TrustBundleParser.parse(data(CA_1.certificatePem(), null), 1);
        assertThat(tb.valid()).isTrue();
        assertThat(tb.allowedNames()).isEmpty();
    }

    @Test
    void noConfigMap() {
        TrustBundle tb = TrustBundleParser.parse(null, 3);
        assertThat(tb.valid()).isFalse();
        assertThat(tb.invalidReason()).isEqualTo("ConfigMap kube-system/extension-apiserver-authentication not found");
        assertThat(tb.generation()).isEqualTo(3);
        assertThat(tb.cas()).isEmpty();
    }

    @ParameterizedTest(name = "CA \"{0}\"")
    @ValueSource(strings = {"", "  \n"})
    void missingCa(String ca) {
        assertThat(TrustBundleParser.parse(data(ca, "[]"), 1).invalidReason())
                .isEqualTo("requestheader-client-ca-file is missing or empty");
        assertThat(TrustBundleParser.parse(data(null, "[]"), 1).invalidReason())
                .isEqualTo("requestheader-client-ca-file is missing or empty");
    }

    @Test
    void caThatIsNotPem() {
        TrustBundle tb = TrustBundleParser.parse(data("-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n", "[]"), 1);
        assertThat(tb.valid()).isFalse();
        assertThat(tb.invalidReason()).isEqualTo("requestheader-client-ca-file is not a PEM certificate bundle");
    }

    @Test
    void caThatIsPlainText() {
        TrustBundle tb = TrustBundleParser.parse(data("just some text", "[]"), 1);
        assertThat(tb.valid()).isFalse();
        assertThat(tb.invalidReason()).isEqualTo("requestheader-client-ca-file holds no certificate");
    }

    @Test
    void caThatHoldsOnlyAKey() {
        TrustBundle tb = TrustBundleParser.parse(data(CA_1.privateKeyPem(), "[]"), 1);
        assertThat(tb.valid()).isFalse();
        assertThat(tb.invalidReason()).isEqualTo("requestheader-client-ca-file holds no certificate");
    }

    @Test
    void otherPemBlocksAndTextAreSkipped() {
        String pem = "# front-proxy CAs\n" + CA_1.privateKeyPem() + CA_1.certificatePem() + "\n# next\n"
                + CA_2.privateKeyPem() + CA_2.certificatePem();
        TrustBundle tb = TrustBundleParser.parse(data(pem, "[\"front-proxy-client\"]"), 4);
        assertThat(tb.valid()).isTrue();
        assertThat(tb.cas()).containsExactly(CA_1.certificate(), CA_2.certificate());
    }

    @ParameterizedTest(name = "names {0}")
    @ValueSource(strings = {"\"front-proxy-client\"", "{\"a\":1}", "[\"a\"", "front-proxy-client"})
    void namesThatAreNotAJsonArray(String names) {
        TrustBundle tb = TrustBundleParser.parse(data(CA_1.certificatePem(), names), 1);
        assertThat(tb.valid()).isFalse();
        assertThat(tb.invalidReason()).isEqualTo("requestheader-allowed-names is not a JSON array");
    }

    @Test
    void invalidBundleIsNeverValid() {
        assertThat(TrustBundle.invalid("x", 1).valid()).isFalse();
        assertThat(new TrustBundle(java.util.List.of(), java.util.Set.of(), null, 1).valid()).isFalse();
    }
}
