"""Settings and the topic catalog."""
