"""``python -m peagle_nb.cli`` == ``peagle-nb``."""

import sys

from peagle_nb.cli import main

sys.exit(main())
