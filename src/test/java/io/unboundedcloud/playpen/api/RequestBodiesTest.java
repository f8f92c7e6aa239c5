package io.unboundedcloud.playpen.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.util.Arrays;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class RequestBodiesTest {
    static final byte[] JSON = "{}".getBytes();

    @ParameterizedTest(name = "[{0}] is accepted")
    @ValueSource(strings = {"application/json", "", "text/plain", "application/x-www-form-urlencoded",
            "application/json; charset=utf-8", "application/json;charset=UTF-8", "application/json; charset=\"utf-8\"",
            "text/plain; CHARSET=utf8", "application/json; charset=us-ascii", "application/json; q=1; charset=UTF-8 ",
            "garbage;;;=;"})
    void anyMediaTypeWithAUtf8OrNoCharsetIsAccepted(String contentType) {
        assertThat(RequestBodies.admit(contentType, JSON)).isSameAs(JSON);
    }

    @ParameterizedTest(name = "[{0}] is 415 ({1})")
    @CsvSource(delimiter = '|', value = {
            "application/json; charset=utf-16        | utf-16",
            "application/json; charset=UTF-32        | UTF-32",
            "application/json; charset=IBM037        | IBM037",
            "application/json; charset=bogus-cs      | bogus-cs",
            "text/plain; charset=iso-8859-1          | iso-8859-1",
            "application/json; charset=\"utf-16le\"  | utf-16le",
            "application/json; charset=utf-8; charset=cp1252 | cp1252",
            "application/json; charset=a b           | a b",
    })
    void anyOtherCharsetIs415(String contentType, String named) {
        ApiException e = catchThrowableOfType(ApiException.class, () -> RequestBodies.admit(contentType, JSON));
        assertThat(e).isNotNull();
        assertThat(e.code()).isEqualTo(415);
        assertThat(e.reason()).isEqualTo("UnsupportedMediaType");
        assertThat(e.getMessage()).isEqualTo("charset \"" + named + "\" is not supported; send UTF-8");
    }

    @Test
    void emptyCharsetIs415AndAbsentContentTypeIsFine() {
        assertThat(catchThrowableOfType(ApiException.class, () -> RequestBodies.admit("application/json; charset=", JSON))
                .code()).isEqualTo(415);
        assertThat(RequestBodies.admit(null, null)).isEmpty();
    }

    @Test
    void sixtyFourKibIsTheLimit() {
        byte[] max = new byte[64 * 1024];
        Arrays.fill(max, (byte) ' ');
        assertThat(RequestBodies.admit(null, max)).isSameAs(max);
        ApiException e = catchThrowableOfType(ApiException.class, () -> RequestBodies.admit(null, new byte[max.length + 1]));
        assertThat(e.code()).isEqualTo(413);
        assertThat(e.reason()).isEqualTo("RequestEntityTooLarge");
        // what is wrong, then what to send
        assertThat(e.getMessage()).isEqualTo("request body is larger than 65536 bytes: send the request's JSON object"
                + " alone, such as {\"idempotencyKey\":\"job-42\"} (an alloc, dealloc or renewal body is a few hundred"
                + " bytes)");
    }
}
