package io.unboundedcloud.playpen.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.function.Predicate;

import org.junit.jupiter.api.Test;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.unboundedcloud.playpen.api.ApiException;
import io.unboundedcloud.playpen.kube.NodeCache;
import io.unboundedcloud.playpen.model.AllocViews;
import io.unboundedcloud.playpen.model.PlaypenKeys;

/**
 * A delete's options as kube-apiserver reads them: no body, an empty one or {} asks nothing; a dry run (query or
 * body) is refused; preconditions name the uid and resourceVersion the allocation must still have, and a body
 * that is not DeleteOptions is a 400 that says what to send. The check compares them with the allocation as just
 * read: another uid or resourceVersion is 409 in kube-apiserver's words, with what to do.
 */
class AllocsApiDeleteOptionsTest {
    static final AllocsApi API = new AllocsApi(null, null, null, null, null, 1, null, null, null);
    static final String TARGET = "/apis/playpen.unbounded-cloud.io/v1alpha1/allocs/0123456789abcdef";
    static final AllocViews.Alloc ALLOC = new AllocViews.Alloc("0123456789abcdef", "uid-now", "42", null, "runner",
            "amd64", "", "playpen-runner-amd64-51820", "node-a", "203.0.113.10:51820", null, "owner", "key", null);
    static final AllocsApi.Selection SELECTED = new AllocsApi.Selection(null, new AllocViews.Page(List.of(ALLOC), null));

    static AllocsApi.Preconditions options(String body) {
        return API.deleteOptions(TARGET, body == null ? null : body.getBytes(StandardCharsets.UTF_8));
    }

    static ApiException refused(Runnable r) {
        try {
            r.run();
        } catch (ApiException e) {
            return e;
        }
        throw new AssertionError("not refused");
    }

    @Test
    void noBodyAnEmptyOneOrOptionsWithoutPreconditionsAskNothing() {
        for (String body : new String[] {null, "", " \n", "{}", "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\"}",
                "{\"preconditions\":null}", "{\"dryRun\":[]}", "{\"propagationPolicy\":\"Background\"}", "null",
                " null\n"}) {
            assertThat(options(body)).as(String.valueOf(body)).isEqualTo(new AllocsApi.Preconditions(null, null));
        }
        assertThat(API.checkPreconditions(SELECTED, options("{}"))).isSameAs(SELECTED);
        assertThat(API.checkPreconditions(SELECTED, null)).isSameAs(SELECTED);
    }

    @Test
    void preconditionsAreReadAndHeldAgainstTheAllocationAsReadNow() {
        assertThat(options("{\"preconditions\":{\"uid\":\"u\",\"resourceVersion\":\"7\"}}"))
                .isEqualTo(new AllocsApi.Preconditions("u", "7"));
        assertThat(options("{\"preconditions\":{\"uid\":\"u\"}}")).isEqualTo(new AllocsApi.Preconditions("u", null));
        assertThat(options("{\"preconditions\":{\"resourceVersion\":\"7\"}}"))
                .isEqualTo(new AllocsApi.Preconditions(null, "7"));

        // the allocation's own uid and resourceVersion: it goes ahead
        assertThat(API.checkPreconditions(SELECTED, new AllocsApi.Preconditions("uid-now", "42"))).isSameAs(SELECTED);
        assertThat(API.checkPreconditions(SELECTED, new AllocsApi.Preconditions("uid-now", null))).isSameAs(SELECTED);
        assertThat(API.checkPreconditions(SELECTED, new AllocsApi.Preconditions(null, "42"))).isSameAs(SELECTED);

        ApiException uid = refused(() -> API.checkPreconditions(SELECTED, new AllocsApi.Preconditions("uid-then", "42")));
        assertThat(uid.code()).isEqualTo(409);
        assertThat(uid.reason()).isEqualTo("Conflict");
        assertThat(uid.getMessage()).isEqualTo("Precondition failed: UID in precondition: uid-then, UID in object "
                + "meta: uid-now; the allocation 0123456789abcdef is not the one you read: nothing was deleted; read it "
                + "again (kubectl get alloc 0123456789abcdef -o yaml)");
        ApiException rv = refused(() -> API.checkPreconditions(SELECTED, new AllocsApi.Preconditions("uid-now", "41")));
        assertThat(rv.code()).isEqualTo(409);
        assertThat(rv.getMessage()).isEqualTo("Precondition failed: ResourceVersion in precondition: 41, "
                + "ResourceVersion in object meta: 42; the allocation 0123456789abcdef changed since you read it: "
                + "nothing was deleted; read it again (kubectl get alloc 0123456789abcdef -o yaml)");
        // the uid is judged first
        assertThat(refused(() -> API.checkPreconditions(SELECTED, new AllocsApi.Preconditions("x", "41"))).getMessage())
                .startsWith("Precondition failed: UID");
    }

    /** A pod claimed by one key as the cache holds it, named {@code name}, at {@code uid} and {@code rv}. */
    static Pod claimed(String name, String uid, String rv) {
        return new PodBuilder().withNewMetadata().withName(name).withNamespace("playpen").withUid(uid)
                .withResourceVersion(rv)
                .addToLabels(PlaypenKeys.RESOURCE_TYPE, "runner").addToLabels(PlaypenKeys.ARCHITECTURE, "amd64")
                .addToLabels(PlaypenKeys.ALLOCATED, ALLOC.name())
                .addToAnnotations(PlaypenKeys.IDEMPOTENCY_KEY_HASH, "ab".repeat(32))
                .addToAnnotations(PlaypenKeys.CLAIMED_AT, "2026-01-02T03:04:05Z")
                .endMetadata().withNewSpec().withNodeName("node-a").endSpec().build();
    }

