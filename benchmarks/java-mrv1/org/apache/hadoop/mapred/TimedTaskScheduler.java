package org.apache.hadoop.mapred;

import java.io.FileWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.Collection;
import java.util.List;

import org.apache.hadoop.mapreduce.server.jobtracker.TaskTracker;

/**
 * Benchmarks only (benchmarks/bench_mrv1.py): times each assignTasks of the
 * scheduler named by slotwise.bench.delegate, the same way for Hadoop's
 * JobQueueTaskScheduler and SlotwiseTaskScheduler, and appends the
 * nanoseconds and tasks given to slotwise.bench.out ("ns tasks" per line).
 */
public class TimedTaskScheduler extends TaskScheduler {
  private TaskScheduler delegate;
  private PrintWriter out;

  @Override
  public synchronized void start() throws IOException {
    try {
      delegate = (TaskScheduler) Class.forName(getConf().get("slotwise.bench.delegate"))
          .getDeclaredConstructor().newInstance();
    } catch (ReflectiveOperationException e) {
      throw new IOException(e);
    }
    delegate.setConf(getConf());
    delegate.setTaskTrackerManager(taskTrackerManager);
    out = new PrintWriter(new FileWriter(getConf().get("slotwise.bench.out"), true), true);
    delegate.start();
  }

  @Override
  public synchronized void terminate() throws IOException {
    delegate.terminate();
    out.close();
  }

  @Override
  public List<Task> assignTasks(TaskTracker tracker) throws IOException {
    long t0 = System.nanoTime();
    List<Task> tasks = delegate.assignTasks(tracker);
    long ns = System.nanoTime() - t0;
    synchronized (this) {
      out.println(ns + " " + (tasks == null ? 0 : tasks.size()));
    }
    return tasks;
  }

  @Override
  public Collection<JobInProgress> getJobs(String queue) {
    return delegate.getJobs(queue);
  }
}
