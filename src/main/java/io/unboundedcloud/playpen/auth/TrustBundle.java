package io.unboundedcloud.playpen.auth;

import java.security.cert.TrustAnchor;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.util.Date;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The front-proxy trust source from kube-system/extension-apiserver-authentication: CA bundle and allowed CNs, and
 * whether kube-apiserver vouches for {@code X-Remote-Uid} ({@code requestheader-uid-headers} lists it). An invalid
 * bundle carries the reason and rejects every request until it is fixed.
 */
public record TrustBundle(List<X509Certificate> cas, Set<String> allowedNames, String invalidReason, long generation,
        boolean sendsUid) {

    /** A bundle whose kube-apiserver sends no uid header. */
    public TrustBundle(List<X509Certificate> cas, Set<String> allowedNames, String invalidReason, long generation) {
        this(cas, allowedNames, invalidReason, generation, false);
    }

    public static TrustBundle invalid(String reason, long generation) {
        return new TrustBundle(List.of(), Set.of(), reason, generation);
    }

    /** Parsed and usable: CAs and allowed names were read. Whether any CA vouches for anyone now: {@link #validAt}. */
    public boolean valid() {
        return invalidReason == null && !cas.isEmpty();
    }

    /**
     * Valid, and at least one of its CAs is within its validity period at {@code now}: with every CA expired (or not
     * valid yet) every request is refused, as with no bundle at all.
     */
    public boolean validAt(Instant now) {
        if (!valid()) {
            return false;
        }
        Date at = Date.from(now);
        return cas.stream().anyMatch(ca -> !at.before(ca.getNotBefore()) && !at.after(ca.getNotAfter()));
    }

    public Set<TrustAnchor> anchors() {
        return cas.stream().map(c -> new TrustAnchor(c, null)).collect(Collectors.toSet());
    }
}
