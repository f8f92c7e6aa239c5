package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.kube.NodeCache;
import io.unboundedcloud.playpen.kube.PodCache;
import io.unboundedcloud.playpen.model.AllocViews;

/**
 * Before the pod and node caches have synced, a list, get or delete of allocations is a 503 with Retry-After (the
 * answer would miss allocations, or a delete would miss pods of the key), never an answer from a partial view.
 */
class AllocsApiUnsyncedTest {
    @Test
    void aReadBeforeTheCachesSyncedIsA503WithRetryAfter() {
        AllocsApi api = new AllocsApi(null, new PodCache(null, "playpen", p -> null), new NodeCache(null), null, null, 3,
                null, null, null);
        for (String name : new String[] {null, "0123456789abcdef"}) {
            AllocsApi.Read read = new AllocsApi.Read(AllocViews.parseQuery(name, null, null), null, null);
            ApiException e = catchThrowableOfType(ApiException.class, () -> api.select(read));
            assertThat(e).as(String.valueOf(name)).isNotNull();
            assertThat(e.code()).isEqualTo(503);
            assertThat(e.getMessage()).isEqualTo("the operator's pod and node caches are not synced yet; nothing was"
                    + " done, try again");
            assertThat(e.headers()).containsEntry("Retry-After", "3");
        }
    }
}
