"""KenLM models trained from warcplex's own output (``warcplex train-lm``, ``unknown_language: self-train``)."""
