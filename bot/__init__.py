"""The runtime: platform adapters, scheduler, delivery and the command line."""
