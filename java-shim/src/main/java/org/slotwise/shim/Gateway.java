package org.slotwise.shim;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import javax.net.SocketFactory;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import py4j.CallbackClient;
import py4j.GatewayServer;

/**
 * The Py4J gateway inside the RM: bound to 127.0.0.1, guarded by a fresh
 * 32-byte token that is written (mode 0600) before the gateway listens; the
 * callback client that calls Python uses the same token. The port and pid go
 * to the info file (mode 0600) once the gateway listens.
 */
final class Gateway {
  private static final Logger LOG = LoggerFactory.getLogger(Gateway.class);
  private static final Set<PosixFilePermission> FILE_0600 =
      PosixFilePermissions.fromString("rw-------");
  private static final Set<PosixFilePermission> DIR_0700 =
      PosixFilePermissions.fromString("rwx------");

  private final Object entryPoint;
  private final int port;
  private final Path tokenFile;
  private final Path infoFile;
  private final int readTimeoutMs;
  private GatewayServer server;

  /**
   * @param readTimeoutMs socket read timeout of calls to Python: a hung Python
   *        is cut off after it (0 = never)
   */
  Gateway(Object entryPoint, int port, Path tokenFile, Path infoFile, int readTimeoutMs) {
    this.entryPoint = entryPoint;
    this.port = port;
    this.tokenFile = tokenFile;
    this.infoFile = infoFile;
    this.readTimeoutMs = readTimeoutMs;
  }

  /** 32 random bytes from SecureRandom, as 64 hex digits. */
  static String newToken() {
    byte[] b = new byte[32];
    new SecureRandom().nextBytes(b);
    StringBuilder sb = new StringBuilder(64);
    for (byte x : b) {
      sb.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
    }
    return sb.toString();
  }

  /**
   * Writes a file that only the RM's user may read: the content goes to a
   * temporary file created with mode 0600 (never wider, not even for an
   * instant), which then replaces the target atomically.
   */
  static void writePrivate(Path file, String content) throws IOException {
    Path abs = file.toAbsolutePath();
    Path dir = abs.getParent();
    if (dir != null && !Files.isDirectory(dir)) {
      Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(DIR_0700));
    }
    Path tmp = abs.resolveSibling(abs.getFileName() + ".tmp");
    Files.deleteIfExists(tmp);
    try (SeekableByteChannel ch = Files.newByteChannel(tmp,
        EnumSet.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
        PosixFilePermissions.asFileAttribute(FILE_0600))) {
      ch.write(ByteBuffer.wrap(content.getBytes(StandardCharsets.UTF_8)));
    }
    Files.setPosixFilePermissions(tmp, FILE_0600); // in case of an odd umask
    Files.move(tmp, abs, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  /** Starts listening; returns the port. */
  int start() throws IOException, InterruptedException {
    String token = newToken();
    writePrivate(tokenFile, token);
    InetAddress loopback = InetAddress.getByName("127.0.0.1");
    CallbackClient callback = new CallbackClient(GatewayServer.DEFAULT_PYTHON_PORT, loopback,
        token, CallbackClient.DEFAULT_MIN_CONNECTION_TIME, TimeUnit.SECONDS,
        SocketFactory.getDefault(), true, readTimeoutMs);
    server = new GatewayServer.GatewayServerBuilder()
        .entryPoint(entryPoint)
        .javaAddress(loopback)
        .javaPort(port)
        .authToken(token)
        .callbackClient(callback)
        .build();
    // Py4J's threads inherit daemon status from the thread that starts them.
    Throwable[] failure = new Throwable[1];
    Thread starter = new Thread(() -> {
      try {
        server.start(true);
      } catch (Throwable t) {
        failure[0] = t;
      }
    }, "slotwise-gateway-start");
    starter.setDaemon(true);
    starter.start();
    starter.join();
    if (failure[0] != null) {
      server = null;
      throw new IOException("Py4J gateway did not start on 127.0.0.1:" + port, failure[0]);
    }
    int listening = server.getListeningPort();
    writePrivate(infoFile, "{\"port\": " + listening + ", \"pid\": "
        + ProcessHandle.current().pid() + "}");
    LOG.info("Slotwise: Py4J gateway listening on 127.0.0.1:{} (token {}, info {})",
        listening, tokenFile, infoFile);
    return listening;
  }

  void stop() {
    if (server != null) {
      try {
        server.shutdown();
      } catch (Throwable t) {
        LOG.warn("Slotwise: error while stopping the Py4J gateway", t);
      }
      server = null;
    }
    for (Path p : new Path[] {infoFile, tokenFile}) {
      try {
        Files.deleteIfExists(p);
      } catch (IOException e) {
        LOG.warn("Slotwise: could not delete {}", p, e);
      }
    }
  }
}
