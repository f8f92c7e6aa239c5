package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import org.junit.jupiter.api.Test;

/** The Warning header kube-apiserver writes and client-go reads: 299 - "text", comma-separated, printable ASCII only. */
class WarningHeaderTest {
    @Test
    void noWarningsNoHeader() {
        assertThat(ReplyWriter.warningHeader(null)).isNull();
        assertThat(ReplyWriter.warningHeader(List.of())).isNull();
    }

    @Test
    void oneOrSeveralWarnings() {
        assertThat(ReplyWriter.warningHeader(List.of("a"))).isEqualTo("299 - \"a\"");
        assertThat(ReplyWriter.warningHeader(List.of("a", "b c"))).isEqualTo("299 - \"a\", 299 - \"b c\"");
    }

    @Test
    void quotesAndBackslashesAreEscapedAndNothingElseButPrintableAsciiGoesOut() {
        assertThat(ReplyWriter.warningHeader(List.of("field \"x\\y\""))).isEqualTo("299 - \"field \\\"x\\\\y\\\"\"");
        assertThat(ReplyWriter.warningHeader(List.of("a\r\nX-Injected: 1\u0000\u00e4\u2028\t")))
                .isEqualTo("299 - \"a??X-Injected: 1????\"");
        // the edges of printable ASCII: space and tilde go out, DEL and U+0080 do not
        assertThat(ReplyWriter.warningHeader(List.of(" ~\u007f\u0080\u001f"))).isEqualTo("299 - \" ~???\"");
    }
}
