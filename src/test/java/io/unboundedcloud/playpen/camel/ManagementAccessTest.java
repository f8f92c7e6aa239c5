package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * Which web pages' origins and which host names the management listener accepts: an origin as the browser sends it
 * matches the flag's value written in any case, with a trailing slash or with the scheme's default port; any other
 * scheme, host or port does not.
 */
class ManagementAccessTest {
    @Test
    void anOriginMatchesWhateverCaseSlashOrDefaultPortTheFlagWasWrittenWith() {
        ManagementAccess access = ManagementAccess.of(List.of(" HTTPS://Hawtio.Example:443/ ", "http://console.example:80",
                "https://ops.example:8443", "http://[::1]:9000", "https://odd.example:80", "http://odd.example:443"),
                List.of());
        // what browsers send: no default port, lower-case scheme and host
        assertThat(access.allowsOrigin("https://hawtio.example")).isTrue();
        assertThat(access.allowsOrigin("https://HAWTIO.example:443")).isTrue();
        assertThat(access.allowsOrigin("http://console.example")).isTrue();
        assertThat(access.allowsOrigin("https://ops.example:8443")).isTrue();
        assertThat(access.allowsOrigin("http://[::1]:9000")).isTrue();

        // another scheme, port or host is another origin
        assertThat(access.allowsOrigin("http://hawtio.example")).as("http is not https").isFalse();
        assertThat(access.allowsOrigin("http://hawtio.example:443")).as("443 is no default for http").isFalse();
        assertThat(access.allowsOrigin("https://console.example")).isFalse();
        assertThat(access.allowsOrigin("https://console.example:80")).as("80 is no default for https").isFalse();
        assertThat(access.allowsOrigin("https://ops.example")).as("the configured port is part of it").isFalse();
        assertThat(access.allowsOrigin("https://ops.example:443")).isFalse();
        assertThat(access.allowsOrigin("https://odd.example:80")).isTrue();
        assertThat(access.allowsOrigin("https://odd.example")).as("80 is kept for https").isFalse();
        assertThat(access.allowsOrigin("http://odd.example:443")).isTrue();
        assertThat(access.allowsOrigin("http://odd.example")).as("443 is kept for http").isFalse();
        assertThat(access.allowsOrigin("https://hawtio.example.evil")).isFalse();
        assertThat(access.allowsOrigin("https://evil.hawtio.example")).isFalse();
        assertThat(access.allowsOrigin("null")).as("a sandboxed page's origin").isFalse();
    }

    @Test
    void noOriginIsAllowedUnlessConfiguredAndHostsMatchInAnyCase() {
        assertThat(ManagementAccess.NONE.allowsOrigin("https://hawtio.example")).isFalse();
        assertThat(ManagementAccess.NONE.allowsOrigin("")).isFalse();
        assertThat(ManagementAccess.NONE.allowsHost("ops.example")).isFalse();

        ManagementAccess access = ManagementAccess.of(List.of(), List.of(" Ops.Example "));
        assertThat(access.allowsHost("ops.example")).isTrue();
        assertThat(access.allowsHost("OPS.EXAMPLE")).isTrue();
        assertThat(access.allowsHost("ops.example.evil")).isFalse();
        assertThat(access.origins()).isEmpty();
    }
}
