"""`python -m campaign` is the `campaign` command."""

import sys

from campaign.cli import main

sys.exit(main())
