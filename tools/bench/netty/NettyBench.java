// tools/bench/netty/NettyBench.java
// -----------------------------------------------------------------------------
// The "netty" timer of //tools/bench:bench: one repetition of one workload
// variant on Netty 4.1's io.netty.util.HashedWheelTimer, in a JVM of its own.
// Each method below mirrors the C++ workload of the same name
// (tools/bench/workloads/), so that the rows compare like with like:
//
//   - the same sizes and delays: the C++ side passes the sizes as arguments
//     and writes the run's random delays, drawn by the workload's own
//     Delays(), to stdin;
//   - the same use of the timer: one HashedWheelTimer with Netty's defaults
//     (100 ms tick, 512 buckets) where tickwheel runs with its defaults, at
//     the bench's tick where the workload is about timing; newTimeout() from
//     the producer threads, the handle kept only to cancel, stop() at the end;
//   - a task with similar state: a reference and a long (CountingTask);
//   - the same checks: stop() must return every timeout still pending, no
//     task may run before its deadline, cancelled tasks never run.
//
// Where the JVM differs, the measurement says so:
//   - process CPU is the sum of every live thread's /proc schedstat (ns), so
//     the JIT compiler and the garbage collector count as the timer's threads;
//     the producer threads stay alive until it is read, and the main thread,
//     which only starts them and waits, is left out;
//   - memory per pending timeout is the heap in use after System.gc(), before
//     and after (RSS would count the collector's headroom), and the RSS rows
//     read /proc after System.gc(), as the C++ side does after malloc_trim;
//   - "armed" means filed into the wheel: Netty queues a new timeout and its
//     worker moves at most 100,000 a tick into their buckets, so waits for
//     the worker's backlog look at that queue (by reflection; nothing else
//     reads it);
//   - the warm-up has the C++ warm-up's shape, repeated (JIT_ROUNDS), then
//     waits until the JIT has nothing left to compile: a Java server that has
//     used its timer before runs it compiled.
//
// Usage: java -cp <netty-common.jar>:<its classes> NettyBench <workload>
//        <variant> key=value...
// (tools/bench/netty_bench.cc compiles it once per invocation; as a single
// file it also runs as java -cp <netty-common.jar> NettyBench.java ...)
// stdin: per part (producer), a little-endian int64 count, then that many
// int64 delays in ns.
// stdout: the bench's child protocol, one a line: "V\t<metric>\t<value>",
// "F\t<failure>", "N\t<note>". Exit status 0 unless the JVM itself fails.

import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import io.netty.util.TimerTask;
import java.io.IOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.IntConsumer;

public final class NettyBench {
  // The C++ warm-up's shape (--warmup timeouts, half due in 1 ms, half
  // cancelled at once) is run this many times: the JIT compiles a method
  // after some thousands of calls, in the background.
  static final int JIT_ROUNDS = 10;

  // Made before any run: the first use of java.lang.management loads and
  // initialises classes for tens of milliseconds, which must not fall into a
  // task on the worker.
  static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();

  // ---- The run's output ----------------------------------------------------

  static final Map<String, Double> values = new LinkedHashMap<>();
  static final List<String> failures = new ArrayList<>();
  static final List<String> notes = new ArrayList<>();

  public static void main(String[] args) {
    try {
      final Map<String, String> params = new HashMap<>();
      for (int i = 2; i < args.length; ++i) {
        final int eq = args[i].indexOf('=');
        params.put(args[i].substring(0, eq), args[i].substring(eq + 1));
      }
      final Params p = new Params(args[0], Long.parseLong(args[1]), params);
      final long[][] delays = readDelays();
      warmUp(p);
      run(p, delays);
    } catch (Throwable t) {
      failures.add("netty harness: " + t);
    }
    final StringBuilder out = new StringBuilder();
    values.forEach((k, v) -> out.append("V\t").append(k).append('\t').append(v).append('\n'));
    for (String f : failures) out.append("F\t").append(clean(f)).append('\n');
    for (String n : notes) out.append("N\t").append(clean(n)).append('\n');
    System.out.print(out);
    System.out.flush();
    System.exit(0);  // a timer left running by a failed check must not keep the JVM
  }

