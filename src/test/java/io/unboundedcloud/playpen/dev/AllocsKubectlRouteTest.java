package io.unboundedcloud.playpen.dev;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.model.Hashes;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * The real kubectl through the --dev kubeconfig (aggregator stand-in, operator in this process): get allocs as a
 * server-side Table (plain, --no-headers, -o wide, -o name, -o json, -o yaml), get one, 404 for another user's id,
 * everyone's for the admin, explain allocs[.status] from the operator's OpenAPI v3, delete alloc, api-resources,
 * get -w and wait --for=delete.
 * Every command's output is kept in target/allocs-kubectl.txt (docs/kubectl.md shows a run).
 */
class AllocsKubectlRouteTest {
    static final String KUBECTL = System.getenv().getOrDefault("KUBECTL", "/usr/bin/kubectl");
    static final String ALLOCS = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs";
    static final ObjectMapper M = new ObjectMapper();
    static DevMode dev;
    static Path dir;
    static final StringBuilder transcript = new StringBuilder();

    record Run(int code, String out, String err) {
    }

    @BeforeAll
    static void start() throws Exception {
        assumeTrue(new File(KUBECTL).canExecute(), "kubectl not found at " + KUBECTL);
        dir = Files.createTempDirectory(Path.of("target"), "allocs-kubectl-");
        OperatorConfig config = OperatorConfig.parse(DevMode.devArgs(new String[] {"--dev", "--dev-dir=" + dir,
                "--playpen-ttl=1h", "--control-plane-count=0", "--runner-amd64-count=2", "--runner-arm64-count=1"}));
        dev = DevMode.start(config, Map.of());
        OperatorHarness.awaitTrue(() -> readyRunners() >= 3, Duration.ofSeconds(30), "three ready runners");
    }

    static long readyRunners() {
        Run r = kubectl("kubeconfig", "get", "pods", "-n", "playpen", "-o",
                "jsonpath={range .items[*]}{.status.containerStatuses[0].ready}{\"\\n\"}{end}");
        return r.out().lines().filter("true"::equals).count();
    }

    @AfterAll
    static void stop() throws IOException {
        if (dev != null) {
            dev.close();
        }
        if (dir != null) {
            Files.writeString(Path.of("target", "allocs-kubectl.txt"), transcript, StandardCharsets.UTF_8);
        }
    }

    static Run kubectl(String kubeconfig, String... args) {
        return kubectl(Map.of(), kubeconfig, args);
    }

    static Run kubectl(Map<String, String> env, String kubeconfig, String... args) {
        List<String> cmd = new ArrayList<>(List.of(KUBECTL, "--kubeconfig", dir.resolve(kubeconfig).toString()));
        cmd.addAll(List.of(args));
        try {
            Path out = Files.createTempFile(dir, "out", ".txt");
            Path err = Files.createTempFile(dir, "err", ".txt");
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile());
            pb.environment().putAll(env);
            Process p = pb.start();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("kubectl timed out: " + cmd);
            }
            return new Run(p.exitValue(), Files.readString(out), Files.readString(err));
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Runs kubectl, records the command and its output, and fails on a non-zero exit. */
    static String ok(String kubeconfig, String... args) {
        Run r = kubectl(kubeconfig, args);
        record(kubeconfig, args, r);
        assertThat(r.code()).as("kubectl %s: %s", String.join(" ", args), r.err()).isZero();
        return r.out();
    }

    static void record(String kubeconfig, String[] args, Run r) {
        transcript.append("$ kubectl ").append(kubeconfig.equals("kubeconfig") ? "" : "--kubeconfig " + kubeconfig + " ")
                .append(String.join(" ", args)).append('\n').append(r.out()).append(r.err()).append('\n');
    }

    static String alloc(String kubeconfig, String key, String arch) throws IOException {
        Path req = dir.resolve(key + ".json");
        Files.writeString(req, "{\"idempotencyKey\":\"" + key + "\",\"architecture\":\"" + arch
                + "\",\"wireGuardPublicKey\":\"" + TestCluster.wgKey(key.length()) + "\"}");
        return ok(kubeconfig, "create", "--raw", ALLOCS, "-f", req.toString());
    }

    /** The allocation id of the pod an alloc answer names (the allocated label). */
    static String idOf(String allocAnswer) throws IOException {
        String pod = M.readTree(allocAnswer).at("/pod/name").asText();
        return Hashes.allocationId("playpen", pod);
    }

