package io.unboundedcloud.playpen.model;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.Arrays;
import java.util.HexFormat;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Who made a claim, without writing the name on the pod, and without a dictionary undoing it: the owner hash
 * is hex(HMAC-SHA256(key, user name)) with a key that belongs to one installation (a Secret every replica
 * reads). Claims written before the key existed carry the legacy form, hex(sha256(user name)); an
 * {@link Owner} matches both, so those claims stay their owner's (listed, counted, deletable) until they end.
 */
public final class OwnerHashes {
    /** The shortest key accepted: 256 bits. */
    public static final int MIN_KEY_BYTES = 32;
    private static final String HMAC = "HmacSHA256";

    private final SecretKeySpec key;
    /** One MAC with this key per thread, kept: looking one up and keying it costs more than the hash itself. */
    private final ThreadLocal<Mac> macs = ThreadLocal.withInitial(this::newMac);

    public OwnerHashes(byte[] key) {
        if (key == null || key.length < MIN_KEY_BYTES) {
            throw new IllegalArgumentException("an owner hash key needs at least " + MIN_KEY_BYTES + " bytes");
        }
        this.key = new SecretKeySpec(Arrays.copyOf(key, key.length), HMAC);
    }

    /** One user's owner identity: the hash claims are written with now, and the legacy hash older claims carry. */
    public record Owner(String current, String legacy) {
        /** Whether a pod's owner-hash annotation names this owner, in either form. */
        public boolean matches(String ownerHash) {
            return ownerHash != null && !ownerHash.isEmpty() && (ownerHash.equals(current) || ownerHash.equals(legacy));
        }
    }

    public Owner of(String user) {
        return new Owner(keyed(user), Hashes.ownerHash(user));
    }

    String keyed(String user) {
        // doFinal leaves the MAC reset for the next call, with the same key
        return HexFormat.of().formatHex(macs.get().doFinal(user.getBytes(StandardCharsets.UTF_8)));
    }

    private Mac newMac() {
        try {
            Mac mac = Mac.getInstance(HMAC);
            mac.init(key);
            return mac;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HMAC-SHA256 is not available", e);
        }
    }

    @Override
    public String toString() {
        return "OwnerHashes[key=(redacted)]";
    }
}
