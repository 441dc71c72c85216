"""The Slack app: slash commands and digest delivery, with slack-bolt and slack_sdk."""
