package io.unboundedcloud.playpen.camel;

import io.unboundedcloud.playpen.auth.TrustBundleParser;
import io.unboundedcloud.playpen.kube.KubeApiCall;
import io.unboundedcloud.playpen.kube.ServingCertificateReload;
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

    /**
     * Why kube-apiserver could not verify the certificate this replica serves (the Secret {@code secret}), or null
     * when it could (or nobody verifies it: no APIService).
     */
    static String servedCertificate(ServingCertificateReload.Trust trust, String secret) {
        return switch (trust) {
            case TRUSTED, NO_API_SERVICE -> null;
            case NOT_TRUSTED -> "not ready: the caBundle of APIService " + KubeApiCall.API_SERVICE_NAME + " does not"
                    + " trust the serving certificate this replica serves (from the Secret " + secret + "), so"
                    + " kube-apiserver could not verify it; the leader publishes it there within"
                    + " --serving-cert-check-interval of reading the Secret, and this replica is ready once it reads it"
                    + " there; if this lasts, look for \"cannot publish the APIService caBundle\" in the leader's log (its"
                    + " service account needs get and patch on the APIService), or, where you write the caBundle"
                    + " yourself, put this certificate or its CA in it";
            case NOT_READ -> "not ready: cannot read APIService " + KubeApiCall.API_SERVICE_NAME + " to check that"
                    + " its caBundle trusts the serving certificate this replica serves (it is read again every"
                    + " --serving-cert-check-interval); check that the API server is reachable from this pod and that"
                    + " the operator's service account may get the APIService (the operator's log says what failed)";
        };
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
