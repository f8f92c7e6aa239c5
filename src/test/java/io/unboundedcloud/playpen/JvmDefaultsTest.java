package io.unboundedcloud.playpen;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Properties;

import org.junit.jupiter.api.Test;

class JvmDefaultsTest {

    @Test
    void nettyChunksDefaultToOneMebibyte() {
        Properties props = new Properties();
        JvmDefaults.apply(props);
        assertThat(props.getProperty("io.netty.allocator.maxOrder")).isEqualTo("7");
    }

    @Test
    void theJdkHttpServerGivesARequestFiveSecondsToArrive() {
        Properties props = new Properties();
        JvmDefaults.apply(props);
        assertThat(props.getProperty("sun.net.httpserver.maxReqTime")).isEqualTo("5");
    }

    @Test
    void theJdkHttpServerKeepsAtMost256Connections() {
        Properties props = new Properties();
        JvmDefaults.apply(props);
        assertThat(props.getProperty("jdk.httpserver.maxConnections")).isEqualTo("256");
    }

    @Test
    void aValueGivenOnTheCommandLineWins() {
        Properties props = new Properties();
        props.setProperty("io.netty.allocator.maxOrder", "9");
        JvmDefaults.apply(props);
        assertThat(props.getProperty("io.netty.allocator.maxOrder")).isEqualTo("9");
    }
}
