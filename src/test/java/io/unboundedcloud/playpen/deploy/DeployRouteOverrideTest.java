package io.unboundedcloud.playpen.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.unboundedcloud.playpen.config.OperatorConfig;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * deploy/components/route-override, used from an overlay the way deploy/README.md shows, renders with the real
 * kubectl: each of its route files replaces the image's copy of that route through a subPath mount, and each
 * override is still the shipped route apart from the lines marked "# override" (routes/ stays the one source).
 */
class DeployRouteOverrideTest {
    static final String MARK = "# override";
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    private static List<ObjectNode> rendered;

    static Path componentDir() {
        return RenderedDeploy.deployDir().resolve("components").resolve("route-override");
    }

    /** An overlay next to deploy/ (kustomize refuses one inside it), as a user writes it. */
    @BeforeAll
    static void renderOverlay() throws Exception {
        Path project = RenderedDeploy.projectDir();
        Path overlay = project.resolve("target").resolve("deploy-tests").resolve("route-override-overlay");
        Files.createDirectories(overlay);
        String deploy = overlay.relativize(RenderedDeploy.deployDir()).toString();
        String component = overlay.relativize(componentDir()).toString();
        Files.writeString(overlay.resolve("kustomization.yaml"), String.join("\n",
                "apiVersion: kustomize.config.k8s.io/v1beta1",
                "kind: Kustomization",
                "resources:",
                "  - " + deploy,
                "components:",
                "  - " + component,
                ""), StandardCharsets.UTF_8);
        rendered = RenderedDeploy.parse(RenderedDeploy.render(overlay));
    }

    static ObjectNode only(String kind) {
        List<ObjectNode> all = rendered.stream().filter(d -> kind.equals(d.path("kind").asText())).toList();
        assertThat(all).as("%s documents of the overlay", kind).hasSize(1);
        return all.get(0);
    }

    /** The file names the component's configMapGenerator lists. */
    static List<String> listedFiles() throws Exception {
        JsonNode k = YAML.readTree(componentDir().resolve("kustomization.yaml").toFile());
        assertThat(k.path("kind").asText()).isEqualTo("Component");
        List<String> files = new ArrayList<>();
        for (JsonNode gen : k.path("configMapGenerator")) {
            gen.path("files").forEach(f -> files.add(f.asText()));
        }
        return files;
    }

    @Test
    void eachOverrideFileIsMountedOverTheImagesCopyOfThatRoute() throws Exception {
        OperatorConfig config = DeployManifestsTest.deployedConfig();
        ConfigMap cm = StrictModel.read(only("ConfigMap"), ConfigMap.class);
        Deployment d = StrictModel.read(only("Deployment"), Deployment.class);
        assertThat(cm.getMetadata().getNamespace()).isEqualTo(d.getMetadata().getNamespace());

        Map<String, String> data = cm.getData() == null ? Map.of() : new TreeMap<>(cm.getData());
        assertThat(cm.getBinaryData()).isNullOrEmpty();
        assertThat(data).as("ConfigMap %s", cm.getMetadata().getName()).isNotEmpty();
        assertThat(data.keySet()).containsExactlyInAnyOrderElementsOf(listedFiles());
        for (Map.Entry<String, String> e : data.entrySet()) {
            assertThat(e.getValue()).as("ConfigMap key %s", e.getKey())
                    .isEqualTo(Files.readString(componentDir().resolve(e.getKey()), StandardCharsets.UTF_8));
        }

        Volume volume = d.getSpec().getTemplate().getSpec().getVolumes().stream()
                .filter(v -> v.getConfigMap() != null && cm.getMetadata().getName().equals(v.getConfigMap().getName()))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no volume uses the generated ConfigMap " + cm.getMetadata().getName()));
        Container operator = DeployManifestsTest.operatorContainer(d);
        Map<String, VolumeMount> mounts = operator.getVolumeMounts().stream()
                .filter(m -> m.getName().equals(volume.getName()))
                .collect(Collectors.toMap(VolumeMount::getSubPath, m -> m));
        assertThat(mounts.keySet()).as("subPaths mounted from %s", volume.getName())
                .containsExactlyInAnyOrderElementsOf(data.keySet());
        for (String file : data.keySet()) {
            VolumeMount m = mounts.get(file);
            assertThat(m.getMountPath()).isEqualTo(config.routesDir() + "/" + file);
            assertThat(m.getReadOnly()).isTrue();
        }
        // the folder itself stays the image's: every route not overridden is still loaded
        assertThat(operator.getVolumeMounts()).noneSatisfy(m -> assertThat(m.getMountPath()).isEqualTo(config.routesDir()));
    }

    @Test
    void everyOverrideIsAShippedRouteChangedOnlyOnMarkedLines() throws Exception {
        List<String> files = listedFiles();
        assertThat(files).isNotEmpty();
        for (String file : files) {
            Path shipped = RenderedDeploy.projectDir().resolve("routes").resolve(file);
            assertThat(shipped).as("routes/%s (an override must replace a shipped route)", file).isRegularFile();
            assertOnlyMarkedLinesDiffer(Files.readAllLines(componentDir().resolve(file), StandardCharsets.UTF_8),
                    Files.readAllLines(shipped, StandardCharsets.UTF_8), file);
        }
    }

    @Test
    void theComparisonCatchesUnmarkedChangesAndLostLines() {
        List<String> shipped = List.of("- route:", "    period: \"{{p:30000}}\"", "    delay: 0");
        assertOnlyMarkedLinesDiffer(List.of("- route:", "    period: \"5000\" " + MARK, "    delay: 0"), shipped, "marked");
        assertThatThrownBy(() -> assertOnlyMarkedLinesDiffer(
                List.of("- route:", "    period: \"5000\"", "    delay: 0"), shipped, "unmarked"))
                .isInstanceOf(AssertionError.class).hasMessageContaining("line 2");
        assertThatThrownBy(() -> assertOnlyMarkedLinesDiffer(
                List.of("- route:", "    period: \"5000\" " + MARK), shipped, "short"))
                .isInstanceOf(AssertionError.class).hasMessageContaining("lines");
    }

    /** Same number of lines, and every line that differs from the shipped route carries the override mark. */
    static void assertOnlyMarkedLinesDiffer(List<String> override, List<String> shipped, String file) {
        if (override.size() != shipped.size()) {
            throw new AssertionError(file + ": the override has " + override.size() + " lines, routes/" + file + " has "
                    + shipped.size() + "; copy the current routes/" + file + " again and re-apply your change");
        }
        for (int i = 0; i < shipped.size(); i++) {
            if (!override.get(i).equals(shipped.get(i)) && !override.get(i).contains(MARK)) {
                throw new AssertionError(file + " line " + (i + 1) + " differs from routes/" + file + " without \"" + MARK
                        + "\": routes/" + file + " changed since it was copied, or the change is unmarked");
            }
        }
    }
}
