package sse;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.api.java.function.FlatMapFunction2;
import org.apache.spark.api.java.function.Function;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.SparkEnv;
import org.apache.spark.storage.BlockResult;
import org.apache.spark.storage.RDDBlockId;
import org.apache.spark.storage.StorageLevel;
import org.apache.spark.unsafe.hash.Murmur3_x86_32;

import java.io.IOException;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The seen states' fingerprints as sorted arrays (engine/search/seen.py): a fragment is an RDD with one
 * {@link Run} a partition, the fingerprints Spark hash-partitioned by {@code (_fp, _fp2)} into that
 * partition, sorted, held as two {@code long[]}. A level's states, hash-partitioned the same way and
 * sorted, are probed against each fragment's run of their partition by galloping search: a handful
 * of states costs a few binary searches, a large level a merge over the arrays, never a scan of
 * rows read back from cached blocks (whose cost grows with every state seen, however small the
 * level). Fragments with the same partitions merge without a shuffle.
 *
 * Order: Spark's sort of two {@code bigint} columns ascending, that is signed, {@code _fp} first.
 */
public final class SortedSeen {
    private SortedSeen() { }

    /** One partition's fingerprints, sorted by (fp, fp2). */
    public static final class Run implements Serializable {
        private static final long serialVersionUID = 1L;
        final long[] fp;
        final long[] fp2;
        final int n;

        Run(long[] fp, long[] fp2, int n) {
            this.fp = fp;
            this.fp2 = fp2;
            this.n = n;
        }

        static int compare(long a, long b, long c, long d) {
            int x = Long.compare(a, c);
            return x != 0 ? x : Long.compare(b, d);
        }

        /** The first position at or after {@code from} whose pair is not below (a, b): galloping. */
        int seek(int from, long a, long b) {
            int lo = from, step = 1, hi = from;
            // gallop: find hi with pair(hi) >= (a, b), or hi = n
            while (hi < n && compare(fp[hi], fp2[hi], a, b) < 0) {
                lo = hi + 1;
                hi = from + step;
                step <<= 1;
            }
            if (hi > n) {
                hi = n;
            }
            while (lo < hi) {  // first in [lo, hi) not below (a, b); hi qualifies (or is n)
                int mid = (lo + hi) >>> 1;
                if (compare(fp[mid], fp2[mid], a, b) < 0) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            return lo;
        }
    }

    /**
     * A fragment: {@code sorted}'s rows (a query's {@code toRdd}: hash-partitioned by the two
     * fingerprint columns and sorted within partitions, at {@code fpIndex} and {@code fp2Index}), a
     * run a partition, kept in memory, else on disk, and cut from its lineage once the first job
     * over it ({@link #sizes}) has computed it.
     */
    public static JavaRDD<Run> pack(RDD<InternalRow> sorted, int fpIndex, int fp2Index) {
        JavaRDD<Run> runs = sorted.toJavaRDD().mapPartitions(new Pack(fpIndex, fp2Index), true);
        return keep(runs);
    }

    /** Pairs handed from the driver to the tasks of {@link #fromFile}'s or {@link #unseenPairs}'s job,
     * by a key of that call. */
    private static final ConcurrentHashMap<String, Pairs[]> HANDED = new ConcurrentHashMap<>();

    /** One partition's pairs as the driver scattered them (then sorted by a task), with their
     * positions in the file where asked: a level's states probed against the index. */
    static final class Pairs {
        final long[] fp;
        final long[] fp2;
        final int[] pos;
        int n;

        Pairs(int n, boolean positions) {
            this.fp = new long[n];
            this.fp2 = new long[n];
            this.pos = positions ? new int[n] : null;
            this.n = n;
        }
    }

    /** Spark's partition of a row by {@code (fp, fp2)}: {@code HashPartitioning}'s Murmur3 hash of the
     * two {@code bigint} columns (seed 42, the second hashed with the first's hash as its seed), pmod
     * {@code partitions}. */
    static int partitionOf(long fp, long fp2, int partitions) {
        int h = Murmur3_x86_32.hashLong(fp2, Murmur3_x86_32.hashLong(fp, 42));
        int r = h % partitions;
        return r < 0 ? r + partitions : r;
    }

