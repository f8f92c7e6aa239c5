package io.unboundedcloud.playpen.api;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class StatusTest {

    @Test
    void conflictAsKubectlReadsIt() {
        assertThat(Json.write(Status.failure(409, "Conflict", "m")))
                .isEqualTo("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                        + "\"message\":\"m\",\"reason\":\"Conflict\",\"code\":409}");
    }

    @Test
    void messageIsEscaped() {
        assertThat(Json.write(Status.failure(400, "BadRequest", "resourceType must be \"runner\" or \"controlPlane\"")))
                .isEqualTo("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                        + "\"message\":\"resourceType must be \\\"runner\\\" or \\\"controlPlane\\\"\","
                        + "\"reason\":\"BadRequest\",\"code\":400}");
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({"401, Unauthorized", "403, Forbidden", "503, ServiceUnavailable"})
    void everyFailureHasTheSameShape(int code, String reason) {
        assertThat(Json.write(Status.failure(code, reason, "why")))
                .isEqualTo("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                        + "\"message\":\"why\",\"reason\":\"" + reason + "\",\"code\":" + code + "}");
    }

    @Test
    void apiExceptionFactories() {
        assertThat(ApiException.conflict("c")).extracting(ApiException::code, ApiException::reason, Throwable::getMessage)
                .containsExactly(409, "Conflict", "c");
        assertThat(ApiException.unavailable("u", 2).headers()).containsExactly(java.util.Map.entry("Retry-After", "2"));
        assertThat(ApiException.tooLarge("t").code()).isEqualTo(413);
        assertThat(ApiException.tooLarge("t").reason()).isEqualTo("RequestEntityTooLarge");
        assertThat(ApiException.unsupportedMediaType("t").code()).isEqualTo(415);
        assertThat(ApiException.unsupportedMediaType("t").reason()).isEqualTo("UnsupportedMediaType");
        assertThat(ApiException.unauthorized("t").reason()).isEqualTo("Unauthorized");
        assertThat(ApiException.forbidden("t").code()).isEqualTo(403);
    }
}
