package io.unboundedcloud.playpen.fakerunner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.unboundedcloud.playpen.config.OperatorConfig;
import io.unboundedcloud.playpen.kube.KubeClients;
import io.unboundedcloud.playpen.model.KubeconfigRewriter;
import io.unboundedcloud.playpen.model.PlaypenKeys;
import io.unboundedcloud.playpen.model.PodTemplates;
import io.unboundedcloud.playpen.support.TestCluster;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * The stand-in runner against the fabric8 mock API: started with exactly the command lines the operator's pod templates
 * give its containers, it publishes what the runner publishes on its own pod with one GET and one merge PATCH (none
 * after a restart with the same key), serves the published Redfish certificate on its probe port, and plays k3s and the
 * control-plane helper so that a control plane gets a kubeconfig the operator can rewrite.
 */
class FakeRunnerTest {
    static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    static OperatorConfig config;

    TestCluster cluster;
    final List<AutoCloseable> started = new ArrayList<>();

    @BeforeEach
    void up() throws Exception {
        config = OperatorConfig.parse("--runner-namespace=" + TestCluster.NS);
        cluster = TestCluster.start();
    }

    @AfterEach
    void down() throws Exception {
        for (AutoCloseable c : started) {
            c.close();
        }
        cluster.close();
    }

    @TempDir
    Path data;

    FakeRunner.Places places() {
        return new FakeRunner.Places(0, 0, data);
    }

    Supplier<KubernetesClient> clients() {
        return () -> KubeClients.create(new ConfigBuilder().withMasterUrl(cluster.server.url("/"))
                .withNamespace(TestCluster.NS).withTrustCerts(true).build());
    }

    /** The container's command line after the binary, as the fake runner's main gets it from the image's launcher. */
    static String[] argsOf(Container c) {
        return c.getArgs().toArray(String[]::new);
    }

    static Map<String, String> envOf(Pod pod) {
        return Map.of("POD_NAME", pod.getMetadata().getName(), "POD_NAMESPACE", pod.getMetadata().getNamespace());
    }

    AutoCloseable start(String[] args, Map<String, String> env) throws Exception {
        AutoCloseable c = FakeRunner.start(FakeRunner.parse(args), env, places(), clients());
        started.add(c);
        return c;
    }

    static Path withKeyFile(Path dir, String[] args) {
        for (int i = 0; i < args.length; i++) {
            if (args[i].startsWith("--wireguard-private-key-file=")) {
                args[i] = "--wireguard-private-key-file=" + dir.resolve("privatekey");
            }
        }
        return dir.resolve("privatekey");
    }

    @Test
    void theTemplatesCommandLinesAreUnderstood() throws Exception {
        PodTemplates templates = new PodTemplates(config, Map.of());
        Pod runner = templates.runner("arm64", 51830);
        Container rc = runner.getSpec().getContainers().get(0);
        assertThat(rc.getCommand()).containsExactly("/unbounded/bin/playpen-runner");
        FakeRunner.Invocation r = FakeRunner.parse(argsOf(rc));
        assertThat(r.role()).isEqualTo(FakeRunner.Role.RUNNER);
        assertThat(r.one("architecture")).isEqualTo("arm64");
        assertThat(r.one("wireguard-private-key-file")).isEqualTo("/etc/playpen/wireguard/privatekey");

        Pod cp = templates.controlPlane("v1.33.0", 16443);
        Container k3s = cp.getSpec().getContainers().get(0);
        Container helper = cp.getSpec().getContainers().get(1);
        assertThat(k3s.getCommand()).containsExactly("/bin/k3s");
        FakeRunner.Invocation k = FakeRunner.parse(concat("k3s", argsOf(k3s)));
        assertThat(k.role()).isEqualTo(FakeRunner.Role.K3S);
        assertThat(k.one("write-kubeconfig")).isEqualTo("/etc/rancher/k3s/k3s.yaml");
        assertThat(k.all("tls-san")).containsExactly("192.168.200.1");
        assertThat(helper.getCommand()).containsExactly("/unbounded/bin/playpen-runner");
        FakeRunner.Invocation h = FakeRunner.parse(argsOf(helper));
        assertThat(h.role()).isEqualTo(FakeRunner.Role.CONTROL_PLANE);
        assertThat(h.one("guest-server")).isEqualTo("https://192.168.200.1:6443");
        assertThat(h.one("kubernetes-version")).isEqualTo("v1.33.0");
    }

