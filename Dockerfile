# syntax=docker/dockerfile:1
# playpen-operator image: docker build -t playpen-operator .
# Runs as uid/gid 65534 with a read-only root filesystem; the only writable path it needs
# is /tmp (an emptyDir in deploy/060-deployment.yaml).

# ---- build: the shaded jar (tests run in CI, not here) ----
FROM maven:3.9-eclipse-temurin-17 AS build
WORKDIR /src
# .dockerignore lets only pom.xml, src/ and routes/ into the context
COPY . .
# routes/ may not exist yet; the runtime stage copies it either way
RUN --mount=type=cache,target=/root/.m2 \
    mkdir -p routes \
 && mvn -B -ntp -Dmaven.test.skip=true package

# ---- runtime ----
FROM eclipse-temurin:17-jre
LABEL org.opencontainers.image.title="playpen-operator" \
      org.opencontainers.image.description="Kubernetes aggregated API server that hands out warm playpen runner and k3s control-plane pods"
# /opt/playpen is read-only at run time. /opt/playpen/routes holds the default routes;
# deploy/ runs these; deploy/components/route-override can mount single replacements over them.
COPY --from=build /src/target/playpen-operator.jar /opt/playpen/playpen-operator.jar
COPY --from=build /src/routes/ /opt/playpen/routes/
WORKDIR /opt/playpen
# AppCDS: a training run (the embedded --dev playground, stopped by SIGTERM, which exits 0 and
# writes the archive) records the classes the operator loads. Starting from the archive cut
# startup-to-ready from 5.3 s to 3.3 s on the 2-core test machine. A missing or mismatched
# archive only costs that speed-up: -Xshare:auto falls back silently.
# The training JVM uses the ENTRYPOINT's flags (DockerfileTest checks they match).
RUN timeout -s TERM 30 java -XX:MaxRAMPercentage=35 -XX:InitialRAMPercentage=10 -XX:+UseSerialGC -XX:MaxHeapFreeRatio=50 -XX:MinHeapFreeRatio=30 \
        -Xss512k -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=64m -XX:MaxDirectMemorySize=128m -XX:ArchiveClassesAtExit=/opt/playpen/playpen.jsa \
        -jar /opt/playpen/playpen-operator.jar --dev --dev-dir=/tmp/cds-training --management-addr= \
    ; rm -rf /tmp/cds-training; ls -l /opt/playpen/playpen.jsa || echo "no AppCDS archive: the image starts slower"
# the Go operator's Deployment runs `command: [/unbounded/bin/playpen-operator]`: the same JVM as ENTRYPOINT, so a
# cluster running the reference keeps working when only the image is replaced (deploy/README.md, migration)
COPY --from=build --chmod=0755 /src/src/main/docker/playpen-operator /unbounded/bin/playpen-operator
# the stand-in runner (deploy/components/fake-runner, for clusters without VMs such as kind): the paths the operator's
# runner and control-plane pod templates start, /unbounded/bin/playpen-runner and /bin/k3s (/usr/bin/k3s: /bin is a
# link to usr/bin in this Ubuntu-based image). Unused unless --runner-image / --control-plane-image name this image.
COPY --from=build --chmod=0755 /src/src/main/docker/playpen-runner /unbounded/bin/playpen-runner
COPY --from=build --chmod=0755 /src/src/main/docker/k3s /usr/bin/k3s
USER 65534:65534
EXPOSE 8443
# Container-aware JVM: heap capped at 35% of the memory limit (the operator keeps ~100 MiB of
# heap with 5000 pods cached) and started at 10% of it (growing from a few MiB cost ~20 full
# collections during startup), the serial collector with a tight heap (RSS 259-276 MiB with 5000
# pods under the Deployment's 768Mi limit, measured by the benchmark), exit (and get restarted)
# on OOM instead of limping on, no hsperfdata file, temp files under the /tmp emptyDir.
# The heap keeps 30% free after a full collection and gives back what is above 50% free. Keeping
# only 10% free, the heap grew in small steps while the cache filled at startup, with a full
# collection at each step: for 100,000 pods 8 of them, 6.0-6.9 s of pauses in a start of 11.6-13.4 s,
# against 3 and 9.0-12.8 s now (10,000 pods: 3.7-3.9 s against 2.7-3.1 s). The resident memory
# after startup did not move (239 MiB with 10,000 pods either way).
# Direct memory (Netty's buffers) is capped at 128 MiB instead of the heap size: heap 269 + direct 128 + metaspace,
# code cache and stacks stay under 768 MiB. Normal use needs ~8 MiB; what a connection may buffer is bounded by
# ConnectionGuard (4,000 hostile connections: see README "Connection bounds").
# JIT: C1 only (-XX:TieredStopAtLevel=1). On a 1-2 core budget the C2 compiler was the operator's biggest CPU
# user for its first thousands of allocations (42-51% of the process's CPU, 20 s of compile time in its first
# 26 s under load), competing with the requests it was compiling for. C1-only halved the CPU per allocation of a
# fresh process, cut startup, and in steady state (6,000+ allocations) cost no more CPU per allocation than C2
# (1,550 vs 2,125 us) at ~10% less peak throughput on 2 cores (README "Performance"). For a long-running
# replica on many cores, remove it to get C2's peak code (JAVA_TOOL_OPTIONS cannot lower it: later flags win).
# Extra JVM options can be added with JAVA_TOOL_OPTIONS.
ENTRYPOINT ["java", \
            "-XX:MaxRAMPercentage=35", \
            "-XX:InitialRAMPercentage=10", \
            "-XX:+UseSerialGC", \
            "-XX:MaxHeapFreeRatio=50", \
            "-XX:MinHeapFreeRatio=30", \
            "-Xss512k", \
            "-XX:TieredStopAtLevel=1", \
            "-XX:ReservedCodeCacheSize=64m", \
            "-XX:MaxDirectMemorySize=128m", \
            "-XX:SharedArchiveFile=/opt/playpen/playpen.jsa", \
            "-Xshare:auto", \
            "-XX:+ExitOnOutOfMemoryError", \
            "-XX:-UsePerfData", \
            "-Djava.io.tmpdir=/tmp", \
            "-Dfile.encoding=UTF-8", \
            "-jar", "/opt/playpen/playpen-operator.jar"]
# Operator flags; the Deployment replaces these with its own args.
CMD ["--listen-addr=:8443", "--routes-dir=/opt/playpen/routes"]
