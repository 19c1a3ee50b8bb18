"""spark-submit entry point: the chatgate job on Spark, with the same flags as `chatgate run`.

    spark-submit --jars .cache/jars/delta-spark_4.1_2.13-4.1.0.jar,.cache/jars/delta-storage-4.1.0.jar \
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
