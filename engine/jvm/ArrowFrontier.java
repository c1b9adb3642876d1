package sse;

import java.util.Iterator;

import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.input.PortableDataStream;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.arrow.ArrowConverters$;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The held expansion's frontier (engine/expand.py): a file the driver writes as an Arrow IPC stream
 * before each level, read whole by the level's job and decoded by Spark's own Arrow reader into
 * rows. Each job reads what the file holds when it runs (the reader opens the file and reads it to
 * its end), so the plan over it is made once per run. Arrow instead of JSON text: no text to parse
 * in the JVM, none to write on the driver, and every column type read back exactly.
 */
public final class ArrowFrontier implements FlatMapFunction<PortableDataStream, InternalRow> {
    private static final long serialVersionUID = 1L;

    /** The rows of the Arrow IPC stream in the file {@code path}, in one partition. */
    public static JavaRDD<InternalRow> read(JavaSparkContext jsc, String path) {
        return jsc.binaryFiles(path, 1).values().flatMap(new ArrowFrontier());
    }

    @Override public Iterator<InternalRow> call(PortableDataStream file) {
        byte[] bytes = file.toArray();
        // The rows of a batch are views of its vectors, valid until the next row is asked for: the
        // plan's scan (RDDScanExec) copies each into an UnsafeRow at once.
        scala.collection.Iterator<InternalRow> rows =
                ArrowConverters$.MODULE$.fromIPCStreamWithIterator(bytes, TaskContext.get())._1();
        return CollectionConverters.asJava(rows);
    }

    /** Nothing to register (a class the driver calls); present for the engine's loader. */
    public static void register(SparkSession spark) { }
}
