package io.unboundedcloud.playpen.api;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The charset parameter at its edges: empty quotes, a parameter without a name, the order of two charsets. */
class RequestBodiesCharsetEdgesTest {

    @Test
    void emptyQuotesAreAnEmptyCharset() {
        assertThat(RequestBodies.charset("application/json; charset=\"\"")).isEmpty();
        assertThat(RequestBodies.charset("application/json; charset=\"")).isEqualTo("\"");
        assertThat(RequestBodies.charset("application/json; charset=\" utf-16 \"")).isEqualTo("utf-16");
    }

    @Test
    void theCharsetThatIsNotUtf8DecidesWhicheverComesFirst() {
        assertThat(RequestBodies.charset("application/json; charset=cp1252; charset=utf-8")).isEqualTo("cp1252");
        assertThat(RequestBodies.charset("application/json; charset=utf-8; charset=cp1252")).isEqualTo("cp1252");
        assertThat(RequestBodies.charset("application/json; charset=utf-8; charset=UTF-8")).isEqualTo("utf-8");
    }

    @Test
    void parametersWithoutANameOrValueAreSkipped() {
        assertThat(RequestBodies.charset("application/json; =utf-16")).isNull();
        assertThat(RequestBodies.charset("application/json; charset")).isNull();
        assertThat(RequestBodies.charset("charset=utf-16")).isNull();
        assertThat(RequestBodies.charset(null)).isNull();
    }
}
