"""Helpers shared by the in-tree plugins (plugins/helper)."""
