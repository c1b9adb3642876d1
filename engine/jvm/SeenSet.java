package sse;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.codegen.Block;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeBlock;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.catalyst.expressions.codegen.FalseLiteral$;
import org.apache.spark.sql.catalyst.expressions.codegen.JavaCode;
import org.apache.spark.sql.types.BooleanType$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StringType;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * {@code sse_seen('name', fp, fp2)}: whether the fingerprint (fp, fp2) is in the JVM's set called
 * {@code name}, which the driver fills with the fingerprints of the states it has stored (TLC's
 * fingerprint set, kept beside the engine's own copy). The actions' job uses it to drop the state
 * columns of successors already seen, so that only the new states' rows are converted to Arrow and
 * sent to the driver; the driver's anti-join still decides which states are new.
 *
 * <p>The set lives in the JVM that runs the tasks: Spark's local mode, where driver and executors are
 * one JVM. In another JVM (a cluster's executors) no set has that name and the function is false:
 * nothing is dropped, only nothing is saved. A set is only written between jobs (the driver adds a
 * level's states after committing it), so the tasks read it without locks.
 */
public final class SeenSet extends Expression implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    private static final ConcurrentHashMap<String, Table> SETS = new ConcurrentHashMap<>();

    /** An open-addressing hash set of 128-bit fingerprints (pairs of longs; (0, 0) held aside). */
    static final class Table {
        private volatile long[] slots = new long[2 * 1024];
        private long size;
        private boolean hasZero;

        synchronized void add(long a, long b) {
            if (a == 0 && b == 0) {
                if (!hasZero) { hasZero = true; size++; }
                return;
            }
            long[] s = slots;
            if (2 * (size + 1) > s.length / 2) {  // load factor 1/2
                s = grow(s);
            }
            if (insert(s, a, b)) size++;
        }

        private static boolean insert(long[] s, long a, long b) {
            int mask = s.length / 2 - 1;
            int i = index(a, b, mask);
            while (true) {
                long x = s[2 * i], y = s[2 * i + 1];
                if (x == 0 && y == 0) { s[2 * i] = a; s[2 * i + 1] = b; return true; }
                if (x == a && y == b) return false;
                i = (i + 1) & mask;
            }
        }

        private long[] grow(long[] s) {
            long[] t = new long[s.length * 2];
            for (int i = 0; i < s.length; i += 2) {
                if (s[i] != 0 || s[i + 1] != 0) insert(t, s[i], s[i + 1]);
            }
            slots = t;
            return t;
        }

        boolean contains(long a, long b) {
            if (a == 0 && b == 0) return hasZero;
            long[] s = slots;
            int mask = s.length / 2 - 1;
            int i = index(a, b, mask);
            while (true) {
                long x = s[2 * i], y = s[2 * i + 1];
                if (x == a && y == b) return true;
                if (x == 0 && y == 0) return false;
                i = (i + 1) & mask;
            }
        }

        synchronized long size() { return size; }

        private static int index(long a, long b, int mask) {
            long h = a * 0x9E3779B97F4A7C15L ^ b;  // the fingerprints are hashes already
            return (int) (h ^ (h >>> 32)) & mask;
        }
    }

    /** Adds the fingerprints in {@code path} (little-endian pairs of longs) to set {@code name},
     * creating it; returns the set's size. */
    public static long addFile(String name, String path) throws IOException {
        Table t = SETS.computeIfAbsent(name, k -> new Table());
        try (FileChannel ch = FileChannel.open(Paths.get(path), StandardOpenOption.READ)) {
            long n = ch.size();
            if (n % 16 != 0) throw new IOException(path + ": " + n + " bytes, not pairs of longs");
            ByteBuffer buf = ByteBuffer.allocate(1 << 20).order(ByteOrder.LITTLE_ENDIAN);
            while (ch.read(buf) > 0 || buf.position() > 0) {
                buf.flip();
                while (buf.remaining() >= 16) t.add(buf.getLong(), buf.getLong());
                buf.compact();
                if (buf.position() > 0 && ch.position() >= n) throw new IOException(path + ": truncated");
            }
        }
        return t.size();
    }

    /** Adds the fingerprints in {@code pairs} (little-endian pairs of longs, a small level's, sent
     * through Py4J rather than a file) to set {@code name}, creating it; returns the set's size. */
    public static long addBytes(String name, byte[] pairs) {
        if (pairs.length % 16 != 0) {
            throw new IllegalArgumentException(pairs.length + " bytes, not pairs of longs");
        }
        Table t = SETS.computeIfAbsent(name, k -> new Table());
        ByteBuffer buf = ByteBuffer.wrap(pairs).order(ByteOrder.LITTLE_ENDIAN);
        while (buf.remaining() >= 16) t.add(buf.getLong(), buf.getLong());
        return t.size();
    }

    /** The size of set {@code name}, -1 when there is none. */
    public static long size(String name) {
        Table t = SETS.get(name);
        return t == null ? -1 : t.size();
    }

    public static boolean has(String name, long a, long b) {
        Table t = SETS.get(name);
        return t != null && t.contains(a, b);
    }

    /** Forgets set {@code name}; from then on the function is false for it. */
    public static void drop(String name) { SETS.remove(name); }

    /** Adds the function to the session's registry. */
    public static void register(SparkSession spark) {
        spark.sessionState().functionRegistry().createOrReplaceTempFunction("sse_seen", new Builder(), "scala_udf");
    }

    static final class Builder extends scala.runtime.AbstractFunction1<Seq<Expression>, Expression>
            implements java.io.Serializable {
        private static final long serialVersionUID = 1L;

        @Override public Expression apply(Seq<Expression> args) {
            if (args.size() != 3 || !(args.apply(0) instanceof Literal)
                    || !(((Literal) args.apply(0)).dataType() instanceof StringType)) {
                throw new IllegalArgumentException("sse_seen takes a set's name (a string literal) and two longs");
            }
            return new SeenSet(((Literal) args.apply(0)).value().toString(), args.apply(1), args.apply(2));
        }
    }

    private final String name;
    private final Expression fp, fp2;

    public SeenSet(String name, Expression fp, Expression fp2) {
        this.name = name;
        this.fp = fp;
        this.fp2 = fp2;
    }

    @Override public Object eval(InternalRow input) {
        Object a = fp.eval(input), b = fp2.eval(input);
        return a != null && b != null && has(name, (Long) a, (Long) b);
    }

    @Override public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
        ExprCode a = fp.genCode(ctx), b = fp2.genCode(ctx);
        String nameRef = ctx.addReferenceObj("seenName", name, "java.lang.String");
        String line = "\nfinal boolean " + ev.value() + " = !" + a.isNull() + " && !" + b.isNull() + " && "
                + SeenSet.class.getName() + ".has(" + nameRef + ", " + a.value() + ", " + b.value() + ");\n";
        Seq<String> parts = CollectionConverters.asScala(java.util.List.of(line)).toList();
        Seq<JavaCode> inputs = CollectionConverters.asScala(java.util.List.<JavaCode>of()).toList();
        Block code = a.code().$plus(b.code()).$plus(new CodeBlock(parts, inputs));
        return ev.copy(code, FalseLiteral$.MODULE$, ev.value());
    }

    @Override public Seq<Expression> children() {
        return CollectionConverters.asScala(java.util.List.of(fp, fp2)).toList();
    }
    @Override public DataType dataType() { return BooleanType$.MODULE$; }
    @Override public boolean nullable() { return false; }
    @Override public String prettyName() { return "sse_seen"; }
    @Override public Expression withNewChildrenInternal(IndexedSeq<Expression> c) {
        return new SeenSet(name, c.apply(0), c.apply(1));
    }
    @Override public int productArity() { return 3; }
    @Override public Object productElement(int n) {
        if (n == 0) return name;
        if (n == 1) return fp;
        if (n == 2) return fp2;
        throw new IndexOutOfBoundsException(String.valueOf(n));
    }
    @Override public boolean canEqual(Object that) { return that instanceof SeenSet; }
    @Override public boolean equals(Object o) {
        return o instanceof SeenSet && ((SeenSet) o).name.equals(name) && ((SeenSet) o).fp.equals(fp)
                && ((SeenSet) o).fp2.equals(fp2);
    }
    @Override public int hashCode() { return (name.hashCode() * 31 + fp.hashCode()) * 31 + fp2.hashCode(); }
}