    @Test
    void getListExplainAndDeleteWithTheRealKubectl() throws Exception {
        String mine1 = idOf(alloc("kubeconfig", "kubectl-mine-1", "amd64"));
        String mine2 = idOf(alloc("kubeconfig", "kubectl-mine-2", "arm64"));
        String admins = idOf(alloc("kubeconfig-admin", "kubectl-admin-1", "amd64"));
        List<String> mine = new ArrayList<>(List.of(mine1, mine2));
        java.util.Collections.sort(mine);

        // the table: the operator's columns, the caller's rows only, sorted by name
        String table = ok("kubeconfig", "get", "allocs");
        List<String> lines = table.lines().toList();
        assertThat(lines.get(0).split("\\s+")).containsExactly("NAME", "TYPE", "ARCH", "VERSION", "POD", "AGE", "EXPIRES");
        assertThat(lines).hasSize(3);
        assertThat(lines.get(1)).matches(mine.get(0) + "\\s+runner\\s+(amd64|arm64)\\s+<none>\\s+playpen-runner-\\S+\\s+\\d+s\\s+(59m|60m)");
        assertThat(lines.get(2)).startsWith(mine.get(1) + " ");
        assertThat(ok("kubeconfig", "get", "allocs", "--no-headers").lines().toList()).hasSize(2)
                .noneMatch(l -> l.startsWith("NAME"));
        String wide = ok("kubeconfig", "get", "allocs", "-o", "wide");
        assertThat(wide.lines().findFirst().orElseThrow().split("\\s+")).containsExactly("NAME", "TYPE", "ARCH",
                "VERSION", "POD", "AGE", "EXPIRES", "NODE", "ENDPOINT");
        assertThat(wide).containsPattern("dev-(amd64|arm64)\\s+203\\.0\\.113\\.1[01]:\\d+");
        assertThat(ok("kubeconfig", "get", "allocs", "-o", "name").lines().toList())
                .containsExactly("alloc.playpen.unbounded-cloud.io/" + mine.get(0), "alloc.playpen.unbounded-cloud.io/" + mine.get(1));
        JsonNode list = M.readTree(ok("kubeconfig", "get", "allocs", "-o", "json"));
        assertThat(list.get("items")).hasSize(2);
        assertThat(list.at("/items/0/kind").asText()).isEqualTo("Alloc");

        // one object as YAML: the fields, never the key or its hash
        String yaml = ok("kubeconfig", "get", "alloc", mine1, "-o", "yaml");
        assertThat(yaml).contains("apiVersion: playpen.unbounded-cloud.io/v1alpha1", "kind: Alloc", "name: " + mine1,
                "resourceType: runner", "architecture: amd64", "claimedAt:", "expiresAt:", "pod: playpen-runner-amd64-",
                "node: dev-amd64", "endpoint: 203.0.113.10:", "uid:", "creationTimestamp:")
                .doesNotContain("kubectl-mine-1").doesNotContain(Hashes.keyHash("kubectl-mine-1"));

        // another user's id is NotFound, like an id nobody holds; the admin sees everyone's
        Run other = kubectl("kubeconfig", "get", "alloc", admins);
        record("kubeconfig", new String[] {"get", "alloc", admins}, other);
        assertThat(other.code()).isNotZero();
        assertThat(other.err().trim()).isEqualTo("Error from server (NotFound): allocs.playpen.unbounded-cloud.io \""
                + admins + "\" not found");
        assertThat(ok("kubeconfig-admin", "get", "allocs", "--no-headers").lines().toList()).hasSize(3);
        Run denied = kubectl("kubeconfig-denied", "get", "allocs");
        record("kubeconfig-denied", new String[] {"get", "allocs"}, denied);
        assertThat(denied.err()).contains("Error from server (Forbidden)").contains("cannot list resource \"allocs\"");

        // discovery and schema
        String resources = ok("kubeconfig", "api-resources", "--api-group=playpen.unbounded-cloud.io", "-o", "wide");
        assertThat(resources).containsPattern("allocs\\s+alloc\\s+playpen.unbounded-cloud.io/v1alpha1\\s+false\\s+Alloc"
                + "\\s+create,delete,get,list,watch\\s+playpen");
        String explain = ok("kubeconfig", "explain", "allocs");
        assertThat(explain).contains("KIND:", "Alloc", "VERSION:", "v1alpha1", "Alloc is one allocation", "status",
                "spec");
        String explainStatus = ok("kubeconfig", "explain", "allocs.status");
        assertThat(explainStatus).contains("FIELD:", "status", "expiresAt", "endpoint", "When the allocation expires");

        // delete: kubectl's message, the pod is gone, and deleting it again is NotFound
        String pod = M.readTree(ok("kubeconfig", "get", "alloc", mine1, "-o", "json")).at("/status/pod").asText();
        assertThat(ok("kubeconfig", "delete", "alloc", mine1).trim())
                .isEqualTo("alloc.playpen.unbounded-cloud.io \"" + mine1 + "\" deleted");
        Run gone = kubectl("kubeconfig", "get", "pod", pod, "-n", "playpen");
        assertThat(gone.err()).contains("NotFound");
        Run again = kubectl("kubeconfig", "delete", "alloc", mine1);
        record("kubeconfig", new String[] {"delete", "alloc", mine1}, again);
        assertThat(again.err().trim()).isEqualTo("Error from server (NotFound): allocs.playpen.unbounded-cloud.io \""
                + mine1 + "\" not found");
        assertThat(ok("kubeconfig", "get", "allocs", "-o", "name").lines().toList())
                .containsExactly("alloc.playpen.unbounded-cloud.io/" + mine2);
    }

