package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;

/**
 * A read of one allocation or pool by name answers that object whatever list options the query carries, as
 * kube-apiserver's get of one object reads none of them (limit, continue, fieldSelector, labelSelector): they
 * neither hide it nor make the read a 400.
 */
class NamedReadIgnoresListOptionsTest {
    private static final String LIST_OPTIONS = "limit=abc&continue=zz&fieldSelector=metadata.name!%3DNAME"
            + "&labelSelector=team%3Dblue";

    @Test
    void anAllocationReadByNameIgnoresTheListOptions() {
        Pod pod = AllocViewsTest.claimed("p1", "alice", null);
        String id = Hashes.allocationId("playpen", "p1");
        AllocViews.Query q = AllocViews.parseQuery(id, LIST_OPTIONS.replace("NAME", id), null);
        assertThat(AllocViews.selectMatching(List.of(pod), AllocViewsTest.IP, AllocViewsTest.NO_TTL, null, q).items())
                .extracting(AllocViews.Alloc::name).containsExactly(id);
    }

    @Test
    void aPoolReadByNameIgnoresTheListOptions() {
        PoolStatus pool = new PoolStatus(PoolTarget.runner("amd64"), true, 1, 1, 1, 1, 1, 0, 0, 0, 0, Map.of(),
                Map.of(), "h1", "runner:1", PoolBackoff.View.NONE, false, null, 0, null, 0, 0);
        PoolViews.Query q = PoolViews.parseQuery("runner-amd64", LIST_OPTIONS.replace("NAME", "runner-amd64"), null);
        assertThat(PoolViews.select(List.of(pool), q)).extracting(PoolStatus::name).containsExactly("runner-amd64");
    }
}
