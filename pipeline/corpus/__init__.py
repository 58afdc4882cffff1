"""Corpus-level Spark stages that run after the per-split cleaning."""
