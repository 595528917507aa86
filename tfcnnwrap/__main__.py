import sys

from tfcnnwrap.cli import main

sys.exit(main())
