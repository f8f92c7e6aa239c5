package io.unboundedcloud.playpen.model;

/**
 * A validated, normalised alloc request. {@code kubernetesVersion} is "" for runners and
 * {@code wireGuardPublicKey} is "" for control planes (their claim carries no client key); {@code requestHash}
 * is the reference's hash over the request as it arrived (see {@link AllocRequestParser}).
 */
public record AllocCommand(String keyHash, ResourceType resourceType, String kubernetesVersion,
        String wireGuardPublicKey, String architecture, String requestHash) {

    /** A command whose request hash is taken over exactly these values. */
    public AllocCommand(String keyHash, ResourceType resourceType, String kubernetesVersion,
            String wireGuardPublicKey, String architecture) {
        this(keyHash, resourceType, kubernetesVersion, wireGuardPublicKey, architecture,
                Hashes.requestHash(resourceType.wire(), kubernetesVersion, wireGuardPublicKey, architecture));
    }

    /** The first 8 hex chars of the key hash: enough to correlate log lines, never the key. */
    public String keyHashPrefix() {
        return keyHash.substring(0, 8);
    }
}
