package io.unboundedcloud.playpen.auth;

import java.nio.ByteBuffer;
import java.security.cert.CertPathValidator;
import java.security.cert.CertPathValidatorException;
import java.security.cert.CertificateEncodingException;
import java.security.cert.CertificateFactory;
import java.security.cert.CertificateParsingException;
import java.security.cert.PKIXCertPathValidatorResult;
import java.security.cert.PKIXParameters;
import java.security.cert.TrustAnchor;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Date;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import javax.security.auth.x500.X500Principal;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.model.Hashes;

/**
 * Authenticates kube-apiserver's proxied requests (failures are 403 "forbidden" like the reference): the
 * presented leaf must chain to a CA of the live front-proxy CA bundle that is valid now (an expired CA vouches for no
 * one, as in kube-apiserver), carry clientAuth (as must every CA of its chain that lists extended key usages), be
 * valid now and have an allowed CN. Results are cached per chain (a refused one by its digest) and bundle
 * generation for a few seconds, since kube-apiserver reuses one client certificate (and chain).
 */
public final class FrontProxyAuthenticator {
    private static final String CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";
    private static final String ANY_USAGE = "2.5.29.37.0";
    private static final long CACHE_NANOS = 10_000_000_000L;

    /**
     * A verdict for one chain: made against bundle {@code generation}, reused until {@code untilNanos} of the monotonic
     * clock, and, when it let the chain in, no later than {@code notAfter}, the earliest end of validity of the CAs it
     * rests on (the presented intermediates and the trusted CA). A refusal is logged once, by the first request it
     * refuses ({@code logged}).
     */
    private record Verdict(long generation, String failure, long untilNanos, Date notAfter,
            java.util.concurrent.atomic.AtomicBoolean logged) {
        boolean outlivedBy(Date now) {
            return notAfter != null && now.after(notAfter);
        }
    }

    /** What {@link #check} found: the failure (null: trusted) and, when trusted, the earliest CA notAfter. */
    private record Checked(String failure, Date notAfter) {
        static Checked refused(String failure) {
            return new Checked(failure, null);
        }
    }

    static final String CA_NOT_VALID = "client certificate's front-proxy CA is expired or not yet valid";

    /** The reference's answers (403, like kube-apiserver's "forbidden"); the reason only goes to the log. */
    public static final String FORBIDDEN = "forbidden";
    public static final String MISSING_USER = "missing remote user";
    private static final Logger LOG = LoggerFactory.getLogger(FrontProxyAuthenticator.class);

    private final Supplier<TrustBundle> bundle;
    private final Clock clock;
    /**
     * Verdicts that trusted a chain, keyed by the whole chain as presented (the intermediates decide the verdict as
     * much as the leaf does). Only a client holding the private key of a certificate the bundle trusts can present
     * such a chain, so what these keys keep in memory is kube-apiserver's own certificates; looking one up costs a
     * hash and a comparison of certificates already parsed, on every request of a kept-alive connection.
     */
    private final Map<List<X509Certificate>, Verdict> trusted = new ConcurrentHashMap<>();
    /**
     * Verdicts that refused a chain, keyed by its digest and not by the certificates: a client without a trusted
     * certificate may present a new chain of tens of kilobytes on every handshake, and the verdicts kept must not keep
     * those chains in memory. Only chains not found among the trusted ones pay for the digest (about 30 us for 4 KiB
     * under the image's C1 compiler), which a refused client's requests pay instead of a path validation.
     */
    private final Map<ChainDigest, Verdict> refused = new ConcurrentHashMap<>();

    /** The SHA-256 of a chain: each certificate's DER encoding, after its length, leaf first. */
    private record ChainDigest(long a, long b, long c, long d) {
        static ChainDigest of(X509Certificate[] chain) throws CertificateEncodingException {
            byte[][] ders = new byte[chain.length][];
            for (int i = 0; i < chain.length; i++) {
                ders[i] = chain[i].getEncoded();
            }
            ByteBuffer d = ByteBuffer.wrap(Hashes.sha256LengthPrefixed(ders));
            return new ChainDigest(d.getLong(), d.getLong(), d.getLong(), d.getLong());
        }
    }

