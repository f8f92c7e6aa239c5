package io.unboundedcloud.playpen.camel;

import io.unboundedcloud.playpen.auth.TrustBundleParser;
import io.unboundedcloud.playpen.kube.KubeApiCall;
import io.unboundedcloud.playpen.kube.TrustBundleSource;
import io.unboundedcloud.playpen.kube.WatchContinuity;

/**
 * Why a replica is not ready, as {@code /readyz} (on both listeners) and the {@code playpen-ready} health check
 * say it: what is missing, what the operator does about it, and what to check. Never the trust bundle's content:
 * only why it cannot be used.
 */
final class Readiness {
    static final String CACHES_NOT_SYNCED = "not ready: the pod and node caches are not synced yet (the operator is"
            + " still listing pods and nodes from the API server, and keeps trying); if this lasts, check that the API"
            + " server is reachable from this pod and that the operator's service account may list and watch pods and"
            + " nodes (the operator's log says what failed)";
    static final String WATCHES_DOWN = "not ready: the watches on pods and nodes have been down for more than "
            + WatchContinuity.GRACE.toSeconds() + " s, so the caches may be out of date (the API server is unreachable"
            + " or keeps ending them; the operator keeps reopening them); check that the API server is reachable from"
            + " this pod (the operator's log says what failed)";

    private Readiness() {
    }

    /** {@code why}: why the loaded bundle vouches for no one (its parse error, or that no CA is valid now). */
    static String noTrustBundle(String why) {
        return "not ready: no usable front-proxy trust bundle (" + why + "), so every API request would be refused;"
                + " it is read from the ConfigMap " + TrustBundleSource.NAMESPACE + "/" + KubeApiCall.TRUST_CONFIGMAP_NAME
                + " (key " + TrustBundleParser.CA_KEY + "), which kube-apiserver writes when it runs with"
                + " --requestheader-client-ca-file: check that the ConfigMap exists, that the operator's service account"
                + " may get and watch it, and that it holds a CA valid now; the operator watches it and is ready once it"
                + " does, without a restart";
    }
}
