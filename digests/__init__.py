"""The platform-agnostic core of Paperboy. It never imports slack_bolt or discord."""
