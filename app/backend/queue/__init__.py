"""The scheduling queue\x27s parts berth has: the nominator."""
