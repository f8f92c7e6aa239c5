package io.unboundedcloud.playpen.deploy;

import static io.unboundedcloud.playpen.deploy.DeployAdmissionPolicyTest.boundTo;
import static io.unboundedcloud.playpen.deploy.DeployAdmissionPolicyTest.controlPlaneAccount;
import static io.unboundedcloud.playpen.deploy.DeployAdmissionPolicyTest.controlPlanePod;
import static io.unboundedcloud.playpen.deploy.DeployAdmissionPolicyTest.patch;
import static io.unboundedcloud.playpen.deploy.DeployAdmissionPolicyTest.runnerAccount;
import static io.unboundedcloud.playpen.deploy.DeployAdmissionPolicyTest.runnerPod;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.unboundedcloud.playpen.fakerunner.FakeRunner;

/**
 * The stand-in runner's one write, its exact JSON merge PATCH body, judged by deploy/'s runner admission policy the way
 * kube-apiserver judges it: allowed on its own pod with its own pod-bound token, denied on another pod, so the stand-in
 * proves the policy on a cluster instead of needing an exception from it.
 */
class FakeRunnerAdmissionTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String WG_KEY = "hN3AZ9cU3EJgpx8NhBdz2Z3ZDyZ3VjUd2R9cpD2b0lg=";
    private static final String PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    @BeforeAll
    static void policy() throws Exception {
        DeployAdmissionPolicyTest.compilePolicy();
    }

    static Map<String, Object> sent(Map<String, String> annotations) throws Exception {
        return JSON.readValue(FakeRunner.mergePatch(annotations), new TypeReference<Map<String, Object>>() { });
    }

    @Test
    void theRunnersWriteIsAllowedOnItsOwnPodOnly() throws Exception {
        Map<String, Object> body = sent(FakeRunner.runnerAnnotations(WG_KEY, PEM));
        assertThat(body).isEqualTo(Map.of("metadata", Map.of("annotations", FakeRunner.runnerAnnotations(WG_KEY, PEM))));
        Map<String, Object> mine = runnerPod(51820);
        Map<String, Object> other = runnerPod(51821);
        assertThat(patch(runnerAccount(), boundTo(mine), mine, body).allowed()).isTrue();
        DeployAdmissionPolicyTest.Decision d = patch(runnerAccount(), boundTo(mine), other, body);
        assertThat(d.allowed()).isFalse();
        assertThat(d.message()).contains("bound to");
    }

    @Test
    void theHelpersWriteIsAllowedOnItsOwnControlPlanePodOnly() throws Exception {
        Map<String, Object> body = sent(FakeRunner.controlPlaneAnnotations("apiVersion: v1\nkind: Config\n",
                "https://192.168.200.1:6443"));
        Map<String, Object> mine = controlPlanePod(16443);
        assertThat(patch(controlPlaneAccount(), boundTo(mine), mine, body).allowed()).isTrue();
        assertThat(patch(controlPlaneAccount(), boundTo(mine), controlPlanePod(16444), body).allowed()).isFalse();
        // and a runner's account may not publish a kubeconfig, even on its own pod
        Map<String, Object> runner = runnerPod(51820);
        assertThat(patch(runnerAccount(), boundTo(runner), runner, body).allowed()).isFalse();
    }
}
