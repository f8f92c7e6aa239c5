package io.unboundedcloud.playpen.bench;

import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

/**
 * Entry point of the self-contained {@code target/playpen-bench.jar} ({@code mvn -B -Pbench package}): runs the
 * benchmark of {@link Bench} on any machine with a JRE 17, no Maven and no network. The jar carries the bench and
 * its libraries ({@code lib/}), the operator's routes ({@code routes/}) and the packaged operator jar
 * ({@code operator/playpen-operator.jar}, for the separate-process measurements); they are unpacked into a
 * scratch directory and the bench runs in a child JVM with the same settings as {@code mvn -Pbench verify}.
 *
 * <p>Flags mirror the {@code bench.*} properties: {@code --pods=200}, {@code --concurrency=1,8,32,64},
 * {@code --large=10000}, ... ({@code --name=value} sets {@code bench.name}); {@code --out=DIR} is where results go
 * (default {@code ./playpen-bench-results}); {@code --jvm-args="-Xms512m -Xmx4g"} the child JVM's flags;
 * {@code --help} lists them. Compare mode: {@code --compare=OTHER.jar} runs the bench of another bench jar (A, say
 * one built from the main branch) and this one's (B) back to back with the same flags ({@code --compare-runs=N}:
 * N of each, alternately), then prints every target of every run side by side ({@link BenchCompare}).
 */
public final class BenchJar {
    /** The bench.* properties and their defaults (those of the bench profile in pom.xml). */
    static final Map<String, String> DEFAULTS = new LinkedHashMap<>();
    /** The bench JVM's flags ({@code bench.jvmArgs} of the bench profile in pom.xml). */
    static final String JVM_ARGS = "-Xms512m -Xmx4g";

    static {
        DEFAULTS.put("pods", "200");
        DEFAULTS.put("requests", "200");
        DEFAULTS.put("warmup", "50");
        DEFAULTS.put("concurrency", "1,8,32,64");
        DEFAULTS.put("scale", "1000");
        DEFAULTS.put("large", "10000");
        DEFAULTS.put("largeClaimed", "5000");
        DEFAULTS.put("refillSamples", "10");
        DEFAULTS.put("ttlSamples", "6");
        DEFAULTS.put("huge", "100000");
        DEFAULTS.put("hugeClaimed", "50000");
        DEFAULTS.put("hugeNodes", "2000");
        DEFAULTS.put("phases", "compare,refill,ttl,large,huge,burst");
        DEFAULTS.put("cds", "true");
        DEFAULTS.put("cpuAllocs", "400");
        DEFAULTS.put("cpuConcurrency", "1,32,64");
        DEFAULTS.put("cpuWarmAllocs", "2000");
        DEFAULTS.put("jitWarmup", "1500");
        DEFAULTS.put("jitSettleRounds", "60");
        DEFAULTS.put("rounds", "4");
        DEFAULTS.put("cpuReplicas", "1,2,3,1");
        DEFAULTS.put("client", "vertx");
        DEFAULTS.put("profile", "");
        DEFAULTS.put("profileConcurrency", "1");
        DEFAULTS.put("operatorFlags", "");
        DEFAULTS.put("histogram", "false");
        DEFAULTS.put("jarJvmArgs", "-XX:MaxRAM=768m -XX:MaxRAMPercentage=35 -XX:InitialRAMPercentage=10 -XX:+UseSerialGC "
                + "-XX:MaxHeapFreeRatio=50 -XX:MinHeapFreeRatio=30 -Xss512k -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=64m "
                + "-XX:MaxDirectMemorySize=128m -XX:+ExitOnOutOfMemoryError -XX:-UsePerfData -Dfile.encoding=UTF-8");
    }

