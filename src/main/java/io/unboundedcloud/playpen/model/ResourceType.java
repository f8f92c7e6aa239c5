package io.unboundedcloud.playpen.model;

import java.util.Locale;
import java.util.Optional;

/** The two kinds of pooled pods, with their label value and app name. */
public enum ResourceType {
    RUNNER("runner", PlaypenKeys.RUNNER_APP_NAME, PlaypenKeys.RUNNER_COMPONENT),
    CONTROL_PLANE("controlPlane", PlaypenKeys.CONTROL_PLANE_APP_NAME, PlaypenKeys.CONTROL_PLANE_COMPONENT);

    private final String wire;
    private final String appName;
    private final String component;

    ResourceType(String wire, String appName, String component) {
        this.wire = wire;
        this.appName = appName;
        this.component = component;
    }

    /** The value in requests, responses and the resource-type label. */
    public String wire() {
        return wire;
    }

    public String appName() {
        return appName;
    }

    public String component() {
        return component;
    }

    /** Request normalisation: empty/runner → runner; controlPlane/control-plane/controlplane → control plane. */
    public static Optional<ResourceType> fromRequest(String value) {
        String v = value == null ? "" : GoStrings.trimSpace(value).toLowerCase(Locale.ROOT);
        switch (v) {
            case "":
            case "runner":
                return Optional.of(RUNNER);
            case "controlplane":
            case "control-plane":
                return Optional.of(CONTROL_PLANE);
            default:
                return Optional.empty();
        }
    }

    /** Exact label value match (the resource-type label on a pod). */
    public static Optional<ResourceType> fromLabel(String value) {
        if ("runner".equals(value)) {
            return Optional.of(RUNNER);
        }
        if ("controlPlane".equals(value)) {
            return Optional.of(CONTROL_PLANE);
        }
        return Optional.empty();
    }
}
