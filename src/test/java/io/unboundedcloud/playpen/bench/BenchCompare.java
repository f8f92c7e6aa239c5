package io.unboundedcloud.playpen.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

/**
 * The bench's compare mode, second half: every target of two (sets of) bench runs side by side. {@code java -jar
 * playpen-bench.jar --compare=OTHER.jar} runs the bench of the other jar (A, say the main branch) and of this one
 * (B) back to back, alternately when {@code --compare-runs} is more than 1, each into a directory of its own, and
 * then this prints, for every target either run reports, each run's figures and whether it passed, in order A1,
 * B1, A2, B2, ... It also writes {@code compare.json}. With {@code --a=DIR[,DIR...] --b=DIR[,DIR...]} it compares
 * runs made before (each DIR holding a {@code results.json}).
 */
public final class BenchCompare {
    private static final ObjectMapper JSON = new ObjectMapper();

    private BenchCompare() {
    }

    public static void main(String[] args) throws IOException {
        List<Path> a = new ArrayList<>();
        List<Path> b = new ArrayList<>();
        Path out = null;
        for (String arg : args) {
            if (arg.startsWith("--a=")) {
                a.addAll(dirs(arg.substring(4)));
            } else if (arg.startsWith("--b=")) {
                b.addAll(dirs(arg.substring(4)));
            } else if (arg.startsWith("--out=")) {
                out = Path.of(arg.substring(6));
            } else {
                System.err.println("bad argument " + arg + " (want --a=DIR[,DIR...] --b=DIR[,DIR...] [--out=DIR])");
                System.exit(2);
            }
        }
        if (a.isEmpty() || b.isEmpty()) {
            System.err.println("want --a=DIR[,DIR...] and --b=DIR[,DIR...], each DIR with a results.json");
            System.exit(2);
        }
        Map<String, Object> comparison = compare(a, b);
        System.out.println(table(comparison));
        if (out != null) {
            Files.createDirectories(out);
            Files.writeString(out.resolve("compare.json"),
                    JSON.copy().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(comparison));
            System.out.println("wrote " + out.resolve("compare.json"));
        }
    }

    private static List<Path> dirs(String csv) {
        List<Path> out = new ArrayList<>();
        for (String s : csv.split(",")) {
            if (!s.isBlank()) {
                out.add(Path.of(s.trim()));
            }
        }
        return out;
    }

    /** The runs in the order they ran (A1, B1, A2, B2, ...), by label, and every target's figures in each. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> compare(List<Path> a, List<Path> b) throws IOException {
        Map<String, Map<String, Object>> runs = new LinkedHashMap<>();
        for (int i = 0; i < Math.max(a.size(), b.size()); i++) {
            if (i < a.size()) {
                runs.put("A" + (i + 1), read(a.get(i)));
            }
            if (i < b.size()) {
                runs.put("B" + (i + 1), read(b.get(i)));
            }
        }
        Set<String> names = new LinkedHashSet<>();
        for (Map<String, Object> r : runs.values()) {
            Map<String, Object> t = (Map<String, Object>) r.getOrDefault("targets", Map.of());
            names.addAll(t.keySet());
        }
        Map<String, Object> targets = new LinkedHashMap<>();
        for (String name : names) {
            Map<String, Object> perRun = new LinkedHashMap<>();
            runs.forEach((label, r) -> perRun.put(label, ((Map<String, Object>) r.getOrDefault("targets", Map.of()))
                    .get(name)));
            targets.put(name, perRun);
        }
        Map<String, Object> sources = new LinkedHashMap<>();
        for (int i = 0; i < Math.max(a.size(), b.size()); i++) {
            if (i < a.size()) {
                sources.put("A" + (i + 1), a.get(i).toString());
            }
            if (i < b.size()) {
                sources.put("B" + (i + 1), b.get(i).toString());
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("runs", sources);
        Map<String, Object> started = new LinkedHashMap<>();
        runs.forEach((label, r) -> started.put(label, ((Map<String, Object>) r.getOrDefault("config", Map.of()))
                .get("startedAt")));
        out.put("startedAt", started);
        out.put("targets", targets);
        return out;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> read(Path dir) throws IOException {
        Path file = Files.isDirectory(dir) ? dir.resolve("results.json") : dir;
        if (!Files.isRegularFile(file)) {
            return Map.of("targets", Map.of(), "missing", file.toString());
        }
        return JSON.readValue(file.toFile(), Map.class);
    }

    /** One block per target: a line per run with its figures and PASS / MISS (n/a: not measured or not reported). */
    @SuppressWarnings("unchecked")
    static String table(Map<String, Object> comparison) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "%n== compare: every target of every run ==%n"));
        ((Map<String, Object>) comparison.get("runs")).forEach((label, src) ->
                sb.append(String.format(Locale.ROOT, "%-3s %s (started %s)%n", label, src,
                        ((Map<String, Object>) comparison.get("startedAt")).get(label))));
        ((Map<String, Object>) comparison.get("targets")).forEach((name, perRun) -> {
            sb.append(String.format(Locale.ROOT, "%n%s%n", name));
            ((Map<String, Object>) perRun).forEach((label, v) -> {
                String pass = "n/a ";
                String figures = "not reported";
                if (v instanceof Map<?, ?> m) {
                    Object p = m.get("pass");
                    pass = p == null ? "n/a " : Boolean.TRUE.equals(p) ? "PASS" : "MISS";
                    figures = compact((Map<String, Object>) m);
                } else if (v != null) {
                    figures = String.valueOf(v);
                }
                sb.append(String.format(Locale.ROOT, "  %-3s %s %s%n", label, pass, figures));
            });
        });
        return sb.toString();
    }

    private static String compact(Map<String, Object> m) {
        StringBuilder sb = new StringBuilder();
        m.forEach((k, v) -> {
            if (!k.equals("pass") && !k.equals("note") && !k.endsWith("Note")) {
                sb.append(sb.length() == 0 ? "" : " ").append(k).append('=')
                        .append(v instanceof Map<?, ?> inner ? "{" + compactNested(inner) + "}" : v);
            }
        });
        return sb.toString();
    }

    private static String compactNested(Map<?, ?> m) {
        StringBuilder sb = new StringBuilder();
        m.forEach((k, v) -> {
            if (!"note".equals(k) && !String.valueOf(k).endsWith("Note")) {
                sb.append(sb.length() == 0 ? "" : " ").append(k).append('=')
                        .append(v instanceof Map<?, ?> inner ? "{" + compactNested(inner) + "}" : v);
            }
        });
        return sb.toString();
    }
}
