import sys

from aioseed.cli import main

sys.exit(main())