    /** The pairs in the file at {@code path} (little-endian pairs of longs) in Spark's hash
     * partitions, in the file's order within each; with their positions in the file where asked. */
    static Pairs[] scatter(String path, int partitions, boolean positions) throws IOException {
        long[] pairs = SeenSet.readPairs(path);
        int n = pairs.length / 2;
        int[] part = new int[n];
        int[] count = new int[partitions];
        for (int i = 0; i < n; i++) {
            part[i] = partitionOf(pairs[2 * i], pairs[2 * i + 1], partitions);
            count[part[i]]++;
        }
        Pairs[] out = new Pairs[partitions];
        for (int p = 0; p < partitions; p++) {
            out[p] = new Pairs(count[p], positions);
        }
        int[] at = new int[partitions];
        for (int i = 0; i < n; i++) {
            Pairs r = out[part[i]];
            int k = at[part[i]]++;
            r.fp[k] = pairs[2 * i];
            r.fp2[k] = pairs[2 * i + 1];
            if (positions) {
                r.pos[k] = i;
            }
        }
        return out;
    }

    /** A job of one task a partition, each task given its partition's pairs of those handed over under
     * {@code key}, sorted. */
    private static JavaRDD<Pairs> sortedTasks(JavaSparkContext sc, String key, int partitions) {
        List<Integer> ids = new ArrayList<>(partitions);
        for (int p = 0; p < partitions; p++) {
            ids.add(p);
        }
        // (parallelize puts element p alone in partition p when there are as many as partitions)
        return sc.parallelize(ids, partitions).map(new Sorted(key));
    }

    /**
     * A fragment of the fingerprints in the file at {@code path} (little-endian pairs of longs held by
     * the driver: its copy of the stored states' fingerprints, or a committed level's), as
     * {@link #pack} makes it from rows Spark hash-partitioned into {@code partitions} and sorted,
     * without the rows read back and shuffled. This JVM reads and scatters the pairs; each task sorts
     * its partition's run. In local mode only: the runs reach the tasks through this JVM's memory.
     * The fragment is computed (and kept) before this returns.
     */
    public static JavaRDD<Run> fromFile(JavaSparkContext sc, String path, int partitions) throws IOException {
        String key = UUID.randomUUID().toString();
        HANDED.put(key, scatter(path, partitions, false));
        try {
            JavaRDD<Run> out = keep(sortedTasks(sc, key, partitions)
                    .map((Function<Pairs, Run>) r -> new Run(r.fp, r.fp2, r.n)));
            sizes(out);
            return out;
        } finally {
            HANDED.remove(key);
        }
    }

    /**
     * The positions in the file at {@code path} (little-endian pairs of longs: a level's states on
     * the driver) of the pairs no fragment holds, as little-endian ints in no particular order: a
     * level looked up in the index without a shuffle. This JVM reads and scatters the pairs into the
     * fragments' partitions; each task sorts its partition's and seeks them in each fragment's run in
     * turn. In local mode only, as {@link #fromFile}.
     */
    public static byte[] unseenPairs(JavaSparkContext sc, String path, List<JavaRDD<Run>> fragments, boolean here)
            throws IOException {
        int partitions = fragments.get(0).getNumPartitions();
        for (JavaRDD<Run> frag : fragments) {
            if (frag.getNumPartitions() != partitions) {
                throw new IllegalArgumentException("SortedSeen.unseenPairs: fragments of " + partitions + " and "
                        + frag.getNumPartitions() + " partitions");
            }
        }
        if (here) {
            byte[] out = unseenHere(scatter(path, partitions, true), fragments);
            if (out != null) {
                return out;
            }
        }
        String key = UUID.randomUUID().toString();
        HANDED.put(key, scatter(path, partitions, true));
        try {
            JavaRDD<Pairs> out = sortedTasks(sc, key, partitions);
            for (JavaRDD<Run> frag : fragments) {
                out = out.zipPartitions(frag, new ProbePairs());
            }
            return positions(out.map((Function<Pairs, int[]>) r -> Arrays.copyOf(r.pos, r.n)).collect());
        } finally {
            HANDED.remove(key);
        }
    }

