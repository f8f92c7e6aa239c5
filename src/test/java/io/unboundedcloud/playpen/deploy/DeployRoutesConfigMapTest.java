package io.unboundedcloud.playpen.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.ConfigMap;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Base64;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The ConfigMap mounted over the image's routes holds exactly the files of the top-level routes/ folder,
 * byte for byte. kustomize may not read outside deploy/, so deploy/routes/ keeps a copy that
 * deploy/sync-routes.sh refreshes; these tests fail when the copy is stale.
 */
class DeployRoutesConfigMapTest {
    private static final String SYNC_HINT = "; run deploy/sync-routes.sh to copy routes/ into deploy/routes/ and regenerate "
            + "deploy/routes/kustomization.yaml";

    /** Route files: the regular, non-hidden files directly in a folder (an absent folder holds none). */
    static Map<String, byte[]> filesIn(Path dir, String exclude) throws IOException {
        Map<String, byte[]> out = new TreeMap<>();
        if (!Files.isDirectory(dir)) {
            return out;
        }
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                String name = p.getFileName().toString();
                if (name.startsWith(".") || name.equals(exclude)) {
                    continue;
                }
                if (!Files.isRegularFile(p)) {
                    throw new AssertionError(p + " is not a regular file: a ConfigMap cannot hold folders");
                }
                out.put(name, Files.readAllBytes(p));
            }
        }
        return out;
    }

    static Map<String, byte[]> topLevelRoutes() throws IOException {
        return filesIn(RenderedDeploy.projectDir().resolve("routes"), null);
    }

    static Map<String, byte[]> contents(ConfigMap cm) {
        Map<String, byte[]> out = new TreeMap<>();
        if (cm.getData() != null) {
            cm.getData().forEach((k, v) -> out.put(k, v.getBytes(StandardCharsets.UTF_8)));
        }
        if (cm.getBinaryData() != null) {
            cm.getBinaryData().forEach((k, v) -> {
                if (out.put(k, Base64.getDecoder().decode(v)) != null) {
                    throw new AssertionError("key " + k + " is in both data and binaryData");
                }
            });
        }
        return out;
    }

    static void assertSameFiles(Map<String, byte[]> actual, Map<String, byte[]> expected, String what) {
        assertThat(actual.keySet()).as("file names of %s vs routes/%s", what, SYNC_HINT)
                .containsExactlyInAnyOrderElementsOf(expected.keySet());
        for (Map.Entry<String, byte[]> e : expected.entrySet()) {
            if (!Arrays.equals(actual.get(e.getKey()), e.getValue())) {
                throw new AssertionError(what + ": " + e.getKey() + " differs from routes/" + e.getKey() + SYNC_HINT);
            }
        }
    }

    @Test
    void routesConfigMapHoldsExactlyTheFilesOfTheRoutesFolder() throws Exception {
        ConfigMap cm = StrictModel.read(RenderedDeploy.single("ConfigMap"), ConfigMap.class);
        assertThat(cm.getMetadata().getName()).startsWith("playpen-operator-routes");
        assertSameFiles(contents(cm), topLevelRoutes(), "ConfigMap " + cm.getMetadata().getName());
    }

    @Test
    void deployCopyOfTheRoutesHasNoStaleFiles() throws Exception {
        assertSameFiles(filesIn(RenderedDeploy.deployDir().resolve("routes"), "kustomization.yaml"), topLevelRoutes(),
                "deploy/routes/");
    }

    @Test
    void comparisonCatchesMissingExtraAndChangedFiles() {
        Map<String, byte[]> routes = Map.of("alloc.camel.yaml", "a".getBytes(StandardCharsets.UTF_8));
        Map<String, byte[]> changed = Map.of("alloc.camel.yaml", "b".getBytes(StandardCharsets.UTF_8));
        Map<String, byte[]> extra = Map.of("alloc.camel.yaml", "a".getBytes(StandardCharsets.UTF_8),
                "old.camel.yaml", new byte[0]);
        assertSameFiles(Map.of("alloc.camel.yaml", "a".getBytes(StandardCharsets.UTF_8)), routes, "same");
        for (Map<String, byte[]> wrong : java.util.List.of(changed, extra, Map.<String, byte[]>of())) {
            boolean failed;
            try {
                assertSameFiles(wrong, routes, "wrong");
                failed = false;
            } catch (AssertionError expected) {
                failed = true;
            }
            assertThat(failed).as("comparison of %s", wrong.keySet()).isTrue();
        }
    }
}