  static String clean(String s) {
    return s.replace('\t', ' ').replace('\n', ' ');
  }

  // The sizes of the run, as the C++ side resolved them (--quick included).
  static final class Params {
    final String workload;
    final long variant, n, warmup, tickNs, depthCalls;
    final double farMinS, idleSettleS, idleS, releaseWaitS, massExpiryLeadMs, burstLeadMs,
        burstDelayMs;

    Params(String workload, long variant, Map<String, String> m) {
      this.workload = workload;
      this.variant = variant;
      n = Long.parseLong(m.get("n"));
      warmup = Long.parseLong(m.get("warmup"));
      tickNs = Long.parseLong(m.get("tick_ns"));
      depthCalls = Long.parseLong(m.get("depth_calls"));
      farMinS = Double.parseDouble(m.get("far_min_s"));
      idleSettleS = Double.parseDouble(m.get("idle_settle_s"));
      idleS = Double.parseDouble(m.get("idle_s"));
      releaseWaitS = Double.parseDouble(m.get("release_wait_s"));
      massExpiryLeadMs = Double.parseDouble(m.get("mass_expiry_lead_ms"));
      burstLeadMs = Double.parseDouble(m.get("burst_lead_ms"));
      burstDelayMs = Double.parseDouble(m.get("burst_delay_ms"));
    }
  }

  static long[][] readDelays() throws IOException {
    final ByteBuffer in = ByteBuffer.wrap(System.in.readAllBytes()).order(ByteOrder.LITTLE_ENDIAN);
    final List<long[]> parts = new ArrayList<>();
    while (in.remaining() >= 8) {
      final long[] part = new long[(int) in.getLong()];
      in.asLongBuffer().get(part);
      in.position(in.position() + 8 * part.length);
      parts.add(part);
    }
    return parts.toArray(new long[0][]);
  }

  static void run(Params p, long[][] delays) throws Exception {
    switch (p.workload) {
      case "schedule": schedule(p, delays); break;
      case "schedule_cancel": scheduleCancel(p, delays); break;
      case "schedule_depth": scheduleDepth(p, delays[0]); break;
      case "memory": memory(p, delays[0]); break;
      case "release": release(p, delays[0]); break;
      case "lateness": lateness(p, delays[0]); break;
      case "idle": idle(p, delays[0]); break;
      case "mass_expiry": massExpiry(p, delays[0]); break;
      case "burst": burst(p); break;
      default: failures.add("netty harness: no workload " + p.workload);
    }
  }

  // ---- The timer -----------------------------------------------------------

  // Netty's default thread factory's kind of thread (not a daemon), recording
  // it and its Linux thread id for the idle workload's wake-ups.
  static final class WorkerThread implements ThreadFactory {
    volatile long tid = -1;

    @Override
    public Thread newThread(Runnable r) {
      return new Thread(() -> {
        tid = currentTid();
        r.run();
      }, "netty-wheel");
    }
  }

  static final class Wheel {
    final WorkerThread worker = new WorkerThread();
    final HashedWheelTimer timer;
    final Queue<?> unfiled;  // new timeouts the worker has not filed yet

    // tickNs 0: Netty's defaults, 100 ms and 512 buckets.
    Wheel(long tickNs) throws ReflectiveOperationException {
      timer = new HashedWheelTimer(worker, tickNs > 0 ? tickNs : 100_000_000L,
          TimeUnit.NANOSECONDS, 512);
      timer.start();  // the worker runs from here, as tickwheel's from Create()
      final Field f = HashedWheelTimer.class.getDeclaredField("timeouts");
      f.setAccessible(true);
      unfiled = (Queue<?>) f.get(timer);
    }

    // Until the worker has filed every timeout made so far, then until the
    // process is idle (WaitUntilIdle).
    void settle() {
      if (!waitFor(unfiled::isEmpty, 120_000_000_000L)) {
        failures.add("the worker had not filed every timeout after 120 s");
      }
      waitUntilIdle();
    }

