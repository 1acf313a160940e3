"""One token budget per request, shared by every step of its tree (and every thread).

A step reserves an allowance before it runs and settles with what it really spent; what it
did not spend goes back to the pool. Reservations never exceed what remains, so the total spent
can never exceed the budget, whatever the shape of the tree or the order threads run in.
"""

from __future__ import annotations

import threading
import time


class Budget:
    def __init__(self, tokens: int, seconds: float | None = None):
        self.total = tokens
        self.spent = 0
        self.reserved = 0
        self.deadline = None if seconds is None else time.monotonic() + seconds
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        with self._lock:
            return self.total - self.spent - self.reserved

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def reserve(self, want: int, minimum: int = 1) -> Reservation | None:
        """Up to `want` tokens, or None when fewer than `minimum` remain."""
        with self._lock:
            granted = min(want, self.total - self.spent - self.reserved)
            if granted < max(minimum, 1):
                return None
            self.reserved += granted
        return Reservation(self, granted)

    def _settle(self, granted: int, used: int) -> None:
        if used > granted:
            # A step that spends more than it was granted is a bug in that step, not bad input.
            raise RuntimeError(f"step spent {used} tokens of an allowance of {granted}")
        with self._lock:
            self.reserved -= granted
            self.spent += used


class Reservation:
    def __init__(self, budget: Budget, granted: int):
        self.budget = budget
        self.granted = granted
        self._settled = False

    def settle(self, used: int) -> None:
        if not self._settled:
            self._settled = True
            self.budget._settle(self.granted, used)

    def release(self) -> None:
        self.settle(0)
