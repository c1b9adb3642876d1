package sse;

import org.apache.spark.Dependency;
import org.apache.spark.Partition;
import org.apache.spark.SparkContext;
import org.apache.spark.TaskContext;
import org.apache.spark.rdd.PartitionPruningRDD;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.storage.StorageLevel;
import scala.collection.immutable.Seq;
import scala.reflect.ClassTag$;

/**
 * A Spark level's held frontier (engine/expand.py, HeldSparkLevel): an RDD of a fixed number of
 * partitions whose rows are another RDD's, the one {@link #setTarget} named last. The union of
 * every action is planned once over it; before each level the driver points it at the level's
 * frontier (a checkpoint of that many partitions), and the job run then reads those rows. The
 * target travels with each job's tasks (an RDD is serialized into the task binary when the job is
 * submitted, not when it is planned), so a job reads the target set before it was submitted.
 *
 * It declares no dependency: the target is a checkpoint (blocks kept by the block manager, read
 * where they are) with narrow steps over it at most, never a shuffle the scheduler would have to
 * run first.
 */
public final class SwitchRows extends RDD<InternalRow> {
    private static final long serialVersionUID = 1L;

    /** Every partition ({@link #retarget}'s filter). */
    private static final scala.Function1<Object, Object> ALL =
            (scala.Function1<Object, Object> & java.io.Serializable) i -> Boolean.TRUE;

    private final int parts;
    private RDD<InternalRow> target;
    private Partition[] targetParts;

    @SuppressWarnings("unchecked")
    public SwitchRows(SparkContext sc, int parts) {
        super(sc, (Seq<Dependency<?>>) (Seq<?>) scala.collection.immutable.Nil$.MODULE$,
              ClassTag$.MODULE$.apply(InternalRow.class));
        if (parts < 1) {
            throw new IllegalArgumentException("SwitchRows: at least one partition, not " + parts);
        }
        this.parts = parts;
    }

    /** The rows the next job reads: {@code rdd}'s, which must have as many partitions as this. */
    public void setTarget(RDD<InternalRow> rdd) {
        Partition[] ps = rdd.partitions();
        if (ps.length != parts) {
            throw new IllegalArgumentException("SwitchRows: the target has " + ps.length
                    + " partitions, this " + parts);
        }
        target = rdd;
        targetParts = ps;
    }

    /**
     * Points this at a new RDD over {@code rows}' partitions, persisted at {@code level}, and returns
     * it (the caller unpersists it after the job). A new RDD a job, so that nothing cached for an
     * earlier job is read: the rows are read again, once each, and kept for this job's branches. One
     * Py4J call instead of a dozen for a small level.
     */
    public RDD<InternalRow> retarget(RDD<InternalRow> rows, StorageLevel level) {
        RDD<InternalRow> fresh = PartitionPruningRDD.create(rows, ALL);
        fresh.persist(level);
        setTarget(fresh);
        return fresh;
    }

    public int numParts() {
        return parts;
    }

    @Override
    public scala.collection.Iterator<InternalRow> compute(Partition split, TaskContext context) {
        if (target == null) {
            throw new IllegalStateException("SwitchRows: no target set before the job");
        }
        return target.iterator(targetParts[split.index()], context);
    }

    @Override
    public Partition[] getPartitions() {
        Partition[] ps = new Partition[parts];
        for (int i = 0; i < parts; i++) {
            ps[i] = new Part(i);
        }
        return ps;
    }

    private static final class Part implements Partition {
        private static final long serialVersionUID = 1L;
        private final int i;

        Part(int i) {
            this.i = i;
        }

        @Override public int index() {
            return i;
        }

        @Override public int hashCode() {
            return i;
        }

        @Override public boolean equals(Object o) {
            return o instanceof Part && ((Part) o).i == i;
        }
    }

    /** Nothing to register (a class the driver constructs); present for the engine's loader. */
    public static void register(SparkSession spark) { }
}
