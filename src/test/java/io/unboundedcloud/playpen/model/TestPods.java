package io.unboundedcloud.playpen.model;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.config.OperatorConfig;
import java.util.Map;

/** Builders for pods as the cache would show them, for the model tests. */
final class TestPods {
    static final OperatorConfig DEFAULTS = OperatorConfig.parse();
    static final PodTemplates TEMPLATES = new PodTemplates(DEFAULTS, Map.of());

    private TestPods() {
    }

    static Pod runner(String arch, int port) {
        return TEMPLATES.runner(arch, port);
    }

    static Pod controlPlane(String version, int port) {
        return TEMPLATES.controlPlane(version, port);
    }

    static Pod claimed(Pod pod) {
        return claimed(pod, "2026-01-02T03:04:05Z");
    }

    static Pod claimed(Pod pod, String claimedAt) {
        PodBuilder b = new PodBuilder(pod).editMetadata()
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ab".repeat(32))
                .addToAnnotations(PlaypenKeys.REQUEST_HASH, "cd".repeat(32))
                .endMetadata();
        if (claimedAt != null) {
            b.editMetadata().addToAnnotations(PlaypenKeys.CLAIMED_AT, claimedAt).endMetadata();
        }
        return b.build();
    }

    static Pod terminating(Pod pod) {
        return new PodBuilder(pod).editMetadata().withDeletionTimestamp("2026-01-02T03:04:05Z").endMetadata().build();
    }
}
