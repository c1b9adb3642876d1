package sse;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.expressions.codegen.Block;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeBlock;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.catalyst.expressions.codegen.FalseLiteral$;
import org.apache.spark.sql.catalyst.expressions.codegen.JavaCode;
import org.apache.spark.sql.types.BinaryType$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.unsafe.Platform;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * {@code sse_row_bytes(value)}: the value as the bytes of a one-field UnsafeRow, Spark's own binary
 * row format. For a given type the format is a function of the value alone (null fields and padding
 * are zeroed; Spark's hash aggregation compares these bytes to group rows) and can be read back, so
 * two different values never give the same bytes. The engine hashes them with {@code xxhash64}
 * (engine/search/fingerprint.py): a state's fingerprint without writing it as JSON text first.
 */
public final class RowBytes extends Expression implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    private final Expression child;
    // One projection a thread: a projection reuses its output buffer.
    private transient volatile ThreadLocal<UnsafeProjection> projection;

    public RowBytes(Expression child) { this.child = child; }

    /** Adds the function to the session's registry. */
    public static void register(SparkSession spark) {
        spark.sessionState().functionRegistry().createOrReplaceTempFunction("sse_row_bytes", new Builder(), "scala_udf");
    }

    static final class Builder extends scala.runtime.AbstractFunction1<Seq<Expression>, Expression>
            implements java.io.Serializable {
        private static final long serialVersionUID = 1L;

        @Override public Expression apply(Seq<Expression> args) {
            if (args.size() != 1) {
                throw new IllegalArgumentException("sse_row_bytes takes one argument, got " + args.size());
            }
            return new RowBytes(args.apply(0));
        }
    }

    private UnsafeProjection projection() {
        ThreadLocal<UnsafeProjection> p = projection;
        if (p == null) {
            final DataType t = child.dataType();
            p = ThreadLocal.withInitial(() -> UnsafeProjection.create(new DataType[]{t}));
            projection = p;
        }
        return p.get();
    }

    /** The bytes of {@code value} (of the child's type) as a one-field UnsafeRow, in a new array. */
    public byte[] bytes(Object value) {
        UnsafeRow row = projection().apply(new GenericInternalRow(new Object[]{value}));
        byte[] out = new byte[row.getSizeInBytes()];
        Platform.copyMemory(row.getBaseObject(), row.getBaseOffset(), out, Platform.BYTE_ARRAY_OFFSET, out.length);
        return out;
    }

    @Override public Object eval(InternalRow input) { return bytes(child.eval(input)); }

    @Override public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
        ExprCode c = child.genCode(ctx);
        String self = ctx.addReferenceObj("rowBytes", this, RowBytes.class.getName());
        String line = "\nfinal byte[] " + ev.value() + " = " + self + ".bytes(" + c.isNull()
                + " ? null : (Object) " + c.value() + ");\n";
        Seq<String> parts = CollectionConverters.asScala(java.util.List.of(line)).toList();
        Seq<JavaCode> inputs = CollectionConverters.asScala(java.util.List.<JavaCode>of()).toList();
        Block code = c.code().$plus(new CodeBlock(parts, inputs));
        return ev.copy(code, FalseLiteral$.MODULE$, ev.value());
    }

    @Override public Seq<Expression> children() {
        return CollectionConverters.asScala(java.util.List.of(child)).toList();
    }
    @Override public DataType dataType() { return BinaryType$.MODULE$; }
    @Override public boolean nullable() { return false; }
    @Override public String prettyName() { return "sse_row_bytes"; }
    @Override public Expression withNewChildrenInternal(IndexedSeq<Expression> c) { return new RowBytes(c.apply(0)); }
    @Override public int productArity() { return 1; }
    @Override public Object productElement(int n) {
        if (n == 0) return child;
        throw new IndexOutOfBoundsException(String.valueOf(n));
    }
    @Override public boolean canEqual(Object that) { return that instanceof RowBytes; }
    @Override public boolean equals(Object o) { return o instanceof RowBytes && ((RowBytes) o).child.equals(child); }
    @Override public int hashCode() { return 31 * child.hashCode() + 7; }
}
