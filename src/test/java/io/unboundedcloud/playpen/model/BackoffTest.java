package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import org.junit.jupiter.api.Test;

/** The one doubling pause the pools' back-off, refused creates and a TTL delete's retries share. */
class BackoffTest {

    @Test
    void noFailureNoPause() {
        assertThat(new Backoff(Duration.ofSeconds(1), Duration.ofSeconds(30)).after(0)).isZero();
    }

    @Test
    void thePauseDoublesPerFailureUpToTheCap() {
        Backoff b = new Backoff(Duration.ofSeconds(10), Duration.ofSeconds(60));
        assertThat(b.after(1)).isEqualTo(Duration.ofSeconds(10));
        assertThat(b.after(2)).isEqualTo(Duration.ofSeconds(20));
        assertThat(b.after(3)).isEqualTo(Duration.ofSeconds(40));
        assertThat(b.after(4)).isEqualTo(Duration.ofSeconds(60));
        assertThat(b.after(Integer.MAX_VALUE)).isEqualTo(Duration.ofSeconds(60));
    }

    @Test
    void aCapBelowTheFirstPauseCapsItToo() {
        assertThat(new Backoff(Duration.ofSeconds(1), Duration.ofMillis(500)).after(1)).isEqualTo(Duration.ofMillis(500));
    }
}