    static String[] concat(String first, String[] rest) {
        String[] out = new String[rest.length + 1];
        out[0] = first;
        System.arraycopy(rest, 0, out, 1, rest.length);
        return out;
    }

    @Test
    void badCommandLinesNameTheFlagAndExit2() throws Exception {
        assertThatThrownBy(() -> FakeRunner.parse("--architecture=amd64", "--vm-memory=4Gi"))
                .hasMessage("unknown flag --vm-memory for the runner stand-in");
        assertThatThrownBy(() -> FakeRunner.parse("--wireguard-listen-port=51820")).hasMessage("flag --architecture is required");
        assertThatThrownBy(() -> FakeRunner.parse("control-plane", "--kubeconfig=/k")).hasMessage("flag --guest-server is required");
        assertThatThrownBy(() -> FakeRunner.parse("k3s", "agent")).hasMessage("the k3s stand-in runs only as `k3s server`");
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int code = FakeRunner.run(new String[] {"--architecture"}, Map.of(), new PrintStream(out), new PrintStream(err));
        assertThat(code).isEqualTo(2);
        assertThat(err.toString(StandardCharsets.UTF_8)).isEqualTo("playpen-operator fake-runner: flag --architecture needs a value\n");
        assertThat(FakeRunner.run(new String[] {"--help"}, Map.of(), new PrintStream(out), new PrintStream(err))).isZero();
        assertThat(out.toString(StandardCharsets.UTF_8)).startsWith("Usage: playpen-operator fake-runner");
        // the runner needs its pod's name from the downward API
        err.reset();
        assertThat(FakeRunner.run(new String[] {"--architecture=amd64"}, Map.of("POD_NAMESPACE", "playpen"),
                new PrintStream(out), new PrintStream(err))).isEqualTo(1);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("POD_NAME is not set");
    }

