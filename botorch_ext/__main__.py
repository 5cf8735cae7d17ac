"""``python -m botorch_ext`` runs the command-line front end."""

import sys

from botorch_ext.console import main

if __name__ == "__main__":
    sys.exit(main())
