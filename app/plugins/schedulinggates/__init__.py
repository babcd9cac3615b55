"""SchedulingGates plugin."""
