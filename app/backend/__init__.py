"""Scheduler backends: the cache of nodes and pods, and the scheduling queue."""
