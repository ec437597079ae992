"""The booking agent of ``bench/booking.py`` as an app file for ``tether serve`` (``bench/http_turns.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from booking import booking_agent

agent = booking_agent()
