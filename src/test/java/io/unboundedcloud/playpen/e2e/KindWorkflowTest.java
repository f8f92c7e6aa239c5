package io.unboundedcloud.playpen.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

/**
 * .github/workflows/ci.yml cannot run here, so it is checked as far as this machine allows: it parses; every action is
 * pinned to a commit; the kind job stays under 20 minutes, pins kind and its node images by digest, runs
 * docs/real-cluster.md's five commands and the e2e profile against the cluster, and keeps logs and events on failure;
 * its Kubernetes versions are the oldest and newest the docs support, with the same images, the newest being
 * kind/cluster.yaml's; every run: script is valid bash (and passes shellcheck where it is installed).
 */
class KindWorkflowTest {
    static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    static final Pattern NODE_IMAGE = Pattern.compile("kindest/node:(v1\\.(\\d+)\\.\\d+)@sha256:[0-9a-f]{64}");
    static Path root;
    static JsonNode workflow;
    static JsonNode kind;
    static String docs;

    @BeforeAll
    static void read() throws Exception {
        Path dir = Paths.get("").toAbsolutePath();
        while (!Files.isRegularFile(dir.resolve("pom.xml"))) {
            dir = dir.getParent();
        }
        root = dir;
        workflow = YAML.readTree(root.resolve(".github/workflows/ci.yml").toFile());
        kind = workflow.at("/jobs/kind");
        docs = Files.readString(root.resolve("docs/real-cluster.md"), StandardCharsets.UTF_8);
    }

    static List<String> runs(JsonNode job) {
        List<String> out = new ArrayList<>();
        for (JsonNode s : job.path("steps")) {
            if (s.has("run")) {
                out.add(s.path("run").asText());
            }
        }
        return out;
    }

    @Test
    void everyActionIsPinnedToACommit() {
        int uses = 0;
        for (JsonNode job : workflow.path("jobs")) {
            for (JsonNode s : job.path("steps")) {
                if (s.has("uses")) {
                    uses++;
                    assertThat(s.path("uses").asText()).matches("[\\w.-]+/[\\w.-]+@[0-9a-f]{40}");
                }
            }
        }
        assertThat(uses).isPositive();
        assertThat(workflow.at("/permissions/contents").asText()).isEqualTo("read");
    }

    @Test
    void theKindJobRunsTheDocumentedCommandsAndTheSuiteWithinTwentyMinutes() {
        assertThat(kind.isMissingNode()).isFalse();
        assertThat(kind.path("timeout-minutes").asInt()).isBetween(1, 20);
        assertThat(kind.path("needs").asText()).isEqualTo("verify");
        String all = String.join("\n", runs(kind));
        // docs/real-cluster.md's five commands in their order (the image builds while the cluster starts), then the suite
        assertThat(all.indexOf("docker build -t playpen-operator:e2e ."))
                .isNotNegative().isLessThan(all.indexOf("kind load docker-image"));
        List<String> order = List.of("kind create cluster --name \"$CLUSTER\" --config kind/cluster.yaml",
                "kind/prepare-nodes.sh \"$CLUSTER\"",
                "kind load docker-image playpen-operator:e2e --name \"$CLUSTER\"", "kubectl apply -k kind/",
                "mvn -B -Pe2e verify \"-De2e.kubeconfig=$HOME/.kube/config\"");
        int at = -1;
        for (String cmd : order) {
            int i = all.indexOf(cmd, at + 1);
            assertThat(i).as("`%s` after the command before it", cmd).isGreaterThan(at);
            at = i;
        }
        for (String cmd : List.of("kind create cluster --name playpen --config kind/cluster.yaml",
                "kind/prepare-nodes.sh playpen", "docker build -t playpen-operator:e2e .",
                "kind load docker-image playpen-operator:e2e --name playpen", "kubectl apply -k kind/",
                "mvn -B -Pe2e verify -De2e.kubeconfig=")) {
            assertThat(docs).as("docs/real-cluster.md shows `%s`", cmd).contains(cmd);
        }
        assertThat(kind.at("/env/CLUSTER").asText()).isEqualTo("playpen");
        // the image built is the one kind/ deploys
        assertThat(all).contains("docker build -t playpen-operator:e2e .");
        JsonNode overlayImage = null;
        try {
            overlayImage = YAML.readTree(root.resolve("kind/kustomization.yaml").toFile()).at("/images/0");
        } catch (Exception e) {
            throw new AssertionError(e);
        }
        assertThat(overlayImage.path("newName").asText() + ":" + overlayImage.path("newTag").asText())
                .isEqualTo("playpen-operator:e2e");
        // logs and events when it fails, and the reports kept
        List<JsonNode> onFailure = new ArrayList<>();
        for (JsonNode s : kind.path("steps")) {
            if (s.path("if").asText().equals("failure()")) {
                onFailure.add(s);
            }
        }
        assertThat(onFailure).hasSize(2);
        assertThat(onFailure.get(0).path("run").asText()).contains("kubectl get events -A").contains("logs \"$pod\"")
                .contains("--previous").contains("kind export logs");
        assertThat(onFailure.get(1).path("uses").asText()).startsWith("actions/upload-artifact@");
        assertThat(onFailure.get(1).at("/with/path").asText()).contains("target/failsafe-reports");
    }

