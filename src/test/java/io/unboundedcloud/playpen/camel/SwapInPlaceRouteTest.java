package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.StringWriter;
import java.math.BigInteger;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.MessageDigest;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Date;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;

import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/**
 * Swap in place: a namespace as the Go operator leaves it (its RBAC, its serving Secret, its idle and
 * claimed pods, its APIService caBundle) and only the image replaced by ours, started with the reference's
 * Deployment args. Replays and expiry of the reference's claims, hostPorts respected, and with the reference's RBAC
 * (no Lease, no Event, a get-only trust ConfigMap) the pool and TTL still run in single-replica fallback.
 */
class SwapInPlaceRouteTest {
    static final ObjectMapper M = new ObjectMapper();
    static final String NS = "playpen";
    static final String LEASES = "/apis/coordination.k8s.io/v1/namespaces/playpen/leases";
    static final String API_SERVICE = "/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.playpen.unbounded-cloud.io";

    /**
     * The args of the reference's Deployment. Its template for this operator version is not in the reference
     * repository snapshot we can read, so these are the flags of cmd/playpen-operator/main.go (edd7b3d) that the
     * template's values set (the reference's e2e renders it with Namespace, PlaypenImage, RunnerImagePullPolicy,
     * RunnerAMD64Count, RunnerARM64Count, ControlPlaneCount, RunnerRequireKVM, RunnerControlPlaneTolerations).
     * {@code --listen-addr=:8443} is replaced by the harness's free port (tests bind no fixed port).
     */
    static final List<String> REFERENCE_ARGS = List.of("--namespace=playpen", "--service-name=playpen-operator",
            "--tls-secret-name=playpen-operator-tls", "--runner-namespace=playpen",
            "--runner-label-selector=app.kubernetes.io/name=playpen-runner", "--runner-image=ghcr.io/azure/playpen:latest",
            "--runner-image-pull-policy=Always", "--runner-service-account-name=playpen-runner",
            "--runner-amd64-count=2", "--runner-arm64-count=0", "--runner-wireguard-host-port-start=51820",
            "--runner-wireguard-host-port-end=51899", "--runner-require-kvm=true", "--runner-control-plane-tolerations=false",
            "--control-plane-count=0", "--control-plane-versions=v1.33.0", "--playpen-ttl=1h", "--reconcile-interval=30s");

    static final String KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters:\n- name: default\n  cluster:\n"
            + "    server: https://127.0.0.1:6443\n    certificate-authority-data: Q0E=\nusers:\n- name: admin\n  user:\n"
            + "    token: t\ncontexts:\n- name: default\n  context:\n    cluster: default\n    user: admin\n"
            + "current-context: default\n";

    TestCluster cluster;
    OperatorHarness op;

