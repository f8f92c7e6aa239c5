package io.unboundedcloud.playpen.dev;

import java.security.GeneralSecurityException;
import java.security.KeyPairGenerator;
import java.util.Arrays;
import java.util.Base64;

/** Real X25519 (WireGuard) public keys, as the runner would publish them: standard base64 of 32 raw bytes. */
public final class WireGuardKeys {
    private WireGuardKeys() {
    }

    /** A fresh X25519 public key; the private half is discarded (nothing in dev mode ever uses it). */
    public static String newPublicKey() {
        try {
            byte[] spki = KeyPairGenerator.getInstance("X25519").generateKeyPair().getPublic().getEncoded();
            // X.509 SubjectPublicKeyInfo for X25519 is a fixed 12-byte header followed by the raw 32-byte key
            return Base64.getEncoder().encodeToString(Arrays.copyOfRange(spki, spki.length - 32, spki.length));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("X25519 is not available in this JDK", e);
        }
    }
}
