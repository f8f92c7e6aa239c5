package io.unboundedcloud.playpen.fakerunner;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.Base64;

import org.bouncycastle.crypto.params.X25519PrivateKeyParameters;

/**
 * The runner's WireGuard key pair, kept like {@code wg genkey} keeps it: the private key as standard base64 of 32 bytes
 * in a file. The file lives on the pod's {@code wireguard} emptyDir, so a restarted container publishes the same public
 * key again instead of changing the key of a pod that may already be handed out.
 */
final class WireGuardKey {
    private final byte[] privateKey;

    private WireGuardKey(byte[] privateKey) {
        this.privateKey = privateKey;
    }

    /** The key in {@code file} when it holds one; otherwise a new key, written there (owner-only) when possible. */
    static WireGuardKey loadOrCreate(Path file) throws IOException {
        if (file != null && Files.isRegularFile(file)) {
            byte[] raw = decode(Files.readString(file, StandardCharsets.US_ASCII).trim());
            if (raw != null) {
                return new WireGuardKey(raw);
            }
        }
        byte[] fresh = new X25519PrivateKeyParameters(new SecureRandom()).getEncoded();
        if (file != null) {
            writePrivate(file, Base64.getEncoder().encodeToString(fresh) + "\n");
        }
        return new WireGuardKey(fresh);
    }

    /** Standard base64 of the 32-byte public key: what the operator checks and hands to clients. */
    String publicKeyBase64() {
        return Base64.getEncoder().encodeToString(new X25519PrivateKeyParameters(privateKey, 0).generatePublicKey()
                .getEncoded());
    }

    private static byte[] decode(String text) {
        try {
            byte[] raw = Base64.getDecoder().decode(text);
            return raw.length == 32 ? raw : null;
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    /** Writes {@code content} to {@code file} readable by its owner only, whole (a temp file, then a rename). */
    static void writePrivate(Path file, String content) throws IOException {
        if (file.getParent() != null) {
            Files.createDirectories(file.getParent());
        }
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.deleteIfExists(tmp);
        try {
            Files.createFile(tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } catch (UnsupportedOperationException e) {
            Files.createFile(tmp);
        }
        Files.writeString(tmp, content, StandardCharsets.US_ASCII, StandardOpenOption.TRUNCATE_EXISTING);
        Files.move(tmp, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }
}