    private BenchJar() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> props = new LinkedHashMap<>(DEFAULTS);
        String out = "playpen-bench-results";
        String jvmArgs = JVM_ARGS;
        String compare = null;
        int compareRuns = 1;
        for (String a : args) {
            if (a.equals("--help") || a.equals("-h")) {
                usage();
                return;
            }
            int eq = a.indexOf('=');
            if (!a.startsWith("--") || eq < 0) {
                System.err.println("bad argument " + a + " (want --name=value; --help lists them)");
                System.exit(2);
            }
            String name = a.substring(2, eq);
            String value = a.substring(eq + 1);
            if (name.equals("out")) {
                out = value;
            } else if (name.equals("jvm-args")) {
                jvmArgs = value;
            } else if (name.equals("compare")) {
                compare = value;
            } else if (name.equals("compare-runs")) {
                compareRuns = Integer.parseInt(value);
            } else if (props.containsKey(name)) {
                props.put(name, value);
            } else {
                System.err.println("unknown flag --" + name + " (--help lists them)");
                System.exit(2);
            }
        }
        Path outDir = Path.of(out).toAbsolutePath();
        Files.createDirectories(outDir);
        Path home = unpack(self(), outDir.resolve(".playpen-bench"));
        if (compare == null) {
            System.out.println("playpen-bench: results in " + outDir);
            System.exit(run(home, outDir, jvmArgs, props));
        }
        // compare mode: the other jar's bench (A) and this one's (B) back to back, alternately, then every target
        Path other = unpack(Path.of(compare).toAbsolutePath(), outDir.resolve(".playpen-bench-a"));
        List<String> as = new ArrayList<>();
        List<String> bs = new ArrayList<>();
        for (int i = 1; i <= compareRuns; i++) {
            Path a = outDir.resolve("A" + i);
            Path b = outDir.resolve("B" + i);
            System.out.println("playpen-bench compare: run A" + i + " (" + compare + ") into " + a);
            run(other, a, jvmArgs, props);
            System.out.println("playpen-bench compare: run B" + i + " (this jar) into " + b);
            run(home, b, jvmArgs, props);
            as.add(a.toString());
            bs.add(b.toString());
        }
        List<String> cmd = new ArrayList<>(List.of(java(), "-cp", home.resolve("lib") + java.io.File.separator + "*",
                "io.unboundedcloud.playpen.bench.BenchCompare", "--a=" + String.join(",", as), "--b=" + String.join(",", bs),
                "--out=" + outDir));
        System.exit(new ProcessBuilder(cmd).inheritIO().start().waitFor());
    }

    private static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** The bench unpacked in {@code home} in a child JVM, results into {@code outDir}; its exit code. */
    static int run(Path home, Path outDir, String jvmArgs, Map<String, String> props) throws Exception {
        Files.createDirectories(outDir);
        List<String> cmd = new ArrayList<>();
        cmd.add(java());
        for (String j : jvmArgs.trim().split("\\s+")) {
            if (!j.isEmpty()) {
                cmd.add(j);
            }
        }
        cmd.add("-Djdk.internal.httpclient.disableHostnameVerification=true");
        cmd.add("-Djdk.httpclient.keepalive.timeout=30");
        cmd.add("-Dlogback.configurationFile=logback-bench.xml");
        cmd.add("-Dbench.out=" + outDir);
        cmd.add("-Dbench.routes=" + home.resolve("routes"));
        cmd.add("-Dplaypen.test.routesDir=" + home.resolve("routes"));
        cmd.add("-Dbench.jar=" + home.resolve("operator").resolve("playpen-operator.jar"));
        props.forEach((k, v) -> cmd.add("-Dbench." + k + "=" + v));
        cmd.add("-cp");
        cmd.add(home.resolve("lib") + java.io.File.separator + "*");
        cmd.add("io.unboundedcloud.playpen.bench.Bench"); // by name: this launcher JVM has none of its libraries
        Process p = new ProcessBuilder(cmd).inheritIO().start();
        return p.waitFor();
    }

    private static Path self() throws URISyntaxException {
        return Path.of(BenchJar.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    private static void usage() {
        System.out.println("java -jar playpen-bench.jar [--name=value ...]\n\n"
                + "  --out=DIR            where results.json, latency.html and logs go (default ./playpen-bench-results)\n"
                + "  --jvm-args=\"...\"     flags of the bench JVM (default " + JVM_ARGS + ")\n"
                + "  --compare=OTHER.jar  compare mode: the bench of OTHER.jar (A) and of this jar (B) back to back with\n"
                + "                       the same flags, results in <out>/A1, <out>/B1, ..., then every target of both\n"
                + "  --compare-runs=N     compare mode: N runs of each, alternately (A1 B1 A2 B2 ...; default 1)");
        DEFAULTS.forEach((k, v) -> System.out.printf("  --%-19s default %s%n", k + "=...", v));
        System.out.println("\nThe bench.* properties of Bench's Javadoc; a full run takes several minutes and wants 2+ cores.");
    }

    /** Unpacks lib/, routes/ and operator/ from the bench jar {@code self} into {@code dir} (replacing an earlier copy). */
    static Path unpack(Path self, Path dir) throws IOException {
        if (Files.isDirectory(dir)) {
            try (var walk = Files.walk(dir)) {
                walk.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
        try (JarFile jar = new JarFile(self.toFile())) {
            Enumeration<JarEntry> entries = jar.entries();
            while (entries.hasMoreElements()) {
                JarEntry e = entries.nextElement();
                String n = e.getName();
                if (e.isDirectory() || !(n.startsWith("lib/") || n.startsWith("routes/") || n.startsWith("operator/"))
                        || n.contains("..")) {
                    continue;
                }
                Path target = dir.resolve(n);
                Files.createDirectories(target.getParent());
                try (InputStream in = jar.getInputStream(e)) {
                    Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
        return dir;
    }
}
