package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;

import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.api.ApiException;

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
            assertThat(AllocViews.parseQuery(null, watch, null).watch()).as(watch).isNotNull();
            assertThatThrownBy(() -> PoolViews.parseQuery(null, watch, null)).as(watch)
                    .isInstanceOf(UnsupportedOperationException.class).hasMessage(PoolViews.WATCH_UNSUPPORTED);
        }
        for (String list : List.of("", "watch=false", "watch=False", "watch=FALSE", "watch=0")) {
            assertThat(AllocViews.parseQuery(null, list, null).watch()).as(list).isNull();
            assertThat(PoolViews.parseQuery(null, list, null).name()).as(list).isNull();
        }
    }

    /**
     * sendInitialEvents belongs to a watch: on a list, with any value, it is kube-apiserver's 422 Invalid (after the
     * resourceVersionMatch errors when there are some); a get of one object ignores it, as it ignores list options.
     */
    @Test
    void sendInitialEventsOnAListIsInvalidAsInKubeApiserver() {
        for (String query : List.of("sendInitialEvents=true", "sendInitialEvents=false", "sendInitialEvents=")) {
            for (Runnable read : List.<Runnable>of(() -> AllocViews.parseQuery(null, query, null),
                    () -> PoolViews.parseQuery(null, query, null))) {
                assertThatThrownBy(read::run).as(query).isInstanceOfSatisfying(ApiException.class, e -> {
                    assertThat(e.code()).isEqualTo(422);
                    assertThat(e.reason()).isEqualTo("Invalid");
                    assertThat(e.getMessage()).isEqualTo("ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: "
                            + "Forbidden: sendInitialEvents is forbidden for list");
                });
            }
        }
        assertThatThrownBy(() -> AllocViews.parseQuery(null, "resourceVersionMatch=Exact&sendInitialEvents=true",
                null)).isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.getMessage()).isEqualTo(
                        "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch "
                                + "is forbidden unless resourceVersion is provided, sendInitialEvents: Forbidden: "
                                + "sendInitialEvents is forbidden for list]"));
        assertThat(AllocViews.parseQuery("0123456789abcdef", "sendInitialEvents=true", null).name())
                .isEqualTo("0123456789abcdef");
        assertThat(PoolViews.parseQuery("runner-amd64", "sendInitialEvents=true", null).name())
                .isEqualTo("runner-amd64");
        // a watch stays the 405 that says to list again instead
        assertThatThrownBy(() -> PoolViews.parseQuery(null, "watch=true&sendInitialEvents=true", null))
                .isInstanceOf(UnsupportedOperationException.class);
    }
}
