package io.unboundedcloud.playpen.docs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;

import org.junit.jupiter.api.Test;

/** How DocsIT reads a document's shell blocks and its test markers. */
class DocBlocksTest {
    @Test
    void scriptsSessionsAndMarkers() {
        String md = String.join("\n",
                "# Title",
                "<!-- test: playground -->",
                "",
                "```sh",
                "mvn -B -q package && java -jar target/playpen-operator.jar --dev",
                "```",
                "",
                "```console",
                "$ kubectl get allocs \\",
                "    -o wide",
                "NAME   TYPE",
                "",
                "$ echo hi",
                "hi",
                "```",
                "```yaml",
                "a: 1",
                "```",
                "<!-- test: skip (needs a cluster) -->",
                "```bash",
                "kubectl apply -k deploy/",
                "```",
                "<!-- test: stop -->",
                "```sh",
                "for i in 1 2; do",
                "  echo $i",
                "done",
                "```");
        List<DocBlocks.Block> blocks = DocBlocks.parse(md);
        assertThat(blocks).extracting(DocBlocks.Block::kind).containsExactly(DocBlocks.Kind.SCRIPT, DocBlocks.Kind.SESSION,
                DocBlocks.Kind.SCRIPT, DocBlocks.Kind.STOP, DocBlocks.Kind.SCRIPT);
        assertThat(blocks.get(0).playground()).isTrue();
        assertThat(blocks.get(0).steps()).singleElement().extracting(DocBlocks.Step::command)
                .isEqualTo("mvn -B -q package && java -jar target/playpen-operator.jar --dev");
        assertThat(blocks.get(1).steps()).extracting(DocBlocks.Step::command)
                .containsExactly("kubectl get allocs  -o wide", "echo hi");
        assertThat(blocks.get(1).steps().get(0).expected()).containsExactly("NAME   TYPE");
        assertThat(blocks.get(1).steps().get(0).line()).isEqualTo(9);
        assertThat(blocks.get(1).steps().get(1).expected()).containsExactly("hi");
        assertThat(blocks.get(2).skip()).isEqualTo("needs a cluster");
        assertThat(blocks.get(4).script()).isEqualTo("for i in 1 2; do\n  echo $i\ndone\n");
        assertThat(blocks.get(4).skip()).isNull();
    }

    @Test
    void markersMustBeUsable() {
        assertThatThrownBy(() -> DocBlocks.parse("<!-- test: skip -->\n```sh\nx\n```")).hasMessageContaining("needs a reason");
        assertThatThrownBy(() -> DocBlocks.parse("<!-- test: skip (x) -->\nsome prose\n```sh\nx\n```"))
                .hasMessageContaining("right before a code block");
        assertThatThrownBy(() -> DocBlocks.parse("<!-- test: skip (x) -->\n```yaml\na: 1\n```"))
                .hasMessageContaining("never run");
        assertThatThrownBy(() -> DocBlocks.parse("<!-- test: run -->\n```sh\nx\n```")).hasMessageContaining("unknown test marker");
        assertThatThrownBy(() -> DocBlocks.parse("```console\noutput first\n$ x\n```")).hasMessageContaining("output before");
    }

    @Test
    void blocksInsideListItemsCount() {
        List<DocBlocks.Block> blocks = DocBlocks.parse("1. Build it:\n\n   <!-- test: skip (needs Docker) -->\n   ```sh\n"
                + "   docker build .\n   ```\n2. Look:\n\n   ```console\n   $ echo hi\n   hi\n   ```\n");
        assertThat(blocks).hasSize(2);
        assertThat(blocks.get(0).skip()).isEqualTo("needs Docker");
        assertThat(blocks.get(0).script()).isEqualTo("docker build .\n");
        assertThat(blocks.get(1).steps()).singleElement().satisfies(s -> {
            assertThat(s.command()).isEqualTo("echo hi");
            assertThat(s.expected()).containsExactly("hi");
        });
    }
}
