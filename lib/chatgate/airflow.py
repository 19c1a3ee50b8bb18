"""Run the job as an Airflow task: a callable for PythonOperator (or @task), no Airflow import needed.

    from airflow.operators.python import PythonOperator
    from chatgate.airflow import run_chatgate

    PythonOperator(
        task_id="quarantine_chats",
        python_callable=run_chatgate,
        op_kwargs={"config": "/opt/chatgate/conf/example.yaml", "run_id": "{{ run_id }}"},
    )

The task returns a small JSON-ready summary (pushed to XCom) and fails when a
step reaches its error or critical level, so downstream tasks don't train on a
table that didn't pass. Pass the DAG run's id as `run_id`: a retried task then
replaces its own rows instead of adding them twice.
"""

from __future__ import annotations

from typing import Any

from .cli import check_overrides
from .job.config import load_config
from .job.runner import EXIT_OK, run
from .job.summary import format_summary
from .pipeline import TOKEN_STATS
from .rules.check.token_stats import TokenStats


class ChatgateLevelReached(RuntimeError):
    """A step reached its error or critical level; the message is the run's summary."""


def run_chatgate(config: str | None = None, *, fail_on_error: bool = True, **overrides: Any) -> dict[str, Any]:
    """Run the job from a YAML config and flag-named overrides; return what it found.

    The overrides are the job's flags with underscores (`columns=["messages"]`,
    `last_role="assistant"`, `run_id="{{ run_id }}"`); an unknown one is refused.
    """
    check_overrides(overrides)
    result = run(load_config(config, overrides))
    summary = format_summary(result)
    print(summary)
    if fail_on_error and result.exit_status != EXIT_OK:
        raise _failure(summary)
    return {
        "run_id": result.config.run_id,
        "exit_status": result.exit_status,
        "quarantined": result.quarantined,
        "valid": result.valid,
        "steps": [
            {"step": s.step, "column": s.column, "units": s.judged.units, "failed": s.judged.failed,
             "reasons": s.judged.reasons, "levels": s.levels, "tokens": _tokens(s.judged.extra.get(TOKEN_STATS))}
            for s in result.steps
        ],
    }


def _tokens(stats: TokenStats | None) -> dict[str, int | None] | None:
    """A step's token statistics (`token_stats=True`) as the summary's `tokens_*` columns hold them."""
    return None if stats is None else stats.as_dict()


def _failure(summary: str) -> Exception:
    """Airflow's no-retry failure when Airflow is there (a rerun won't fix the data), else ours."""
    try:
        from airflow.exceptions import AirflowFailException
    except ImportError:
        return ChatgateLevelReached(summary)
    return AirflowFailException(summary)
