package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.ref.WeakReference;

import org.junit.jupiter.api.Test;

import io.netty.channel.embedded.EmbeddedChannel;

/** A watch's stream on its connection: what an ended stream leaves behind on a connection kept alive. */
class WatchStreamTest {
    @Test
    void anEndedStreamIsNotKeptByItsStillOpenConnection() throws Exception {
        WatchStream.Registry registry = new WatchStream.Registry(4, 4, 1);
        EmbeddedChannel connection = new EmbeddedChannel();
        WeakReference<WatchStream> gone = startAndEnd(registry, connection);

        for (int i = 0; i < 200 && gone.get() != null; i++) {
            System.gc();
            Thread.sleep(10);
        }
        assertThat(connection.isOpen()).as("the connection is kept alive for the next request").isTrue();
        assertThat(gone.get()).as("the ended stream is no longer held by its connection").isNull();
        assertThat(registry.openCount()).isZero();
        connection.finishAndReleaseAll();
    }

    private static WeakReference<WatchStream> startAndEnd(WatchStream.Registry registry, EmbeddedChannel connection) {
        WatchStream s = registry.open("alice", 60_000);
        s.start(connection, false);
        s.end(null);
        connection.runPendingTasks();
        return new WeakReference<>(s);
    }
}
