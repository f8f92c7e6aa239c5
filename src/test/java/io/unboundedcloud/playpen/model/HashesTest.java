package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Vectors computed outside Java with {@code printf '…' | sha256sum}. */
class HashesTest {
    private static final String SHA_ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    @Test
    void keyHashIsSha256OfTheTrimmedKey() {
        assertThat(Hashes.keyHash("abc")).isEqualTo(SHA_ABC);
        assertThat(Hashes.keyHash("  abc\t\n")).isEqualTo(SHA_ABC);
        // printf 'key-1' | sha256sum
        assertThat(Hashes.keyHash(" key-1 ")).isEqualTo("be2974546978e3739e6d6da85c4be9f334ce32df2b9fd4b6ff1b55c0d57e9d44");
        assertThat(Hashes.keyHash("abc")).hasSize(64).matches("[0-9a-f]{64}");
    }

    /** A header value one char per byte, as Netty hands it over. */
    private static String wire(int... bytes) {
        StringBuilder sb = new StringBuilder();
        for (int b : bytes) {
            sb.append((char) b);
        }
        return sb.toString();
    }

    @Test
    void aHeaderKeyIsHashedAsTheBytesSentTrimmedLikeGo() {
        // printf 'cl\xc3\xa9' | sha256sum: "clé" sent as UTF-8
        String cle = "51cbcf30514d0802eb5c60a018f384ea3fb9b69307c554ee63ecb43177594de4";
        assertThat(Hashes.headerKeyHash(wire('c', 'l', 0xC3, 0xA9))).isEqualTo(cle);
        // U+00A0 (C2 A0) and U+3000 (E3 80 80) around it are spaces to Go's TrimSpace
        assertThat(Hashes.headerKeyHash(wire(0xC2, 0xA0, 'c', 'l', 0xC3, 0xA9, 0xE3, 0x80, 0x80, ' '))).isEqualTo(cle);
        // bytes that are not UTF-8 are kept, as Go hashes them: printf '\xffabc\xc2' | sha256sum
        assertThat(Hashes.headerKeyHash(wire(' ', 0xFF, 'a', 'b', 'c', 0xC2)))
                .isEqualTo("339234066f4fd8865479a846ca4381f53a42c30edd5e24420051f241c988ec0a");
        // a lone 0xA0 byte and an overlong space (C0 A0) are not spaces: printf '\xc0\xa0k' | sha256sum
        assertThat(Hashes.headerKeyHash(wire(0xC0, 0xA0, 'k'))).isEqualTo("d7a5a4a1cf978a610b0893cec4a3630d43bbaec5627566c67945bac3f39bfb25");
        assertThat(Hashes.headerKeyHash(wire(0xC2, 0xA0, '\t'))).isNull();
        assertThat(Hashes.headerKeyHash(null)).isNull();
        // text that did not come off the wire (a char above U+00FF) is taken as UTF-8
        assertThat(Hashes.headerKeyHash(" \u4e2d ")).isEqualTo(Hashes.keyHash("\u4e2d"));
    }

    @Test
    void requestHashOfTheSpecExample() {
        // printf 'runner\n\nK=\namd64' | sha256sum
        assertThat(Hashes.requestHash("runner", "", "K=", "amd64"))
                .isEqualTo("463e04d0b500f6120f31d8c446b74da0758f7ec9091d7226092d76b0e5a65f36");
    }

    @Test
    void requestHashOfAControlPlane() {
        // printf 'controlPlane\nv1.33.0\n\namd64' | sha256sum
        assertThat(Hashes.requestHash("controlPlane", "v1.33.0", "", "amd64"))
                .isEqualTo("10fd416c4eb66e48e1eaca1db7ddabdd42b2c58b141c717403d5957c5a1bd30e");
    }

    @Test
    void allocationIdIsTheFirst16HexOfNamespaceSlashName() {
        // printf 'playpen/playpen-runner-amd64-51820' | sha256sum → 39bfc0942e903926…
        assertThat(Hashes.allocationId("playpen", "playpen-runner-amd64-51820")).isEqualTo("39bfc0942e903926");
    }

    @Test
    void seedIsTheFirst64BitsOfTheKeyHash() {
        assertThat(Hashes.seed(SHA_ABC)).isEqualTo(0xba7816bf8f01cfeaL);
        assertThat(Hashes.seed("0000000000000001" + "f".repeat(48))).isEqualTo(1L);
    }

    private static List<String> podNames() {
        List<String> names = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            names.add(PodTemplates.runnerName("amd64", 51820 + i));
        }
        return names;
    }

    private static List<String> order(String key, List<String> names) {
        long seed = Hashes.seed(Hashes.keyHash(key));
        List<String> sorted = new ArrayList<>(names);
        sorted.sort(Comparator.comparingLong((String n) -> Hashes.rendezvous(seed, n)).reversed());
        return sorted;
    }

    @Test
    void rendezvousIsStableForAKey() {
        long seed = Hashes.seed(Hashes.keyHash("key-1"));
        long first = Hashes.rendezvous(seed, "playpen-runner-amd64-51820");
        for (int i = 0; i < 3; i++) {
            assertThat(Hashes.rendezvous(seed, "playpen-runner-amd64-51820")).isEqualTo(first);
        }
        assertThat(order("key-1", podNames())).isEqualTo(order("key-1", podNames()));
        // the input order does not matter
        List<String> reversed = new ArrayList<>(podNames());
        java.util.Collections.reverse(reversed);
        assertThat(order("key-1", reversed)).isEqualTo(order("key-1", podNames()));
    }

    @Test
    void rendezvousSpreadsKeysOverPods() {
        List<String> names = podNames();
        Set<String> firstChoices = new HashSet<>();
        Set<List<String>> orders = new HashSet<>();
        for (int k = 0; k < 50; k++) {
            List<String> o = order("key-" + k, names);
            orders.add(o);
            firstChoices.add(o.get(0));
        }
        assertThat(orders).hasSize(50);
        // 50 keys over 50 pods: a fair hash gives ~32 distinct first choices; anything clustered fails
        assertThat(firstChoices.size()).isGreaterThanOrEqualTo(20);
        // distinct scores for distinct pods under one key (no ties to break by name)
        long seed = Hashes.seed(Hashes.keyHash("key-1"));
        assertThat(names.stream().map(n -> Hashes.rendezvous(seed, n)).distinct().count()).isEqualTo(50);
    }

    /** Each part after its length: the digest of the bytes 00 00 00 01 'a' 00 00 00 00, which no other split shares. */
    @Test
    void lengthPrefixedDigestHashesEachPartAfterItsLength() {
        byte[] a = {'a'};
        assertThat(java.util.HexFormat.of().formatHex(Hashes.sha256LengthPrefixed(a, new byte[0])))
                .isEqualTo(Hashes.sha256Hex(new byte[] {0, 0, 0, 1, 'a', 0, 0, 0, 0}));
        assertThat(Hashes.sha256LengthPrefixed(a, new byte[0])).isNotEqualTo(Hashes.sha256LengthPrefixed(new byte[0], a))
                .isNotEqualTo(Hashes.sha256LengthPrefixed(a));
        // the digest kept per thread starts afresh on the next call
        assertThat(Hashes.sha256LengthPrefixed(a)).isEqualTo(Hashes.sha256LengthPrefixed(a));
    }
}
