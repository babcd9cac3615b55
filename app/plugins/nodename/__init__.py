"""NodeName plugin."""
