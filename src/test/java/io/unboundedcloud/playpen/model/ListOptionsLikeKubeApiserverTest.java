package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * The allocs and pools list options read as kube-apiserver reads them: {@code watch} is a watch for any value but
 * {@code 0} or {@code false} (in any case), so a client asking for one with another spelling gets the 405 that says
 * to list again instead of a list where it waits for events.
 */
class ListOptionsLikeKubeApiserverTest {

    @Test
    void everySpellingOfWatchThatKubeApiserverReadsAsTrueIsAWatch() {
        for (String watch : List.of("watch=true", "watch=1", "watch=True", "watch=TRUE", "watch=t", "watch=yes",
                "watch", "watch=")) {
            assertThatThrownBy(() -> AllocViews.parseQuery(null, watch, null)).as(watch)
                    .isInstanceOf(UnsupportedOperationException.class).hasMessage(AllocViews.WATCH_UNSUPPORTED);
            assertThatThrownBy(() -> PoolViews.parseQuery(null, watch, null)).as(watch)
                    .isInstanceOf(UnsupportedOperationException.class).hasMessage(PoolViews.WATCH_UNSUPPORTED);
        }
        for (String list : List.of("", "watch=false", "watch=False", "watch=FALSE", "watch=0")) {
            assertThat(AllocViews.parseQuery(null, list, null).name()).as(list).isNull();
            assertThat(PoolViews.parseQuery(null, list, null).name()).as(list).isNull();
        }
    }
}
