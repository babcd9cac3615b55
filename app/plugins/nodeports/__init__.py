"""NodePorts plugin."""