    // Stops the timer; a failure unless it returned `pending` or if a task ran.
    void stopAndCheck(long pending, AtomicLong runs) {
      final long left = timer.stop().size();
      if (left != pending) {
        failures.add("stop returned " + left + " pending, expected " + pending);
      }
      if (runs.get() != 0) failures.add(runs.get() + " tasks ran");
    }
  }

  // 16 bytes of state, as the C++ CountingTask: a reference and a long.
  static final class CountingTask implements TimerTask {
    final AtomicLong runs;
    final long payload;

    CountingTask(AtomicLong runs, long payload) {
      this.runs = runs;
      this.payload = payload;
    }

    @Override
    public void run(Timeout t) {
      runs.incrementAndGet();
    }
  }

  // The loops the warm-up and the cost workloads share, so that the warm-up
  // compiles the code the measurement runs.
  static void scheduleAll(HashedWheelTimer timer, long[] delays, int from, int to,
      AtomicLong runs) {
    for (int i = from; i < to; ++i) {
      timer.newTimeout(new CountingTask(runs, delays[i]), delays[i], TimeUnit.NANOSECONDS);
    }
  }

  static long scheduleCancelAll(HashedWheelTimer timer, long[] delays, AtomicLong runs) {
    long ok = 0;
    for (long d : delays) {
      final Timeout h = timer.newTimeout(new CountingTask(runs, d), d, TimeUnit.NANOSECONDS);
      ok += h.cancel() ? 1 : 0;
    }
    return ok;
  }

  // The C++ WarmUp() on a throwaway timer at the workload's tick, JIT_ROUNDS
  // times, then until the JIT's compile queue is empty (its total compile
  // time unchanged for 100 ms, 10 s at most).
  static void warmUp(Params p) throws Exception {
    final int half = (int) (p.warmup / 2);
    final long[] soon = new long[half], far = new long[half];
    Arrays.fill(soon, 1_000_000L);
    Arrays.fill(far, 3_600_000_000_000L);
    final AtomicLong runs = new AtomicLong();
    final Wheel w = new Wheel(p.tickNs);
    for (int round = 0; round < JIT_ROUNDS; ++round) {
      scheduleAll(w.timer, soon, 0, half, runs);
      scheduleCancelAll(w.timer, far, runs);
    }
    waitFor(() -> runs.get() >= (long) half * JIT_ROUNDS, 5_000_000_000L);
    w.timer.stop();
    final CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
    if (jit != null && jit.isCompilationTimeMonitoringSupported()) {
      final long until = System.nanoTime() + 10_000_000_000L;
      for (long last = -1; System.nanoTime() < until; sleepNanos(100_000_000L)) {
        final long now = jit.getTotalCompilationTime();
        if (now == last) break;
        last = now;
      }
    }
  }

  // ---- What the workloads share (tools/bench/workload_common.h) ----------

