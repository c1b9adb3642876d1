package sse;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
import org.apache.spark.sql.catalyst.expressions.codegen.Block;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeBlock;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.catalyst.expressions.codegen.FalseLiteral$;
import org.apache.spark.sql.catalyst.expressions.codegen.JavaCode;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * {@code sse_canonical(state, plan)}: the smallest member of a state's orbit under symmetry, the
 * same value as the SQL the engine writes for it (engine/search/symmetry.py,
 * {@code canonical_fingerprint_stages}), computed in one call instead of one large generated
 * projection. {@code state} is a struct of the state's variables; {@code plan} is a JSON literal
 * made by symmetry.py: the permutations (identity first: renaming without fixed points, and per
 * symmetric set the old position of each new entry), each variable's shape (arrays indexed by a
 * set, arrays kept sorted) and the cheap key's parts. A permutation acts as the SQL's does:
 * strings renamed, a function's entries moved, a set sorted again. The images are ordered by
 * (cheap key, image) as Spark orders structs (ascending, nulls first; arrays element by element,
 * then by length; strings by their bytes) and the smallest is returned. Types beyond booleans,
 * integers, strings, arrays and structs are refused where the plan is made (symmetry.py's
 * {@code helper_supports}: the SQL runs instead).
 */
public final class Canonical extends Expression implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    private final Expression child;
    private final String planJson;
    private transient volatile Plan plan;

    public Canonical(Expression child, String planJson) { this.child = child; this.planJson = planJson; }

    /** Adds the function to the session's registry. */
    public static void register(SparkSession spark) {
        spark.sessionState().functionRegistry().createOrReplaceTempFunction("sse_canonical", new Builder(), "scala_udf");
    }

    static final class Builder extends scala.runtime.AbstractFunction1<Seq<Expression>, Expression>
            implements java.io.Serializable {
        private static final long serialVersionUID = 1L;

        @Override public Expression apply(Seq<Expression> args) {
            if (args.size() != 2 || !(args.apply(1) instanceof Literal)) {
                throw new IllegalArgumentException("sse_canonical takes a state and a plan (a string literal)");
            }
            return new Canonical(args.apply(0), String.valueOf(((Literal) args.apply(1)).value()));
        }
    }

    // ---- the plan ---------------------------------------------------------------------------------

    static final class Perm {
        UTF8String[] from, to;  // the renaming, without fixed points
        long[] prefix;          // each of from's first 8 bytes (UTF8String.getPrefix)
        int[][] pos;            // per symmetric set (its position in the plan), the old position of each new entry
        boolean renames() { return from.length > 0; }

        /** A few model values: a scan is cheaper than hashing each string, and a short one (a model
         *  value's name is) is compared as one long. */
        UTF8String renamed(UTF8String v) {
            int n = v.numBytes();
            if (n <= 8) {
                long x = v.getPrefix();
                for (int i = 0; i < from.length; i++) {
                    if (prefix[i] == x && from[i].numBytes() == n) return to[i];
                }
                return v;
            }
            for (int i = 0; i < from.length; i++) {
                if (from[i].numBytes() == n && from[i].equals(v)) return to[i];
            }
            return v;
        }
    }

    static final class Shape {
        final Map<String, String> index = new HashMap<>();
        final List<String> sets = new ArrayList<>();
        final List<String> paths = new ArrayList<>();
    }

    static final class KeyPart {
        int field;
        int set;     // the symmetric set's position in the plan
        int[] kept;  // null: the whole entry
    }

    static final class Plan {
        final StructType type;
        final Perm[] perms;
        final Node[] nodes;      // each variable's
        final KeyPart[] key;     // null: no cheap key
        final Node[] keyNodes;   // each key part's, an array

        Plan(StructType type, String json) {
            this.type = type;
            JsonNode root;
            try {
                root = new ObjectMapper().readTree(json);
            } catch (java.io.IOException e) {
                throw new IllegalArgumentException("sse_canonical: the plan is not JSON: " + e.getMessage(), e);
            }
            JsonNode ps = root.get("perms");
            List<String> sets = new ArrayList<>();
            ps.get(0).get("pos").fieldNames().forEachRemaining(sets::add);
            perms = new Perm[ps.size()];
            for (int i = 0; i < ps.size(); i++) {
                Perm p = new Perm();
                List<UTF8String> from = new ArrayList<>(), to = new ArrayList<>();
                for (Iterator<Map.Entry<String, JsonNode>> it = ps.get(i).get("m").fields(); it.hasNext(); ) {
                    Map.Entry<String, JsonNode> e = it.next();
                    from.add(UTF8String.fromString(e.getKey()));
                    to.add(UTF8String.fromString(e.getValue().asText()));
                }
                p.from = from.toArray(new UTF8String[0]);
                p.to = to.toArray(new UTF8String[0]);
                p.prefix = new long[p.from.length];
                for (int k = 0; k < p.from.length; k++) p.prefix[k] = p.from[k].getPrefix();
                p.pos = new int[sets.size()][];
                for (int s = 0; s < sets.size(); s++) {
                    JsonNode pos = ps.get(i).get("pos").get(sets.get(s));
                    p.pos[s] = new int[pos.size()];
                    for (int k = 0; k < pos.size(); k++) p.pos[s][k] = pos.get(k).asInt();
                }
                perms[i] = p;
            }
            JsonNode fs = root.get("fields");
            StructField[] vars = type.fields();
            nodes = new Node[vars.length];
            for (int i = 0; i < fs.size(); i++) {
                Shape s = new Shape();
                for (Iterator<Map.Entry<String, JsonNode>> it = fs.get(i).get("index").fields(); it.hasNext(); ) {
                    Map.Entry<String, JsonNode> e = it.next();
                    s.index.put(e.getKey(), e.getValue().asText());
                    s.paths.add(e.getKey());
                }
                for (JsonNode n : fs.get(i).get("sets")) {
                    s.sets.add(n.asText());
                    s.paths.add(n.asText());
                }
                nodes[i] = new Node(vars[i].dataType(), "", s, sets);
            }
            JsonNode ks = root.get("key");
            if (ks == null || ks.isNull()) {
                key = null;
                keyNodes = null;
            } else {
                key = new KeyPart[ks.size()];
                keyNodes = new Node[ks.size()];
                for (int i = 0; i < ks.size(); i++) {
                    KeyPart k = new KeyPart();
                    k.field = ks.get(i).get("field").asInt();
                    k.set = sets.indexOf(ks.get(i).get("set").asText());
                    JsonNode kept = ks.get(i).get("kept");
                    if (kept != null && !kept.isNull()) {
                        k.kept = new int[kept.size()];
                        for (int j = 0; j < k.kept.length; j++) k.kept[j] = kept.get(j).asInt();
                    }
                    DataType et = ((ArrayType) vars[k.field].dataType()).elementType();
                    if (k.kept != null) {
                        StructField[] efs = ((StructType) et).fields();
                        StructField[] kf = new StructField[k.kept.length];
                        for (int m = 0; m < kf.length; m++) kf[m] = efs[k.kept[m]];
                        et = new StructType(kf);
                    }
                    keyNodes[i] = new Node(new ArrayType(et, true), "", new Shape(), sets);
                    key[i] = k;
                }
            }
        }
    }

    private Plan plan() {
        Plan p = plan;
        if (p == null) {
            p = new Plan((StructType) child.dataType(), planJson);
            plan = p;
        }
        return p;
    }

    // ---- permuting a value, as symmetry.py's _Permuter writes it in SQL ------------------------------

    static final int STRING = 0, INT = 1, STRUCT = 2, ARRAY = 3, BOOLEAN = 4, LONG = 5, SHORT = 6, BYTE = 7;

    static int kind(DataType t) {
        if (t instanceof StringType) return STRING;
        if (t instanceof IntegerType) return INT;
        if (t instanceof StructType) return STRUCT;
        if (t instanceof ArrayType) return ARRAY;
        if (t instanceof BooleanType) return BOOLEAN;
        if (t instanceof LongType) return LONG;
        if (t instanceof ShortType) return SHORT;
        if (t instanceof ByteType) return BYTE;
        throw new IllegalArgumentException("sse_canonical does not order " + t.simpleString());
    }

    /** A value's place in a variable: its type, what a permutation does there, and the places below. */
    static final class Node {
        final int kind;
        final boolean touchedRenaming, touchedFixed;  // touched by a permutation that renames, or not
        final int set;        // an array indexed by this symmetric set (its position in the plan), or -1
        final boolean sorted; // an array kept sorted
        final Node elem;      // an array's elements
        final Node[] fields;  // a struct's fields
        final java.util.Comparator<Object> order = (x, y) -> compare(x, y, this);

        Node(DataType t, String path, Shape shape, List<String> sets) {
            kind = kind(t);
            boolean below = false;
            for (String p : shape.paths) below |= p.startsWith(path);
            touchedFixed = below;
            touchedRenaming = below || hasString(t);
            String s = shape.index.get(path);
            set = s == null ? -1 : sets.indexOf(s);
            sorted = shape.sets.contains(path);
            if (t instanceof ArrayType) {
                elem = new Node(((ArrayType) t).elementType(), path + "[]", shape, sets);
                fields = null;
            } else if (t instanceof StructType) {
                StructField[] fs = ((StructType) t).fields();
                fields = new Node[fs.length];
                for (int i = 0; i < fs.length; i++) {
                    fields[i] = new Node(fs[i].dataType(), path + "." + fs[i].name(), shape, sets);
                }
                elem = null;
            } else {
                elem = null;
                fields = null;
            }
        }
    }

    private static boolean hasString(DataType t) {
        if (t instanceof StringType) return true;
        if (t instanceof ArrayType) return hasString(((ArrayType) t).elementType());
        if (t instanceof StructType) {
            for (StructField f : ((StructType) t).fields()) if (hasString(f.dataType())) return true;
        }
        return false;
    }

    /** The value at {@code i}, read by its type's own getter: the generic {@code get(i, type)} looks
     *  the type up in a map each call. */
    static Object get(SpecializedGetters g, int i, Node n) {
        if (g instanceof GenericInternalRow) return ((GenericInternalRow) g).values()[i];
        if (g instanceof GenericArrayData) return ((GenericArrayData) g).array()[i];
        if (g.isNullAt(i)) return null;
        switch (n.kind) {
            case STRING: return g.getUTF8String(i);
            case INT: return g.getInt(i);
            case STRUCT: return g.getStruct(i, n.fields.length);
            case ARRAY: return g.getArray(i);
            case BOOLEAN: return g.getBoolean(i);
            case LONG: return g.getLong(i);
            case SHORT: return g.getShort(i);
            default: return g.getByte(i);
        }
    }

    /** The value as Java objects (structs and arrays as generic rows and arrays), read from Spark's
     *  binary row once: each permutation reads it again, and a read of a nested value from the
     *  binary row makes a new view object each time. */
    static Object decode(Object v, Node n) {
        if (v == null) return null;
        switch (n.kind) {
            case STRUCT: {
                InternalRow r = (InternalRow) v;
                Object[] out = new Object[n.fields.length];
                for (int i = 0; i < out.length; i++) out[i] = decode(get(r, i, n.fields[i]), n.fields[i]);
                return new GenericInternalRow(out);
            }
            case ARRAY: {
                ArrayData a = (ArrayData) v;
                Object[] out = new Object[a.numElements()];
                for (int j = 0; j < out.length; j++) out[j] = decode(get(a, j, n.elem), n.elem);
                return new GenericArrayData(out);
            }
            default:
                return v;
        }
    }

    private static Object permute(Object v, Node n, Perm perm) {
        if (v == null || !(perm.renames() ? n.touchedRenaming : n.touchedFixed)) return v;
        switch (n.kind) {
            case STRING:
                return perm.renamed((UTF8String) v);
            case STRUCT: {
                InternalRow r = (InternalRow) v;
                Object[] out = new Object[n.fields.length];
                for (int i = 0; i < out.length; i++) out[i] = permute(get(r, i, n.fields[i]), n.fields[i], perm);
                return new GenericInternalRow(out);
            }
            case ARRAY: {
                ArrayData a = (ArrayData) v;
                if (n.set >= 0) {
                    int[] pos = perm.pos[n.set];
                    Object[] out = new Object[pos.length];
                    for (int j = 0; j < pos.length; j++) out[j] = permute(get(a, pos[j], n.elem), n.elem, perm);
                    return new GenericArrayData(out);
                }
                Object[] out = new Object[a.numElements()];
                for (int j = 0; j < out.length; j++) out[j] = permute(get(a, j, n.elem), n.elem, perm);
                if (n.sorted) Arrays.sort(out, n.elem.order);
                return new GenericArrayData(out);
            }
            default:
                return v;
        }
    }

    // ---- Spark's ordering of the values a state holds -------------------------------------------------

    /** Spark's ascending order, nulls first. */
    static int compare(Object x, Object y, Node n) {
        if (x == null) return y == null ? 0 : -1;
        if (y == null) return 1;
        switch (n.kind) {
            case STRUCT: {
                InternalRow a = (InternalRow) x, b = (InternalRow) y;
                for (int i = 0; i < n.fields.length; i++) {
                    int c = compare(get(a, i, n.fields[i]), get(b, i, n.fields[i]), n.fields[i]);
                    if (c != 0) return c;
                }
                return 0;
            }
            case ARRAY: {
                ArrayData a = (ArrayData) x, b = (ArrayData) y;
                int len = Math.min(a.numElements(), b.numElements());
                for (int i = 0; i < len; i++) {
                    int c = compare(get(a, i, n.elem), get(b, i, n.elem), n.elem);
                    if (c != 0) return c;
                }
                return Integer.compare(a.numElements(), b.numElements());
            }
            // (binaryCompare: Spark's order of UTF8_BINARY strings; compareTo checks a testing flag each call)
            case STRING: return Integer.signum(((UTF8String) x).binaryCompare((UTF8String) y));
            case INT: return Integer.compare((Integer) x, (Integer) y);
            case BOOLEAN: return Boolean.compare((Boolean) x, (Boolean) y);
            case LONG: return Long.compare((Long) x, (Long) y);
            case SHORT: return Short.compare((Short) x, (Short) y);
            default: return Byte.compare((Byte) x, (Byte) y);
        }
    }

    // ---- comparing images without making them ------------------------------------------------------

    /** {@code perm} where it changes the value at {@code n}, else null (the value as it is). */
    private static Perm acting(Perm perm, Node n) {
        return perm == null || !(perm.renames() ? n.touchedRenaming : n.touchedFixed) ? null : perm;
    }

    /** {@code compare(permute(x, n, px), permute(y, n, py), n)}, where a null permutation leaves a value
     *  as it is, computed without making either image: strings are renamed as they are compared, a
     *  function's entries are read through the permutation's positions and a set's through the order
     *  its renamed entries sort in. */
    static int compareUnder(Object x, Perm px, Object y, Perm py, Node n) {
        px = acting(px, n);
        py = acting(py, n);
        if (px == null && py == null) return x == y ? 0 : compare(x, y, n);
        if (x == null) return y == null ? 0 : -1;
        if (y == null) return 1;
        switch (n.kind) {
            case STRING: {
                UTF8String a = px == null ? (UTF8String) x : px.renamed((UTF8String) x);
                UTF8String b = py == null ? (UTF8String) y : py.renamed((UTF8String) y);
                return Integer.signum(a.binaryCompare(b));
            }
            case STRUCT: {
                InternalRow a = (InternalRow) x, b = (InternalRow) y;
                for (int i = 0; i < n.fields.length; i++) {
                    Node f = n.fields[i];
                    int c = compareUnder(get(a, i, f), px, get(b, i, f), py, f);
                    if (c != 0) return c;
                }
                return 0;
            }
            case ARRAY: {
                ArrayData a = (ArrayData) x, b = (ArrayData) y;
                int[] ia = entries(a, px, n), ib = entries(b, py, n);
                int la = ia == null ? a.numElements() : ia.length, lb = ib == null ? b.numElements() : ib.length;
                int len = Math.min(la, lb);
                for (int j = 0; j < len; j++) {
                    int c = compareUnder(get(a, ia == null ? j : ia[j], n.elem), px,
                                         get(b, ib == null ? j : ib[j], n.elem), py, n.elem);
                    if (c != 0) return c;
                }
                return Integer.compare(la, lb);
            }
            default:
                return compare(x, y, n);
        }
    }

    /** Which old entry each entry of the array's image under {@code perm} comes from; null: each its own. */
    private static int[] entries(ArrayData a, Perm perm, Node n) {
        if (perm == null) return null;
        if (n.set >= 0) return perm.pos[n.set];
        if (!n.sorted) return null;
        // A set: its renamed entries sorted again (binary insertion: sets are small, and renaming
        // leaves most of one in order).
        int len = a.numElements();
        int[] order = new int[len];
        Object[] e = new Object[len];
        for (int j = 0; j < len; j++) e[j] = get(a, j, n.elem);
        for (int j = 0; j < len; j++) {
            int lo = 0, hi = j;
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (compareUnder(e[order[mid]], perm, e[j], perm, n.elem) <= 0) lo = mid + 1; else hi = mid;
            }
            System.arraycopy(order, lo, order, lo + 1, j - lo);
            order[lo] = j;
        }
        return order;
    }

    // ---- the smallest image -------------------------------------------------------------------------

    /** Per key part, each entry's rank among the part's entries (how many are smaller): a
     *  permutation's key is its parts' entries in its order, so two keys compare as their ranks do. */
    private static int[][] keyRanks(Plan p, InternalRow state) {
        int[][] ranks = new int[p.key.length][];
        for (int i = 0; i < p.key.length; i++) {
            KeyPart k = p.key[i];
            Node en = p.nodes[k.field].elem;
            ArrayData a = (ArrayData) get(state, k.field, p.nodes[k.field]);
            int len = p.perms[0].pos[k.set].length;
            Object[] e = new Object[len];
            for (int j = 0; j < len; j++) {
                Object v = a == null ? null : get(a, j, en);
                if (k.kept == null) {
                    e[j] = v;
                } else {
                    Object[] kept = new Object[k.kept.length];
                    for (int m = 0; m < kept.length; m++) {
                        kept[m] = v == null ? null : get((InternalRow) v, k.kept[m], en.fields[k.kept[m]]);
                    }
                    e[j] = new GenericInternalRow(kept);
                }
            }
            int[] r = new int[len];
            for (int j = 0; j < len; j++) {
                for (int l = 0; l < len; l++) if (compare(e[l], e[j], p.keyNodes[i].elem) < 0) r[j]++;
            }
            ranks[i] = r;
        }
        return ranks;
    }

    private static int compareKeys(Plan p, int[][] ranks, Perm a, Perm b) {
        for (int i = 0; i < ranks.length; i++) {
            int[] pa = a.pos[p.key[i].set], pb = b.pos[p.key[i].set];
            for (int j = 0; j < pa.length; j++) {
                int c = Integer.compare(ranks[i][pa[j]], ranks[i][pb[j]]);
                if (c != 0) return c;
            }
        }
        return 0;
    }

    /** The smallest image of {@code state} by (cheap key, image); the identity's is the state itself.
     *  The permutations with the smallest key are compared a variable at a time, as Spark compares
     *  structs, without making their images (see {@code compareUnder}), and only those still tied
     *  go on to the next variable: most states are settled by their first few variables. Only the
     *  winner's image is made, and none where the winner is the identity. */
    public InternalRow canonical(InternalRow state) {
        Plan p = plan();
        int n = p.perms.length;
        int[] live = new int[n];
        int m = 0;
        if (p.key == null) {
            for (int i = 0; i < n; i++) live[m++] = i;
        } else {
            int[][] ranks = keyRanks(p, state);
            for (int i = 0; i < n; i++) {
                int c = m == 0 ? -1 : compareKeys(p, ranks, p.perms[i], p.perms[live[0]]);
                if (c < 0) m = 0;
                if (c <= 0) live[m++] = i;
            }
        }
        StructField[] fs = p.type.fields();
        Object[] decoded = new Object[fs.length];
        int compared = 0;
        for (int f = 0; f < fs.length && m > 1; f++, compared++) {
            Node t = p.nodes[f];
            Object own = decode(get(state, f, t), t);
            decoded[f] = own;
            int best = live[0];
            int kept = 1;
            for (int k = 1; k < m; k++) {
                int i = live[k];
                Perm pi = i == 0 ? null : p.perms[i], pb = best == 0 ? null : p.perms[best];
                int c = compareUnder(own, pi, own, pb, t);
                if (c < 0) {
                    best = i;
                    kept = 0;
                }
                if (c <= 0) live[kept++] = i;
            }
            m = kept;
        }
        // Tied to the end: the images are equal, any one is the smallest.
        int w = live[0];
        if (w == 0) return state;
        Object[] image = new Object[fs.length];
        for (int f = 0; f < fs.length; f++) {
            // (a variable already read as Java objects is permuted from them: reading Spark's binary
            // row again makes a new view object for every nested value)
            Object v = f < compared ? decoded[f] : get(state, f, p.nodes[f]);
            image[f] = permute(v, p.nodes[f], p.perms[w]);
        }
        return new GenericInternalRow(image);
    }

    // ---- the expression -----------------------------------------------------------------------------

    @Override public Object eval(InternalRow input) {
        Object v = child.eval(input);
        return v == null ? null : canonical((InternalRow) v);
    }

    @Override public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
        ExprCode c = child.genCode(ctx);
        String self = ctx.addReferenceObj("canonical", this, Canonical.class.getName());
        String line = "\nfinal InternalRow " + ev.value() + " = " + c.isNull() + " ? null : " + self
                + ".canonical((InternalRow) " + c.value() + ");\n";
        Seq<String> parts = CollectionConverters.asScala(java.util.List.of(line)).toList();
        Seq<JavaCode> inputs = CollectionConverters.asScala(java.util.List.<JavaCode>of()).toList();
        Block code = c.code().$plus(new CodeBlock(parts, inputs));
        return ev.copy(code, c.isNull(), ev.value());
    }

    @Override public Seq<Expression> children() {
        return CollectionConverters.asScala(java.util.List.of(child)).toList();
    }
    @Override public DataType dataType() { return child.dataType(); }
    @Override public boolean nullable() { return child.nullable(); }
    @Override public String prettyName() { return "sse_canonical"; }
    @Override public Expression withNewChildrenInternal(IndexedSeq<Expression> c) { return new Canonical(c.apply(0), planJson); }
    @Override public int productArity() { return 2; }
    @Override public Object productElement(int n) {
        if (n == 0) return child;
        if (n == 1) return planJson;
        throw new IndexOutOfBoundsException(String.valueOf(n));
    }
    @Override public boolean canEqual(Object that) { return that instanceof Canonical; }
    @Override public boolean equals(Object o) {
        return o instanceof Canonical && ((Canonical) o).child.equals(child) && ((Canonical) o).planJson.equals(planJson);
    }
    @Override public int hashCode() { return 31 * child.hashCode() + planJson.hashCode(); }
}
