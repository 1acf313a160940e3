"""`python -m ingest ...` is the `ingest` command."""

import sys

from .cli import main

sys.exit(main())