    /**
     * kubectl get -w follows the caller's allocations (through the stand-in aggregator, which streams the watch);
     * kubectl wait --for=delete returns once one is gone, without an error line.
     */
    @Test
    void watchAndWaitForDeleteWithTheRealKubectl() throws Exception {
        String first = idOf(allocWaiting("kubectl-watch-1"));
        Path out = Files.createTempFile(dir, "watch", ".txt");
        Path err = Files.createTempFile(dir, "watch-err", ".txt");
        Process watch = new ProcessBuilder(KUBECTL, "--kubeconfig", dir.resolve("kubeconfig").toString(), "get",
                "allocs", "-w", "--output-watch-events").redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        try {
            // the list it starts from; the watch goes on from the list's resourceVersion, however late it opens
            awaitLine(out, "ADDED", first);
            String id = idOf(allocWaiting("kubectl-watch-2"));
            awaitLine(out, "ADDED", id);

            Path waitOut = Files.createTempFile(dir, "wait", ".txt");
            Path waitErr = Files.createTempFile(dir, "wait-err", ".txt");
            // -v=6 logs each request as its answer comes: the delete is sent once the wait's watch is answered
            Process waiting = new ProcessBuilder(KUBECTL, "--kubeconfig", dir.resolve("kubeconfig").toString(), "wait",
                    "--for=delete", "alloc/" + id, "--timeout=30s", "-v=6").redirectOutput(waitOut.toFile())
                    .redirectError(waitErr.toFile()).start();
            OperatorHarness.awaitTrue(() -> transcriptOf(waitErr).lines().anyMatch(l -> l.contains("watch=true")
                    && l.contains("200 OK")) || !waiting.isAlive(), Duration.ofSeconds(30), "kubectl wait watching");
            ok("kubeconfig", "delete", "alloc", id, "--wait=false");
            assertThat(waiting.waitFor(40, TimeUnit.SECONDS)).as("kubectl wait ended").isTrue();
            transcript.append("$ kubectl wait --for=delete alloc/").append(id).append(" --timeout=30s\n")
                    .append(Files.readString(waitOut)).append(Files.readString(waitErr)).append('\n');
            assertThat(waiting.exitValue()).as(Files.readString(waitErr)).isZero();
            assertThat(Files.readString(waitOut).trim()).isEqualTo("alloc.playpen.unbounded-cloud.io/" + id
                    + " condition met");
            // no error or warning line (klog's E and W lines: "Failed to watch" was one, every second)
            assertThat(Files.readString(waitErr).lines().filter(l -> l.startsWith("E") || l.startsWith("W")))
                    .isEmpty();
            awaitLine(out, "DELETED", id);
            assertThat(watch.isAlive()).as("kubectl get -w still watching: " + transcriptOf(err)).isTrue();
        } finally {
            watch.destroy();
            transcript.append("$ kubectl get allocs -w --output-watch-events\n").append(transcriptOf(out))
                    .append(transcriptOf(err)).append('\n');
            // the other tests count the caller's allocations
            kubectl("kubeconfig", "delete", "alloc", first, "--ignore-not-found");
        }
    }

    /** An alloc of an amd64 runner that waits up to 30 s for one (the other tests may hold the idle ones). */
    static String allocWaiting(String key) throws IOException {
        Path req = dir.resolve(key + ".json");
        Files.writeString(req, "{\"idempotencyKey\":\"" + key + "\",\"architecture\":\"amd64\",\"waitSeconds\":"
                + "30,\"wireGuardPublicKey\":\"" + TestCluster.wgKey(3) + "\"}");
        return ok("kubeconfig", "create", "--raw", ALLOCS, "-f", req.toString());
    }

