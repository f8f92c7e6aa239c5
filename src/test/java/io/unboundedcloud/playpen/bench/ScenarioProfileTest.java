package io.unboundedcloud.playpen.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

/** The bench's per-scenario profile: how async-profiler's collapsed stacks become CPU per request, by side and thread. */
class ScenarioProfileTest {
    private static final String OPERATOR = "[Camel (camel-1) thread #9 - NettyConsumerExecutorGroup tid=7346];java/lang/Thread.run;"
            + "io/unboundedcloud/playpen/camel/ApiFlows.allocate;io/unboundedcloud/playpen/kube/ClaimWriter.mergePatch";
    private static final String MOCK = "[vert.x-eventloop-thread-0 tid=7270];io/vertx/core/net/impl/NetSocketImpl.handleMessage;"
            + "io/fabric8/mockwebserver/vertx/MockWebServerHandler.handle";
    private static final String CLIENT = "[vert.x-eventloop-thread-2 tid=7356];io/vertx/core/http/impl/Http1xClientConnection.handleResponse;"
            + "io/unboundedcloud/playpen/bench/BenchHttps.lambda$post$1";
    private static final String FABRIC8 = "[vert.x-eventloop-thread-1 tid=7352];io/fabric8/kubernetes/client/vertx/VertxHttpRequest.consumeBytes";
    private static final String CAMEL_ONLY = "[Camel Thread #8 - NettyServerTCPWorker tid=7345];io/netty/channel/nio/NioEventLoop.run";
    private static final String JIT = "[C2 CompilerThread0 tid=7252];C2Compiler::compile_method";
    private static final String IO = "[vert.x-eventloop-thread-3 tid=7392];io/netty/channel/nio/NioEventLoop.run;epoll_wait";

    @Test
    void batchesAddUpByStack() {
        Map<String, Long> stacks = new HashMap<>();
        ScenarioProfile.add(OPERATOR + " 3\n" + MOCK + " 2\n", stacks);
        ScenarioProfile.add(OPERATOR + " 4\n\n", stacks);

        assertThat(stacks).containsEntry(OPERATOR, 7L).containsEntry(MOCK, 2L).hasSize(2);
    }

    @Test
    void threadsAreNamedWithoutTheirIdsAndAPoolIsOneName() {
        assertThat(ScenarioProfile.thread(OPERATOR)).isEqualTo("Camel (camel-#) thread ## - NettyConsumerExecutorGroup");
        assertThat(ScenarioProfile.thread(MOCK)).isEqualTo(ScenarioProfile.thread(CLIENT)).isEqualTo("vert.x-eventloop-thread-#");
        assertThat(ScenarioProfile.thread(JIT)).isEqualTo("C# CompilerThread#");
    }

    @Test
    void eachStackGoesToTheSideItsFramesName() {
        assertThat(List.of(OPERATOR, MOCK, CLIENT, FABRIC8, CAMEL_ONLY, JIT, IO).stream().map(ScenarioProfile::side))
                .containsExactly("operator", "api-server", "clients", "kubernetes-client", "operator", "jvm", "unattributed");
    }

    @Test
    void samplesBecomeMicrosecondsPerRequestLargestFirst() {
        Map<String, Long> stacks = new HashMap<>(Map.of(OPERATOR, 30L, CAMEL_ONLY, 10L, MOCK, 20L, JIT, 4L));

        Map<String, Object> per = ScenarioProfile.perRequest(stacks, 10);

        double ms = ScenarioProfile.INTERVAL_NANOS / 1e6;
        assertThat(per.get("all")).isEqualTo(64 * ms * 1000 / 10);
        @SuppressWarnings("unchecked")
        Map<String, Double> bySide = (Map<String, Double>) per.get("bySide");
        assertThat(bySide.keySet()).containsExactly("operator", "api-server", "jvm");
        assertThat(bySide.get("operator")).isEqualTo(40 * ms * 1000 / 10);
        @SuppressWarnings("unchecked")
        Map<String, Double> byThread = (Map<String, Double>) per.get("byThread");
        assertThat(byThread.keySet()).first().isEqualTo("Camel (camel-#) thread ## - NettyConsumerExecutorGroup");
        assertThat(byThread.values().stream().mapToDouble(Double::doubleValue).sum()).isEqualTo(per.get("all"));
    }

    @Test
    void onlyTheAskedConcurrenciesAreProfiled() {
        assertThat(ScenarioProfile.wanted("cpu", new int[] {1, 64}, 64)).isTrue();
        assertThat(ScenarioProfile.wanted("cpu", new int[] {1}, 8)).isFalse();
        assertThat(ScenarioProfile.wanted("", new int[] {1}, 1)).isFalse();
    }
}
