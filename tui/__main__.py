"""`python -m zombietop.tui`: the `zombietop` command, for when its script is not on PATH."""

import sys

from zombietop.tui.cli.main import main

sys.exit(main())