    /** {@link #unseenPairs} without a job: each partition's pairs sorted and cut down here, against the
     * fragments' runs read from this JVM's block manager (local mode: the fragments' blocks are the
     * driver's). Null where a run is not there. */
    static byte[] unseenHere(Pairs[] parts, List<JavaRDD<Run>> fragments) {
        List<int[]> got = new ArrayList<>(parts.length);
        for (int p = 0; p < parts.length; p++) {
            Pairs x = parts[p];
            if (x.n == 0) {
                continue;
            }
            sort(x.fp, x.fp2, x.pos, x.n);
            for (JavaRDD<Run> frag : fragments) {
                Run run = localRun(frag, p);
                if (run == null) {
                    return null;
                }
                cut(x, run);
            }
            got.add(Arrays.copyOf(x.pos, x.n));
        }
        return positions(got);
    }

    /** Partition p's run of fragment {@code frag} from this JVM's block manager, or null. */
    static Run localRun(JavaRDD<Run> frag, int p) {
        scala.Option<BlockResult> got = SparkEnv.get().blockManager().getLocalValues(new RDDBlockId(frag.id(), p));
        if (got.isEmpty()) {
            return null;
        }
        scala.collection.Iterator<Object> it = got.get().data();
        Run run = it.hasNext() ? (Run) it.next() : null;
        while (it.hasNext()) {  // (read to its end: the block's read lock is then released)
            it.next();
        }
        return run;
    }

    /** The positions in {@code got}, as little-endian ints. */
    private static byte[] positions(List<int[]> got) {
        int n = 0;
        for (int[] g : got) {
            n += g.length;
        }
        ByteBuffer buf = ByteBuffer.allocate(4 * n).order(ByteOrder.LITTLE_ENDIAN);
        for (int[] g : got) {
            for (int i : g) {
                buf.putInt(i);
            }
        }
        return buf.array();
    }

    /** {@code x}'s pairs (sorted) cut down to those {@code run} does not hold. */
    static void cut(Pairs x, Run run) {
        int at = 0, k = 0;
        for (int i = 0; i < x.n; i++) {
            long a = x.fp[i], b = x.fp2[i];
            at = run.seek(at, a, b);
            if (at >= run.n || run.fp[at] != a || run.fp2[at] != b) {
                x.fp[k] = a;
                x.fp2[k] = b;
                x.pos[k++] = x.pos[i];
            }
        }
        x.n = k;
    }

    /** Partition p's pairs of the handed-over ones, sorted in place. */
    static final class Sorted implements Function<Integer, Pairs> {
        private static final long serialVersionUID = 1L;
        private final String key;

        Sorted(String key) {
            this.key = key;
        }

        @Override public Pairs call(Integer p) {
            Pairs[] handed = HANDED.get(key);
            if (handed == null) {
                throw new IllegalStateException("SortedSeen: the pairs are in the driver's JVM, not this one"
                        + " (local mode only)");
            }
            Pairs r = handed[p];
            sort(r.fp, r.fp2, r.pos, r.n);
            return r;
        }
    }

