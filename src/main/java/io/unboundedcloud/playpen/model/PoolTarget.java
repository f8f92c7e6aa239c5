package io.unboundedcloud.playpen.model;

import java.util.Objects;

/**
 * One pool the operator keeps filled: runners of one architecture, or control planes of one version.
 * {@code variant} is the architecture (amd64|arm64) or the kubernetes version with its {@code v} (v1.33.0).
 */
public record PoolTarget(ResourceType type, String variant) {

    public PoolTarget {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(variant, "variant");
    }

    public static PoolTarget runner(String architecture) {
        return new PoolTarget(ResourceType.RUNNER, architecture);
    }

    public static PoolTarget controlPlane(String version) {
        return new PoolTarget(ResourceType.CONTROL_PLANE, version.startsWith("v") ? version : "v" + version);
    }

    /** The pool an alloc asks of: runners of its architecture, or control planes of its version. */
    public static PoolTarget of(AllocCommand cmd) {
        return cmd.resourceType() == ResourceType.RUNNER ? runner(cmd.architecture())
                : controlPlane(cmd.kubernetesVersion());
    }

    /** A stable key for logs and metric tags: {@code runner/amd64}, {@code controlPlane/v1.33.0}. */
    public String key() {
        return type.wire() + "/" + variant;
    }

    @Override
    public String toString() {
        return key();
    }
}
