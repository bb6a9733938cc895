"""assay: ground truth for agent actions."""

__version__ = "0.1.0"
