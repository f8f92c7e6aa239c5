package io.unboundedcloud.playpen.model;

import io.fabric8.kubernetes.api.model.PodList;

/**
 * A page of the pod cache's LIST, which the operator's client reads straight into slim pods ({@link SlimPodJson}),
 * as it reads the pod watch's events. Its own type so that only the cache's LIST is read this way: the pods a
 * request lists are decoded whole. A client without that reader decodes it as any pod list.
 */
public class SlimPodList extends PodList {
}
