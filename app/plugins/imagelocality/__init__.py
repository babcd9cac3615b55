"""The ImageLocality plugin."""
