"""The Discord bot: the /papers command group and digest delivery, with discord.py.

(Named `discordbot` so that it never shadows the `discord` library.)
"""
