"""PrioritySort queue-sort plugin."""
