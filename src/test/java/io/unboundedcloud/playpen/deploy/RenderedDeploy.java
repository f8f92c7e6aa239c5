package io.unboundedcloud.playpen.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * The output of {@code kubectl kustomize deploy/}, rendered once per test JVM with the real kubectl binary.
 * Tests are skipped (not passed) when kubectl is not installed.
 */
final class RenderedDeploy {
    private static final long TIMEOUT_SECONDS = 120;
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    private static List<ObjectNode> cached;

    private RenderedDeploy() {
    }

    /** The repository root: the nearest folder upwards holding pom.xml. */
    static Path projectDir() {
        Path dir = Paths.get("").toAbsolutePath();
        while (dir != null && !Files.isRegularFile(dir.resolve("pom.xml"))) {
            dir = dir.getParent();
        }
        if (dir == null) {
            throw new IllegalStateException("no pom.xml above " + Paths.get("").toAbsolutePath());
        }
        return dir;
    }

    static Path deployDir() {
        return projectDir().resolve("deploy");
    }

    /**
     * kubectl: $KUBECTL when set (and only that), else /usr/bin/kubectl or the first on $PATH. The calling test is
     * aborted, i.e. reported as skipped, when there is none.
     */
    static Path kubectl() {
        List<Path> candidates = new ArrayList<>();
        String env = System.getenv("KUBECTL");
        if (env != null && !env.isBlank()) {
            candidates.add(Paths.get(env));
        } else {
            candidates.add(Paths.get("/usr/bin/kubectl"));
            String path = System.getenv("PATH");
            if (path != null) {
                for (String dir : path.split(File.pathSeparator)) {
                    if (!dir.isEmpty()) {
                        candidates.add(Paths.get(dir, "kubectl"));
                    }
                }
            }
        }
        for (Path p : candidates) {
            if (Files.isRegularFile(p) && Files.isExecutable(p)) {
                return p;
            }
        }
        Assumptions.abort("kubectl not found (" + candidates.get(0) + (candidates.size() > 1 ? ", $PATH" : "")
                + "): cannot render deploy/ with "
                + "`kubectl kustomize`; install kubectl to run the deploy manifest tests");
        throw new AssertionError("unreachable");
    }

    /** Every document of {@code kubectl kustomize deploy/}, in output order. */
    static synchronized List<ObjectNode> documents() throws IOException, InterruptedException {
        if (cached == null) {
            cached = Collections.unmodifiableList(parse(render(deployDir())));
        }
        return cached;
    }

    /** {@code kubectl kustomize dir}: a kustomization folder, e.g. an overlay a test writes. */
    static String render(Path dir) throws IOException, InterruptedException {
        Path kubectl = kubectl();
        Path out = Files.createTempFile("kustomize-", ".yaml");
        Path err = Files.createTempFile("kustomize-", ".err");
        try {
            Process p = new ProcessBuilder(kubectl.toString(), "kustomize", dir.toString())
                    .redirectOutput(out.toFile())
                    .redirectError(err.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .start();
            if (!p.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("kubectl kustomize " + dir + " did not finish within " + TIMEOUT_SECONDS + " s");
            }
            String stderr = Files.readString(err, StandardCharsets.UTF_8);
            if (p.exitValue() != 0) {
                throw new AssertionError("kubectl kustomize " + dir + " failed (exit " + p.exitValue() + "): " + stderr);
            }
            return Files.readString(out, StandardCharsets.UTF_8);
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    static List<ObjectNode> parse(String yaml) throws IOException {
        List<ObjectNode> docs = new ArrayList<>();
        try (var it = YAML.readerFor(JsonNode.class).<JsonNode>readValues(yaml)) {
            while (it.hasNextValue()) {
                JsonNode doc = it.nextValue();
                if (doc == null || doc.isNull() || doc.isMissingNode()) {
                    continue;
                }
                if (!doc.isObject()) {
                    throw new AssertionError("rendered document is not a mapping: " + doc);
                }
                docs.add((ObjectNode) doc);
            }
        }
        return docs;
    }

    static List<ObjectNode> ofKind(String kind) throws IOException, InterruptedException {
        List<ObjectNode> out = new ArrayList<>();
        for (ObjectNode d : documents()) {
            if (kind.equals(d.path("kind").asText())) {
                out.add(d);
            }
        }
        return out;
    }

    /** The one document of a kind; fails when there are none or several. */
    static ObjectNode single(String kind) throws IOException, InterruptedException {
        List<ObjectNode> all = ofKind(kind);
        if (all.size() != 1) {
            throw new AssertionError("expected exactly one " + kind + " in kubectl kustomize deploy/, found " + all.size());
        }
        return all.get(0);
    }

    static String describe(JsonNode doc) {
        JsonNode md = doc.path("metadata");
        String ns = md.path("namespace").asText("");
        return doc.path("kind").asText("?") + " " + (ns.isEmpty() ? "" : ns + "/") + md.path("name").asText("?");
    }
}
