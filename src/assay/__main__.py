"""``python -m assay`` runs the command line."""

import sys

from assay.cli.main import main

sys.exit(main())
