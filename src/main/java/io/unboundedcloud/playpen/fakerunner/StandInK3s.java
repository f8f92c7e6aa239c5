package io.unboundedcloud.playpen.fakerunner;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

import io.unboundedcloud.playpen.dev.Kubeconfigs;
import io.unboundedcloud.playpen.tls.Pki;

/**
 * Stands in for {@code k3s server} in a control-plane pod: writes an admin kubeconfig where k3s writes it
 * ({@code --write-kubeconfig}, with {@code --write-kubeconfig-mode}), for the helper container to publish, and answers
 * the kubelet's HTTPS probes on the API server port with a certificate for {@code --tls-san}. No Kubernetes API is
 * served: an allocation of it is a well-formed answer whose cluster does nothing.
 */
final class StandInK3s implements AutoCloseable {
    private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");

    private final ProbeServer server;

    private StandInK3s(ProbeServer server) {
        this.server = server;
    }

    /** What k3s would be started with (the flags of the control-plane pod template). */
    record Flags(Path writeKubeconfig, String writeKubeconfigMode, List<String> tlsSans, String advertiseAddress,
            String bindAddress) {
    }

    static StandInK3s start(Flags flags, int port) throws IOException {
        Instant notBefore = Instant.now().minus(1, ChronoUnit.MINUTES);
        Pki.Issued ca = Pki.selfSigned(Pki.Subject.cn("k3s-server-ca"), Pki.Usage.CA, notBefore, Duration.ofDays(3650));
        List<String> dns = new ArrayList<>(List.of("localhost", "kubernetes", "kubernetes.default",
                "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"));
        List<String> ips = new ArrayList<>(List.of("127.0.0.1"));
        List<String> sans = new ArrayList<>(flags.tlsSans());
        if (flags.advertiseAddress() != null) {
            sans.add(flags.advertiseAddress());
        }
        for (String san : sans) {
            List<String> into = IPV4.matcher(san).matches() || san.contains(":") ? ips : dns;
            if (!into.contains(san)) {
                into.add(san);
            }
        }
        Pki.Issued serving = Pki.issue(ca, new Pki.Subject("k3s", List.of(), dns, ips), Pki.Usage.SERVER, notBefore,
                Duration.ofDays(365));
        Pki.Issued admin = Pki.issue(ca, new Pki.Subject("system:admin", List.of("system:masters"), List.of(), List.of()),
                Pki.Usage.CLIENT, notBefore, Duration.ofDays(365));
        String server = "https://127.0.0.1:" + (port == 0 ? 6443 : port);
        writeKubeconfig(flags.writeKubeconfig(), flags.writeKubeconfigMode(),
                Kubeconfigs.withClientCertificate("default", server, ca.certificatePem(), "default", admin, null));
        String bind = flags.bindAddress() == null || flags.bindAddress().isBlank() ? "0.0.0.0" : flags.bindAddress();
        return new StandInK3s(new ProbeServer(bind, port, serving, ca.certificate()));
    }

    int port() {
        return server.port();
    }

    /**
     * Written whole (temp file, then rename), so the helper never publishes half a kubeconfig. The temp file is a new
     * file with a name of its own, readable by its owner only from its creation: a file or link planted beside the
     * kubeconfig is never written through, and nobody else can open the admin credentials while they are written.
     * The requested mode is applied before the rename.
     */
    static void writeKubeconfig(Path file, String mode, String content) throws IOException {
        Set<PosixFilePermission> wanted = permissions(mode == null || mode.isBlank() ? "0600" : mode);
        Path dir = file.toAbsolutePath().getParent();
        Files.createDirectories(dir);
        boolean posix = dir.getFileSystem().supportedFileAttributeViews().contains("posix");
        Path tmp = posix
                ? Files.createTempFile(dir, "." + file.getFileName() + ".", ".tmp",
                        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))
                : Files.createTempFile(dir, "." + file.getFileName() + ".", ".tmp");
        try {
            Files.writeString(tmp, content, StandardCharsets.UTF_8);
            if (posix) {
                Files.setPosixFilePermissions(tmp, wanted);
            }
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /** An octal mode such as 0644 as POSIX permissions; anything else is an error naming the flag. */
    static Set<PosixFilePermission> permissions(String octal) {
        if (!octal.matches("0?[0-7]{3}")) {
            throw new IllegalArgumentException("--write-kubeconfig-mode must be an octal mode such as 0644, not " + octal);
        }
        String digits = octal.substring(octal.length() - 3);
        StringBuilder rwx = new StringBuilder();
        for (char c : digits.toCharArray()) {
            int v = c - '0';
            rwx.append((v & 4) != 0 ? 'r' : '-').append((v & 2) != 0 ? 'w' : '-').append((v & 1) != 0 ? 'x' : '-');
        }
        return PosixFilePermissions.fromString(rwx.toString());
    }

    @Override
    public void close() {
        server.close();
    }
}
