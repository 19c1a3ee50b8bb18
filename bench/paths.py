"""Each timed path of the benchmark: the chatgate jobs, the baselines and the ceilings.

Every function takes the source path and a scratch directory, does its whole
work (read, check, write where the path writes), and returns the failing rows it
found, so the harness can check that every path agrees before comparing speeds.
"""


import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from chatgate import read_delta
from chatgate.job.config import build_config
from chatgate.job.runner import run
from chatgate.rules import ChatFormat, check_array

from .native_sql import duckdb_codes_sql, spark_codes_sql

FMT = ChatFormat(first_role="user", last_role="assistant")
CHECKS = {"first_role": "user", "last_role": "assistant"}


def _scratch(base: Path, name: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=base))
    return path


def job(
    engine: str, source: str, base: Path, *, dedup: str = "auto", backend=None, valid: bool = False,
    threads: int | None = None, fix: str | None = None, checks: dict | None = None, result: list | None = None,
) -> int:
    """The chatgate job end to end: read, check, write the quarantine and the summary.

    The baselines write the failing rows only, so by default the job writes no
    valid table either (a copy of every passing row, when asked for). `checks` adds options
    to the check; `result` (a list) receives the run's result.
    """
    out = _scratch(base, f"job-{engine}")
    outputs = {"quarantine": str(out / "q"), "summary": str(out / "s")}
    if valid:
        outputs["valid"] = str(out / "v")
    if fix:
        outputs["fixed"] = str(out / "f")
    config = build_config(
        {
            "source": source,
            "engine": engine,
            "columns": ["messages"],
            "checks": {**CHECKS, **(checks or {})},
            "dedup": dedup,
            "outputs": outputs,
            "run_id": "bench",
            **({"embedded": {"threads": threads}} if threads else {}),
            **({"fix": fix} if fix else {}),
        },
        {},
    )
    done = run(config, backend)
    shutil.rmtree(out, ignore_errors=True)
    if result is not None:
        result.append(done)
    return done.steps[0].judged.failed


def duckdb_native_sql(source: str, base: Path) -> int:
    """DuckDB SQL computing the codes, failing rows written to Delta."""
    import duckdb

    out = _scratch(base, "duckdb-sql")
    con = duckdb.connect()
    con.register("src", read_delta(source))
    sql = f"SELECT s.*, c.pb_reason_ FROM src s JOIN ({duckdb_codes_sql('src', 'messages', FMT)}) c USING (id)"
    reader = con.execute(f"SELECT * FROM ({sql}) WHERE pb_reason_ IS NOT NULL").fetch_record_batch(50_000)
    write_deltalake(str(out / "q"), reader)
    failed = read_delta(str(out / "q")).count_rows()
    shutil.rmtree(out, ignore_errors=True)
    return failed


def duckdb_ceiling(source: str, base: Path) -> int:
    """DuckDB reading the column and hashing every value: the floor of any check."""
    import duckdb

    con = duckdb.connect()
    con.register("src", read_delta(source))
    con.execute("SELECT sum(hash(messages)), sum(strlen(messages)) FROM src").fetchall()
    return 0


def spark_native_sql(spark, source: str, base: Path) -> int:
    """Spark SQL (from_json + higher-order functions) computing the codes, failing rows written.

    A `rand()` column in the projection stops the optimizer from copying the whole
    CASE (from_json included) into the filter below it, which costs 10x.
    """
    from pyspark.sql import functions as F

    out = _scratch(base, "spark-sql")
    spark.read.format("delta").load(source).createOrReplaceTempView("src")
    codes = spark.sql(spark_codes_sql("src", "messages", FMT)).withColumn("_barrier", F.rand())
    source_df = spark.table("src")
    failing = codes.filter("pb_reason_ IS NOT NULL").drop("_barrier")
    source_df.join(failing, "id").write.format("delta").save(str(out / "q"))
    failed = spark.read.format("delta").load(str(out / "q")).count()
    shutil.rmtree(out, ignore_errors=True)
    return failed


def spark_driver_path(spark, source: str, base: Path) -> tuple[int, int]:
    """The pointblank-style path: distinct values collected to the driver, checked there, joined back.

    Returns the failing rows and the bytes of text the driver held.
    """
    from pyspark.sql import functions as F

    out = _scratch(base, "driver")
    df = spark.read.format("delta").load(source)
    distinct = df.select("messages").distinct().toArrow()
    held = distinct.nbytes
    codes = check_array(distinct.column(0), FMT)
    failing = pa.table({"messages": distinct.column(0), "pb_reason_": codes}).filter(codes.is_valid())
    failing_df = spark.createDataFrame(failing)
    df.join(F.broadcast(failing_df), "messages").write.format("delta").save(str(out / "q"))
    failed = spark.read.format("delta").load(str(out / "q")).count()
    shutil.rmtree(out, ignore_errors=True)
    return failed, held


def spark_pandas_udf_per_row(spark, source: str, base: Path) -> int:
    """A Series-to-Series pandas UDF over every row (no dedup), failing rows written."""
    import pandas as pd
    from pyspark.sql import functions as F

    @F.pandas_udf("string")
    def reason(values: pd.Series) -> pd.Series:
        return check_array(pa.array(values, pa.string()), FMT).to_pandas()

    out = _scratch(base, "udf")
    df = spark.read.format("delta").load(source)
    df.withColumn("pb_reason_", reason("messages")).filter("pb_reason_ IS NOT NULL").write.format("delta").save(
        str(out / "q")
    )
    failed = spark.read.format("delta").load(str(out / "q")).count()
    shutil.rmtree(out, ignore_errors=True)
    return failed


def spark_mapinarrow_handoff(spark, source: str, base: Path) -> int:
    """Every column of every row handed to Python in Arrow batches and a count handed back: the
    bare JVM-to-Python crossing a check by `mapInArrow` pays before it checks anything."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    def count(batches):
        yield pa.record_batch({"n": [sum(batch.num_rows for batch in batches)]})

    df = spark.read.format("delta").load(source)
    df.mapInArrow(count, "n long").agg(F.sum("n")).collect()
    return 0


def spark_ceiling(spark, source: str, base: Path) -> int:
    """Spark scanning the column and hashing every value: the floor of any check."""
    from pyspark.sql import functions as F

    df = spark.read.format("delta").load(source)
    # bit_xor, not sum: a sum of 64-bit hashes overflows (an error under ANSI mode).
    df.select(F.sum(F.octet_length("messages")), F.bit_xor(F.xxhash64("messages"))).collect()
    return 0
