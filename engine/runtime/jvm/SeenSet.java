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
 *
 * <p>{@code sse_seen('name', fp, fp2, key)} is also true for a repeat within the level: a successor
 * whose fingerprint another row of the same level's job (one with another {@code _key}) claimed
 * first, once the driver has opened a level under that name ({@link #level}). Exactly one row per
 * fingerprint not stored keeps its state columns, whichever the tasks met first (on a large level
 * most successors can be such repeats); the driver takes that row's state columns and the path
 * columns (parent, action, key) of the first row in TLC's order, which the blanking leaves.
 * The same row met again (a task run again) has the same key and keeps its columns again.
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
            return (int) mix(a, b) & mask;
        }
    }

    private static final ConcurrentHashMap<String, Level> LEVELS = new ConcurrentHashMap<>();

    /** The fingerprints a level's rows claimed, and the key of the row that claimed each first:
     * segments of open-addressing tables, each under its own lock (two task threads, 64 locks). */
    static final class Level {
        private final Segment[] segments = new Segment[64];

        Level() {
            for (int i = 0; i < segments.length; i++) segments[i] = new Segment();
        }

        /** Whether another row (another key) claimed the fingerprint (a, b) first; else this one holds it. */
        boolean claimedElsewhere(long a, long b, long key) {
            long h = mix(a, b);
            return segments[(int) (h >>> 58)].claim(a, b, key, h);
        }
    }

    static final class Segment {
        private long[] slots = new long[3 * 64];  // fp, fp2, key
        private boolean[] used = new boolean[64];
        private int size;

        synchronized boolean claim(long a, long b, long key, long h) {
            if (2 * (size + 1) > used.length) grow();
            int mask = used.length - 1;
            int i = (int) h & mask;
            while (used[i]) {
                if (slots[3 * i] == a && slots[3 * i + 1] == b) return slots[3 * i + 2] != key;
                i = (i + 1) & mask;
            }
            used[i] = true;
            slots[3 * i] = a;
            slots[3 * i + 1] = b;
            slots[3 * i + 2] = key;
            size++;
            return false;
        }

        private void grow() {
            long[] s = slots;
            boolean[] u = used;
            slots = new long[s.length * 2];
            used = new boolean[u.length * 2];
            int mask = used.length - 1;
            for (int j = 0; j < u.length; j++) {
                if (!u[j]) continue;
                int i = (int) mix(s[3 * j], s[3 * j + 1]) & mask;
                while (used[i]) i = (i + 1) & mask;
                used[i] = true;
                System.arraycopy(s, 3 * j, slots, 3 * i, 3);
            }
        }
    }

    /** The slot hash of both tables (the set's low bits; a level's segment in the top 6, its slot in
     * the low bits). */
    private static long mix(long a, long b) {
        long h = a * 0x9E3779B97F4A7C15L ^ b;  // the fingerprints are hashes already
        return h ^ (h >>> 29);
    }

    /** Opens a fresh level under {@code name} (the rows of the job that follows claim their
     * fingerprints in it), or, when not {@code on}, closes it: repeats are then not blanked. */
    public static void level(String name, boolean on) {
        if (on) LEVELS.put(name, new Level());
        else LEVELS.remove(name);
    }

    /** Whether (a, b) is in set {@code name}, or another row of the open level claimed it first. */
    public static boolean seen(String name, long a, long b, long key) {
        if (has(name, a, b)) return true;
        Level level = LEVELS.get(name);
        return level != null && level.claimedElsewhere(a, b, key);
    }

    /** Adds the fingerprints in {@code path} (little-endian pairs of longs) to set {@code name},
     * creating it; returns the set's size. */
    public static long addFile(String name, String path) throws IOException {
        Table t = SETS.computeIfAbsent(name, k -> new Table());
        long[] p = readPairs(path);
        for (int i = 0; i < p.length; i += 2) t.add(p[i], p[i + 1]);
        return t.size();
    }

    /** The little-endian pairs of longs in the file at {@code path}, as one array (a, b, a, b, ...):
     * fingerprints the driver hands to this JVM (engine.search.seen_filter.pairs_file). */
    static long[] readPairs(String path) throws IOException {
        try (FileChannel ch = FileChannel.open(Paths.get(path), StandardOpenOption.READ)) {
            long n = ch.size();
            if (n % 16 != 0) throw new IOException(path + ": " + n + " bytes, not pairs of longs");
            if (n / 8 > Integer.MAX_VALUE - 8) throw new IOException(path + ": " + n + " bytes, too many pairs");
            long[] out = new long[(int) (n / 8)];
            ByteBuffer buf = ByteBuffer.allocate(1 << 20).order(ByteOrder.LITTLE_ENDIAN);
            int k = 0;
            while (k < out.length) {
                if (ch.read(buf) < 0) throw new IOException(path + ": truncated");
                buf.flip();
                while (buf.remaining() >= 8) out[k++] = buf.getLong();
                buf.compact();
            }
            return out;
        }
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

    /** Forgets the stored fingerprints of set {@code name}, keeping its level: from then on only
     * repeats within an open level are blanked (the driver no longer keeps the stored states). */
    public static void forgetStored(String name) {
        SETS.remove(name);
    }

    /** Forgets set {@code name}; from then on the function is false for it. */
    public static void drop(String name) {
        SETS.remove(name);
        LEVELS.remove(name);
    }

    /** Adds the function to the session's registry. */
    public static void register(SparkSession spark) {
        spark.sessionState().functionRegistry().createOrReplaceTempFunction("sse_seen", new Builder(), "scala_udf");
    }

    static final class Builder extends scala.runtime.AbstractFunction1<Seq<Expression>, Expression>
            implements java.io.Serializable {
        private static final long serialVersionUID = 1L;

        @Override public Expression apply(Seq<Expression> args) {
            if ((args.size() != 3 && args.size() != 4) || !(args.apply(0) instanceof Literal)
                    || !(((Literal) args.apply(0)).dataType() instanceof StringType)) {
                throw new IllegalArgumentException(
                        "sse_seen takes a set's name (a string literal), two longs and optionally a row's key");
            }
            return new SeenSet(((Literal) args.apply(0)).value().toString(), args.apply(1), args.apply(2),
                               args.size() == 4 ? args.apply(3) : null);
        }
    }

    private final String name;
    private final Expression fp, fp2, key;  // key: null in the three-argument form

    public SeenSet(String name, Expression fp, Expression fp2, Expression key) {
        this.name = name;
        this.fp = fp;
        this.fp2 = fp2;
        this.key = key;
    }

    @Override public Object eval(InternalRow input) {
        Object a = fp.eval(input), b = fp2.eval(input);
        if (a == null || b == null) return false;
        if (key == null) return has(name, (Long) a, (Long) b);
        Object k = key.eval(input);
        return k == null ? has(name, (Long) a, (Long) b) : seen(name, (Long) a, (Long) b, (Long) k);
    }

    @Override public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
        ExprCode a = fp.genCode(ctx), b = fp2.genCode(ctx);
        String nameRef = ctx.addReferenceObj("seenName", name, "java.lang.String");
        String cls = SeenSet.class.getName();
        Block code = a.code().$plus(b.code());
        String test;
        if (key == null) {
            test = cls + ".has(" + nameRef + ", " + a.value() + ", " + b.value() + ")";
        } else {
            ExprCode k = key.genCode(ctx);
            code = code.$plus(k.code());
            test = "(" + k.isNull() + " ? " + cls + ".has(" + nameRef + ", " + a.value() + ", " + b.value() + ") : "
                    + cls + ".seen(" + nameRef + ", " + a.value() + ", " + b.value() + ", " + k.value() + "))";
        }
        String line = "\nfinal boolean " + ev.value() + " = !" + a.isNull() + " && !" + b.isNull() + " && "
                + test + ";\n";
        Seq<String> parts = CollectionConverters.asScala(java.util.List.of(line)).toList();
        Seq<JavaCode> inputs = CollectionConverters.asScala(java.util.List.<JavaCode>of()).toList();
        return ev.copy(code.$plus(new CodeBlock(parts, inputs)), FalseLiteral$.MODULE$, ev.value());
    }

    @Override public Seq<Expression> children() {
        return CollectionConverters.asScala(key == null ? java.util.List.of(fp, fp2) : java.util.List.of(fp, fp2, key))
                .toList();
    }
    @Override public DataType dataType() { return BooleanType$.MODULE$; }
    @Override public boolean nullable() { return false; }
    @Override public String prettyName() { return "sse_seen"; }
    @Override public Expression withNewChildrenInternal(IndexedSeq<Expression> c) {
        return new SeenSet(name, c.apply(0), c.apply(1), c.size() > 2 ? c.apply(2) : null);
    }
    @Override public int productArity() { return key == null ? 3 : 4; }
    @Override public Object productElement(int n) {
        if (n == 0) return name;
        if (n == 1) return fp;
        if (n == 2) return fp2;
        if (n == 3 && key != null) return key;
        throw new IndexOutOfBoundsException(String.valueOf(n));
    }
    @Override public boolean canEqual(Object that) { return that instanceof SeenSet; }
    @Override public boolean equals(Object o) {
        return o instanceof SeenSet && ((SeenSet) o).name.equals(name) && ((SeenSet) o).fp.equals(fp)
                && ((SeenSet) o).fp2.equals(fp2) && java.util.Objects.equals(((SeenSet) o).key, key);
    }
    @Override public int hashCode() {
        return ((name.hashCode() * 31 + fp.hashCode()) * 31 + fp2.hashCode()) * 31 + java.util.Objects.hashCode(key);
    }
}
