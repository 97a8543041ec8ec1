"""Problem types (plain arrays) and exact models.

This package imports no other package of the project.
"""
from formulations._result import Status, relative_gap

__all__ = ["Status", "relative_gap"]