    /** Sorts the pairs (a[i], b[i]) of the first n by (a, b), signed, as Spark sorts two bigints; c
     * (if not null) is moved with them. */
    static void sort(long[] a, long[] b, int[] c, int n) {
        final int small = 32;
        for (int lo = 0; lo < n; lo += small) {  // insertion sort of each small range
            int hi = Math.min(lo + small, n);
            for (int i = lo + 1; i < hi; i++) {
                long x = a[i], y = b[i];
                int z = c == null ? 0 : c[i];
                int j = i - 1;
                while (j >= lo && Run.compare(a[j], b[j], x, y) > 0) {
                    a[j + 1] = a[j];
                    b[j + 1] = b[j];
                    if (c != null) {
                        c[j + 1] = c[j];
                    }
                    j--;
                }
                a[j + 1] = x;
                b[j + 1] = y;
                if (c != null) {
                    c[j + 1] = z;
                }
            }
        }
        long[] sa = a, sb = b, da = new long[n], db = new long[n];
        int[] sc = c, dc = c == null ? null : new int[n];
        for (int w = small; w < n; w <<= 1) {  // then merges of ranges twice as wide each pass
            for (int lo = 0; lo < n; lo += 2 * w) {
                int mid = Math.min(lo + w, n), hi = Math.min(lo + 2 * w, n), i = lo, j = mid, k = lo;
                while (i < mid && j < hi) {
                    int from = Run.compare(sa[i], sb[i], sa[j], sb[j]) <= 0 ? i++ : j++;
                    da[k] = sa[from];
                    db[k] = sb[from];
                    if (sc != null) {
                        dc[k] = sc[from];
                    }
                    k++;
                }
                System.arraycopy(sa, i, da, k, mid - i);
                System.arraycopy(sb, i, db, k, mid - i);
                if (sc != null) {
                    System.arraycopy(sc, i, dc, k, mid - i);
                }
                k += mid - i;
                System.arraycopy(sa, j, da, k, hi - j);
                System.arraycopy(sb, j, db, k, hi - j);
                if (sc != null) {
                    System.arraycopy(sc, j, dc, k, hi - j);
                }
            }
            long[] t = sa; sa = da; da = t;
            t = sb; sb = db; db = t;
            int[] u = sc; sc = dc; dc = u;
        }
        if (sa != a) {
            System.arraycopy(sa, 0, a, 0, n);
            System.arraycopy(sb, 0, b, 0, n);
            if (c != null) {
                System.arraycopy(sc, 0, c, 0, n);
            }
        }
    }

    /** The runs of {@code a} and {@code b} (the same partitions) merged: a fragment, as {@link #pack}'s. */
    public static JavaRDD<Run> merge(JavaRDD<Run> a, JavaRDD<Run> b) {
        if (a.getNumPartitions() != b.getNumPartitions()) {
            throw new IllegalArgumentException("SortedSeen.merge: " + a.getNumPartitions() + " and "
                    + b.getNumPartitions() + " partitions");
        }
        return keep(a.zipPartitions(b, new Merge()));
    }

    private static JavaRDD<Run> keep(JavaRDD<Run> runs) {
        runs.persist(StorageLevel.MEMORY_AND_DISK());
        runs.rdd().localCheckpoint();
        return runs;
    }

    /** The fingerprints a fragment holds, by partition (a job: the first computes the fragment). */
    public static long[] sizes(JavaRDD<Run> runs) {
        List<Integer> got = runs.map((Function<Run, Integer>) r -> r.n).collect();
        long[] out = new long[got.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = got.get(i);
        }
        return out;
    }

    /** A fragment's fingerprints as rows of two longs (to partition them anew). */
    public static RDD<InternalRow> rows(JavaRDD<Run> runs) {
        return runs.mapPartitions((FlatMapFunction<Iterator<Run>, InternalRow>) it -> {
            Run r = it.next();
            return new Iterator<InternalRow>() {
                private int i;

                @Override public boolean hasNext() {
                    return i < r.n;
                }

                @Override public InternalRow next() {
                    if (i >= r.n) {
                        throw new NoSuchElementException();
                    }
                    UnsafeRow row = new UnsafeRow(2);
                    row.pointTo(new byte[24], 24);
                    row.setLong(0, r.fp[i]);
                    row.setLong(1, r.fp2[i++]);
                    return row;
                }
            };
        }, true).rdd();
    }

    /**
     * The rows of {@code sorted} (hash-partitioned as the fragments are, by the same number of
     * partitions, and sorted within partitions) whose fingerprint no fragment holds. Rows pass
     * through one at a time (Spark may reuse a row object for the next).
     */
    public static RDD<InternalRow> unseen(RDD<InternalRow> sorted, int fpIndex, int fp2Index, List<JavaRDD<Run>> fragments) {
        JavaRDD<InternalRow> out = sorted.toJavaRDD();
        for (JavaRDD<Run> frag : fragments) {
            if (frag.getNumPartitions() != out.getNumPartitions()) {
                throw new IllegalArgumentException("SortedSeen.unseen: the states have " + out.getNumPartitions()
                        + " partitions, a fragment " + frag.getNumPartitions());
            }
            out = out.zipPartitions(frag, new Probe(fpIndex, fp2Index));
        }
        return out.rdd();
    }

