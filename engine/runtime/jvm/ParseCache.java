package sse;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.catalyst.parser.NamedParameterContext;
import org.apache.spark.sql.catalyst.parser.ParameterContext;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.parser.PositionalParameterContext;
import org.apache.spark.sql.catalyst.parser.SqlStatementSplitResult;
import org.apache.spark.sql.catalyst.parser.TemporalIdentifier;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractFunction2;
import scala.runtime.BoxedUnit;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.OutputStream;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What Spark's SQL parser made of a text, kept on disk between runs (engine.runtime.session: the parse cache).
 *
 * <p>A cold JVM parses slowly: ANTLR builds its prediction tables as it meets each rule, and the
 * parser's code runs interpreted until the JIT compiles it. Ledger chaining's 14 SQL files took
 * 0.52 s to parse in a fresh session and 0.05 s a second time, and compiling ANTLR was 1.4 s of C2's
 * time in a cold check. This parser sits in front of the session's (a session extension,
 * {@code spark.sql.extensions}): a plan or expression parsed once is kept in the code cache's folder
 * as Java serialization, named by the SHA-256 of the text, the kind of parse, and the session's SQL
 * settings (some change what a text parses to: the time zone of a TIMESTAMP literal, ANSI's keywords);
 * a later parse of the same text reads it back instead of parsing.
 *
 * <p>What is read back is what the parser would give, with one difference it must not have: the
 * ids of the named expressions it made ({@code ExprId}) belong to the JVM that wrote the file, and
 * two reads of one file would share them. Each read gives every id it meets a fresh one of this
 * JVM, the same one wherever the same id occurs in the plan, as a new parse would. Not kept: texts
 * with {@code ${}} (Spark substitutes settings and environment variables into them), parses with
 * parameters, failed parses (the error comes from Spark's parser every time), and plans Java cannot
 * serialize (counted). A file that cannot be read is parsed again and rewritten.
 */
public final class ParseCache extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    /** The folder the session's configuration names; empty or absent: the session's parser alone. */
    public static final String DIR = "spark.sse.parseCache.dir";
    private static final int MAGIC = 0x53535050;  // "SSPP"
    private static final int VERSION = 1;
    /** Texts shorter than this are parsed: a file a short statement would cost more than it saves. */
    private static final int MIN_CHARS = 24;

    private static final AtomicLong HITS = new AtomicLong();
    private static final AtomicLong PARSED = new AtomicLong();
    private static final AtomicLong WRITTEN = new AtomicLong();
    private static final AtomicLong UNREADABLE = new AtomicLong();
    private static final AtomicLong UNSERIALIZABLE = new AtomicLong();
    private static volatile Path override;  // install(): the folder every cached parser uses from now
    private static volatile boolean installed;

    /** Called by Spark with the session's extensions as each session is made. */
    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        extensions.injectParser(new AbstractFunction2<SparkSession, ParserInterface, ParserInterface>() {
            @Override
            public ParserInterface apply(SparkSession session, ParserInterface delegate) {
                String dir = session.sparkContext().getConf().get(DIR, "");
                if (dir.isEmpty()) {
                    return delegate;
                }
                installed = true;
                return new Parser(delegate, Paths.get(dir));
            }
        });
        return BoxedUnit.UNIT;
    }

    /** The engine's classes each have one (engine.runtime.jvm_ext); the parser is the session's already. */
    public static void register(SparkSession session) {
    }

    /** Whether a session of this JVM parses through the cache (its counts mean something). */
    public static boolean installed() {
        return installed;
    }

    /** Every cached parser of this JVM reads and writes {@code dir} from now (tests). */
    public static String install(String dir) throws IOException {
        Path path = Paths.get(dir);
        Files.createDirectories(path);
        override = path;
        return "installed " + path;
    }

    /** hits, parsed, written, unreadable, unserializable: this JVM's counts. */
    public static String counts() {
        return HITS.get() + "," + PARSED.get() + "," + WRITTEN.get() + "," + UNREADABLE.get() + ","
            + UNSERIALIZABLE.get();
    }

    private interface Parse<T> {
        T run() throws ParseException;
    }

    /** The session's parser, with plans and expressions read from the folder when it has them. */
    static final class Parser implements ParserInterface {
        private final ParserInterface delegate;
        private final Path folder;

        Parser(ParserInterface delegate, Path folder) {
            this.delegate = delegate;
            this.folder = folder;
        }

        @Override
        public LogicalPlan parsePlan(String text) throws ParseException {
            return cached("plan", text, () -> delegate.parsePlan(text));
        }

        @Override
        public LogicalPlan parsePlanWithParameters(String text, ParameterContext parameters) throws ParseException {
            if (!noParameters(parameters)) {
                return delegate.parsePlanWithParameters(text, parameters);
            }
            return cached("plan", text, () -> delegate.parsePlanWithParameters(text, parameters));
        }

        @Override
        public Expression parseExpression(String text) throws ParseException {
            return cached("expression", text, () -> delegate.parseExpression(text));
        }

        @Override
        public LogicalPlan parseQuery(String text) throws ParseException {
            return delegate.parseQuery(text);
        }

        @Override
        public TableIdentifier parseTableIdentifier(String text) throws ParseException {
            return delegate.parseTableIdentifier(text);
        }

        @Override
        public FunctionIdentifier parseFunctionIdentifier(String text) throws ParseException {
            return delegate.parseFunctionIdentifier(text);
        }

        @Override
        public Seq<String> parseMultipartIdentifier(String text) throws ParseException {
            return delegate.parseMultipartIdentifier(text);
        }

        @Override
        public TemporalIdentifier parseTemporalTableIdentifier(String text) throws ParseException {
            return delegate.parseTemporalTableIdentifier(text);
        }

        @Override
        public StructType parseRoutineParam(String text) throws ParseException {
            return delegate.parseRoutineParam(text);
        }

        @Override
        public SqlStatementSplitResult splitStatements(String text) {
            return delegate.splitStatements(text);
        }

        @Override
        public StructType parseTableSchema(String text) throws ParseException {
            return delegate.parseTableSchema(text);
        }

        @Override
        public DataType parseDataType(String text) throws ParseException {
            return delegate.parseDataType(text);
        }

        @SuppressWarnings("unchecked")
        private <T> T cached(String kind, String text, Parse<T> parse) throws ParseException {
            if (text.length() < MIN_CHARS || text.contains("${")) {
                return parse.run();
            }
            Path dir = override != null ? override : folder;
            Path file;
            try {
                file = dir.resolve(CodeCache.sha256(kind + "\0" + settings() + "\0" + text) + ".plan");
            } catch (Exception | LinkageError e) {
                return parse.run();
            }
            if (Files.isRegularFile(file)) {
                try {
                    T found = (T) read(Files.readAllBytes(file));
                    HITS.incrementAndGet();
                    CodeCache.touch(file);
                    return found;
                } catch (Exception | LinkageError e) {
                    UNREADABLE.incrementAndGet();
                    try {
                        Files.deleteIfExists(file);
                    } catch (IOException ignored) {
                        // written again below, or parsed again next time
                    }
                }
            }
            T parsed = parse.run();
            PARSED.incrementAndGet();
            save(file, parsed);
            return parsed;
        }
    }

    private static boolean noParameters(ParameterContext parameters) {
        if (parameters instanceof NamedParameterContext named) {
            return named.params().isEmpty();
        }
        if (parameters instanceof PositionalParameterContext positional) {
            return positional.params().isEmpty();
        }
        return false;
    }

    /** The session's SQL settings as the parser reads them: those set (Spark's own keys), and the time zone. */
    private static String settings() {
        SQLConf conf = SQLConf.get();
        TreeMap<String, String> set = new TreeMap<>();
        scala.collection.Iterator<scala.Tuple2<String, String>> it = conf.getAllConfs().iterator();
        while (it.hasNext()) {
            scala.Tuple2<String, String> kv = it.next();
            if (kv._1().startsWith("spark.sql.")) {
                set.put(kv._1(), kv._2());
            }
        }
        return conf.sessionLocalTimeZone() + "\0" + set;
    }

    private static void save(Path file, Object parsed) {
        byte[] bytes;
        try {
            ByteArrayOutputStream buffer = new ByteArrayOutputStream();
            try (Out out = new Out(buffer)) {
                out.writeInt(MAGIC);
                out.writeInt(VERSION);
                out.writeObject(parsed);
            }
            bytes = buffer.toByteArray();
        } catch (Exception | LinkageError e) {
            UNSERIALIZABLE.incrementAndGet();
            return;
        }
        try {
            Files.createDirectories(file.getParent());
            CodeCache.writeWhole(file, bytes);
            WRITTEN.incrementAndGet();
        } catch (IOException e) {
            // Not kept: the next run parses it again.
        }
    }

    private static Object read(byte[] bytes) throws IOException, ClassNotFoundException {
        try (In in = new In(new ByteArrayInputStream(bytes))) {
            if (in.readInt() != MAGIC || in.readInt() != VERSION) {
                throw new IOException("not a parse cache file");
            }
            return in.readObject();
        }
    }

    /** A relation's options (not serializable in Spark) as written. */
    private static final class Options implements Serializable {
        private static final long serialVersionUID = 1L;
        final HashMap<String, String> entries;

        Options(Map<String, String> entries) {
            this.entries = new HashMap<>(entries);
        }
    }

    private static final class Out extends ObjectOutputStream {
        Out(OutputStream out) throws IOException {
            super(out);
            enableReplaceObject(true);
        }

        @Override
        protected Object replaceObject(Object obj) {
            if (obj instanceof CaseInsensitiveStringMap options) {
                return new Options(options.asCaseSensitiveMap());
            }
            return obj;
        }
    }

    /** Reads a plan back with fresh expression ids: one for each id written, wherever it occurs. */
    private static final class In extends ObjectInputStream {
        private final Map<ExprId, ExprId> fresh = new HashMap<>();

        In(InputStream in) throws IOException {
            super(in);
            enableResolveObject(true);
        }

        @Override
        protected Object resolveObject(Object obj) {
            if (obj instanceof ExprId id) {
                return fresh.computeIfAbsent(id, k -> NamedExpression$.MODULE$.newExprId());
            }
            if (obj instanceof Options options) {
                return new CaseInsensitiveStringMap(options.entries);
            }
            return obj;
        }
    }
}
