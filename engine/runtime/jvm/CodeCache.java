package sse;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.codegen.ByteCodeStats;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeAndComment;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeCompiler;
import org.apache.spark.sql.catalyst.expressions.codegen.GeneratedClass;
import org.sparkproject.guava.cache.CacheLoader;
import scala.Tuple2;
import scala.Tuple3;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.ref.Reference;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Spark's generated classes kept on disk between runs (engine.runtime.session: the code cache).
 *
 * <p>Spark compiles each piece of generated Java source with Janino and keeps the class in a cache
 * of its own, for the life of the JVM. A cold run compiles them all again: ledger chaining's 21
 * sources, 38 compilations (the driver's and the tasks' class loaders are two keys), 2.0 to 2.3 s
 * of Janino, most of it while the driver plans the actions' union. This loader sits in front of
 * Spark's: a source compiled once is kept as its class files, named by the SHA-256 of the source
 * (the cache's folder is per Spark version, engine jar and Java, engine.runtime.session), and a later
 * run defines those classes instead of compiling. The same source gives the same classes, so
 * nothing a run computes changes; a file that cannot be read is compiled again.
 */
public final class CodeCache extends CacheLoader<Object, Object> {
    private static final int MAGIC = 0x53534543;  // "SSEC"
    private static final int VERSION = 1;
    private static final String GENERATED = "org.apache.spark.sql.catalyst.expressions.GeneratedClass";

    private static final AtomicLong HITS = new AtomicLong();
    private static final AtomicLong COMPILED = new AtomicLong();
    private static final AtomicLong WRITTEN = new AtomicLong();
    private static final AtomicLong UNREADABLE = new AtomicLong();
    private static volatile boolean installed;  // in front of Spark's loader in this JVM

    private final CacheLoader<Object, Object> spark;  // Spark's own: Janino, timed, its metrics
    private volatile Path folder;

    private CodeCache(CacheLoader<Object, Object> spark, Path folder) {
        this.spark = spark;
        this.folder = folder;
    }

    /** Installed in front of Spark's cache of generated classes when the session's configuration
     * names a folder ({@code spark.sse.codeCache.dir}); nothing otherwise. */
    public static void register(SparkSession session) {
        String dir = session.sparkContext().getConf().get("spark.sse.codeCache.dir", "");
        if (!dir.isEmpty()) {
            long max = session.sparkContext().getConf().getLong("spark.sse.codeCache.maxBytes", 256L << 20);
            install(dir, max);
        }
    }

    /** Put the cache in front of Spark's loader (once a JVM; a second call changes the folder). */
    @SuppressWarnings("unchecked")
    public static synchronized String install(String dir, long maxBytes) {
        try {
            Path path = Paths.get(dir);
            Files.createDirectories(path);
            Class<?> generator = Class.forName("org.apache.spark.sql.catalyst.expressions.codegen.CodeGenerator$");
            Field cacheField = generator.getDeclaredField("cache");
            cacheField.setAccessible(true);
            Object nonFateSharing = cacheField.get(null);
            Object loading = nonFateSharing.getClass().getMethod("loadingCache").invoke(nonFateSharing);
            Field localField = field(loading.getClass(), "localCache");
            Object local = localField.get(loading);
            Field loaderField = field(local.getClass(), "defaultLoader");
            CacheLoader<Object, Object> current = (CacheLoader<Object, Object>) loaderField.get(local);
            if (current instanceof CodeCache) {
                ((CodeCache) current).folder = path;
            } else {
                loaderField.set(local, new CodeCache(current, path));
            }
            installed = true;
            trim(path, maxBytes);
            return "installed " + path;
        } catch (Exception | LinkageError e) {
            // Another Spark than the one this was written for: its own cache, as without this.
            return "not installed: " + e;
        }
    }

    private static Field field(Class<?> cls, String name) throws NoSuchFieldException {
        for (Class<?> c = cls; c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f;
            } catch (NoSuchFieldException e) {
                // a superclass's
            }
        }
        throw new NoSuchFieldException(cls.getName() + "." + name);
    }

    /** Oldest files first (a hit touches its file) until the folder is under three quarters of
     * {@code maxBytes}, when it is over: the classes, and the parse cache's plans (ParseCache). */
    private static void trim(Path path, long maxBytes) throws IOException {
        List<Path> files = new ArrayList<>();
        long total = 0;
        try (DirectoryStream<Path> dir = Files.newDirectoryStream(path, "*.{classes,plan}")) {
            for (Path p : dir) {
                files.add(p);
                total += Files.size(p);
            }
        }
        if (total <= maxBytes) {
            return;
        }
        Map<Path, FileTime> times = new HashMap<>();
        for (Path p : files) {
            times.put(p, Files.getLastModifiedTime(p));
        }
        files.sort((a, b) -> times.get(a).compareTo(times.get(b)));
        for (Path p : files) {
            if (total <= maxBytes / 4 * 3) {
                break;
            }
            long size = Files.size(p);
            Files.deleteIfExists(p);
            total -= size;
        }
    }

    /** Whether the cache is in front of Spark's loader in this JVM (its counts mean something). */
    public static boolean installed() {
        return installed;
    }

    /** hits, compiled, written, unreadable: this JVM's counts. */
    public static String counts() {
        return HITS.get() + "," + COMPILED.get() + "," + WRITTEN.get() + "," + UNREADABLE.get();
    }

    @Override
    public Object load(Object key) throws Exception {
        Tuple3<?, ?, ?> k = (Tuple3<?, ?, ?>) key;
        if (!"janino".equals(((CodeCompiler) k._2()).name())) {
            return spark.load(key);
        }
        ClassLoader parent = (ClassLoader) ((Reference<?>) k._1()).get();
        String body = ((CodeAndComment) k._3()).body();
        Path file = folder.resolve(sha256(body) + ".classes");
        if (parent != null && Files.isRegularFile(file)) {
            try {
                Object found = define(Files.readAllBytes(file), parent);
                HITS.incrementAndGet();
                touch(file);
                return found;
            } catch (Exception | LinkageError e) {
                UNREADABLE.incrementAndGet();
                Files.deleteIfExists(file);
            }
        }
        Object compiled = spark.load(key);
        COMPILED.incrementAndGet();
        save(file, (Tuple2<?, ?>) compiled);
        return compiled;
    }

    private static Object define(byte[] data, ClassLoader parent) throws Exception {
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(data));
        if (in.readInt() != MAGIC || in.readInt() != VERSION) {
            throw new IOException("not a code cache file");
        }
        ByteCodeStats stats = new ByteCodeStats(in.readInt(), in.readInt(), in.readInt());
        int n = in.readInt();
        Map<String, byte[]> classes = new HashMap<>();
        for (int i = 0; i < n; i++) {
            String name = in.readUTF();
            byte[] bytes = new byte[in.readInt()];
            in.readFully(bytes);
            classes.put(name, bytes);
        }
        Class<?> cls = new Classes(parent, classes).loadClass(GENERATED);
        GeneratedClass generated = (GeneratedClass) cls.getConstructor().newInstance();
        return new Tuple2<>(generated, stats);
    }

    /** The compiled classes as a file, written whole or not at all (another process may write it too). */
    @SuppressWarnings("unchecked")
    private void save(Path file, Tuple2<?, ?> compiled) {
        try {
            ClassLoader loader = compiled._1().getClass().getClassLoader();
            Field f = field(loader.getClass(), "classes");  // Janino's ByteArrayClassLoader
            Map<String, byte[]> classes = (Map<String, byte[]>) f.get(loader);
            ByteCodeStats stats = (ByteCodeStats) compiled._2();
            ByteArrayOutputStream buffer = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(buffer);
            out.writeInt(MAGIC);
            out.writeInt(VERSION);
            out.writeInt(stats.maxMethodCodeSize());
            out.writeInt(stats.maxConstPoolSize());
            out.writeInt(stats.numInnerClasses());
            out.writeInt(classes.size());
            for (Map.Entry<String, byte[]> e : classes.entrySet()) {
                out.writeUTF(e.getKey());
                out.writeInt(e.getValue().length);
                out.write(e.getValue());
            }
            out.flush();
            writeWhole(file, buffer.toByteArray());
            WRITTEN.incrementAndGet();
        } catch (Exception | LinkageError e) {
            // Not kept: the next run compiles it again.
        }
    }

    /** A file read back marked as used now: trimming drops the least recently used first. */
    static void touch(Path file) {
        try {
            Files.setLastModifiedTime(file, FileTime.fromMillis(System.currentTimeMillis()));
        } catch (IOException e) {
            // kept a little longer or not: only trimming reads it
        }
    }

    /** {@code bytes} as {@code file}, whole or not at all: a temporary file renamed (another process
     * may write the same file, or read it meanwhile). Also the parse cache's (ParseCache). */
    static void writeWhole(Path file, byte[] bytes) throws IOException {
        Path partial = Files.createTempFile(file.getParent(), ".partial-", ".tmp");
        try {
            Files.write(partial, bytes);
            Files.move(partial, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(partial);
        }
    }

    /** The SHA-256 of {@code body}'s UTF-8 bytes, in hexadecimal: a cache file's name. */
    static String sha256(String body) throws Exception {
        byte[] d = MessageDigest.getInstance("SHA-256").digest(body.getBytes(StandardCharsets.UTF_8));
        StringBuilder s = new StringBuilder(64);
        for (byte b : d) {
            s.append(Character.forDigit((b >> 4) & 0xF, 16)).append(Character.forDigit(b & 0xF, 16));
        }
        return s.toString();
    }

    /** The classes of one generated source, defined from their bytes as Janino's loader would. */
    private static final class Classes extends ClassLoader {
        private final Map<String, byte[]> bytes;

        Classes(ClassLoader parent, Map<String, byte[]> bytes) {
            super(parent);
            this.bytes = bytes;
        }

        @Override
        protected Class<?> findClass(String name) throws ClassNotFoundException {
            byte[] b = bytes.get(name);
            if (b == null) {
                throw new ClassNotFoundException(name);
            }
            return defineClass(name, b, 0, b.length);
        }
    }
}
