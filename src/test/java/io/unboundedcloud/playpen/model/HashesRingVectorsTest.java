package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The ring order every replica computes on its own: positions, probe starts and rendezvous scores are part of what
 * replicas must agree on, so they are pinned to fixed values. The mix is SplitMix64's finalizer over FNV-1a 64 of
 * the pod name's UTF-16 units; the expected values were computed outside Java (a few lines of Python with 64-bit
 * masks), and the probe starts from a zero seed are SplitMix64's published outputs for seed 0.
 */
class HashesRingVectorsTest {
    private static final long GOLDEN_GAMMA = 0x9e3779b97f4a7c15L;

    @Test
    void probeStartsFromSeedZeroAreSplitMix64sFirstOutputs() {
        assertThat(Hashes.probeStart(0, 1)).isEqualTo(0xe220a8397b1dcdafL);
        assertThat(Hashes.probeStart(0, 2)).isEqualTo(0x6e789e6aa1b965f4L);
        assertThat(Hashes.probeStart(0, 3)).isEqualTo(0x06c45d188009454fL);
    }

    @Test
    void theFirstProbeIsTheSeedItselfAndLaterOnesAreMixed() {
        long seed = 0xba7816bf8f01cfeaL;
        assertThat(Hashes.probeStart(seed, 0)).isEqualTo(seed);
        assertThat(Hashes.probeStart(seed, 3)).isEqualTo(0xed735411c5675bfbL);
        assertThat(Hashes.probeStart(seed, 1)).isNotEqualTo(seed).isNotEqualTo(Hashes.probeStart(seed, 2));
    }

    @ParameterizedTest
    @CsvSource({
        "'', f52a15e9a9b5e89b",
        "a, 02c0bdbf481420f8",
        "playpen-runner-amd64-51820, dd26a68388c4a56f",
        "playpen-k3s-amd64-v1-33-0-16443, 887dcce09bae67d4"})
    void ringPositionsAreFixed(String podName, String hex) {
        assertThat(Hashes.ringPosition(podName)).isEqualTo(Long.parseUnsignedLong(hex, 16));
    }

    @Test
    void rendezvousScoreIsFixed() {
        assertThat(Hashes.rendezvous(0xba7816bf8f01cfeaL, "playpen-runner-amd64-51820")).isEqualTo(0x0b790cda2bec4483L);
    }

    @Test
    void rendezvousFromTheFnvOffsetBasisIsTheRingPosition() {
        // both are FNV-1a then the same mix; only the starting value differs
        for (String name : new String[] {"", "a", "playpen-runner-arm64-51999"}) {
            assertThat(Hashes.rendezvous(0xcbf29ce484222325L, name)).isEqualTo(Hashes.ringPosition(name));
        }
    }

    @Test
    void ringDistanceIsClockwiseAndUnsigned() {
        String name = "playpen-runner-amd64-51820";
        long position = Hashes.ringPosition(name);
        assertThat(Hashes.ringDistance(position, name)).isZero();
        assertThat(Hashes.ringDistance(position - 5, name)).isEqualTo(5);
        // a start just past the pod: the pod is almost a whole turn away, the largest unsigned distance
        assertThat(Long.compareUnsigned(Hashes.ringDistance(position + 1, name), -1L)).isZero();
    }

    @Test
    void keyHashPrefixIsAtMostEightCharacters() {
        assertThat(Hashes.keyHashPrefix("0123456789abcdef")).isEqualTo("01234567");
        assertThat(Hashes.keyHashPrefix("abc")).isEqualTo("abc");
    }

    @Test
    void ownerHashIsSha256OfTheName() {
        // printf 'abc' | sha256sum
        assertThat(Hashes.ownerHash("abc")).isEqualTo("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    @Test
    void probeStepIsTheGoldenGamma() {
        // probe k starts where SplitMix64 would be after k steps from the seed
        long seed = 42;
        assertThat(Hashes.probeStart(seed, 2)).isEqualTo(Hashes.probeStart(seed + GOLDEN_GAMMA, 1));
    }
}
