package io.unboundedcloud.playpen.kube;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/** Counts the Kubernetes API calls the operator makes, by call (exported as a metric). */
public final class ApiCallCounter {
    private final Map<KubeApiCall, LongAdder> counts = new EnumMap<>(KubeApiCall.class);

    public ApiCallCounter() {
        for (KubeApiCall c : KubeApiCall.values()) {
            counts.put(c, new LongAdder());
        }
    }

    public void count(KubeApiCall call) {
        counts.get(call).increment();
    }

    public long get(KubeApiCall call) {
        return counts.get(call).sum();
    }
}
