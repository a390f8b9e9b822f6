package org.slotwise.sls;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.sls.SLSRunner;

/**
 * Runs one SLS simulation in this JVM and exits when its last app is done
 * (or after a time limit). SLSRunner's own main builds its configuration
 * without defaults, so yarn-site.xml (the scheduler class) would never reach
 * the RM; here the configuration loads the run directory's site files from
 * the classpath, as SLS's own tests do.
 *
 * <p>Usage: Launcher OUTPUT_DIR TRACE_TYPE TRACE NODES_FILE|- LIMIT_SECONDS (TRACE_TYPE: SLS, SYNTH
 * or RUMEN; SLS 3.4.2 cannot read its own SLS format, whose job.tasks array its AM runner parses as a
 * string, so the harness uses SYNTH).
 */
public final class Launcher {
  private Launcher() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 5) {
      System.err.println("usage: Launcher OUTPUT_DIR TRACE_TYPE TRACE NODES_FILE|- LIMIT_SECONDS");
      System.exit(2);
    }
    Configuration conf = new Configuration();
    conf.addResource("sls-runner.xml");
    SLSRunner sls = new SLSRunner(conf);
    long limitMs = (long) (Double.parseDouble(args[4]) * 1000);
    long t0 = System.currentTimeMillis();
    java.util.List<String> argv = new java.util.ArrayList<>(java.util.List.of(
        "-tracetype", args[1], "-tracelocation", args[2], "-output", args[0]));
    if (!args[3].equals("-")) {
      argv.add("-nodes");
      argv.add(args[3]);
    }
    sls.run(argv.toArray(new String[0]));
    long started = System.currentTimeMillis();
    System.out.printf("slotwise-sls: simulation started after %.1f s%n", (started - t0) / 1000.0);
    int code = 0;
    while (sls.getRemainingApps() > 0) {
      if (System.currentTimeMillis() - started > limitMs) {
        System.out.println("slotwise-sls: time limit reached with " + sls.getRemainingApps() + " app(s) left");
        code = 3;
        break;
      }
      Thread.sleep(500);
    }
    System.out.printf("slotwise-sls: done in %.1f s%n", (System.currentTimeMillis() - started) / 1000.0);
    SlsTimings.write();
    sls.stop();
    System.exit(code);
  }
}