    private final LongSupplier nanoTime;
    /** Guards the refusal log's state: whether a line was written, the monotonic time of the last, refusals since. */
    private final Object refusalLog = new Object();
    private boolean refusalLogged;
    private long lastRefusalLine;
    private long refusalsLeftOut;
    /** Refusals were left out of the log and their count is not written yet (read without the lock). */
    private volatile boolean refusalsPending;
    private static final long LOG_INTERVAL_NANOS = 10_000_000_000L;

    public FrontProxyAuthenticator(Supplier<TrustBundle> bundle, Clock clock) {
        this(bundle, clock, System::nanoTime);
    }

    /** {@code nanoTime} times the verdicts' cache period (tests step it). */
    FrontProxyAuthenticator(Supplier<TrustBundle> bundle, Clock clock, LongSupplier nanoTime) {
        this.bundle = bundle;
        this.clock = clock;
        this.nanoTime = nanoTime;
    }

    /**
     * Verifies the TLS peer chain (leaf first) and returns the trust bundle it was verified against; throws a 403
     * ApiException ("forbidden") when it is not trusted.
     */
    public TrustBundle verifyPeer(X509Certificate[] chain) {
        try {
            return verify(chain, true);
        } finally {
            // any verdict writes the count of refusals left out once their ten seconds have passed
            logRefusalsLeftOut();
        }
    }

    /**
     * Whether the trust bundle trusts the TLS peer chain now, as {@link #verifyPeer} decides it, for what a
     * connection may cost: nothing is refused by asking (a client without a trusted certificate may still call the
     * probes), so an untrusted chain writes no refusal line; the first request refused for it writes it.
     */
    public boolean trusts(X509Certificate[] chain) {
        try {
            verify(chain, false);
            return true;
        } catch (Refused e) {
            return false;
        } finally {
            logRefusalsLeftOut();
        }
    }

    private TrustBundle verify(X509Certificate[] chain, boolean refusing) {
        if (chain == null || chain.length == 0) {
            throw refused("no client certificate", refusing);
        }
        TrustBundle tb = bundle.get();
        if (!tb.valid()) {
            throw refused("front-proxy trust bundle is not usable: "
                    + (tb.invalidReason() == null ? "empty" : tb.invalidReason()), refusing);
        }
        X509Certificate leaf = chain[0];
        // Validity is checked on every request against the injected clock: a cached verdict must not let a
        // certificate through after its notAfter. The cache only spares the path validation.
        String invalid = validityFailure(leaf);
        if (invalid != null) {
            throw refused(invalid, refusing);
        }
        long now = nanoTime.getAsLong();
        List<X509Certificate> presented = List.of(chain);
        Verdict v = trusted.get(presented);
        ChainDigest digest = null;
        if (v == null) {
            digest = digestOrRefuse(chain, refusing);
            v = refused.get(digest);
        }
        if (v == null || v.generation() != tb.generation() || now - v.untilNanos() > 0
                || v.outlivedBy(Date.from(clock.instant()))) {
            Checked checked = check(chain, tb);
            v = new Verdict(tb.generation(), checked.failure(), now + CACHE_NANOS, checked.notAfter(),
                    new java.util.concurrent.atomic.AtomicBoolean());
            if (v.failure() == null) {
                keep(trusted, presented, v);
            } else {
                // a chain trusted before and refused now (its CA left the bundle) is dropped from the trusted ones
                trusted.remove(presented);
                keep(refused, digest == null ? digestOrRefuse(chain, refusing) : digest, v);
            }
        }
        if (v.failure() != null) {
            if (refusing && v.logged().compareAndSet(false, true)) {
                // the wire only says "forbidden"
                logRefusal(leaf, v.failure(), now);
            }
            throw refused(v.failure(), refusing);
        }
        return tb;
    }

    /** Keeps {@code v} under {@code key}, forgetting every verdict of {@code verdicts} past 1,024 of them. */
    private static <K> void keep(Map<K, Verdict> verdicts, K key, Verdict v) {
        if (verdicts.size() > 1024) {
            verdicts.clear();
        }
        verdicts.put(key, v);
    }

