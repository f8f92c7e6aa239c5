package io.unboundedcloud.playpen.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

/**
 * The README is a front page, and the documents stay inside the repository and free of the project's own
 * bookkeeping: every relative link resolves (file and heading), and so does every alert's runbook; no link leaves
 * the repository, no issue numbers, internal section codes or dated run notes. A file the walk-throughs have the
 * reader write in the working directory (the repository) is one git ignores.
 */
class DocsHygieneTest {
    static final Path ROOT = Path.of("");
    /** Documents that others write next to these; a link to one is fine until it lands. */
    static final Set<String> WRITTEN_SEPARATELY = Set.of();
    static final Pattern LINK = Pattern.compile("(?<!!)\\[[^\\]]*\\]\\(([^)\\s]+)\\)");

    static List<Path> documents() throws Exception {
        List<Path> docs = new ArrayList<>(List.of(ROOT.resolve("README.md"), ROOT.resolve("deploy/README.md")));
        try (Stream<Path> s = Files.list(ROOT.resolve("docs"))) {
            s.filter(p -> p.toString().endsWith(".md")).sorted().forEach(docs::add);
        }
        return docs;
    }

    /** Prose only: fenced blocks hold commands and outputs, not links. */
    static String prose(String markdown) {
        return markdown.replaceAll("(?ms)^ {0,6}```.*?^ {0,6}```", "");
    }

    @Test
    void theReadmeIsAFrontPageWithBothCommandsOnItsFirstScreen() throws Exception {
        List<String> lines = Files.readAllLines(ROOT.resolve("README.md"));
        assertThat(lines.size()).as("README lines").isLessThanOrEqualTo(300);
        String firstScreen = String.join("\n", lines.subList(0, Math.min(45, lines.size())));
        assertThat(firstScreen).contains("mvn -B -q package -DskipTests && java -jar target/playpen-operator.jar --dev")
                .contains("mvn -B verify");
    }

    @Test
    void everyRelativeLinkResolvesAndNoneLeavesTheRepository() throws Exception {
        List<String> problems = new ArrayList<>();
        for (Path doc : documents()) {
            String text = prose(Files.readString(doc));
            Matcher m = LINK.matcher(text);
            while (m.find()) {
                String target = m.group(1);
                if (target.matches("(?i)[a-z][a-z0-9+.-]*:.*")) {
                    problems.add(doc + ": link out of the repository: " + target);
                    continue;
                }
                String file = target.contains("#") ? target.substring(0, target.indexOf('#')) : target;
                String anchor = target.contains("#") ? target.substring(target.indexOf('#') + 1) : "";
                Path resolved = file.isEmpty() ? doc : doc.getParent() == null ? Path.of(file)
                        : doc.getParent().resolve(file).normalize();
                String key = resolved.toString().replace('\\', '/');
                if (!Files.exists(resolved)) {
                    if (!WRITTEN_SEPARATELY.contains(key)) {
                        problems.add(doc + ": broken link " + target);
                    }
                    continue;
                }
                if (!anchor.isEmpty() && key.endsWith(".md") && !anchors(Files.readString(resolved)).contains(anchor)) {
                    problems.add(doc + ": no heading for #" + anchor + " in " + key);
                }
            }
        }
        assertThat(problems).isEmpty();
    }

    /** Each alert's {@code runbook} annotation is a path from the repository root to a heading that exists. */
    @Test
    void everyAlertHasARunbookThatResolves() throws Exception {
        JsonNode rules = new ObjectMapper(new YAMLFactory()).readTree(ROOT.resolve("deploy/monitoring/prometheusrule.yaml").toFile());
        List<String> problems = new ArrayList<>();
        int alerts = 0;
        for (JsonNode group : rules.path("spec").path("groups")) {
            for (JsonNode rule : group.path("rules")) {
                if (!rule.has("alert")) {
                    continue;
                }
                alerts++;
                String alert = rule.get("alert").asText();
                String runbook = rule.path("annotations").path("runbook").asText("");
                int hash = runbook.indexOf('#');
                Path file = ROOT.resolve(hash < 0 ? runbook : runbook.substring(0, hash));
                if (runbook.isEmpty() || hash < 0) {
                    problems.add(alert + ": no runbook (file#heading): \"" + runbook + "\"");
                } else if (!Files.isRegularFile(file)) {
                    problems.add(alert + ": runbook file " + file + " does not exist");
                } else if (!anchors(Files.readString(file)).contains(runbook.substring(hash + 1))) {
                    problems.add(alert + ": no heading for " + runbook);
                }
            }
        }
        assertThat(alerts).as("alerts in deploy/monitoring/prometheusrule.yaml").isPositive();
        assertThat(problems).isEmpty();
    }

    /** A file name a command writes into the working directory: {@code > x.json}, {@code -out x.key}, {@code tee x.key}. */
    static final Pattern WRITTEN = Pattern.compile("(?:>|-out|\\btee)\\s+([A-Za-z0-9_.-]+\\.[a-z]+)(?=\\s|$)");

    @Test
    void theFilesTheWalkThroughsWriteAreIgnoredByGit() throws Exception {
        Set<String> ignored = new java.util.HashSet<>(Files.readAllLines(ROOT.resolve(".gitignore")));
        List<String> problems = new ArrayList<>();
        for (Path doc : documents()) {
            for (DocBlocks.Block b : DocBlocks.parse(Files.readString(doc))) {
                for (DocBlocks.Step s : b.steps()) {
                    Matcher m = WRITTEN.matcher(s.command());
                    while (m.find()) {
                        if (!ignored.contains("/" + m.group(1))) {
                            problems.add(doc + ":" + s.line() + " writes " + m.group(1) + ", which .gitignore does not list as /"
                                    + m.group(1));
                        }
                    }
                }
            }
        }
        assertThat(problems).isEmpty();
    }

    @Test
    void noProjectBookkeepingInTheDocuments() throws Exception {
        Pattern[] words = {
            Pattern.compile("(?i)\\bissue \\d+"),
            Pattern.compile("\\bSPEC\\b"),
            Pattern.compile("DESIGN\\.md"),
            Pattern.compile("\\.\\./shared"),
            Pattern.compile("(?i)\\brun [A-G]\\b"),
            Pattern.compile("\\b\\d\\d:\\d\\d UTC\\b"),
            Pattern.compile("\\bround \\d+")};
        List<String> problems = new ArrayList<>();
        for (Path doc : documents()) {
            List<String> lines = Files.readAllLines(doc);
            for (int i = 0; i < lines.size(); i++) {
                for (Pattern w : words) {
                    if (w.matcher(lines.get(i)).find()) {
                        problems.add(doc + ":" + (i + 1) + ": " + lines.get(i).strip());
                    }
                }
            }
        }
        assertThat(problems).isEmpty();
    }

    /** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
    static Set<String> anchors(String markdown) {
        Set<String> out = new java.util.HashSet<>();
        for (String line : prose(markdown).lines().toList()) {
            if (line.startsWith("#")) {
                String h = line.replaceFirst("^#+\\s*", "").strip().toLowerCase(Locale.ROOT);
                h = h.replaceAll("[`*_]", "").replaceAll("[^\\p{L}\\p{N} -]", "").replace(' ', '-');
                out.add(h);
            }
        }
        return out;
    }
}
