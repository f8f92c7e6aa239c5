package io.unboundedcloud.playpen.docs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Every shell block of README.md and docs/*.md runs, in document order, against the playground the document itself
 * starts (see {@link DocBlocks} for the markers): scripts must exit 0, console sessions must print what the document
 * shows (as {@link OutputMatch} compares). So a command, a flag, a file name or an output that changes breaks the
 * build instead of the reader's first hour.
 *
 * <p>Each document runs in its own scratch directory under {@code target/docs-it/} that holds the packaged jar, the
 * routes and deploy/ at the paths the documents use, with its own HOME (kubectl's cache) and no KUBECONFIG.
 * {@code -Ddocs.only=docs/kubectl.md} runs one document; {@code -Ddocs.record=true} writes the outputs the commands
 * print now into the console blocks (review the diff before committing it).
 */
class DocsIT {
    static final Path ROOT = Path.of("").toAbsolutePath();
    static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(120);
    static final Duration PLAYGROUND_TIMEOUT = Duration.ofSeconds(240);
    static final Pattern DEV_DIR = Pattern.compile("--dev-dir[= ](\\S+)");
    static final Pattern BUILD_FIRST = Pattern.compile("^mvn [^&]*&&\\s*");
    /** What a step leaves for the next: its exported variables (but not the shell's own) and working directory. */
    static final String SAVE_STATE = "export -p | grep -v -E '^declare -[a-z]*x (PWD|OLDPWD|SHLVL|_|HOME)=' > 'ENV'\n"
            + "pwd > 'CWD'\n";

    static List<Path> documents() throws IOException {
        List<Path> docs = new ArrayList<>();
        docs.add(ROOT.resolve("README.md"));
        try (Stream<Path> s = Files.list(ROOT.resolve("docs"))) {
            s.filter(p -> p.toString().endsWith(".md")).sorted().forEach(docs::add);
        }
        String only = System.getProperty("docs.only", "");
        if (!only.isBlank()) {
            List<Path> wanted = java.util.Arrays.stream(only.split(",")).map(o -> ROOT.resolve(o.trim()).normalize()).toList();
            docs.retainAll(wanted);
        }
        return docs;
    }

    @TestFactory
    Stream<DynamicTest> everyShellBlockOfTheDocsRuns() throws IOException {
        Path jar = Path.of(System.getProperty("playpen.jar", "target/playpen-operator.jar")).toAbsolutePath();
        assumeTrue(Files.isRegularFile(jar), "packaged jar " + jar + " not found (run mvn verify)");
        assumeTrue(onPath("kubectl"), "kubectl is not on PATH: the documents' commands need it");
        for (String tool : List.of("jq", "curl", "openssl")) {
            assumeTrue(onPath(tool), tool + " is not on PATH: the documents' commands use it");
        }
        return documents().stream().map(doc -> DynamicTest.dynamicTest(ROOT.relativize(doc).toString(),
                () -> new Run(doc, jar).all()));
    }

