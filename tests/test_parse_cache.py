"""What Spark's parser made of a text, kept on disk between runs (engine/runtime/jvm/ParseCache.java, engine.runtime.session).

The suite's session parses through the cache; each test points it at an empty folder of its own."""
import struct

import pytest
from pyspark.errors import ParseException

from conftest import run_cli
import engine.runtime.session as session


def _delta(before, after):
    return {k: after[k] - before[k] for k in before}


@pytest.fixture
def parse_cache(spark, tmp_path):
    """The session's parse cache pointed at an empty folder for the test, then back."""
    if session.parse_cache_counts(spark) is None:
        pytest.skip("no parse cache in this session: no engine jar (no JDK), or SSE_PARSE_CACHE=off")
    folder = tmp_path / "parsed"
    before = spark.sparkContext.getConf().get(session.PARSE_CACHE_CONF)
    assert spark._jvm.sse.ParseCache.install(str(folder)).startswith("installed")
    yield folder
    spark._jvm.sse.ParseCache.install(before)


def _output_id(df, i):
    attr = df._jdf.queryExecution().analyzed().output().apply(i)
    return attr.exprId().id(), attr.exprId().jvmId().toString()


def test_a_text_parsed_once_is_read_back_with_ids_of_its_own(spark, parse_cache):
    text = "SELECT id AS x, id * 2 AS y FROM range(3) WHERE id >= 0"
    start = session.parse_cache_counts(spark)
    a = spark.sql(text)
    first = _delta(start, session.parse_cache_counts(spark))
    assert first == {"hits": 0, "parsed": 1, "written": 1, "unreadable": 0, "unserializable": 0}
    files = list(parse_cache.glob("*.plan"))
    assert len(files) == 1 and files[0].read_bytes()[:2] == b"\xac\xed"  # Java serialization

    b, c = spark.sql(text), spark.sql(text)
    again = _delta(start, session.parse_cache_counts(spark))
    assert again == {"hits": 2, "parsed": 1, "written": 1, "unreadable": 0, "unserializable": 0}
    assert [tuple(r) for r in a.collect()] == [tuple(r) for r in b.collect()] == [(0, 0), (1, 2), (2, 4)]
    # The file holds the ids the first parse gave; each read gives its aliases new ones of this JVM,
    # as a new parse would. Shared ids would make the join below a join of x with itself.
    ids = [_output_id(df, 0) for df in (a, b, c)]
    assert len(set(ids)) == 3 and len({jvm for _, jvm in ids}) == 1
    joined = b.join(c, b["x"] == c["y"]).select(b["x"], c["x"])
    assert sorted(tuple(r) for r in joined.collect()) == [(0, 0), (2, 1)]


def test_what_is_not_kept(spark, parse_cache):
    start = session.parse_cache_counts(spark)
    # Spark substitutes settings into ${...}: the text alone does not say what it parses to.
    assert spark.sql("SELECT '${spark.sql.ansi.enabled}' AS v FROM range(1)").collect()[0].v == "true"
    # A text with parameters: what it parses to depends on them.
    for v in (5, 6):
        assert spark.sql("SELECT :v AS v FROM range(1) LIMIT 1", args={"v": v}).collect()[0].v == v
    # A failed parse is Spark's own error every time.
    for _ in range(2):
        with pytest.raises(ParseException, match="PARSE_SYNTAX_ERROR"):
            spark.sql("SELECT FROM WHERE no such statement at all")
    assert _delta(start, session.parse_cache_counts(spark))["written"] == 0
    assert list(parse_cache.glob("*.plan")) == []


def test_the_session_settings_are_part_of_the_key(spark, parse_cache):
    """A TIMESTAMP literal is read in the session's time zone as the text is parsed."""
    text = "SELECT CAST(TIMESTAMP '2020-01-01 00:00:00' AS BIGINT) AS s FROM range(1)"
    before = spark.conf.get("spark.sql.session.timeZone")
    try:
        got = {}
        for zone in ("UTC", "America/New_York", "UTC", "America/New_York"):
            spark.conf.set("spark.sql.session.timeZone", zone)
            got.setdefault(zone, set()).add(spark.sql(text).collect()[0].s)
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    assert got == {"UTC": {1577836800}, "America/New_York": {1577854800}}
    assert len(list(parse_cache.glob("*.plan"))) == 2


def test_an_unreadable_file_is_parsed_again(spark, parse_cache):
    text = "SELECT id + 1 AS n FROM range(2) ORDER BY n"
    spark.sql(text)
    (f,) = parse_cache.glob("*.plan")
    f.write_bytes(b"not a plan")
    start = session.parse_cache_counts(spark)
    assert [r.n for r in spark.sql(text).collect()] == [1, 2]
    assert _delta(start, session.parse_cache_counts(spark)) == {
        "hits": 0, "parsed": 1, "written": 1, "unreadable": 1, "unserializable": 0}
    assert f.read_bytes()[:2] == b"\xac\xed" and struct.unpack(">i", f.read_bytes()[6:10])[0] == 0x53535050


def test_a_model_read_back_names_its_files_as_when_parsed(capsys, spark, tmp_path, parse_cache, test_models_copy):
    """The plans read back keep where each expression came from: a failing action is named with its
    file and line, whether its SQL was parsed or read back."""
    step = test_models_copy / "actions_sql" / "counter" / "Step.sql"
    step.write_text(step.read_text().replace("SELECT x + s AS x,", "SELECT x + s + IF(x >= 2, 1 / 0, 0) AS x,"))
    line = step.read_text()[:step.read_text().index("1 / 0")].count("\n") + 1
    want = f"error: {step}:{line}: the model's SQL failed while computing depth 3: [DIVIDE_BY_ZERO]"
    counts = []
    for i in range(2):
        start = session.parse_cache_counts(spark)
        code, _, err = run_cli(capsys, "--models", str(test_models_copy), "check", "counter",
                               "--warehouse", str(tmp_path / f"wh{i}"))
        counts.append(_delta(start, session.parse_cache_counts(spark)))
        assert code == 2 and want in err, err
    assert counts[0]["written"] > 0 and counts[0]["unserializable"] == 0
    # The same texts, of which the second check parses one: the one that names its own warehouse.
    assert sum(counts[1].values()) - counts[1]["written"] == sum(counts[0].values()) - counts[0]["written"]
    assert counts[1]["parsed"] == counts[1]["written"] == 1 and counts[1]["hits"] > counts[0]["hits"]