    @AfterEach
    void down() {
        if (op != null) {
            op.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    // ------------------------------------------------------------------ the reference's view of the world

    static String sha256(String s) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
    }

    /** What the reference's RBAC (deploy/playpen/02-rbac.yaml.tmpl at edd7b3d) lets the operator do; the rest is 403. */
    static boolean referenceRbacAllows(String key) {
        String[] parts = key.split(" ");
        String verb = parts[0];
        boolean watch = parts.length == 3;
        String path = parts[parts.length - 1];
        if (path.startsWith("/api/v1/namespaces/playpen/pods")) {
            return true; // get, list, watch, create, patch, update, delete
        }
        if (path.startsWith("/api/v1/nodes")) {
            return verb.equals("GET"); // get, list, watch
        }
        if (path.equals("/apis/authorization.k8s.io/v1/subjectaccessreviews")) {
            return verb.equals("POST");
        }
        if (path.equals(API_SERVICE)) {
            return !watch && (verb.equals("GET") || verb.equals("PUT")); // get, update: no patch
        }
        if (path.equals("/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication")) {
            return !watch && verb.equals("GET"); // get only: no list, no watch
        }
        if (path.startsWith("/api/v1/namespaces/playpen/secrets")) {
            return !watch && (verb.equals("GET") && !path.equals("/api/v1/namespaces/playpen/secrets") || verb.equals("POST"));
        }
        return false; // no leases, no events, nothing else
    }

    /** The reference's serving Secret: RSA-2048, PKCS#1 key, CA:TRUE, serverAuth, as its selfSignedCert writes it. */
    static Map<String, String> referenceServingSecret() throws Exception {
        KeyPairGenerator g = KeyPairGenerator.getInstance("RSA");
        g.initialize(2048);
        KeyPair kp = g.generateKeyPair();
        Instant notBefore = Instant.now().minus(1, ChronoUnit.MINUTES);
        X500Name cn = new X500Name("CN=playpen-operator");
        JcaX509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(cn,
                BigInteger.valueOf(notBefore.getEpochSecond()).multiply(BigInteger.valueOf(1_000_000_000L)),
                Date.from(notBefore), Date.from(notBefore.plus(365, ChronoUnit.DAYS)), cn, kp.getPublic());
        b.addExtension(Extension.keyUsage, true,
                new KeyUsage(KeyUsage.keyEncipherment | KeyUsage.digitalSignature | KeyUsage.keyCertSign));
        b.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth));
        b.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
        List<GeneralName> sans = new ArrayList<>();
        for (String h : List.of("playpen-operator", "playpen-operator.playpen", "playpen-operator.playpen.svc",
                "playpen-operator.playpen.svc.cluster.local", "localhost")) {
            sans.add(new GeneralName(GeneralName.dNSName, h));
        }
        b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(sans.toArray(new GeneralName[0])));
        X509Certificate cert = new JcaX509CertificateConverter()
                .getCertificate(b.build(new JcaContentSignerBuilder("SHA256withRSA").build(kp.getPrivate())));
        StringWriter certPem = new StringWriter();
        try (JcaPEMWriter w = new JcaPEMWriter(certPem)) {
            w.writeObject(cert);
        }
        StringWriter keyPem = new StringWriter();
        try (JcaPEMWriter w = new JcaPEMWriter(keyPem)) {
            w.writeObject(kp.getPrivate()); // BouncyCastle writes an RSA key as PKCS#1, like Go's MarshalPKCS1PrivateKey
        }
        assertThat(keyPem.toString()).startsWith("-----BEGIN RSA PRIVATE KEY-----");
        return Map.of("tls.crt", certPem.toString(), "tls.key", keyPem.toString());
    }

    /** A runner pod as the reference's runnerPod() creates it, completed by the runner (key, certificate, Ready). */
    static PodBuilder referenceRunner(int hostPort) {
        return new PodBuilder().withNewMetadata().withName("playpen-runner-amd64-" + hostPort).withNamespace(NS)
                .addToLabels("app.kubernetes.io/name", "playpen-runner")
                .addToLabels("app.kubernetes.io/component", "runner")
                .addToLabels("playpen.unbounded-cloud.io/resource-type", "runner")
                .addToLabels("playpen.unbounded-cloud.io/architecture", "amd64")
                .addToLabels("playpen.unbounded-cloud.io/host-port", String.valueOf(hostPort))
                .addToAnnotations("kubernetes.azure.com/set-kube-service-host-fqdn", "true")
                .addToAnnotations("playpen.unbounded-cloud.io/server-wireguard-public-key", TestCluster.wgKey(hostPort))
                .addToAnnotations("playpen.unbounded-cloud.io/redfish-cert-pem",
                        "-----BEGIN CERTIFICATE-----\nMIIB" + hostPort + "\n-----END CERTIFICATE-----\n")
                .endMetadata()
                .withNewSpec().withServiceAccountName("playpen-runner").withRestartPolicy("Always")
                .addToNodeSelector("kubernetes.io/arch", "amd64").withNodeName("node-a")
                .addNewContainer().withName("runner").withImage("ghcr.io/azure/playpen:latest").withImagePullPolicy("Always")
                .withCommand("/unbounded/bin/playpen-runner")
                .withArgs("--architecture=amd64", "--wireguard-private-key-file=/etc/playpen/wireguard/privatekey",
                        "--wireguard-listen-port=51820")
                .addNewPort().withName("https").withProtocol("TCP").withContainerPort(8443).endPort()
                .addNewPort().withName("wireguard").withProtocol("UDP").withContainerPort(51820).withHostPort(hostPort).endPort()
                .withNewSecurityContext().withPrivileged(true).endSecurityContext()
                .endContainer().endSpec()
                .withNewStatus().withPhase("Running")
                .addNewContainerStatus().withName("runner").withReady(true).withNewState().withNewRunning()
                .withStartedAt("2026-01-01T00:00:00Z").endRunning().endState().endContainerStatus()
                .endStatus();
    }

    /** The reference's patchClaim on a pod: four annotations (claimed-at in Go's time.RFC3339, UTC) and one label. */
    static PodBuilder claimedByReference(PodBuilder pod, String key, String reqHash, String clientKey, Instant claimedAt)
            throws Exception {
        String name = pod.buildMetadata().getName();
        return pod.editMetadata()
                .addToAnnotations("playpen.unbounded-cloud.io/idempotency-key-hash", sha256(key.trim()))
                .addToAnnotations("playpen.unbounded-cloud.io/request-hash", reqHash)
                .addToAnnotations("playpen.unbounded-cloud.io/client-wireguard-public-key", clientKey)
                .addToAnnotations("playpen.unbounded-cloud.io/claimed-at", claimedAt.truncatedTo(ChronoUnit.SECONDS).toString())
                .addToLabels("playpen.unbounded-cloud.io/allocated", sha256(NS + "/" + name).substring(0, 16))
                .endMetadata();
    }

    static String runnerRequestHash(String clientKey) throws Exception {
        return sha256(String.join("\n", "runner", "", clientKey, "amd64"));
    }

    static int hostPort(Pod p) {
        return p.getSpec().getContainers().stream().flatMap(c -> c.getPorts().stream())
                .filter(pt -> pt.getHostPort() != null && pt.getHostPort() > 0).findFirst().orElseThrow().getHostPort();
    }

    boolean exists(String name) {
        return cluster.client.pods().inNamespace(NS).withName(name).get() != null;
    }

    /** Whether a pod of that name still carries a claim; the pool may reuse the name of a deleted claim at once. */
    boolean claimed(String name) {
        Pod p = cluster.client.pods().inNamespace(NS).withName(name).get();
        return p != null && p.getMetadata().getAnnotations() != null
                && p.getMetadata().getAnnotations().containsKey("playpen.unbounded-cloud.io/idempotency-key-hash");
    }

    // ------------------------------------------------------------------ the test

    @Test
    void oursTakesOverTheReferencesNamespaceWithItsArgsRbacSecretAndPods() throws Exception {
        cluster = TestCluster.start();
        cluster.addNode("node-a", "amd64", "203.0.113.10");
        Map<String, String> tls = referenceServingSecret();
        cluster.client.secrets().inNamespace(NS).resource(new SecretBuilder().withNewMetadata().withName("playpen-operator-tls")
                .withNamespace(NS).endMetadata().withType("kubernetes.io/tls")
                .withData(Map.of("tls.crt", b64(tls.get("tls.crt")), "tls.key", b64(tls.get("tls.key")))).build()).create();
        // the reference injected its certificate as the APIService caBundle at its start
        GenericKubernetesResource apiService = new GenericKubernetesResourceBuilder()
                .withApiVersion("apiregistration.k8s.io/v1").withKind("APIService").withNewMetadata()
                .withName("v1alpha1.playpen.unbounded-cloud.io").endMetadata()
                .addToAdditionalProperties("spec", Map.of("group", "playpen.unbounded-cloud.io", "version", "v1alpha1",
                        "caBundle", b64(tls.get("tls.crt")), "service", Map.of("namespace", NS, "name", "playpen-operator")))
                .build();
        cluster.client.genericKubernetesResources("apiregistration.k8s.io/v1", "APIService").resource(apiService).create();

        Instant now = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        String k1 = TestCluster.wgKey(901);
        String k3 = TestCluster.wgKey(903);
        // 51820 idle; 51821 claimed just now; 51822 expired while the reference was gone; 16443 a control plane
        // the reference handed out
        cluster.create(referenceRunner(51820));
        cluster.create(claimedByReference(referenceRunner(51821), " ref-live ", runnerRequestHash(k3), k3, now));
        cluster.create(claimedByReference(referenceRunner(51822), "ref-expired", runnerRequestHash(k1), k1,
                now.minus(Duration.ofHours(2))));
        cluster.create(claimedByReference(TestCluster.readyControlPlane("v1.33.0", 16443, "node-a", KUBECONFIG),
                "ref-cp", sha256(String.join("\n", "controlPlane", "v1.33.0", "", "amd64")), "", now));

        Set<String> refused = ConcurrentHashMap.newKeySet();
        Predicate<String> rbac = key -> {
            if (referenceRbacAllows(key)) {
                return false;
            }
            refused.add(key);
            return true;
        };
        cluster.forbidden = rbac;
        List<Instant> deletes = new CopyOnWriteArrayList<>();
        List<String> creates = new CopyOnWriteArrayList<>();
        cluster.addRequestListener(k -> {
            if (k.equals("DELETE /api/v1/namespaces/playpen/pods/playpen-runner-amd64-51830")) {
                deletes.add(Instant.now());
            }
            if (k.equals("POST /api/v1/namespaces/playpen/pods")) {
                creates.add(k);
            }
        });

        List<String> args = new ArrayList<>(REFERENCE_ARGS);
        // test plumbing: restore the production default the harness turns off, and open the metrics listener
        args.add("--leader-elect=true");
        args.add("--management-addr=127.0.0.1:0");
        op = new OperatorHarness(cluster, args.toArray(new String[0]));
        int mgmtPort = op.app.managementAddress().getPort();

        // single-replica fallback: the Lease API is forbidden, this replica runs the background work anyway
        OperatorHarness.awaitTrue(() -> op.app.leaderElection().isLeader(), Duration.ofSeconds(60), "fallback leadership");
        assertThat(op.app.leaderElection().inFallback()).isTrue();

        // it serves the reference's certificate (RSA, PKCS#1 key) and leaves the caBundle alone (it matches)
        HttpResponse<String> replay = op.alloc("{\"idempotencyKey\":\"ref-live\",\"wireGuardPublicKey\":\"" + k3 + "\"}");
        X509Certificate served = (X509Certificate) replay.sslSession().orElseThrow().getPeerCertificates()[0];
        assertThat(served.getPublicKey().getAlgorithm()).isEqualTo("RSA");
        assertThat(served.getSubjectX500Principal().getName()).isEqualTo("CN=playpen-operator");
        assertThat(Base64.getEncoder().encodeToString(served.getEncoded())).isEqualTo(tls.get("tls.crt")
                .replace("-----BEGIN CERTIFICATE-----", "").replace("-----END CERTIFICATE-----", "").replaceAll("\\s", ""));

        // a reference claim replays (the key was trimmed by the reference, as by us)
        assertThat(replay.statusCode()).as(replay.body()).isEqualTo(200);
        JsonNode r = M.readTree(replay.body());
        assertThat(r.at("/pod/name").asText()).isEqualTo("playpen-runner-amd64-51821");
        assertThat(r.at("/pod/nodePublicIP").asText()).isEqualTo("203.0.113.10");
        assertThat(r.at("/endpoint/host").asText()).isEqualTo("203.0.113.10");
        assertThat(r.at("/endpoint/wireGuardUDPPort").asInt()).isEqualTo(51821);
        assertThat(r.at("/endpoint/externalTrafficPolicy").asText()).isEqualTo("HostPort");
        assertThat(r.at("/wireGuard/serverPublicKey").asText()).isEqualTo(TestCluster.wgKey(51821));
        assertThat(r.at("/redfish/certPEM").asText()).contains("MIIB51821");
        // the same key with a different body is a conflict, as with the reference
        HttpResponse<String> conflict = op.alloc("{\"idempotencyKey\":\"ref-live\",\"wireGuardPublicKey\":\"" + k1 + "\"}");
        assertThat(conflict.statusCode()).as(conflict.body()).isEqualTo(409);
        assertThat(M.readTree(conflict.body()).get("message").asText())
                .isEqualTo("idempotency key was already used with a different request: it was first sent with another resourceType,"
                        + " architecture, kubernetesVersion or wireGuardPublicKey; send that request again for its answer, or"
                        + " use a new key for this one");
        // a control plane the reference handed out replays too
        HttpResponse<String> cp = op.alloc("{\"idempotencyKey\":\"ref-cp\",\"resourceType\":\"controlPlane\"}");
        assertThat(cp.statusCode()).as(cp.body()).isEqualTo(200);
        assertThat(M.readTree(cp.body()).at("/endpoint/apiServerTCPPort").asInt()).isEqualTo(16443);
        // the reference's claims are kept as they are: replaying one (handing it to a request other than the one
        // that claimed it) settles it once, adding that mark and nothing else, one write per claim replayed
        Pod live = cluster.client.pods().inNamespace(NS).withName("playpen-runner-amd64-51821").get();
        assertThat(live.getMetadata().getAnnotations().get("playpen.unbounded-cloud.io/claimed-at")).isEqualTo(now.toString());
        assertThat(live.getMetadata().getAnnotations()).containsEntry("playpen.unbounded-cloud.io/claim-settled", "true");
        assertThat(cluster.requestCount(k -> k.startsWith("PATCH /api/v1/namespaces/playpen/pods"))).isEqualTo(2);

        // the claim that expired while nobody ran is deleted at once (within less than the 30 s interval, after
        // which the interval's sweep could do it instead)
        OperatorHarness.awaitTrue(() -> !claimed("playpen-runner-amd64-51822"), Duration.ofSeconds(25), "expired claim deleted");

        // the pool fills only what is missing (2 idle wanted, 1 idle there), on the lowest port no reference pod
        // holds: 51822 once the expired claim is gone, 51823 if the pool ran before the expiry
        OperatorHarness.awaitTrue(() -> creates.size() >= 1, Duration.ofSeconds(60), "pool created the missing runner");
        Pod created = cluster.pods().stream().filter(p -> p.getMetadata().getName().startsWith("playpen-runner")
                && !p.getMetadata().getAnnotations().containsKey("playpen.unbounded-cloud.io/server-wireguard-public-key"))
                .findFirst().orElseThrow();
        int createdPort = hostPort(created);
        assertThat(createdPort).isIn(51822, 51823);
        assertThat(created.getMetadata().getName()).isEqualTo("playpen-runner-amd64-" + createdPort);

        // a claim in the reference's format expires at claimed-at + ttl, not earlier, and promptly
        Instant expiry = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(5);
        creates.clear(); // the next create is the test's own
        cluster.create(claimedByReference(referenceRunner(51830), "ref-expiring", runnerRequestHash(k1), k1,
                expiry.minus(Duration.ofHours(1))));
        OperatorHarness.awaitTrue(() -> !deletes.isEmpty(), Duration.ofSeconds(30), "TTL expiry of the reference claim");
        // generous upper bound: this machine is shared (TtlRouteTest and the benchmark measure the lateness)
        assertThat(deletes.get(0)).isAfterOrEqualTo(expiry).isBefore(expiry.plusSeconds(5));
        OperatorHarness.awaitTrue(() -> !exists("playpen-runner-amd64-51830"), Duration.ofSeconds(60), "expired pod gone");

        // dealloc of a reference claim deletes its pod
        assertThat(op.dealloc("{\"idempotencyKey\":\"ref-live\"}").statusCode()).isEqualTo(204);
        OperatorHarness.awaitTrue(() -> !exists("playpen-runner-amd64-51821"), Duration.ofSeconds(60), "dealloc");

        // exactly one pod created, and no hostPort ever held twice
        Thread.sleep(500);
        assertThat(creates).hasSize(1); // the test's pod: the pool created nothing more
        List<Integer> ports = cluster.pods().stream().filter(p -> p.getMetadata().getName().startsWith("playpen-runner"))
                .map(SwapInPlaceRouteTest::hostPort).toList();
        assertThat(ports).doesNotHaveDuplicates().containsExactlyInAnyOrder(51820, createdPort);

        // with the reference's RBAC: only Lease, Event and the trust ConfigMap's list/watch were refused ...
        assertThat(refused).isNotEmpty().allSatisfy(k -> assertThat(k).matches(
                "(GET|POST|PATCH|PUT) (WATCH )?(" + LEASES + ".*|/api/v1/namespaces/playpen/events.*"
                        + "|/api/v1/namespaces/kube-system/configmaps)"));
        // ... the Lease was only read (probes), never written, and the caBundle was never rewritten
        assertThat(cluster.requestCount(k -> k.startsWith("POST " + LEASES) || k.startsWith("PATCH " + LEASES)
                || k.startsWith("PUT " + LEASES))).isZero();
        assertThat(cluster.requestCount(k -> k.endsWith(API_SERVICE) && !k.startsWith("GET "))).isZero();
        // ... and the refused Events are counted as such
        assertThat(op.app.events().forbidden()).isGreaterThanOrEqualTo(2); // Created, Expired (and more)
        assertThat(op.app.events().failed()).isZero();
        String scrape = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + mgmtPort + "/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
        assertThat(OperabilityRouteTest.metric(scrape, "playpen_leader_election_fallback{reason=\"lease_forbidden\"}"))
                .isEqualTo(1.0);
        assertThat(OperabilityRouteTest.metric(scrape, "playpen_leader")).isEqualTo(1.0);
        assertThat(OperabilityRouteTest.metric(scrape, "playpen_events_dropped_total{reason=\"forbidden\"}"))
                .isGreaterThanOrEqualTo(2.0);
        assertThat(OperabilityRouteTest.metric(scrape, "playpen_ttl_expirations_total")).isGreaterThanOrEqualTo(2.0);
        assertThat(OperabilityRouteTest.metric(scrape, "playpen_pool_created_pods_total")).isEqualTo(1.0);
    }

    static String b64(String s) {
        return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }
}
