"""`python -m jitgemm` is the same as the `jitgemm` console script."""

import sys

from jitgemm.cli import main

sys.exit(main())
