// A map-only MapReduce job with one straggler, for the Hopper cluster test:
// N maps of FAST_MS each, except the first attempt of map 0, which takes
// SLOW_MS.  Progress moves with the time slept (RECORDS records per map), so
// MapReduce's speculator sees the straggler and asks for a speculative
// attempt, which (attempt 1) is fast and wins.
//
// Usage: StragglerJob MAPS FAST_MS SLOW_MS
import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.io.IntWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.Writable;
import org.apache.hadoop.mapreduce.InputFormat;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.NullOutputFormat;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;

public class StragglerJob extends Configured implements Tool {
    static final int RECORDS = 100;

    public static class Split extends InputSplit implements Writable {
        int id;

        public Split() {}

        Split(int id) { this.id = id; }

        @Override public long getLength() { return 0; }
        @Override public String[] getLocations() { return new String[0]; }
        @Override public void write(DataOutput out) throws IOException { out.writeInt(id); }
        @Override public void readFields(DataInput in) throws IOException { id = in.readInt(); }
    }

    public static class Input extends InputFormat<IntWritable, NullWritable> {
        @Override
        public List<InputSplit> getSplits(JobContext context) {
            int n = context.getConfiguration().getInt("straggler.maps", 4);
            List<InputSplit> out = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                out.add(new Split(i));
            }
            return out;
        }

        @Override
        public RecordReader<IntWritable, NullWritable> createRecordReader(InputSplit split, TaskAttemptContext ctx) {
            final int id = ((Split) split).id;
            return new RecordReader<IntWritable, NullWritable>() {
                int done = 0;

                @Override public void initialize(InputSplit s, TaskAttemptContext c) {}
                @Override public boolean nextKeyValue() { return done++ < RECORDS; }
                @Override public IntWritable getCurrentKey() { return new IntWritable(id); }
                @Override public NullWritable getCurrentValue() { return NullWritable.get(); }
                @Override public float getProgress() { return Math.min(1f, done / (float) RECORDS); }
                @Override public void close() {}
            };
        }
    }

    public static class Sleeper extends Mapper<IntWritable, NullWritable, NullWritable, NullWritable> {
        long perRecord;

        @Override
        protected void setup(Context context) {
            Configuration conf = context.getConfiguration();
            int map = context.getTaskAttemptID().getTaskID().getId();
            int attempt = context.getTaskAttemptID().getId();
            long ms = (map == 0 && attempt == 0) ? conf.getLong("straggler.slow.ms", 60000)
                                                 : conf.getLong("straggler.fast.ms", 3000);
            perRecord = Math.max(1, ms / RECORDS);
        }

        @Override
        protected void map(IntWritable key, NullWritable value, Context context) throws InterruptedException {
            Thread.sleep(perRecord);
            context.progress();
        }
    }

    @Override
    public int run(String[] args) throws Exception {
        Configuration conf = getConf();
        conf.setInt("straggler.maps", Integer.parseInt(args[0]));
        conf.setLong("straggler.fast.ms", Long.parseLong(args[1]));
        conf.setLong("straggler.slow.ms", Long.parseLong(args[2]));
        conf.setBoolean("mapreduce.map.speculative", true);
        conf.setBoolean("mapreduce.reduce.speculative", false);
        conf.setLong("mapreduce.job.speculative.retry-after-no-speculate", 500);
        conf.setInt("mapreduce.job.speculative.minimum-allowed-tasks", 10);
        Job job = Job.getInstance(conf, "straggler");
        job.setJarByClass(StragglerJob.class);
        job.setInputFormatClass(Input.class);
        job.setMapperClass(Sleeper.class);
        job.setNumReduceTasks(0);
        job.setOutputFormatClass(NullOutputFormat.class);
        job.setOutputKeyClass(NullWritable.class);
        job.setOutputValueClass(NullWritable.class);
        return job.waitForCompletion(true) ? 0 : 1;
    }

    public static void main(String[] args) throws Exception {
        System.exit(ToolRunner.run(new StragglerJob(), args));
    }
}
