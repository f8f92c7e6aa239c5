package io.unboundedcloud.playpen.model;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** The hashes and ids shared bit-for-bit with the reference operator. */
public final class Hashes {
    /**
     * One SHA-256 digest per thread, kept: looking one up costs a provider search and fresh state on every call,
     * and a request hashes several times.
     */
    private static final ThreadLocal<MessageDigest> SHA256 = ThreadLocal.withInitial(() -> {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    });

    private Hashes() {
    }

    /** hex(sha256(trim(idempotencyKey))). */
    public static String keyHash(String idempotencyKey) {
        return sha256Hex(GoStrings.trimSpace(idempotencyKey));
    }

    /**
     * The key hash of an Idempotency-Key header as it came off the wire: hex(sha256(TrimSpace(the bytes sent))),
     * as the reference hashes the header value it reads (raw bytes, UTF-8 or not); null when nothing is left of it.
     */
    public static String headerKeyHash(String headerValue) {
        if (headerValue == null) {
            return null;
        }
        byte[] key = GoStrings.trimSpace(GoStrings.wireBytes(headerValue));
        return key.length == 0 ? null : sha256Hex(key);
    }

    /**
     * hex(sha256(resourceType \n kubernetesVersion \n wireGuardPublicKey \n architecture)), for every resource type,
     * over the values the reference hashes: normalised type and architecture, the trimmed WireGuard key (control
     * planes included), the resolved version for control planes and the version as sent for runners.
     */
    public static String requestHash(String resourceType, String kubernetesVersion, String wireGuardPublicKey,
            String architecture) {
        return sha256Hex(resourceType + "\n" + kubernetesVersion + "\n" + wireGuardPublicKey + "\n" + architecture);
    }

    /**
     * hex(sha256(user name)): the legacy, unkeyed owner hash (a dictionary of user names reverses it). Claims are
     * written with {@link OwnerHashes} now; this form is only read, for claims made before.
     */
    public static String ownerHash(String user) {
        return sha256Hex(user);
    }

    /** First 16 hex chars of sha256(namespace/podName). */
    public static String allocationId(String namespace, String podName) {
        return sha256Hex(namespace + "/" + podName).substring(0, 16);
    }

    public static String sha256Hex(String text) {
        return sha256Hex(text.getBytes(StandardCharsets.UTF_8));
    }

    public static String sha256Hex(byte[] bytes) {
        // digest() leaves the digest reset for the next call
        return HexFormat.of().formatHex(SHA256.get().digest(bytes));
    }

    /**
     * sha256 of {@code parts} one after the other, each after its length (four bytes, big-endian), so that no other
     * split of the same bytes shares the digest.
     */
    public static byte[] sha256LengthPrefixed(byte[]... parts) {
        MessageDigest md = SHA256.get();
        for (byte[] part : parts) {
            md.update(new byte[] {(byte) (part.length >>> 24), (byte) (part.length >>> 16), (byte) (part.length >>> 8),
                    (byte) part.length});
            md.update(part);
        }
        // digest() leaves the digest reset for the next call
        return md.digest();
    }

    /**
     * Rendezvous score of a pod for a key: a stable 64-bit mix (no per-process seed). The claim path ordered
     * candidates by it (O(N) per request); now they walk the ring ({@link #ringPosition}).
     */
    public static long rendezvous(long keySeed, String podName) {
        long h = keySeed;
        for (int i = 0; i < podName.length(); i++) {
            h = (h ^ podName.charAt(i)) * 0x100000001b3L;
        }
        return mix64(h);
    }

    /**
     * A pod's position on the consistent-hash ring (independent of any key): a request walks the ring clockwise
     * from its key's {@link #seed}, so every replica walks the same order for a key, and the pod cache keeps the
     * ring sorted as pods come and go (no per-request work over the whole pool).
     */
    public static long ringPosition(String podName) {
        long h = 0xcbf29ce484222325L;
        for (int i = 0; i < podName.length(); i++) {
            h = (h ^ podName.charAt(i)) * 0x100000001b3L;
        }
        return mix64(h);
    }

    /**
     * Where a key's k-th probe starts on the ring (k = 0: the key's {@link #seed} itself). A walk whose stop was
     * taken by another key restarts from its next probe instead of the next pod clockwise: two keys that met at
     * one pod then part ways, rather than queueing for the same successors (a convoy, worst across replicas).
     */
    public static long probeStart(long keySeed, int k) {
        return k == 0 ? keySeed : mix64(keySeed + k * 0x9e3779b97f4a7c15L);
    }

    /** How far clockwise a pod lies from a key's start on the ring (unsigned: smaller is earlier). */
    public static long ringDistance(long keySeed, String podName) {
        return ringPosition(podName) - keySeed;
    }

    /** A key's start on the ring (and its rendezvous seed) from a hex key hash (its first 16 hex chars). */
    public static long seed(String keyHash) {
        return Long.parseUnsignedLong(keyHash.substring(0, 16), 16);
    }

    private static long mix64(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    /** The first 8 hex chars of a key hash: enough to correlate log and audit lines, never the key. */
    public static String keyHashPrefix(String keyHash) {
        return keyHash.substring(0, Math.min(8, keyHash.length()));
    }
}
