package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/**
 * Pools are listed in one page (a limit is met by answering all of them, with no continue token), so a continue
 * token given to the pools list can only come from another list: it is refused with 400 rather than answered
 * with the whole list again (which a client paging would read as repeated pools), and a bad limit is a 400 as on
 * allocs.
 */
class PoolListPagingTest {

    @Test
    void aContinueTokenFromAnotherListIsRefused() {
        String fromAllocs = AllocViews.encodeContinue("0123456789abcdef");
        assertThatThrownBy(() -> PoolViews.parseQuery(null, "limit=1&continue=" + fromAllocs, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("invalid continue token: pools are listed in one page and never return one; list them "
                        + "again without continue");
        assertThat(PoolViews.parseQuery(null, "limit=1&continue=", null).name()).isNull();
    }

    @Test
    void aBadLimitIsRefusedAsOnAllocs() {
        assertThatThrownBy(() -> PoolViews.parseQuery(null, "limit=ten", null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("invalid value for limit: \"ten\": must be a non-negative 64-bit integer");
        assertThat(PoolViews.parseQuery(null, "limit=500", null).name()).isNull();
    }
}
