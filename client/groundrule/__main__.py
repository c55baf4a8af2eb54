"""`python -m groundrule`: the same command as the `groundrule` console script."""

import sys

from .cli import main

sys.exit(main())