    @Test
    void kindAndKubernetesArePinnedAndAgreeWithTheDocsAndTheClusterConfig() throws Exception {
        String kindVersion = kind.at("/env/KIND_VERSION").asText();
        assertThat(kindVersion).matches("v\\d+\\.\\d+\\.\\d+");
        assertThat(kind.at("/env/KIND_SHA256").asText()).matches("[0-9a-f]{64}");
        assertThat(String.join("\n", runs(kind))).contains("sha256sum -c -").contains("kind-linux-amd64")
                .contains("kubectl.sha256");
        assertThat(docs).contains("kind " + kindVersion);

        // the docs' table of supported versions and their images
        Map<String, String> documented = new LinkedHashMap<>();
        Matcher row = Pattern.compile("\\| (v1\\.\\d+\\.\\d+) \\| `(kindest/node:[^`]+)` \\|").matcher(docs);
        while (row.find()) {
            documented.put(row.group(1), row.group(2));
        }
        assertThat(documented).hasSizeGreaterThanOrEqualTo(2);
        List<String> versions = new ArrayList<>(documented.keySet());
        Map<String, String> tested = new LinkedHashMap<>();
        for (JsonNode m : kind.at("/strategy/matrix/include")) {
            String image = m.path("node-image").asText();
            Matcher im = NODE_IMAGE.matcher(image);
            assertThat(im.matches()).as(image).isTrue();
            assertThat(im.group(1)).isEqualTo(m.path("kubernetes").asText());
            tested.put(m.path("kubernetes").asText(), image);
        }
        // CI runs the oldest and the newest supported version, with the images the docs name
        assertThat(tested.keySet()).containsExactly(versions.get(0), versions.get(versions.size() - 1));
        tested.forEach((v, image) -> assertThat(documented).containsEntry(v, image));
        Matcher oldest = NODE_IMAGE.matcher(tested.values().iterator().next());
        assertThat(oldest.matches()).isTrue();
        // admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy is served from 1.30 on
        assertThat(Integer.parseInt(oldest.group(2))).isGreaterThanOrEqualTo(30);
        assertThat(Files.readString(root.resolve("deploy/045-runner-admission-policy.yaml")))
                .contains("apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\n");
        assertThat(docs).contains("`admissionregistration.k8s.io/v1`");

        // kind/cluster.yaml starts the newest
        for (JsonNode n : YAML.readTree(root.resolve("kind/cluster.yaml").toFile()).path("nodes")) {
            assertThat(n.path("image").asText()).isEqualTo(documented.get(versions.get(versions.size() - 1)));
        }
        assertThat(kind.at("/env/NODE_IMAGE").asText()).isEqualTo("${{ matrix.node-image }}");
        assertThat(String.join("\n", runs(kind))).contains("--image \"$NODE_IMAGE\"");
    }

    @Test
    void everyRunScriptIsValidBash() throws Exception {
        Path bash = Paths.get("/bin/bash");
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isExecutable(bash), "no /bin/bash to check the scripts with");
        Path shellcheck = Paths.get("/usr/bin/shellcheck");
        List<String> scripts = new ArrayList<>();
        for (JsonNode job : workflow.path("jobs")) {
            scripts.addAll(runs(job));
        }
        scripts.add(Files.readString(root.resolve("kind/prepare-nodes.sh")));
        Path dir = Files.createTempDirectory("workflow-scripts-");
        try {
            for (int i = 0; i < scripts.size(); i++) {
                // GitHub replaces ${{ … }} before the shell sees the script
                String body = scripts.get(i).replaceAll("\\$\\{\\{[^}]*}}", "X");
                Path f = dir.resolve("step-" + i + ".sh");
                Files.writeString(f, (body.startsWith("#!") ? "" : "#!/usr/bin/env bash\n") + body);
                assertThat(run(List.of(bash.toString(), "-n", f.toString()))).as("bash -n of:\n%s", body).isEmpty();
                if (Files.isExecutable(shellcheck)) {
                    assertThat(run(List.of(shellcheck.toString(), "-s", "bash", f.toString()))).as("shellcheck").isEmpty();
                }
            }
        } finally {
            try (var files = Files.list(dir)) {
                for (Path f : files.toList()) {
                    Files.delete(f);
                }
            }
            Files.delete(dir);
        }
        assertThat(Files.isExecutable(root.resolve("kind/prepare-nodes.sh"))).isTrue();
    }

    /** Output of a check that must print nothing when it passes. */
    static String run(List<String> cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        return p.exitValue() == 0 ? out.strip() : "exit " + p.exitValue() + ": " + out;
    }
}
