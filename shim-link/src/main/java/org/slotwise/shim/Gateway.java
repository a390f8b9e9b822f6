package org.slotwise.shim;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
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
import java.util.concurrent.TimeUnit;

import javax.net.SocketFactory;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import py4j.CallbackClient;
import py4j.GatewayServer;
import py4j.Protocol;
import py4j.Py4JNetworkException;
import py4j.Py4JPythonClient;
import py4j.commands.AbstractCommand;
import py4j.commands.ShutdownGatewayServerCommand;
import py4j.reflection.ReflectionUtil;

/**
 * The Py4J gateway inside the RM: bound to 127.0.0.1, guarded by a fresh
 * 32-byte token written (mode 0600) before the gateway listens. It outlives
 * every Python: a Python's request to shut it down is ignored. Calls to
 * Python go through {@link Callbacks}, which each registration points at that
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
  private final Callbacks callbacks;
  private GatewayServer server;

  public Gateway(Object entryPoint, int port, Path tokenFile, Path infoFile, Callbacks callbacks) {
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

  /**
   * The gateway's way to Python: the callback port and token of the policy
   * registered now, or nothing. A call with nothing connected fails at once
   * (and so never reaches a port some other process may hold by now).
   */
  public static final class Callbacks implements Py4JPythonClient {
    /**
     * Py4J writes a command in 8 KB pieces: without TCP_NODELAY the last piece
     * of a larger payload waits for the first one's delayed ACK (40 ms).
     */
    private static final SocketFactory NO_DELAY = new SocketFactory() {
      private Socket noDelay(Socket s) throws IOException {
        s.setTcpNoDelay(true);
        return s;
      }

      @Override
      public Socket createSocket(String host, int port) throws IOException {
        return noDelay(new Socket(host, port));
      }

      @Override
      public Socket createSocket(String host, int port, InetAddress local, int localPort)
          throws IOException {
        return noDelay(new Socket(host, port, local, localPort));
      }

      @Override
      public Socket createSocket(InetAddress host, int port) throws IOException {
        return noDelay(new Socket(host, port));
      }

      @Override
      public Socket createSocket(InetAddress host, int port, InetAddress local, int localPort)
          throws IOException {
        return noDelay(new Socket(host, port, local, localPort));
      }
    };

    private final int readTimeoutMs;
    private volatile CallbackClient client;

    /** @param readTimeoutMs socket read timeout of calls: a hung Python is cut off (0 = never) */
    public Callbacks(int readTimeoutMs) {
      this.readTimeoutMs = readTimeoutMs;
    }

    /** Calls go to this port, authenticated with this (per-registration) token. */
    synchronized void connect(int pythonPort, String token) {
      CallbackClient old = client;
      client = new CallbackClient(pythonPort, LOOPBACK, token, 30, TimeUnit.SECONDS, NO_DELAY, false,
          readTimeoutMs);
      if (old != null) {
        old.shutdown();
      }
    }

    synchronized void disconnect() {
      CallbackClient old = client;
      client = null;
      if (old != null) {
        old.shutdown();
      }
    }

    boolean isConnected() {
      return client != null;
    }

    @Override
    public String sendCommand(String command) {
      return sendCommand(command, true);
    }

    @Override
    public String sendCommand(String command, boolean blocking) {
      CallbackClient c = client;
      if (c == null) {
        throw new Py4JNetworkException("no Python policy is registered");
      }
      return c.sendCommand(command, blocking);
    }

    /** Only {@link #disconnect} ends a connection (Py4J calls this on resets). */
    @Override
    public void shutdown() {
    }

    /** Python registers its port with the entry point, not with resetCallbackClient. */
    @Override
    public Py4JPythonClient copyWith(InetAddress pythonAddress, int pythonPort) {
      return this;
    }

    @Override
    public boolean isMemoryManagementEnabled() {
      return false; // a finalized proxy of an old Python must never reach the new one
    }

    @Override
    public int getPort() {
      CallbackClient c = client;
      return c == null ? 0 : c.getPort();
    }

    @Override
    public int getReadTimeout() {
      return readTimeoutMs;
    }

    @Override
    public InetAddress getAddress() {
      return LOOPBACK;
    }

    @Override
    @SuppressWarnings("rawtypes")
    public Object getPythonServerEntryPoint(py4j.Gateway gateway, Class[] interfaces) {
      return gateway.createProxy(ReflectionUtil.getClassLoader(), interfaces,
          Protocol.ENTRY_POINT_OBJECT_ID);
    }
  }
}
