package sse;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.api.java.function.FlatMapFunction2;
import org.apache.spark.api.java.function.Function;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.storage.StorageLevel;

import java.io.Serializable;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * The seen states' fingerprints as sorted arrays (engine/seen.py): a fragment is an RDD with one
 * {@link Run} a partition, the fingerprints Spark hash-partitioned by {@code (_fp, _fp2)} into that
 * partition, sorted, held as two {@code long[]}. A level's states, hash-partitioned the same way and
 * sorted, are probed against each fragment's run of their partition by galloping search: a handful
 * of states costs a few binary searches, a large level a merge over the arrays, never a scan of
 * rows read back from cached blocks (which made a small level's anti-join cost seconds once the run
 * had millions of states). Fragments with the same partitions merge without a shuffle.
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
}
