package io.unboundedcloud.playpen.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import org.junit.jupiter.api.Test;

/** Request targets at their edges: queries at the very start, fragments, encoded slashes, Status helpers. */
class ApiPathsEdgesTest {

    @Test
    void theQueryIsEverythingBetweenTheFirstQuestionMarkAndTheFragment() {
        assertThat(ApiPaths.rawQuery("?a=1")).isEqualTo("a=1");
        assertThat(ApiPaths.rawQuery("/x?a=1#frag")).isEqualTo("a=1");
        assertThat(ApiPaths.rawQuery("/x?a=1?b#f#g")).isEqualTo("a=1?b");
        assertThat(ApiPaths.rawQuery("/x#f?a=1")).isEqualTo("a=1");
        assertThat(ApiPaths.rawQuery("/x")).isEmpty();
        assertThat(ApiPaths.rawQuery(null)).isEmpty();
    }

    @Test
    void aSegmentThatDecodesToASlashIsNotFound() {
        for (String target : new String[] {"/apis/%2Fx", "/apis/x%2F", "/apis/%2f"}) {
            ApiException e = catchThrowableOfType(ApiException.class, () -> ApiPaths.route("GET", target));
            assertThat(e).as(target).isNotNull();
            assertThat(e.code()).as(target).isEqualTo(404);
        }
    }

    @Test
    void aPathIsOnlyPlainNames() {
        assertThat(ApiPaths.path("/apis/x")).isEqualTo("/apis/x");
        assertThat(ApiPaths.path("https://host:6443/apis/x?y#z")).isEqualTo("/apis/x");
        for (String target : new String[] {"/apis/%2Fx", "/apis/x%2F", "/apis//x", "/apis/./x", "/apis/%2e%2e", "/", ""}) {
            ApiException e = catchThrowableOfType(ApiException.class, () -> ApiPaths.path(target));
            assertThat(e).as(target).isNotNull();
            assertThat(e.code()).as(target).isEqualTo(404);
        }
    }

    @Test
    void renewalsArePosted() {
        assertThat(ApiPaths.route("POST", ApiPaths.RENEWALS_PATH)).isEqualTo(ApiPaths.Flow.RENEWAL);
    }

    @Test
    void internalErrorsAre500() {
        ApiException e = ApiException.internal("boom");
        assertThat(e.code()).isEqualTo(500);
        assertThat(e.reason()).isEqualTo("InternalError");
        assertThat(e).hasMessage("boom");
    }

    @Test
    void anAnswerWithAnExpiryKeepsEverythingElse() {
        AllocResponse plain = new AllocResponse("runner", null, null, null, null, null, null, null);
        AllocResponse leased = plain.withExpiresAt("2026-01-02T03:04:05Z");
        assertThat(leased.expiresAt()).isEqualTo("2026-01-02T03:04:05Z");
        assertThat(leased.withExpiresAt(null)).isEqualTo(plain);
        assertThat(plain.expiresAt()).isNull();
    }
}