    static boolean onPath(String program) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            if (Files.isExecutable(Path.of(dir, program))) {
                return true;
            }
        }
        return false;
    }

    /** One document's run: its scratch directory, shell state and playgrounds. */
    static final class Run {
        final Path doc;
        final Path jar;
        final Path dir;
        final Path env;
        final Path cwd;
        final List<Process> playgrounds = new ArrayList<>();
        final boolean record = Boolean.getBoolean("docs.record");
        /** Console outputs captured in record mode: first line of the block's fence, its new body. */
        final Map<Integer, List<String>> recorded = new java.util.TreeMap<>(Comparator.reverseOrder());
        int seq;

        Run(Path doc, Path jar) throws IOException {
            this.doc = doc;
            this.jar = jar;
            String name = ROOT.relativize(doc).toString().replace('/', '-').replaceAll("\\.md$", "");
            dir = ROOT.resolve("target/docs-it").resolve(name);
            deleteTree(dir);
            Files.createDirectories(dir.resolve("target"));
            Files.createDirectories(dir.resolve(".home"));
            Files.createSymbolicLink(dir.resolve("target/playpen-operator.jar"), jar);
            Files.createSymbolicLink(dir.resolve("routes"), ROOT.resolve("routes"));
            Files.createSymbolicLink(dir.resolve("deploy"), ROOT.resolve("deploy"));
            env = dir.resolve(".home/env.sh");
            cwd = dir.resolve(".home/cwd");
            Files.writeString(env, "");
            Files.writeString(cwd, dir.toString());
        }

        void all() throws Exception {
            String text = Files.readString(doc);
            List<DocBlocks.Block> blocks = DocBlocks.parse(text);
            try {
                for (DocBlocks.Block b : blocks) {
                    if (b.skip() != null) {
                        continue;
                    }
                    switch (b.kind()) {
                        case STOP -> stopPlaygrounds();
                        case SCRIPT -> {
                            if (b.playground()) {
                                startPlayground(b);
                            } else {
                                script(b);
                            }
                        }
                        case SESSION -> session(b);
                    }
                }
            } finally {
                stopPlaygrounds();
            }
            if (record && !recorded.isEmpty()) {
                List<String> lines = new ArrayList<>(text.lines().toList());
                for (Map.Entry<Integer, List<String>> e : recorded.entrySet()) {
                    DocBlocks.Block b = blocks.stream().filter(x -> x.fenceStart() == e.getKey()).findFirst().orElseThrow();
                    List<String> tail = new ArrayList<>(lines.subList(b.fenceEnd(), lines.size()));
                    List<String> head = new ArrayList<>(lines.subList(0, b.fenceStart() + 1));
                    head.addAll(e.getValue());
                    head.addAll(tail);
                    lines = head;
                }
                Files.writeString(doc, String.join("\n", lines) + "\n");
            }
        }

        String where(int line) {
            return ROOT.relativize(doc) + ":" + line;
        }

        /** Runs a shell file in the document's state (environment, working directory); output merged. */
        Result shell(String body, boolean failFast) throws Exception {
            Path file = dir.resolve(".home/step-" + (++seq) + ".sh");
            // set -a: a variable a step sets (key=...) is there for the next one, as in one terminal
            Files.writeString(file, (failFast ? "set -e\n" : "") + "set -a\n. '" + env + "'\ncd \"$(cat '" + cwd
                    + "')\"\n" + body + "\n__rc=$?\n" + SAVE_STATE.replace("ENV", env.toString()).replace("CWD", cwd.toString()) + "exit $__rc\n");
            Path out = dir.resolve(".home/step-" + seq + ".out");
            ProcessBuilder pb = new ProcessBuilder("bash", file.toString()).redirectErrorStream(true)
                    .redirectOutput(out.toFile()).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
            environment(pb);
            Process p = pb.start();
            if (!p.waitFor(COMMAND_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                throw new AssertionError("timed out after " + COMMAND_TIMEOUT + ":\n" + body + "\n" + Files.readString(out));
            }
            return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8));
        }

        void environment(ProcessBuilder pb) {
            Map<String, String> e = pb.environment();
            e.remove("KUBECONFIG");
            e.put("HOME", dir.resolve(".home").toString());
            String kubectl = System.getenv("KUBECTL");
            if (kubectl != null && !kubectl.isBlank()) {
                e.put("PATH", Path.of(kubectl).getParent() + File.pathSeparator + e.getOrDefault("PATH", ""));
            }
            e.put("PATH", Path.of(System.getProperty("java.home"), "bin") + File.pathSeparator + e.getOrDefault("PATH", ""));
        }

        void script(DocBlocks.Block b) throws Exception {
            Result r = shell(b.script(), true);
            assertThat(r.code()).as("%s: the block exits %d:\n%s\n--- its output:\n%s", where(b.line()), r.code(),
                    b.script(), r.output()).isZero();
        }

        void session(DocBlocks.Block b) throws Exception {
            List<String> body = new ArrayList<>();
            List<String> doc = Files.readAllLines(this.doc);
            for (DocBlocks.Step s : b.steps()) {
                Result r = shell(s.command(), false);
                if (record) {
                    if (!body.isEmpty()) {
                        body.add("");
                    }
                    // the command as written (with its continuation lines), then what it printed now
                    int at = s.line() - 1;
                    body.add(doc.get(at));
                    while (doc.get(at).endsWith("\\")) {
                        body.add(doc.get(++at));
                    }
                    List<String> out = new ArrayList<>(r.output().lines().map(String::stripTrailing).toList());
                    while (!out.isEmpty() && out.get(out.size() - 1).isEmpty()) {
                        out.remove(out.size() - 1);
                    }
                    body.addAll(out);
                    continue;
                }
                assertThat(OutputMatch.normalize(r.output())).as("%s: $ %s\n--- prints now:\n%s\n--- the document shows:\n%s",
                        where(s.line()), s.command(), r.output(), String.join("\n", s.expected()))
                        .isEqualTo(OutputMatch.normalize(String.join("\n", s.expected())));
            }
            if (record) {
                recorded.put(b.fenceStart(), body);
            }
        }

        void startPlayground(DocBlocks.Block b) throws Exception {
            assertThat(b.steps()).as("%s: a playground block holds one command", where(b.line())).hasSize(1);
            String command = BUILD_FIRST.matcher(b.steps().get(0).command()).replaceFirst("");
            Matcher m = DEV_DIR.matcher(command);
            Path devDir = Path.of(Files.readString(cwd).strip()).resolve(m.find() ? m.group(1) : "target/dev");
            Files.deleteIfExists(devDir.resolve("endpoints.env"));
            Path log = dir.resolve(".home/playground-" + (playgrounds.size() + 1) + ".log");
            Path file = dir.resolve(".home/playground-" + (playgrounds.size() + 1) + ".sh");
            Files.writeString(file, "set -a\n. '" + env + "'\nset +a\ncd \"$(cat '" + cwd + "')\"\nexec " + command + "\n");
            ProcessBuilder pb = new ProcessBuilder("bash", file.toString()).redirectErrorStream(true)
                    .redirectOutput(log.toFile()).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
            environment(pb);
            Process p = pb.start();
            playgrounds.add(p);
            long deadline = System.nanoTime() + PLAYGROUND_TIMEOUT.toNanos();
            while (!Files.exists(devDir.resolve("endpoints.env"))) {
                if (!p.isAlive() || System.nanoTime() > deadline) {
                    throw new AssertionError(where(b.line()) + ": the playground (" + command + ") did not get ready:\n"
                            + Files.readString(log));
                }
                Thread.sleep(100);
            }
        }

        void stopPlaygrounds() throws InterruptedException {
            for (Process p : playgrounds) {
                List<ProcessHandle> children = p.descendants().toList();
                p.destroy();
                if (!p.waitFor(30, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                }
                children.forEach(ProcessHandle::destroyForcibly);
            }
            playgrounds.clear();
        }
    }

    record Result(int code, String output) {
    }

    static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
