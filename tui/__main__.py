import sys

from zombietop.tui.cli import main

sys.exit(main())
