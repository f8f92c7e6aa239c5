package io.unboundedcloud.playpen.kube;

import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.unboundedcloud.playpen.tls.ServingTls;

/**
 * Picks up a new serving certificate without a restart (every replica, on the serving-cert-reload route): re-reads
 * the Secret and, when it holds another certificate, serves it from the next handshake on, but only once the
 * APIService caBundle has trusted it for {@code --serving-cert-publish-grace}, so the aggregator never meets a
 * certificate it cannot verify. Two exceptions: without an APIService nobody verifies us (switch at once), and a
 * certificate that has expired is worse than an unpublished one (switch at once, with a warning).
 * <p>
 * It also tells whether the caBundle trusts the certificate served now ({@link #servedTrust}): a replica that starts
 * serves the Secret's certificate at once, which the caBundle may not trust yet (the Secret was replaced and the
 * leader has not published since), and is not ready until it does. The APIService is read for that at start and on
 * every check until the caBundle trusts it (without an APIService, on every check: one may be created later); from
 * then on only when the Secret holds another certificate (a leader keeps every certificate the caBundle holds until
 * it expires). The leader's own publish tells it too.
 */
public final class ServingCertificateReload {
    private static final Logger LOG = LoggerFactory.getLogger(ServingCertificateReload.class);

    private final ServingCertificate source;
    private final ServingTls tls;
    private final String apiServiceName;
    private final Clock clock;
    private final Duration grace;
    /** The pending certificate and when this replica first saw the caBundle trust it (null: not yet). */
    private X509Certificate pending;
    private Instant trustedSince;
    private volatile Instant lastSwitch;
    private volatile Trust servedTrust = Trust.NOT_READ;

    /** Whether kube-apiserver can verify the certificate served now, as this replica last read the APIService. */
    public enum Trust {
        /** The APIService could not be read yet. */
        NOT_READ,
        /** The APIService exists and its caBundle trusts neither the certificate nor a certificate of its chain. */
        NOT_TRUSTED,
        /** The caBundle trusts it. */
        TRUSTED,
        /** No APIService: nobody verifies it. */
        NO_API_SERVICE
    }

    public ServingCertificateReload(ServingCertificate source, ServingTls tls, String apiServiceName, Clock clock,
            Duration grace) {
        this.source = source;
        this.tls = tls;
        this.apiServiceName = apiServiceName;
        this.clock = clock;
        this.grace = grace;
    }

    /** What one check did. */
    public enum Outcome { UNCHANGED, NO_SECRET, READ_FAILED, WAITING_FOR_CA_BUNDLE, SWITCHED, INVALID }

    /** One pass; the route calls it every {@code --serving-cert-check-interval}. */
    public synchronized Outcome check() {
        ServingCertificate.Material m;
        try {
            m = source.read();
        } catch (RuntimeException e) {
            // the API server failing now and then is normal: keep serving, the next pass reads again
            LOG.warn("cannot read the serving certificate secret; keeping the one served: {}", e.toString());
            return Outcome.READ_FAILED;
        }
        if (m == null) {
            return Outcome.NO_SECRET;
        }
        X509Certificate next;
        try {
            next = m.leaf();
        } catch (RuntimeException e) {
            LOG.warn("serving certificate secret holds no usable certificate; keeping the one served: {}", e.getMessage());
            return Outcome.INVALID;
        }
        if (next.equals(tls.certificate())) {
            pending = null;
            trustedSince = null;
            checkServedTrust();
            return Outcome.UNCHANGED;
        }
        if (!next.equals(pending)) {
            pending = next;
            trustedSince = null;
            LOG.info("serving certificate secret holds a new certificate (notAfter={}); serving it once the caBundle "
                    + "trusts it", next.getNotAfter().toInstant());
        }
        Instant now = clock.instant();
        boolean servedExpired = !tls.certificate().getNotAfter().toInstant().isAfter(now);
        ServingCertificate.Bundle bundle = readCaBundle();
        judge(bundle);
        boolean ready;
        if (bundle instanceof ServingCertificate.NoApiService) {
            ready = true;
        } else if (bundle instanceof ServingCertificate.Published p
                && p.trusts(io.unboundedcloud.playpen.tls.Pki.parseCertificates(m.certificatePem()))) {
            if (trustedSince == null) {
                trustedSince = now;
            }
            ready = !now.isBefore(trustedSince.plus(grace));
        } else {
            trustedSince = null;
            ready = false;
        }
        if (!ready && !servedExpired) {
            return Outcome.WAITING_FOR_CA_BUNDLE;
        }
        if (!ready) {
            LOG.warn("the served certificate has expired; serving the new one although the caBundle does not trust it yet");
        }
        try {
            tls.replace(m.certificatePem(), m.privateKeyPem());
        } catch (RuntimeException e) {
            LOG.warn("cannot serve the new certificate; keeping the one served: {}", e.getMessage());
            return Outcome.INVALID;
        }
        pending = null;
        trustedSince = null;
        lastSwitch = now;
        // one verdict for the certificate served now (a probe between two writes would read a passing NOT_READ)
        servedTrust = verdict(bundle, Trust.NOT_READ);
        LOG.info("serving the new certificate from the next handshake on (notAfter={})", next.getNotAfter().toInstant());
        return Outcome.SWITCHED;
    }

    /**
     * Reads the APIService to tell whether its caBundle trusts the certificate served now, unless it is known to
     * (at start: the route's first check comes an interval later).
     */
    public synchronized Trust checkServedTrust() {
        if (servedTrust != Trust.TRUSTED) {
            judge(readCaBundle());
        }
        return servedTrust;
    }

    /** What the APIService holds, as this replica just read or wrote it (the leader's publish); null: not known. */
    public synchronized void observed(ServingCertificate.Bundle bundle) {
        judge(bundle);
    }

    /** Whether the caBundle trusts the certificate served now, as last read; see {@link Trust}. */
    public Trust servedTrust() {
        return servedTrust;
    }

    private ServingCertificate.Bundle readCaBundle() {
        try {
            return source.readCaBundle(apiServiceName);
        } catch (RuntimeException e) {
            LOG.warn("cannot read APIService {} to check its caBundle: {}", apiServiceName, e.toString());
            return null;
        }
    }

    /** Judges the certificate served now by {@code bundle}; a bundle not known (null) leaves the last verdict. */
    private void judge(ServingCertificate.Bundle bundle) {
        servedTrust = verdict(bundle, servedTrust);
    }

    /** The verdict on the certificate served now by {@code bundle}; {@code unknown} when the bundle is not known. */
    private Trust verdict(ServingCertificate.Bundle bundle, Trust unknown) {
        if (bundle instanceof ServingCertificate.NoApiService) {
            return Trust.NO_API_SERVICE;
        }
        if (bundle instanceof ServingCertificate.Published p) {
            return p.trusts(tls.chain()) ? Trust.TRUSTED : Trust.NOT_TRUSTED;
        }
        return unknown;
    }

    /** When this replica last switched certificates (null: never). */
    public Instant lastSwitch() {
        return lastSwitch;
    }
}
