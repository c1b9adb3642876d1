package sse;

import java.util.HashMap;
import java.util.Iterator;

import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.input.PortableDataStream;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.execution.arrow.ArrowConverters$;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The held expansion's frontier (engine/search/expand.py): a file the driver writes as an Arrow IPC stream
 * before each level, read whole by the level's job and decoded by Spark's own Arrow reader into
 * rows. Each job reads what the file holds when it runs (the reader opens the file and reads it to
 * its end), so the plan over it is made once per run. Arrow instead of JSON text: no text to parse
 * in the JVM, none to write on the driver, and every column type read back exactly.
 */
public final class ArrowFrontier implements FlatMapFunction<PortableDataStream, InternalRow> {
    private static final long serialVersionUID = 1L;

    /**
     * A task thread's projections that copy a batch's rows, by schema: made once a thread, not once
     * a file (generating a projection's Java source costs the task time even when its class is
     * cached). A projection writes into a buffer of its own: one a thread.
     */
    private static final ThreadLocal<HashMap<String, UnsafeProjection>> COPIES = ThreadLocal.withInitial(HashMap::new);

    /** The rows of {@code schema} (Spark's JSON form), or null: views of the batch's vectors. */
    private final String schemaJson;

    private ArrowFrontier(String schemaJson) {
        this.schemaJson = schemaJson;
    }

    /** The rows of the Arrow IPC stream in the file {@code path}, in one partition. */
    public static JavaRDD<InternalRow> read(JavaSparkContext jsc, String path) {
        return jsc.binaryFiles(path, 1).values().flatMap(new ArrowFrontier(null));
    }

    /**
     * The rows of the Arrow IPC stream in the file {@code path}, in one partition, each its own
     * {@code UnsafeRow} of {@code schemaJson}'s schema (Spark's JSON form of a {@code StructType},
     * the stream's columns): rows that can be cached as objects.
     */
    public static JavaRDD<InternalRow> readRows(JavaSparkContext jsc, String path, String schemaJson) {
        return jsc.binaryFiles(path, 1).values().flatMap(new ArrowFrontier(schemaJson));
    }

    @Override public Iterator<InternalRow> call(PortableDataStream file) {
        byte[] bytes = file.toArray();
        // The rows of a batch are views of its vectors, valid until the next row is asked for: the
        // plan's scan (RDDScanExec) copies each into an UnsafeRow at once, or (readRows) here.
        scala.collection.Iterator<InternalRow> rows =
                ArrowConverters$.MODULE$.fromIPCStreamWithIterator(bytes, TaskContext.get())._1();
        Iterator<InternalRow> views = CollectionConverters.asJava(rows);
        if (schemaJson == null) {
            return views;
        }
        UnsafeProjection copy = COPIES.get().computeIfAbsent(
                schemaJson, json -> UnsafeProjection$.MODULE$.create((StructType) DataType.fromJson(json)));
        return new Iterator<InternalRow>() {
            @Override public boolean hasNext() {
                return views.hasNext();
            }

            @Override public InternalRow next() {
                return copy.apply(views.next()).copy();
            }
        };
    }

    /** Nothing to register (a class the driver calls); present for the engine's loader. */
    public static void register(SparkSession spark) { }
}
