package io.unboundedcloud.playpen.kube;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.unboundedcloud.playpen.api.Json;
import io.unboundedcloud.playpen.tls.CertificateRenewal;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * The serving certificate: read from the TLS Secret, or created self-signed when absent (replicas
 * racing to create it all end up serving the winner's), and published as the APIService caBundle.
 */
public final class ServingCertificate {
    private static final Logger LOG = LoggerFactory.getLogger(ServingCertificate.class);
    /** Marks a Secret this operator created (and therefore renews). */
    public static final String ORIGIN_ANNOTATION = "playpen.unbounded-cloud.io/serving-certificate";
    public static final String SELF_SIGNED = "self-signed";
    /** Secret key holding the certificate a renewal replaced; kept in the caBundle until it expires. */
    public static final String PREVIOUS_KEY = "previous.crt";

    private final KubernetesClient client;
    private final String namespace;
    private final String secretName;
    private final String serviceName;
    private final Clock clock;
    private final ApiCallCounter calls;
    private final CertificateRenewal renewal;
    /**
     * Certificates this process published and that the Secret no longer holds (it was replaced by someone else): kept
     * in the caBundle until they expire, so replicas still serving them are not rejected meanwhile.
     */
    private final Map<String, X509Certificate> retired = new ConcurrentHashMap<>();
    private volatile String lastPublishedCertificatePem;
    private volatile Instant lastForbiddenWarning;

    public ServingCertificate(KubernetesClient client, String namespace, String secretName, String serviceName, Clock clock,
            ApiCallCounter calls) {
        this(client, namespace, secretName, serviceName, clock, calls, CertificateRenewal.DEFAULT);
    }

    public ServingCertificate(KubernetesClient client, String namespace, String secretName, String serviceName, Clock clock,
            ApiCallCounter calls, CertificateRenewal renewal) {
        this.client = client;
        this.namespace = namespace;
        this.secretName = secretName;
        this.serviceName = serviceName;
        this.clock = clock;
        this.calls = calls;
        this.renewal = renewal;
    }

    /**
     * The certificate chain PEM and key to serve with, and the certificate it replaced ({@code previous.crt}, empty
     * when none) which stays in the caBundle until it expires.
     */
    public record Material(String certificatePem, String privateKeyPem, String previousCertificatePem) {
        public Material(String certificatePem, String privateKeyPem) {
            this(certificatePem, privateKeyPem, "");
        }

        /** The leaf (first) certificate of the chain. */
        public X509Certificate leaf() {
            return Pki.parseCertificates(certificatePem).get(0);
        }
    }

    /** What the APIService caBundle holds now. */
    public sealed interface Bundle {
    }

    /**
     * The APIService does not exist, or it is set not to verify (insecureSkipTLSVerify, which kube-apiserver allows
     * only without a caBundle): nobody verifies us against a bundle.
     */
    public record NoApiService() implements Bundle {
    }

    /** The certificates of the caBundle (empty when it is empty or holds no parsable certificate). */
    public record Published(List<X509Certificate> certificates) implements Bundle {
        /**
         * True when the bundle holds a certificate of the served chain (leaf first, then intermediates) or one whose
         * key signed a certificate of it: a gate on when to serve, the aggregator does the full verification.
         */
        public boolean trusts(List<X509Certificate> chain) {
            for (X509Certificate c : chain) {
                if (trusts(c)) {
                    return true;
                }
            }
            return false;
        }

        /** True when the bundle holds the leaf itself or a certificate whose key signed it. */
        public boolean trusts(X509Certificate leaf) {
            for (X509Certificate c : certificates) {
                if (c.equals(leaf)) {
                    return true;
                }
                if (c.getSubjectX500Principal().equals(leaf.getIssuerX500Principal())) {
                    try {
                        leaf.verify(c.getPublicKey());
                        return true;
                    } catch (Exception e) {
                        // not this one
                    }
                }
            }
            return false;
        }
    }

    private Secret getSecret() {
        calls.count(KubeApiCall.SECRETS_GET);
        return client.secrets().inNamespace(namespace).withName(secretName).get();
    }

    public Material ensure() {
        Secret existing = getSecret();
        if (existing != null) {
            return fromSecret(existing);
        }
        String svc = serviceName;
        Pki.Issued issued = issueSelfSigned();
        Secret secret = new SecretBuilder().withNewMetadata().withName(secretName).withNamespace(namespace)
                .addToLabels("app.kubernetes.io/name", "playpen-operator")
                .addToAnnotations(ORIGIN_ANNOTATION, SELF_SIGNED).endMetadata()
                .withType("kubernetes.io/tls")
                .withData(Map.of("tls.crt", b64(issued.certificatePem()), "tls.key", b64(issued.privateKeyPem())))
                .build();
        try {
            calls.count(KubeApiCall.SECRETS_CREATE);
            client.secrets().inNamespace(namespace).resource(secret).create();
            LOG.info("created self-signed serving certificate secret={}/{} cn={} notAfter={}", namespace, secretName, svc,
                    issued.certificate().getNotAfter().toInstant());
            return new Material(issued.certificatePem(), issued.privateKeyPem());
        } catch (KubernetesClientException e) {
            if (e.getCode() != 409) {
                throw e;
            }
            // another replica created it first: serve theirs so every replica presents the same certificate
            return fromSecret(getSecret());
        }
    }

    /** The serving certificate the Secret holds now; null when the Secret is absent. */
    public Material read() {
        Secret s = getSecret();
        return s == null ? null : fromSecret(s);
    }

    private Pki.Issued issueSelfSigned() {
        String svc = serviceName;
        Duration validity = renewal.validity();
        // back-dated a minute against clock skew, unless the lifetime is short (tests)
        Duration backdate = validity.compareTo(Duration.ofHours(1)) >= 0 ? Duration.ofSeconds(60) : Duration.ZERO;
        return Pki.selfSigned(new Pki.Subject(svc, List.of(),
                List.of(svc, svc + "." + namespace, svc + "." + namespace + ".svc",
                        svc + "." + namespace + ".svc.cluster.local", "localhost"),
                List.of()), Pki.Usage.SERVER, clock.instant().minus(backdate), validity);
    }

    /**
     * Renews the self-signed serving certificate once it is due ({@code --serving-cert-renew-fraction} of its
     * lifetime): a new key and certificate go into the Secret, the old certificate into {@code previous.crt} (it stays
     * in the caBundle until it expires). Only certificates this operator created are renewed; a certificate supplied
     * in the Secret is left to whoever supplies it. Replicas serve the new one once the caBundle trusts it
     * (ServingCertificateReload). Returns true when it renewed.
     */
    public boolean renewIfDue() {
        return renewPass().renewed();
    }

    /**
     * The ca-bundle route's first step: {@link #renewIfDue}, answering with what the Secret holds afterwards (the
     * Secret read for the check, or the one just written), so the publish step that follows need not read it again.
     * Null when that is not known (no Secret, a failed read, a write that may or may not have landed): read it then.
     */
    public Material renewIfDueAndRead() {
        Secret holds = renewPass().holds();
        return holds == null ? null : fromSecret(holds);
    }

    /** What a renewal pass did, and the Secret as it left it (null: unknown). */
    private record Pass(boolean renewed, Secret holds) {
    }

    private Pass renewPass() {
        Secret s;
        try {
            s = getSecret();
        } catch (KubernetesClientException e) {
            LOG.warn("cannot read serving certificate secret {}/{} to check its renewal: {}", namespace, secretName,
                    e.getMessage());
            return new Pass(false, null);
        }
        if (s == null || !selfSignedByUs(s)) {
            return new Pass(false, s);
        }
        Material current = fromSecret(s);
        X509Certificate leaf = current.leaf();
        Instant now = clock.instant();
        if (now.isBefore(renewal.renewAt(leaf))) {
            return new Pass(false, s);
        }
        Pki.Issued issued = issueSelfSigned();
        Map<String, String> data = new LinkedHashMap<>(s.getData());
        Map<String, String> annotations = new LinkedHashMap<>(
                s.getMetadata().getAnnotations() == null ? Map.of() : s.getMetadata().getAnnotations());
        annotations.put(ORIGIN_ANNOTATION, SELF_SIGNED);
        s.getMetadata().setAnnotations(annotations);
        data.put("tls.crt", b64(issued.certificatePem()));
        data.put("tls.key", b64(issued.privateKeyPem()));
        data.put(PREVIOUS_KEY, b64(current.certificatePem()));
        s.setData(data);
        Secret written;
        try {
            calls.count(KubeApiCall.SECRETS_UPDATE);
            // the resourceVersion read above is the precondition: two leaders cannot both renew
            written = client.secrets().inNamespace(namespace).resource(s).update();
        } catch (KubernetesClientException e) {
            if (e.getCode() == 409) {
                LOG.info("serving certificate secret {}/{} changed while renewing; next pass decides again", namespace,
                        secretName);
                return new Pass(false, null);
            }
            if (e.getCode() != 403) {
                // unknown outcome (5xx, reset: the write may have landed): the Secret holds the truth, and the next
                // pass reads it again and decides afresh
                LOG.warn("cannot renew serving certificate secret {}/{}: {}", namespace, secretName, e.getMessage());
                return new Pass(false, null);
            }
            if (lastForbiddenWarning == null || !now.isBefore(lastForbiddenWarning.plus(Duration.ofHours(1)))) {
                lastForbiddenWarning = now;
                LOG.warn("cannot renew the serving certificate: update on secret {}/{} is forbidden (grant it, see "
                        + "deploy/030-operator-rbac.yaml); it expires at {}", namespace, secretName,
                        leaf.getNotAfter().toInstant());
            }
            return new Pass(false, null);
        }
        LOG.info("renewed self-signed serving certificate secret={}/{} oldNotAfter={} newNotAfter={}", namespace,
                secretName, leaf.getNotAfter().toInstant(), issued.certificate().getNotAfter().toInstant());
        return new Pass(true, written);
    }

    /**
     * Ours to renew: created by this operator (the origin annotation), or, for Secrets created before it (by an
     * earlier version or by the Go reference, which also creates a one-year self-signed certificate), a self-signed
     * certificate whose CN is the service name. The annotation set to anything else ({@code external}) opts out.
     */
    private boolean selfSignedByUs(Secret s) {
        Map<String, String> ann = s.getMetadata().getAnnotations() == null ? Map.of() : s.getMetadata().getAnnotations();
        String origin = ann.get(ORIGIN_ANNOTATION);
        if (origin != null) {
            return SELF_SIGNED.equals(origin);
        }
        try {
            X509Certificate leaf = fromSecret(s).leaf();
            leaf.verify(leaf.getPublicKey());
            return leaf.getSubjectX500Principal().getName().equals("CN=" + serviceName);
        } catch (Exception e) {
            return false;
        }
    }

    private Material fromSecret(Secret s) {
        Map<String, String> data = s.getData() == null ? Map.of() : s.getData();
        String crt = data.get("tls.crt");
        String key = data.get("tls.key");
        if (crt == null || key == null) {
            throw new IllegalStateException("secret " + namespace + "/" + secretName + " lacks tls.crt or tls.key");
        }
        String previous = data.get(PREVIOUS_KEY);
        return new Material(unb64(crt), unb64(key), previous == null ? "" : unb64(previous));
    }

    /** The APIService's caBundle now; throws when it cannot be read. */
    public Bundle readCaBundle(String apiServiceName) {
        calls.count(KubeApiCall.API_SERVICES_GET);
        GenericKubernetesResource svc = client.genericKubernetesResources("apiregistration.k8s.io/v1", "APIService")
                .withName(apiServiceName).get();
        if (svc == null || verifiesNothing(svc)) {
            return new NoApiService();
        }
        return new Published(certificates(caBundleOf(svc)));
    }

    /** An APIService with insecureSkipTLSVerify: kube-apiserver verifies nothing, and refuses a caBundle beside it. */
    private static boolean verifiesNothing(GenericKubernetesResource svc) {
        return Boolean.TRUE.equals(spec(svc).get("insecureSkipTLSVerify"));
    }

    private static String caBundleOf(GenericKubernetesResource svc) {
        return spec(svc).get("caBundle") instanceof String str ? str : "";
    }

    /** The APIService's spec as the generic resource holds it (empty when it has none). */
    private static Map<?, ?> spec(GenericKubernetesResource svc) {
        return svc.getAdditionalProperties().get("spec") instanceof Map<?, ?> m ? m : Map.of();
    }

    /** The certificates of a base64 caBundle; none when it is empty or not certificates. */
    private static List<X509Certificate> certificates(String caBundleB64) {
        if (caBundleB64 == null || caBundleB64.isBlank()) {
            return List.of();
        }
        try {
            return Pki.parseCertificates(new String(Base64.getMimeDecoder().decode(caBundleB64), StandardCharsets.US_ASCII));
        } catch (IllegalArgumentException e) {
            return List.of();
        }
    }

    /**
     * Publishes what the Secret holds now: the serving certificate plus, until they expire, the certificate it
     * replaced ({@code previous.crt}) and any this process published before the Secret was replaced. No Secret, nothing.
     */
    public void publishCaBundle(String apiServiceName) {
        publishCaBundle(apiServiceName, (Material) null);
    }

    /**
     * {@link #publishCaBundle(String)} from {@code known}, what the Secret holds as just read (null: read it now).
     * <p>
     * A bundle is written only as computed from a read of the Secret made after the read of the APIService it
     * replaces, and only over that APIService's resourceVersion. A former leader still in a pass (a GC pause, a
     * partition past its Lease) could otherwise write a bundle made from a Secret it read before the new leader
     * renewed it, dropping the certificate replicas have meanwhile switched to: the aggregator would reject them.
     * Read in that order, such a bundle either holds the renewed certificate or meets a newer APIService (409).
     * Answers what the APIService holds afterwards, null when that is not known (a failed read, no Secret, the
     * APIService changing under every attempt).
     */
    public synchronized Bundle publishCaBundle(String apiServiceName, Material known) {
        Material m = known != null ? known : read();
        for (int attempt = 0; m != null && attempt < 3; attempt++) {
            GenericKubernetesResource svc;
            try {
                calls.count(KubeApiCall.API_SERVICES_GET);
                svc = client.genericKubernetesResources("apiregistration.k8s.io/v1", "APIService").withName(apiServiceName)
                        .get();
            } catch (KubernetesClientException e) {
                LOG.warn("cannot read APIService {}: {}", apiServiceName, e.getMessage());
                return null;
            }
            if (svc == null) {
                LOG.warn("APIService {} not found; caBundle not published", apiServiceName);
                return new NoApiService();
            }
            if (verifiesNothing(svc)) {
                LOG.warn("APIService {} sets insecureSkipTLSVerify, so kube-apiserver verifies nothing and refuses a"
                        + " caBundle: caBundle not published; unset it to have the serving certificate verified",
                        apiServiceName);
                return new NoApiService();
            }
            Instant now = clock.instant();
            // what the APIService trusts now (published by whichever leader, this process or one before it)
            List<X509Certificate> published = certificates(caBundleOf(svc));
            if (b64(bundle(m, now, published)).equals(caBundleOf(svc))) {
                retireReplaced(m.certificatePem(), now);
                return new Published(published);
            }
            // the bundle must change: decide from the Secret as it is now, read after the APIService
            m = read();
            if (m == null) {
                break;
            }
            retireReplaced(m.certificatePem(), now);
            String written = bundle(m, now, published);
            try {
                write(apiServiceName, svc, written);
                return new Published(Pki.parseCertificates(written));
            } catch (KubernetesClientException e) {
                if (e.getCode() != 409) {
                    throw e;
                }
            }
            // the APIService changed since it was read (another replica published): judge again from fresh reads
            LOG.info("APIService {} changed while its caBundle was written; reading it again", apiServiceName);
        }
        if (m == null) {
            LOG.warn("serving certificate secret {}/{} not found; caBundle not published", namespace, secretName);
        }
        return null;
    }

    /**
     * The serving certificate, then the replaced and retired ones until they expire, then those of {@code published}
     * (the bundle the APIService holds) until they expire, as one PEM. A certificate published before stays until it
     * expires whichever replica published it: a leader that restarted or lost the Lease takes its record of the
     * certificates it retired with it, while replicas may still serve one of them.
     */
    private String bundle(Material m, Instant now, List<X509Certificate> published) {
        StringBuilder bundle = new StringBuilder(m.certificatePem());
        List<X509Certificate> keep = new ArrayList<>();
        if (!m.previousCertificatePem().isBlank()) {
            keep.addAll(Pki.parseCertificates(m.previousCertificatePem()));
        }
        keep.addAll(retiredAfter(m.certificatePem(), now).values());
        keep.addAll(published);
        List<X509Certificate> added = new ArrayList<>(Pki.parseCertificates(m.certificatePem()));
        for (X509Certificate c : keep) {
            if (c.getNotAfter().toInstant().isAfter(now) && !added.contains(c)) {
                if (bundle.length() > 0 && bundle.charAt(bundle.length() - 1) != '\n') {
                    bundle.append('\n');
                }
                bundle.append(Pki.toPem(c));
                added.add(c);
            }
        }
        return bundle.toString();
    }

    /**
     * The retired certificates once {@code servingPem} is published: those kept so far and the certificate published
     * before it, when it was another one, without the expired ones.
     */
    private Map<String, X509Certificate> retiredAfter(String servingPem, Instant now) {
        Map<String, X509Certificate> view = new LinkedHashMap<>(retired);
        String last = lastPublishedCertificatePem;
        if (last != null && !last.equals(servingPem)) {
            List<X509Certificate> current = Pki.parseCertificates(servingPem);
            for (X509Certificate c : Pki.parseCertificates(last)) {
                if (!current.contains(c)) {
                    view.put(retiredKey(c), c);
                }
            }
        }
        view.values().removeIf(c -> !c.getNotAfter().toInstant().isAfter(now));
        return view;
    }

    private static String retiredKey(X509Certificate c) {
        return c.getSerialNumber().toString(16) + "/" + c.getIssuerX500Principal().getName();
    }

    /** Remembers the certificate published before, when the Secret now holds another one; forgets expired ones. */
    private void retireReplaced(String servingPem, Instant now) {
        Map<String, X509Certificate> next = retiredAfter(servingPem, now);
        retired.clear();
        retired.putAll(next);
        lastPublishedCertificatePem = servingPem;
    }

    /** Writes the bundle (PEM) into the APIService caBundle when the APIService exists and differs. */
    public void publishCaBundle(String apiServiceName, String certificatePem) {
        GenericKubernetesResource svc;
        try {
            calls.count(KubeApiCall.API_SERVICES_GET);
            svc = client.genericKubernetesResources("apiregistration.k8s.io/v1", "APIService").withName(apiServiceName).get();
        } catch (KubernetesClientException e) {
            LOG.warn("cannot read APIService {}: {}", apiServiceName, e.getMessage());
            return;
        }
        if (svc == null) {
            LOG.warn("APIService {} not found; caBundle not published", apiServiceName);
            return;
        }
        write(apiServiceName, svc, certificatePem);
    }

    /**
     * Writes {@code certificatePem} as the caBundle of {@code svc} (as read), on its resourceVersion: a 409 when it
     * changed since. Nothing when it already holds that bundle.
     */
    private void write(String apiServiceName, GenericKubernetesResource svc, String certificatePem) {
        String want = b64(certificatePem);
        if (want.equals(caBundleOf(svc))) {
            return;
        }
        try {
            calls.count(KubeApiCall.API_SERVICES_PATCH);
            Map<String, Object> metadata = new LinkedHashMap<>();
            if (svc.getMetadata() != null && svc.getMetadata().getResourceVersion() != null) {
                metadata.put("resourceVersion", svc.getMetadata().getResourceVersion());
            }
            client.genericKubernetesResources("apiregistration.k8s.io/v1", "APIService").withName(apiServiceName)
                    .patch(PatchContext.of(PatchType.JSON_MERGE), Json.write(Map.of("metadata", metadata,
                            "spec", Map.of("caBundle", want))));
        } catch (KubernetesClientException e) {
            if (e.getCode() != 403) {
                throw e;
            }
            // the Go operator's RBAC grants get and update on the APIService, not patch: write the object we read
            // (its resourceVersion is the precondition), as the Go operator does
            Object spec = svc.getAdditionalProperties().get("spec");
            @SuppressWarnings("unchecked")
            Map<String, Object> specMap = new java.util.LinkedHashMap<>(spec instanceof Map<?, ?> m2
                    ? (Map<String, Object>) m2 : Map.of());
            specMap.put("caBundle", want);
            svc.getAdditionalProperties().put("spec", specMap);
            calls.count(KubeApiCall.API_SERVICES_UPDATE);
            client.genericKubernetesResources("apiregistration.k8s.io/v1", "APIService").resource(svc).update();
        }
        LOG.info("published serving certificate as caBundle of APIService {}", apiServiceName);
    }

    private static String b64(String s) {
        return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    private static String unb64(String s) {
        return new String(Base64.getDecoder().decode(s), StandardCharsets.UTF_8);
    }
}
