package io.unboundedcloud.playpen.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.dev.DevMode;

/**
 * The lines the playground logs when it is ready are the ones the documents tell a reader to wait for: "dev
 * playground ready" when it serves kubectl, and the cluster alone ({@code --dev-operators=0}) in its own words, as
 * nothing serves kubectl yet.
 */
class PlaygroundLinesDocTest {
    @Test
    void theDocumentsQuoteTheReadyLinesThePlaygroundLogs() throws Exception {
        String readme = Files.readString(Path.of("README.md"));
        String gettingStarted = Files.readString(Path.of("docs/getting-started.md"));
        assertThat(readme).contains("`" + DevMode.PLAYGROUND_READY + "`");
        assertThat(gettingStarted).contains("`" + DevMode.PLAYGROUND_READY + "`");
        int alone = gettingStarted.indexOf("`--dev-operators=0`");
        assertThat(alone).as("the getting-started page tells of --dev-operators=0").isNotNegative();
        String paragraph = gettingStarted.substring(alone, gettingStarted.indexOf("\n\n", alone));
        assertThat(paragraph).contains("`" + DevMode.CLUSTER_ALONE_READY);
    }
}
