package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Trimming like Go's strings.TrimSpace keeps key hashes bit-identical to the reference's. */
class GoStringsTest {
    @Test
    void trimsUnicodeWhiteSpaceButNotOtherControlCharacters() {
        assertThat(GoStrings.trimSpace(" \t\n\u000B\f\r key \u0085\u00A0\u3000\u2028")).isEqualTo("key");
        assertThat(GoStrings.trimSpace("\u0000key\u0001")).isEqualTo("\u0000key\u0001");
        assertThat(GoStrings.trimSpace("\u200Bkey")).isEqualTo("\u200Bkey");
        assertThat(GoStrings.trimSpace("   ")).isEmpty();
        // Java's trim() would have dropped the NUL and kept the NBSP: the hash must follow Go
        assertThat(Hashes.keyHash("\u00A0K ")).isEqualTo(Hashes.sha256Hex("K"));
        assertThat(Hashes.keyHash("\u0000K")).isEqualTo(Hashes.sha256Hex("\u0000K"));
    }
}
