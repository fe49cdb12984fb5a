import sys

from zombietop.tui.cli.main import main

sys.exit(main())
