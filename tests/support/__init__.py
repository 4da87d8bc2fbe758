"""Helpers the test modules share (a test module never imports another test module)."""
