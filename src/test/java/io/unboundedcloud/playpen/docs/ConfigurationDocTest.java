package io.unboundedcloud.playpen.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;

import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.config.Flag;

/**
 * docs/configuration.md lists every flag with its real default and help, generated from config/Flag.java: the Go
 * operator's flags first, in its order, then this implementation's. Regenerate with
 * {@code mvn -o -q test -Dtest=ConfigurationDocTest -Ddocs.write=true}.
 */
class ConfigurationDocTest {
    static final Path DOC = Path.of("docs/configuration.md");

    static String cell(String s) {
        return s.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;");
    }

    static String row(Flag f) {
        String def = f.defaultValue().isEmpty() ? "(empty)" : "`" + f.defaultValue() + "`";
        return "| `--" + f.flagName() + "` | " + def + " | " + cell(f.help()) + " |\n";
    }

    static String referenceTable() {
        StringBuilder sb = new StringBuilder("| flag | default | what it does |\n| --- | --- | --- |\n");
        for (Flag f : Flag.values()) {
            if (Flag.REFERENCE.contains(f)) {
                sb.append(row(f));
            }
        }
        sb.append("| `--help`, `-h` | | print the usage to standard output and exit 0 |\n");
        sb.append("| `--version`, `-v` | | print `<version> (commit: <sha>)` and exit 0; the sha is `unknown` unless the build set `-Dgit.commit` |\n");
        return sb.toString();
    }

    static String additionsTable() {
        StringBuilder sb = new StringBuilder("| flag | default | what it does |\n| --- | --- | --- |\n");
        for (Flag f : Flag.values()) {
            if (!Flag.REFERENCE.contains(f)) {
                sb.append(row(f));
            }
        }
        return sb.toString();
    }

    @Test
    void theGoOperatorsFlagsAreListedInItsOrderWithTheirDefaults() throws Exception {
        assertThat(GeneratedSection.checkOrWrite(DOC, "reference-flags", referenceTable()))
                .as("docs/configuration.md is out of date: run mvn -o -q test -Dtest=ConfigurationDocTest -Ddocs.write=true")
                .isEqualTo(referenceTable());
    }

    @Test
    void everyOtherFlagIsListedWithItsDefault() throws Exception {
        assertThat(GeneratedSection.checkOrWrite(DOC, "flags", additionsTable()))
                .as("docs/configuration.md is out of date: run mvn -o -q test -Dtest=ConfigurationDocTest -Ddocs.write=true")
                .isEqualTo(additionsTable());
    }

    @Test
    void theTablesHoldEveryFlagOnce() {
        String both = referenceTable() + additionsTable();
        for (Flag f : Flag.values()) {
            assertThat(both.split("\\| `--" + f.flagName() + "` \\|", -1)).as(f.flagName()).hasSize(2);
        }
    }
}
