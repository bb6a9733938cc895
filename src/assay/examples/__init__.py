"""Runnable examples, printed by ``assay example NAME``; each drives the real library."""
