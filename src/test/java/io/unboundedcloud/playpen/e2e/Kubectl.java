package io.unboundedcloud.playpen.e2e;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assumptions;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The real kubectl as one identity: a kubeconfig, optionally impersonating a user and groups. Every call is a separate
 * kubectl process, exactly as a person would type it; nothing here talks to the operator in any other way.
 */
final class Kubectl {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final long TIMEOUT_SECONDS = 120;

    /** One finished kubectl: exit code, stdout, stderr. */
    record Run(int code, String out, String err) {
        boolean ok() {
            return code == 0;
        }
    }

    private final Path binary;
    private final Path kubeconfig;
    private final List<String> identity;
    private final Path work;
    private final String label;

    Kubectl(Path binary, Path kubeconfig, List<String> identity, Path work, String label) {
        this.binary = binary;
        this.kubeconfig = kubeconfig;
        this.identity = List.copyOf(identity);
        this.work = work;
        this.label = label;
    }

    /** The same kubeconfig, impersonating {@code user} in {@code groups} (needs impersonation rights, as cluster-admin has). */
    Kubectl as(String user, List<String> groups, String label) {
        List<String> id = new ArrayList<>(List.of("--as=" + user));
        groups.forEach(g -> id.add("--as-group=" + g));
        return new Kubectl(binary, kubeconfig, id, work, label);
    }

    Path kubeconfig() {
        return kubeconfig;
    }

    Path binary() {
        return binary;
    }

    String label() {
        return label;
    }

    List<String> command(String... args) {
        List<String> cmd = new ArrayList<>(List.of(binary.toString(), "--kubeconfig=" + kubeconfig));
        cmd.addAll(identity);
        cmd.addAll(Arrays.asList(args));
        return cmd;
    }

    Run run(String... args) {
        List<String> cmd = command(args);
        try {
            Path out = Files.createTempFile(work, "kubectl-", ".out");
            Path err = Files.createTempFile(work, "kubectl-", ".err");
            try {
                Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile())
                        .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start();
                if (!p.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                    throw new AssertionError("kubectl did not finish within " + TIMEOUT_SECONDS + " s: " + shown(args));
                }
                return new Run(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
                        Files.readString(err, StandardCharsets.UTF_8));
            } finally {
                Files.deleteIfExists(out);
                Files.deleteIfExists(err);
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + binary + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** stdout of a kubectl that must succeed; a failure names the command and quotes stderr (never stdout). */
    String ok(String... args) {
        Run r = run(args);
        if (!r.ok()) {
            throw new AssertionError("kubectl (" + label + ") " + shown(args) + " failed with exit " + r.code() + ": "
                    + r.err().strip());
        }
        return r.out();
    }

    JsonNode json(String... args) {
        try {
            return JSON.readTree(ok(args));
        } catch (IOException e) {
            throw new AssertionError("kubectl " + shown(args) + " printed no JSON: " + e.getMessage(), e);
        }
    }

    /** {@code kubectl create --raw path -f body.json}: how users allocate, renew and deallocate. */
    Run createRaw(String path, String body) {
        try {
            Path file = Files.createTempFile(work, "body-", ".json");
            try {
                Files.writeString(file, body, StandardCharsets.UTF_8);
                return run("create", "--raw", path, "-f", file.toString());
            } finally {
                Files.deleteIfExists(file);
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A long-running kubectl (port-forward), its output in {@code log}. */
    Process start(Path log, String... args) throws IOException {
        return new ProcessBuilder(command(args)).redirectErrorStream(true).redirectOutput(log.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start();
    }

    private static String shown(String... args) {
        return String.join(" ", args);
    }

    /**
     * kubectl: -De2e.kubectl, else $KUBECTL, else /usr/bin/kubectl, else the first on $PATH. Without one the suite is
     * skipped (not passed): it talks to clusters only through kubectl. With -De2e.install=kind it fails instead.
     */
    static Path find() {
        List<Path> candidates = new ArrayList<>();
        String prop = System.getProperty("e2e.kubectl", "");
        String env = System.getenv("KUBECTL");
        if (!prop.isBlank()) {
            candidates.add(Paths.get(prop));
        } else if (env != null && !env.isBlank()) {
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
        String missing = "kubectl not found (" + candidates.get(0) + (candidates.size() > 1 ? ", $PATH" : "")
                + "): the end-to-end suite talks to clusters through kubectl; set -De2e.kubectl or KUBECTL";
        if (Target.kindInstall()) {
            // kind/'s installation is made with kubectl: a wrong path must not turn the suite into nothing run
            throw new AssertionError(missing);
        }
        Assumptions.abort(missing);
        throw new AssertionError("unreachable");
    }
}
