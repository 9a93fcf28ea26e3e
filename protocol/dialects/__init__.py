"""Dialects: other wire schemas translated at the edge over the same sessions."""