  static void sleepNanos(long ns) {
    try {
      TimeUnit.NANOSECONDS.sleep(ns);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  // Polls done every millisecond until it holds or timeoutNs passed.
  static boolean waitFor(BooleanSupplier done, long timeoutNs) {
    for (final long until = System.nanoTime() + timeoutNs; !done.getAsBoolean();
         sleepNanos(1_000_000L)) {
      if (System.nanoTime() >= until) return false;
    }
    return true;
  }

  // Until the process used at most 10% of a core over 10 ms, not counting
  // the calling thread, which only waits: reading /proc for every thread
  // costs the JVM more than one getrusage() costs the C++ side.
  static void waitUntilIdle() {
    final BooleanSupplier idle = () -> {
      final long cpu0 = otherThreadsCpuNs();
      sleepNanos(10_000_000L);
      return otherThreadsCpuNs() - cpu0 <= 1_000_000L;
    };
    if (!waitFor(idle, 60_000_000_000L)) notes.add("busy for 60 s");
  }

  // Summed over the producers: wall time, CPU time and minor page faults
  // inside the body; span: first in to last out. The threads stay alive,
  // parked, until release(), so that their CPU stays in processCpuNs().
  static final class Producers {
    final Thread[] threads;
    final long[] start, end, cpu, faults;
    final CountDownLatch ready, go = new CountDownLatch(1), done, exit = new CountDownLatch(1);

    Producers(int producers, IntConsumer body) throws InterruptedException {
      threads = new Thread[producers];
      start = new long[producers];
      end = new long[producers];
      cpu = new long[producers];
      faults = new long[producers];
      ready = new CountDownLatch(producers);
      done = new CountDownLatch(producers);
      for (int i = 0; i < producers; ++i) {
        final int k = i;
        threads[i] = new Thread(() -> {
          ready.countDown();
          awaitQuietly(go);
          start[k] = System.nanoTime();
          final long cpu0 = MX.getCurrentThreadCpuTime();
          final long faults0 = threadMinorFaults();
          body.accept(k);
          faults[k] = threadMinorFaults() - faults0;
          cpu[k] = MX.getCurrentThreadCpuTime() - cpu0;
          end[k] = System.nanoTime();
          done.countDown();
          awaitQuietly(exit);
        });
        threads[i].start();
      }
      ready.await();
      go.countDown();
      done.await();
    }

    long wallNs() { return Arrays.stream(end).sum() - Arrays.stream(start).sum(); }
    long cpuNs() { return Arrays.stream(cpu).sum(); }
    long faults() { return Arrays.stream(faults).sum(); }
    long spanNs() {
      final long first = Arrays.stream(start).min().getAsLong();
      return Math.max(1, Arrays.stream(end).max().getAsLong() - first);
    }

    void release() throws InterruptedException {
      exit.countDown();
      for (Thread t : threads) t.join();
    }
  }

  static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  // ---- What the JVM reads about its process from Linux ---------------------

  static String read(String path) throws IOException {
    return new String(Files.readAllBytes(Paths.get(path)), StandardCharsets.US_ASCII);
  }

  // CPU time of every live thread, ns (/proc/self/task/*/schedstat); without
  // schedstat, the JVM's process CPU time, which counts in clock ticks.
  static long processCpuNs() {
    long sum = 0;
    try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Paths.get("/proc/self/task"))) {
      for (Path t : tasks) {
        try {
          final String s = read(t.resolve("schedstat").toString());
          sum += Long.parseLong(s.substring(0, s.indexOf(' ')));
        } catch (IOException | RuntimeException e) {
          // the thread has ended
        }
      }
    } catch (IOException e) {
      return ((com.sun.management.OperatingSystemMXBean) ManagementFactory
          .getOperatingSystemMXBean()).getProcessCpuTime();
    }
    return sum;
  }

  // processCpuNs() but the calling thread's CPU time.
  static long otherThreadsCpuNs() {
    return processCpuNs() - MX.getCurrentThreadCpuTime();
  }

  // Field `index` (1-based, as in proc(5)) of a /proc stat line, counted
  // after the command name, which may hold spaces.
  static long statField(String stat, int index) {
    final String[] rest = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
    return Long.parseLong(rest[index - 3]);
  }

  static long threadMinorFaults() {
    try {
      return statField(read("/proc/thread-self/stat"), 10);
    } catch (IOException e) {
      return 0;
    }
  }