    @Test
    void aRunnerPublishesItsKeyAndTheCertificateItServesOnItsOwnPodOnly(@TempDir Path dir) throws Exception {
        PodTemplates templates = new PodTemplates(config, Map.of());
        Pod mine = cluster.client.pods().resource(templates.runner("amd64", 51820)).create();
        Pod other = cluster.client.pods().resource(templates.runner("amd64", 51821)).create();
        String[] args = argsOf(mine.getSpec().getContainers().get(0));
        Path keyFile = withKeyFile(dir, args);

        AutoCloseable runner = start(args, envOf(mine));
        Map<String, Integer> calls = cluster.requestSnapshot();

        Map<String, String> published = cluster.client.pods().withName(mine.getMetadata().getName()).get().getMetadata()
                .getAnnotations();
        String key = published.get(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY);
        assertThat(Base64.getDecoder().decode(key)).hasSize(32);
        assertThat(published).containsKey(PlaypenKeys.REDFISH_CERT_PEM)
                .containsEntry(PlaypenKeys.SET_KUBE_SERVICE_HOST_FQDN, "true");
        assertThat(published.keySet()).containsExactlyInAnyOrder(PlaypenKeys.SET_KUBE_SERVICE_HOST_FQDN,
                PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, PlaypenKeys.REDFISH_CERT_PEM);
        assertThat(cluster.client.pods().withName(other.getMetadata().getName()).get().getMetadata().getAnnotations())
                .doesNotContainKey(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY);
        // one GET and one merge PATCH of its own pod, nothing else
        String own = "/api/v1/namespaces/playpen/pods/" + mine.getMetadata().getName();
        assertThat(calls).containsEntry("GET " + own, 1).containsEntry("PATCH " + own, 1);
        assertThat(calls.keySet()).filteredOn(k -> k.contains(other.getMetadata().getName())).isEmpty();

        // the private key stays in the emptyDir file, owner-only
        assertThat(Files.getPosixFilePermissions(keyFile)).isEqualTo(PosixFilePermissions.fromString("rw-------"));
        // the Redfish certificate in the annotation is the one the probe port serves
        X509Certificate cert = Pki.parseCertificates(published.get(PlaypenKeys.REDFISH_CERT_PEM)).get(0);
        int port = ((ProbeServerHolder) () -> runner).port();
        HttpResponse<String> healthz = trusting(cert).send(HttpRequest.newBuilder(
                URI.create("https://localhost:" + port + "/healthz")).timeout(Duration.ofSeconds(60)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(healthz.statusCode()).isEqualTo(200);
        assertThat(healthz.body()).isEqualTo("ok");

        // a restarted container (same emptyDir) finds its key published and writes nothing
        runner.close();
        started.remove(runner);
        int gets = cluster.requestSnapshot().get("GET " + own);
        AutoCloseable restarted = start(args, envOf(mine));
        assertThat(cluster.requestSnapshot()).containsEntry("GET " + own, gets + 1).containsEntry("PATCH " + own, 1);
        assertThat(((ProbeServerHolder) () -> restarted).port()).isPositive();
        assertThat(cluster.client.pods().withName(mine.getMetadata().getName()).get().getMetadata().getAnnotations())
                .containsEntry(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, key);
    }

    /** The probe port of a started runner (its AutoCloseable is the probe server). */
    @FunctionalInterface
    interface ProbeServerHolder {
        AutoCloseable get();

        default int port() {
            return ((ProbeServer) get()).port();
        }
    }

    @Test
    void aRefusedWriteStopsTheStandInWithTheServersReason(@TempDir Path dir) throws Exception {
        Pod mine = cluster.client.pods().resource(new PodTemplates(config, Map.of()).runner("amd64", 51820)).create();
        String[] args = argsOf(mine.getSpec().getContainers().get(0));
        withKeyFile(dir, args);
        cluster.forbidden = k -> k.startsWith("PATCH ");
        assertThatThrownBy(() -> FakeRunner.start(FakeRunner.parse(args), envOf(mine), places(), clients()))
                .isInstanceOf(OwnPodPublisher.Refused.class)
                .hasMessageContaining("HTTP 403").hasMessageContaining("forbidden by the test's RBAC");
    }

    @Test
    void aControlPlanePodGetsAKubeconfigFromTheK3sStandInThatTheOperatorCanHandOut(@TempDir Path dir) throws Exception {
        Pod cp = cluster.client.pods().resource(new PodTemplates(config, Map.of()).controlPlane("v1.33.0", 16443)).create();
        Path kubeconfig = dir.resolve("rancher/k3s/k3s.yaml");
        String[] k3sArgs = concat("k3s", argsOf(cp.getSpec().getContainers().get(0)));
        String[] helperArgs = argsOf(cp.getSpec().getContainers().get(1));
        for (String[] a : List.of(k3sArgs, helperArgs)) {
            for (int i = 0; i < a.length; i++) {
                a[i] = a[i].replace("/etc/rancher/k3s/k3s.yaml", kubeconfig.toString());
            }
        }
        StandInK3s k3s = (StandInK3s) start(k3sArgs, Map.of());
        assertThat(Files.getPosixFilePermissions(kubeconfig)).isEqualTo(PosixFilePermissions.fromString("rw-r--r--"));
        String written = Files.readString(kubeconfig);
        JsonNode doc = YAML.readTree(written);
        assertThat(doc.at("/clusters/0/cluster/server").asText()).isEqualTo("https://127.0.0.1:6443");

        // the probe endpoint's certificate chains to the kubeconfig's CA and names the guest gateway (--tls-san)
        X509Certificate ca = Pki.parseCertificates(new String(Base64.getDecoder().decode(
                doc.at("/clusters/0/cluster/certificate-authority-data").asText()), StandardCharsets.US_ASCII)).get(0);
        HttpResponse<String> readyz = trusting(ca).send(HttpRequest.newBuilder(
                URI.create("https://127.0.0.1:" + k3s.port() + "/readyz")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(readyz.statusCode()).isEqualTo(200);

        start(helperArgs, envOf(cp));
        Map<String, String> published = cluster.client.pods().withName(cp.getMetadata().getName()).get().getMetadata()
                .getAnnotations();
        assertThat(published).containsEntry(PlaypenKeys.CONTROL_PLANE_KUBECONFIG, written)
                .containsEntry(PlaypenKeys.CONTROL_PLANE_GUEST_SERVER, "https://192.168.200.1:6443");
        // the guest-server annotation was already the template's: only the kubeconfig is written
        String own = "/api/v1/namespaces/playpen/pods/" + cp.getMetadata().getName();
        assertThat(cluster.requestSnapshot()).containsEntry("PATCH " + own, 1);
        String handedOut = KubeconfigRewriter.rewrite(written, "https://203.0.113.10:16443", "192.168.200.1");
        assertThat(YAML.readTree(handedOut).at("/clusters/0/cluster/server").asText()).isEqualTo("https://203.0.113.10:16443");
    }

    @Test
    void onlyChangedAnnotationsAreWritten() {
        Map<String, String> wanted = FakeRunner.runnerAnnotations("K", "PEM");
        assertThat(OwnPodPublisher.changes(null, wanted)).isEqualTo(wanted);
        assertThat(OwnPodPublisher.changes(Map.of(PlaypenKeys.SERVER_WIREGUARD_PUBLIC_KEY, "K", "x", "y"), wanted))
                .containsExactly(Map.entry(PlaypenKeys.REDFISH_CERT_PEM, "PEM"));
        assertThat(OwnPodPublisher.mergePatch(Map.of("a", "b"))).isEqualTo("{\"metadata\":{\"annotations\":{\"a\":\"b\"}}}");
        assertThat(OwnPodPublisher.permanent(403)).isTrue();
        assertThat(OwnPodPublisher.permanent(409)).isFalse();
        assertThat(OwnPodPublisher.permanent(503)).isFalse();
    }

    @Test
    void aKeyFileIsReusedAndAMalformedOneReplaced(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("wg/privatekey");
        String first = WireGuardKey.loadOrCreate(f).publicKeyBase64();
        assertThat(WireGuardKey.loadOrCreate(f).publicKeyBase64()).isEqualTo(first);
        // RFC 7748 section 6.1 test vector: Alice's private key and public key
        Files.writeString(f, Base64.getEncoder().encodeToString(java.util.HexFormat.of()
                .parseHex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")) + "\n");
        assertThat(Base64.getDecoder().decode(WireGuardKey.loadOrCreate(f).publicKeyBase64())).isEqualTo(
                java.util.HexFormat.of().parseHex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"));
        Files.writeString(f, "not a key\n");
        String replaced = WireGuardKey.loadOrCreate(f).publicKeyBase64();
        assertThat(Base64.getDecoder().decode(replaced)).hasSize(32);
        assertThat(Files.readString(f)).isNotEqualTo("not a key\n");
    }

    static HttpClient trusting(X509Certificate anchor) throws Exception {
        KeyStore ts = KeyStore.getInstance("PKCS12");
        ts.load(null, null);
        ts.setCertificateEntry("anchor", anchor);
        TrustManagerFactory tmf = TrustManagerFactory.getInstance("PKIX");
        tmf.init(ts);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        return HttpClient.newBuilder().sslContext(ctx).connectTimeout(Duration.ofSeconds(5)).build();
    }
}
