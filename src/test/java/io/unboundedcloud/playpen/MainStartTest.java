package io.unboundedcloud.playpen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

/** How the process starts the operator: a start that fails stops what it had started before it exits. */
class MainStartTest {
    @Test
    void aStartThatFailsClosesWhatItStartedSoTheLeaseIsReleased() {
        List<String> done = new ArrayList<>();
        assertThatThrownBy(() -> Main.startOrClose(() -> done.add("closed"), () -> {
            done.add("Lease elector started");
            throw new java.net.BindException("Address already in use");
        })).isInstanceOf(java.net.BindException.class).hasMessage("Address already in use");
        assertThat(done).containsExactly("Lease elector started", "closed");
    }

    @Test
    void aStartThatSucceedsLeavesItRunning() throws Exception {
        List<String> done = new ArrayList<>();
        AutoCloseable running = () -> done.add("closed");
        assertThat(Main.startOrClose(running, () -> done.add("started"))).isSameAs(running);
        assertThat(done).containsExactly("started");
    }
}
