package io.unboundedcloud.playpen.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Redfish password can stay off the command line: a file (a mounted Secret) or an environment variable
 * (a Secret through secretKeyRef), one way at a time, and no error message ever shows it.
 */
class RedfishPasswordSourcesTest {
    @TempDir
    Path dir;

    @Test
    void aFileIsReadAsIsButForOneTrailingNewline() throws Exception {
        Path file = dir.resolve("password");
        Files.writeString(file, " pa ss\tw0rd \n", StandardCharsets.UTF_8);
        assertThat(OperatorConfig.parse("--runner-redfish-password-file=" + file).network().redfishPassword())
                .isEqualTo(" pa ss\tw0rd ");
        Files.writeString(file, "crlf\r\n", StandardCharsets.UTF_8);
        assertThat(OperatorConfig.parse("--runner-redfish-password-file=" + file).network().redfishPassword())
                .isEqualTo("crlf");
        Files.writeString(file, "two\n\n", StandardCharsets.UTF_8);
        assertThat(OperatorConfig.parse("--runner-redfish-password-file=" + file).network().redfishPassword())
                .isEqualTo("two\n");
        Files.writeString(file, "Jos\u00e9", StandardCharsets.UTF_8);
        assertThat(OperatorConfig.parse("--runner-redfish-password-file", file.toString()).network().redfishPassword())
                .isEqualTo("Jos\u00e9");
    }

    @Test
    void theEnvironmentVariableIsReadOnlyWhenGiven() {
        Map<String, String> env = Map.of(OperatorConfig.REDFISH_PASSWORD_ENV, "from-a-secret");
        assertThat(OperatorConfig.parse(env).network().redfishPassword()).isEqualTo("from-a-secret");
        assertThat(OperatorConfig.parse().network().redfishPassword()).isEmpty();
        assertThat(OperatorConfig.parse(Map.of(OperatorConfig.REDFISH_PASSWORD_ENV, "")).network().redfishPassword()).isEmpty();
        assertThat(OperatorConfig.parse("--runner-redfish-password=flag").network().redfishPassword()).isEqualTo("flag");
    }

    @Test
    void morethanOneWayIsRefusedWithoutShowingAnyOfThem() throws Exception {
        Path file = dir.resolve("password");
        Files.writeString(file, "file-secret");
        Map<String, String> env = Map.of(OperatorConfig.REDFISH_PASSWORD_ENV, "env-secret");
        for (Runnable r : new Runnable[] {
            () -> OperatorConfig.parse(env, "--runner-redfish-password=flag-secret"),
            () -> OperatorConfig.parse(env, "--runner-redfish-password-file=" + file),
            () -> OperatorConfig.parse("--runner-redfish-password=flag-secret", "--runner-redfish-password-file=" + file)}) {
            assertThatThrownBy(r::run).isInstanceOf(ConfigException.class)
                    .hasMessageContaining("more than one way")
                    .hasMessageNotContaining("flag-secret").hasMessageNotContaining("env-secret")
                    .hasMessageNotContaining("file-secret");
        }
    }

    @Test
    void anUnreadableFileIsAStartupErrorNamingTheFlag() throws Exception {
        assertThatThrownBy(() -> OperatorConfig.parse("--runner-redfish-password-file=" + dir.resolve("missing")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("--runner-redfish-password-file")
                .hasMessageContaining("cannot read it");
        Path binary = dir.resolve("binary");
        Files.write(binary, new byte[] {(byte) 0xff, (byte) 0xfe, 'x'});
        assertThatThrownBy(() -> OperatorConfig.parse("--runner-redfish-password-file=" + binary))
                .isInstanceOf(ConfigException.class).hasMessageContaining("--runner-redfish-password-file");
    }

    @Test
    void thePasswordNeverShowsInTheConfigurationsText() {
        OperatorConfig c = OperatorConfig.parse(Map.of(OperatorConfig.REDFISH_PASSWORD_ENV, "hunter2-secret"));
        assertThat(c.toString()).doesNotContain("hunter2-secret");
    }
}
