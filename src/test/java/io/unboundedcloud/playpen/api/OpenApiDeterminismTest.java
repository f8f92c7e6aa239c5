package io.unboundedcloud.playpen.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * Every replica serves the same OpenAPI bytes, so the hash kube-apiserver's aggregator sees in the v3 index does not
 * change with the replica it asks (the document was built from Map.of, whose order differs from JVM to JVM).
 */
class OpenApiDeterminismTest {
    /** Prints the group document's hash (run in a fresh JVM). */
    public static final class Print {
        public static void main(String[] args) {
            System.out.print(OpenApi.V3_GROUP_HASH + " " + io.unboundedcloud.playpen.model.Hashes.sha256Hex(OpenApi.V2));
        }
    }

    @Test
    void theDocumentsAreTheSameBytesInEveryJvm() throws Exception {
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < 4; i++) {
            Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                    System.getProperty("java.class.path"), Print.class.getName()).redirectErrorStream(true).start();
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            seen.add(new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        }
        assertThat(seen).hasSize(1);
        assertThat(List.copyOf(seen).get(0)).startsWith(OpenApi.V3_GROUP_HASH);
    }
}
