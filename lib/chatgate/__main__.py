"""`python -m chatgate ...`: the same command line as `chatgate ...`."""

import sys

from .cli import main

sys.exit(main())
