package io.unboundedcloud.playpen.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.PodTemplates;

/**
 * deploy/components/fake-runner, rendered with the real kubectl the way kind/ and docs/real-cluster.md use it: the
 * operator's flags (after Kubernetes' $(VAR) expansion, parsed by the operator's own parser) make runner and
 * control-plane pods that run the operator's own image, whatever `images:` the overlay (or a base below it) sets, under
 * the launcher paths the image has; everything else is deploy/ unchanged.
 */
class FakeRunnerComponentTest {
    static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    static final Pattern VAR = Pattern.compile("\\$\\(([A-Za-z_][A-Za-z0-9_]*)\\)");

    static ObjectNode deployment(List<ObjectNode> docs) {
        return docs.stream().filter(d -> d.path("kind").asText().equals("Deployment")).findFirst().orElseThrow();
    }

    static JsonNode operator(ObjectNode deployment) {
        for (JsonNode c : deployment.at("/spec/template/spec/containers")) {
            if (c.path("name").asText().equals("operator")) {
                return c;
            }
        }
        throw new AssertionError("no operator container");
    }

    /** The container's args as the kubelet passes them: $(NAME) replaced by the value of env NAME (value only). */
    static List<String> expandedArgs(JsonNode container) {
        Map<String, String> env = new LinkedHashMap<>();
        for (JsonNode e : container.path("env")) {
            if (e.has("value")) {
                env.put(e.path("name").asText(), e.path("value").asText());
            }
        }
        List<String> out = new ArrayList<>();
        for (JsonNode a : container.path("args")) {
            Matcher m = VAR.matcher(a.asText());
            StringBuilder sb = new StringBuilder();
            while (m.find()) {
                assertThat(env).as("env for %s", m.group()).containsKey(m.group(1));
                m.appendReplacement(sb, Matcher.quoteReplacement(env.get(m.group(1))));
            }
            m.appendTail(sb);
            out.add(sb.toString());
        }
        return out;
    }

    static OperatorConfig configOf(List<ObjectNode> docs) throws Exception {
        return OperatorConfig.parse(expandedArgs(operator(deployment(docs))).toArray(String[]::new));
    }

    static void assertRunsTheOperatorsImage(List<ObjectNode> docs, String image) throws Exception {
        JsonNode op = operator(deployment(docs));
        assertThat(op.path("image").asText()).isEqualTo(image);
        OperatorConfig config = configOf(docs);
        assertThat(config.runnerImage()).isEqualTo(image);
        assertThat(config.controlPlaneImage()).isEqualTo(image);
        assertThat(config.runnerImagePullPolicy()).isEqualTo("IfNotPresent");
        assertThat(config.runnerRequireKvm()).isFalse();

        // the pods the operator creates with these flags start the image's stand-in launchers
        PodTemplates templates = new PodTemplates(config, Map.of());
        Container runner = templates.runner("amd64", 51820).getSpec().getContainers().get(0);
        assertThat(runner.getImage()).isEqualTo(image);
        assertThat(runner.getImagePullPolicy()).isEqualTo("IfNotPresent");
        assertThat(runner.getCommand()).containsExactly("/unbounded/bin/playpen-runner");
        Pod runnerPod = templates.runner("amd64", 51820);
        assertThat(runnerPod.getSpec().getVolumes()).noneMatch(v -> v.getName().equals("kvm"));
        Pod cp = templates.controlPlane(config.controlPlaneVersions().get(0), 16443);
        assertThat(cp.getSpec().getContainers()).extracting(Container::getImage).containsOnly(image);
        assertThat(cp.getSpec().getContainers().get(0).getCommand()).containsExactly("/bin/k3s");
        for (Path launcher : List.of(DockerfileFakeRunnerTest.DOCKER.resolve("playpen-runner"),
                DockerfileFakeRunnerTest.DOCKER.resolve("k3s"))) {
            assertThat(launcher).isExecutable();
        }
    }

    static Set<String> names(List<ObjectNode> docs) {
        Set<String> out = new TreeSet<>();
        docs.forEach(d -> out.add(d.path("kind").asText() + "/" + d.at("/metadata/namespace").asText() + "/"
                + d.at("/metadata/name").asText()));
        return out;
    }

