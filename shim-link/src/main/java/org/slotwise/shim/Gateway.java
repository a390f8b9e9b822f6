package org.slotwise.shim;

import java.io.BufferedReader;
import java.io.BufferedWriter;
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
import java.util.HexFormat;
import java.util.List;
import java.util.Set;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import py4j.GatewayServer;
import py4j.commands.AbstractCommand;
import py4j.commands.ShutdownGatewayServerCommand;

/**
 * The Py4J gateway inside the RM: bound to 127.0.0.1, guarded by a fresh
 * 32-byte token written (mode 0600) before the gateway listens. It outlives
 * every Python: a Python's request to shut it down is ignored. Calls to
 * Python go through {@link PolicyLink.Callbacks}, which each registration points at that
 * Python's own callback port and token, and which is cut the moment the
 * link drops it: the gateway's token never leaves the RM.
 */
public final class Gateway {
  private static final Logger LOG = LoggerFactory.getLogger(Gateway.class);
  private static final Set<PosixFilePermission> FILE_0600 =
      PosixFilePermissions.fromString("rw-------");
  private static final Set<PosixFilePermission> DIR_0700 =
      PosixFilePermissions.fromString("rwx------");
  static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();

  private final Object entryPoint;
  private final int port;
  private final Path tokenFile;
  private final Path infoFile;
  private final PolicyLink.Callbacks callbacks;
  private GatewayServer server;

  public Gateway(Object entryPoint, int port, Path tokenFile, Path infoFile, PolicyLink.Callbacks callbacks) {
    this.entryPoint = entryPoint;
    this.port = port;
    this.tokenFile = tokenFile;
    this.infoFile = infoFile;
    this.callbacks = callbacks;
  }

  /** 32 random bytes from SecureRandom, as 64 hex digits. */
  static String newToken() {
    byte[] b = new byte[32];
    new SecureRandom().nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  /**
   * Writes a file only the RM's user may read: a temporary file created with
   * mode 0600 (never wider, not even for an instant) replaces the target.
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
  public int start() throws IOException, InterruptedException {
    String token = newToken();
    writePrivate(tokenFile, token);
    server = new GatewayServer.GatewayServerBuilder()
        .gateway(new py4j.Gateway(entryPoint, callbacks))
        .javaAddress(LOOPBACK)
        .javaPort(port)
        .authToken(token)
        .customCommands(List.of(KeepRunning.class))
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
        + ProcessHandle.current().pid() + ", \"pid_ns\": \"" + pidNamespace() + "\"}");
    LOG.info("Slotwise: Py4J gateway listening on 127.0.0.1:{} (token {}, info {})",
        listening, tokenFile, infoFile);
    return listening;
  }

  /**
   * This process's pid namespace (as /proc/self/ns/pid names it), so that a
   * reader in another one (the policy container) does not take the pid for
   * one of its own; empty where there is none to read.
   */
  static String pidNamespace() {
    try {
      String ns = Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString();
      return ns.matches("[a-z]+:\\[[0-9]+\\]") ? ns : "";
    } catch (IOException | UnsupportedOperationException | SecurityException e) {
      return "";
    }
  }

  public void stop() {
    callbacks.disconnect();
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

  /**
   * Py4J's shutdown command, replaced: Python's {@code JavaGateway.shutdown()}
   * sends it on exit, and the next policy server needs the gateway.
   */
  public static final class KeepRunning extends AbstractCommand {
    public KeepRunning() {
      commandName = ShutdownGatewayServerCommand.SHUTDOWN_GATEWAY_SERVER_COMMAND_NAME;
    }

    @Override
    public void execute(String name, BufferedReader reader, BufferedWriter writer) {
      LOG.info("Slotwise: ignored a Python's request to stop the gateway; it stays up");
    }
  }
}
