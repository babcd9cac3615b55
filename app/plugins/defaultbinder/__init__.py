"""DefaultBinder plugin."""
