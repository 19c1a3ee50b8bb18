"""spark-submit entry point: the chatgate job on Spark, with the same flags as `chatgate run`.

    spark-submit --jars "$(ls .cache/jars/*.jar | paste -sd, -)" \
        jobs/validate_chat.py --config conf/example.yaml --source /lake/chats
"""

import sys

from chatgate.cli import add_run_arguments, run_from_args
from chatgate.cli_errors import ShortErrorParser

if __name__ == "__main__":
    parser = add_run_arguments(ShortErrorParser(prog="validate_chat.py", allow_abbrev=False))
    args = parser.parse_args()
    args.engine = "spark"
    sys.exit(run_from_args(args))
