"""Changing a release: the values a verb installs (plan), the install step (install), the training-loss gate every
deleting path passes (guard, worded by diff), and removing a release (teardown)."""
