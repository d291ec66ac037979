"""python3 -m gemmtune.grouped: the grouped-key race (race.py)."""
import sys

from .race import main

sys.exit(main())
