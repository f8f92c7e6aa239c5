package io.unboundedcloud.playpen.e2e;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assumptions;

/**
 * The playground the suite starts when it is given no cluster: the packaged jar with {@code --dev}, a separate process,
 * ready once it writes {@code endpoints.env}; from then on the suite uses only the files it writes (kubeconfigs,
 * endpoints), like a person who started it by hand.
 */
final class Playground implements AutoCloseable {
    private static final Duration STARTUP = Duration.ofSeconds(120);

    private final Process process;
    private final Path dir;

    private Playground(Process process, Path dir) {
        this.process = process;
        this.dir = dir;
    }

    /** Starts {@code jar --dev --dev-dir=dir flags...} and waits until it is ready; skips the suite without a jar. */
    static Playground start(Path jar, Path dir, List<String> flags) throws IOException, InterruptedException {
        Assumptions.assumeTrue(Files.isRegularFile(jar), "packaged jar " + jar + " not found: run mvn verify (or package)"
                + " to start a playground, or give a cluster with -De2e.kubeconfig");
        Files.createDirectories(dir);
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx512m", "-jar", jar.toString(), "--dev", "--dev-dir=" + dir));
        cmd.addAll(flags);
        Path log = dir.resolve("playground.log");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        Playground pg = new Playground(p, dir);
        long deadline = System.nanoTime() + STARTUP.toNanos();
        while (!Files.isRegularFile(dir.resolve("endpoints.env"))) {
            if (!p.isAlive() || System.nanoTime() > deadline) {
                pg.close();
                throw new IllegalStateException("the playground did not become ready within " + STARTUP.toSeconds()
                        + " s; its log (" + log + "):\n" + tail(log));
            }
            Thread.sleep(100);
        }
        return pg;
    }

    Path kubeconfig() {
        return dir.resolve("kubeconfig");
    }

    /** endpoints.env of a playground directory: KEY=value lines. */
    static Map<String, String> endpoints(Path dir) throws IOException {
        Map<String, String> out = new LinkedHashMap<>();
        for (String line : Files.readAllLines(dir.resolve("endpoints.env"), StandardCharsets.UTF_8)) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                out.put(line.substring(0, eq).trim(), line.substring(eq + 1).trim());
            }
        }
        return out;
    }

    static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException e) {
            return "(unreadable: " + e.getMessage() + ")";
        }
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