    @Test
    void theKindOverlayRunsTheLoadedImageAsRunnerAndControlPlane() throws Exception {
        List<ObjectNode> kind = RenderedDeploy.parse(RenderedDeploy.render(RenderedDeploy.projectDir().resolve("kind")));
        assertRunsTheOperatorsImage(kind, "playpen-operator:e2e");
        OperatorConfig config = configOf(kind);
        assertThat(config.runnerArm64Count()).isZero();
        assertThat(config.runnerAmd64Count()).isEqualTo(1);
        assertThat(config.controlPlaneCount()).isEqualTo(1);

        // deploy/'s objects plus the probe rule for runners, and only the Deployment differs
        List<ObjectNode> plain = RenderedDeploy.documents();
        Set<String> added = new TreeSet<>(names(kind));
        added.removeAll(names(plain));
        assertThat(added).containsExactly("NetworkPolicy/playpen/playpen-runner-probes");
        assertThat(names(kind)).containsAll(names(plain));
        ObjectNode probes = kind.stream().filter(d -> d.at("/metadata/name").asText().equals("playpen-runner-probes"))
                .findFirst().orElseThrow();
        assertThat(probes.at("/spec/ingress/0/ports/0/port").asText()).isEqualTo("https");
        assertThat(probes.at("/spec/podSelector/matchLabels/app.kubernetes.io~1name").asText()).isEqualTo("playpen-runner");
        Container runner = new PodTemplates(config, Map.of()).runner("amd64", 51820).getSpec().getContainers().get(0);
        assertThat(runner.getLivenessProbe().getHttpGet().getPort().getStrVal()).isEqualTo("https");
        for (ObjectNode d : kind) {
            if (d != probes && !d.path("kind").asText().equals("Deployment")) {
                ObjectNode same = plain.stream().filter(p -> names(List.of(p)).equals(names(List.of(d)))).findFirst()
                        .orElseThrow();
                assertThat(d).as(names(List.of(d)).toString()).isEqualTo(same);
            }
        }
    }

    @Test
    void theImageFollowsAnOverlaysImagesAndABaseBelowIt(@TempDir Path dir) throws Exception {
        Path deploy = RenderedDeploy.deployDir();
        Path component = deploy.resolve("components/fake-runner");
        // the image set in the same overlay as the component
        Path same = Files.createDirectories(dir.resolve("same"));
        Files.writeString(same.resolve("kustomization.yaml"), "resources: [" + same.relativize(deploy) + "]\n"
                + "components: [" + same.relativize(component) + "]\n"
                + "images:\n- name: ghcr.io/unbounded-cloud/playpen-operator\n  newName: registry.example.com/team/op\n"
                + "  newTag: \"1.2\"\n");
        assertRunsTheOperatorsImage(RenderedDeploy.parse(RenderedDeploy.render(same)), "registry.example.com/team/op:1.2");
        // the image set in a base, the component used above it
        Path base = Files.createDirectories(dir.resolve("base"));
        Files.writeString(base.resolve("kustomization.yaml"), "resources: [" + base.relativize(deploy) + "]\n"
                + "images:\n- name: ghcr.io/unbounded-cloud/playpen-operator\n  digest: sha256:" + "ab".repeat(32) + "\n");
        Path top = Files.createDirectories(dir.resolve("top"));
        Files.writeString(top.resolve("kustomization.yaml"), "resources: [../base]\n"
                + "components: [" + top.relativize(component) + "]\n");
        assertRunsTheOperatorsImage(RenderedDeploy.parse(RenderedDeploy.render(top)),
                "ghcr.io/unbounded-cloud/playpen-operator@sha256:" + "ab".repeat(32));
        // and with no images: at all, deploy/'s own
        Path none = Files.createDirectories(dir.resolve("none"));
        Files.writeString(none.resolve("kustomization.yaml"), "resources: [" + none.relativize(deploy) + "]\n"
                + "components: [" + none.relativize(component) + "]\n");
        assertRunsTheOperatorsImage(RenderedDeploy.parse(RenderedDeploy.render(none)),
                "ghcr.io/unbounded-cloud/playpen-operator:0.1.0");
    }

    @Test
    void theKindClusterPinsOneNodeImageByDigest() throws Exception {
        JsonNode cluster = YAML.readTree(RenderedDeploy.projectDir().resolve("kind/cluster.yaml").toFile());
        assertThat(cluster.path("apiVersion").asText()).isEqualTo("kind.x-k8s.io/v1alpha4");
        Set<String> images = new TreeSet<>();
        int workers = 0;
        for (JsonNode n : cluster.path("nodes")) {
            images.add(n.path("image").asText());
            workers += n.path("role").asText().equals("worker") ? 1 : 0;
        }
        assertThat(images).hasSize(1);
        assertThat(images.iterator().next()).matches("kindest/node:v1\\.\\d+\\.\\d+@sha256:[0-9a-f]{64}");
        assertThat(workers).isPositive();
    }
}
