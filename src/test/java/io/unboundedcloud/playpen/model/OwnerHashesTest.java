package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import org.junit.jupiter.api.Test;

/** Owner hashes keyed per installation, with the legacy unkeyed form still recognised. */
class OwnerHashesTest {
    static final byte[] KEY = new byte[32];
    static final byte[] OTHER_KEY = new byte[32];

    static {
        Arrays.fill(KEY, (byte) 7);
        Arrays.fill(OTHER_KEY, (byte) 9);
    }

    @Test
    void theHashIsHmacSha256OfTheUtf8NameUnderTheKey() throws Exception {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(KEY, "HmacSHA256"));
        String expected = HexFormat.of().formatHex(mac.doFinal("Jos\u00e9".getBytes(StandardCharsets.UTF_8)));
        OwnerHashes.Owner o = new OwnerHashes(KEY).of("Jos\u00e9");
        assertThat(o.current()).isEqualTo(expected).hasSize(64);
        assertThat(o.legacy()).isEqualTo(Hashes.sha256Hex("Jos\u00e9"));
        assertThat(o.current()).isNotEqualTo(o.legacy());
    }

    @Test
    void oneInstanceHashesEveryNameAfterAnotherAsAFreshOneDoes() throws Exception {
        OwnerHashes h = new OwnerHashes(KEY);
        for (String name : new String[] {"alice", "Jos\u00e9", "alice", "bob"}) {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(KEY, "HmacSHA256"));
            String expected = HexFormat.of().formatHex(mac.doFinal(name.getBytes(StandardCharsets.UTF_8)));
            assertThat(h.of(name).current()).as(name).isEqualTo(expected);
            assertThat(h.of(name).legacy()).as(name).isEqualTo(Hashes.sha256Hex(name));
        }
    }

    @Test
    void anotherInstallationsKeyGivesAnotherHash() {
        assertThat(new OwnerHashes(KEY).of("alice").current()).isEqualTo(new OwnerHashes(KEY.clone()).of("alice").current())
                .isNotEqualTo(new OwnerHashes(OTHER_KEY).of("alice").current());
        assertThat(new OwnerHashes(KEY).of("alice").current()).isNotEqualTo(new OwnerHashes(KEY).of("alice ").current());
    }

    @Test
    void anOwnerMatchesBothFormsOfItsOwnHashOnly() {
        OwnerHashes h = new OwnerHashes(KEY);
        OwnerHashes.Owner alice = h.of("alice");
        assertThat(alice.matches(alice.current())).isTrue();
        assertThat(alice.matches(Hashes.sha256Hex("alice"))).isTrue();
        assertThat(alice.matches(h.of("bob").current())).isFalse();
        assertThat(alice.matches(Hashes.sha256Hex("bob"))).isFalse();
        assertThat(alice.matches("")).isFalse();
        assertThat(alice.matches(null)).isFalse();
    }

    @Test
    void aShortKeyIsRefusedAndTheKeyNeverShows() {
        assertThatThrownBy(() -> new OwnerHashes(new byte[31])).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new OwnerHashes(null)).isInstanceOf(IllegalArgumentException.class);
        assertThat(new OwnerHashes(KEY).toString()).doesNotContain("7").contains("redacted");
    }
}
