"""Renderers: turn neutral digests and replies into text, Slack Block Kit or Discord embeds."""
