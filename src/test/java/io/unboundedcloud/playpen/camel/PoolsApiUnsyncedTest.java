package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.time.Clock;

import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.kube.PodCache;
import io.unboundedcloud.playpen.kube.PoolStatuses;
import io.unboundedcloud.playpen.model.PoolViews;

/**
 * Before the pod cache has synced, a list or get of pools is a 503 with Retry-After whose message says what to do,
 * as the allocs resource's does, never an answer from a partial view.
 */
class PoolsApiUnsyncedTest {
    @Test
    void aReadBeforeThePodCacheSyncedIsA503ThatSaysToTryAgain() {
        PoolStatuses cold = new PoolStatuses(new PodCache(null, "playpen", p -> null), null, Clock.systemUTC());
        PoolsApi api = new PoolsApi(null, cold, Clock.systemUTC(), 3, "1");
        for (String name : new String[] {null, "runner-amd64"}) {
            PoolViews.Query query = PoolViews.parseQuery(name, null, null);
            ApiException e = catchThrowableOfType(ApiException.class, () -> api.select(query));
            assertThat(e).as(String.valueOf(name)).isNotNull();
            assertThat(e.code()).isEqualTo(503);
            assertThat(e.getMessage()).isEqualTo("the operator's pod cache is not synced yet; nothing was read,"
                    + " try again");
            assertThat(e.headers()).containsEntry("Retry-After", "3");
        }
    }
}
