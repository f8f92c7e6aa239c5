package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

import org.junit.jupiter.api.Test;

import io.unboundedcloud.playpen.support.OperatorHarness;
import io.unboundedcloud.playpen.support.TestCluster;

/** Without a routes folder the operator runs the routes packaged in the jar; a folder reached through a link is read. */
class RoutesFallbackRouteTest {
    @Test
    void packagedRoutesServeWhenTheFolderIsAbsent() throws Exception {
        try (TestCluster cluster = TestCluster.start();
                OperatorHarness op = new OperatorHarness(cluster, "--routes-dir=target/no-such-routes-folder")) {
            assertThat(op.app.routesPattern()).isEqualTo("classpath:routes/*.camel.yaml");
            assertThat(op.app.camelContext().getRoutes()).extracting(r -> r.getRouteId())
                    .contains("https-ingress", "alloc", "dealloc", "discovery", "health", "pool-reconcile", "ttl-expiry");
            HttpResponse<String> d = op.frontProxy().send(HttpRequest.newBuilder(
                    URI.create(op.url("/apis/playpen.unbounded-cloud.io/v1alpha1"))).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(d.statusCode()).isEqualTo(200);
            assertThat(d.body()).contains("\"allocs\"");
        }
    }

    /** A routes folder reached through a symbolic link (a mounted volume, a link in a checkout) has its routes read. */
    @Test
    void aRoutesFolderBehindASymbolicLinkIsRead() throws Exception {
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory(java.nio.file.Path.of("target"), "routes-link-");
        java.nio.file.Path link = dir.resolve("routes");
        java.nio.file.Files.createSymbolicLink(link, java.nio.file.Path.of("routes").toAbsolutePath());
        try (TestCluster cluster = TestCluster.start();
                OperatorHarness op = new OperatorHarness(cluster, "--routes-dir=" + link)) {
            assertThat(op.app.routesPattern()).startsWith("file:").doesNotContain(dir.toString());
            assertThat(op.app.camelContext().getRoutes()).extracting(r -> r.getRouteId())
                    .contains("https-ingress", "alloc", "dealloc", "discovery", "health");
        }
    }
}
