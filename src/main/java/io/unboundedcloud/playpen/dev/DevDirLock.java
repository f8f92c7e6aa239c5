package io.unboundedcloud.playpen.dev;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.time.temporal.ChronoUnit;

/**
 * One playground per dev dir: a second {@code --dev} on the same directory would rewrite the kubeconfigs and
 * endpoints.env of the first, which keeps running unseen while kubectl talks to the new one. The lock is the
 * operating system's file lock on {@code .playground.lock}, released when the process ends however it ends (also
 * {@code kill -9}), so a crashed playground never blocks the next one.
 */
final class DevDirLock implements AutoCloseable {
    static final String FILE = ".playground.lock";

    /** The dev dir is held by another playground. */
    static final class InUseException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        InUseException(String message) {
            super(message);
        }
    }

    private final FileChannel channel;
    private final FileLock lock;

    private DevDirLock(FileChannel channel, FileLock lock) {
        this.channel = channel;
        this.lock = lock;
    }

    /** Takes the dev dir (creating it) or throws {@link InUseException} naming the playground that holds it. */
    static DevDirLock acquire(Path devDir) throws IOException {
        Files.createDirectories(devDir);
        Path file = devDir.resolve(FILE);
        FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE);
        FileLock lock;
        try {
            lock = channel.tryLock();
        } catch (OverlappingFileLockException e) {
            lock = null; // held by this very process (a second playground started in the same JVM)
        }
        if (lock == null) {
            String holder;
            try {
                holder = Files.readString(file, StandardCharsets.UTF_8).strip();
            } catch (IOException e) {
                holder = "";
            }
            channel.close();
            throw new InUseException(devDir + " is in use by another --dev playground"
                    + (holder.isEmpty() ? "" : " (" + holder + ")") + ": stop that one first (Ctrl-C in its terminal),"
                    + " or give this one its own directory, e.g. --dev-dir=" + devDir + "-2");
        }
        channel.truncate(0);
        channel.write(ByteBuffer.wrap(("pid " + ProcessHandle.current().pid() + ", started "
                + Instant.now().truncatedTo(ChronoUnit.SECONDS) + "\n").getBytes(StandardCharsets.UTF_8)), 0);
        channel.force(false);
        return new DevDirLock(channel, lock);
    }

    @Override
    public void close() {
        try {
            lock.release();
            channel.close();
        } catch (IOException e) {
            // the lock goes with the process anyway
        }
    }
}