    private ChainDigest digestOrRefuse(X509Certificate[] chain, boolean refusing) {
        try {
            return ChainDigest.of(chain);
        } catch (CertificateEncodingException e) {
            throw refused("client certificate could not be read", refusing);
        }
    }

    /**
     * At most one INFO line per {@link #LOG_INTERVAL_NANOS} of the monotonic clock for all refused certificates
     * together (a client can present a new self-signed certificate on every handshake): the first refusal is
     * written at once, and the next line written says how many were left out since the one before (that line is
     * written by {@link #logRefusalsLeftOut} when no refusal comes to write it).
     */
    private void logRefusal(X509Certificate leaf, String failure, long now) {
        long skipped;
        synchronized (refusalLog) {
            if (refusalLogged && now - lastRefusalLine < LOG_INTERVAL_NANOS) {
                refusalsLeftOut++;
                refusalsPending = true;
                return;
            }
            skipped = refusalsLeftOut;
            refusalLogged = true;
            lastRefusalLine = now;
            refusalsLeftOut = 0;
            refusalsPending = false;
        }
        String cn = loggable(commonName(leaf.getSubjectX500Principal()));
        if (skipped == 0) {
            LOG.info("front-proxy client certificate refused cn={} reason={}", cn, failure);
        } else {
            LOG.info("front-proxy client certificate refused cn={} reason={} ({} more refused certificates not logged"
                    + " since the line before)", cn, failure, skipped);
        }
    }

    /**
     * Writes the count of refusals left out of the log since the last line, once {@link #LOG_INTERVAL_NANOS} have
     * passed since it: called by every verdict and by a periodic check (the trust refresh), so the count reaches the
     * log when refusals stop too.
     */
    public void logRefusalsLeftOut() {
        if (refusalsPending) {
            logRefusalsLeftOut(nanoTime.getAsLong());
        }
    }

    private void logRefusalsLeftOut(long now) {
        long skipped;
        synchronized (refusalLog) {
            if (refusalsLeftOut == 0 || now - lastRefusalLine < LOG_INTERVAL_NANOS) {
                return;
            }
            skipped = refusalsLeftOut;
            refusalsLeftOut = 0;
            refusalsPending = false;
            lastRefusalLine = now;
        }
        LOG.info("{} more front-proxy client certificates refused since the line before, not logged one by one",
                skipped);
    }

    private static Refused refused(String reason, boolean refusing) {
        if (refusing) {
            LOG.debug("front-proxy client refused: {}", reason);
        }
        return new Refused(reason);
    }

    /** A refused front-proxy client: the wire gets the reference's 403 "forbidden"; {@link #why()} is for logs. */
    public static final class Refused extends ApiException {
        private final String why;

        Refused(String why) {
            super(403, "Forbidden", FORBIDDEN);
            this.why = why;
        }

        public String why() {
            return why;
        }
    }

