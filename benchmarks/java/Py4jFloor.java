import java.net.InetAddress;
import java.util.Arrays;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import javax.net.SocketFactory;

import py4j.CallbackClient;
import py4j.GatewayServer;

/**
 * The floor under the shim's round trip on this machine, for
 * benchmarks/bench_roundtrip.py --floor: Java calls a Python callback that
 * does nothing (answers a fixed heartbeat answer) with a payload of the
 * shim's size, a pause between calls as between heartbeats, in two ways
 * taken in turn: on the calling thread ("direct"), and handed to a
 * single-thread executor with Future.get(timeout), as the shim's PolicyLink
 * does ("executor"). A third row times the hand-off alone (a task that does
 * nothing). Prints one line per way: "name n p50 p90 p99 max" in microseconds.
 *
 * <p>Args: token calls pauseMs payloadChars. Prints "port P" once the gateway
 * listens (127.0.0.1, the token required), waits for Python to point the
 * callback client at its callback server and call register(), then measures.
 */
public final class Py4jFloor {
  /** What the Python side implements. */
  public interface Echo {
    String heartbeat(String payload);
  }

  /** The gateway's entry point. */
  public static final class EntryPoint {
    private volatile Echo echo;

    public void register(Echo e) {
      echo = e;
    }
  }

  private static void report(String name, long[] ns) {
    long[] s = ns.clone();
    Arrays.sort(s);
    int n = s.length;
    System.out.printf("%s %d %.0f %.0f %.0f %.0f%n", name, n,
        s[(int) Math.ceil(0.5 * n) - 1] / 1e3, s[(int) Math.ceil(0.9 * n) - 1] / 1e3,
        s[(int) Math.ceil(0.99 * n) - 1] / 1e3, s[n - 1] / 1e3);
  }

  public static void main(String[] args) throws Exception {
    String token = args[0];
    int calls = Integer.parseInt(args[1]);
    long pauseMs = Long.parseLong(args[2]);
    int size = Integer.parseInt(args[3]);
    EntryPoint ep = new EntryPoint();
    InetAddress loopback = InetAddress.getByName("127.0.0.1");
    // As the shim's Gateway: the callback client sends the token too.
    CallbackClient callback = new CallbackClient(GatewayServer.DEFAULT_PYTHON_PORT, loopback, token,
        CallbackClient.DEFAULT_MIN_CONNECTION_TIME, TimeUnit.SECONDS, SocketFactory.getDefault(),
        true, 5000);
    GatewayServer gs = new GatewayServer.GatewayServerBuilder().entryPoint(ep).javaAddress(loopback)
        .javaPort(0).authToken(token).callbackClient(callback).build();
    gs.start();
    System.out.println("port " + gs.getListeningPort());
    System.out.flush();
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (ep.echo == null && System.nanoTime() < until) {
      Thread.sleep(20);
    }
    if (ep.echo == null) {
      System.out.println("error Python did not register");
      System.exit(1);
    }
    char[] body = new char[Math.max(0, size - 12)];
    Arrays.fill(body, 'x');
    String payload = "{\"node\":\"" + new String(body) + "\"}";
    Echo echo = ep.echo;
    ExecutorService ex = Executors.newSingleThreadExecutor();
    long[] direct = new long[calls];
    long[] handed = new long[calls];
    long[] handoff = new long[calls];
    int warm = Math.min(200, calls);
    for (int round = 0; round < 2; round++) { // round 0 warms up the JIT and the connection
      int n = round == 0 ? warm : calls;
      for (int i = 0; i < n; i++) {
        long t = System.nanoTime();
        echo.heartbeat(payload);
        direct[i] = System.nanoTime() - t;
        Thread.sleep(pauseMs);
        t = System.nanoTime();
        Future<String> f = ex.submit(() -> echo.heartbeat(payload));
        f.get(1, TimeUnit.SECONDS);
        handed[i] = System.nanoTime() - t;
        Thread.sleep(pauseMs);
        t = System.nanoTime();
        ex.submit(() -> "").get(1, TimeUnit.SECONDS);
        handoff[i] = System.nanoTime() - t;
        Thread.sleep(pauseMs);
      }
    }
    report("direct", direct);
    report("executor", handed);
    report("handoff", handoff);
    System.out.flush();
    ex.shutdownNow();
    gs.shutdown();
    System.exit(0);
  }
}
