package io.unboundedcloud.playpen.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

/** The README's configuration table documents every flag with its real default, the reference's flags first. */
class ReadmeTest {
    @Test
    void everyFlagIsDocumentedWithItsDefault() throws Exception {
        String readme = Files.readString(Path.of("README.md"));
        for (Flag f : Flag.values()) {
            String def = f.defaultValue().isEmpty() ? "(empty)" : "`" + f.defaultValue() + "`";
            assertThat(readme).as("README row for --%s", f.flagName()).contains("| `--" + f.flagName() + "` | " + def + " |");
        }
        assertThat(readme).contains("mvn -B verify").contains("java -jar target/playpen-operator.jar --dev");
    }

    @Test
    void tableListsTheReferenceFlagsFirstInTheReferenceOrderThenHelpAndVersion() throws Exception {
        List<String> rows = flagTableFirstColumn(Files.readString(Path.of("README.md")));
        List<String> expected = new ArrayList<>();
        for (String[] nameDefault : OperatorConfigTest.REFERENCE_DEFAULTS) {
            expected.add("`--" + nameDefault[0] + "`");
        }
        expected.add("`--help`, `-h`");
        expected.add("`--version`, `-v`");
        assertThat(rows.subList(0, expected.size())).containsExactlyElementsOf(expected);
        assertThat(rows).hasSize(Flag.values().length + 2).doesNotHaveDuplicates();
    }

    /** The first cells of the configuration table (the one whose header is "| flag | default | what it does |"). */
    static List<String> flagTableFirstColumn(String readme) {
        List<String> out = new ArrayList<>();
        boolean inTable = false;
        for (String line : readme.lines().toList()) {
            if (line.equals("| flag | default | what it does |")) {
                inTable = true;
                continue;
            }
            if (inTable && line.startsWith("| ---")) {
                continue;
            }
            if (inTable && !line.startsWith("|")) {
                break;
            }
            if (inTable) {
                out.add(line.substring(2, line.indexOf(" | ")));
            }
        }
        return out;
    }
}
