"""``python -m copier COMMAND ...``: how the pods run the copier."""

import sys

from .cli import main

sys.exit(main())
