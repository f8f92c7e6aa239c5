package io.unboundedcloud.playpen.tls;

import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;

/**
 * When the self-signed serving certificate is renewed and how replicas switch to a new one
 * ({@code --serving-cert-validity}, {@code --serving-cert-renew-fraction}, {@code --serving-cert-check-interval},
 * {@code --serving-cert-publish-grace}).
 */
public record CertificateRenewal(Duration validity, double renewFraction, Duration checkInterval, Duration publishGrace) {

    /** The defaults: one year, renewed after two thirds, checked every 10 s, served 5 s after the caBundle trusts it. */
    public static final CertificateRenewal DEFAULT = new CertificateRenewal(Duration.ofDays(365), 0.667,
            Duration.ofSeconds(10), Duration.ofSeconds(5));

    /** The instant from which {@code certificate} is due for renewal: notBefore + fraction x lifetime. */
    public Instant renewAt(X509Certificate certificate) {
        Instant notBefore = certificate.getNotBefore().toInstant();
        Instant notAfter = certificate.getNotAfter().toInstant();
        long lifetimeMillis = Duration.between(notBefore, notAfter).toMillis();
        return notBefore.plusMillis((long) (lifetimeMillis * renewFraction));
    }
}