    @Test
    void theGuardHoldsPreconditionsOnTheSelectedPodAsItIsDeletedAndOnNoOther() {
        AllocsApi api = new AllocsApi(null, null, new NodeCache(null), null, new io.unboundedcloud.playpen.model.TtlPolicy(Duration.ofHours(1)), 1, null, null, null);
        // no preconditions: the selected pod goes, whatever its version; another pod of the key never does (it is
        // not this allocation: a claim being taken back, or the key's allocation made again since the read), nor
        // the pool's new pod of the same name (another uid: the key claimed again there since the read)
        for (AllocsApi.Preconditions none : new AllocsApi.Preconditions[] {null, new AllocsApi.Preconditions(null, null)}) {
            Predicate<Pod> any = api.deleteGuard(SELECTED, none);
            assertThat(any.test(claimed(ALLOC.pod(), "uid-now", "43"))).isTrue();
            assertThat(any.test(claimed(ALLOC.pod(), "uid-new", "43"))).isFalse();
            assertThat(any.test(claimed("playpen-runner-amd64-51821", "uid-other", "9"))).isFalse();
        }

        Predicate<Pod> guard = api.deleteGuard(SELECTED, new AllocsApi.Preconditions("uid-now", "42"));
        // the selected pod, unchanged since it was read: deleted
        assertThat(guard.test(claimed(ALLOC.pod(), "uid-now", "42"))).isTrue();
        // another pod carrying the same key: left alone, its preconditions not asked
        assertThat(guard.test(claimed("playpen-runner-amd64-51821", "uid-other", "9"))).isFalse();
        // the selected pod changed between the read and its delete: 409, nothing deleted
        ApiException changed = refused(() -> guard.test(claimed(ALLOC.pod(), "uid-now", "43")));
        assertThat(changed.code()).isEqualTo(409);
        assertThat(changed.getMessage()).startsWith("Precondition failed: ResourceVersion in precondition: 42, "
                + "ResourceVersion in object meta: 43;");
        ApiException replaced = refused(() -> guard.test(claimed(ALLOC.pod(), "uid-new", "42")));
        assertThat(replaced.getMessage()).startsWith("Precondition failed: UID in precondition: uid-now, UID in "
                + "object meta: uid-new;");
    }

    @Test
    void aDryRunOrABodyThatIsNotDeleteOptionsIsA400() {
        ApiException dryQuery = refused(() -> API.deleteOptions(TARGET + "?dryRun=All", null));
        assertThat(dryQuery.code()).isEqualTo(400);
        assertThat(dryQuery.getMessage()).isEqualTo("dry-run deletes are not supported on allocs: nothing was deleted;"
                + " kubectl get alloc 0123456789abcdef -o yaml shows the allocation this delete would release");
        assertThat(refused(() -> options("{\"dryRun\":[\"All\"]}")).getMessage())
                .isEqualTo("dry-run deletes are not supported on allocs: nothing was deleted; kubectl get alloc "
                        + "0123456789abcdef -o yaml shows the allocation this delete would release");
        // a name that is no allocation id is not repeated as one
        assertThat(AllocsApi.dryRunUnsupported(TARGET.replace("0123456789abcdef", "job-42") + "?dryRun=All"))
                .contains("kubectl get alloc <id> -o yaml");
        // a dry run that is not a list is not DeleteOptions either: kube-apiserver refuses it, and deleting would not
        // be what was asked
        assertThat(refused(() -> options("{\"dryRun\":\"All\"}")).getMessage()).isEqualTo("invalid DeleteOptions "
                + "body: dryRun must be a list such as [\"All\"]; dry-run deletes are not supported on allocs: nothing was "
                + "deleted; kubectl get alloc 0123456789abcdef -o yaml shows the allocation this delete would release");
        for (String body : new String[] {"[1]", "nope", "{\"a\":"}) {
            ApiException e = refused(() -> options(body));
            assertThat(e.code()).as(body).isEqualTo(400);
            assertThat(e.getMessage()).as(body).isEqualTo("invalid DeleteOptions body: not a JSON object; send {} or "
                    + "{\"preconditions\":{\"uid\":\"<the alloc's metadata.uid>\"}}, or no body");
        }
        assertThat(refused(() -> options("{\"preconditions\":\"uid\"}")).getMessage()).isEqualTo("invalid "
                + "DeleteOptions body: preconditions must be an object such as {\"uid\":\"<the alloc's metadata.uid>\"};"
                + " nothing was deleted");
        assertThat(refused(() -> options("{\"preconditions\":{\"uid\":7}}")).getMessage())
                .isEqualTo("invalid DeleteOptions body: preconditions.uid must be a string; nothing was deleted");
        assertThat(refused(() -> options("{\"preconditions\":{\"resourceVersion\":42}}")).getMessage())
                .isEqualTo("invalid DeleteOptions body: preconditions.resourceVersion must be a string; nothing was "
                        + "deleted");
    }
}
