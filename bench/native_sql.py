"""The baselines that compute the same problem codes in each engine's own SQL.

They cover what the synthetic data holds (JSON text of a list or of an object with
"messages"; string contents) and agree with chatgate on it: the benchmark checks
that before it times anything.
"""

from __future__ import annotations

from chatgate.rules import ChatFormat


def _in_list(roles) -> str:
    return ", ".join("'" + r.replace("'", "''") + "'" for r in roles)


def duckdb_codes_sql(table: str, column: str, fmt: ChatFormat) -> str:
    """SELECT id, pb_reason_ for every row of `table`, in DuckDB SQL.

    Blank content is `regexp_full_match(x, '\\s*')`, not trim(): about 5x faster.
    """
    c = column
    first = f"WHEN turns[1] IS DISTINCT FROM '{fmt.first_role}' THEN 'first_role'" if fmt.first_role else ""
    last = f"WHEN roles[-1] <> '{fmt.last_role}' THEN 'last_role'" if fmt.last_role else ""
    alternate = (
        "WHEN list_bool_or(list_transform(turns, lambda x, i: i > 1 AND x = turns[i - 1])) THEN 'not_alternating'"
        if fmt.alternate
        else ""
    )
    system = (
        "WHEN list_bool_or(list_transform(roles, lambda x, i: i > 1 AND x = 'system')) THEN 'system_position'"
        if fmt.has_system
        else ""
    )
    empty = (
        ""
        if fmt.allow_empty
        else f"""WHEN list_bool_or(list_transform(msgs, lambda x:
          CASE json_type(x, '$.{fmt.content_key}')
            WHEN 'VARCHAR' THEN regexp_full_match(json_extract_string(x, '$.{fmt.content_key}'), '\\s*')
            WHEN 'ARRAY' THEN coalesce(list_bool_and(list_transform(
              json_extract(x, '$.{fmt.content_key}[*]'), lambda p: json_extract_string(p, '$.type') = 'text'
              AND regexp_full_match(coalesce(json_extract_string(p, '$.text'), ''), '\\s*'))), true)
            ELSE coalesce(json_type(x, '$.{fmt.content_key}'), 'NULL') = 'NULL'
          END)) THEN 'empty_content'"""
    )
    missing = "NULL" if fmt.na_pass else "'not_messages'"
    return f"""
WITH p AS (
  SELECT id, {c} AS v,
    CASE WHEN {c} IS NULL OR NOT json_valid({c}) THEN NULL
         WHEN json_type({c}) = 'ARRAY' THEN json_extract({c}, '$[*]')
         WHEN json_type({c}) = 'OBJECT' AND json_type({c}, '$.messages') = 'ARRAY'
           THEN json_extract({c}, '$.messages[*]')
    END AS msgs
  FROM {table}
), r AS (
  SELECT id, v, msgs,
    list_transform(msgs, lambda x: CASE WHEN json_type(x) = 'OBJECT' AND json_type(x, '$.{fmt.role_key}') = 'VARCHAR'
                                   THEN json_extract_string(x, '$.{fmt.role_key}') END) AS roles
  FROM p
), q AS (
  SELECT *, CASE WHEN roles[1] = 'system' THEN roles[2:] ELSE roles END AS turns FROM r
)
SELECT id,
  CASE
    WHEN v IS NULL THEN {missing}
    WHEN msgs IS NULL THEN 'not_messages'
    WHEN len(msgs) = 0 THEN 'no_messages'
    WHEN list_bool_or(list_transform(roles, lambda x: x IS NULL)) THEN 'bad_message'
    WHEN list_bool_or(list_transform(roles, lambda x: x NOT IN ({_in_list(fmt.roles)}))) THEN 'unknown_role'
    {system}
    {first}
    {alternate}
    {last}
    {empty}
  END AS pb_reason_
FROM q
"""


def spark_codes_sql(view: str, column: str, fmt: ChatFormat) -> str:
    """SELECT id, pb_reason_ for every row of `view`, in Spark SQL (from_json + higher-order functions).

    A filter on pb_reason_ placed over this query gets the whole CASE, from_json
    included, copied below the projection by the optimizer (10x slower): the
    benchmark reads every row's code instead of filtering in the same plan.
    """
    c = column
    rk, ck = fmt.role_key, fmt.content_key
    schema = f"array<struct<`{rk}`:string,`{ck}`:string>>"
    first = (
        f"WHEN get(turns, 0).`{rk}` IS DISTINCT FROM '{fmt.first_role}' THEN 'first_role'" if fmt.first_role else ""
    )
    last = f"WHEN get(msgs, size(msgs) - 1).`{rk}` <> '{fmt.last_role}' THEN 'last_role'" if fmt.last_role else ""
    alternate = (
        f"WHEN exists(transform(turns, (m, i) -> i > 0 AND m.`{rk}` = get(turns, i - 1).`{rk}`), b -> b)"
        " THEN 'not_alternating'"
        if fmt.alternate
        else ""
    )
    system = (
        f"WHEN exists(transform(msgs, (m, i) -> i > 0 AND m.`{rk}` = 'system'), b -> b) THEN 'system_position'"
        if fmt.has_system
        else ""
    )
    empty = (
        ""
        if fmt.allow_empty
        else f"WHEN exists(msgs, m -> m.`{ck}` IS NULL OR m.`{ck}` RLIKE '^\\\\s*$') THEN 'empty_content'"
    )
    missing = "NULL" if fmt.na_pass else "'not_messages'"
    return f"""
WITH p AS (
  SELECT id, {c} AS v,
    coalesce(from_json({c}, '{schema}'), from_json({c}, 'struct<messages:{schema}>').messages) AS msgs
  FROM {view}
), q AS (
  SELECT *, IF(get(msgs, 0).`{rk}` = 'system', slice(msgs, 2, greatest(size(msgs) - 1, 1)), msgs) AS turns
  FROM p
)
SELECT id,
  CASE
    WHEN v IS NULL THEN {missing}
    WHEN msgs IS NULL THEN 'not_messages'
    WHEN size(msgs) = 0 THEN 'no_messages'
    WHEN exists(msgs, m -> m IS NULL OR m.`{rk}` IS NULL) THEN 'bad_message'
    WHEN exists(msgs, m -> m.`{rk}` NOT IN ({_in_list(fmt.roles)})) THEN 'unknown_role'
    {system}
    {first}
    {alternate}
    {last}
    {empty}
  END AS pb_reason_
FROM q
"""
