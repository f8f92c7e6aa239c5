package io.unboundedcloud.playpen.model;

import java.time.Duration;

/**
 * A validated, normalised alloc request. {@code kubernetesVersion} is "" for runners and
 * {@code wireGuardPublicKey} is "" for control planes (their claim carries no client key); {@code requestHash}
 * is the reference's hash over the request as it arrived (see {@link AllocRequestParser}). {@code ttl} is the
 * lease the client asked for (null: --playpen-ttl) and {@code waitSeconds} how long it will wait for capacity
 * (0: answer 503 at once); neither is part of the request hash. {@code versionDefaulted}: a control plane's
 * kubernetesVersion was left out, and is the newest --control-plane-versions offered when it was read.
 */
public record AllocCommand(String keyHash, ResourceType resourceType, String kubernetesVersion,
        String wireGuardPublicKey, String architecture, String requestHash, Duration ttl, int waitSeconds,
        boolean versionDefaulted) {

    /** A command whose kubernetesVersion (if any) was sent. */
    public AllocCommand(String keyHash, ResourceType resourceType, String kubernetesVersion,
            String wireGuardPublicKey, String architecture, String requestHash, Duration ttl, int waitSeconds) {
        this(keyHash, resourceType, kubernetesVersion, wireGuardPublicKey, architecture, requestHash, ttl, waitSeconds,
                false);
    }

    /** A command whose request hash is taken over exactly these values. */
    public AllocCommand(String keyHash, ResourceType resourceType, String kubernetesVersion,
            String wireGuardPublicKey, String architecture) {
        this(keyHash, resourceType, kubernetesVersion, wireGuardPublicKey, architecture,
                Hashes.requestHash(resourceType.wire(), kubernetesVersion, wireGuardPublicKey, architecture));
    }

    /** A command with the server's default ttl that does not wait. */
    public AllocCommand(String keyHash, ResourceType resourceType, String kubernetesVersion,
            String wireGuardPublicKey, String architecture, String requestHash) {
        this(keyHash, resourceType, kubernetesVersion, wireGuardPublicKey, architecture, requestHash, null, 0);
    }

    /** This command with another ttl and wait. */
    public AllocCommand withLease(Duration ttl, int waitSeconds) {
        return new AllocCommand(keyHash, resourceType, kubernetesVersion, wireGuardPublicKey, architecture,
                requestHash, ttl, waitSeconds, versionDefaulted);
    }

    /** This command, marked as one whose kubernetesVersion was left out. */
    public AllocCommand withVersionDefaulted() {
        return new AllocCommand(keyHash, resourceType, kubernetesVersion, wireGuardPublicKey, architecture,
                requestHash, ttl, waitSeconds, true);
    }

    /** The first 8 hex chars of the key hash: enough to correlate log lines, never the key. */
    public String keyHashPrefix() {
        return Hashes.keyHashPrefix(keyHash);
    }
}
