"""What the knowledge base is missing (issue 18): the question log, answer feedback, and the
report over both. See `service.Insights`."""

from .access import readable_by
from .records import AskedQuestion, Rating, Window, cutoff
from .service import Insights

__all__ = ["AskedQuestion", "Insights", "Rating", "Window", "cutoff", "readable_by"]