    /** Waits for kubectl get -w --output-watch-events to print {@code event} for allocation {@code id}. */
    static void awaitLine(Path out, String event, String id) throws InterruptedException {
        OperatorHarness.awaitTrue(() -> transcriptOf(out).lines().anyMatch(l -> l.matches(event + "\\s+" + id
                + "\\s.*")), Duration.ofSeconds(30), "the watch's " + event + " line of " + id);
    }

    static String transcriptOf(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void changingOrDryRunDeletingAnAllocationIsRefusedWithWhatToDoInstead() throws Exception {
        Path req = dir.resolve("kubectl-label-1.json");
        Files.writeString(req, "{\"idempotencyKey\":\"kubectl-label-1\",\"architecture\":\"amd64\",\"waitSeconds\":30,"
                + "\"wireGuardPublicKey\":\"" + TestCluster.wgKey(15) + "\"}");
        String id = idOf(ok("kubeconfig", "create", "--raw", ALLOCS, "-f", req.toString()));
        try {
            String refused = "Error from server (MethodNotAllowed): allocations cannot be changed: renew one for more"
                    + " time with kubectl create --raw /apis/playpen.unbounded-cloud.io/v1alpha1/renewals -f <file> "
                    + "(its idempotencyKey and a ttl), release it with kubectl delete alloc <id>, or allocate another "
                    + "with kubectl create --raw /apis/playpen.unbounded-cloud.io/v1alpha1/allocs -f <file>";
            // kubectl reads the allocation first, then sends the PATCH that is refused (annotate and edit alike)
            for (String[] args : List.of(new String[] {"label", "alloc", id, "team=a"}, new String[] {"patch",
                    "alloc", id, "--type=merge", "-p", "{\"metadata\":{\"labels\":{\"team\":\"a\"}}}"})) {
                Run r = kubectl("kubeconfig", args);
                record("kubeconfig", args, r);
                assertThat(r.code()).as(String.join(" ", args)).isNotZero();
                assertThat(r.err().trim()).as(String.join(" ", args)).isEqualTo(refused);
            }
            // replace and edit send the changed object after kubectl's own validation, which reads the cluster's
            // OpenAPI v2 document as protobuf: the same answer from the server, not a validation error of kubectl's
            Path yaml = dir.resolve("kubectl-label-1.yaml");
            Files.writeString(yaml, ok("kubeconfig", "get", "alloc", id, "-o", "yaml"));
            String[] replace = {"replace", "-f", yaml.toString()};
            Run replaced = kubectl("kubeconfig", replace);
            record("kubeconfig", replace, replaced);
            assertThat(replaced.code()).isNotZero();
            assertThat(replaced.err().trim()).isEqualTo(refused.replace("allocations cannot", "error when replacing \""
                    + yaml + "\": allocations cannot"));
            Path editor = dir.resolve("editor.sh");
            Files.writeString(editor, "#!/bin/sh\nsed -i 's/^  node: .*/  node: other/' \"$1\"\n");
            editor.toFile().setExecutable(true);
            String[] edit = {"edit", "alloc", id};
            Run edited = kubectl(Map.of("EDITOR", editor.toString(), "KUBE_EDITOR", editor.toString(), "TMPDIR",
                    dir.toAbsolutePath().toString()), "kubeconfig", edit);
            record("kubeconfig", edit, edited);
            assertThat(edited.code()).isNotZero();
            assertThat(edited.err()).contains(refused.substring(refused.indexOf("allocations cannot")));
            // a server-side dry run of the delete: refused with where to see what it would release, nothing deleted
            String[] dry = {"delete", "alloc", id, "--dry-run=server"};
            Run r = kubectl("kubeconfig", dry);
            record("kubeconfig", dry, r);
            assertThat(r.code()).isNotZero();
            assertThat(r.err().trim()).isEqualTo("Error from server (BadRequest): dry-run deletes are not supported on "
                    + "allocs: nothing was deleted; kubectl get alloc " + id + " -o yaml shows the allocation this "
                    + "delete would release");
            assertThat(ok("kubeconfig", "get", "alloc", id, "-o", "name").trim())
                    .isEqualTo("alloc.playpen.unbounded-cloud.io/" + id);
        } finally {
            ok("kubeconfig", "delete", "alloc", id);
            // the pools refill before the other test allocates without waiting
            OperatorHarness.awaitTrue(() -> kubectl("kubeconfig", "get", "pools", "-o",
                    "jsonpath={range .items[*]}{.status.ready}{\"\\n\"}{end}").out().lines()
                    .mapToLong(Long::parseLong).sum() >= 3, Duration.ofSeconds(60), "three ready idle runners");
        }
    }
}