    /** Nothing to register (the driver calls it); present for the engine's loader. */
    public static void register(SparkSession spark) { }

    static final class Pack implements FlatMapFunction<Iterator<InternalRow>, Run> {
        private static final long serialVersionUID = 1L;
        private final int fpIndex, fp2Index;

        Pack(int fpIndex, int fp2Index) {
            this.fpIndex = fpIndex;
            this.fp2Index = fp2Index;
        }

        @Override public Iterator<Run> call(Iterator<InternalRow> rows) {
            long[] a = new long[1024], b = new long[1024];
            int n = 0;
            while (rows.hasNext()) {
                InternalRow row = rows.next();
                if (n == a.length) {
                    int cap = a.length + (a.length >> 1);
                    a = Arrays.copyOf(a, cap);
                    b = Arrays.copyOf(b, cap);
                }
                a[n] = row.getLong(fpIndex);
                b[n] = row.getLong(fp2Index);
                if (n > 0 && Run.compare(a[n - 1], b[n - 1], a[n], b[n]) > 0) {
                    throw new IllegalStateException("SortedSeen.pack: the rows are not sorted by (fp, fp2)");
                }
                n++;
            }
            return Collections.singletonList(new Run(Arrays.copyOf(a, n), Arrays.copyOf(b, n), n)).iterator();
        }
    }

    static final class Merge implements FlatMapFunction2<Iterator<Run>, Iterator<Run>, Run> {
        private static final long serialVersionUID = 1L;

        @Override public Iterator<Run> call(Iterator<Run> xs, Iterator<Run> ys) {
            Run x = xs.next(), y = ys.next();
            int n = x.n + y.n, i = 0, j = 0, k = 0;
            long[] a = new long[n], b = new long[n];
            while (i < x.n && j < y.n) {
                if (Run.compare(x.fp[i], x.fp2[i], y.fp[j], y.fp2[j]) <= 0) {
                    a[k] = x.fp[i];
                    b[k++] = x.fp2[i++];
                } else {
                    a[k] = y.fp[j];
                    b[k++] = y.fp2[j++];
                }
            }
            System.arraycopy(x.fp, i, a, k, x.n - i);
            System.arraycopy(x.fp2, i, b, k, x.n - i);
            k += x.n - i;
            System.arraycopy(y.fp, j, a, k, y.n - j);
            System.arraycopy(y.fp2, j, b, k, y.n - j);
            return Collections.singletonList(new Run(a, b, n)).iterator();
        }
    }

    static final class Probe implements FlatMapFunction2<Iterator<InternalRow>, Iterator<Run>, InternalRow> {
        private static final long serialVersionUID = 1L;
        private final int fpIndex, fp2Index;

        Probe(int fpIndex, int fp2Index) {
            this.fpIndex = fpIndex;
            this.fp2Index = fp2Index;
        }

        @Override public Iterator<InternalRow> call(Iterator<InternalRow> rows, Iterator<Run> runs) {
            Run run = runs.next();
            return new Iterator<InternalRow>() {
                private int at;
                private InternalRow next;

                @Override public boolean hasNext() {
                    while (next == null && rows.hasNext()) {
                        InternalRow row = rows.next();
                        long a = row.getLong(fpIndex), b = row.getLong(fp2Index);
                        at = run.seek(at, a, b);
                        if (at >= run.n || run.fp[at] != a || run.fp2[at] != b) {
                            next = row;
                        }
                    }
                    return next != null;
                }

                @Override public InternalRow next() {
                    if (!hasNext()) {
                        throw new NoSuchElementException();
                    }
                    InternalRow row = next;
                    next = null;
                    return row;
                }
            };
        }
    }

    /** A partition's probed pairs (sorted) cut down to those the fragment's run there does not hold. */
    static final class ProbePairs implements FlatMapFunction2<Iterator<Pairs>, Iterator<Run>, Pairs> {
        private static final long serialVersionUID = 1L;

        @Override public Iterator<Pairs> call(Iterator<Pairs> probed, Iterator<Run> runs) {
            Pairs x = probed.next();
            cut(x, runs.next());
            return Collections.singletonList(x).iterator();
        }
    }
}
