package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/** Each leadership signal reaches the background work that acts on it, and nothing else. */
class LeadershipWorkTest {
    final List<String> told = new CopyOnWriteArrayList<>();
    final CompletableFuture<Thread> caBundle = new CompletableFuture<>();
    final LeadershipWork work = new LeadershipWork(
            new LeadershipWork.Expiries(() -> told.add("ttl.scheduleAll"), () -> told.add("ttl.onLeadingAgain")),
            new LeadershipWork.Pools(() -> told.add("pool.onLeadership"), () -> told.add("pool.onLeadershipLost"),
                    () -> told.add("pool.onLeadingAgain")),
            () -> caBundle.complete(Thread.currentThread()));

    @Test
    void aNewLeaderSchedulesTheExpiriesRunsAPoolPassAndPublishesTheCaBundleOffTheElectionsThread() throws Exception {
        work.leadershipChanged(true);

        assertThat(told).containsExactly("ttl.scheduleAll", "pool.onLeadership");
        assertThat(caBundle.get(60, TimeUnit.SECONDS)).as("the thread that published the caBundle")
                .isNotSameAs(Thread.currentThread());
    }

    @Test
    void aLeaderThatStopsLeadingEndsThePoolsTerm() {
        work.leadershipChanged(false);

        assertThat(told).containsExactly("pool.onLeadershipLost");
    }

    @Test
    void aLeaderThatCountsAsLeadingAgainRunsTheExpiriesAndThePoolPassItDropped() {
        work.onLeadingAgain();

        assertThat(told).containsExactly("ttl.onLeadingAgain", "pool.onLeadingAgain");
    }
}
