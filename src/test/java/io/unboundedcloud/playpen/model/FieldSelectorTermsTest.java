package io.unboundedcloud.playpen.model;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** A fieldSelector's empty terms (a trailing comma, or nothing but commas) are skipped, as kube-apiserver skips them. */
class FieldSelectorTermsTest {

    @Test
    void emptyFieldSelectorTermsAreSkipped() {
        assertThat(AllocViews.parseQuery(null, "fieldSelector=metadata.name%3D0123456789abcdef,", null).fieldTerms())
                .extracting(t -> String.join(" ", t)).containsExactly("metadata.name = 0123456789abcdef");
        assertThat(AllocViews.parseQuery(null, "fieldSelector=,", null).fieldTerms()).isEmpty();
        assertThat(PoolViews.parseQuery(null, "fieldSelector=metadata.name%3Drunner-amd64,", null).fieldTerms())
                .extracting(t -> String.join(" ", t)).containsExactly("metadata.name = runner-amd64");
        assertThat(PoolViews.parseQuery(null, "fieldSelector=,", null).fieldTerms()).isEmpty();
    }
}