  static long currentTid() {
    try {
      return Long.parseLong(Files.readSymbolicLink(Paths.get("/proc/thread-self")).getFileName()
          .toString());
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  // A thread's voluntary context switches: each return from a sleep is one.
  static long voluntarySwitches(long tid) {
    try {
      for (String line : read("/proc/self/task/" + tid + "/status").split("\n")) {
        if (line.startsWith("voluntary_ctxt_switches:")) {
          return Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
        }
      }
    } catch (IOException e) {
      // below
    }
    return -1;
  }

  static long residentBytes() {
    try {
      for (String line : read("/proc/self/smaps_rollup").split("\n")) {
        if (line.startsWith("Rss:")) {
          return 1024 * Long.parseLong(line.replaceAll("[^0-9]", ""));
        }
      }
    } catch (IOException e) {
      // below
    }
    return -1;
  }

  // After a full collection, as the C++ side reads RSS after malloc_trim; G1
  // hands the heap it shrinks back to the kernel on a concurrent thread, so
  // the reading waits until RSS has not changed for 100 ms (2 s at most).
  static long collectedResidentBytes() {
    System.gc();
    long last = residentBytes();
    for (final long until = System.nanoTime() + 2_000_000_000L; System.nanoTime() < until;) {
      sleepNanos(100_000_000L);
      final long now = residentBytes();
      if (now == last) break;
      last = now;
    }
    return last;
  }

  static long collectedHeapBytes() {
    System.gc();
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }

  // ---- The workloads (tools/bench/workloads/) ------------------------------

  // schedule: P threads schedule N far timeouts in total, dropping the handles.
  static void schedule(Params p, long[][] delays) throws Exception {
    final AtomicLong runs = new AtomicLong();
    final Wheel w = new Wheel(0);
    final long cpu0 = otherThreadsCpuNs();
    final Producers t = new Producers(delays.length,
        k -> scheduleAll(w.timer, delays[k], 0, delays[k].length, runs));
    w.settle();
    final long cpu = otherThreadsCpuNs() - cpu0;
    t.release();
    final double n = p.n;
    values.put("ns_per_call", t.wallNs() / n);
    values.put("caller_cpu_ns", t.cpuNs() / n);
    values.put("timer_cpu_ns", (cpu - t.cpuNs()) / n);
    values.put("faults_per_m", t.faults() / n * 1e6);
    values.put("throughput_mps", n / t.spanNs() * 1e3);
    w.stopAndCheck(p.n, runs);
  }

  // schedule_cancel: P threads each cancel every timeout right after
  // scheduling it. Netty's cancel() answers exactly; its worker takes the
  // cancelled ones off at its next tick, which the pending count waits for.
  static void scheduleCancel(Params p, long[][] delays) throws Exception {
    final AtomicLong runs = new AtomicLong(), cancelled = new AtomicLong();
    final long rss0 = collectedResidentBytes();
    final Wheel w = new Wheel(0);
    final Producers t = new Producers(delays.length,
        k -> cancelled.addAndGet(scheduleCancelAll(w.timer, delays[k], runs)));
    t.release();
    waitFor(() -> w.timer.pendingTimeouts() == 0, 10_000_000_000L);
    w.settle();
    values.put("ns_per_pair", t.wallNs() / (double) p.n);
    values.put("caller_cpu_ns", t.cpuNs() / (double) p.n);
    values.put("rss_held_mb", (collectedResidentBytes() - rss0) / 1e6);
    if (w.timer.pendingTimeouts() != 0 || cancelled.get() != p.n) {
      failures.add(cancelled.get() + " of " + p.n + " cancels succeeded, "
          + w.timer.pendingTimeouts() + " pending");
    }
    w.stopAndCheck(0, runs);
  }

  // schedule_depth: D far timeouts filed, then 200,000 more calls timed.
  static void scheduleDepth(Params p, long[] delays) throws Exception {
    final int depth = (int) p.variant;
    final AtomicLong runs = new AtomicLong();
    final Wheel w = new Wheel(0);
    scheduleAll(w.timer, delays, 0, depth, runs);
    w.settle();
    final Producers t =
        new Producers(1, k -> scheduleAll(w.timer, delays, depth, delays.length, runs));
    t.release();
    values.put("ns_per_call", t.wallNs() / (double) p.depthCalls);
    w.stopAndCheck(delays.length, runs);
  }

  // memory: N far timeouts left pending: heap in use per timeout, the task
  // included, each side after a full collection.
  static void memory(Params p, long[] delays) throws Exception {
    final AtomicLong runs = new AtomicLong();
    final long heap0 = collectedHeapBytes();
    final Wheel w = new Wheel(0);
    scheduleAll(w.timer, delays, 0, delays.length, runs);
    w.settle();
    values.put("bytes_per_pending", (collectedHeapBytes() - heap0) / (double) p.n);
    w.stopAndCheck(p.n, runs);
  }

  // release: N far timeouts pending, then all cancelled; RSS above the
  // baseline with N pending, and --release_wait later, after a collection.
  static void release(Params p, long[] delays) throws Exception {
    final AtomicLong runs = new AtomicLong();
    final long rss0 = collectedResidentBytes();
    final Wheel w = new Wheel(0);
    scheduleKeepingThenCancel(w, delays, runs, rss0);
    sleepNanos((long) (p.releaseWaitS * 1e9));
    values.put("rss_after_mb", (collectedResidentBytes() - rss0) / 1e6);
    if (!waitFor(() -> w.timer.pendingTimeouts() == 0, 10_000_000_000L)) {
      failures.add(w.timer.pendingTimeouts() + " pending after cancelling all");
    }
    w.stopAndCheck(0, runs);
  }

  // The handles live in this frame only: once it returns, only the wheel can
  // reach a timeout (the interpreter keeps every reference a frame wrote, dead
  // or not, until its method returns).
  static void scheduleKeepingThenCancel(Wheel w, long[] delays, AtomicLong runs, long rss0) {
    final Timeout[] handles = new Timeout[delays.length];
    for (int i = 0; i < delays.length; ++i) {
      handles[i] = w.timer.newTimeout(new CountingTask(runs, delays[i]), delays[i],
          TimeUnit.NANOSECONDS);
    }
    w.settle();
    values.put("rss_peak_mb", (residentBytes() - rss0) / 1e6);
    for (Timeout h : handles) h.cancel();
  }

  // Lateness: run time - (the time read just before the call + the delay).
  static final class RunTimes {
    final long[] ranAt, deadline;
    final AtomicLong done = new AtomicLong();

    RunTimes(int n) {
      ranAt = new long[n];
      deadline = new long[n];
    }
  }

  static final class RecordTask implements TimerTask {
    final RunTimes times;
    final int index;

    RecordTask(RunTimes times, int index) {
      this.times = times;
      this.index = index;
    }

    @Override
    public void run(Timeout t) {
      times.ranAt[index] = System.nanoTime();
      times.done.incrementAndGet();
    }
  }

  interface DelayOf {
    long delay(int i, long now);
  }

  // A RecordTask per slot, back to back, then until all ran (60 s after the
  // last deadline at most) and stop().
  static void scheduleAndAwait(Wheel w, RunTimes t, DelayOf delayOf) {
    long last = Long.MIN_VALUE;
    for (int i = 0; i < t.deadline.length; ++i) {
      final long now = System.nanoTime();
      final long d = Math.max(0, delayOf.delay(i, now));
      t.deadline[i] = now + d;
      last = Math.max(last, t.deadline[i]);
      w.timer.newTimeout(new RecordTask(t, i), d, TimeUnit.NANOSECONDS);
    }
    awaitRuns(w, t.done, t.deadline.length, last);
  }

  static void awaitRuns(Wheel w, AtomicLong done, long n, long lastDeadline) {
    waitFor(() -> done.get() >= n,
        Math.max(0, lastDeadline - System.nanoTime()) + 60_000_000_000L);
    w.timer.stop();
    if (done.get() < n) failures.add(done.get() + " of " + n + " ran");
  }

  // Lateness of every task that ran, sorted, in unitNs units; a failure if
  // any ran early.
  static double[] sortedLateness(RunTimes t, double unitNs) {
    final double[] late = new double[t.ranAt.length];
    int k = 0, early = 0;
    for (int i = 0; i < t.ranAt.length; ++i) {
      if (t.ranAt[i] == 0) continue;
      early += t.ranAt[i] < t.deadline[i] ? 1 : 0;
      late[k++] = (t.ranAt[i] - t.deadline[i]) / unitNs;
    }
    if (early > 0) failures.add(early + " ran early");
    final double[] out = Arrays.copyOf(late, k);
    Arrays.sort(out);
    return out;
  }

  static double quantile(double[] sorted, double q) {  // nearest rank
    if (sorted.length == 0) return 0;
    final int rank = (int) Math.ceil(q * sorted.length);
    return sorted[Math.min(Math.max(rank, 1), sorted.length) - 1];
  }

  // lateness: timeouts 10 ms-2 s away at the bench's tick. Netty has no
  // slack: both variants run alike, as on Asio and the heap timer.
  static void lateness(Params p, long[] delays) throws Exception {
    final RunTimes times = new RunTimes(delays.length);
    scheduleAndAwait(new Wheel(p.tickNs), times, (i, now) -> delays[i]);
    final double[] late = sortedLateness(times, 1e3);
    values.put("p50_us", quantile(late, 0.50));
    values.put("p99_us", quantile(late, 0.99));
    values.put("max_us", late.length == 0 ? 0 : late[late.length - 1]);
    values.put("early_fires", (double) Arrays.stream(late).filter(l -> l < 0).count());
  }

  // idle: 1, then N, timeouts far away at the bench's tick; the process's CPU
  // and the worker's wake-ups (its voluntary context switches) over a window.
  static void idle(Params p, long[] delays) throws Exception {
    final long earliest = p.variant == 1 ? 3_600_000_000_000L : (long) (p.farMinS * 1e9);
    final AtomicLong runs = new AtomicLong();
    final Wheel w = new Wheel(p.tickNs);
    final long t0 = System.nanoTime();
    scheduleAll(w.timer, delays, 0, delays.length, runs);
    waitFor(w.unfiled::isEmpty, 120_000_000_000L);
    sleepNanos((long) (p.idleSettleS * 1e9));
    final long wanted = (long) (p.idleS * 1e9);
    final long window = Math.min(wanted, t0 + earliest - 500_000_000L - System.nanoTime());
    if (window <= 0) failures.add("no idle window before the first deadline");
    if (window < wanted) notes.add(String.format("window cut to %.2f s", window / 1e9));
    if (window > 0) {
      final long cpu0 = processCpuNs();
      final long wake0 = voluntarySwitches(w.worker.tid), w0 = System.nanoTime();
      sleepNanos(window);
      final double seconds = (System.nanoTime() - w0) / 1e9;
      values.put("cpu_percent", (processCpuNs() - cpu0) / 1e9 / seconds * 100);
      values.put("wakeups_per_s", (voluntarySwitches(w.worker.tid) - wake0) / seconds);
    }
    w.stopAndCheck(delays.length, runs);
  }

  // mass_expiry: N deadlines in a 100 ms window opening --lead after the
  // first call; the first and the last task read the clocks, on the worker.
  static final class Record {
    long n, firstNs, lastNs, firstCpu, lastCpu;
    final AtomicLong done = new AtomicLong();
  }

  static final class MassTask implements TimerTask {
    final Record r;
    final long payload;

    MassTask(Record r, long payload) {
      this.r = r;
      this.payload = payload;
    }

    @Override
    public void run(Timeout t) {
      final long k = r.done.get() + 1;
      if (k == 1) {
        r.firstNs = System.nanoTime();
        r.firstCpu = MX.getCurrentThreadCpuTime();
      }
      if (k == r.n) {
        r.lastNs = System.nanoTime();
        r.lastCpu = MX.getCurrentThreadCpuTime();
      }
      r.done.lazySet(k);  // one writer: the worker
    }
  }

  static void massExpiry(Params p, long[] offsets) throws Exception {
    final Record r = new Record();
    r.n = offsets.length;
    final Wheel w = new Wheel(p.tickNs);
    final long open = System.nanoTime() + (long) (p.massExpiryLeadMs * 1e6);
    for (long o : offsets) {
      w.timer.newTimeout(new MassTask(r, o), open + o - System.nanoTime(), TimeUnit.NANOSECONDS);
    }
    if (System.nanoTime() > open) notes.add("scheduling overran the lead");
    final long lastDeadline = open + Arrays.stream(offsets).max().orElse(0);
    awaitRuns(w, r.done, r.n, lastDeadline);
    if (r.done.get() < r.n) return;
    values.put("per_worker_cpu_mps", r.n / (double) Math.max(1, r.lastCpu - r.firstCpu) * 1e3);
    values.put("per_wall_mps", r.n / (double) Math.max(1, r.lastNs - r.firstNs) * 1e3);
    values.put("last_run_ms", (r.lastNs - lastDeadline) / 1e6);
  }

  // What burst measures with, as the C++ BurstTimes: every task counts its
  // run, and one run in SAMPLE_EVERY by the order they run in (the first and
  // the last always) reads the clock.
  static final class BurstTimes {
    static final long SAMPLE_EVERY = 16;
    final long[] deadline, ranAt;
    final int[] of;
    final long total;
    final AtomicLong ordinal = new AtomicLong(), done = new AtomicLong();

    BurstTimes(int n) {
      deadline = new long[n];
      ranAt = new long[(int) (n / SAMPLE_EVERY) + 2];
      of = new int[ranAt.length];
      total = n;
    }
  }

  static final class SampledRecordTask implements TimerTask {
    final BurstTimes times;
    final int index;

    SampledRecordTask(BurstTimes times, int index) {
      this.times = times;
      this.index = index;
    }

    @Override
    public void run(Timeout t) {
      final long k = times.ordinal.getAndIncrement();
      final boolean last = k == times.total - 1;
      if (k % BurstTimes.SAMPLE_EVERY == 0 || last) {
        final int slot = last ? times.ranAt.length - 1 : (int) (k / BurstTimes.SAMPLE_EVERY);
        times.ranAt[slot] = System.nanoTime();
        times.of[slot] = index;
      }
      times.done.incrementAndGet();
    }
  }

  // burst: N timeouts due at one instant (variant 0), or each --burst_delay
  // after its own call (variant 1); lateness of the sampled runs.
  static void burst(Params p) throws Exception {
    final BurstTimes times = new BurstTimes((int) p.n);
    final Wheel w = new Wheel(p.tickNs);
    final long deadline = System.nanoTime() + (long) (p.burstLeadMs * 1e6);
    final long delay = (long) (p.burstDelayMs * 1e6);
    final boolean sameDelay = p.variant != 0;
    long lastDeadline = Long.MIN_VALUE;
    for (int i = 0; i < times.deadline.length; ++i) {
      final long now = System.nanoTime();
      final long d = Math.max(0, sameDelay ? delay : deadline - now);
      times.deadline[i] = now + d;
      lastDeadline = Math.max(lastDeadline, times.deadline[i]);
      w.timer.newTimeout(new SampledRecordTask(times, i), d, TimeUnit.NANOSECONDS);
    }
    awaitRuns(w, times.done, times.deadline.length, lastDeadline);
    if (!sameDelay && times.deadline[times.deadline.length - 1] > deadline) {
      notes.add("scheduling overran the deadline");
    }
    final double[] late = new double[times.ranAt.length];
    int k = 0, early = 0;
    for (int s = 0; s < times.ranAt.length; ++s) {
      if (times.ranAt[s] == 0) continue;  // no run took this sample
      final long l = times.ranAt[s] - times.deadline[times.of[s]];
      early += l < 0 ? 1 : 0;
      late[k++] = l / 1e6;
    }
    if (early > 0) failures.add(early + " ran early");
    final double[] sorted = Arrays.copyOf(late, k);
    Arrays.sort(sorted);
    values.put("p99_ms", quantile(sorted, 0.99));
    values.put("max_ms", sorted.length == 0 ? 0 : sorted[sorted.length - 1]);
    values.put("task_floor_ms", taskFloorMs((int) p.n));
  }

  // As the C++ Burst::TaskFloorMs(): the same tasks alone, back to back on
  // this thread, no timer: no timer's last run can come sooner than this.
  static double taskFloorMs(int n) {
    final BurstTimes alone = new BurstTimes(n);
    final long start = System.nanoTime();
    for (int i = 0; i < n; ++i) new SampledRecordTask(alone, i).run(null);
    return (System.nanoTime() - start) / 1e6;
  }
}