    private Checked check(X509Certificate[] chain, TrustBundle tb) {
        X509Certificate leaf = chain[0];
        Date now = Date.from(clock.instant());
        try {
            List<String> eku = leaf.getExtendedKeyUsage();
            if (eku == null || !eku.contains(CLIENT_AUTH)) {
                return Checked.refused("client certificate lacks the clientAuth extended key usage");
            }
        } catch (CertificateParsingException e) {
            return Checked.refused("client certificate has an unreadable extended key usage");
        }
        Date notAfter;
        try {
            CertificateFactory cf = CertificateFactory.getInstance("X.509");
            List<X509Certificate> path = new ArrayList<>(Arrays.asList(chain));
            // the anchors themselves must not be part of the path
            path.removeIf(c -> tb.cas().contains(c));
            if (path.isEmpty()) {
                return Checked.refused("client certificate is a CA certificate");
            }
            // Go's x509 Verify, as kube-apiserver runs it, holds the trusted CAs to their validity period too (Java's
            // PKIX validator does not look at a trust anchor's dates): only the CAs valid now may vouch
            Set<TrustAnchor> validNow = new HashSet<>();
            for (X509Certificate ca : tb.cas()) {
                if (!now.before(ca.getNotBefore()) && !now.after(ca.getNotAfter())) {
                    validNow.add(new TrustAnchor(ca, null));
                }
            }
            PKIXCertPathValidatorResult result;
            try {
                result = validate(cf.generateCertPath(path), validNow, now);
            } catch (CertPathValidatorException e) {
                // for the log: a chain that only a CA outside its validity would vouch for
                try {
                    validate(cf.generateCertPath(path), tb.anchors(), now);
                    return Checked.refused(CA_NOT_VALID);
                } catch (CertPathValidatorException stillUntrusted) {
                    throw e;
                }
            }
            // Go's x509 Verify for client authentication, as kube-apiserver runs it, also wants every CA of the
            // chain that lists extended key usages to allow clientAuth; Java's PKIX validator does not look
            List<X509Certificate> cas = new ArrayList<>(path.subList(1, path.size()));
            cas.add(result.getTrustAnchor().getTrustedCert());
            for (X509Certificate ca : cas) {
                List<String> usages = ca.getExtendedKeyUsage();
                if (usages != null && !usages.contains(CLIENT_AUTH) && !usages.contains(ANY_USAGE)) {
                    return Checked.refused("client certificate's chain is not for client authentication: a CA in it"
                            + " does not allow clientAuth");
                }
            }
            notAfter = cas.stream().map(X509Certificate::getNotAfter).min(Date::compareTo).orElse(null);
        } catch (CertPathValidatorException e) {
            return Checked.refused("client certificate is not signed by the front-proxy CA");
        } catch (Exception e) {
            return Checked.refused("client certificate could not be verified");
        }
        // the CN as kube-apiserver's allowed-names check reads it (Go: the last CN in encoding order); a subject
        // Go could not parse would fail its TLS handshake, so it fails here too
        String cn;
        try {
            cn = GoCertificateNames.commonName(leaf);
        } catch (GoCertificateNames.Unreadable e) {
            return Checked.refused("client certificate names cannot be read as kube-apiserver reads them: "
                    + e.getMessage());
        }
        if (!tb.allowedNames().isEmpty() && !tb.allowedNames().contains(cn)) {
            return Checked.refused("client certificate CN " + loggable(cn) + " is not an allowed front-proxy name");
        }
        return new Checked(null, notAfter);
    }

    /** PKIX validation of {@code path} against {@code anchors} at {@code now}; no anchor at all fails like no match. */
    private static PKIXCertPathValidatorResult validate(java.security.cert.CertPath path, Set<TrustAnchor> anchors,
            Date now) throws CertPathValidatorException, java.security.GeneralSecurityException {
        if (anchors.isEmpty()) {
            throw new CertPathValidatorException("no trust anchor");
        }
        PKIXParameters params = new PKIXParameters(anchors);
        params.setRevocationEnabled(false);
        params.setDate(now);
        return (PKIXCertPathValidatorResult) CertPathValidator.getInstance("PKIX").validate(path, params);
    }

    /** A certificate-supplied text for a log line (see {@link io.unboundedcloud.playpen.api.LogText}). */
    static String loggable(String s) {
        return io.unboundedcloud.playpen.api.LogText.quote(s);
    }

    private String validityFailure(X509Certificate leaf) {
        try {
            leaf.checkValidity(Date.from(clock.instant()));
            return null;
        } catch (Exception e) {
            return "client certificate is expired or not yet valid";
        }
    }

    /** The first CN of a principal (Java's reading), for log lines only; decisions use {@link GoCertificateNames}. */
    static String commonName(X500Principal principal) {
        try {
            for (javax.naming.ldap.Rdn rdn : new javax.naming.ldap.LdapName(principal.getName()).getRdns()) {
                if (rdn.getType().equalsIgnoreCase("CN")) {
                    return String.valueOf(rdn.getValue());
                }
            }
        } catch (javax.naming.InvalidNameException e) {
            return "";
        }
        return "";
    }
}
