"""Games against their real data: the entry points that fit a game's parameters and validate its simulators.

They run the built-in players inside the games, so they sit with the tools
(``bench``, ``cli``), above players and wrappers (docs/architecture.md §3).
"""
