package io.unboundedcloud.playpen.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.unboundedcloud.playpen.config.OperatorConfig;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The image cannot be built here (no Docker daemon), so the Dockerfile is checked as text: multi-stage, non-root,
 * container-aware JVM, and the same jar, routes path and flags the Deployment relies on.
 */
class DockerfileTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** One instruction: keyword and the rest of the (continuation-joined) line. */
    record Instruction(String keyword, String args) {
    }

    private final List<List<Instruction>> stages = new ArrayList<>();

    @BeforeEach
    void parse() throws Exception {
        List<String> lines = Files.readAllLines(RenderedDeploy.projectDir().resolve("Dockerfile"), StandardCharsets.UTF_8);
        StringBuilder current = new StringBuilder();
        List<String> logical = new ArrayList<>();
        for (String raw : lines) {
            String line = raw.strip();
            if (current.length() == 0 && (line.isEmpty() || line.startsWith("#"))) {
                continue;
            }
            if (current.length() > 0 && line.startsWith("#")) {
                continue; // comment inside a continued instruction
            }
            if (line.endsWith("\\")) {
                current.append(line, 0, line.length() - 1).append(' ');
                continue;
            }
            current.append(line);
            logical.add(current.toString().strip());
            current.setLength(0);
        }
        assertThat(current.toString()).as("dangling line continuation").isBlank();
        for (String l : logical) {
            int sp = l.indexOf(' ');
            Instruction ins = new Instruction(l.substring(0, sp).toUpperCase(), l.substring(sp + 1).strip());
            if (ins.keyword().equals("FROM")) {
                stages.add(new ArrayList<>());
            }
            assertThat(stages).as("instruction before the first FROM: %s", l).isNotEmpty();
            stages.get(stages.size() - 1).add(ins);
        }
    }

    private List<Instruction> runtime() {
        return stages.get(stages.size() - 1);
    }

    private List<String> last(String keyword) {
        List<Instruction> found = runtime().stream().filter(i -> i.keyword().equals(keyword)).toList();
        assertThat(found).as("%s in the runtime stage", keyword).isNotEmpty();
        String args = found.get(found.size() - 1).args();
        assertThat(args).as("%s must use the exec (JSON array) form", keyword).startsWith("[");
        try {
            return JSON.readValue(args, new TypeReference<List<String>>() { });
        } catch (Exception e) {
            throw new AssertionError(keyword + " is not a JSON array: " + args, e);
        }
    }

    @Test
    void buildsWithMavenOnJava17AndRunsOnASlimJava17Runtime() {
        assertThat(stages).as("stages").hasSizeGreaterThanOrEqualTo(2);
        String builder = stages.get(0).get(0).args();
        assertThat(builder).startsWith("maven:").contains("17").contains(" AS ");
        String runtime = runtime().get(0).args();
        assertThat(runtime).matches("(eclipse-temurin:17[-.0-9_a-z]*-jre.*|gcr\\.io/distroless/java17.*)");
        assertThat(stages.get(0)).anySatisfy(i -> {
            assertThat(i.keyword()).isEqualTo("RUN");
            assertThat(i.args()).contains("mvn ").contains("package");
        });
    }

    @Test
    void runsAsNobodyLikeTheDeployment() throws Exception {
        List<Instruction> users = runtime().stream().filter(i -> i.keyword().equals("USER")).toList();
        assertThat(users).isNotEmpty();
        assertThat(users.get(users.size() - 1).args()).isEqualTo("65534:65534");
        Deployment d = DeployManifestsTest.deployment();
        assertThat(d.getSpec().getTemplate().getSpec().getSecurityContext().getRunAsUser()).isEqualTo(65534L);
    }

    @Test
    void entrypointStartsTheShadedJarWithContainerAwareJvmFlags() throws Exception {
        List<String> entrypoint = last("ENTRYPOINT");
        assertThat(entrypoint.get(0)).endsWith("java");
        assertThat(entrypoint).anySatisfy(a -> assertThat(a).startsWith("-XX:MaxRAMPercentage="))
                .contains("-XX:+ExitOnOutOfMemoryError", "-Djava.io.tmpdir=/tmp");
        assertThat(entrypoint.subList(entrypoint.size() - 2, entrypoint.size()))
                .containsExactly("-jar", "/opt/playpen/playpen-operator.jar");
        assertThat(runtime()).anySatisfy(i -> {
            assertThat(i.keyword()).isEqualTo("COPY");
            assertThat(i.args()).startsWith("--from=").contains("target/playpen-operator.jar")
                    .endsWith(" /opt/playpen/playpen-operator.jar");
        });
        // the AppCDS training run uses the same JVM flags, or the archive would not match at run time
        assertThat(entrypoint).contains("-XX:SharedArchiveFile=/opt/playpen/playpen.jsa");
        assertThat(runtime()).anySatisfy(i -> {
            assertThat(i.keyword()).isEqualTo("RUN");
            assertThat(i.args()).contains("-XX:ArchiveClassesAtExit=/opt/playpen/playpen.jsa");
            for (String flag : entrypoint) {
                if (flag.startsWith("-X") && !flag.startsWith("-XX:SharedArchiveFile") && !flag.startsWith("-Xshare")
                        && !flag.equals("-XX:+ExitOnOutOfMemoryError") && !flag.equals("-XX:-UsePerfData")) {
                    assertThat(i.args()).as("training run flag %s", flag).contains(flag);
                }
            }
        });
        String pom = Files.readString(RenderedDeploy.projectDir().resolve("pom.xml"), StandardCharsets.UTF_8);
        assertThat(pom).as("shade plugin output name").contains("<finalName>playpen-operator</finalName>");
    }

    @Test
    void theBenchmarkMeasuresTheJarWithTheImagesJvmFlags() throws Exception {
        // RSS, startup and CPU figures in docs/performance.md are only the image's if the flags are the same
        String pom = Files.readString(RenderedDeploy.projectDir().resolve("pom.xml"), StandardCharsets.UTF_8);
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("<bench.jarJvmArgs>([^<]*)</bench.jarJvmArgs>").matcher(pom);
        assertThat(m.find()).as("bench.jarJvmArgs in pom.xml").isTrue();
        List<String> bench = List.of(m.group(1).trim().split("\\s+"));
        for (String flag : last("ENTRYPOINT")) {
            // -XX:-UsePerfData too: the statistics sampler it turns off wakes the JVM 20 times a second, part of
            // every replica's idle CPU in the replicas' figures
            if (flag.startsWith("-XX:") && !flag.startsWith("-XX:SharedArchiveFile")) {
                assertThat(bench).as("bench.jarJvmArgs carries the image's %s", flag).contains(flag);
            }
        }
        assertThat(bench).as("the Deployment's memory limit").contains("-XX:MaxRAM=768m");
        assertThat(DeployManifestsTest.deployment().getSpec().getTemplate().getSpec().getContainers().get(0)
                .getResources().getLimits().get("memory").toString()).isEqualTo("768Mi");
    }

    @Test
    void defaultFlagsParseAndPutRoutesWhereTheDeploymentMountsThem() throws Exception {
        List<String> cmd = last("CMD");
        assertThatCode(() -> OperatorConfig.parse(cmd.toArray(String[]::new))).doesNotThrowAnyException();
        OperatorConfig imageDefaults = OperatorConfig.parse(cmd.toArray(String[]::new));
        assertThat(imageDefaults.routesDir()).isEqualTo("/opt/playpen/routes");
        assertThat(DeployManifestsTest.deployedConfig().routesDir()).isEqualTo(imageDefaults.routesDir());
        assertThat(runtime()).anySatisfy(i -> {
            assertThat(i.keyword()).isEqualTo("COPY");
            assertThat(i.args()).startsWith("--from=").contains("/routes").endsWith(" /opt/playpen/routes/");
        });
    }
}
