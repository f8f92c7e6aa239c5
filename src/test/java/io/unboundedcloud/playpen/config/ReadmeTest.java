package io.unboundedcloud.playpen.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;

/** The README's configuration table documents every flag with its real default. */
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
}
