package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import py4j.Protocol;
import py4j.Py4JNetworkException;

class GatewayTest {

  private static String perms(Path p) throws Exception {
    return PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
  }

  @Test
  void tokensAre32RandomBytesInHex() {
    String a = ShimRuntime.newToken();
    assertTrue(a.matches("[0-9a-f]{64}"), a);
    assertFalse(a.equals(ShimRuntime.newToken()));
  }

  @Test
  void privateFilesAreOwnerOnlyEvenWhenReplacingAWiderFile(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("new/sub/secret");
    ShimRuntime.writePrivate(file, "s3cret");
    assertEquals("rw-------", perms(file));
    assertEquals("rwx------", perms(file.getParent()));
    assertEquals("s3cret", new String(Files.readAllBytes(file), StandardCharsets.UTF_8));

    Path old = dir.resolve("old");
    Files.write(old, "public".getBytes(StandardCharsets.UTF_8));
    Files.setPosixFilePermissions(old, PosixFilePermissions.fromString("rw-r--r--"));
    ShimRuntime.writePrivate(old, "private");
    assertEquals("rw-------", perms(old));
    assertEquals("private", new String(Files.readAllBytes(old), StandardCharsets.UTF_8));
    assertFalse(Files.exists(dir.resolve("old.tmp")));
  }

  @Test
  void gatewayListensOnLoopbackAndRequiresTheToken(@TempDir Path dir) throws Exception {
    Path token = dir.resolve("slotwise/gateway.token");
    Path info = dir.resolve("slotwise/gateway.json");
    ShimRuntime g = new ShimRuntime(Map.of(ShimRuntime.TOKEN_FILE, token.toString(),
        ShimRuntime.INFO_FILE, info.toString())::get, Messages.Kind.YARN, () -> false, 200, () -> { }, null, null);
    int port = g.start(dir.toString());
    assertTrue(port > 0);
    try {
      assertEquals("rw-------", perms(token));
      assertEquals("rw-------", perms(info));
      String secret = new String(Files.readAllBytes(token), StandardCharsets.UTF_8);
      Map<?, ?> m = PolicyLink.MAPPER.readValue(info.toFile(), Map.class);
      assertEquals(port, m.get("port"));
      assertEquals(ProcessHandle.current().pid(), ((Number) m.get("pid")).longValue());
      assertEquals(Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString(), m.get("pid_ns"),
          "whose pid it is: a reader in another namespace does not look it up");

      assertTrue(authenticate(port, "0".repeat(64), "").startsWith("!x"), "a wrong token is refused");
      assertEquals("!yv", authenticate(port, secret, ""));
      // Python's JavaGateway.shutdown() sends the shutdown command: the gateway stays up.
      authenticate(port, secret, "s\n");
      Thread.sleep(200);
      assertEquals("!yv", authenticate(port, secret, ""), "the gateway outlives a Python's shutdown");
    } finally {
      g.stop();
    }
    assertFalse(Files.exists(token));
    assertFalse(Files.exists(info));
  }

  private static String authenticate(int port, String token, String then) throws Exception {
    try (Socket s = new Socket(InetAddress.getByName("127.0.0.1"), port)) {
      s.setSoTimeout(5000);
      Writer w = new OutputStreamWriter(s.getOutputStream(), StandardCharsets.UTF_8);
      w.write(Protocol.getAuthCommand(token) + then); // one write: the command follows the auth
      w.flush();
      BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(),
          StandardCharsets.UTF_8));
      String answer = in.readLine();
      if (!then.isEmpty()) {
        in.readLine(); // returns when the gateway is done with the connection
      }
      return answer;
    }
  }

  @Test
  void callbacksWithNoPythonFailAtOnceAndConnectNowhere() throws Exception {
    try (ServerSocket listener = new ServerSocket(0, 5, InetAddress.getLoopbackAddress())) {
      PolicyLink.Callbacks cb = new PolicyLink.Callbacks(1000);
      assertEquals(0, cb.getPort());
      assertThrows(Py4JNetworkException.class, () -> cb.sendCommand("c\np0\nheartbeat\ne\n"));
      listener.setSoTimeout(300);
      assertThrows(SocketTimeoutException.class, listener::accept, "no connection was attempted");
    }
  }

  @Test
  void callbacksSendThePythonsOwnTokenAndStopWhenDisconnected() throws Exception {
    try (ServerSocket listener = new ServerSocket(0, 5, InetAddress.getLoopbackAddress())) {
      listener.setSoTimeout(5000);
      PolicyLink.Callbacks cb = new PolicyLink.Callbacks(1000);
      cb.connect(listener.getLocalPort(), "callback-token-of-this-registration-0123456789");
      Thread caller = new Thread(() -> {
        try {
          cb.sendCommand("c\np0\nping\ne\n");
        } catch (RuntimeException expected) {
          // the fake Python below never answers properly
        }
      });
      caller.start();
      try (Socket s = listener.accept()) {
        BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(),
            StandardCharsets.UTF_8));
        assertEquals("A", in.readLine(), "the auth command");
        assertEquals("callback-token-of-this-registration-0123456789", in.readLine());
      }
      caller.join(5000);
      cb.disconnect();
      assertThrows(Py4JNetworkException.class, () -> cb.sendCommand("c\np0\nping\ne\n"));
      listener.setSoTimeout(300);
      assertThrows(SocketTimeoutException.class, listener::accept);
    }
  }
}
