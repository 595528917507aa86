"""`python -m tfcnnwrap.cli`: the command line, as `python -m tfcnnwrap` runs it (cli.py ran so as a module)."""

import sys

from tfcnnwrap.cli import main

sys.exit(main())
