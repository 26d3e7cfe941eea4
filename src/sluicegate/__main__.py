"""`python -m sluicegate`: the `sluicegate` command."""

from __future__ import annotations

import sys

from sluicegate.cli import main

sys.exit(main())
