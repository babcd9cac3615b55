"""TaintToleration plugin."""
