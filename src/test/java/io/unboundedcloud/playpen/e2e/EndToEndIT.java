package io.unboundedcloud.playpen.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

import io.unboundedcloud.playpen.tls.Pki;

/**
 * One end-to-end suite, two targets. With {@code -De2e.kubeconfig=PATH} (the e2e profile: {@code mvn -B -Pe2e verify
 * -De2e.kubeconfig=PATH}) it runs against any cluster where the operator is installed, or a running playground;
 * without it, against a playground it starts itself (part of {@code mvn -B verify}). It talks to the cluster only as
 * users and admins do: kubectl (allocations through kube-apiserver's aggregator, pods, APIService, Secret, Lease,
 * tokens, port-forward) and HTTP to what port-forward or the playground's endpoints.env expose. Where the playground
 * cannot play a case, the case says so and is skipped there only.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class EndToEndIT {
    static final String BASE = "/apis/" + Target.GROUP_VERSION;
    static final String P = "playpen.unbounded-cloud.io/";
    /** Below kube-apiserver's 60 s request timeout: absorbs a pool's refill on a real cluster (a pod start). */
    static final int WAIT_SECONDS = 50;
    static final ObjectMapper JSON = new ObjectMapper();
    static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    static final SecureRandom RANDOM = new SecureRandom();
    static final String RUN = HexFormat.of().formatHex(RANDOM.generateSeed(3));

    static Target t;
    static final List<String> keys = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void up() throws Exception {
        t = Target.resolve();
        System.out.println("end-to-end target: " + t);
        t.awaitServing(Duration.ofMinutes(5));
    }

    @AfterAll
    static void down() {
        if (t == null) {
            return;
        }
        try {
            for (String k : keys) {
                t.user.createRaw(BASE + "/deallocs", "{\"idempotencyKey\":\"" + k + "\"}");
            }
        } finally {
            t.close();
        }
    }

    // ------------------------------------------------------------------------------------------- helpers

    /** A fresh idempotency key of this run, deallocated at the end whatever happens. */
    static String key(String name) {
        String k = "e2e-" + RUN + "-" + name + "-" + HexFormat.of().formatHex(RANDOM.generateSeed(2));
        keys.add(k);
        return k;
    }

    static String wgKey() {
        byte[] b = new byte[32];
        RANDOM.nextBytes(b);
        return Base64.getEncoder().encodeToString(b);
    }

    static String body(Map<String, Object> fields) {
        try {
            return JSON.writeValueAsString(fields);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static Map<String, Object> runner(String key, String wg) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("idempotencyKey", key);
        m.put("resourceType", "runner");
        m.put("architecture", "amd64");
        m.put("wireGuardPublicKey", wg);
        m.put("waitSeconds", WAIT_SECONDS);
        return m;
    }

    /** An allocation that must succeed: its answer, parsed, and as printed. */
    record Alloc(String key, JsonNode answer, String printed) {
        String pod() {
            return answer.at("/pod/name").asText();
        }

        String namespace() {
            return answer.at("/pod/namespace").asText();
        }
    }

    static Alloc alloc(Kubectl as, Map<String, Object> request) throws IOException {
        Kubectl.Run r = as.createRaw(BASE + "/allocs", body(request));
        assertThat(r.code()).as("alloc as %s: %s", as.label(), r.err()).isZero();
        return new Alloc((String) request.get("idempotencyKey"), JSON.readTree(r.out()), r.out());
    }

    static void dealloc(String key) {
        Kubectl.Run r = t.user.createRaw(BASE + "/deallocs", "{\"idempotencyKey\":\"" + key + "\"}");
        assertThat(r.code()).as("dealloc: %s", r.err()).isZero();
        assertThat(r.out()).isEmpty();
    }

    static JsonNode pod(String namespace, String name) {
        return t.admin.json("get", "pod", name, "-n", namespace, "-o", "json");
    }

    static String annotation(JsonNode pod, String key) {
        return pod.at("/metadata/annotations").path(key).asText(null);
    }

    static String label(JsonNode pod, String key) {
        return pod.at("/metadata/labels").path(key).asText(null);
    }

    static String externalIp(String node) {
        for (JsonNode a : t.admin.json("get", "node", node, "-o", "json").at("/status/addresses")) {
            if (a.path("type").asText().equals("ExternalIP")) {
                return a.path("address").asText();
            }
        }
        return null;
    }

    static String sha256(String s) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.trim().getBytes(StandardCharsets.UTF_8)));
    }

    /** The pod is gone, or on its way (a deletionTimestamp). */
    static void awaitGone(String namespace, String name) throws InterruptedException {
        Target.await(Duration.ofSeconds(90), "pod " + namespace + "/" + name + " to be deleted", () -> {
            Kubectl.Run r = t.admin.run("get", "pod", name, "-n", namespace, "-o", "jsonpath={.metadata.deletionTimestamp}");
            return !r.ok() && r.err().contains("NotFound") || r.ok() && !r.out().isBlank();
        });
    }

    static String runnerNamespace() {
        return Target.prop("e2e.runnerNamespace", "playpen");
    }

    // ------------------------------------------------------------------------------------------- cases

    @Test
    @Order(1)
    void discoveryListsThePlaypenResources() {
        String names = t.user.ok("api-resources", "--api-group=playpen.unbounded-cloud.io", "-o", "name");
        assertThat(names.lines()).contains("allocs.playpen.unbounded-cloud.io", "deallocs.playpen.unbounded-cloud.io",
                "renewals.playpen.unbounded-cloud.io");
    }

    @Test
    @Order(2)
    void allocHandsOutARunnerThatPublishedItsKeyOnANodeWithAnExternalIp() throws Exception {
        String k = key("alloc");
        String wg = wgKey();
        Alloc a = alloc(t.user, runner(k, wg));
        try {
            JsonNode ans = a.answer();
            assertThat(ans.path("resourceType").asText()).isEqualTo("runner");
            assertThat(ans.at("/pod/architecture").asText()).isEqualTo("amd64");
            JsonNode pod = pod(a.namespace(), a.pod());
            // the claim, as the operator wrote it on the pod
            assertThat(annotation(pod, P + "idempotency-key-hash")).isEqualTo(sha256(k));
            assertThat(annotation(pod, P + "client-wireguard-public-key")).isEqualTo(wg);
            assertThat(label(pod, P + "allocated")).matches("[0-9a-f]{16}");
            // what the runner published on its own pod is what the user gets
            assertThat(ans.at("/wireGuard/serverPublicKey").asText())
                    .isEqualTo(annotation(pod, P + "server-wireguard-public-key"));
            assertThat(Base64.getDecoder().decode(ans.at("/wireGuard/serverPublicKey").asText())).hasSize(32);
            assertThat(ans.at("/redfish/certPEM").asText()).isEqualTo(annotation(pod, P + "redfish-cert-pem"))
                    .startsWith("-----BEGIN CERTIFICATE-----");
            // the endpoint: the node's ExternalIP and the pod's hostPort
            String node = pod.at("/spec/nodeName").asText();
            assertThat(ans.at("/pod/nodeName").asText()).isEqualTo(node);
            assertThat(ans.at("/endpoint/host").asText()).isEqualTo(externalIp(node)).isNotBlank();
            assertThat(ans.at("/endpoint/wireGuardUDPPort").asInt()).isEqualTo(Integer.parseInt(label(pod, P + "host-port")));
            assertThat(pod.at("/status/phase").asText()).isEqualTo("Running");
        } finally {
            dealloc(k);
        }
    }

    @Test
    @Order(3)
    void theSameKeyAndRequestReplayTheSameAnswer() throws Exception {
        String k = key("replay");
        Map<String, Object> req = runner(k, wgKey());
        Alloc first = alloc(t.user, req);
        try {
            Alloc again = alloc(t.user, req);
            assertThat(again.printed()).isEqualTo(first.printed());
        } finally {
            dealloc(k);
        }
    }

    @Test
    @Order(4)
    void theSameKeyWithAnotherRequestIsAConflict() throws Exception {
        String k = key("conflict");
        Alloc a = alloc(t.user, runner(k, wgKey()));
        try {
            Kubectl.Run r = t.user.createRaw(BASE + "/allocs", body(runner(k, wgKey())));
            assertThat(r.code()).isNotZero();
            assertThat(r.err()).contains("Error from server (Conflict)")
                    .contains("idempotency key was already used with a different request");
            // and the claim is unchanged
            assertThat(label(pod(a.namespace(), a.pod()), P + "allocated")).isNotNull();
        } finally {
            dealloc(k);
        }
    }

    @Test
    @Order(5)
    void deallocDeletesTheClaimedPod() throws Exception {
        String k = key("dealloc");
        Alloc a = alloc(t.user, runner(k, wgKey()));
        String id = label(pod(a.namespace(), a.pod()), P + "allocated");
        dealloc(k);
        awaitGone(a.namespace(), a.pod());
        assertThat(t.user.ok("get", "allocs", "-o", "name").lines()).doesNotContain("alloc.playpen.unbounded-cloud.io/" + id);
        // a dealloc of a key nobody holds is a 204 too
        dealloc(k);
    }

    @Test
    @Order(6)
    void usersGetAndDeleteTheirAllocationsAndAdminsSeeThemToo() throws Exception {
        String k = key("allocs");
        Alloc a = alloc(t.user, runner(k, wgKey()));
        String id = label(pod(a.namespace(), a.pod()), P + "allocated");
        JsonNode list = t.user.json("get", "allocs", "-o", "json");
        JsonNode mine = null;
        for (JsonNode item : list.path("items")) {
            if (item.at("/metadata/name").asText().equals(id)) {
                mine = item;
            }
        }
        assertThat(mine).as("alloc %s in the user's list", id).isNotNull();
        assertThat(mine.at("/status/pod").asText()).isEqualTo(a.pod());
        assertThat(mine.at("/spec/resourceType").asText()).isEqualTo("runner");
        assertThat(t.user.ok("get", "alloc", id, "-o", "jsonpath={.status.endpoint}"))
                .isEqualTo(a.answer().at("/endpoint/host").asText() + ":" + a.answer().at("/endpoint/wireGuardUDPPort").asInt());
        // the table kubectl prints
        assertThat(t.user.ok("get", "allocs")).contains(id).contains(a.pod());
        assertThat(t.admin.ok("get", "allocs", "-o", "name").lines()).contains("alloc.playpen.unbounded-cloud.io/" + id);

        assertThat(t.user.ok("delete", "alloc", id)).contains("alloc.playpen.unbounded-cloud.io \"" + id + "\" deleted");
        awaitGone(a.namespace(), a.pod());
        Kubectl.Run gone = t.user.run("get", "alloc", id);
        assertThat(gone.code()).isNotZero();
        assertThat(gone.err()).contains("Error from server (NotFound)");
    }

    @Test
    @Order(7)
    void aRenewalMovesTheExpiryOnThePod() throws Exception {
        String k = key("renew");
        Map<String, Object> req = runner(k, wgKey());
        req.put("ttl", "30m");
        Alloc a = alloc(t.user, req);
        try {
            JsonNode pod = pod(a.namespace(), a.pod());
            Instant claimedAt = Instant.parse(annotation(pod, P + "claimed-at"));
            Instant expiresAt = Instant.parse(a.answer().path("expiresAt").asText());
            assertThat(expiresAt).isEqualTo(claimedAt.plus(Duration.ofMinutes(30)));
            assertThat(Instant.parse(annotation(pod, P + "expires-at"))).isEqualTo(expiresAt);

            Kubectl.Run r = t.user.createRaw(BASE + "/renewals", "{\"idempotencyKey\":\"" + k + "\",\"ttl\":\"2h\"}");
            assertThat(r.code()).as(r.err()).isZero();
            Instant renewed = Instant.parse(JSON.readTree(r.out()).path("expiresAt").asText());
            assertThat(renewed).isAfter(expiresAt.plus(Duration.ofMinutes(60)));
            assertThat(Instant.parse(annotation(pod(a.namespace(), a.pod()), P + "expires-at"))).isEqualTo(renewed);
            String id = label(pod, P + "allocated");
            assertThat(Instant.parse(t.user.ok("get", "alloc", id, "-o", "jsonpath={.status.expiresAt}").trim()))
                    .isEqualTo(renewed);
            // a key nobody holds cannot be renewed
            Kubectl.Run unknown = t.user.createRaw(BASE + "/renewals", "{\"idempotencyKey\":\"" + k + "-nobody\"}");
            assertThat(unknown.err()).contains("Error from server (NotFound)");
        } finally {
            dealloc(k);
        }
    }

    @Test
    @Order(8)
    void moreWaitingRequestsThanIdleRunnersAreAllServedAsThePoolRefills() throws Exception {
        int idle = idleAmd64Runners();
        int n = idle + 2;
        List<String> ks = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            ks.add(key("wait" + i));
        }
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<CompletableFuture<Kubectl.Run>> runs = new ArrayList<>();
            for (String k : ks) {
                runs.add(CompletableFuture.supplyAsync(() -> t.user.createRaw(BASE + "/allocs", body(runner(k, wgKey()))),
                        pool));
            }
            Set<String> pods = new LinkedHashSet<>();
            for (CompletableFuture<Kubectl.Run> f : runs) {
                Kubectl.Run r = f.join();
                assertThat(r.code()).as("a waiting alloc (%d idle runners, %d requests at once): %s", idle, n, r.err()).isZero();
                pods.add(JSON.readTree(r.out()).at("/pod/name").asText());
            }
            // more pods than were idle: at least two requests were served by pods the pool made while they waited
            assertThat(pods).hasSize(n);
        } finally {
            pool.shutdownNow();
            for (String k : ks) {
                dealloc(k);
            }
        }
    }

    /** Runner pods of amd64 that are Running, unclaimed and have published their key. */
    static int idleAmd64Runners() {
        int idle = 0;
        for (JsonNode p : t.admin.json("get", "pods", "-n", runnerNamespace(), "-l",
                "app.kubernetes.io/name=playpen-runner," + P + "architecture=amd64", "-o", "json").path("items")) {
            if (p.at("/metadata/deletionTimestamp").isMissingNode() && label(p, P + "allocated") == null
                    && annotation(p, P + "server-wireguard-public-key") != null
                    && p.at("/status/phase").asText().equals("Running")) {
                idle++;
            }
        }
        return idle;
    }

    static int controlPlanePods() {
        return t.admin.json("get", "pods", "-n", runnerNamespace(), "-l", "app.kubernetes.io/name=playpen-control-plane",
                "-o", "json").path("items").size();
    }

    @Test
    @Order(9)
    void aControlPlaneAllocHandsOutItsKubeconfigPointedAtTheNode() throws Exception {
        if (Target.kindInstall()) {
            // kind/ keeps one warm control plane (--control-plane-count=1): none means its pool cannot create them
            Target.await(Duration.ofSeconds(180), "a control-plane pod of kind/'s pool (--control-plane-count=1)",
                    () -> controlPlanePods() > 0);
        }
        assumeTrue(controlPlanePods() > 0, "this installation keeps no control-plane pool (--control-plane-count=0)");
        String k = key("cp");
        Map<String, Object> req = new LinkedHashMap<>();
        req.put("idempotencyKey", k);
        req.put("resourceType", "controlPlane");
        req.put("waitSeconds", WAIT_SECONDS);
        Alloc a = alloc(t.user, req);
        try {
            JsonNode ans = a.answer();
            assertThat(ans.path("resourceType").asText()).isEqualTo("controlPlane");
            JsonNode pod = pod(a.namespace(), a.pod());
            assertThat(annotation(pod, P + "control-plane-kubeconfig")).isNotBlank();
            String url = "https://" + externalIp(pod.at("/spec/nodeName").asText()) + ":" + label(pod, P + "host-port");
            assertThat(ans.at("/endpoint/apiServerTCPPort").asInt()).isEqualTo(Integer.parseInt(label(pod, P + "host-port")));
            assertThat(ans.at("/controlPlane/apiServerURL").asText()).isEqualTo(url);
            JsonNode kubeconfig = YAML.readTree(ans.at("/controlPlane/kubeconfig").asText());
            assertThat(kubeconfig.path("clusters")).isNotEmpty();
            for (JsonNode c : kubeconfig.path("clusters")) {
                assertThat(c.at("/cluster/server").asText()).isEqualTo(url);
            }
            assertThat(ans.path("redfish").isNull()).isTrue();
        } finally {
            dealloc(k);
        }
    }

    @Test
    @Order(10)
    void aUserWithoutTheRoleIsForbidden() {
        Kubectl.Run r = t.denied.createRaw(BASE + "/allocs", body(runner(key("denied"), wgKey())));
        assertThat(r.code()).isNotZero();
        assertThat(r.err()).contains("Error from server (Forbidden)");
        Kubectl.Run list = t.denied.run("get", "allocs");
        assertThat(list.code()).isNotZero();
        assertThat(list.err()).contains("Error from server (Forbidden)");
    }

    @Test
    @Order(11)
    void aRunnerPodsTokenCannotWriteAnotherPod() throws Exception {
        assumeTrue(t.isCluster(), "the playground's API (a mock) has no admission policies and no service-account tokens");
        String k = key("token");
        Alloc a = alloc(t.user, runner(k, wgKey()));
        try {
            String ns = a.namespace();
            JsonNode mine = pod(ns, a.pod());
            String[] other = {null};
            Target.await(Duration.ofSeconds(90), "a second runner pod (the pool's refill)", () -> {
                for (JsonNode p : t.admin.json("get", "pods", "-n", ns, "-l", "app.kubernetes.io/name=playpen-runner", "-o", "json")
                        .path("items")) {
                    if (!p.at("/metadata/name").asText().equals(a.pod()) && p.at("/metadata/deletionTimestamp").isMissingNode()) {
                        other[0] = p.at("/metadata/name").asText();
                        return true;
                    }
                }
                return false;
            });
            String token = t.admin.ok("create", "token", mine.at("/spec/serviceAccountName").asText(), "-n", ns,
                    "--bound-object-kind=Pod", "--bound-object-name=" + a.pod(),
                    "--bound-object-uid=" + mine.at("/metadata/uid").asText(), "--duration=10m").trim();
            Kubectl runnerPod = tokenIdentity(token);
            String publish = "{\"metadata\":{\"annotations\":{\"" + P + "network-ready\":\"e2e\"}}}";
            // what a runner does: write its own annotations on its own pod (dry run: nothing is stored)
            Kubectl.Run own = runnerPod.run("patch", "pod", a.pod(), "-n", ns, "--type=merge", "-p", publish, "--dry-run=server");
            assertThat(own.code()).as("the runner's own write: %s", own.err()).isZero();
            // what the policy exists for
            Kubectl.Run mitm = runnerPod.run("patch", "pod", other[0], "-n", ns, "--type=merge", "-p",
                    "{\"metadata\":{\"annotations\":{\"" + P + "server-wireguard-public-key\":\"" + wgKey() + "\"}}}",
                    "--dry-run=server");
            assertThat(mitm.code()).isNotZero();
            assertThat(mitm.err()).contains("ValidatingAdmissionPolicy").contains("playpen-runner-own-pod")
                    .contains("may only change the pod their service-account token is bound to");
            Kubectl.Run release = runnerPod.run("patch", "pod", a.pod(), "-n", ns, "--type=merge", "-p",
                    "{\"metadata\":{\"annotations\":{\"" + P + "idempotency-key-hash\":null}}}", "--dry-run=server");
            assertThat(release.code()).isNotZero();
            assertThat(release.err()).contains("may only change the annotations");
            // deletes are refused already by RBAC (get and patch only), before the policy would refuse them
            Kubectl.Run delete = runnerPod.run("delete", "pod", other[0], "-n", ns, "--dry-run=server");
            assertThat(delete.code()).isNotZero();
            assertThat(delete.err()).contains("Error from server (Forbidden)");
        } finally {
            dealloc(k);
        }
    }

    /** A kubeconfig holding only a bearer token for the admin kubeconfig's cluster (no client certificate to fall back on). */
    static Kubectl tokenIdentity(String token) throws IOException {
        JsonNode cfg = t.admin.json("config", "view", "--raw", "--minify", "-o", "json");
        JsonNode cluster = cfg.at("/clusters/0/cluster");
        ObjectNode c = JSON.createObjectNode().put("server", cluster.path("server").asText());
        if (cluster.hasNonNull("certificate-authority-data")) {
            c.put("certificate-authority-data", cluster.path("certificate-authority-data").asText());
        } else if (cluster.hasNonNull("certificate-authority")) {
            c.put("certificate-authority", cluster.path("certificate-authority").asText());
        }
        if (cluster.hasNonNull("tls-server-name")) {
            c.put("tls-server-name", cluster.path("tls-server-name").asText());
        }
        ObjectNode kc = JSON.createObjectNode().put("apiVersion", "v1").put("kind", "Config")
                .put("current-context", "runner");
        kc.putArray("clusters").addObject().put("name", "cluster").set("cluster", c);
        kc.putArray("users").addObject().put("name", "runner").putObject("user").put("token", token);
        kc.putArray("contexts").addObject().put("name", "runner").putObject("context").put("cluster", "cluster")
                .put("user", "runner");
        Path file = Files.createTempFile(t.work, "runner-token-", ".kubeconfig",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.writeString(file, JSON.writeValueAsString(kc));
        t.onClose(() -> {
            try {
                Files.deleteIfExists(file);
            } catch (IOException e) {
                // left in target/
            }
        });
        return new Kubectl(t.admin.binary(), file, List.of(), t.work, "runner-token");
    }

    @Test
    @Order(12)
    void theServingCertificateIsInjectedIntoTheApiServiceCaBundleAndServed() throws Exception {
        JsonNode api = t.apiService();
        List<X509Certificate> bundle = caBundle(api);
        assertThat(bundle).isNotEmpty();
        X509Certificate secret = secretCertificate();
        assertThat(bundle).contains(secret);
        if (t.isCluster()) {
            // kube-apiserver's aggregator checked it: the APIService is Available
            boolean available = false;
            for (JsonNode c : api.at("/status/conditions")) {
                available |= c.path("type").asText().equals("Available") && c.path("status").asText().equals("True");
            }
            assertThat(available).as("APIService Available condition").isTrue();
        }
        assertThat(servedCertificates()).containsOnly(secret);
        assertThat(api.at("/spec/insecureSkipTLSVerify").asBoolean(false)).isFalse();
    }

    static List<X509Certificate> caBundle(JsonNode api) {
        String b64 = api.at("/spec/caBundle").asText("");
        return b64.isEmpty() ? List.of()
                : Pki.parseCertificates(new String(Base64.getDecoder().decode(b64), StandardCharsets.US_ASCII));
    }

    static String tlsSecret() {
        return Target.prop("e2e.tlsSecret", "playpen-operator-tls");
    }

    static X509Certificate secretCertificate() {
        JsonNode s = t.admin.json("get", "secret", tlsSecret(), "-n", t.operatorNamespace(), "-o", "json");
        return Pki.parseCertificates(new String(Base64.getDecoder().decode(s.at("/data/tls.crt").asText()),
                StandardCharsets.US_ASCII)).get(0);
    }

    /** The certificate each ready replica presents to a TLS client naming the Service (as the aggregator does). */
    static Set<X509Certificate> servedCertificates() throws Exception {
        Set<X509Certificate> out = new LinkedHashSet<>();
        String sni = t.serviceName() + "." + t.operatorNamespace() + ".svc";
        List<Target.Endpoint> eps = t.operatorHttps();
        try {
            assertThat(eps).as("ready operator replicas").isNotEmpty();
            for (Target.Endpoint ep : eps) {
                out.add(peerCertificate(ep.host(), ep.port(), sni));
            }
        } finally {
            for (Target.Endpoint ep : eps) {
                ep.close();
            }
        }
        return out;
    }

    static X509Certificate peerCertificate(String host, int port, String sni) throws Exception {
        TrustManager trustAll = new X509TrustManager() {
            @Override
            public void checkClientTrusted(X509Certificate[] chain, String authType) {
            }

            @Override
            public void checkServerTrusted(X509Certificate[] chain, String authType) {
                // only looking: the caller compares the certificate with the caBundle and the Secret
            }

            @Override
            public X509Certificate[] getAcceptedIssuers() {
                return new X509Certificate[0];
            }
        };
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, new TrustManager[] {trustAll}, null);
        try (Socket raw = new Socket(host, port);
             SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket(raw, host, port, true)) {
            SSLParameters p = s.getSSLParameters();
            p.setServerNames(List.of(new SNIHostName(sni)));
            s.setSSLParameters(p);
            s.setSoTimeout(10_000);
            s.startHandshake();
            return (X509Certificate) s.getSession().getPeerCertificates()[0];
        }
    }

    @Test
    @Order(13)
    void metricsAreScrapedFromEveryReplica() throws Exception {
        double before = allocs200();
        String k = key("metrics");
        alloc(t.user, runner(k, wgKey()));
        try {
            double after = allocs200();
            assertThat(after).isGreaterThanOrEqualTo(before + 1);
        } finally {
            dealloc(k);
        }
    }

    /** Sum over every replica's /metrics of playpen_alloc_requests_total{code="200"}; each scrape is checked. */
    static double allocs200() throws Exception {
        List<Target.Endpoint> eps = t.operatorManagement();
        assertThat(eps).as("management endpoints").isNotEmpty();
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
        double sum = 0;
        boolean allocRoute = false;
        try {
            for (Target.Endpoint ep : eps) {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(
                        URI.create("http://" + ep.host() + ":" + ep.port() + "/metrics")).timeout(Duration.ofSeconds(20))
                        .build(), HttpResponse.BodyHandlers.ofString());
                assertThat(r.statusCode()).as("GET /metrics on %s", ep.replica()).isEqualTo(200);
                assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("text/plain");
                assertThat(r.body()).contains("playpen_ready 1").contains("camel_exchanges_total{");
                // a replica that has not served an alloc yet may have no alloc route meters
                allocRoute |= r.body().contains("routeId=\"alloc\"");
                for (String line : r.body().lines().toList()) {
                    if (line.startsWith("playpen_alloc_requests_total{") && line.contains("code=\"200\"")) {
                        sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                    }
                }
            }
        } finally {
            for (Target.Endpoint ep : eps) {
                ep.close();
            }
        }
        assertThat(allocRoute).as("the alloc route's meters on some replica").isTrue();
        return sum;
    }

    @Test
    @Order(14)
    void theServingCertificateRotatesWithoutARestart() throws Exception {
        String ns = t.operatorNamespace();
        String svc = t.serviceName();
        JsonNode original = t.admin.json("get", "secret", tlsSecret(), "-n", ns, "-o", "json");
        X509Certificate old = secretCertificate();
        // an admin's own certificate for the Service (what cert-manager would put there); short-lived: the operator
        // keeps certificates it published in the caBundle until they expire
        Pki.Issued mine = Pki.selfSigned(new Pki.Subject(svc, List.of(), List.of(svc, svc + "." + ns,
                svc + "." + ns + ".svc", svc + "." + ns + ".svc.cluster.local", "localhost"), List.of()),
                Pki.Usage.SERVER, Instant.now().minus(Duration.ofMinutes(5)), Duration.ofHours(2));
        ObjectNode replaced = JSON.createObjectNode().put("apiVersion", "v1").put("kind", "Secret")
                .put("type", "kubernetes.io/tls");
        replaced.putObject("metadata").put("name", tlsSecret()).put("namespace", ns);
        replaced.putObject("data").put("tls.crt", b64(mine.certificatePem())).put("tls.key", b64(mine.privateKeyPem()));
        replaceSecret(replaced);
        try {
            awaitServed(mine.certificate());
            assertThat(caBundle(t.apiService())).contains(mine.certificate());
            // kube-apiserver still reaches every replica: allocations work
            String k = key("rotation");
            alloc(t.user, runner(k, wgKey()));
            dealloc(k);
        } finally {
            // leave the installation as it was
            ObjectNode back = original.deepCopy();
            ObjectNode md = (ObjectNode) back.path("metadata");
            md.remove(List.of("resourceVersion", "uid", "creationTimestamp", "managedFields", "generation"));
            replaceSecret(back);
        }
        awaitServed(old);
    }

    static String b64(String s) {
        return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.US_ASCII));
    }

    static void replaceSecret(JsonNode secret) throws IOException {
        Path file = Files.createTempFile(t.work, "secret-", ".json",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        try {
            Files.writeString(file, JSON.writeValueAsString(secret));
            // the playground serves no OpenAPI for built-in kinds, which kubectl's client-side validation needs
            t.admin.ok("replace", "-f", file.toString(), t.isCluster() ? "--validate=strict" : "--validate=false");
        } finally {
            Files.deleteIfExists(file);
        }
    }

    static void awaitServed(X509Certificate cert) throws InterruptedException {
        String[] seen = {""};
        Target.await(Duration.ofSeconds(120), "every replica to serve the certificate of the Secret (subject "
                + cert.getSubjectX500Principal() + ", serial " + cert.getSerialNumber() + ")", () -> {
                    try {
                        Set<X509Certificate> served = servedCertificates();
                        seen[0] = served.stream().map(c -> c.getSerialNumber().toString()).toList().toString();
                        return served.equals(Set.of(cert)) && caBundle(t.apiService()).contains(cert);
                    } catch (Exception e) {
                        seen[0] = e.toString();
                        return false;
                    }
                }, () -> "serials served " + seen[0]);
    }

    @Test
    @Order(15)
    void deletingTheLeaderPodHandsTheLeaseToAnotherReplica() throws Exception {
        assumeTrue(t.isCluster(), "the playground runs its operator inside its own process: no operator pods to delete");
        if (Target.kindInstall()) {
            // kind/ runs two replicas; one an earlier case left unready (the rotation's wait for the caBundle) gets
            // its time to be ready again
            Target.await(Duration.ofSeconds(180), "two ready operator replicas (kind/ runs two)",
                    () -> t.readyOperatorPods().size() >= 2, () -> "ready: " + t.readyOperatorPods());
        }
        List<String> pods = t.readyOperatorPods();
        assumeTrue(pods.size() >= 2, "only " + pods.size() + " ready operator replica(s): nothing to hand over to");
        String ns = t.operatorNamespace();
        String lease = Target.prop("e2e.lease", "playpen-operator");
        String holder = t.admin.ok("get", "lease", lease, "-n", ns, "-o", "jsonpath={.spec.holderIdentity}").trim();
        String leader = pods.stream().filter(p -> holder.startsWith(p + "-")).findFirst()
                .orElseThrow(() -> new AssertionError("Lease holder " + holder + " is none of the ready pods " + pods));
        t.admin.ok("delete", "pod", leader, "-n", ns, "--wait=false");
        String[] now = {holder};
        Target.await(Duration.ofSeconds(120), "another replica to hold the Lease", () -> {
            Kubectl.Run r = t.admin.run("get", "lease", lease, "-n", ns, "-o", "jsonpath={.spec.holderIdentity}");
            now[0] = r.out().trim();
            return r.ok() && !now[0].isEmpty() && !now[0].startsWith(leader + "-");
        }, () -> now[0]);
        // held by a live replica: the other one, or the Deployment's replacement if it came up first
        List<String> live = t.admin.ok("get", "pods", "-n", ns, "-o", "jsonpath={.items[*].metadata.name}").lines()
                .flatMap(l -> java.util.Arrays.stream(l.trim().split("\\s+"))).toList();
        assertThat(live).anyMatch(p -> !p.equals(leader) && now[0].startsWith(p + "-"));
        // the new leader does the leader's work: a claim is refilled
        int idleBefore = idleAmd64Runners();
        String k = key("handover");
        alloc(t.user, runner(k, wgKey()));
        try {
            Target.await(Duration.ofSeconds(120), "the pool to be refilled by the new leader",
                    () -> idleAmd64Runners() >= Math.max(1, idleBefore));
        } finally {
            dealloc(k);
        }
        Target.await(Duration.ofSeconds(180), pods.size() + " ready operator replicas again",
                () -> t.readyOperatorPods().size() >= pods.size());
    }

    @Test
    @Order(16)
    void theGoOperatorsDeploymentArgsStartTheImage() throws Exception {
        assumeTrue(t.isCluster(), "the playground runs no container images");
        GoDeployment.run(t);
    }

    @Test
    @Order(17)
    void thePoolsAreServedWithTheirSpecAndConditions() {
        String names = t.user.ok("api-resources", "--api-group=playpen.unbounded-cloud.io", "-o", "name");
        assertThat(names.lines()).as("kubectl api-resources").contains("pools.playpen.unbounded-cloud.io");
        // as docs/pools.md shows them: every runner pool listed (one the flags want no pod of too), its flags in
        // spec and the three conditions in status
        JsonNode items = t.admin.json("get", "pools", "-o", "json").path("items");
        for (String arch : List.of("amd64", "arm64")) {
            JsonNode pool = null;
            for (JsonNode p : items) {
                if (p.at("/metadata/name").asText().equals("runner-" + arch)) {
                    pool = p;
                }
            }
            assertThat(pool).as("pool runner-%s in %s", arch, items).isNotNull();
            assertThat(pool.at("/kind").asText()).isEqualTo("Pool");
            assertThat(pool.at("/spec/resourceType").asText()).isEqualTo("runner");
            assertThat(pool.at("/spec/architecture").asText()).isEqualTo(arch);
            assertThat(pool.at("/spec/minIdle").isInt()).as("spec.minIdle of %s", pool).isTrue();
            assertThat(pool.at("/spec/templateHash").asText()).isNotEmpty();
            assertThat(pool.at("/status/desired").isInt()).as("status.desired of %s", pool).isTrue();
            List<String> conditions = new ArrayList<>();
            pool.at("/status/conditions").forEach(c -> conditions.add(c.path("type").asText()));
            assertThat(conditions).containsExactlyInAnyOrder("Ready", "Progressing", "Degraded");
        }
    }
}
