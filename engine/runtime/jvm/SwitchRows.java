package sse;

import org.apache.spark.Dependency;
import org.apache.spark.Partition;
import org.apache.spark.SparkContext;
import org.apache.spark.TaskContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag$;

import java.util.ArrayList;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A held frontier (engine/search/expand.py): an RDD of a fixed number of partitions whose rows are another
 * RDD's, the one {@link #setTarget} or {@link #retargetOnce} named last. The union of every action
 * is planned once over it; before each level the driver points it at the level's frontier: a
 * Spark level's checkpoint of that many partitions (HeldRows), or a small level's Arrow files, a
 * partition a file, read once a task (HeldExpansion). The job run then reads those rows. The
 * target travels with each job's tasks (an RDD is serialized into the task binary when the job is
 * submitted, not when it is planned), so a job reads the target set before it was submitted.
 *
 * It declares no dependency: the target is a checkpoint (blocks kept by the block manager, read
 * where they are) or files read in the task, with narrow steps over it at most, never a shuffle
 * the scheduler would have to run first.
 */
public final class SwitchRows extends RDD<InternalRow> {
    private static final long serialVersionUID = 1L;

    /**
     * The rows a task read from a target partition ({@link #retargetOnce}), by task attempt and
     * partition, kept for the task's other reads of it and dropped when the task ends.
     */
    private static final ConcurrentHashMap<String, ArrayList<InternalRow>> READ = new ConcurrentHashMap<>();

    private final int parts;
    private RDD<InternalRow> target;
    private Partition[] targetParts;
    private boolean once;  // (retargetOnce) each partition read once a task, its rows kept for the task

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
        once = false;
    }

    /**
     * Points this at {@code rows} (a partition each, rows that stay valid once read: each its own
     * object), read once a task: the first read of a partition in a task keeps its rows, as a list,
     * for the task's other reads of it (the union's other branches, by part), until the task ends.
     * Not Spark's block manager, in a fresh persisted RDD a job: it samples the rows' sizes as they
     * go in, a cost every task pays.
     */
    public void retargetOnce(RDD<InternalRow> rows) {
        setTarget(rows);
        once = true;
    }

    public int numParts() {
        return parts;
    }

    @Override
    public scala.collection.Iterator<InternalRow> compute(Partition split, TaskContext context) {
        if (target == null) {
            throw new IllegalStateException("SwitchRows: no target set before the job");
        }
        if (!once) {
            return target.iterator(targetParts[split.index()], context);
        }
        String key = context.taskAttemptId() + ":" + id() + ":" + split.index();
        ArrayList<InternalRow> rows = READ.get(key);
        if (rows == null) {
            rows = new ArrayList<>();
            scala.collection.Iterator<InternalRow> it = target.iterator(targetParts[split.index()], context);
            while (it.hasNext()) {
                rows.add(it.next());
            }
            READ.put(key, rows);
            context.addTaskCompletionListener((org.apache.spark.util.TaskCompletionListener) ctx -> READ.remove(key));
        }
        return CollectionConverters.asScala(rows.iterator());
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
