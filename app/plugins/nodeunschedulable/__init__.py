"""NodeUnschedulable plugin."""
