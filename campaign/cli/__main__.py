"""`python -m campaign.cli` (older scripts) is the `campaign` command too."""

import sys

from campaign.cli import main

sys.exit(main())
