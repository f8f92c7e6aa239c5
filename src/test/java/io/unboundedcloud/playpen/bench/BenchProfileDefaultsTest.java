package io.unboundedcloud.playpen.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

/**
 * The self-contained bench jar runs what {@code mvn -Pbench verify} runs: its defaults are the bench profile's
 * properties in pom.xml, every one of them, and its bench JVM gets the profile's flags (a jar that measured 100,000
 * pods in a smaller bench JVM than Maven's would read a full collection of the bench's own heap as the operator's).
 */
class BenchProfileDefaultsTest {
    /** The {@code bench.*} properties of pom.xml, by name without the prefix. */
    static Map<String, String> pomBenchProperties() throws Exception {
        String pom = Files.readString(Path.of("pom.xml"), StandardCharsets.UTF_8);
        Map<String, String> props = new LinkedHashMap<>();
        Matcher m = Pattern.compile("<bench\\.(\\w+)>([^<]*)</bench\\.\\1>").matcher(pom);
        while (m.find()) {
            props.put(m.group(1), m.group(2).trim());
        }
        return props;
    }

    @Test
    void theBenchJarsDefaultsAreTheBenchProfilesProperties() throws Exception {
        Map<String, String> pom = pomBenchProperties();
        assertThat(pom).containsKeys("pods", "phases", "jarJvmArgs", "jvmArgs");

        assertThat(BenchJar.JVM_ARGS).as("bench.jvmArgs").isEqualTo(pom.remove("jvmArgs"));
        assertThat(BenchJar.DEFAULTS).isEqualTo(pom);
    }
}
