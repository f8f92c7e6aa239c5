package io.unboundedcloud.playpen.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/** docs/security.md names tests as proof: every test class and method it names exists. */
class SecurityDocsTest {
    static final Pattern REFERENCE = Pattern.compile("`([A-Z][A-Za-z0-9]*(?:Test|IT))(?:\\.([a-zA-Z0-9]+))?`");

    @Test
    void everyTestTheSecurityDocumentNamesExists() throws IOException {
        String doc = Files.readString(Path.of("docs/security.md"));
        Map<String, String> sources;
        try (Stream<Path> files = Files.walk(Path.of("src/test/java"))) {
            sources = files.filter(p -> p.toString().endsWith(".java")).collect(Collectors.toMap(
                    p -> p.getFileName().toString().replace(".java", ""), p -> {
                        try {
                            return Files.readString(p);
                        } catch (IOException e) {
                            throw new IllegalStateException(e);
                        }
                    }, (a, b) -> a + b));
        }
        List<String> missing = new ArrayList<>();
        Matcher m = REFERENCE.matcher(doc);
        int references = 0;
        while (m.find()) {
            references++;
            String source = sources.get(m.group(1));
            if (source == null) {
                missing.add(m.group(1));
            } else if (m.group(2) != null && !Pattern.compile("void " + m.group(2) + "\\(").matcher(source).find()) {
                missing.add(m.group(1) + "." + m.group(2));
            }
        }
        assertThat(references).as("test references in docs/security.md").isGreaterThan(30);
        assertThat(missing).as("tests named in docs/security.md that do not exist").isEmpty();
        // the threat model names the four kinds of attacker
        assertThat(doc).contains("| **Cluster user**").contains("| **Runner pod**")
                .contains("| **Browser on an admin's machine**").contains("| **Network neighbour**");
    }
}
