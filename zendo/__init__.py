"""Zendo table assistant: the game's domain (pieces, scenes, relations, rules, game)."""
__version__ = "0.1.0"
